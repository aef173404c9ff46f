//! `spores emit`: the whole program written back as DML with each run of statements whose
//! shapes are known before running replaced by its optimized plan, for SystemDS to run on
//! one node or on Spark.
//!
//! **What is known ahead of time.** Shapes are the checker's (constants, `rand` and
//! `matrix` arguments, propagated through the program), plus the shapes of `read()` inputs
//! from their SystemDS `.mtd` files or Matrix Market headers and from `--shape NAME=RxC[:NNZ]`
//! hints; both are handed to the checker as the `rows=`/`cols=` arguments of the `read`. The
//! non-zeros of each matrix variable are estimated by a forward pass over the program (the
//! `sparsity` of `rand`, a zero `matrix`, `X != 0`, products and sums of sparse operands, the
//! `nnz` of a `.mtd` or hint; anything else counts as dense), loops joined by the larger
//! estimate. Matrices other than constant fills and `rand` results are assumed finite (the
//! run-time optimizer scans them; README, exception 5).
//!
//! **What is rewritten.** Runs of assignments are collected as the executor collects them
//! ([`crate::optimize::segment`]), compiled by the same [`crate::optimize::Optimizer`], and a run whose plan is
//! cheaper than written is printed by [`crate::raise::dml`] with fused operators expanded to
//! the DML SystemDS fuses itself, barrier inputs as their source text, the user's names for
//! the outputs and fresh names for temporaries. Everything else (functions, control flow,
//! prints, comments, statements kept as written) is the original text, so the output reads
//! like the input; comments inside a replaced run move above its plan. A run whose inputs
//! have unknown shapes stays as written and `--explain` says why. The plans are specialised
//! to the script arguments given (the header says which).
//!
//! **Function bodies.** The checker checks a body once for every call with the same argument
//! kinds, shapes unknown, so the runs of a body are planned only where one shape signature
//! is known: the top level's calls of a function are grouped by what is known of their
//! arguments, and the body is checked again for each group as a program of its own whose
//! parameters are `read()`s of the group's shapes and assignments of its constants (the
//! inter-procedural propagation SystemDS does; a constant string selects its branch). A
//! function of the program's file whose every call (counted in the syntax tree, so comments,
//! strings and `ns::f` calls do not count) is of one group gets its runs replaced in place;
//! otherwise each group gets a planned copy (`NAME_spores1`, ...) appended to the program, and
//! its calls are renamed. A library function (`--lib`, SystemDS's builtin scripts, which
//! SystemDS would load from its own copy) is always copied, with the other functions of its
//! file. `--explain` says which.
//!
//! **Never slower than SystemDS on the original.** The optimizer compares its plan with the
//! statements as written evaluated naively, but SystemDS does not run them naively: its own
//! rewrites fuse `wdivmm`, `wcemm`, `wsloss`, `mmchain` and friends, reorder matrix-product
//! chains and run `t(X) %*% y` as `t(t(y) %*% X)`. So a plan is emitted only when it beats
//! the run *as SystemDS would run it*: the written term saturated under [`systemds_rules`]
//! (the fused-operator rules, which match the forms SystemDS's rewrites detect, plus
//! transpose folding, product reassociation and SystemDS's left-transpose rewrite) and
//! extracted under the same cost model, after SystemDS's rewrites that need an intermediate
//! to have one consumer ([`systemds_consumer_rewrites`]: `sum(A %*% B)` as column and row
//! sums); the plan must cost at most [`SYSTEMDS_MARGIN`] times
//! that, else the run is kept as written (`--explain` gives both costs). The margin covers
//! the cost model's error on what are the same operators in both programs (PNMF's updates
//! are `wdivmm` and `wcemm` either way; a rescaled variant of them is no gain).

pub mod systemds;

use crate::check::hir::{self, Block, Expr, ExprKind, Stmt, Ty};
use crate::check::ScriptArgs;
use crate::error::Error;
use crate::ir::Ir;
use crate::optimize::segment::Segment;
use crate::optimize::{Input, Optimizer, Planned};
use crate::raise::dml::{self, Fused, Leaves, Piece, Target};
use crate::syntax::ast;
use egg::{Id, Language, Symbol};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;

/// A `--shape` hint: the shape (and non-zeros) of a variable assigned by `read()`.
#[derive(Clone, Debug, PartialEq)]
pub struct Hint {
    /// rows
    pub rows: usize,
    /// columns
    pub cols: usize,
    /// non-zeros, when known
    pub nnz: Option<usize>,
}

/// Parses `NAME=ROWSxCOLS[:NNZ]`.
pub fn parse_shape(s: &str) -> Result<(String, Hint), String> {
    let bad = || format!("--shape expects NAME=ROWSxCOLS[:NNZ], found '{s}'");
    let (name, rest) = s.split_once('=').ok_or_else(bad)?;
    let (dims, nnz) = match rest.split_once(':') {
        Some((d, n)) => (d, Some(n.parse::<usize>().map_err(|_| bad())?)),
        None => (rest, None),
    };
    let (r, c) = dims.split_once(['x', 'X']).ok_or_else(bad)?;
    let (rows, cols) = (
        r.trim().parse().map_err(|_| bad())?,
        c.trim().parse().map_err(|_| bad())?,
    );
    if name.is_empty() || nnz.is_some_and(|n| n > rows * cols) {
        return Err(bad());
    }
    Ok((name.to_string(), Hint { rows, cols, nnz }))
}

/// A plan is emitted only when its estimated cost is at most this fraction of the run as
/// SystemDS would execute it (its fused operators and product reordering applied to the
/// statements as written).
pub const SYSTEMDS_MARGIN: f64 = 0.8;

/// The e-graph node limit of `emit`'s saturation per statement (run time: 6000; the other
/// run-time limits apply, as does `SPORES_NODE_LIMIT`). A plan made ahead of time serves
/// every execution of its run, so it can afford to look further (the plans of a block
/// whose statements go beyond a few thousand nodes of rewrites).
pub const AHEAD_OF_TIME_NODES: usize = 20_000;

/// The optimizer of `emit`: spores's rules under the run-time limits, with `nodes` (by
/// default [`AHEAD_OF_TIME_NODES`]).
fn ahead_of_time_optimizer(nodes: Option<usize>) -> Optimizer {
    let mut opt = Optimizer::new().expect("rule files are checked by the tests");
    // a fused operator SystemDS does not have would be printed as its expansion, which
    // SystemDS runs unfused: plan without it
    opt.retain_rules(|n| !spores_only(n));
    match nodes {
        Some(n) => opt.limits.nodes = n,
        None if !crate::optimize::limit_set("SPORES_NODE_LIMIT") => {
            opt.limits.nodes = AHEAD_OF_TIME_NODES
        }
        None => {}
    }
    opt
}

/// Rewrites SystemDS makes that are no rule of spores's own: its single-node product with a
/// transposed left operand, `t(X) %*% y`, runs as `t(t(y) %*% X)` when that is cheaper
/// (`AggBinaryOp`'s left-transpose rewrite; the costs decide here).
const SYSTEMDS_ONLY: &str = "systemds-left-transpose: (mmul (t ?X) ?y) => (t (mmul (t ?y) ?X))\n";

/// The rewrites SystemDS applies itself, as spores rules: every fused operator (SystemDS
/// detects the same forms: `sum((X - U %*% t(V))^2)`, `t(U) %*% (X / (U %*% t(V) + eps))`,
/// ...), `t(t(A)) = A`, `t(A %*% B) = t(B) %*% t(A)`, the reassociation of product chains
/// (SystemDS's matrix-multiply chain optimization) and [`SYSTEMDS_ONLY`].
pub fn systemds_rules() -> Result<Vec<crate::saturate::Rule>, crate::saturate::RuleError> {
    let derived = [
        "t-t",
        "t-mmul",
        "t-mmul-rev",
        "mmul-assoc",
        "mmul-assoc-rev",
    ];
    Ok(crate::saturate::all_rules()?
        .into_iter()
        .filter(|r| {
            let n = r.name.as_str();
            derived.contains(&n) || (fused_rule(n) && !spores_only(n))
        })
        .chain(crate::saturate::rules::parse_rules(
            "systemds-only",
            SYSTEMDS_ONLY,
        )?)
        .collect())
}

