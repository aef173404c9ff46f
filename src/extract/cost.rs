//! The cost model of spores's own e-graphs: the estimated run time of a plan, in nanoseconds.
//!
//! Only LA operators (and `*`, `+`, `pow` on scalars, which are scalar arithmetic) can be
//! executed; every other node has infinite cost. Each executable node costs the work of its
//! kernel, from the shapes and estimated non-zeros of the analysis (paper section 3.2 uses
//! the non-zeros alone; here they are weighted by what each kind of work costs):
//!
//! * writing the result: `nnz` cells if the result will be stored sparse (the runtime's rule,
//!   [`spores_runtime::matrix::prefers_sparse`]), all `rows * cols` cells if dense;
//! * products: `rows * inner * cols` multiply-adds when both sides are dense, plus a fixed
//!   cost per dot product (`vec_op`) when the right operand is narrow (the runtime's
//!   matrix-vector kernel); with a sparse operand, the stored entries the kernel visits (once for a sparse left operand,
//!   once per row of A for a sparse right operand) and the multiply-adds it does;
//! * fused operators: one dot product of length `k` per non-zero of the sparse driver (two
//!   for the product forms; a dense driver's non-zeros are gathered, a dense cell each), plus a logarithm of a sum (`sum_log`) per non-zero for `wcemm`,
//!   plus a visit (a read) of each stored entry of a second sparse operand; `mmchain` of a
//!   dense X, which multiplies every cell in one pass, the multiply-adds of its two dense
//!   products (`mmchainr`, `t(X) %*% (X %*% v - y)`, likewise), and for a matrix v a fixed
//!   cost per row of X and column of v (a short dot product and axpy) and, once the
//!   accumulator outgrows the cache, its cells streamed per row of X; `smmchain` of a sparse X, one visit of each stored entry for both products (of a dense X, each row read once for both);
//! * element-wise maps like `log`: one transcendental call per cell computed;
//! * sums: one cell read per stored entry of the operand (`dense_cell`), and the result; a
//!   sum of an operand of at most `SEQ_CELLS` values, which runs on one thread as a chain
//!   of compensated adds, `serial_sum` per value;
//! * every kernel call: a fixed overhead (thread pool dispatch, allocation).
//!
//! The weights ([`WEIGHTS`]) are nanoseconds per unit, measured by `spores calibrate` on the
//! development machine (a shared 2-core VM); on another machine, `spores calibrate` measures
//! them and prints a `SPORES_COST_WEIGHTS=...` line that replaces them when exported. Only
//! their ratios matter to extraction.

use crate::analysis::{Data, Kind, EG};
use crate::ir::Ir;
use egg::{CostFunction, Extractor, Id, Language, RecExpr};
use spores_runtime::kernels::aggregate::SEQ_CELLS;
use spores_runtime::kernels::matmul::NARROW;
use spores_runtime::matrix::prefers_sparse;

/// Cells of `mmchain`'s accumulator (X's columns times v's) beyond which a dense X's rows
/// each stream it through memory (the second-level cache's 512 KB).
const MMCHAIN_CACHED_CELLS: f64 = 65536.0;

