//! Segments: the unit the run-time optimizer plans. A segment is the longest run of
//! assignments at the start of a basic block's remaining statements, lowered into one term
//! with a root per assigned variable: a variable assigned in the run is inlined into the
//! statements after it, so what the statements share is computed once.
//!
//! The run stops at any other statement, at an assignment of an integer, boolean or string,
//! and at a barrier (a subexpression the optimizer does not handle, see
//! [`crate::lower::lower_with_barriers`]) that reads a variable the run assigned: barriers are
//! evaluated before the plan runs, as written, so they may read only what existed before.
//! Barriers are renamed block-wide (`.b0`, `.b1`, ...) in the order they appear.

use super::Input;
use crate::check::hir::{self, Expr, ExprKind, Stmt};
use crate::exec::Value;
use crate::ir::Ir;
use crate::raise::Val;
use egg::{Id, Language, RecExpr, Symbol};
use spores_runtime::Matrix;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Weak};

/// A segment's planner inputs (in order of first use) and their values.
pub type Gathered = (Vec<(String, Input)>, HashMap<Symbol, Val>);

/// One output of a segment: a variable's last assignment in the run.
#[derive(Clone, Debug)]
pub struct Output<'a> {
    /// the variable
    pub var: String,
    /// its type
    pub ty: hir::Ty,
    /// its root in the segment's term
    pub root: Id,
    /// the assigned expression
    pub value: &'a Expr,
}

/// A run of assignments lowered into one term.
#[derive(Clone, Debug)]
pub struct Segment<'a> {
    /// the statements as one term, variables assigned earlier in the run inlined
    pub term: RecExpr<Ir>,
    /// the variables the run assigns (each one's last assignment), in order
    pub outputs: Vec<Output<'a>>,
    /// each barrier's block-wide name and the expression it stands for
    pub barriers: Vec<(String, &'a Expr)>,
    /// each statement as lowered (`var = term`, barriers by their block-wide names)
    pub texts: Vec<String>,
    /// each statement: the variable and the expression assigned
    pub statements: Vec<(String, &'a Expr)>,
}

impl<'a> Segment<'a> {
    /// How many statements the segment covers.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether it covers no statement.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// The names of the outputs, in order.
    pub fn names(&self) -> Vec<String> {
        self.outputs.iter().map(|o| o.var.clone()).collect()
    }

    /// The roots of the outputs, in order.
    pub fn roots(&self) -> Vec<Id> {
        self.outputs.iter().map(|o| o.root).collect()
    }

    /// The symbols of the term (inputs and barriers), in order of first use.
    pub fn symbols(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for node in self.term.as_ref() {
            if let Ir::Symbol(s) = node {
                if !names.iter().any(|n| n == s.as_str()) {
                    names.push(s.to_string());
                }
            }
        }
        names
    }

    /// The scalars that size a `matrix(v, rows, cols)`: constants of the plan.
    pub fn dims(&self) -> Vec<String> {
        let term = &self.term;
        let mut dims: Vec<String> = Vec::new();
        for node in term.as_ref() {
            if let Ir::Fill([_, r, c]) = node {
                for x in [r, c] {
                    if let Ir::Symbol(s) = &term[*x] {
                        dims.push(s.to_string());
                    }
                }
            }
        }
        dims
    }

    /// The planner's inputs and their values, looked up by name (barriers first, then
    /// variables): `None` when an input is a string or undefined (then the statements run as
    /// written). Scalars that size a `matrix(v, rows, cols)` are constants of the plan.
    pub fn inputs<'v>(&self, lookup: impl Fn(&str) -> Option<&'v Value>) -> Option<Gathered> {
        let dims = self.dims();
        let names = self.symbols();
        let mut inputs = Vec::new();
        let mut vals = HashMap::new();
        for n in names {
            let (input, val) = match lookup(&n) {
                Some(Value::Matrix(m)) => (
                    {
                        // the finiteness scan counts a large dense value's non-zeros too
                        let finite = all_finite_cached(m);
                        Input::Matrix {
                            rows: m.rows(),
                            cols: m.cols(),
                            nnz: plan_nnz(m),
                            finite,
                        }
                    },
                    Val::Matrix(m.clone()),
                ),
                Some(Value::Scalar(s)) => (
                    if dims.contains(&n) {
                        Input::Scalar(Some(s.as_f64()))
                    } else if s.as_f64().is_finite() {
                        Input::FiniteScalar
                    } else {
                        Input::Scalar(None)
                    },
                    Val::Scalar(s.as_f64()),
                ),
                // a string, or a variable the checker knows is undefined here: as written
                _ => return None,
            };
            vals.insert(Symbol::from(n.as_str()), val);
            inputs.push((n, input));
        }
        Some((inputs, vals))
    }
}