/// SystemDS's rewrites that fire only when an intermediate has no other consumer, applied to
/// a run as written, as SystemDS applies them to its HOP DAG: `t` and `rowSums`/`colSums`
/// under a full `sum` are dropped (`simplifyUnaryAggReorgOperation`,
/// `removeUnnecessaryAggregates`), and an aggregate of a matrix product aggregates a factor
/// instead (`simplifySumMatrixMult`: `sum(A %*% B)` is `sum(t(colSums(A)) * rowSums(B))`,
/// `colSums(A %*% B)` is `colSums(A) %*% B`, `rowSums(A %*% B)` is `A %*% rowSums(B)`).
/// An e-graph rule cannot say "only consumer", so these are applied before saturation, where
/// the consumer counts are a syntactic fact of the written run: the term is hash-consed
/// first (SystemDS eliminates common subexpressions before these rewrites), and each
/// occurrence of a node as an operand is one consumer. A node that is also an output of the
/// run is not counted as consumed by it (SystemDS's transient write counts only when the
/// variable is live after the block, which the run does not know): of the two SystemDS
/// costs the lower one, the side on which a plan is kept as written. Returns the rewritten
/// term, its roots (one per root given) and how many rewrites were applied.
pub fn systemds_consumer_rewrites(
    term: &egg::RecExpr<Ir>,
    roots: &[Id],
) -> (egg::RecExpr<Ir>, Vec<Id>, usize) {
    // hash-cons the nodes reachable from the roots
    let nodes = term.as_ref();
    let mut reach = vec![false; nodes.len()];
    for r in roots {
        reach[usize::from(*r)] = true;
    }
    for i in (0..nodes.len()).rev() {
        if reach[i] {
            for c in nodes[i].children() {
                reach[usize::from(*c)] = true;
            }
        }
    }
    let mut h: egg::RecExpr<Ir> = egg::RecExpr::default();
    let mut memo: HashMap<Ir, Id> = HashMap::new();
    let mut map: Vec<Id> = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        if !reach[i] {
            map.push(Id::from(0usize));
            continue;
        }
        let n = n.clone().map_children(|c| map[usize::from(c)]);
        let id = *memo.entry(n.clone()).or_insert_with(|| h.add(n));
        map.push(id);
    }
    let h_roots: Vec<Id> = roots.iter().map(|r| map[usize::from(*r)]).collect();
    let mut consumers = vec![0usize; h.as_ref().len()];
    for n in h.as_ref() {
        for c in n.children() {
            consumers[usize::from(*c)] += 1;
        }
    }
    struct Rw<'a> {
        h: &'a [Ir],
        consumers: &'a [usize],
        out: egg::RecExpr<Ir>,
        done: HashMap<Id, Id>,
        applied: usize,
    }
    impl Rw<'_> {
        /// the single-consumer operand of `id` matching `f`
        fn only<T>(&self, id: Id, f: impl Fn(&Ir) -> Option<T>) -> Option<T> {
            (self.consumers[usize::from(id)] == 1)
                .then(|| f(&self.h[usize::from(id)]))
                .flatten()
        }
        fn copy(&mut self, id: Id) -> Id {
            if let Some(&d) = self.done.get(&id) {
                return d;
            }
            let n = self.h[usize::from(id)].clone();
            let d = self.node(n);
            self.done.insert(id, d);
            d
        }
        /// adds `n` (children in `h`), rewritten where a rewrite applies
        fn node(&mut self, n: Ir) -> Id {
            let mmul = |x: &Ir| match x {
                Ir::MMul([a, b]) => Some((*a, *b)),
                _ => None,
            };
            match n {
                Ir::MSum(c) => {
                    let under = |x: &Ir| match x {
                        Ir::Trans(y) | Ir::RowSums(y) | Ir::ColSums(y) => Some(*y),
                        _ => None,
                    };
                    if let Some(y) = self.only(c, under) {
                        self.applied += 1;
                        return self.node(Ir::MSum(y));
                    }
                    if let Some((a, b)) = self.only(c, mmul) {
                        self.applied += 1;
                        let (a, b) = (self.copy(a), self.copy(b));
                        let cs = self.out.add(Ir::ColSums(a));
                        let t = self.out.add(Ir::Trans(cs));
                        let rs = self.out.add(Ir::RowSums(b));
                        let m = self.out.add(Ir::EMul([t, rs]));
                        return self.out.add(Ir::MSum(m));
                    }
                }
                Ir::ColSums(c) => {
                    if let Some((a, b)) = self.only(c, mmul) {
                        self.applied += 1;
                        let (a, b) = (self.copy(a), self.copy(b));
                        let cs = self.out.add(Ir::ColSums(a));
                        return self.out.add(Ir::MMul([cs, b]));
                    }
                }
                Ir::RowSums(c) => {
                    if let Some((a, b)) = self.only(c, mmul) {
                        self.applied += 1;
                        let (a, b) = (self.copy(a), self.copy(b));
                        let rs = self.out.add(Ir::RowSums(b));
                        return self.out.add(Ir::MMul([a, rs]));
                    }
                }
                _ => {}
            }
            let n = n.map_children(|c| self.copy(c));
            self.out.add(n)
        }
    }
    let mut rw = Rw {
        h: h.as_ref(),
        consumers: &consumers,
        out: egg::RecExpr::default(),
        done: HashMap::new(),
        applied: 0,
    };
    let out_roots: Vec<Id> = h_roots.iter().map(|r| rw.copy(*r)).collect();
    let applied = rw.applied;
    (rw.out, out_roots, applied)
}

/// The fused operators of rules/fused.rules that SystemDS 3.4 has no operator for, by the
/// prefix of their rules' names: `smmchain` (MultiLogReg's Hessian-vector product in one
/// pass; SystemDS runs it as two products and the element-wise operations between them).
const SPORES_ONLY_FUSED: &[&str] = &["fuse-smmchain"];

/// Whether a rule fuses an operator SystemDS does not have ([`SPORES_ONLY_FUSED`]).
fn spores_only(name: &str) -> bool {
    SPORES_ONLY_FUSED.iter().any(|p| name.starts_with(p))
}

/// Whether a rule is one of rules/fused.rules.
fn fused_rule(name: &str) -> bool {
    use std::sync::OnceLock;
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            let text = crate::saturate::rules::RULE_FILES
                .iter()
                .find(|(f, _)| *f == "fused.rules")
                .map_or("", |(_, t)| *t);
            crate::saturate::rules::parse_rules("fused.rules", text)
                .map(|rs| rs.iter().map(|r| r.name.to_string()).collect())
                .unwrap_or_default()
        })
        .iter()
        .any(|n| n == name)
}

/// How to emit.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--shape` hints by variable name
    pub shapes: Vec<(String, Hint)>,
    /// library directories (`--lib`)
    pub lib: Vec<PathBuf>,
    /// the least estimated saving, in nanoseconds per execution of a run, for which its
    /// plan replaces it ([`MIN_GAIN`] on the command line; 0 by default here, so small
    /// examples show their plans): below it, what the emitted form could lose to SystemDS's
    /// per-operator overheads (more, smaller operators; a Spark job each with `-exec spark`)
    /// outweighs the estimate
    pub min_gain: f64,
    /// the least estimated saving, in nanoseconds per call, of the plans in a library
    /// function's body for the function to be copied into the program
    /// ([`LIBRARY_COPY_GAIN`] on the command line; 0 by default here)
    pub copy_gain: f64,
    /// the e-graph node limit per run of statements (`None`: `SPORES_NODE_LIMIT` if set,
    /// else [`AHEAD_OF_TIME_NODES`])
    pub nodes: Option<usize>,
    /// where SystemDS will run the program: on Spark, each operator on a matrix is a Spark
    /// instruction with a fixed cost ([`SPARK_INSTRUCTION_NS`]) added to both sides of the
    /// comparison with SystemDS
    pub engine: systemds::Engine,
}

/// What one Spark instruction costs SystemDS in forced Spark mode (`-exec spark`, local
/// mode) beyond its work, in the cost model's nanoseconds: 50 ms. There every operator on a
/// matrix runs as a Spark instruction (a job, or a stage of the action that triggers it;
/// broadcasts of its small operands, a join when both operands are distributed), whatever
/// the size of the data; measured per instruction in `-stats` (sum_xuv, 20000 x 5000 at 1%):
/// `sp_uak+` 120 ms, `sp_mapwdivmm` 96 ms, `sp_tak+*` 226 ms (with the lineage it triggers),
/// `sp_mapmm` 66 ms, against 10 to 20 ms for the same operators' work on one node.
pub const SPARK_INSTRUCTION_NS: f64 = 5e7;

/// How many Spark instructions SystemDS runs for a plan in forced Spark mode: every operator
/// with a matrix operand or a matrix result (scalar arithmetic stays in the driver), a
/// fused operator as one (SystemDS fuses the expanded form back), `tmmul` as two (a
/// transpose and a product: SystemDS has no transposed-operand product on Spark). `None`
/// when a shape is not known.
pub fn spark_instructions(
    expr: &egg::RecExpr<Ir>,
    roots: &[Id],
    input: &dyn Fn(Symbol) -> dml::Shape,
    value: &dyn Fn(Symbol) -> Option<f64>,
) -> Option<usize> {
    let shapes = dml::shapes(expr, input, value)?;
    let nodes = expr.as_ref();
    let mut reach = vec![false; nodes.len()];
    for r in roots {
        reach[usize::from(*r)] = true;
    }
    let mut count = 0;
    for i in (0..nodes.len()).rev() {
        if !reach[i] {
            continue;
        }
        let n = &nodes[i];
        for c in n.children() {
            reach[usize::from(*c)] = true;
        }
        if matches!(n, Ir::Symbol(_) | Ir::Num(_)) {
            continue;
        }
        let matrix = shapes[i].is_some()
            || n.children()
                .iter()
                .any(|c| shapes[usize::from(*c)].is_some());
        if matrix {
            count += if matches!(n, Ir::TMMul(_)) { 2 } else { 1 };
        }
    }
    Some(count)
}

/// The least estimated saving (ns) of a run's plan over the run as SystemDS runs it for
/// `spores emit` and `spores run --engine systemds|spark` to emit the plan: 1 ms.
pub const MIN_GAIN: f64 = 1e6;

/// The least estimated saving per call (ns) of a library function's plans for `spores emit`
/// and `spores run --engine systemds|spark` to copy the function into the program: 1 s.
/// SystemDS runs its builtin functions from its own scripts; a copy in the program is
/// compiled and run as a user function, which cost more than the copy's plans saved in the
/// one measurement there is: SystemDS's `glm` (benches/programs/glm.dml, 100000 x 200, load
/// 18) ran 8.0 and 9.0 s as written, 11.9 and 11.5 s as an unchanged copy, 10.5 and 10.4 s as
/// the copy with its one planned run (an estimated 40 ms saved per call).
pub const LIBRARY_COPY_GAIN: f64 = 1e9;

