//! Stage 2, check: resolves builtins, types every expression, infers shapes and groups
//! statements into basic blocks.
//!
//! The checker is an abstract interpreter over an environment that maps each variable to its
//! type, its value when it is a compile-time constant (so `m = 8000; X = rand(rows=m, ...)`
//! has a known shape), and whether it is defined on every path. Branches are joined (a
//! dimension or constant that differs becomes unknown); loop bodies are re-checked until the
//! environment at the loop head stops changing, and only the final pass's errors count.
//! What cannot be known statically (shapes after `read`, data-dependent branches) is checked
//! again at run time with the same rules ([`shape`]).

pub mod hir;
pub mod scalar;
pub mod shape;

mod builtins;
mod func;

use crate::error::SpannedError;
use crate::syntax::ast::{self, Span};
use hir::{Block, Dim, Expr, ExprKind, Range, Scalar, ScalarTy, Stmt, Ty};
use spores_runtime::ops::{BinOp, UnaryOp};
use std::collections::{BTreeMap, HashMap};

/// Values of `$name` script arguments, as given on the command line (`--nvargs m=20`).
pub type ScriptArgs = HashMap<String, String>;

type Res<T> = Result<T, SpannedError>;

/// What the checker knows about a variable at a program point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VarInfo {
    ty: Ty,
    konst: Option<Scalar>,
    /// the value of a string variable, when it is the same on every path (a string
    /// literal assigned, or a function's constant string argument)
    text: Option<std::rc::Rc<str>>,
    /// defined on every path to this point
    always: bool,
    /// the assignment that last set it (for messages)
    span: Span,
    /// a list's entries (name if named, kind), when the same on every path: a list written
    /// in place (`L = list(a, b)`) and not changed since (`eval("f", L)` binds them)
    items: Option<ListItems>,
}

/// A list's entries as the checker knows them: each one's name (if named) and kind.
pub(crate) type ListItems = std::rc::Rc<[(Option<String>, Ty)]>;

pub(crate) type Env = BTreeMap<String, VarInfo>;

/// The value of a string expression known before running: a literal, or a variable that
/// holds the same string on every path.
fn const_text(env: &Env, e: &ast::Expr) -> Option<std::rc::Rc<str>> {
    match &e.kind {
        ast::ExprKind::Str(s) => Some(s.as_str().into()),
        ast::ExprKind::Var(n) => env.get(n)?.text.clone(),
        _ => None,
    }
}

/// Whether `value` is a constant matrix with literal bounds SystemDS's rewrites fold a number
/// into: `matrix(v, ...)` of a number, `rand(...)` with literal `min` and `max` and the
/// uniform distribution.
fn constant_datagen(value: &ast::Expr) -> bool {
    use ast::ExprKind as K;
    let literal = |e: &ast::Expr| {
        matches!(e.kind, K::Int(_) | K::Double(_))
            || matches!(&e.kind, K::Unary(ast::UnOp::Neg, x) if matches!(x.kind, K::Int(_) | K::Double(_)))
    };
    let K::Call(c) = &value.kind else {
        return false;
    };
    let named = |n: &str| {
        c.args
            .iter()
            .find(|a| a.name.as_ref().is_some_and(|x| x.name == n))
    };
    let constant = match c.func.name.as_str() {
        "rand" => {
            ["min", "max"]
                .iter()
                .all(|n| named(n).is_none_or(|a| literal(&a.value)))
                && named("pdf").is_none_or(|a| matches!(&a.value.kind, K::Str(s) if s == "uniform"))
                && c.args
                    .iter()
                    .take(2)
                    .all(|a| a.name.is_some() || !matches!(a.value.kind, K::Str(_)))
        }
        "matrix" => c
            .args
            .first()
            .is_some_and(|a| a.name.is_none() && literal(&a.value)),
        _ => false,
    };
    constant
}

/// The variables `stmts` assign a constant matrix with literal bounds (`matrix(v, ...)` of a
/// number, `rand(...)` with literal `min` and `max` and the uniform distribution: SystemDS's
/// datagen operations its rewrites fold a number into), at any depth outside function bodies,
/// and that the whole program reads once (SystemDS folds only a datagen with one consumer).
fn datagen_variables(stmts: &[ast::Stmt], out: &mut std::collections::HashSet<String>) {
    fn assigned(stmts: &[ast::Stmt], out: &mut std::collections::HashSet<String>) {
        for st in stmts {
            match &st.kind {
                ast::StmtKind::Assign { target, value } if constant_datagen(value) => {
                    out.insert(target.name.clone());
                }
                ast::StmtKind::If { then, els, .. } => {
                    assigned(then, out);
                    assigned(els, out);
                }
                ast::StmtKind::For { body, .. } | ast::StmtKind::While { body, .. } => {
                    assigned(body, out)
                }
                _ => {}
            }
        }
    }
    fn reads(e: &ast::Expr, n: &mut HashMap<String, usize>) {
        use ast::ExprKind as K;
        let range = |r: &ast::IndexRange, n: &mut HashMap<String, usize>| match r {
            ast::IndexRange::All => {}
            ast::IndexRange::At(x) => reads(x, n),
            ast::IndexRange::Range(a, b) => {
                reads(a, n);
                reads(b, n);
            }
        };
        match &e.kind {
            K::Var(v) => *n.entry(v.clone()).or_default() += 1,
            K::Unary(_, x) => reads(x, n),
            K::Binary(_, a, b) => {
                reads(a, n);
                reads(b, n);
            }
            K::Call(c) => c.args.iter().for_each(|a| reads(&a.value, n)),
            K::Index { base, rows, cols } => {
                reads(base, n);
                range(rows, n);
                range(cols, n);
            }
            _ => {}
        }
    }
    fn all_reads(stmts: &[ast::Stmt], n: &mut HashMap<String, usize>) {
        for st in stmts {
            match &st.kind {
                ast::StmtKind::Assign { value, .. } => reads(value, n),
                ast::StmtKind::Call(c) | ast::StmtKind::MultiAssign { call: c, .. } => {
                    c.args.iter().for_each(|a| reads(&a.value, n))
                }
                ast::StmtKind::IndexAssign { target, value, .. } => {
                    *n.entry(target.name.clone()).or_default() += 1;
                    reads(value, n)
                }
                ast::StmtKind::If { cond, then, els } => {
                    reads(cond, n);
                    all_reads(then, n);
                    all_reads(els, n);
                }
                ast::StmtKind::For { from, to, body, .. } => {
                    reads(from, n);
                    if let Some(t) = to {
                        reads(t, n);
                    }
                    all_reads(body, n);
                }
                ast::StmtKind::While { cond, body } => {
                    reads(cond, n);
                    all_reads(body, n);
                }
                ast::StmtKind::Function(f) => all_reads(&f.body, n),
                _ => {}
            }
        }
    }
    let mut constant = std::collections::HashSet::new();
    assigned(stmts, &mut constant);
    let mut n = HashMap::new();
    all_reads(stmts, &mut n);
    out.extend(constant.into_iter().filter_map(|v| match n.get(&v) {
        Some(1) => Some(v),
        // read twice: `print(C + C)` folds too (`C * 2`, then the constant)
        Some(2) => Some(format!("{v}+{v}")),
        _ => None,
    }));
}