/// The segment at the start of `stmts`, or `None` when there is nothing to plan (no
/// assignment to start with, or no matrix operation in the run).
pub fn collect(stmts: &[Stmt]) -> Option<Segment<'_>> {
    let mut term = RecExpr::<Ir>::default();
    let mut added: HashMap<Ir, Id> = HashMap::new();
    let mut env: HashMap<String, Id> = HashMap::new();
    let mut outputs: Vec<Output> = Vec::new();
    let mut barriers: Vec<(String, &Expr)> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    let mut statements: Vec<(String, &Expr)> = Vec::new();
    let mut any_op = false;
    for s in stmts {
        let Stmt::Assign { var, value, .. } = s else {
            break;
        };
        if !matches!(
            value.ty,
            hir::Ty::Matrix(..) | hir::Ty::Scalar(hir::ScalarTy::Double)
        ) {
            break;
        }
        let mut t = RecExpr::<Ir>::default();
        let (root, local) = crate::lower::lower_with_barriers(value, &mut t);
        let reads_segment = local.iter().any(|(_, e)| {
            let mut hit = false;
            crate::check::visit(e, &mut |x| {
                hit |= matches!(&x.kind, ExprKind::Var(n) if env.contains_key(n));
            });
            hit
        });
        if reads_segment {
            break;
        }
        // the block-wide name of each barrier: a barrier equal to an earlier one of the run
        // (a slice of the same variable by the same constants, `P[, 1:K]` twice) is that
        // one, so that the plan sees one value
        let mut names: Vec<String> = Vec::with_capacity(local.len());
        for (_, e) in &local {
            let name = match barriers.iter().find(|(_, b)| same_pure(b, e)) {
                Some((n, _)) => n.clone(),
                None => {
                    let n = format!(".b{}", barriers.len());
                    barriers.push((n.clone(), *e));
                    n
                }
            };
            names.push(name);
        }
        // the statement as lowered, with the block-wide barrier names
        let renamed: RecExpr<Ir> = t
            .as_ref()
            .iter()
            .map(|node| match node {
                Ir::Symbol(sym) => match local.iter().position(|(n, _)| n == sym.as_str()) {
                    Some(k) => Ir::Symbol(Symbol::from(names[k].as_str())),
                    None => node.clone(),
                },
                _ => node.clone(),
            })
            .collect::<Vec<_>>()
            .into();
        texts.push(format!("{var} = {renamed}"));
        statements.push((var.clone(), value));
        // splice it into the run's term, variables assigned earlier in the run inlined
        // hash-consed: a node equal to one already in the run's term is that node (every
        // node is a pure operator, barriers are symbols), so `t(X) %*% X` reads one `X` and
        // the evaluator sees SystemDS's tsmm in the statements as written, as in a plan
        let mut map: Vec<Id> = Vec::with_capacity(renamed.as_ref().len());
        for node in renamed.as_ref() {
            let id = match node {
                Ir::Symbol(sym) if env.contains_key(sym.as_str()) => env[sym.as_str()],
                _ => {
                    let n = node.clone().map_children(|c| map[usize::from(c)]);
                    *added.entry(n.clone()).or_insert_with(|| term.add(n))
                }
            };
            map.push(id);
        }
        any_op |= worth_optimizing(value);
        let id = map[usize::from(root)];
        env.insert(var.clone(), id);
        outputs.retain(|o| o.var != *var);
        outputs.push(Output {
            var: var.clone(),
            ty: value.ty,
            root: id,
            value,
        });
    }
    if texts.is_empty() || !any_op || !crate::lower::has_operator(&term) {
        return None;
    }
    Some(Segment {
        term,
        outputs,
        barriers,
        texts,
        statements,
    })
}

/// Whether two barrier expressions are the same value: built only of variables, constants,
/// indexing and operators (no builtin or function call, so nothing random or with effects),
/// and equal in structure. Barriers read only variables from before the run, so equal ones
/// have equal values.
fn same_pure(a: &Expr, b: &Expr) -> bool {
    let dbg = |x: &dyn std::fmt::Debug| format!("{x:?}");
    let range = |r: &hir::Range, q: &hir::Range| match (r, q) {
        (hir::Range::All, hir::Range::All) => true,
        (hir::Range::At(x), hir::Range::At(y)) => same_pure(x, y),
        (hir::Range::Span(x1, x2), hir::Range::Span(y1, y2)) => {
            same_pure(x1, y1) && same_pure(x2, y2)
        }
        _ => false,
    };
    a.ty == b.ty
        && match (&a.kind, &b.kind) {
            (ExprKind::Var(x), ExprKind::Var(y)) => x == y,
            (ExprKind::Lit(x), ExprKind::Lit(y)) => dbg(x) == dbg(y),
            (ExprKind::Unary(o, x), ExprKind::Unary(p, y)) => dbg(o) == dbg(p) && same_pure(x, y),
            (ExprKind::Binary(o, x1, x2), ExprKind::Binary(p, y1, y2)) => {
                dbg(o) == dbg(p) && same_pure(x1, y1) && same_pure(x2, y2)
            }
            (ExprKind::MatMul(x1, x2), ExprKind::MatMul(y1, y2)) => {
                same_pure(x1, y1) && same_pure(x2, y2)
            }
            (
                ExprKind::Index {
                    base: x,
                    rows: r1,
                    cols: c1,
                },
                ExprKind::Index {
                    base: y,
                    rows: r2,
                    cols: c2,
                },
            ) => same_pure(x, y) && range(r1, r2) && range(c1, c2),
            _ => false,
        }
}