/// An emitted program.
#[derive(Clone, Debug, Default)]
pub struct Emitted {
    /// the DML text
    pub dml: String,
    /// for `--explain`: each run of statements, its inputs and its plan or why it was kept
    pub explain: String,
    /// runs replaced by a plan
    pub optimized: usize,
    /// runs kept as written
    pub kept: usize,
}

/// Emits a program as optimized DML.
pub fn emit(source: &str, args: &ScriptArgs, opts: &Options) -> Result<Emitted, Error> {
    crate::syntax::sources::set_main(source);
    let mut ast = crate::syntax::parse_program(source)?;
    // shapes of read() inputs: hints, then .mtd files and Matrix Market headers
    let first = check_ipa(&ast, args, &opts.lib).map_err(Error::Check)?;
    let mut hints: HashMap<String, Hint> = HashMap::new();
    let mut sources: Vec<String> = Vec::new();
    for (var, path) in reads(&first.blocks) {
        if let Some(h) = opts.shapes.iter().find(|(n, _)| *n == var) {
            hints.insert(var.clone(), h.1.clone());
            sources.push(format!("{var} {}x{} (--shape)", h.1.rows, h.1.cols));
        } else if let Some(h) = file_shape(&path) {
            sources.push(format!("{var} {}x{} (from {path})", h.rows, h.cols));
            hints.insert(var, h);
        }
    }
    let read_vars: Vec<(String, String)> = reads(&first.blocks);
    let mut ignored = Vec::new();
    for (n, _) in &opts.shapes {
        if !read_vars.iter().any(|(v, _)| v == n) {
            ignored.push(format!(
                "--shape {n} ignored: no read() of a constant path at the top level assigns `{n}` \
                 (a hint gives the shape of an input, not of a value computed from data)"
            ));
        }
    }
    add_read_dims(&mut ast.stmts, &hints);
    let prog = check_ipa(&ast, args, &opts.lib).map_err(Error::Check)?;

    let mut e = Emitter {
        min_gain: opts.min_gain,
        copy_gain: opts.copy_gain,
        engine: opts.engine,
        source,
        opt: ahead_of_time_optimizer(opts.nodes),
        systemds: systemds_rules().expect("rule files are checked by the tests"),
        nnz: HashMap::new(),
        konst: HashMap::new(),
        from_calls: HashSet::new(),
        hints,
        names: Fresh {
            reserved: identifiers(source),
            next: 0,
        },
        edits: Vec::new(),
        saved: Vec::new(),
        calls: HashMap::new(),
        appended: Vec::new(),
        out: Emitted::default(),
    };
    for s in &sources {
        let _ = writeln!(e.out.explain, "input {s}");
    }
    for s in &ignored {
        let _ = writeln!(e.out.explain, "{s}");
    }
    e.blocks(&prog.blocks, true);
    e.functions(&ast, &prog, args, opts);
    let mut args: Vec<String> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
    args.sort();
    let mut text = format!(
        "# emitted by spores {}: {} run(s) of statements replaced by optimized plans, {} kept as written{}\n",
        env!("CARGO_PKG_VERSION"),
        e.out.optimized,
        e.out.kept,
        if args.is_empty() {
            String::new()
        } else {
            format!("; plans assume {}", args.join(" "))
        }
    );
    let mut pos = 0;
    e.edits.sort_by_key(|x| x.0);
    for (start, end, replacement) in &e.edits {
        text.push_str(&source[pos..*start]);
        text.push_str(replacement);
        pos = *end;
    }
    text.push_str(&source[pos..]);
    for f in &e.appended {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(f);
    }
    e.out.dml = text;
    Ok(e.out)
}

/// The program checked with the shapes of function outputs propagated to their calls
/// ([`crate::check::check_program_opts`]); if that rejects the program (a shape known only
/// through a call that mismatches in a statement that would fail when it runs), the program
/// checked as `spores check` does, so `emit` accepts every program `check` accepts.
fn check_ipa(
    ast: &ast::Program,
    args: &ScriptArgs,
    lib: &[std::path::PathBuf],
) -> Result<hir::Program, crate::error::SpannedError> {
    crate::check::check_program_opts(ast, args, lib, true)
        .or_else(|_| crate::check::check_program_with(ast, args, lib))
}

/// The variables assigned by `read()` of a constant path, with the path.
fn reads(blocks: &[Block]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for b in blocks {
        match b {
            Block::Basic(bb) => {
                for s in &bb.stmts {
                    if let Stmt::Assign { var, value, .. } = s {
                        if let ExprKind::Builtin(f, a) = &value.kind {
                            if let (true, Some(ExprKind::Str(p))) =
                                (f.name == "read", a.first().map(|x| &x.kind))
                            {
                                out.push((var.clone(), p.clone()));
                            }
                        }
                    }
                }
            }
            Block::If { then, els, .. } => {
                out.extend(reads(then));
                out.extend(reads(els));
            }
            Block::For { body, .. } | Block::While { body, .. } => out.extend(reads(body)),
        }
    }
    out
}

/// The shape of a matrix file from its `.mtd` or its Matrix Market header.
fn file_shape(path: &str) -> Option<Hint> {
    use spores_runtime::io::mtd;
    let p = std::path::Path::new(path);
    if let Ok(Some(m)) = mtd::read_metadata(p) {
        if let (Some(r), Some(c)) = (m.rows, m.cols) {
            if r >= 0 && c >= 0 {
                return Some(Hint {
                    rows: r as usize,
                    cols: c as usize,
                    nnz: m.nnz.filter(|n| *n >= 0).map(|n| n as usize),
                });
            }
        }
    }
    // Matrix Market: `%%MatrixMarket matrix coordinate ...`, comments, then `rows cols nnz`
    use std::io::BufRead;
    let f = std::fs::File::open(p).ok()?;
    let mut lines = std::io::BufReader::new(f).lines();
    let head = lines.next()?.ok()?;
    if !head.starts_with("%%MatrixMarket") {
        return None;
    }
    let coordinate = head.contains("coordinate");
    for line in lines.take(10_000) {
        let line = line.ok()?;
        if line.starts_with('%') || line.trim().is_empty() {
            continue;
        }
        let n: Vec<usize> = line
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<_>>()?;
        return match n.as_slice() {
            [r, c, z] if coordinate => Some(Hint {
                rows: *r,
                cols: *c,
                nnz: Some(*z),
            }),
            [r, c, ..] => Some(Hint {
                rows: *r,
                cols: *c,
                nnz: None,
            }),
            _ => None,
        };
    }
    None
}

/// Adds `rows=` and `cols=` to the `read()` that assigns each hinted variable (where the
/// program does not give them), so the checker knows the shape.
fn add_read_dims(stmts: &mut [ast::Stmt], hints: &HashMap<String, Hint>) {
    for s in stmts {
        match &mut s.kind {
            ast::StmtKind::Assign { target, value } => {
                let Some(h) = hints.get(&target.name) else {
                    continue;
                };
                let ast::ExprKind::Call(c) = &mut value.kind else {
                    continue;
                };
                if c.func.name != "read" {
                    continue;
                }
                for (name, v) in [("rows", h.rows), ("cols", h.cols)] {
                    let given = c
                        .args
                        .iter()
                        .any(|a| a.name.as_ref().is_some_and(|n| n.name == name));
                    if !given {
                        let span = value.span;
                        c.args.push(ast::Arg {
                            name: Some(ast::Ident {
                                name: name.into(),
                                span,
                            }),
                            value: ast::Expr {
                                kind: ast::ExprKind::Int(v as i64),
                                span,
                            },
                        });
                    }
                }
            }
            ast::StmtKind::If { then, els, .. } => {
                add_read_dims(then, hints);
                add_read_dims(els, hints);
            }
            ast::StmtKind::For { body, .. } | ast::StmtKind::While { body, .. } => {
                add_read_dims(body, hints)
            }
            _ => {}
        }
    }
}

/// Every identifier-like word of the source (temporaries never take one).
fn identifiers(source: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut word = String::new();
    for ch in source.chars().chain(std::iter::once(' ')) {
        if ch.is_ascii_alphanumeric() || ch == '_' || ch == '.' {
            word.push(ch);
        } else if !word.is_empty() {
            for w in word.split('.') {
                out.insert(w.to_string());
            }
            out.insert(std::mem::take(&mut word));
        }
    }
    out
}

/// What the forward pass knows about a matrix variable's values.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Known {
    /// estimated non-zeros
    nnz: f64,
    /// every value finite
    finite: bool,
}

/// A constant argument of a call.
#[derive(Clone, Debug, PartialEq)]
enum Konst {
    Num(f64),
    Str(String),
}

/// One call of a function: each argument's type, what the forward pass knows of its values
/// and its value where that is a constant; the span of the call.
#[derive(Clone, Debug)]
struct CallSite {
    args: Vec<(Ty, Option<Known>, Option<Konst>)>,
    span: ast::Span,
}

impl CallSite {
    /// The calls a body is planned for together: the same types, estimated non-zeros
    /// (whole) and constants.
    fn class(&self) -> String {
        let key: Vec<String> = self
            .args
            .iter()
            .map(|(t, k, c)| {
                let k = k.map(|k| (k.nnz.round() as u64, k.finite));
                format!("{t:?}/{k:?}/{c:?}")
            })
            .collect();
        key.join(";")
    }

    /// The shapes and constants of the arguments, for comments and `--explain`.
    fn describe(&self, params: &[ast::ParamDecl]) -> String {
        let parts: Vec<String> = params
            .iter()
            .zip(&self.args)
            .filter_map(|(p, (ty, _, c))| {
                let n = &p.name.name;
                match (ty, c) {
                    (Ty::Matrix(Some(r), Some(c)), _) => Some(format!("{n} {r}x{c}")),
                    (_, Some(Konst::Num(v))) => Some(format!("{n}={v}")),
                    (_, Some(Konst::Str(s))) => Some(format!("{n}=\"{s}\"")),
                    _ => None,
                }
            })
            .collect();
        parts.join(", ")
    }
}