/// `print(E)` where E is an element-wise operation with a matrix result: SystemDS compiles
/// the operation with print's scalar string output as its output type and rejects the whole
/// program when it generates the instruction ("Element-wise matrix operations between
/// variables ... must produce a matrix"), in a branch that never runs too, unless one of its
/// rewrites has replaced the operation first. Rejected here, in the program's own blocks, as
/// SystemDS does (each form seen rejected by SystemDS 3.4): a comparison or `&`, `|`, `%%`,
/// `%/%` with a matrix operand; `+ - * / ^` of a matrix and a scalar or of two matrices
/// (`X + 1`, `2 * X`, `X ^ 1`, `X + X`, `t(X) + s`); unary minus of a matrix (`-X`,
/// `-(X + 1)`); `xor`, `min`, `max` of two arguments, one a matrix. Left to run, as SystemDS's
/// rewrites replace them: `X * 1`, `1 * X`, `X / 1`, `X - 0` (which are `X`); a variable
/// assigned a constant matrix (`matrix(1, ..)`, `rand(..)` with literal bounds) and read
/// nowhere else, with a number (`C + 1`, `C / 2`, `2 * C`) or negated (`-C`), which SystemDS
/// folds into a new constant matrix (also `C + C`, read nowhere else); `-(A - B)`
/// (`B - A`) and `-(-X)` (`X`, when its inner negation is not shared); and an operand that is itself a negation (`-X + 1` is `1 - X`
/// there). Also left to run: what fails only when it runs there (`%*%`, unary functions,
/// `cbind`), and function bodies (SystemDS compiles no uncalled function). A constant
/// matrix folds only when its assignment is in the same statement block as the print
/// (`datagen` holds only those): after a loop or an `if` not known before running, SystemDS
/// reads it as a variable and rejects the print.
fn print_of_matrix_operation(
    arg: &ast::Expr,
    value: &Expr,
    datagen: &std::collections::HashSet<String>,
) -> Res<()> {
    if !value.ty.is_matrix() {
        return Ok(());
    }
    use ast::BinOp as B;
    use ast::ExprKind as K;
    let number = |e: &ast::Expr, v: f64| match &e.kind {
        K::Int(i) => *i as f64 == v,
        K::Double(x) => *x == v,
        _ => false,
    };
    let is_number = |e: &ast::Expr| {
        matches!(e.kind, K::Int(_) | K::Double(_))
            || matches!(&e.kind, K::Unary(ast::UnOp::Neg, x) if matches!(x.kind, K::Int(_) | K::Double(_)))
    };
    let constant_var = |e: &ast::Expr| matches!(&e.kind, K::Var(n) if datagen.contains(n));
    let negation = |e: &ast::Expr| matches!(e.kind, K::Unary(ast::UnOp::Neg, _)) && !is_number(e);
    let doubled = |l: &ast::Expr, r: &ast::Expr| match (&l.kind, &r.kind) {
        (K::Var(x), K::Var(y)) => x == y && datagen.contains(&format!("{x}+{y}")),
        _ => false,
    };
    let rejected = match (&arg.kind, &value.kind) {
        (K::Binary(op, l, r), ExprKind::Binary(_, a, b)) => match op {
            B::Lt | B::Le | B::Gt | B::Ge | B::Eq | B::Ne | B::And | B::Or | B::Mod | B::IntDiv => {
                true
            }
            B::Add | B::Sub | B::Mul | B::Div | B::Pow => {
                let removed = match op {
                    B::Mul => number(l, 1.0) || number(r, 1.0),
                    B::Div => number(r, 1.0),
                    B::Sub => number(r, 0.0),
                    _ => false,
                };
                let folded = (constant_var(l)
                    && is_number(r)
                    && matches!(op, B::Add | B::Sub | B::Mul | B::Div))
                    || (constant_var(r) && is_number(l) && matches!(op, B::Add | B::Mul))
                    || (*op == B::Add && doubled(l, r));
                let matrix_operand = a.ty.is_matrix() || b.ty.is_matrix();
                matrix_operand && !removed && !folded && !negation(l) && !negation(r)
            }
            B::MatMul => false,
        },
        (K::Unary(ast::UnOp::Neg, x), _) => match &x.kind {
            K::Binary(B::Sub, ..) | K::Unary(ast::UnOp::Neg, _) => false,
            _ => !constant_var(x),
        },
        (K::Call(c), _) => {
            matches!(c.func.name.as_str(), "xor" | "min" | "max")
                && c.args.len() == 2
                && c.args.iter().all(|a| a.name.is_none())
        }
        _ => false,
    };
    if !rejected {
        return Ok(());
    }
    Err(SpannedError::new(
        arg.span,
        "print of an element-wise matrix operation: SystemDS rejects the program (its \
         instruction must produce a matrix, print's operand is compiled as a scalar)",
    )
    .with_label(format!("this is {}", value.ty))
    .with_note("print a variable assigned this matrix, or toString(...) of it"))
}

/// Checks a parsed program.
pub fn check_program(prog: &ast::Program, args: &ScriptArgs) -> Result<hir::Program, SpannedError> {
    check_program_with(prog, args, &[])
}

/// Checks a parsed program; calls of unknown names resolve to `m_NAME` in `NAME.dml` in the
/// library directories `lib`.
pub fn check_program_with(
    prog: &ast::Program,
    args: &ScriptArgs,
    lib: &[std::path::PathBuf],
) -> Result<hir::Program, SpannedError> {
    check_program_opts(prog, args, lib, false)
}

/// [`check_program_with`], with the shapes of function outputs propagated to their calls
/// when `ipa` (inter-procedural analysis, as SystemDS's IPA does): each call's arguments
/// (shapes, constant scalars and strings) are bound to the body's parameters, the body is
/// checked again with them, and the outputs get the shapes the body gives them (unknown for
/// a recursive call or an output whose shape depends on the path). The checked functions
/// themselves stay one per argument kinds. Without `ipa`, outputs have unknown shapes (what
/// `spores check` and `spores run` use: a shape known only through a call never rejects a
/// program; the executor checks it when it runs). `spores emit` uses `ipa` to plan the
/// statements after a call (`[X, C, S] = scale(X)` then `t(X) %*% X`).
pub fn check_program_opts(
    prog: &ast::Program,
    args: &ScriptArgs,
    lib: &[std::path::PathBuf],
    ipa: bool,
) -> Result<hir::Program, SpannedError> {
    let mut c = Checker::new(args);
    c.ipa = ipa;
    c.lib = func::Library::new(lib.to_vec());
    c.scopes[0] = func::Scope::of(&prog.stmts);
    datagen_variables(&prog.stmts, &mut c.datagen);
    c.load_sources(0)?;
    let mut env = Env::new();
    let mut blocks = c.stmts(&mut env, &prog.stmts)?;
    let mut functions: Vec<hir::Function> = c
        .functions
        .into_iter()
        .map(|f| f.expect("every started function is finished"))
        .collect();
    let mut next = 0;
    number_blocks(&mut blocks, &mut next);
    for f in &mut functions {
        number_blocks(&mut f.body, &mut next);
    }
    Ok(hir::Program {
        blocks,
        functions,
        num_basic_blocks: next,
        script_args_used: c.used,
    })
}

