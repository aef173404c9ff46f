//! Terms of the optimizer's language in DML syntax, for people: LA operators print as the
//! DML a user would write (`t(V) %*% V`, `sum(X)`, fused operators by name with their
//! operands), RA operators (`b`, `ub`, joins, unions, aggregates) as s-expressions, since
//! they have no DML form. Used by `--why` derivations.

use super::Ir;
use egg::{FlatTerm, Language, RecExpr};

/// Formats one node given its children already formatted. Binary operators are
/// parenthesised when they are children of another operator (`inner`).
pub fn node(n: &Ir, kids: &[String], inner: bool) -> String {
    let wrap = |s: String| if inner { format!("({s})") } else { s };
    let k = |i: usize| kids[i].as_str();
    match n {
        Ir::Num(c) => format!("{c}"),
        Ir::Symbol(s) => s.to_string(),
        Ir::MMul(_) => wrap(format!("{} %*% {}", k(0), k(1))),
        Ir::TMMul(_) => wrap(format!("t({}) %*% {}", k(0), k(1))),
        Ir::EMul(_) => wrap(format!("{} * {}", k(0), k(1))),
        Ir::EAdd(_) => wrap(format!("{} + {}", k(0), k(1))),
        Ir::ESub(_) => wrap(format!("{} - {}", k(0), k(1))),
        Ir::EDiv(_) => wrap(format!("{} / {}", k(0), k(1))),
        Ir::EPow(_) => wrap(format!("{} ^ {}", k(0), k(1))),
        Ir::Neg(_) => format!("-{}", k(0)),
        Ir::Nz(_) => wrap(format!("{} != 0", k(0))),
        Ir::MSum(_) => format!("sum({})", k(0)),
        Ir::Fill(_) => format!("matrix({}, {}, {})", k(0), k(1), k(2)),
        Ir::Trans(_) => format!("t({})", k(0)),
        Ir::RowSums(_)
        | Ir::ColSums(_)
        | Ir::AsScalar(_)
        | Ir::Exp(_)
        | Ir::Log(_)
        | Ir::Sqrt(_)
        | Ir::Abs(_)
        | Ir::Sigmoid(_)
        | Ir::Sddmm(_)
        | Ir::WsLoss(_)
        | Ir::WsLossW(_)
        | Ir::Wcemm(_)
        | Ir::WDivMM(_)
        | Ir::WDivMMT(_)
        | Ir::WSubMM(_)
        | Ir::WSubMMT(_)
        | Ir::MMChain(_)
        | Ir::MMChainR(_)
        | Ir::SMMChain(_)
        | Ir::Sprop(_) => format!("{}({})", n, kids.join(", ")),
        // relational operators: no DML form
        _ => format!("({} {})", n, kids.join(" ")),
    }
}

/// A whole term in DML syntax.
pub fn term(e: &RecExpr<Ir>) -> String {
    fn go(e: &RecExpr<Ir>, id: egg::Id, inner: bool) -> String {
        let n = &e[id];
        let kids: Vec<String> = n.children().iter().map(|&c| go(e, c, true)).collect();
        node(n, &kids, inner)
    }
    let root = egg::Id::from(e.as_ref().len() - 1);
    go(e, root, false)
}

/// A term of an explanation in DML syntax.
pub fn flat(t: &FlatTerm<Ir>) -> String {
    fn go(t: &FlatTerm<Ir>, inner: bool) -> String {
        let kids: Vec<String> = t.children.iter().map(|c| go(c, true)).collect();
        node(&t.node, &kids, inner)
    }
    go(t, false)
}

/// One step of a flat explanation: the rule applied at `step` (forward or backward) with
/// the subterm it rewrote, before and after, as `rule: before => after`. `None` for the
/// first term of an explanation, which has no rule.
pub fn step(prev: &FlatTerm<Ir>, cur: &FlatTerm<Ir>) -> Option<String> {
    // a rule written `<=>` is loaded as `name` and `name-rev` (its right-to-left copy);
    // an explanation may also use a rule backwards
    let name = |r: egg::Symbol, backward: bool| {
        let r = r.as_str();
        let (base, reversed) = match r.strip_suffix("-rev") {
            Some(base) => (base, !backward),
            None => (r, backward),
        };
        if reversed {
            format!("{base} (right to left)")
        } else {
            base.to_string()
        }
    };
    if let Some(r) = cur.forward_rule {
        return Some(format!(
            "{}: {} => {}",
            name(r, false),
            flat(prev),
            flat(cur)
        ));
    }
    if let Some(r) = cur.backward_rule {
        return Some(format!(
            "{}: {} => {}",
            name(r, true),
            flat(prev),
            flat(cur)
        ));
    }
    cur.children
        .iter()
        .zip(&prev.children)
        .find_map(|(c, p)| step(p, c))
}