/// How many calls of the function `name` a program makes, wherever they are: top level,
/// function bodies, conditions, loop bounds, arguments, index expressions. The syntax tree
/// is walked, so words in comments and strings do not count, and a namespaced call
/// (`ns::name(..)`) is a call of another function.
fn count_calls(program: &ast::Program, name: &str) -> usize {
    let mut n = 0;
    for s in &program.stmts {
        calls_in_stmt(s, &mut |c: &ast::Call| {
            n += usize::from(c.func.name == name)
        });
    }
    n
}

/// Calls `f` on every call in a statement (nested ones included).
fn calls_in_stmt(s: &ast::Stmt, f: &mut dyn FnMut(&ast::Call)) {
    use ast::StmtKind as K;
    match &s.kind {
        K::Assign { value, .. } => calls_in_expr(value, f),
        K::Call(c) | K::MultiAssign { call: c, .. } => calls_in_call(c, f),
        K::IndexAssign {
            rows, cols, value, ..
        } => {
            calls_in_range(rows, f);
            calls_in_range(cols, f);
            calls_in_expr(value, f);
        }
        K::Function(def) => {
            for p in def.params.iter().chain(&def.returns) {
                if let Some(d) = &p.default {
                    calls_in_expr(d, f);
                }
            }
            def.body.iter().for_each(|s| calls_in_stmt(s, f));
        }
        K::Unsupported(_) | K::Source { .. } | K::SetWd(_) => {}
        K::If { cond, then, els } => {
            calls_in_expr(cond, f);
            then.iter().chain(els).for_each(|s| calls_in_stmt(s, f));
        }
        K::For { from, to, body, .. } => {
            calls_in_expr(from, f);
            if let Some(t) = to {
                calls_in_expr(t, f);
            }
            body.iter().for_each(|s| calls_in_stmt(s, f));
        }
        K::While { cond, body } => {
            calls_in_expr(cond, f);
            body.iter().for_each(|s| calls_in_stmt(s, f));
        }
    }
}

fn calls_in_range(r: &ast::IndexRange, f: &mut dyn FnMut(&ast::Call)) {
    match r {
        ast::IndexRange::All => {}
        ast::IndexRange::At(e) => calls_in_expr(e, f),
        ast::IndexRange::Range(a, b) => {
            calls_in_expr(a, f);
            calls_in_expr(b, f);
        }
    }
}

fn calls_in_call(c: &ast::Call, f: &mut dyn FnMut(&ast::Call)) {
    f(c);
    for a in &c.args {
        calls_in_expr(&a.value, f);
    }
}

fn calls_in_expr(e: &ast::Expr, f: &mut dyn FnMut(&ast::Call)) {
    use ast::ExprKind as K;
    match &e.kind {
        K::Call(c) => calls_in_call(c, f),
        K::Unary(_, a) => calls_in_expr(a, f),
        K::Binary(_, a, b) => {
            calls_in_expr(a, f);
            calls_in_expr(b, f);
        }
        K::Index { base, rows, cols } => {
            calls_in_expr(base, f);
            calls_in_range(rows, f);
            calls_in_range(cols, f);
        }
        K::Int(_)
        | K::Double(_)
        | K::Bool(_)
        | K::Str(_)
        | K::Var(_)
        | K::ScriptArg(_)
        | K::Unsupported(_) => {}
    }
}

/// Whether `name` at byte `at` of `text` is a whole word followed by `(`.
fn is_call_at(text: &str, at: usize, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    let before = text[..at].chars().next_back().is_none_or(|c| !word(c));
    let rest = &text[at + name.len()..];
    before && !rest.starts_with(word) && rest.trim_start().starts_with('(')
}

/// The byte position of the called name in the source of a call (an expression or a
/// statement `[a, b] = f(...)`).
fn find_call(text: &str, span: ast::Span, name: &str) -> Option<usize> {
    let piece = text.get(span.start..span.end)?;
    let mut from = 0;
    while let Some(k) = piece[from..].find(name) {
        let at = span.start + from + k;
        if is_call_at(text, at, name) {
            return Some(at);
        }
        from += k + name.len();
    }
    None
}

struct Emitter<'s> {
    /// [`Options::min_gain`]
    min_gain: f64,
    /// [`Options::copy_gain`]
    copy_gain: f64,
    /// [`Options::engine`]
    engine: systemds::Engine,
    source: &'s str,
    opt: Optimizer,
    /// [`systemds_rules`]
    systemds: Vec<crate::saturate::Rule>,
    nnz: HashMap<String, Known>,
    konst: HashMap<String, f64>,
    /// variables a function call has assigned at some point before: their values may be
    /// Inf or NaN (a function's output is not an input the program reads, which are assumed
    /// finite), so a plan never takes them as finite; never shrinks, so it holds on every path
    from_calls: HashSet<String>,
    hints: HashMap<String, Hint>,
    names: Fresh,
    /// (start, end, text) replacements of the source
    edits: Vec<(usize, usize, String)>,
    /// each replaced run's start and its estimated saving over SystemDS (ns per execution)
    saved: Vec<(usize, f64)>,
    /// per function of the program (by index), the arguments of each call of it from the
    /// program's top level: type and estimate
    calls: HashMap<usize, Vec<CallSite>>,
    /// copies of functions specialised to groups of calls, appended to the program
    appended: Vec<String>,
    out: Emitted,
}

