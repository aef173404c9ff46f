//! Runs of statements as the optimizer takes them, collected without running anything: the
//! rules of `Executor::run_segment` (src/exec/mod.rs), which collects the same runs at run
//! time. A run is the longest sequence of assignments at the start of a basic block's
//! remaining statements: a variable assigned in the run is inlined into the statements after
//! it, and the run's assigned variables are the roots of one term. It stops at any other
//! statement, at an assignment of an integer, boolean or string, and at a barrier (a
//! subexpression the optimizer does not handle) that reads a variable the run assigned.

use crate::check::hir::{self, Expr, ExprKind, Stmt, Ty};
use crate::ir::Ir;
use egg::{Id, Language, RecExpr, Symbol};
use std::collections::HashMap;

/// A run of assignments lowered to one term.
#[derive(Clone, Debug)]
pub struct Segment {
    /// the term, barriers as symbols `.b0`, `.b1`, ...
    pub term: RecExpr<Ir>,
    /// (variable, type, root) of each variable's last assignment in the run, in order
    pub outputs: Vec<(String, Ty, Id)>,
    /// each barrier symbol with the expression it stands for (it reads only variables from
    /// before the run)
    pub barriers: Vec<(String, Expr)>,
    /// how many statements the run covers
    pub count: usize,
}

/// The run at the start of `stmts`, if it is worth optimizing (some matrix operation).
pub fn collect(stmts: &[Stmt]) -> Option<Segment> {
    let mut term = RecExpr::<Ir>::default();
    let mut env: HashMap<String, Id> = HashMap::new();
    let mut outputs: Vec<(String, Ty, Id)> = Vec::new();
    let mut barriers: Vec<(String, Expr)> = Vec::new();
    let mut count = 0;
    let mut any_op = false;
    for s in stmts {
        let Stmt::Assign { var, value, .. } = s else {
            break;
        };
        if !matches!(value.ty, Ty::Matrix(..) | Ty::Scalar(hir::ScalarTy::Double)) {
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
        let base = barriers.len();
        let mut map: Vec<Id> = Vec::with_capacity(t.as_ref().len());
        for node in t.as_ref() {
            let node = match node {
                Ir::Symbol(sym) => match local.iter().position(|(n, _)| n == sym.as_str()) {
                    Some(k) => Ir::Symbol(Symbol::from(format!(".b{}", base + k))),
                    None => node.clone(),
                },
                _ => node.clone(),
            };
            let id = match &node {
                Ir::Symbol(sym) if env.contains_key(sym.as_str()) => env[sym.as_str()],
                _ => term.add(node.map_children(|c| map[usize::from(c)])),
            };
            map.push(id);
        }
        barriers.extend(
            local
                .iter()
                .enumerate()
                .map(|(k, (_, e))| (format!(".b{}", base + k), (*e).clone())),
        );
        any_op |= worth_optimizing(value);
        let id = map[usize::from(root)];
        env.insert(var.clone(), id);
        outputs.retain(|(v, ..)| v != var);
        outputs.push((var.clone(), value.ty, id));
        count += 1;
    }
    (count > 0 && any_op && crate::lower::has_operator(&term)).then_some(Segment {
        term,
        outputs,
        barriers,
        count,
    })
}

/// Whether a statement is worth compiling: a double or matrix result computed with at least
/// one matrix operation (as `exec`'s rule).
fn worth_optimizing(e: &Expr) -> bool {
    let mut matrix_op = false;
    crate::check::visit(e, &mut |x| {
        matrix_op |= match &x.kind {
            ExprKind::MatMul(..) => true,
            ExprKind::Builtin(b, _) => b.plan_op,
            ExprKind::Binary(_, a, b) => a.ty.is_matrix() || b.ty.is_matrix(),
            _ => false,
        }
    });
    matrix_op
}