/// Checks every function of a library file against its declared parameter types (matrices
/// of unknown shape); returns the number of functions and the diagnostics of the statements
/// that would fail when they run (empty: the whole file checks).
pub fn check_library(
    prog: &ast::Program,
    lib: &[std::path::PathBuf],
) -> Result<(usize, Vec<SpannedError>), SpannedError> {
    let args = ScriptArgs::new();
    let mut c = Checker::new(&args);
    c.lib = func::Library::new(lib.to_vec());
    c.scopes[0] = func::Scope::of(&prog.stmts);
    let mut count = 0;
    for s in &prog.stmts {
        if let ast::StmtKind::Function(f) = &s.kind {
            c.check_declared(f)?;
            count += 1;
        }
    }
    let mut fails = Vec::new();
    for f in c.functions.iter().flatten() {
        collect_fails(&f.body, &mut fails);
    }
    Ok((count, fails))
}

fn collect_fails(blocks: &[Block], out: &mut Vec<SpannedError>) {
    for b in blocks {
        match b {
            Block::Basic(bb) => {
                for s in &bb.stmts {
                    if let Stmt::Fail { error } = s {
                        out.push(error.clone());
                    }
                }
            }
            Block::If { then, els, .. } => {
                collect_fails(then, out);
                collect_fails(els, out);
            }
            Block::For { body, .. } | Block::While { body, .. } => collect_fails(body, out),
        }
    }
}

/// Checks one expression whose free variables have the given types (used by `spores equiv`
/// to build both sides of a rewrite under declared shapes).
pub fn check_expr(e: &ast::Expr, vars: &[(String, Ty)]) -> Result<Expr, SpannedError> {
    let args = ScriptArgs::new();
    let mut c = Checker::new(&args);
    let env: Env = vars
        .iter()
        .map(|(n, ty)| {
            (
                n.clone(),
                VarInfo {
                    ty: *ty,
                    konst: None,
                    text: None,
                    always: true,
                    span: Span::default(),
                    items: None,
                },
            )
        })
        .collect();
    c.expr(&env, e).map(|(e, _)| e)
}

/// Whether `e` calls a function of the program (SystemDS runs the call in a block of its own).
fn calls_function(e: &Expr) -> bool {
    let mut hit = false;
    visit(e, &mut |x| {
        hit |= matches!(
            x.kind,
            ExprKind::Call(..) | ExprKind::Outputs(..) | ExprKind::Dispatch { .. }
        );
    });
    hit
}

fn flush(cur: &mut Vec<Stmt>, blocks: &mut Vec<Block>) {
    if !cur.is_empty() {
        blocks.push(Block::Basic(hir::BasicBlock {
            id: 0,
            stmts: std::mem::take(cur),
        }));
    }
}

/// A string script argument as SystemDS reads it: surrounding quotes (`"..."` or `'...'`)
/// removed, and the escapes `\b \t \n \f \r \' \"` replaced.
fn unquote_arg(v: &str) -> String {
    let quoted = v.len() >= 2
        && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')));
    let inner = if quoted { &v[1..v.len() - 1] } else { v };
    inner
        .replace("\\b", "\u{8}")
        .replace("\\t", "\t")
        .replace("\\n", "\n")
        .replace("\\f", "\u{c}")
        .replace("\\r", "\r")
        .replace("\\'", "'")
        .replace("\\\"", "\"")
}

fn number_blocks(blocks: &mut [Block], next: &mut usize) {
    for b in blocks {
        match b {
            Block::Basic(bb) => {
                bb.id = *next;
                *next += 1;
            }
            Block::If { then, els, .. } => {
                number_blocks(then, next);
                number_blocks(els, next);
            }
            Block::For { body, .. } | Block::While { body, .. } => number_blocks(body, next),
        }
    }
}

pub(crate) struct Checker<'a> {
    pub(crate) args: &'a ScriptArgs,
    /// the functions of each source file (0: the program)
    pub(crate) scopes: Vec<func::Scope>,
    /// the scope of the code being checked
    pub(crate) scope: usize,
    /// library directories and the files loaded from them
    pub(crate) lib: func::Library,
    /// function instances by (scope, name, argument kinds)
    pub(crate) instances: HashMap<func::InstanceKey, usize>,
    /// the checked functions (`None` while its body is being checked)
    pub(crate) functions: Vec<Option<hir::Function>>,
    /// the output types of each instance (known before its body is checked, for recursion)
    pub(crate) outputs: Vec<Vec<Ty>>,
    /// inside a function body: what may not run is not an error until it runs
    pub(crate) lenient: bool,
    /// how many branches or loop bodies enclose the code being checked: there, a shape
    /// error is reported only if the statement runs (SystemDS runs programs whose untaken
    /// branches have mismatched shapes)
    pub(crate) maybe_not_run: usize,
    /// script arguments referred to so far (`$name`, `$1`)
    pub(crate) used: std::collections::BTreeSet<String>,
    /// variables assigned by a statement deferred to run time: using one is an error only
    /// if the use runs (it fails at the deferred statement first)
    pub(crate) deferred: std::collections::BTreeSet<String>,
    /// set by `stmts`: the list just checked ends after a statement that fails whenever it
    /// runs, so nothing after it runs (an `if` joins only the branches that can finish)
    list_dead: bool,
    /// set by an `if` whose branches both fail whenever they run, for the enclosing list
    if_dead: bool,
    /// propagate the shapes of function outputs to calls ([`check_program_opts`])
    pub(crate) ipa: bool,
    /// with `ipa`: output types by function and argument facts
    pub(crate) ipa_outputs: HashMap<String, Vec<Ty>>,
    /// with `ipa`: the functions whose bodies are being checked for one call's arguments
    /// (a call of one of them is recursive: its outputs stay as declared)
    pub(crate) ipa_stack: Vec<(usize, String)>,
    /// the matrix variables assigned a comparison (`Z = Y < 2`, or `V = Z` of such a
    /// variable) earlier in the basic block being checked: SystemDS's statement block is one
    /// expression DAG, so `as.scalar(Z)` there is `as.scalar(Y < 2)`, which its rewrites make
    /// a boolean (see `scalar_comparison`); a new block (control flow, a function call,
    /// `time()`) forgets them
    pub(crate) block_comparisons: std::collections::HashSet<String>,
    /// variables the program assigns a constant matrix (`matrix(v, rows, cols)` of a number,
    /// or `rand(...)`) anywhere: SystemDS folds such a matrix with a number into a new
    /// constant matrix (`fuseDatagenAndBinaryOperation`), so `print(C + 1)` is no
    /// element-wise instruction there (see [`print_of_matrix_operation`])
    pub(crate) datagen: std::collections::HashSet<String>,
    /// the variables of [`Checker::datagen`] assigned their constant matrix in the statement
    /// block being checked: SystemDS folds the constant into `print(C + 1)` only inside one
    /// block (a loop, or an `if` whose condition is not known before running, starts
    /// another; an `if` known before running is merged into its neighbours, as SystemDS's
    /// `RewriteRemoveUnnecessaryBranches` and `RewriteMergeBlockSequence` merge it)
    pub(crate) block_constants: std::collections::HashSet<String>,
    /// the constants a list of statements starts with (those of the enclosing block, for the
    /// branch of an `if` known before running); empty otherwise
    inherit_constants: std::collections::HashSet<String>,
}