/// Nanoseconds per unit of work of each kind (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weights {
    /// one multiply-add of a dense x dense product
    pub dense_fma: f64,
    /// one dot product of a dense matrix-vector product (B with at most [`NARROW`] columns:
    /// a row of A with a column of B), beyond its multiply-adds: a fixed cost per output
    /// cell that dominates when A's rows are short
    pub vec_op: f64,
    /// one stored entry of a sparse operand visited by a product (index and value loads)
    pub sparse_visit: f64,
    /// one multiply-add of a product with a sparse operand
    pub sparse_fma: f64,
    /// one multiply-add of a fused operator's dot products
    pub sampled_fma: f64,
    /// one cell of a dense result
    pub dense_cell: f64,
    /// one non-zero of a sparse result
    pub sparse_cell: f64,
    /// one `log`/`exp`/`sigmoid`/`sqrt` call
    pub transcendental: f64,
    /// one logarithm of a sum of logarithms (`wcemm`'s, the vectorised
    /// `spores_runtime::kernels::sumlog`, a fraction of a `log` call)
    pub sum_log: f64,
    /// one value of a sum (full, row or column) of an operand of at most [`SEQ_CELLS`]
    /// values, which runs on one thread in SystemDS's order: a compensated (Kahan) add, a
    /// chain of dependent adds
    pub serial_sum: f64,
    /// one kernel call
    pub call: f64,
    /// one byte read from memory by both cores streaming a large array, in CPU time (the
    /// inverse of the read bandwidth per CPU second): a machine figure for the floor of `--stats`
    /// ([`crate::raise::work`]), not used by extraction
    pub read_byte: f64,
    /// one floating-point operation of a large dense product, in CPU time (the inverse of the
    /// dgemm rate per CPU second): a machine figure for the floor, not used by extraction
    pub flop: f64,
}

/// The weights measured with `spores calibrate` (release build, 2-core VM, 2026-11-21; the
/// middle of three runs, which varied by up to 2x on the shared machine, rounded); the
/// machine figures `read_byte` and `flop` in CPU time (2026-11-23, 27 GB/s and 49 GFLOP/s
/// per CPU second, two runs within 1%).
pub const WEIGHTS: Weights = Weights {
    dense_fma: 0.06,
    vec_op: 2.5,
    sparse_visit: 1.3,
    sparse_fma: 0.15,
    sampled_fma: 0.4,
    dense_cell: 1.0,
    sparse_cell: 4.0,
    transcendental: 3.5,
    sum_log: 1.0,
    serial_sum: 1.8,
    call: 150.0,
    read_byte: 0.037,
    flop: 0.02,
};

