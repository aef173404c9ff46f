//! The cost model of spores's own e-graphs.
//!
//! Only LA operators (and `*`, `+`, `pow` on scalars, which are scalar arithmetic) can be
//! executed; every other node has infinite cost. The cost of a node is the paper's: the
//! estimated number of non-zeros it produces (its class's `nnz`), plus, for a matrix product,
//! the estimated multiply-adds. This module has the greedy tree extractor (egg's
//! bottom-up `Extractor`) on egg e-graphs; the extractors of this module work on [`super::ExGraph`].

use crate::analysis::{Kind, EG};
use crate::ir::Ir;
use egg::{CostFunction, Extractor, Id, Language, RecExpr};

/// The nnz-based cost of executable LA nodes.
pub struct NnzCost<'a> {
    /// the saturated e-graph (its analysis gives shapes and non-zeros)
    pub egraph: &'a EG,
}

/// Whether a node can be executed by the runtime.
pub fn executable(eg: &EG, node: &Ir) -> bool {
    match node {
        Ir::Bind(_) | Ir::Unbind(_) | Ir::Agg(_) | Ir::Subst(_) | Ir::Dim(_) => false,
        Ir::Join(c) | Ir::Union(c) | Ir::Pow(c) => c.iter().all(|x| eg[*x].data.kind.is_scalar()),
        Ir::Symbol(s) => !crate::ir::is_attr(s.as_str()),
        _ => true,
    }
}

/// The cost of one node on its own (its kernel's work); infinite if it cannot be executed.
pub fn node_cost(eg: &EG, enode: &Ir) -> f64 {
    if !executable(eg, enode) {
        return f64::INFINITY;
    }
    let out = |x: &Id| eg[*x].data.nnz.max(1.0);
    let nnz = out;
    let rows = |x: &Id| match eg[*x].data.kind {
        Kind::Mat(r, _) => r as f64,
        _ => 1.0,
    };
    let cols = |x: &Id| match eg[*x].data.kind {
        Kind::Mat(_, c) => c as f64,
        _ => 1.0,
    };
    let own = match enode {
        Ir::Num(_) | Ir::Symbol(_) => 0.0,
        Ir::MMul([a, b]) => {
            // multiply-adds of a sparse-times-dense product: nnz(A) * columns(B)
            let n = match eg[*b].data.kind {
                Kind::Mat(_, c) => c as f64,
                _ => 1.0,
            };
            eg[*a].data.nnz.max(1.0) * n
        }
        // fused operators: one dot product of length k per non-zero of the driver (X or W)
        Ir::Sddmm([x, u, _]) | Ir::Wcemm([x, u, _, _]) => nnz(x) * cols(u),
        Ir::WsLoss([x, u, v]) => {
            // plus the two k x k Gram matrices
            nnz(x) * cols(u) + (rows(u) + rows(v)) * cols(u) * cols(u)
        }
        Ir::WsLossW([w, x, u, _]) => nnz(w) * cols(u) + nnz(x),
        Ir::WDivMM([x, u, _, _]) | Ir::WDivMMT([x, u, _, _]) => 2.0 * nnz(x) * cols(u),
        Ir::WSubMM([w, x, u, _]) => 2.0 * nnz(w) * cols(u) + nnz(x),
        Ir::MMChain([x, _, v]) => 2.0 * nnz(x) * cols(v),
        _ => enode.children().iter().map(out).fold(0.0, f64::max),
    };
    own + 1.0
}

impl CostFunction<Ir> for NnzCost<'_> {
    type Cost = f64;

    fn cost<C>(&mut self, enode: &Ir, mut costs: C) -> f64
    where
        C: FnMut(Id) -> f64,
    {
        enode.fold(node_cost(self.egraph, enode), |acc, c| acc + costs(c))
    }
}

/// The cheapest plan of `root` by greedy bottom-up (tree) extraction, with its cost.
pub fn greedy(eg: &EG, root: Id) -> (f64, RecExpr<Ir>) {
    Extractor::new(eg, NnzCost { egraph: eg }).find_best(root)
}