impl<'a> Checker<'a> {
    fn new(args: &'a ScriptArgs) -> Checker<'a> {
        Checker {
            args,
            scopes: vec![func::Scope::default()],
            scope: 0,
            lib: func::Library::new(vec![]),
            instances: HashMap::new(),
            functions: vec![],
            outputs: vec![],
            lenient: false,
            maybe_not_run: 0,
            list_dead: false,
            if_dead: false,
            used: Default::default(),
            deferred: Default::default(),
            ipa: false,
            ipa_outputs: HashMap::new(),
            ipa_stack: Vec::new(),
            block_comparisons: Default::default(),
            datagen: Default::default(),
            block_constants: Default::default(),
            inherit_constants: Default::default(),
        }
    }
}

/// A checked expression with its compile-time value, if it has one.
pub(crate) type Checked = (Expr, Option<Scalar>);

impl Checker<'_> {
    fn stmts(&mut self, env: &mut Env, stmts: &[ast::Stmt]) -> Res<Vec<Block>> {
        // a list of statements starts a block, and what follows it starts another
        self.block_comparisons.clear();
        // a function body checked at its call leaves the caller's block as it was
        let inherited = std::mem::take(&mut self.inherit_constants);
        let outer = std::mem::replace(&mut self.block_constants, inherited);
        let r = self.stmts_in_block(env, stmts);
        self.block_comparisons.clear();
        self.block_constants = outer;
        r
    }

    fn stmts_in_block(&mut self, env: &mut Env, stmts: &[ast::Stmt]) -> Res<Vec<Block>> {
        let mut blocks = Vec::new();
        let mut cur: Vec<Stmt> = Vec::new();
        let mut dead = false;
        for s in stmts {
            if !self.lenient && self.maybe_not_run == 0 && !dead {
                self.stmt(env, s, &mut cur, &mut blocks)?;
                dead |= std::mem::take(&mut self.if_dead);
                continue;
            }
            let saved = env.clone();
            let fails_before = cur.len();
            let r = self.stmt(env, s, &mut cur, &mut blocks);
            dead |= std::mem::take(&mut self.if_dead);
            // the statement itself deferred its error (an assignment inside a function)
            dead |= cur[fails_before.min(cur.len())..]
                .iter()
                .any(|st| matches!(st, Stmt::Fail { .. }));
            if let Err(e) = r {
                let after_deferred = self
                    .deferred
                    .iter()
                    .any(|n| e.message == format!("undefined variable `{n}`"));
                if !self.lenient && !shape::is_shape_error(&e.message) && !after_deferred {
                    return Err(e);
                }
                // a statement that may never run fails when it runs; what it assigns is
                // unknown after it
                *env = saved;
                let mut names = Vec::new();
                func::assigned(std::slice::from_ref(s), &mut names);
                for n in names {
                    env.remove(&n);
                    self.deferred.insert(n);
                }
                cur.push(Stmt::Fail { error: e });
                dead = true;
            }
        }
        flush(&mut cur, &mut blocks);
        self.list_dead = dead;
        Ok(blocks)
    }

