//! The thread counts SystemDS's parfor optimizer gives operations, so that a program with a
//! `parfor` gets SystemDS's bits.
//!
//! spores runs a `parfor`'s iterations in order, as a `for`'s: its results do not depend on
//! how the iterations are scheduled. They depend on something else: SystemDS splits some
//! products over its threads ([`systemds_threads`](spores_runtime::kernels::systemds_threads)),
//! which adds them in another order, and its parfor optimizer (`OptimizerRuleBased`) changes
//! those thread counts, lastingly. When a `parfor` of `N >= 2` iterations starts,
//! `rewriteSetDegreeOfParallelism` gives the loop `p = min(N, k)` workers on a machine of `k`
//! cores and every multi-threaded operation of its body `max(round(k / p), 1)` threads
//! (`rAssignRemainingParallelism`). The body includes the bodies of the functions it calls,
//! transitively (its optimizer tree, `OptTreeConverter`, takes them in), and the count is set
//! on the operations themselves (`setMaxNumThreads` of the hops), so it stays after the loop:
//! a function called in a `parfor` runs with that count wherever it is called afterwards, until
//! another `parfor` that reaches it sets it again. With an `eval` in the body, every function of
//! the program gets one thread (`ParamservUtils.recompileProgramBlocks(1, ..)`). A loop of one
//! iteration is run as a `for`, without optimization; `opt=NONE` turns the optimizer off;
//! `opt=CONSTRAINED` with `par=p` takes `p` workers as asked (`OptimizerConstrained`).
//!
//! A function SystemDS inlines (`IPAPassInlineFunctions`: one straight-line block, no function
//! calls, and called once or of at most 10 operations; one only `eval` calls is not) has no operations of its own: its copy
//! in the body runs with the body's count, and its other calls keep theirs. The memory budget,
//! which lowers `p` for bodies that do not fit `k` times in SystemDS's heap, is not modelled.

use crate::check::hir::{self, Block, Expr, ExprKind, Stmt};
use std::collections::HashMap;

/// SystemDS's `INLINING_MAX_NUM_OPS`: a function of at most this many operations is inlined.
const INLINING_MAX_NUM_OPS: usize = 10;

/// The lasting thread counts of a run ([`Threads::enter`], [`Threads::function`]) and the
/// program facts they need.
#[derive(Debug, Default)]
pub struct Threads {
    /// per function name, the count the last `parfor` that reached it set
    functions: HashMap<String, usize>,
    /// per `parfor` body (by address), the count its last optimization set
    bodies: HashMap<usize, usize>,
    /// per function index: the functions its body calls (by index), whether it has an `eval`,
    /// and whether SystemDS inlines it
    calls: Vec<Vec<usize>>,
    evals: Vec<bool>,
    inlined: Vec<bool>,
    /// function names, by index
    names: Vec<String>,
}

impl Threads {
    /// The facts of `functions` (the program's, [`hir::Program::functions`]) and `main` (its
    /// top-level blocks), none of the lasting counts set yet.
    pub fn of_program(main: &[Block], functions: &[hir::Function]) -> Threads {
        let mut calls = Vec::with_capacity(functions.len());
        let mut evals = Vec::with_capacity(functions.len());
        for f in functions {
            let (c, e) = body_calls(&f.body);
            calls.push(c);
            evals.push(e);
        }
        // call sites per name: of the main blocks and of each function once (a function
        // checked for several kinds of arguments is one function in SystemDS)
        let mut sites: HashMap<&str, usize> = HashMap::new();
        let mut count = |c: &[usize]| {
            for &g in c {
                *sites.entry(functions[g].name.as_str()).or_default() += 1;
            }
        };
        count(&body_calls(main).0);
        let mut seen = std::collections::HashSet::new();
        for (f, c) in functions.iter().zip(&calls) {
            if seen.insert(f.name.as_str()) {
                count(c);
            }
        }
        let inlined = functions
            .iter()
            .zip(&calls)
            .map(|(f, c)| {
                let [Block::Basic(bb)] = f.body.as_slice() else {
                    return false;
                };
                // a function only an `eval` calls has no call to inline into
                let n = sites.get(f.name.as_str()).copied().unwrap_or(0);
                c.is_empty() && n >= 1 && (n == 1 || operators(&bb.stmts) <= INLINING_MAX_NUM_OPS)
            })
            .collect();
        Threads {
            functions: HashMap::new(),
            bodies: HashMap::new(),
            calls,
            evals,
            inlined,
            names: functions.iter().map(|f| f.name.clone()).collect(),
        }
    }