impl Weights {
    /// The weights by name, in a fixed order.
    pub fn fields(&self) -> [(&'static str, f64); 13] {
        let mut w = *self;
        w.fields_mut().map(|(n, v)| (n, *v))
    }

    pub(crate) fn fields_mut(&mut self) -> [(&'static str, &mut f64); 13] {
        [
            ("dense_fma", &mut self.dense_fma),
            ("vec_op", &mut self.vec_op),
            ("sparse_visit", &mut self.sparse_visit),
            ("sparse_fma", &mut self.sparse_fma),
            ("sampled_fma", &mut self.sampled_fma),
            ("dense_cell", &mut self.dense_cell),
            ("sparse_cell", &mut self.sparse_cell),
            ("transcendental", &mut self.transcendental),
            ("sum_log", &mut self.sum_log),
            ("serial_sum", &mut self.serial_sum),
            ("call", &mut self.call),
            ("read_byte", &mut self.read_byte),
            ("flop", &mut self.flop),
        ]
    }

    /// These weights with some replaced by `name=value,...` (the format `spores calibrate`
    /// prints and `SPORES_COST_WEIGHTS` takes).
    pub fn with_overrides(mut self, text: &str) -> Result<Weights, String> {
        for item in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| format!("expected name=value, found `{item}`"))?;
            let v: f64 = value
                .trim()
                .parse()
                .map_err(|_| format!("`{value}` is not a number (in `{item}`)"))?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!(
                    "weight {name} must be a finite number >= 0, found {v}"
                ));
            }
            let known = self.fields().map(|f| f.0);
            let Some((_, slot)) = self
                .fields_mut()
                .into_iter()
                .find(|(n, _)| *n == name.trim())
            else {
                return Err(format!(
                    "unknown weight `{}` (known: {})",
                    name.trim(),
                    known.join(", ")
                ));
            };
            *slot = v;
        }
        Ok(self)
    }

    /// The weights as `name=value,...`.
    pub fn to_overrides(&self) -> String {
        self.fields()
            .iter()
            .map(|(n, v)| format!("{n}={v:.4}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The weights in use: [`WEIGHTS`] with the overrides of `SPORES_COST_WEIGHTS`, or the error
/// in that variable.
pub fn weights_from_env() -> Result<Weights, String> {
    match std::env::var("SPORES_COST_WEIGHTS") {
        Ok(text) => WEIGHTS
            .with_overrides(&text)
            .map_err(|e| format!("SPORES_COST_WEIGHTS: {e}")),
        Err(_) => Ok(WEIGHTS),
    }
}

/// The weights in use (read once; a malformed `SPORES_COST_WEIGHTS` is reported by the
/// command line before anything runs, and ignored here).
pub fn weights() -> &'static Weights {
    static W: std::sync::OnceLock<Weights> = std::sync::OnceLock::new();
    W.get_or_init(|| weights_from_env().unwrap_or(WEIGHTS))
}

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

/// The cost of a value's storage: its non-zeros if it will be stored sparse, else its cells.
fn store(w: &Weights, d: &Data) -> f64 {
    match d.kind {
        Kind::Mat(r, c) => {
            let nnz = d.nnz.max(0.0);
            if prefers_sparse(r, c, nnz as usize) {
                nnz * w.sparse_cell
            } else {
                (r * c) as f64 * w.dense_cell
            }
        }
        _ => 0.0,
    }
}

/// Whether a value will be stored densely.
fn dense(d: &Data) -> bool {
    match d.kind {
        Kind::Mat(r, c) => !prefers_sparse(r, c, d.nnz.max(0.0) as usize),
        _ => true,
    }
}

/// The work of `A %*% B` for A `r x k` and B `k x c` in the given representations: for dense x
/// dense, its multiply-adds, plus a [`Weights::vec_op`] per dot product (one per output cell)
/// when B is narrow (`c <= NARROW`, the matrix-vector kernel); a CSR A with a dense B visits each stored entry of A once and adds a row of
/// B; CSR x CSR (Gustavson) visits, for each entry of A, a row of B (`nnz(B) / k` entries on
/// average); a CSR B with a dense A is visited once per row of A.
fn product(w: &Weights, (r, k, c): (f64, f64, f64), da: bool, db: bool, na: f64, nb: f64) -> f64 {
    match (da, db) {
        (true, true) => {
            // a narrow B: the matrix-vector kernel, a dot product per output cell
            let dots = if c <= NARROW as f64 { r * c } else { 0.0 };
            r * k * c * w.dense_fma + dots * w.vec_op
        }
        (false, true) => na * (w.sparse_visit + c * w.sparse_fma),
        (false, false) => na * (w.sparse_visit + nb / k.max(1.0) * (w.sparse_visit + w.sparse_fma)),
        (true, false) => r * nb * (w.sparse_visit + w.sparse_fma),
    }
}

/// The cost of node `enode` of e-class `class` on its own (its kernel's work, in
/// nanoseconds); infinite if it cannot be executed.
pub fn node_cost(eg: &EG, class: Id, enode: &Ir) -> f64 {
    node_cost_with(weights(), eg, class, enode)
}

/// [`node_cost`] with given weights.
pub fn node_cost_with(w: &Weights, eg: &EG, class: Id, enode: &Ir) -> f64 {
    if !executable(eg, enode) {
        return f64::INFINITY;
    }
    let d = |x: &Id| &eg[*x].data;
    // an ill-formed node (operand shapes that do not match) is never chosen
    let own = &eg[class].data;
    if matches!(own.kind, Kind::Invalid(_))
        || enode
            .children()
            .iter()
            .any(|c| matches!(d(c).kind, Kind::Invalid(_)))
    {
        return f64::INFINITY;
    }
    let nnz = |x: &Id| eg[*x].data.nnz.max(1.0);
    let rows = |x: &Id| match eg[*x].data.kind {
        Kind::Mat(r, _) => r as f64,
        _ => 1.0,
    };
    let cols = |x: &Id| match eg[*x].data.kind {
        Kind::Mat(_, c) => c as f64,
        _ => 1.0,
    };
    let scalar_result = enode.children().iter().all(|c| d(c).kind.is_scalar());
    match enode {
        Ir::Num(_) | Ir::Symbol(_) => return 0.0,
        _ if scalar_result => return 1.0,
        _ => {}
    }
    // reading the operands and writing the result
    let largest = enode
        .children()
        .iter()
        .map(|c| store(w, d(c)))
        .fold(store(w, own), f64::max);
    let work = match enode {
        // a row times a column (`t(a) %*% b` with its transpose, which costs a product's
        // cells): the dot product of `sum(a * b)`, charged as its sum's reads (see `TMMul`)
        Ir::MMul([a, b])
            if rows(a) == 1.0 && cols(b) == 1.0 && cols(a) == rows(b) && cols(a) > 1.0 =>
        {
            let r = cols(a);
            r * if r <= SEQ_CELLS as f64 {
                w.serial_sum
            } else {
                w.dense_cell
            }
        }
        Ir::MMul([a, b]) => {
            let out = (rows(a) * cols(b)) * w.dense_cell;
            out + product(
                w,
                (rows(a), cols(a), cols(b)),
                dense(d(a)),
                dense(d(b)),
                nnz(a),
                nnz(b),
            )
        }
        // a dot product of column vectors: charged as `sum(a * b)`, which runs as the same
        // dot product (the product is not formed), the product's cells and the sum's reads,
        // so that among the two the program as written wins, and a plan does not turn a
        // compensated `sum(a * b * c)` (SystemDS's `tak+*`) into a dot product
        Ir::TMMul([a, b]) if cols(a) == 1.0 && cols(b) == 1.0 && rows(a) == rows(b) => {
            let r = rows(a);
            let per = if r <= SEQ_CELLS as f64 {
                w.serial_sum
            } else {
                w.dense_cell
            };
            // the product's own node (a dense column, never stored sparse) and its call
            (r * w.dense_cell + w.call) + r * per
        }
        Ir::TMMul([a, b]) => {
            let out = (cols(a) * cols(b)) * w.dense_cell;
            if dense(d(a)) {
                // the transpose is formed, then multiplied
                out + rows(a) * cols(a) * w.dense_cell
                    + product(
                        w,
                        (cols(a), rows(a), cols(b)),
                        true,
                        dense(d(b)),
                        nnz(a),
                        nnz(b),
                    )
            } else {
                // each stored entry of A scatters a row of B
                out + nnz(a) * (w.sparse_visit + cols(b) * w.sparse_fma)
            }
        }
        // a dense driver: its non-zeros gathered into CSR blocks by the kernels that absorb
        // the sampled product into a product or a sum, which write nothing of its size
        Ir::Sddmm([x, u, _]) if dense(d(x)) => nnz(x) * (cols(u) * w.sampled_fma + w.dense_cell),
        Ir::Sddmm([x, u, _]) => nnz(x) * cols(u) * w.sampled_fma + store(w, d(x)),
        Ir::Wcemm([x, u, _, _]) => nnz(x) * (cols(u) * w.sampled_fma + w.sum_log),
        Ir::WsLoss([x, u, v]) => {
            // plus the two k x k Gram matrices
            (nnz(x) * cols(u) + (rows(u) + rows(v)) * cols(u) * cols(u)) * w.sampled_fma
        }
        // X's stored entries are read along W's (a visit each), not written
        Ir::WsLossW([wt, x, u, _]) => nnz(wt) * cols(u) * w.sampled_fma + nnz(x) * w.sparse_visit,
        Ir::WDivMM([x, u, _, _]) => {
            2.0 * nnz(x) * cols(u) * w.sampled_fma + rows(u) * cols(u) * w.dense_cell
        }
        Ir::WDivMMT([x, u, v, _]) => {
            2.0 * nnz(x) * cols(u) * w.sampled_fma + rows(v) * cols(u) * w.dense_cell
        }
        Ir::WSubMM([wt, x, u, _]) => {
            2.0 * nnz(wt) * cols(u) * w.sampled_fma
                + nnz(x) * w.sparse_visit
                + rows(u) * cols(u) * w.dense_cell
        }
        Ir::WSubMMT([wt, x, u, v]) => {
            2.0 * nnz(wt) * cols(u) * w.sampled_fma
                + nnz(x) * w.sparse_visit
                + rows(v) * cols(u) * w.dense_cell
        }
        // one pass over X for both products: a dense X is multiplied at every cell as by
        // the two dense products (no intermediate), a sparse one at its stored entries
        Ir::MMChain([x, _, v]) if dense(d(x)) && cols(v) <= 1.0 => {
            // the first product's dot products (per row of X) and the second's multiply-adds
            // in the same pass over the row
            product(w, (rows(x), cols(x), cols(v)), true, true, nnz(x), nnz(v))
                + rows(x) * cols(x) * cols(v) * w.dense_fma
                + rows(v) * cols(v) * w.dense_cell
        }
        // a matrix v: per row of X and column of v, a dot product of the row with the column
        // and an axpy of the row into that column of the `n x k` accumulator (short vectors
        // of X's width: a fixed cost each, as the matrix-vector kernel's dots), and each row
        // streams the whole accumulator through memory when it outgrows the cache
        Ir::MMChain([x, _, v]) if dense(d(x)) => {
            let (r, n, k) = (rows(x), cols(x), cols(v));
            let acc = n * k;
            let stream = if acc > MMCHAIN_CACHED_CELLS {
                r * acc * w.dense_cell
            } else {
                0.0
            };
            r * k * 2.0 * w.vec_op + 2.0 * r * acc * w.dense_fma + stream + acc * w.dense_cell
        }
        Ir::MMChain([x, _, v]) => {
            2.0 * nnz(x) * cols(v) * w.sampled_fma + rows(v) * cols(v) * w.dense_cell
        }
        // the same pass, each row's product less its y
        Ir::MMChainR([x, v, y]) if dense(d(x)) => {
            product(w, (rows(x), cols(x), 1.0), true, true, nnz(x), nnz(v))
                + rows(x) * cols(x) * w.dense_fma
                + (rows(v) + rows(y)) * w.dense_cell
        }
        Ir::MMChainR([x, v, y]) => {
            2.0 * nnz(x) * w.sampled_fma + (rows(v) + rows(y)) * w.dense_cell
        }
        // the two products of X (one pass over a sparse X, each row read once for both, as
        // its CSR products by a narrow dense matrix; a dense X as the written operations:
        // `X %*% V` and the short-left kernel of `t(X) %*% R`, which scales rows of X, no dot
        // product per cell), and a few element-wise operations per row on P's row, nothing
        // of P's size written
        Ir::SMMChain([x, p, v]) => {
            let (r, k, c) = (rows(x), cols(x), cols(v));
            let products = if dense(d(x)) {
                product(w, (r, k, c), true, true, nnz(x), nnz(v)) + r * k * c * w.dense_fma
            } else {
                // each stored entry visited once, for the multiply-adds of both products
                nnz(x) * (w.sparse_visit + 2.0 * c * w.sparse_fma)
            };
            products + 4.0 * rows(p) * cols(p) * w.dense_cell + rows(v) * cols(v) * w.dense_cell
        }
        Ir::Exp(a) | Ir::Log(a) | Ir::Sigmoid(a) | Ir::Sqrt(a) => {
            // sqrt keeps zeros (only the non-zeros of a sparse operand are computed); the
            // others map every cell
            let calls = if matches!(enode, Ir::Sqrt(_)) && !dense(d(a)) {
                nnz(a)
            } else {
                rows(a) * cols(a)
            };
            calls * w.transcendental + largest
        }
        Ir::Fill([_, r, c]) => {
            let (r, c) = (eg[*r].data.konst, eg[*c].data.konst);
            r.zip(c).map_or(0.0, |(r, c)| r * c) * w.dense_cell
        }
        // sums read their operand's stored entries once (a sparse one is not written, as
        // `store` would charge it) and write their result
        Ir::MSum(a) | Ir::RowSums(a) | Ir::ColSums(a) => {
            let read = if dense(d(a)) {
                rows(a) * cols(a)
            } else {
                nnz(a)
            };
            // a sum of few values runs on one thread, a compensated add per value (row and
            // column sums of a small operand too: charged alike, so that a full sum is
            // never cheaper split into row sums)
            let per = if read <= SEQ_CELLS as f64 {
                w.serial_sum
            } else {
                w.dense_cell
            };
            read * per + store(w, own)
        }
        // element-wise operators, transposes: read and write cells
        _ => largest,
    };
    work + w.call
}

impl CostFunction<Ir> for NnzCost<'_> {
    type Cost = f64;

    fn cost<C>(&mut self, enode: &Ir, mut costs: C) -> f64
    where
        C: FnMut(Id) -> f64,
    {
        // egg's extractor does not say which class the node is in: look it up
        let own = match self.egraph.lookup(enode.clone()) {
            Some(class) => node_cost(self.egraph, class, enode),
            None => f64::INFINITY,
        };
        enode.fold(own, |acc, c| acc + costs(c))
    }
}

/// The cheapest plan of `root` by greedy bottom-up (tree) extraction, with its cost.
pub fn greedy(eg: &EG, root: Id) -> (f64, RecExpr<Ir>) {
    Extractor::new(eg, NnzCost { egraph: eg }).find_best(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cost of the root of `expr` alone and of the whole expression (every node once), with
    /// dense matrix variables of the given shapes.
    fn costs(expr: &str, vars: &[(&str, usize, usize)]) -> (f64, f64) {
        use crate::analysis::{Context, VarInfo};
        let mut ctx = Context::default();
        for &(n, r, c) in vars {
            ctx.vars.insert(
                egg::Symbol::from(n),
                VarInfo::Matrix {
                    rows: r,
                    cols: c,
                    nnz: (r * c) as f64,
                    finite: true,
                },
            );
        }
        let e: RecExpr<Ir> = expr.parse().expect("expression");
        let mut eg = EG::new(ctx);
        let root = eg.add_expr(&e);
        eg.rebuild();
        let total = e
            .as_ref()
            .iter()
            .map(|n| node_cost_with(&WEIGHTS, &eg, eg.lookup(n.clone()).expect("added"), n))
            .sum();
        let node = eg[root].nodes[0].clone();
        (node_cost_with(&WEIGHTS, &eg, root, &node), total)
    }

    /// A sum of few values is one serial chain of compensated adds: charged per value at
    /// `serial_sum`, and never cheaper split into row or column sums first; a large one runs
    /// in lanes at `dense_cell`. A dense matrix-vector product pays a dot product per row.
    #[test]
    fn small_sums_are_serial_and_matrix_vector_products_pay_per_dot() {
        let (small, _) = costs("(msum A)", &[("A", 20000, 10)]);
        assert_eq!(small, 200000.0 * WEIGHTS.serial_sum + WEIGHTS.call);
        let (_, split) = costs("(msum (rowSums A))", &[("A", 20000, 10)]);
        assert!(split > small, "{split} > {small}");
        let (_, split) = costs("(msum (colSums A))", &[("A", 20000, 10)]);
        assert!(split > small, "{split} > {small}");
        let (large, _) = costs("(msum A)", &[("A", 2000, 2000)]);
        assert_eq!(large, 4e6 * WEIGHTS.dense_cell + WEIGHTS.call);
        let (mv, _) = costs("(mmul A b)", &[("A", 20000, 10), ("b", 10, 1)]);
        let dots = 20000.0 * WEIGHTS.vec_op;
        let rest = 20000.0 * (WEIGHTS.dense_cell + 10.0 * WEIGHTS.dense_fma) + WEIGHTS.call;
        assert!((mv - (dots + rest)).abs() <= 1e-6 * mv, "{mv}");
    }

    /// `mmchain` of a dense X with a matrix v pays a short dot product and axpy per row of X
    /// and column of v, and an accumulator (X's columns times v's) larger than the cache is
    /// streamed once per row of X: dense ALS-CG's `t(V) %*% (t(W) * (V %*% t(S)))` (a 10 x
    /// 100000 accumulator per row of V) ran 250 ms where the dense-product charge alone
    /// said 60.
    #[test]
    fn a_dense_mmchain_with_a_matrix_v_pays_per_column_and_for_a_large_accumulator() {
        let wide = [("X", 500, 10), ("w", 500, 100000), ("v", 10, 100000)];
        let (cost, _) = costs("(mmchain X w v)", &wide);
        let (r, n, k) = (500.0, 10.0, 100000.0);
        assert!(cost >= r * k * 2.0 * WEIGHTS.vec_op + r * n * k * WEIGHTS.dense_cell);
        // a small accumulator stays in the cache: no streaming charge
        let narrow = [("X", 100000, 10), ("w", 100000, 5), ("v", 10, 5)];
        let (cost, _) = costs("(mmchain X w v)", &narrow);
        let (r, n, k) = (100000.0, 10.0, 5.0);
        assert!(cost >= r * k * 2.0 * WEIGHTS.vec_op);
        assert!(cost < r * k * 2.0 * WEIGHTS.vec_op + r * n * k * WEIGHTS.dense_cell);
    }

    /// A sampled product over a dense driver costs its non-zeros (gathered, a cell each, and
    /// their dot products), not a dense result of the driver's size: over the half-zero
    /// mask of dense data it is half what it is over a full one, and below the full one's
    /// store of every cell plus the dot products.
    #[test]
    fn a_sampled_product_over_a_dense_driver_costs_its_non_zeros() {
        use crate::analysis::{Context, VarInfo};
        let cost = |nnz: f64| {
            let mut ctx = Context::default();
            for (n, r, c, z) in [
                ("W", 100000, 500, nnz),
                ("S", 100000, 10, 1e6),
                ("V", 500, 10, 5000.0),
            ] {
                let info = VarInfo::Matrix {
                    rows: r,
                    cols: c,
                    nnz: z,
                    finite: true,
                };
                ctx.vars.insert(egg::Symbol::from(n), info);
            }
            let e: RecExpr<Ir> = "(sddmm W S V)".parse().expect("expression");
            let mut eg = EG::new(ctx);
            let root = eg.add_expr(&e);
            eg.rebuild();
            let node = eg[root].nodes[0].clone();
            node_cost_with(&WEIGHTS, &eg, root, &node)
        };
        let (half, full) = (cost(2.5e7), cost(5e7));
        let per = 10.0 * WEIGHTS.sampled_fma + WEIGHTS.dense_cell;
        assert!(
            (half - (2.5e7 * per + WEIGHTS.call)).abs() <= 1e-6 * half,
            "{half}"
        );
        assert!((full - 2.0 * half).abs() <= 1e-3 * full, "{half} {full}");
    }

    #[test]
    fn weight_overrides_parse_round_trip_and_reject_bad_input() {
        let w = WEIGHTS
            .with_overrides("dense_fma=0.5, call=7")
            .expect("valid");
        assert_eq!(w.dense_fma, 0.5);
        assert_eq!(w.call, 7.0);
        assert_eq!(w.sparse_cell, WEIGHTS.sparse_cell);
        let back = WEIGHTS
            .with_overrides(&w.to_overrides())
            .expect("round trip");
        assert_eq!(back, w);
        for bad in ["dense_fma", "dense_fma=x", "speed=1", "call=-1", "call=inf"] {
            assert!(WEIGHTS.with_overrides(bad).is_err(), "{bad}");
        }
    }
}