    fn stmt(
        &mut self,
        env: &mut Env,
        s: &ast::Stmt,
        cur: &mut Vec<Stmt>,
        blocks: &mut Vec<Block>,
    ) -> Res<()> {
        match &s.kind {
            ast::StmtKind::Assign { value, .. } if matches!(&value.kind, ast::ExprKind::Call(c) if self.returns_nothing(c)) =>
            {
                // `nothing = f(..)` of a function without outputs: SystemDS runs the call
                let ast::ExprKind::Call(call) = &value.kind else {
                    unreachable!("matched")
                };
                let st = self.call_stmt(env, call, s.span);
                cur.push(st?);
            }
            ast::StmtKind::Assign { target, value } => {
                let (e, k) = match self.expr(env, value) {
                    Ok(x) => x,
                    Err(e) if self.lenient => {
                        // the statement fails when it runs; the variable's kind is unknown
                        env.remove(&target.name);
                        cur.push(Stmt::Fail { error: e });
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                };
                // `time()` cuts blocks, as in SystemDS, so timed code stays between the calls.
                let timer = contains_time(&e);
                if timer {
                    flush(cur, blocks);
                }
                // a comparison (or a copy of one) assigned in this block
                let comparison = e.ty.is_matrix()
                    && match &e.kind {
                        ExprKind::Binary(op, ..) => op.is_comparison(),
                        ExprKind::Var(v) => self.block_comparisons.contains(v),
                        _ => false,
                    };
                if timer || calls_function(&e) {
                    self.block_comparisons.clear();
                }
                if comparison {
                    self.block_comparisons.insert(target.name.clone());
                } else {
                    self.block_comparisons.remove(&target.name);
                }
                if self.datagen.contains(&target.name) && constant_datagen(value) {
                    self.block_constants.insert(target.name.clone());
                } else {
                    self.block_constants.remove(&target.name);
                }
                env.insert(
                    target.name.clone(),
                    VarInfo {
                        ty: e.ty,
                        konst: k,
                        text: const_text(env, value),
                        always: true,
                        span: s.span,
                        items: match &e.kind {
                            ExprKind::List(items) => {
                                Some(items.iter().map(|(n, x)| (n.clone(), x.ty)).collect())
                            }
                            _ => None,
                        },
                    },
                );
                cur.push(Stmt::Assign {
                    var: target.name.clone(),
                    value: e,
                    span: s.span,
                });
                if timer {
                    flush(cur, blocks);
                }
            }
            ast::StmtKind::Call(call) => {
                if self.defines(&call.func.name) || call.func.name == "eval" {
                    self.block_comparisons.clear();
                }
                let st = self.call_stmt(env, call, s.span);
                cur.push(st?);
            }
            ast::StmtKind::MultiAssign { targets, call } => {
                if self.defines(&call.func.name) || call.func.name == "eval" {
                    self.block_comparisons.clear();
                }
                for t in targets {
                    self.block_comparisons.remove(&t.name);
                    self.block_constants.remove(&t.name);
                }
                let st = self.multi_assign(env, targets, call, s.span);
                cur.push(st?);
            }
            ast::StmtKind::IndexAssign {
                target,
                rows,
                cols,
                value,
            } => {
                self.block_comparisons.remove(&target.name);
                self.block_constants.remove(&target.name);
                let st = self.index_assign(env, target, rows, cols, value, s.span);
                cur.push(st?);
            }
            ast::StmtKind::Function(_) | ast::StmtKind::Source { .. } | ast::StmtKind::SetWd(_) => {
            }
            ast::StmtKind::Unsupported(what) => {
                let st = Err(SpannedError::new(s.span, format!("not supported: {what}")));
                cur.push(st?);
            }
            ast::StmtKind::If { cond, then, els } => {
                flush(cur, blocks);
                let (cond, known) = self.expr(env, cond)?;
                let known = known.map(|k| k.as_f64() != 0.0);
                self.want_condition(&cond, "if")?;
                // an `if` known before running is merged with the blocks around it
                let outer = self.block_constants.clone();
                let merged = |c: &mut Self| {
                    if known.is_some() {
                        c.inherit_constants = outer.clone();
                    }
                };
                let mut te = env.clone();
                self.maybe_not_run += 1;
                merged(self);
                let then_ast = then;
                let then = self.stmts(&mut te, then);
                let then_dead = std::mem::take(&mut self.list_dead);
                let mut ee = env.clone();
                merged(self);
                let els_ast = els;
                let els = self.stmts(&mut ee, els);
                let els_dead = std::mem::take(&mut self.list_dead);
                self.maybe_not_run -= 1;
                let (then, els) = (then?, els?);
                // a branch that fails whenever it runs never reaches the code after the `if`
                *env = match (then_dead, els_dead, known) {
                    // a condition known before running takes one branch
                    (_, _, Some(true)) => te,
                    (_, _, Some(false)) => ee,
                    (true, false, None) => ee,
                    (false, true, None) => te,
                    _ => join(&te, &ee, self.lenient)?,
                };
                self.if_dead = then_dead && els_dead;
                if known.is_some() {
                    let mut names = Vec::new();
                    func::assigned(then_ast, &mut names);
                    func::assigned(els_ast, &mut names);
                    self.block_constants = outer;
                    for n in names {
                        self.block_constants.remove(&n);
                    }
                } else {
                    self.block_constants.clear();
                }
                blocks.push(Block::If {
                    cond,
                    then,
                    els,
                    known,
                });
            }
            ast::StmtKind::For {
                var,
                from,
                to,
                body,
                parallel,
                options,
            } => {
                flush(cur, blocks);
                let (from, to, step) = self.for_range(env, from, to.as_ref())?;
                let parfor = self.parfor_options(env, *parallel, options);
                for (e, what) in [(&from, "start"), (&to, "end")] {
                    if !matches!(e.ty, Ty::Scalar(_)) {
                        return Err(SpannedError::new(
                            e.span,
                            format!("the {what} of a for range must be a number"),
                        )
                        .with_label(format!("this is {}", e.ty)));
                    }
                }
                let entry = env.clone();
                let body = self.fixpoint(env, |c, env| {
                    env.insert(
                        var.name.clone(),
                        VarInfo {
                            ty: Ty::Scalar(ScalarTy::Int),
                            konst: None,
                            text: None,
                            always: true,
                            span: var.span,
                            items: None,
                        },
                    );
                    c.maybe_not_run += 1;
                    let r = c.stmts(env, body);
                    c.maybe_not_run -= 1;
                    r
                })?;
                // the body may run zero times
                *env = join(&entry, env, self.lenient)?;
                self.block_constants.clear();
                blocks.push(Block::For {
                    var: var.name.clone(),
                    from,
                    to,
                    step: step.map(Box::new),
                    body,
                    parfor,
                });
            }
            ast::StmtKind::While { cond, body } => {
                flush(cur, blocks);
                let mut cond_out = None;
                let body = self.fixpoint(env, |c, env| {
                    let (ce, _) = c.expr(env, cond)?;
                    c.want_condition(&ce, "while")?;
                    cond_out = Some(ce);
                    c.maybe_not_run += 1;
                    let r = c.stmts(env, body);
                    c.maybe_not_run -= 1;
                    r
                })?;
                self.block_constants.clear();
                blocks.push(Block::While {
                    cond: cond_out.expect("fixpoint ran the body"),
                    body,
                });
            }
        }
        Ok(())
    }

    /// Re-checks a loop body until the environment at the loop head is stable; leaves the
    /// head environment (the state after any number of iterations) in `env`.
    fn fixpoint(
        &mut self,
        env: &mut Env,
        mut body: impl FnMut(&mut Self, &mut Env) -> Res<Vec<Block>>,
    ) -> Res<Vec<Block>> {
        let mut head = env.clone();
        // Terminates: each pass either stops or moves some variable strictly down a
        // finite-height lattice (a constant or dimension becomes unknown, a type widens,
        // "always defined" becomes "maybe"), and only the program's variables exist.
        loop {
            let mut out = head.clone();
            let result = body(self, &mut out);
            let next = join(&head, &out, self.lenient)?;
            if next == head {
                *env = head;
                return result;
            }
            head = next;
        }
    }

    fn want_condition(&self, e: &Expr, what: &str) -> Res<()> {
        match e.ty {
            Ty::Scalar(_) => Ok(()),
            _ => Err(SpannedError::new(
                e.span,
                format!("the condition of {what} must be a scalar"),
            )
            .with_label(format!("this is {}", e.ty))
            .with_note("use as.scalar(X) or an aggregate such as sum(X) to get a scalar")),
        }
    }

    fn call_stmt(&mut self, env: &Env, call: &ast::Call, span: Span) -> Res<Stmt> {
        match call.func.name.as_str() {
            // print(format, a, b, ...) prints Java's String.format(format, a, b, ...)
            "print" if call.args.len() > 1 && call.args.iter().all(|a| a.name.is_none()) => {
                let mut args = Vec::with_capacity(call.args.len());
                for a in &call.args {
                    let (e, _) = self.expr(env, &a.value)?;
                    if e.ty.is_matrix() {
                        return Err(type_err(e.span, "print", &e));
                    }
                    args.push(e);
                }
                self.want_str(&args[0], "the format of print")?;
                let value = Expr {
                    kind: ExprKind::Builtin(&crate::builtins::PRINT_FORMAT, args),
                    ty: Ty::Str,
                    span,
                };
                Ok(Stmt::Print { value })
            }
            "print" => {
                let a = builtins::bind(call, span, &["value"], 1)?;
                let arg = a[0].expect("required");
                let (value, _) = self.expr(env, arg)?;
                if !self.lenient {
                    let folding = self
                        .datagen
                        .iter()
                        .filter(|v| {
                            let var = v.split('+').next().unwrap_or(v);
                            self.block_constants.contains(var)
                        })
                        .cloned()
                        .collect();
                    print_of_matrix_operation(arg, &value, &folding)?;
                }
                Ok(Stmt::Print { value })
            }
            "write" => {
                const NAMES: &[&str] = &[
                    "value",
                    "file",
                    "format",
                    "header",
                    "sep",
                    "sparse",
                    "description",
                ];
                let a = builtins::bind(call, span, NAMES, 2)?;
                let first = a[0].expect("required");
                if !matches!(first.kind, ast::ExprKind::Var(_)) {
                    // SystemDS's parser takes only a variable here (`incorrect usage of write
                    // function`, also in a branch that never runs)
                    return Err(SpannedError::new(
                        first.span,
                        "write of an expression: SystemDS rejects the program (incorrect usage \
                         of write function: the value written must be a variable)",
                    )
                    .with_note("assign the value to a variable and write the variable"));
                }
                let (value, _) = self.expr(env, first)?;
                let (path, _) = self.expr(env, a[1].expect("required"))?;
                // a number is a file name too (SystemDS accepts `write(X, $5)` given 0)
                if !matches!(path.ty, Ty::Scalar(_)) {
                    self.want_str(&path, "the file name of write")?;
                }
                let mut format = None;
                let mut opts = Vec::new();
                for (name, e) in NAMES.iter().zip(&a).skip(2) {
                    let Some(e) = e else { continue };
                    let (x, _) = self.expr(env, e)?;
                    // SystemDS takes the text of a literal `sep` or `description`, a number's too
                    match *name {
                        "format" => self.want_str(&x, &format!("the {name} of write"))?,
                        "sep" | "description" if matches!(x.ty, Ty::Scalar(_)) => {}
                        "sep" | "description" => {
                            self.want_str(&x, &format!("the {name} of write"))?
                        }
                        _ => self.want_scalar(&x, &format!("the {name} of write"))?,
                    }
                    if *name == "format" {
                        format = Some(x);
                    } else {
                        opts.push((name.to_string(), x));
                    }
                }
                Ok(Stmt::Write {
                    value,
                    path,
                    format,
                    opts,
                })
            }
            "assert" => {
                // assert(cond): stop with a message when the condition is false
                let a = builtins::bind(call, span, &["condition"], 1)?;
                let (c, _) = self.expr(env, a[0].expect("required"))?;
                self.want_condition(&c, "assert")?;
                let message = Expr {
                    kind: ExprKind::Str("assertion failed".into()),
                    ty: Ty::Str,
                    span,
                };
                let not = Expr {
                    kind: ExprKind::Unary(UnaryOp::Not, Box::new(c)),
                    ty: Ty::Scalar(ScalarTy::Bool),
                    span,
                };
                Ok(Stmt::Assert {
                    failed: not,
                    message,
                })
            }
            "stop" => {
                let a = builtins::bind(call, span, &["message"], 1)?;
                let (message, _) = self.expr(env, a[0].expect("required"))?;
                Ok(Stmt::Stop { message })
            }
            _ => {
                if let Some(st) = self.function_stmt(env, call, span)? {
                    return Ok(st);
                }
                let (e, _) = self.call(env, call, span)?;
                Err(SpannedError::new(
                    span,
                    format!("the value of `{}(...)` is not used", call.func.name),
                )
                .with_label(format!("this computes {}", e.ty))
                .with_note("assign it to a variable, or print it"))
            }
        }
    }

    pub(crate) fn want_scalar(&self, e: &Expr, what: &str) -> Res<()> {
        if matches!(e.ty, Ty::Scalar(_)) {
            Ok(())
        } else {
            Err(
                SpannedError::new(e.span, format!("{what} must be a number or boolean"))
                    .with_label(format!("this is {}", e.ty)),
            )
        }
    }

    pub(crate) fn want_str(&self, e: &Expr, what: &str) -> Res<()> {
        if e.ty == Ty::Str {
            Ok(())
        } else {
            Err(
                SpannedError::new(e.span, format!("{what} must be a string"))
                    .with_label(format!("this is {}", e.ty)),
            )
        }
    }

    pub(crate) fn expr(&mut self, env: &Env, e: &ast::Expr) -> Res<Checked> {
        let span = e.span;
        let lit = |s: Scalar| {
            Ok((
                Expr {
                    kind: ExprKind::Lit(s),
                    ty: Ty::Scalar(s.ty()),
                    span,
                },
                Some(s),
            ))
        };
        match &e.kind {
            ast::ExprKind::Int(i) => lit(Scalar::Int(*i)),
            ast::ExprKind::Double(d) => lit(Scalar::Double(*d)),
            ast::ExprKind::Bool(b) => lit(Scalar::Bool(*b)),
            ast::ExprKind::Str(s) => Ok((
                Expr {
                    kind: ExprKind::Str(s.clone()),
                    ty: Ty::Str,
                    span,
                },
                None,
            )),
            ast::ExprKind::Var(name) => match env.get(name) {
                Some(v) => Ok((
                    Expr {
                        kind: ExprKind::Var(name.clone()),
                        ty: v.ty,
                        span,
                    },
                    v.konst,
                )),
                // SystemDS's predefined constant, unless the program assigns `pi`
                None if name == "pi" => lit(Scalar::Double(std::f64::consts::PI)),
                None => {
                    let mut err = SpannedError::new(span, format!("undefined variable `{name}`"))
                        .with_label("used here before any assignment");
                    if let Some(s) = builtins::closest(name, env.keys().map(String::as_str)) {
                        err = err.with_note(format!("did you mean `{s}`?"));
                    }
                    Err(err)
                }
            },
            ast::ExprKind::ScriptArg(name) => match self.script_arg(name) {
                Some(Ok(s)) => lit(s),
                Some(Err(s)) => Ok((
                    Expr {
                        kind: ExprKind::Str(s),
                        ty: Ty::Str,
                        span,
                    },
                    None,
                )),
                None => Err(SpannedError::new(
                    span,
                    format!("script argument `${name}` is not set"),
                )
                .with_note(if name.bytes().all(|b| b.is_ascii_digit()) {
                    format!(
                        "pass it as value number {name} after `-args`, or write `ifdef(${name}, default)`"
                    )
                } else {
                    format!("pass it with `-nvargs {name}=VALUE`, or write `ifdef(${name}, default)`")
                })),
            },
            ast::ExprKind::Unary(ast::UnOp::Plus, x) => {
                let (x, k) = self.expr(env, x)?;
                if x.ty == Ty::Str {
                    return Err(type_err(span, "unary +", &x));
                }
                Ok((Expr { span, ..x }, k))
            }
            ast::ExprKind::Unary(op, x) => {
                let op = if *op == ast::UnOp::Neg {
                    UnaryOp::Neg
                } else {
                    UnaryOp::Not
                };
                let name = if op == UnaryOp::Neg { "unary -" } else { "!" };
                let x = self.expr(env, x)?;
                self.unary(span, op, name, x)
            }
            ast::ExprKind::Binary(op, a, b) => {
                // two strings known before running compare to a constant (a constant
                // condition selects its branch: `if (regType == "L2")` in a function planned
                // for its call's arguments)
                let equal = match (const_text(env, a), const_text(env, b)) {
                    (Some(x), Some(y)) => Some(x == y),
                    _ => None,
                };
                let a = self.expr(env, a)?;
                let b = self.expr(env, b)?;
                let (e, k) = self.binary(span, *op, a, b)?;
                let k = match (op, equal) {
                    (ast::BinOp::Eq, Some(q)) => Some(Scalar::Bool(q)),
                    (ast::BinOp::Ne, Some(q)) => Some(Scalar::Bool(!q)),
                    _ => k,
                };
                Ok((e, k))
            }
            ast::ExprKind::Call(call) => self.call(env, call, span),
            ast::ExprKind::Unsupported(what) => {
                Err(SpannedError::new(span, format!("not supported: {what}")))
            }
            ast::ExprKind::Index { base, rows, cols } => {
                let (base, _) = self.expr(env, base)?;
                if base.ty == Ty::List {
                    let rows = self.list_range(env, rows, cols)?;
                    return Ok((
                        Expr {
                            kind: ExprKind::Index {
                                base: Box::new(base),
                                rows,
                                cols: Range::All,
                            },
                            ty: Ty::List,
                            span,
                        },
                        None,
                    ));
                }
                let Ty::Matrix(r, c) = base.ty else {
                    return Err(SpannedError::new(base.span, "only matrices can be indexed")
                        .with_label(format!("this is {}", base.ty)));
                };
                let (rows, nr) = self.range(env, rows, r, "row")?;
                let (cols, nc) = self.range(env, cols, c, "column")?;
                Ok((
                    Expr {
                        kind: ExprKind::Index {
                            base: Box::new(base),
                            rows,
                            cols,
                        },
                        ty: Ty::Matrix(nr, nc),
                        span,
                    },
                    None,
                ))
            }
        }
    }

    /// The value of a script argument, typed as SystemDS types command-line values: `TRUE` and
    /// `FALSE` are booleans, then what Java parses as a long is an integer, what it parses as a
    /// double is a double, and anything else a string (without surrounding quotes).
    fn script_arg(&mut self, name: &str) -> Option<Result<Scalar, String>> {
        self.used.insert(name.to_string());
        let v = self.args.get(name)?;
        Some(if v == "TRUE" || v == "FALSE" {
            Ok(Scalar::Bool(v == "TRUE"))
        } else if let Ok(i) = v.parse::<i64>() {
            Ok(Scalar::Int(i))
        } else if let Some(d) = spores_runtime::format::parse_java_double(v) {
            Ok(Scalar::Double(d))
        } else {
            Err(unquote_arg(v))
        })
    }

    /// The selection of list indexing `L[i]`, `L[a:b]`, `L["name"]`: positions (numbers) or
    /// names (strings), one dimension only.
    pub(crate) fn list_range(
        &mut self,
        env: &Env,
        r: &ast::IndexRange,
        c: &ast::IndexRange,
    ) -> Res<Range> {
        if let ast::IndexRange::At(e) | ast::IndexRange::Range(e, _) = c {
            return Err(
                SpannedError::new(e.span, "a list is indexed in one dimension")
                    .with_label("a column index of a list"),
            );
        }
        let mut bound = |e: &ast::Expr| -> Res<Box<Expr>> {
            let (e, _) = self.expr(env, e)?;
            if !matches!(e.ty, Ty::Scalar(_) | Ty::Str) {
                return Err(
                    SpannedError::new(e.span, "a list index must be a number or a name")
                        .with_label(format!("this is {}", e.ty)),
                );
            }
            Ok(Box::new(e))
        };
        Ok(match r {
            ast::IndexRange::All => Range::All,
            ast::IndexRange::At(e) => Range::At(bound(e)?),
            ast::IndexRange::Range(a, b) => Range::Span(bound(a)?, bound(b)?),
        })
    }

    fn range(
        &mut self,
        env: &Env,
        r: &ast::IndexRange,
        size: Dim,
        what: &str,
    ) -> Res<(Range, Dim)> {
        let mut bound = |e: &ast::Expr| -> Res<(Box<Expr>, Option<i64>)> {
            let (e, k) = self.expr(env, e)?;
            if !matches!(e.ty, Ty::Scalar(_)) {
                return Err(
                    SpannedError::new(e.span, format!("a {what} index must be a number"))
                        .with_label(format!("this is {}", e.ty)),
                );
            }
            let k = k.map(|k| scalar::index_value(k.as_f64()));
            if let (Some(v), Some(n)) = (k, size) {
                if !(1.0..=n as f64).contains(&v) {
                    return Err(SpannedError::new(
                        e.span,
                        format!("{what} index {v} out of bounds 1..{n}"),
                    ));
                }
            }
            Ok((Box::new(e), k.map(|v| v as i64)))
        };
        Ok(match r {
            ast::IndexRange::All => (Range::All, size),
            ast::IndexRange::At(e) => (Range::At(bound(e)?.0), Some(1)),
            ast::IndexRange::Range(a, b) => {
                let (a, ka) = bound(a)?;
                let (b, kb) = bound(b)?;
                let n = match (ka, kb) {
                    (Some(x), Some(y)) if y < x => {
                        return Err(SpannedError::new(
                            a.span.to(b.span),
                            format!("empty {what} range {x}:{y}"),
                        ))
                    }
                    (Some(x), Some(y)) => Some((y - x + 1) as usize),
                    _ => None,
                };
                (Range::Span(a, b), n)
            }
        })
    }

    pub(crate) fn unary(
        &mut self,
        span: Span,
        op: UnaryOp,
        name: &str,
        x: Checked,
    ) -> Res<Checked> {
        let (x, k) = x;
        let ty = match x.ty {
            Ty::Str | Ty::List => return Err(type_err(span, name, &x)),
            Ty::Matrix(..) => x.ty,
            Ty::Scalar(_) => match (op, k) {
                (_, Some(k)) => Ty::Scalar(scalar::unary(op, k).ty()),
                (UnaryOp::Not, _) => Ty::Scalar(ScalarTy::Bool),
                (UnaryOp::Neg, _) if x.ty != Ty::Scalar(ScalarTy::Double) => {
                    Ty::Scalar(ScalarTy::Int)
                }
                _ => Ty::Scalar(ScalarTy::Double),
            },
        };
        let k = k.map(|k| scalar::unary(op, k));
        Ok((
            Expr {
                kind: ExprKind::Unary(op, Box::new(x)),
                ty,
                span,
            },
            k,
        ))
    }

    fn binary(&mut self, span: Span, op: ast::BinOp, a: Checked, b: Checked) -> Res<Checked> {
        let ((ea, ka), (eb, kb)) = (a, b);
        if op == ast::BinOp::MatMul {
            for x in [&ea, &eb] {
                if !x.ty.is_matrix() {
                    return Err(SpannedError::new(x.span, "%*% needs matrix operands")
                        .with_label(format!("this is {}", x.ty))
                        .with_note("for a scalar factor use `*`"));
                }
            }
            let (Ty::Matrix(r1, c1), Ty::Matrix(r2, c2)) = (ea.ty, eb.ty) else {
                unreachable!()
            };
            let (r, c) = shape::matmul((r1, c1), (r2, c2))
                .map_err(|m| SpannedError::new(span, m).with_label("in this product"))?;
            return Ok((
                Expr {
                    kind: ExprKind::MatMul(Box::new(ea), Box::new(eb)),
                    ty: Ty::Matrix(r, c),
                    span,
                },
                None,
            ));
        }
        if op == ast::BinOp::Add && (ea.ty == Ty::Str || eb.ty == Ty::Str) {
            for x in [&ea, &eb] {
                if x.ty.is_matrix() {
                    return Err(SpannedError::new(
                        x.span,
                        "cannot concatenate a matrix to a string",
                    )
                    .with_label(format!("this is {}", x.ty))
                    .with_note(
                        "use toString(X), or print a scalar such as sum(X) or as.scalar(X)",
                    ));
                }
            }
            // two constant strings are one (SystemDS folds them when it compiles): a path
            // `$dir + "/X"` is known here, so read takes the data type from its `.mtd`
            let kind = match (&ea.kind, &eb.kind) {
                (ExprKind::Str(a), ExprKind::Str(b)) => ExprKind::Str(format!("{a}{b}")),
                _ => ExprKind::Concat(Box::new(ea), Box::new(eb)),
            };
            return Ok((
                Expr {
                    kind,
                    ty: Ty::Str,
                    span,
                },
                None,
            ));
        }
        let rop = runtime_op(op);
        self.elementwise(span, rop, op.symbol(), (ea, ka), (eb, kb))
    }

    /// An element-wise operator (or min/max) on scalars or matrices.
    pub(crate) fn elementwise(
        &mut self,
        span: Span,
        op: BinOp,
        name: &str,
        (ea, ka): Checked,
        (eb, kb): Checked,
    ) -> Res<Checked> {
        // a string compares with a string, or with a scalar's text (as in SystemDS)
        if (ea.ty == Ty::Str || eb.ty == Ty::Str)
            && !ea.ty.is_matrix()
            && !eb.ty.is_matrix()
            && op.is_comparison()
        {
            return Ok((
                Expr {
                    kind: ExprKind::Binary(op, Box::new(ea), Box::new(eb)),
                    ty: Ty::Scalar(ScalarTy::Bool),
                    span,
                },
                None,
            ));
        }
        for x in [&ea, &eb] {
            if x.ty == Ty::Str {
                return Err(type_err(span, name, x));
            }
        }
        let ty = match (ea.ty, eb.ty) {
            (Ty::Scalar(x), Ty::Scalar(y)) => {
                let int_like = |t| t != ScalarTy::Double;
                Ty::Scalar(if op.is_comparison() || op.is_logical() {
                    ScalarTy::Bool
                } else if matches!(op, BinOp::Div | BinOp::Pow) || !(int_like(x) && int_like(y)) {
                    ScalarTy::Double
                } else {
                    ScalarTy::Int
                })
            }
            (Ty::Matrix(r, c), Ty::Scalar(_)) | (Ty::Scalar(_), Ty::Matrix(r, c)) => {
                Ty::Matrix(r, c)
            }
            (Ty::Matrix(r1, c1), Ty::Matrix(r2, c2)) => {
                let (r, c) = shape::elementwise(name, (r1, c1), (r2, c2))
                    .map_err(|m| SpannedError::new(span, m).with_label("in this operation"))?;
                Ty::Matrix(r, c)
            }
            _ => unreachable!("strings handled above"),
        };
        let k = match (ka, kb) {
            (Some(x), Some(y)) => Some(scalar::binary(op, x, y)),
            _ => None,
        };
        // a folded constant keeps its exact kind (an int result can overflow into a double)
        let ty = k.map_or(ty, |k| Ty::Scalar(k.ty()));
        Ok((
            Expr {
                kind: ExprKind::Binary(op, Box::new(ea), Box::new(eb)),
                ty,
                span,
            },
            k,
        ))
    }
}

fn runtime_op(op: ast::BinOp) -> BinOp {
    match op {
        ast::BinOp::Pow => BinOp::Pow,
        ast::BinOp::IntDiv => BinOp::IntDiv,
        ast::BinOp::Mod => BinOp::Mod,
        ast::BinOp::Mul => BinOp::Mul,
        ast::BinOp::Div => BinOp::Div,
        ast::BinOp::Add => BinOp::Add,
        ast::BinOp::Sub => BinOp::Sub,
        ast::BinOp::Lt => BinOp::Lt,
        ast::BinOp::Le => BinOp::Le,
        ast::BinOp::Gt => BinOp::Gt,
        ast::BinOp::Ge => BinOp::Ge,
        ast::BinOp::Eq => BinOp::Eq,
        ast::BinOp::Ne => BinOp::Ne,
        ast::BinOp::And => BinOp::And,
        ast::BinOp::Or => BinOp::Or,
        ast::BinOp::MatMul => unreachable!("matrix product is not element-wise"),
    }
}

pub(crate) fn type_err(span: Span, what: &str, x: &Expr) -> SpannedError {
    SpannedError::new(span, format!("{what} cannot be applied to {}", x.ty))
        .with_label(format!("this is {}", x.ty))
}

fn contains_time(e: &Expr) -> bool {
    let mut found = false;
    visit(e, &mut |x| {
        found |= matches!(&x.kind, ExprKind::Builtin(b, _) if b.name == "time")
    });
    found
}

/// Calls `f` on `e` and every sub-expression.
pub fn visit(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    let range = |r: &Range, f: &mut dyn FnMut(&Expr)| match r {
        Range::All => {}
        Range::At(x) => visit(x, f),
        Range::Span(a, b) => {
            visit(a, f);
            visit(b, f);
        }
    };
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Str(_) | ExprKind::Var(_) => {}
        ExprKind::Unary(_, x) => visit(x, f),
        ExprKind::Binary(_, a, b) | ExprKind::Concat(a, b) | ExprKind::MatMul(a, b) => {
            visit(a, f);
            visit(b, f);
        }
        ExprKind::Builtin(_, args) | ExprKind::Call(_, args) | ExprKind::Outputs(_, args) => {
            for a in args {
                visit(a, f);
            }
        }
        ExprKind::List(items) => {
            for (_, a) in items {
                visit(a, f);
            }
        }
        ExprKind::Exists(x) => visit(x, f),
        ExprKind::Dispatch { name, cases, .. } => {
            visit(name, f);
            for (_, c) in cases {
                visit(c, f);
            }
        }
        ExprKind::Index { base, rows, cols } => {
            visit(base, f);
            range(rows, f);
            range(cols, f);
        }
    }
}