    /// The thread count of the operations of a `parfor` body of `n` iterations about to run,
    /// on `k` threads (SystemDS's cores; inside another `parfor` body, its count): the count
    /// the optimizer sets when it runs (recorded for the functions the body reaches, see the
    /// module doc), else the one an earlier run of the loop set, else `None` (unchanged).
    /// `par` is the value of the loop's `par=`.
    pub fn enter(
        &mut self,
        body: &[Block],
        opts: &hir::Parfor,
        n: u64,
        k: usize,
        par: Option<f64>,
    ) -> Option<usize> {
        let key = body.as_ptr() as usize;
        if n < 2 || opts.opt == hir::ParforOpt::None {
            return self.bodies.get(&key).copied();
        }
        let workers = match (opts.opt, par) {
            (hir::ParforOpt::Constrained, Some(p)) if p >= 1.0 => p as u64,
            _ => n.min(k as u64),
        }
        .max(1);
        // getRemainingParallelismOps (without native BLAS): max(round(k / p), 1)
        let ops = ((k as f64 / workers as f64).round() as usize).max(1);
        self.bodies.insert(key, ops);
        let (direct, mut eval) = body_calls(body);
        let mut reached = vec![false; self.names.len()];
        let mut stack = direct;
        while let Some(f) = stack.pop() {
            if std::mem::replace(&mut reached[f], true) {
                continue;
            }
            eval |= self.evals[f];
            stack.extend(self.calls[f].iter().copied());
        }
        if eval {
            for name in &self.names {
                self.functions.insert(name.clone(), 1);
            }
        }
        for (f, _) in reached.iter().enumerate().filter(|(_, &r)| r) {
            if !self.inlined[f] {
                self.functions.insert(self.names[f].clone(), ops);
            }
        }
        Some(ops)
    }

    /// The thread count a `parfor` set on the operations of function `name`, if one did.
    pub fn function(&self, name: &str) -> Option<usize> {
        self.functions.get(name).copied()
    }
}

/// The functions `blocks` calls (by index, each call site once) and whether they hold an
/// `eval` of a name known only when it runs.
fn body_calls(blocks: &[Block]) -> (Vec<usize>, bool) {
    let mut calls = Vec::new();
    // the calls of an `eval`'s cases are not calls of the body (SystemDS's optimizer tree
    // does not hold the functions an `eval` may call); [`crate::check::visit`] visits them
    let mut cases = Vec::new();
    let mut eval = false;
    each_expr(blocks, &mut |e| match &e.kind {
        ExprKind::Call(f, _) | ExprKind::Outputs(f, _) => calls.push(*f),
        ExprKind::Dispatch { cases: c, .. } => {
            eval = true;
            for (_, x) in c {
                crate::check::visit(x, &mut |y| {
                    if let ExprKind::Call(f, _) | ExprKind::Outputs(f, _) = &y.kind {
                        cases.push(*f)
                    }
                });
            }
        }
        _ => {}
    });
    for f in cases {
        if let Some(i) = calls.iter().position(|&g| g == f) {
            calls.swap_remove(i);
        }
    }
    each_stmt(blocks, &mut |s| {
        if let Stmt::Call { func, .. } = s {
            calls.push(*func);
        }
    });
    (calls, eval)
}

/// SystemDS's operator count of straight-line statements, as its inlining counts them (every
/// operation but reads of variables and literals).
fn operators(stmts: &[Stmt]) -> usize {
    let mut n = 0;
    for s in stmts {
        s.exprs(&mut |e| {
            crate::check::visit(e, &mut |x| {
                n += usize::from(!matches!(
                    x.kind,
                    ExprKind::Lit(_) | ExprKind::Str(_) | ExprKind::Var(_)
                ))
            })
        });
    }
    n
}

/// Calls `f` on every statement of `blocks`, nested blocks included.
fn each_stmt(blocks: &[Block], f: &mut dyn FnMut(&Stmt)) {
    for b in blocks {
        match b {
            Block::Basic(bb) => bb.stmts.iter().for_each(&mut *f),
            Block::If { then, els, .. } => {
                each_stmt(then, f);
                each_stmt(els, f);
            }
            Block::For { body, .. } | Block::While { body, .. } => each_stmt(body, f),
        }
    }
}