/// [`Matrix::all_finite`], remembered per matrix value: a loop re-plans its blocks every
/// iteration with the same large inputs (L2-SVM's X: a 400 MB scan per block run otherwise).
/// Values are immutable behind their `Arc`; an entry holds a `Weak`, so its address is not
/// reused while the entry lives, and entries whose value was dropped are pruned.
pub(crate) fn all_finite_cached(m: &Arc<Matrix>) -> bool {
    if m.cells() < FINITE_CACHED {
        return m.all_finite();
    }
    let key = Arc::as_ptr(m) as usize;
    let known = FINITE.with(|c| {
        c.borrow()
            .get(&key)
            .and_then(|(w, f, _)| (w.strong_count() > 0).then_some(*f))
    });
    known.unwrap_or_else(|| {
        // a dense value's non-zeros in the same pass (`plan_nnz`)
        let (f, nnz) = match &**m {
            Matrix::Dense(d) => {
                let (nnz, nonfinite) = count_nnz_nonfinite(d.as_slice().expect("standard layout"));
                (nonfinite == 0, Some(nnz))
            }
            Matrix::Sparse(_) => (m.all_finite(), None),
        };
        remember(m, f, nnz);
        f
    })
}

/// The non-zeros and the non-finite values of a slice, in parallel pieces.
fn count_nnz_nonfinite(xs: &[f64]) -> (usize, usize) {
    use rayon::prelude::*;
    xs.par_chunks(1 << 16)
        .map(spores_runtime::matrix::count_stored_nonfinite)
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// Records whether a matrix value's cells are all finite, as the kernel that made it counted
/// them ([`spores_runtime::kernels::cellwise::Fused::finite`]), so that
/// [`all_finite_cached`] need not scan it (ALS-CG's `U`, `R` and `S`: 32 MB each, new in
/// every iteration).
pub(crate) fn know_finite(m: &Arc<Matrix>, finite: bool) {
    remember(m, finite, None);
}

/// Records a large value's finiteness and, when a scan counted them, its non-zeros.
fn remember(m: &Arc<Matrix>, finite: bool, nnz: Option<usize>) {
    if m.cells() < FINITE_CACHED {
        return;
    }
    FINITE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= 64 {
            c.retain(|_, (w, ..)| w.strong_count() > 0);
        }
        c.insert(Arc::as_ptr(m) as usize, (Arc::downgrade(m), finite, nnz));
    })
}

/// Matrices from which finiteness is remembered per value (smaller ones are scanned).
const FINITE_CACHED: usize = 1 << 16;

/// Per large value: whether its cells are all finite, and its non-zeros when a scan counted
/// them.
type Known = (Weak<Matrix>, bool, Option<usize>);

thread_local!(static FINITE: RefCell<HashMap<usize, Known>> = RefCell::new(HashMap::new()));

/// The non-zeros the planner assumes of an input: exact for CSR (free) and for vectors
/// (cheap); for a large dense matrix, as its finiteness scan counted them
/// ([`all_finite_cached`]: a mask such as `X != 0` of half-dense data has half its cells,
/// which decides whether the sampled kernels that skip its zeros pay); else all its cells (a
/// value made by a fused kernel, which is never scanned, or a small one).
fn plan_nnz(m: &Arc<Matrix>) -> usize {
    match &**m {
        Matrix::Dense(d) if d.ncols() > 1 => {
            if m.cells() < FINITE_CACHED {
                return d.len();
            }
            let key = Arc::as_ptr(m) as usize;
            FINITE
                .with(|c| {
                    c.borrow()
                        .get(&key)
                        .and_then(|(w, _, n)| if w.strong_count() > 0 { *n } else { None })
                })
                .unwrap_or(d.len())
        }
        _ => m.nnz(),
    }
}

/// Whether a statement is worth compiling: a double or matrix result computed with at least
/// one matrix operation.
fn worth_optimizing(e: &Expr) -> bool {
    let typed = matches!(
        e.ty,
        hir::Ty::Matrix(..) | hir::Ty::Scalar(hir::ScalarTy::Double)
    );
    let mut matrix_op = false;
    crate::check::visit(e, &mut |x| {
        matrix_op |= match &x.kind {
            ExprKind::MatMul(..) => true,
            ExprKind::Builtin(b, _) => b.plan_op,
            ExprKind::Binary(_, a, b) => a.ty.is_matrix() || b.ty.is_matrix(),
            _ => false,
        }
    });
    typed && matrix_op
}