/// Joins the environments of two paths.
fn join(a: &Env, b: &Env, lenient: bool) -> Res<Env> {
    let mut out = Env::new();
    for (name, va) in a {
        match b.get(name) {
            None => {
                out.insert(
                    name.clone(),
                    VarInfo {
                        always: false,
                        ..va.clone()
                    },
                );
            }
            Some(vb) => {
                if lenient && join_ty(va.ty, vb.ty).is_none() {
                    // the kind depends on the path: unknown, an error where it is used
                    continue;
                }
                // a string on one path and a scalar on the other is a string: it prints,
                // concatenates and compares as the text it has on the path taken
                let text = matches!(
                    (va.ty, vb.ty),
                    (Ty::Str, Ty::Scalar(_)) | (Ty::Scalar(_), Ty::Str)
                );
                let ty = join_ty(va.ty, vb.ty).or(text.then_some(Ty::Str)).ok_or_else(|| {
                    let (later, other) = if va.span.start > vb.span.start { (va, vb) } else { (vb, va) };
                    SpannedError::new(
                        later.span,
                        format!(
                            "`{name}` is {} here but {} on another path",
                            later.ty, other.ty
                        ),
                    )
                    .with_note("a variable must keep its kind (scalar, string or matrix) across branches and loop iterations")
                })?;
                let konst = if va.konst == vb.konst { va.konst } else { None };
                let text = if va.text == vb.text {
                    va.text.clone()
                } else {
                    None
                };
                let items = if va.items == vb.items {
                    va.items.clone()
                } else {
                    None
                };
                out.insert(
                    name.clone(),
                    VarInfo {
                        ty,
                        konst,
                        text,
                        always: va.always && vb.always,
                        span: if va.span.start >= vb.span.start {
                            va.span
                        } else {
                            vb.span
                        },
                        items,
                    },
                );
            }
        }
    }
    for (name, vb) in b {
        if !a.contains_key(name) {
            out.insert(
                name.clone(),
                VarInfo {
                    always: false,
                    ..vb.clone()
                },
            );
        }
    }
    Ok(out)
}

pub(crate) fn join_ty(a: Ty, b: Ty) -> Option<Ty> {
    let d = |x: Dim, y: Dim| if x == y { x } else { None };
    match (a, b) {
        (Ty::Matrix(r1, c1), Ty::Matrix(r2, c2)) => Some(Ty::Matrix(d(r1, r2), d(c1, c2))),
        (Ty::Scalar(x), Ty::Scalar(y)) if x == y => Some(Ty::Scalar(x)),
        (Ty::Scalar(ScalarTy::Bool), Ty::Scalar(_))
        | (Ty::Scalar(_), Ty::Scalar(ScalarTy::Bool)) => Some(Ty::Scalar(ScalarTy::Double)),
        (Ty::Scalar(_), Ty::Scalar(_)) => Some(Ty::Scalar(ScalarTy::Double)),
        (Ty::Str, Ty::Str) => Some(Ty::Str),
        (Ty::List, Ty::List) => Some(Ty::List),
        _ => None,
    }
}