/// Calls `f` on every expression of `blocks` and all their sub-expressions (conditions and
/// loop bounds included).
fn each_expr(blocks: &[Block], f: &mut dyn FnMut(&Expr)) {
    for b in blocks {
        match b {
            Block::Basic(bb) => {
                for s in &bb.stmts {
                    s.exprs(&mut |e| crate::check::visit(e, f));
                }
            }
            Block::If {
                cond, then, els, ..
            } => {
                crate::check::visit(cond, f);
                each_expr(then, f);
                each_expr(els, f);
            }
            Block::For {
                from,
                to,
                step,
                body,
                ..
            } => {
                crate::check::visit(from, f);
                crate::check::visit(to, f);
                if let Some(s) = step {
                    crate::check::visit(s, f);
                }
                each_expr(body, f);
            }
            Block::While { cond, body } => {
                crate::check::visit(cond, f);
                each_expr(body, f);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The program's facts, and its first top-level `parfor`'s body and options.
    fn compiled(src: &str) -> hir::Program {
        crate::driver::compile(src, &Default::default()).expect("the test program checks")
    }

    fn first_parfor(blocks: &[Block]) -> (&[Block], &hir::Parfor) {
        blocks
            .iter()
            .find_map(|b| match b {
                Block::For {
                    body,
                    parfor: Some(p),
                    ..
                } => Some((body.as_slice(), p)),
                _ => None,
            })
            .expect("a parfor")
    }

    const PROGRAM: &str = r#"
big = function(Matrix[Double] X) return (Matrix[Double] R) {
  R = t(X) %*% X
  for (i in 1:2) { R = R + 1 }
}
inner = function(Matrix[Double] X) return (Matrix[Double] R) {
  R = big(X) + 1
  s = sum(R)
  if (s > 0) { R = R * 2 }
}
small = function(Matrix[Double] X) return (Matrix[Double] R) {
  R = t(X) %*% X
}
untouched = function(Matrix[Double] X) return (Matrix[Double] R) {
  R = X %*% X
  for (i in 1:2) { R = R - 1 }
}
X = rand(rows=4, cols=4, seed=1)
parfor (i in 1:3) {
  A = inner(X) + small(X)
}
B = small(X) + untouched(X)
"#;

    #[test]
    fn the_optimizer_sets_the_body_and_the_functions_it_reaches() {
        let p = compiled(PROGRAM);
        let (body, opts) = first_parfor(&p.blocks);
        assert_eq!(opts.opt, hir::ParforOpt::RuleBased);
        let mut t = Threads::of_program(&p.blocks, &p.functions);
        // one iteration: run as a for, nothing set
        assert_eq!(t.enter(body, opts, 1, 2, None), None);
        assert_eq!(t.function("big"), None);
        // 3 iterations on 2 cores: 2 workers, 1 thread each; on 8 cores: 3 workers, 3 threads
        assert_eq!(t.enter(body, opts, 3, 2, None), Some(1));
        assert_eq!(t.function("inner"), Some(1));
        assert_eq!(t.function("big"), Some(1), "reached through inner");
        assert_eq!(
            t.function("small"),
            None,
            "inlined: called twice, 2 operations"
        );
        assert_eq!(t.function("untouched"), None);
        assert_eq!(t.enter(body, opts, 3, 8, None), Some(3));
        assert_eq!(t.function("big"), Some(3), "the last optimization wins");
        // a later run of one iteration keeps the body's count
        assert_eq!(t.enter(body, opts, 1, 8, None), Some(3));
    }

    #[test]
    fn opt_none_and_constrained_par_follow_systemds() {
        let src = "f = function(Matrix[Double] X) return (Matrix[Double] R) {\n  R = X %*% X\n  \
                   for (i in 1:2) { R = R + i }\n}\nX = rand(rows=3, cols=3, seed=2)\n\
                   parfor (i in 1:4, opt=CONSTRAINED, par=1) { A = f(X) }\n\
                   parfor (i in 1:4, opt=NONE) { B = f(X) }\n";
        let p = compiled(src);
        let fors: Vec<_> = p
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::For {
                    body,
                    parfor: Some(o),
                    ..
                } => Some((body.as_slice(), o)),
                _ => None,
            })
            .collect();
        assert_eq!(fors.len(), 2);
        assert_eq!(fors[0].1.opt, hir::ParforOpt::Constrained);
        assert_eq!(fors[1].1.opt, hir::ParforOpt::None);
        let mut t = Threads::of_program(&p.blocks, &p.functions);
        // one worker asked for: every core to the operations
        assert_eq!(t.enter(fors[0].0, fors[0].1, 4, 2, Some(1.0)), Some(2));
        assert_eq!(t.function("f"), Some(2));
        assert_eq!(t.enter(fors[1].0, fors[1].1, 4, 2, None), None);
        assert_eq!(t.function("f"), Some(2));
    }

    #[test]
    fn an_eval_in_the_body_gives_every_function_one_thread() {
        let src = "f = function(Matrix[Double] X) return (Matrix[Double] R) {\n  R = X %*% X\n  \
                   for (i in 1:2) { R = R + i }\n}\n\
                   g = function(Matrix[Double] X) return (Matrix[Double] R) {\n  R = X - 1\n  \
                   for (i in 1:2) { R = R * i }\n}\nX = rand(rows=3, cols=3, seed=2)\n\
                   C = g(X)\nname = \"f\"\nif (sum(X) > 100) { name = \"g\" }\n\
                   parfor (i in 1:2) { A = eval(name, X) }\n";
        let p = compiled(src);
        let (body, opts) = first_parfor(&p.blocks);
        let mut t = Threads::of_program(&p.blocks, &p.functions);
        assert_eq!(t.enter(body, opts, 2, 4, None), Some(2));
        assert_eq!(t.function("g"), Some(1));
        assert_eq!(t.function("f"), Some(1));
    }
}