impl Emitter<'_> {
    /// Walks blocks in program order; plans runs when `plan` (a loop body is walked once
    /// without planning first, so what its first iteration sees joins what later ones see).
    fn blocks(&mut self, blocks: &[Block], plan: bool) {
        for b in blocks {
            match b {
                Block::Basic(bb) => self.basic(bb, plan),
                // a condition known before running: the other branch never runs
                Block::If {
                    then,
                    known: Some(true),
                    ..
                } => self.blocks(then, plan),
                Block::If {
                    els,
                    known: Some(false),
                    ..
                } => self.blocks(els, plan),
                Block::If { then, els, .. } => {
                    let (n0, k0) = (self.nnz.clone(), self.konst.clone());
                    self.blocks(then, plan);
                    let (n1, k1) = (std::mem::replace(&mut self.nnz, n0), self.konst.clone());
                    self.konst = k0;
                    self.blocks(els, plan);
                    self.join(&n1, &k1);
                }
                Block::For { var, body, .. } => {
                    self.konst.remove(var);
                    self.loop_body(body, plan);
                }
                Block::While { body, .. } => self.loop_body(body, plan),
            }
        }
    }

    fn loop_body(&mut self, body: &[Block], plan: bool) {
        let (n0, k0) = (self.nnz.clone(), self.konst.clone());
        let edits = self.edits.len();
        let out = self.out.clone();
        self.blocks(body, false);
        self.edits.truncate(edits);
        self.out = out;
        let (n1, k1) = (self.nnz.clone(), self.konst.clone());
        self.nnz = n0;
        self.konst = k0;
        self.join(&n1, &k1);
        self.blocks(body, plan);
        let (n2, k2) = (self.nnz.clone(), self.konst.clone());
        self.join(&n2, &k2);
    }

    /// Joins another path's knowledge into the current one.
    fn join(&mut self, nnz: &HashMap<String, Known>, konst: &HashMap<String, f64>) {
        for (k, v) in nnz {
            let e = self.nnz.entry(k.clone()).or_insert(*v);
            e.nnz = e.nnz.max(v.nnz);
            e.finite &= v.finite;
        }
        let keys: Vec<String> = self.nnz.keys().cloned().collect();
        for k in keys {
            if !nnz.contains_key(&k) {
                self.nnz.remove(&k);
            }
        }
        self.konst
            .retain(|k, v| konst.get(k).is_some_and(|w| w.to_bits() == v.to_bits()));
    }

    fn basic(&mut self, bb: &hir::BasicBlock, plan: bool) {
        let mut i = 0;
        while i < bb.stmts.len() {
            let seg = crate::optimize::segment::collect(&bb.stmts[i..]);
            let count = match (&seg, plan) {
                (Some(seg), true) => {
                    self.run(bb.id, i, &bb.stmts[i..i + seg.len()], seg);
                    seg.len()
                }
                (Some(seg), false) => seg.len(),
                (None, _) => 1,
            };
            for s in &bb.stmts[i..i + count] {
                if plan {
                    self.record_calls(s);
                }
                self.learn(s);
            }
            i += count;
        }
    }

    /// Records the calls of user functions in a statement, with what is known of their
    /// arguments there.
    fn record_calls(&mut self, s: &Stmt) {
        let mut found: Vec<(usize, CallSite)> = Vec::new();
        let site = |me: &Self, args: &[Expr], span: ast::Span| -> CallSite {
            CallSite {
                args: args
                    .iter()
                    .map(|a| {
                        let konst = match (&a.ty, &a.kind) {
                            (Ty::Str, ExprKind::Str(s)) => Some(Konst::Str(s.clone())),
                            (Ty::Scalar(_), _) => {
                                me.constant(a).filter(|v| v.is_finite()).map(Konst::Num)
                            }
                            _ => None,
                        };
                        (a.ty, me.estimate(a, ""), konst)
                    })
                    .collect(),
                span,
            }
        };
        let mut exprs: Vec<&Expr> = Vec::new();
        match s {
            Stmt::Assign { value, .. } | Stmt::Print { value } => exprs.push(value),
            Stmt::Call {
                func, args, span, ..
            } => found.push((*func, site(self, args, *span))),
            Stmt::MultiBuiltin { args, .. } => exprs.extend(args),
            Stmt::IndexAssign { value, .. } => exprs.push(value),
            Stmt::Write { value, .. } => exprs.push(value),
            _ => {}
        }
        for e in exprs {
            crate::check::visit(e, &mut |x| {
                if let ExprKind::Call(f, a) | ExprKind::Outputs(f, a) = &x.kind {
                    found.push((*f, site(self, a, x.span)));
                }
            });
        }
        for (f, args) in found {
            self.calls.entry(f).or_default().push(args);
        }
    }

    /// Function bodies, planned for the arguments of the top level's calls (the
    /// inter-procedural propagation SystemDS does). The calls are grouped by what is known
    /// of their arguments (shapes, non-zeros, constant scalars and strings): a function of
    /// the program's file whose every call is one of them, all of one group, gets its body's
    /// runs replaced in place (its name, signature and comments stay); otherwise (a library
    /// function, calls that differ, calls from other functions or from conditions) each
    /// group gets a copy of the function under a fresh name, planned for that group's
    /// arguments and appended to the program with the other functions of its library file,
    /// and the group's calls are renamed to call it. Calls spores did not see keep calling
    /// the original, so a copy is never run with arguments it was not planned for.
    fn functions(
        &mut self,
        ast: &ast::Program,
        prog: &hir::Program,
        args: &ScriptArgs,
        opts: &Options,
    ) {
        let mut names: Vec<&str> = prog.functions.iter().map(|f| f.name.as_str()).collect();
        names.sort();
        names.dedup();
        let main = crate::syntax::sources::FILE_STRIDE;
        // the program's own function names: a library helper of the same name cannot be
        // copied into it
        let mut defined: HashSet<String> = ast
            .stmts
            .iter()
            .filter_map(|s| match &s.kind {
                ast::StmtKind::Function(f) => Some(f.name.name.clone()),
                _ => None,
            })
            .collect();
        let mut copied_files: HashSet<String> = HashSet::new();
        for name in names {
            let idx: Vec<usize> = (0..prog.functions.len())
                .filter(|i| prog.functions[*i].name == name)
                .collect();
            let sites: Vec<CallSite> = idx
                .iter()
                .flat_map(|i| self.calls.get(i).into_iter().flatten())
                .cloned()
                .collect();
            if sites.is_empty() {
                let _ = writeln!(
                    self.out.explain,
                    "function {name}: kept as written: not called from the top level"
                );
                continue;
            }
            // the file that defines it
            let at = prog.functions[idx[0]].span.start;
            let (file, file_text): (Option<String>, String) = if at < main {
                (None, self.source.to_string())
            } else {
                match crate::syntax::sources::lookup(at) {
                    Some((f, t, _)) => (Some(f), t.to_string()),
                    None => {
                        let _ = writeln!(
                            self.out.explain,
                            "function {name}: kept as written: its source is not known"
                        );
                        continue;
                    }
                }
            };
            let Ok(file_ast) = crate::syntax::parse_program(&file_text) else {
                continue;
            };
            let m_name = format!("m_{name}");
            let Some((def_span, def)) = file_ast.stmts.iter().find_map(|s| match &s.kind {
                ast::StmtKind::Function(f)
                    if f.name.name == name || (file.is_some() && f.name.name == m_name) =>
                {
                    Some((s.span, f))
                }
                _ => None,
            }) else {
                continue;
            };
            // the groups of calls, in program order
            let mut groups: Vec<(String, Vec<CallSite>)> = Vec::new();
            for s in sites {
                let k = s.class();
                match groups.iter_mut().find(|g| g.0 == k) {
                    Some(g) => g.1.push(s),
                    None => groups.push((k, vec![s])),
                }
            }
            let every_call_seen = file.is_none() && count_calls(ast, name) == groups[0].1.len();
            if groups.len() == 1 && every_call_seen {
                match self.specialise(&file_text, def, &groups[0].1[0], args, opts) {
                    Ok((edits, explain, _)) => {
                        self.out.optimized += edits.len();
                        self.edits.extend(edits);
                        let _ = write!(self.out.explain, "function {name}: {explain}");
                    }
                    Err(why) => {
                        let _ =
                            writeln!(self.out.explain, "function {name}: kept as written: {why}");
                    }
                }
                continue;
            }
            let whence = match &file {
                Some(f) => format!(" (from {f})"),
                None => String::new(),
            };
            // the other functions of a library file go with the copy (the copy's body may
            // call them, and SystemDS only knows them inside its builtin namespace)
            let helpers: Vec<(String, ast::Span)> = match &file {
                Some(_) => file_ast
                    .stmts
                    .iter()
                    .filter_map(|s| match &s.kind {
                        ast::StmtKind::Function(f) if f.name.name != def.name.name => {
                            Some((f.name.name.clone(), s.span))
                        }
                        _ => None,
                    })
                    .collect(),
                None => Vec::new(),
            };
            // the name calls use: a library file's `m_NAME` is called as `NAME`
            let called = match &file {
                Some(_) => name.strip_prefix("m_").unwrap_or(name),
                None => name,
            };
            for (_, group) in &groups {
                let calls = group.len();
                let planned = self.specialise(&file_text, def, &group[0], args, opts);
                let (edits, explain) = match planned {
                    Ok((edits, explain, _)) if edits.is_empty() => {
                        let _ = write!(
                            self.out.explain,
                            "function {name}{whence}: kept as written for {calls} call(s), {explain}"
                        );
                        continue;
                    }
                    Ok((_, _, saved)) if file.is_some() && saved < self.copy_gain => {
                        let _ = writeln!(
                            self.out.explain,
                            "function {name}{whence}: kept as written for {calls} call(s): its \
                             plans save an estimated {saved:.2e} ns per call, less than the {:.0e} \
                             a copy of a library function must save",
                            self.copy_gain
                        );
                        continue;
                    }
                    Ok((edits, explain, _)) => (edits, explain),
                    Err(why) => {
                        let _ = writeln!(
                            self.out.explain,
                            "function {name}{whence}: kept as written for {calls} call(s): {why}"
                        );
                        continue;
                    }
                };
                let fresh_file = file.as_ref().is_some_and(|f| !copied_files.contains(f));
                if fresh_file {
                    if let Some((h, _)) = helpers.iter().find(|(h, _)| defined.contains(h)) {
                        let _ = writeln!(
                            self.out.explain,
                            "function {name}{whence}: kept as written: its helper `{h}` has the name of a function of the program"
                        );
                        continue;
                    }
                }
                let copy = self.names.fresh_like(called);
                // rename the group's calls; a call inside a replaced run is renamed in the
                // run's text, where it is the call's source text
                let mut renames: Vec<(usize, usize, String)> = Vec::new();
                let mut patches: Vec<(usize, String, String)> = Vec::new();
                let mut ok = true;
                for s in group {
                    let Some(pos) = find_call(self.source, s.span, called) else {
                        ok = false;
                        break;
                    };
                    let inside = self
                        .edits
                        .iter()
                        .position(|(a, b, _)| *a <= pos && pos + called.len() <= *b);
                    match inside {
                        None => renames.push((pos, pos + called.len(), copy.clone())),
                        Some(k) => {
                            let call = &self.source[s.span.start..s.span.end];
                            let rel = pos - s.span.start;
                            let renamed =
                                format!("{}{copy}{}", &call[..rel], &call[rel + called.len()..]);
                            if !self.edits[k].2.contains(call) {
                                ok = false;
                                break;
                            }
                            patches.push((k, call.to_string(), renamed));
                        }
                    }
                }
                if !ok {
                    let _ = writeln!(
                        self.out.explain,
                        "function {name}{whence}: kept as written: a call's text was not found"
                    );
                    continue;
                }
                for (k, from, to) in patches {
                    self.edits[k].2 = self.edits[k].2.replacen(&from, &to, 1);
                }
                self.edits.extend(renames);
                self.out.optimized += edits.len();
                // the copy: the definition with the body's edits applied, under its new name
                let mut text = format!(
                    "\n# {name}{whence}, planned by spores for {calls} call(s) with {}\n{copy}",
                    group[0].describe(&def.params)
                );
                let mut pos = def.name.span.end;
                let mut edits = edits;
                edits.sort_by_key(|x| x.0);
                for (s, e, t) in &edits {
                    text.push_str(&file_text[pos..*s]);
                    text.push_str(t);
                    pos = *e;
                }
                text.push_str(&file_text[pos..def_span.end]);
                text.push('\n');
                if fresh_file {
                    if let Some(f) = &file {
                        copied_files.insert(f.clone());
                    }
                    for (h, span) in &helpers {
                        defined.insert(h.clone());
                        text.push_str(&file_text[span.start..span.end]);
                        text.push('\n');
                    }
                }
                self.appended.push(text);
                let _ = write!(
                    self.out.explain,
                    "function {name}{whence}: copy {copy} for {calls} call(s): {explain}"
                );
            }
        }
    }

    /// Plans the body of `def` (a function of `file`) for the arguments of one call: the
    /// body is checked as a program of its own whose parameters are `read()`s of the call's
    /// shapes (and non-zeros), or the call's constants, followed by the file's function
    /// definitions (for the calls it makes). Returns the replacements of the file's text
    /// and the explanation.
    #[allow(clippy::type_complexity)]
    fn specialise(
        &mut self,
        file: &str,
        def: &ast::Function,
        site: &CallSite,
        args: &ScriptArgs,
        opts: &Options,
    ) -> Result<(Vec<(usize, usize, String)>, String, f64), String> {
        let (Some(first), Some(last)) = (def.body.first(), def.body.last()) else {
            return Err("empty body".into());
        };
        let (start, end) = (first.span.start, last.span.end);
        if end > file.len() || site.args.len() != def.params.len() {
            return Err("its call does not give every parameter".into());
        }
        let mut header = String::new();
        let mut hints = HashMap::new();
        for (p, (ty, known, konst)) in def.params.iter().zip(&site.args) {
            let n = &p.name.name;
            let _ = match (ty, konst) {
                (Ty::Matrix(Some(r), Some(c)), _) => {
                    hints.insert(
                        n.clone(),
                        Hint {
                            rows: *r,
                            cols: *c,
                            nnz: known.map(|k| k.nnz as usize),
                        },
                    );
                    writeln!(header, "{n} = read(\"spores:{n}\", rows={r}, cols={c})")
                }
                (Ty::Matrix(..), _) => {
                    return Err(format!("the shape of its argument `{n}` is not known"))
                }
                (Ty::Scalar(hir::ScalarTy::Double), Some(Konst::Num(v))) => {
                    writeln!(header, "{n} = {v:?}")
                }
                (Ty::Scalar(hir::ScalarTy::Int), Some(Konst::Num(v))) => {
                    writeln!(header, "{n} = {}", *v as i64)
                }
                (Ty::Scalar(hir::ScalarTy::Bool), Some(Konst::Num(v))) => {
                    writeln!(header, "{n} = {}", if *v != 0.0 { "TRUE" } else { "FALSE" })
                }
                (Ty::Str, Some(Konst::Str(s))) if !s.contains(['"', '\\', '\n']) => {
                    writeln!(header, "{n} = \"{s}\"")
                }
                (Ty::Scalar(hir::ScalarTy::Double), _) => writeln!(
                    header,
                    "{n} = as.scalar(read(\"spores:{n}\", rows=1, cols=1))"
                ),
                (Ty::Scalar(hir::ScalarTy::Int), _) => writeln!(
                    header,
                    "{n} = as.integer(as.scalar(read(\"spores:{n}\", rows=1, cols=1)))"
                ),
                (Ty::Scalar(hir::ScalarTy::Bool), _) => writeln!(
                    header,
                    "{n} = as.logical(as.scalar(read(\"spores:{n}\", rows=1, cols=1)))"
                ),
                _ => {
                    return Err(format!(
                        "its parameter `{n}` is not a number, constant string or matrix"
                    ))
                }
            };
        }
        header.push_str("print(\"\")\n");
        let offset = header.len();
        let mut text = header;
        text.push_str(&file[start..end]);
        text.push('\n');
        for s in &crate::syntax::parse_program(file)
            .map_err(|e| e.to_string())?
            .stmts
        {
            if let ast::StmtKind::Function(_) = &s.kind {
                text.push_str(&file[s.span.start..s.span.end]);
                text.push('\n');
            }
        }
        let body_end = offset + (end - start);
        crate::syntax::sources::set_main(&text);
        let checked = crate::syntax::parse_program(&text)
            .map_err(|e| e.to_string())
            .and_then(|a| check_ipa(&a, args, &opts.lib).map_err(|e| e.to_string()));
        crate::syntax::sources::set_main(self.source);
        let prog =
            checked.map_err(|e| format!("its body does not check with its call's shapes: {e}"))?;
        let mut sub = Emitter {
            min_gain: self.min_gain,
            copy_gain: self.copy_gain,
            engine: self.engine,
            source: &text,
            opt: self.opt.clone_settings(),
            systemds: std::mem::take(&mut self.systemds),
            nnz: HashMap::new(),
            konst: HashMap::new(),
            from_calls: HashSet::new(),
            hints,
            names: Fresh {
                reserved: std::mem::take(&mut self.names.reserved),
                next: self.names.next,
            },
            edits: Vec::new(),
            saved: Vec::new(),
            calls: HashMap::new(),
            appended: Vec::new(),
            out: Emitted::default(),
        };
        sub.blocks(&prog.blocks, true);
        self.systemds = std::mem::take(&mut sub.systemds);
        self.names.reserved = std::mem::take(&mut sub.names.reserved);
        self.names.next = sub.names.next;
        let mut edits = Vec::new();
        for (s, e, t) in sub.edits {
            if s >= offset && e <= body_end {
                edits.push((s - offset + start, e - offset + start, t));
            }
        }
        let saved: f64 = sub
            .saved
            .iter()
            .filter(|(s, _)| (offset..body_end).contains(s))
            .map(|(_, g)| g)
            .sum();
        let mut explain = format!(
            "body planned for {}: {} run(s) replaced\n",
            site.describe(&def.params),
            edits.len()
        );
        // the body's runs, by line of the original file
        let line0 = file[..start].matches('\n').count();
        let header_lines = text[..offset].matches('\n').count();
        for l in sub.out.explain.lines() {
            let l = match l.strip_prefix("line ").and_then(|r| r.split_once(' ')) {
                Some((n, rest)) => match n.parse::<usize>() {
                    Ok(n) if n > header_lines => {
                        format!("  line {} {rest}", n - header_lines + line0)
                    }
                    Ok(_) => continue,
                    Err(_) => format!("  {l}"),
                },
                None if l.starts_with("input ") || l.starts_with("function ") => continue,
                None => format!("  {l}"),
            };
            explain.push_str(&l);
            explain.push('\n');
        }
        Ok((edits, explain, saved))
    }

    /// Updates the forward pass's knowledge with one statement.
    fn learn(&mut self, s: &Stmt) {
        match s {
            Stmt::Assign { var, value, .. } => {
                self.konst.remove(var);
                self.nnz.remove(var);
                let mut call = false;
                crate::check::visit(value, &mut |x| {
                    call |= matches!(
                        x.kind,
                        ExprKind::Call(..) | ExprKind::Outputs(..) | ExprKind::Dispatch { .. }
                    )
                });
                if call {
                    self.from_calls.insert(var.clone());
                }
                if let Some(v) = self.constant(value) {
                    self.konst.insert(var.clone(), v);
                }
                if let Some(k) = self.estimate(value, var) {
                    self.nnz.insert(var.clone(), k);
                }
            }
            Stmt::IndexAssign { var, .. } => {
                self.nnz.remove(var);
            }
            Stmt::Call { outputs, .. } | Stmt::MultiBuiltin { outputs, .. } => {
                for o in outputs {
                    self.nnz.remove(o);
                    self.konst.remove(o);
                    self.from_calls.insert(o.clone());
                }
            }
            _ => {}
        }
    }

    /// The value of a scalar expression of constants (`k`, `k + 1`), if known.
    fn constant(&self, e: &Expr) -> Option<f64> {
        use spores_runtime::ops::BinOp;
        match &e.kind {
            ExprKind::Lit(v) => Some(v.as_f64()),
            ExprKind::Var(n) if !e.ty.is_matrix() => self.konst.get(n).copied(),
            // a negative literal is a negation (`min=-0.5`)
            ExprKind::Unary(spores_runtime::ops::UnaryOp::Neg, a) if !e.ty.is_matrix() => {
                Some(-self.constant(a)?)
            }
            ExprKind::Binary(op, a, b) if !e.ty.is_matrix() => {
                let (x, y) = (self.constant(a)?, self.constant(b)?);
                match op {
                    BinOp::Add => Some(x + y),
                    BinOp::Sub => Some(x - y),
                    BinOp::Mul => Some(x * y),
                    BinOp::Div => Some(x / y),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The non-zeros and finiteness of a matrix expression, `None` for a scalar or an
    /// unknown shape.
    fn estimate(&self, e: &Expr, assigned: &str) -> Option<Known> {
        let Ty::Matrix(Some(r), Some(c)) = e.ty else {
            return None;
        };
        let cells = (r * c) as f64;
        let dense = Known {
            nnz: cells,
            finite: true,
        };
        let lit = |x: &Expr| self.constant(x);
        let of = |x: &Expr| -> Known {
            match &x.ty {
                Ty::Matrix(..) => self.estimate(x, assigned).unwrap_or(dense),
                _ => Known {
                    nnz: cells,
                    finite: lit(x).is_none_or(f64::is_finite),
                },
            }
        };
        // an estimate is 0 only where the values are known to be zero (the analysis takes
        // nnz 0 as a proof): derived estimates are at least 1
        let derived = |k: Known| Known {
            nnz: k.nnz.max(1.0_f64.min(cells)),
            ..k
        };
        Some(match &e.kind {
            ExprKind::Var(n) => self.nnz.get(n).copied().unwrap_or(Known {
                finite: !self.from_calls.contains(n),
                ..dense
            }),
            ExprKind::Builtin(f, a) => match f.name {
                "rand" => {
                    // rand(rows, cols, min, max, sparsity, ...)
                    let p = |name: &str| {
                        f.params
                            .iter()
                            .position(|q| q.name == name)
                            .and_then(|k| lit(&a[k]))
                    };
                    let sp = p("sparsity").unwrap_or(1.0).clamp(0.0, 1.0);
                    let finite = [p("min"), p("max")]
                        .iter()
                        .all(|v| v.is_some_and(f64::is_finite));
                    // zero only when it is exactly zero (the analysis takes nnz 0 as a proof)
                    Known {
                        nnz: if sp == 0.0 { 0.0 } else { (sp * cells).ceil() },
                        finite,
                    }
                }
                "matrix" => match lit(&a[0]) {
                    Some(v) => Known {
                        nnz: if v == 0.0 { 0.0 } else { cells },
                        finite: v.is_finite(),
                    },
                    None => of(&a[0]),
                },
                "t" => of(&a[0]),
                "read" => match self.hints.get(assigned).and_then(|h| h.nnz) {
                    Some(n) => Known {
                        nnz: n as f64,
                        finite: true,
                    },
                    None => dense,
                },
                _ => dense,
            },
            ExprKind::Binary(op, a, b) => {
                use spores_runtime::ops::BinOp;
                let (x, y) = (of(a), of(b));
                let finite = x.finite && y.finite;
                let zero = |z: &Expr| lit(z) == Some(0.0);
                match op {
                    BinOp::Ne if zero(b) => Known {
                        nnz: x.nnz,
                        finite: true,
                    },
                    BinOp::Ne if zero(a) => Known {
                        nnz: y.nnz,
                        finite: true,
                    },
                    BinOp::Mul => derived(Known {
                        nnz: x.nnz.min(y.nnz),
                        finite,
                    }),
                    BinOp::Add | BinOp::Sub => derived(Known {
                        nnz: (x.nnz + y.nnz).min(cells),
                        finite,
                    }),
                    BinOp::Div if a.ty.is_matrix() => derived(Known { nnz: x.nnz, finite }),
                    _ => Known { nnz: cells, finite },
                }
            }
            // a function's output: dense as far as known, and possibly not finite
            ExprKind::Call(..) | ExprKind::Dispatch { .. } => Known {
                finite: false,
                ..dense
            },
            _ => dense,
        })
    }

    /// Plans one run of statements and records its replacement.
    fn run(&mut self, block: usize, start: usize, stmts: &[Stmt], seg: &Segment) {
        let span = |s: &Stmt| match s {
            Stmt::Assign { span, .. } => *span,
            _ => unreachable!("runs are assignments"),
        };
        let (first, last) = (span(&stmts[0]), span(&stmts[stmts.len() - 1]));
        let line = self.source[..first.start.min(self.source.len())]
            .matches('\n')
            .count()
            + 1;
        let vars: Vec<&str> = seg.outputs.iter().map(|o| o.var.as_str()).collect();
        let _ = write!(
            self.out.explain,
            "line {line} (block {block}), {}:",
            vars.join(", ")
        );
        match self.plan_run(block, start, stmts, seg) {
            Ok((text, explain, saved)) => {
                self.out.optimized += 1;
                let _ = writeln!(self.out.explain, "{explain}");
                self.edits.push((first.start, last.end, text));
                self.saved.push((first.start, saved));
            }
            Err(why) => {
                self.out.kept += 1;
                let _ = writeln!(self.out.explain, " kept as written: {why}");
            }
        }
    }

    fn plan_run(
        &mut self,
        block: usize,
        start: usize,
        stmts: &[Stmt],
        seg: &Segment,
    ) -> Result<(String, String, f64), String> {
        let main = crate::syntax::sources::FILE_STRIDE;
        // the type of each input: its first read (later reads are the run's own values)
        let mut types: HashMap<String, Ty> = HashMap::new();
        for s in stmts {
            if let Stmt::Assign { value, span, .. } = s {
                if span.end > main {
                    return Err("the statements come from a library file".into());
                }
                crate::check::visit(value, &mut |x| {
                    if let ExprKind::Var(n) = &x.kind {
                        types.entry(n.clone()).or_insert(x.ty);
                    }
                });
            }
        }
        for (n, b) in &seg.barriers {
            types.insert(n.clone(), b.ty);
        }
        let mut dims: Vec<Symbol> = Vec::new();
        for node in seg.term.as_ref() {
            if let Ir::Fill([_, r, c]) = node {
                for x in [r, c] {
                    if let Ir::Symbol(s) = &seg.term[*x] {
                        dims.push(*s);
                    }
                }
            }
        }
        let mut inputs = Vec::new();
        let mut shown_inputs = Vec::new();
        let mut seen = HashSet::new();
        for node in seg.term.as_ref() {
            let Ir::Symbol(s) = node else { continue };
            if !seen.insert(*s) {
                continue;
            }
            let name = s.as_str();
            let shown = seg
                .barriers
                .iter()
                .find(|(b, _)| b == name)
                .map(|(_, e)| self.text(e.span).to_string())
                .unwrap_or_else(|| name.to_string());
            let input = match types.get(name) {
                Some(Ty::Matrix(Some(rows), Some(cols))) => {
                    let k = seg
                        .barriers
                        .iter()
                        .find(|(b, _)| b == name)
                        .and_then(|(_, e)| self.estimate(e, ""))
                        .or_else(|| self.nnz.get(name).copied())
                        .unwrap_or(Known {
                            nnz: (rows * cols) as f64,
                            finite: !self.from_calls.contains(name),
                        });
                    shown_inputs.push(format!("{shown} {rows}x{cols} nnz ~{}", k.nnz));
                    Input::Matrix {
                        rows: *rows,
                        cols: *cols,
                        nnz: k.nnz as usize,
                        finite: k.finite,
                    }
                }
                Some(Ty::Matrix(..)) => {
                    return Err(format!(
                        "the shape of `{shown}` is not known before running"
                    ))
                }
                Some(Ty::Scalar(_)) if dims.contains(s) => match self.konst.get(name) {
                    Some(v) => {
                        shown_inputs.push(format!("{shown} = {v}"));
                        Input::Scalar(Some(*v))
                    }
                    None => {
                        return Err(format!(
                            "`{shown}` sizes a matrix and is not known before running"
                        ))
                    }
                },
                Some(Ty::Scalar(_)) => match self.konst.get(name) {
                    Some(v) if !v.is_finite() => Input::Scalar(None),
                    _ => Input::FiniteScalar,
                },
                _ => return Err(format!("`{shown}` is not a number or matrix")),
            };
            inputs.push((name.to_string(), input));
        }
        let roots: Vec<Id> = seg.roots();
        let plan = match self.opt.plan(block, start, &seg.term, &roots, &inputs) {
            Planned::Plan(p) => p,
            Planned::AsWritten => return Err("no cheaper plan".into()),
            Planned::Unplanned => return Err("the optimizer cannot plan it".into()),
        };
        let input_shape = |s: Symbol| match types.get(s.as_str()) {
            Some(Ty::Matrix(Some(r), Some(c))) => Some((*r, *c)),
            _ => None,
        };
        let value = |s: Symbol| self.konst.get(s.as_str()).copied();
        let (expr, plan_roots) = guard_wsloss(&plan);
        let plan = crate::optimize::Plan {
            expr,
            roots: plan_roots,
            // emitted as DML, never evaluated here (and the flags were the old term's)
            unordered: Vec::new(),
            ..(*plan).clone()
        };
        let (mut systemds, base, base_roots) = self.systemds_cost(&seg.term, &roots, &inputs);
        let mut plan_cost = plan.cost;
        let mut spark_note = String::new();
        if self.engine == systemds::Engine::Spark {
            // the same fixed cost per Spark instruction on both sides
            let count =
                |e: &egg::RecExpr<Ir>, r: &[Id]| spark_instructions(e, r, &input_shape, &value);
            // the plan as emitted: SystemDS's single-consumer rewrites of it (`sum(W %*%
            // rowSums(H))` to a dot product of column and row sums) are not counted; they
            // turn vector operations into other vector operations, and counted as
            // instructions they would weigh a thin plan as much as the dense product it avoids
            let (Some(p), Some(b)) = (count(&plan.expr, &plan.roots), count(&base, &base_roots))
            else {
                return Err("the plan's shapes are not known".into());
            };
            plan_cost += SPARK_INSTRUCTION_NS * p as f64;
            systemds += SPARK_INSTRUCTION_NS * b as f64;
            spark_note = format!(", Spark instructions {p} against {b}");
        }
        if plan_cost.partial_cmp(&(SYSTEMDS_MARGIN * systemds)) == Some(std::cmp::Ordering::Greater)
        {
            return Err(format!(
                "the plan (cost {plan_cost:.4e}{spark_note}) does not beat SystemDS's own fused \
                 operators on the statements as written (cost {systemds:.4e})",
            ));
        }
        if systemds - plan_cost < self.min_gain {
            return Err(format!(
                "the plan (cost {plan_cost:.4e}{spark_note}) saves less than {:.0e} ns over the \
                 run as SystemDS runs it (cost {systemds:.4e})",
                self.min_gain
            ));
        }
        let names: Vec<String> = seg.outputs.iter().map(|o| o.var.clone()).collect();
        let shapes = dml::shapes(&plan.expr, &input_shape, &value)
            .ok_or("the plan's shapes are not known")?;
        let mut leaves = Barriers {
            texts: seg
                .barriers
                .iter()
                .map(|(n, e)| (Symbol::from(n.as_str()), self.barrier_piece(e)))
                .collect(),
        };
        // a barrier the plan would write more than once (the plan reads it twice, or an
        // expansion copies it) is computed once, first, into a temporary: it may be costly
        // or not deterministic (`rand` without a seed); it reads only variables from before
        // the run, so the front is its place
        let mut hoisted: Vec<String> = Vec::new();
        {
            // a trial print with each barrier as a unique marker, to count its copies
            let marker = |s: &Symbol| format!("\u{1}{}\u{1}", s.as_str());
            let markers = Barriers {
                texts: leaves
                    .texts
                    .keys()
                    .map(|s| (*s, (Piece::atom(marker(s)), vec![])))
                    .collect(),
            };
            let mut n = 0;
            let trial = dml::print_roots_shaped(
                &plan.expr,
                &plan.roots,
                &names,
                Fused::Expanded,
                &markers,
                &mut || {
                    n += 1;
                    format!("t{n}")
                },
                Some(&shapes),
            )
            .map_err(|e| e.to_string())?;
            let all: String = trial.iter().map(|l| l.value.text.as_str()).collect();
            let mut multi: Vec<Symbol> = leaves
                .texts
                .keys()
                .filter(|s| all.matches(marker(s).as_str()).count() > 1)
                .copied()
                .collect();
            multi.sort_by_key(|s| s.as_str().trim_start_matches(".b").parse::<usize>().ok());
            for s in multi {
                let t = self.names.fresh();
                let (p, _) = leaves.texts[&s].clone();
                hoisted.push(format!("{t} = {}", p.text));
                leaves.texts.insert(s, (Piece::atom(t), vec![]));
            }
        }
        // print; an output that a later line still reads as the run's input is computed
        // into a temporary and assigned at the end
        let mut renamed: Vec<Option<String>> = vec![None; names.len()];
        let lines = loop {
            let current: Vec<String> = names
                .iter()
                .zip(&renamed)
                .map(|(n, r)| r.clone().unwrap_or_else(|| n.clone()))
                .collect();
            let before = self.names.next;
            let names_gen = &mut self.names;
            let lines = dml::print_roots_shaped(
                &plan.expr,
                &plan.roots,
                &current,
                Fused::Expanded,
                &leaves,
                &mut || names_gen.fresh(),
                Some(&shapes),
            )
            .map_err(|e| e.to_string())?;
            let mut clash = None;
            for (k, l) in lines.iter().enumerate() {
                if let Target::Output(o) = l.target {
                    if renamed[o].is_some() {
                        continue;
                    }
                    let v = Symbol::from(names[o].as_str());
                    if lines[k + 1..].iter().any(|m| m.reads.contains(&v)) {
                        clash = Some(o);
                        break;
                    }
                }
            }
            match clash {
                Some(o) => {
                    self.names.next = before;
                    renamed[o] = Some(self.names.fresh());
                }
                None => break lines,
            }
        };
        let mut out_lines: Vec<String> = hoisted;
        for l in &lines {
            let (name, text) = match &l.target {
                Target::Temp(t) => (t.clone(), l.value.text.clone()),
                Target::Output(o) => {
                    let name = renamed[*o].clone().unwrap_or_else(|| names[*o].clone());
                    let root = usize::from(plan.roots[*o]);
                    let text = match (seg.outputs[*o].ty, shapes[root].is_some()) {
                        (Ty::Scalar(_), true) => format!("as.scalar({})", l.value.text),
                        (Ty::Matrix(..), false) => format!("as.matrix({})", l.value.text),
                        _ => l.value.text.clone(),
                    };
                    (name, text)
                }
            };
            out_lines.push(format!("{name} = {text}"));
        }
        for (o, r) in renamed.iter().enumerate() {
            if let Some(t) = r {
                out_lines.push(format!("{} = {t}", names[o]));
            }
        }
        // the replaced text: comments of the run first, then one statement per line with
        // the indentation of the run's first line
        let (first, last) = match (&stmts[0], &stmts[stmts.len() - 1]) {
            (Stmt::Assign { span: a, .. }, Stmt::Assign { span: b, .. }) => (*a, *b),
            _ => unreachable!("runs are assignments"),
        };
        let line_start = self.source[..first.start].rfind('\n').map_or(0, |p| p + 1);
        let indent: String = self.source[line_start..]
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        let mut text = String::new();
        for c in comments(&self.source[first.start..last.end]) {
            text.push_str(&c);
            text.push('\n');
            text.push_str(&indent);
        }
        text.push_str(&out_lines.join(&format!("\n{indent}")));

        // explain: inputs, the plan with fused operators by name, its cost
        let mut count = 0;
        let named = dml::print_roots(
            &plan.expr,
            &plan.roots,
            &names,
            Fused::Named,
            &leaves,
            &mut || {
                count += 1;
                format!("%{count}")
            },
        )
        .map_err(|e| e.to_string())?;
        let mut explain = format!(" ({})\n", shown_inputs.join(", "));
        for l in &named {
            let name = match &l.target {
                Target::Temp(t) => t.clone(),
                Target::Output(o) => names[*o].clone(),
            };
            let _ = writeln!(explain, "    {name} = {}", l.value.text);
        }
        let _ = write!(
            explain,
            "    cost {plan_cost:.4e} (as written {:.4e}; as SystemDS runs it {systemds:.4e}{spark_note})",
            plan.written_cost
        );
        Ok((text, explain, systemds - plan_cost))
    }

    /// The estimated cost of a run as SystemDS executes it: the statements as written with
    /// SystemDS's own rewrites ([`systemds_consumer_rewrites`], then [`systemds_rules`])
    /// applied, under spores's cost model.
    /// Returns the cost and the term SystemDS is estimated to run, with its roots.
    fn systemds_cost(
        &self,
        term: &egg::RecExpr<Ir>,
        roots: &[Id],
        inputs: &[(String, Input)],
    ) -> (f64, egg::RecExpr<Ir>, Vec<Id>) {
        let limits = self.opt.limits_for(roots.len());
        let (term, roots, _) = systemds_consumer_rewrites(term, roots);
        let (plan, stats) = crate::optimize::compile(
            &term,
            &roots,
            inputs,
            &self.systemds,
            &limits,
            &self.opt.extract,
            None,
        );
        match plan {
            Some(p) => (p.cost, p.expr, p.roots),
            None => (stats.written_cost, term, roots),
        }
    }

    fn text(&self, span: ast::Span) -> &str {
        self.source.get(span.start..span.end).unwrap_or("")
    }

    /// A barrier's source text, with the precedence of its outermost operation.
    fn barrier_piece(&self, e: &Expr) -> (Piece, Vec<Symbol>) {
        let text = self.text(e.span).trim().to_string();
        let atomic = match &e.kind {
            ExprKind::Var(_) | ExprKind::Builtin(..) | ExprKind::Call(..) => true,
            ExprKind::Outputs(..) | ExprKind::Dispatch { .. } => true,
            ExprKind::Index { .. } | ExprKind::Str(_) => true,
            ExprKind::Lit(_) => !text.starts_with('-'),
            _ => false,
        };
        let mut reads = Vec::new();
        crate::check::visit(e, &mut |x| {
            if let ExprKind::Var(n) = &x.kind {
                reads.push(Symbol::from(n.as_str()));
            }
        });
        let piece = if atomic {
            Piece::atom(text)
        } else {
            Piece::loose(text)
        };
        (piece, reads)
    }
}

/// The plan with each matrix difference that has a matrix product as an operand,
/// `A - X %*% V` or `X %*% V - A`, written as `-(X %*% V) + A` or `-(A) + X %*% V` (the
/// same values in IEEE arithmetic: `a - b` is `a + (-b)`).
///
/// Why: SystemDS 3.4 fuses `sum((A - X %*% V)^2)` into its `wsloss` operator whatever the
/// factors, also when that sum is in a later statement of the same block (`G = ...;
/// print(sum(G^2))`), and its `wsloss` is wrong when the "low-rank" factor `X` is a sparse
/// matrix (2e-5 relative on the als_grad kernel's `U %*% (t(V) %*% V) - X %*% V`; 3e-5 on
/// the same gradient of a function's output). Every such difference is guarded, not only
/// those whose left factor is estimated sparse: ahead of time a non-zero count is often an
/// assumption (a function's output, most builtins' results are taken as dense), and SystemDS
/// picks the sparse format at run time. The cost is one negation of the product's result.
/// Only `-` is matched, so the sum of a negation is left alone. The statements as written
/// are never changed (a user who writes that form gets what SystemDS gives).
fn guard_wsloss(plan: &crate::optimize::Plan) -> (egg::RecExpr<Ir>, Vec<Id>) {
    let nodes = plan.expr.as_ref();
    let product = |i: Id| matches!(&nodes[usize::from(i)], Ir::MMul(_) | Ir::TMMul(_));
    let mut out = egg::RecExpr::default();
    let mut map: Vec<Id> = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        let id = match n {
            Ir::ESub([a, b])
                if plan.notes.get(i).is_some_and(|x| x.shape.is_some())
                    && (product(*a) || product(*b)) =>
            {
                let (a, b) = (map[usize::from(*a)], map[usize::from(*b)]);
                let nb = out.add(Ir::Neg(b));
                out.add(Ir::EAdd([nb, a]))
            }
            _ => out.add(n.clone().map_children(|c| map[usize::from(c)])),
        };
        map.push(id);
    }
    let roots = plan.roots.iter().map(|r| map[usize::from(*r)]).collect();
    (out, roots)
}

/// Fresh DML identifiers for temporaries, none of them a word of the program.
struct Fresh {
    reserved: HashSet<String>,
    next: usize,
}

impl Fresh {
    /// A fresh name for a copy of function `name`: `name_spores1`, ...
    fn fresh_like(&mut self, name: &str) -> String {
        let mut k = 1;
        loop {
            let t = format!("{name}_spores{k}");
            if self.reserved.insert(t.clone()) {
                return t;
            }
            k += 1;
        }
    }

    fn fresh(&mut self) -> String {
        loop {
            self.next += 1;
            let t = format!("sp_tmp{}", self.next);
            if !self.reserved.contains(&t) {
                return t;
            }
        }
    }
}

/// Barrier symbols print as the source text of the expressions they stand for.
struct Barriers {
    texts: HashMap<Symbol, (Piece, Vec<Symbol>)>,
}

impl Leaves for Barriers {
    fn leaf(&self, s: Symbol) -> Option<(Piece, Vec<Symbol>)> {
        self.texts.get(&s).cloned()
    }
}

/// The `#` comments in a piece of source (outside string literals).
fn comments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        for (i, ch) in line.char_indices() {
            match quote {
                Some(q) if ch == q && prev != '\\' => quote = None,
                Some(_) => {}
                None if ch == '"' || ch == '\'' => quote = Some(ch),
                None if ch == '#' => {
                    out.push(line[i..].trim_end().to_string());
                    break;
                }
                None => {}
            }
            prev = ch;
        }
    }
    out
}
