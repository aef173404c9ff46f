//! Cell-wise fusion of a plan's element-wise operators ([`spores_runtime::kernels::cellwise`]).
//!
//! Before a term runs, [`regions`] finds the element-wise nodes that can be computed inside
//! their consumer's pass: an element-wise node (`*`, `+`, `-`, `/`, `^`, unary minus, `exp`,
//! `log`, `sqrt`, `abs`, `sigmoid`, `X != 0`, `sprop`) of a matrix shape known from the
//! inputs, used once, not a root, whose consumer is an element-wise node of the same shape or
//! a `sum` or `rowSums` of it. Such a node is *interior*: it is never formed. The consumer
//! that is not itself interior is the region's *top*; when it runs, [`run`] turns the region
//! into a program over the region's leaves (the values of the nodes feeding it: scalars,
//! dense matrices of the region's shape, row and column vectors) and runs it in one pass.
//!
//! The program computes what the operators one at a time compute, cell for cell and in the
//! same order of additions (see the kernel's essay), including the n-ary form of a chain of
//! `+` or `*` over matrices of one shape that the unfused plan runs (`builtins::nary`:
//! scalars first, then the matrices in order). Whenever that equality could fail, [`run`]
//! returns `None` and the caller runs the region's nodes one at a time as before: a leaf
//! stored sparse (the sparse kernels skip its zeros), an operand whose shape does not fit, a
//! `sum(v1 * v2)` of column vectors (a dot product, as the program as written runs it), or an
//! intermediate that the unfused plan would have stored sparse (known from the non-zeros the
//! kernel counts: a sparse intermediate has `+0.0` where a dense one may have `-0.0`, and a
//! sum over it skips its zeros).
//!
//! A region that forms cells and a later `sum` region that reads them ([`pairs`]) run in one
//! pass ([`run_pair`], [`Program::run_then_sum`]): the sum reads each block of the cells
//! while it is in the cache, instead of reading the whole result back from memory.

use super::Val;
use crate::ir::Ir;
use egg::{Id, Language, Symbol};
use spores_runtime::kernels::aggregate::SEQ_CELLS;
use spores_runtime::kernels::broadcast_shape;
use spores_runtime::kernels::cellwise::{Fused, Inst, Leaf, Out, Program, Reduce, Src};
use spores_runtime::matrix::{dense_to_csr, exam_sparse, prefers_sparse, prefers_sparse_estimated};
use spores_runtime::ops::{BinOp, UnaryOp};
use spores_runtime::Matrix;
use std::collections::HashMap;
use std::sync::Arc;

/// Cells below which a region runs as its operators one at a time (the program's set-up
/// would cost more than the intermediates).
const MIN_CELLS: usize = 1 << 11;

/// A node's shape as far as it is known before running: a scalar or a matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    Scalar,
    Mat(usize, usize),
}

fn val_shape(v: &Val) -> Shape {
    match v {
        Val::Scalar(_) => Shape::Scalar,
        Val::Matrix(m) => Shape::Mat(m.rows(), m.cols()),
    }
}

/// The shape of every node of a plan, from the shapes of its inputs; `None` where it is not
/// known (an operator this pass does not model). Only a guide for [`regions`]: [`run`] checks
/// the actual shapes again.
pub(super) fn shapes(nodes: &[Ir], vars: &HashMap<Symbol, Val>) -> Vec<Option<Shape>> {
    use Shape::{Mat, Scalar};
    let mut out: Vec<Option<Shape>> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let sh = |i: &Id| out[usize::from(*i)];
        let num = |i: &Id| match &nodes[usize::from(*i)] {
            Ir::Num(c) if c.get() >= 0.0 && c.get().fract() == 0.0 => Some(c.get() as usize),
            _ => None,
        };
        let s = match node {
            Ir::Num(_) => Some(Scalar),
            Ir::Symbol(name) => vars.get(name).map(val_shape),
            Ir::MMul([a, b]) => match (sh(a), sh(b)) {
                (Some(Mat(r, _)), Some(Mat(_, c))) => Some(Mat(r, c)),
                _ => None,
            },
            Ir::TMMul([a, b]) => match (sh(a), sh(b)) {
                (Some(Mat(_, r)), Some(Mat(_, c))) => Some(Mat(r, c)),
                _ => None,
            },
            Ir::Trans(a) => match sh(a) {
                Some(Mat(r, c)) => Some(Mat(c, r)),
                s => s,
            },
            Ir::EMul([a, b])
            | Ir::Join([a, b])
            | Ir::EAdd([a, b])
            | Ir::Union([a, b])
            | Ir::ESub([a, b])
            | Ir::EDiv([a, b])
            | Ir::EPow([a, b])
            | Ir::Pow([a, b]) => match (sh(a), sh(b)) {
                (Some(Scalar), Some(Scalar)) => Some(Scalar),
                (Some(Scalar), Some(m)) | (Some(m), Some(Scalar)) => Some(m),
                (Some(Mat(r1, c1)), Some(Mat(r2, c2))) => {
                    broadcast_shape((r1, c1), (r2, c2)).map(|(r, c)| Mat(r, c))
                }
                _ => None,
            },
            Ir::Neg(a)
            | Ir::Exp(a)
            | Ir::Log(a)
            | Ir::Sqrt(a)
            | Ir::Abs(a)
            | Ir::Sigmoid(a)
            | Ir::Nz(a)
            | Ir::Sprop(a) => sh(a),
            Ir::MSum(_) | Ir::AsScalar(_) | Ir::WsLoss(_) | Ir::WsLossW(_) | Ir::Wcemm(_) => {
                Some(Scalar)
            }
            Ir::RowSums(a) => match sh(a) {
                Some(Mat(r, _)) => Some(Mat(r, 1)),
                _ => None,
            },
            Ir::ColSums(a) => match sh(a) {
                Some(Mat(_, c)) => Some(Mat(1, c)),
                _ => None,
            },
            Ir::Fill([_, r, c]) => match (num(r), num(c)) {
                (Some(r), Some(c)) => Some(Mat(r, c)),
                _ => None,
            },
            Ir::Sddmm([x, ..]) => sh(x),
            Ir::WDivMM([x, _, v, _]) | Ir::WSubMM([_, x, _, v]) => match (sh(x), sh(v)) {
                (Some(Mat(r, _)), Some(Mat(_, c))) => Some(Mat(r, c)),
                _ => None,
            },
            Ir::WDivMMT([x, u, ..]) | Ir::WSubMMT([_, x, u, _]) => match (sh(u), sh(x)) {
                (Some(Mat(_, r)), Some(Mat(_, c))) => Some(Mat(r, c)),
                _ => None,
            },
            Ir::MMChain([x, _, v]) | Ir::SMMChain([x, _, v]) => match (sh(x), sh(v)) {
                (Some(Mat(_, r)), Some(Mat(_, c))) => Some(Mat(r, c)),
                _ => None,
            },
            _ => None,
        };
        out.push(s);
    }
    out
}

/// Whether a node is an element-wise operator a region may hold.
fn is_cell(node: &Ir) -> bool {
    matches!(
        node,
        Ir::EMul(_)
            | Ir::Join(_)
            | Ir::EAdd(_)
            | Ir::Union(_)
            | Ir::ESub(_)
            | Ir::EDiv(_)
            | Ir::EPow(_)
            | Ir::Pow(_)
            | Ir::Neg(_)
            | Ir::Exp(_)
            | Ir::Log(_)
            | Ir::Sqrt(_)
            | Ir::Abs(_)
            | Ir::Sigmoid(_)
            | Ir::Nz(_)
            | Ir::Sprop(_)
    )
}

/// The operands of `sum(x * y)` or `sum(x ^ 2)` (`x * x`).
fn dot_like(nodes: &[Ir], a: Id) -> Option<(Id, Id)> {
    super::dot_operands(nodes, a)
}

/// The fusion regions of a plan.
#[derive(Clone, Debug, Default)]
pub(super) struct Regions {
    /// nodes computed inside their region's pass, never formed
    pub interior: Vec<bool>,
    /// the nodes whose evaluation runs a region
    pub top: Vec<bool>,
    /// the top of each interior node's region
    owner: Vec<Option<usize>>,
}

impl Regions {
    /// The interior nodes of the region whose top is `top`, in order.
    pub fn members(&self, top: usize) -> Vec<usize> {
        (0..self.owner.len())
            .filter(|&i| self.owner[i] == Some(top))
            .collect()
    }
}

/// The context [`regions`] and [`run`] read: the plan and the evaluator's facts about it.
pub(super) struct Plan<'a> {
    pub nodes: &'a [Ir],
    /// nodes a consumer's kernel reads without forming them (`raise`'s `lazy`)
    pub lazy: &'a [bool],
    /// inner links of a chain of `+` or `*` run by the chain's top (`raise`'s `chained`)
    pub chained: &'a [bool],
    /// sums whose order the program does not fix (`raise`'s `unordered`): they run in the
    /// parallel sum's blocks at any size ([`Reduce::SumAnyOrder`])
    pub unordered: &'a [bool],
}

impl Plan<'_> {
    /// The operands of a node as its evaluation reads them: a chain's top reads the chain's
    /// operands (its inner links are not formed).
    fn operands(&self, i: usize) -> Vec<Id> {
        let node = &self.nodes[i];
        if node
            .children()
            .iter()
            .any(|c| self.chained[usize::from(*c)])
        {
            let mut out = Vec::new();
            super::chain_leaves(self.nodes, self.chained, node, &mut out);
            out
        } else {
            node.children().to_vec()
        }
    }

    fn has_lazy_child(&self, i: usize) -> bool {
        self.nodes[i]
            .children()
            .iter()
            .any(|c| self.lazy[usize::from(*c)])
    }
}

/// Finds the regions of a plan (see the module documentation); `uses` counts each node's
/// consumers, roots included.
pub(super) fn regions(
    p: &Plan<'_>,
    roots: &[Id],
    uses: &[usize],
    shapes: &[Option<Shape>],
) -> Regions {
    let len = p.nodes.len();
    let mut root = vec![false; len];
    for r in roots {
        root[usize::from(*r)] = true;
    }
    // the node whose evaluation reads each node (a chain's inner links read nothing)
    let mut reader = vec![None; len];
    for i in 0..len {
        if p.chained[i] {
            continue;
        }
        for c in p.operands(i) {
            reader[usize::from(c)].get_or_insert(i);
        }
    }
    let mut interior = vec![false; len];
    for c in 0..len {
        let node = &p.nodes[c];
        if !is_cell(node) || p.chained[c] || root[c] || uses[c] != 1 || p.has_lazy_child(c) {
            continue;
        }
        let Some(r) = reader[c] else { continue };
        // `X ^ k` read by a rowSums is lazy (run by rowSums' own kernel on a sparse X); on a
        // dense X the region runs it, else the rowSums falls back to that kernel
        let lazy_ok = matches!((node, &p.nodes[r]), (Ir::EPow(_), Ir::RowSums(_)));
        if p.lazy[c] && !lazy_ok {
            continue;
        }
        let Some(Shape::Mat(rows, cols)) = shapes[c] else {
            continue;
        };
        interior[c] = match &p.nodes[r] {
            n if is_cell(n) => {
                shapes[r] == Some(Shape::Mat(rows, cols)) && !p.has_lazy_child(r) && !p.lazy[r]
            }
            Ir::RowSums(_) => true,
            // a dot product of column vectors stays one (`raise`'s dot case); so does the sum
            // of the product of two formed matrices of at most SEQ_CELLS cells in SystemDS's
            // order: fused, it saves only the product's matrix, and there the parallel
            // product and the sum's own kernel beat the fused sum's one sequential pass
            // (sum_xuv: 2.3 ms fused against 1.7 ms); past SEQ_CELLS, or when the sum's
            // order is free (a sum the plan made, `sum(U * (X %*% V))`), the fused sum runs
            // in parallel too and saves writing and reading the product
            Ir::MSum(a) => !dot_like(p.nodes, *a).is_some_and(|(x, y)| {
                let (x, y) = (usize::from(x), usize::from(y));
                let (col, small) = match shapes[x] {
                    Some(Shape::Mat(r, c)) => (c == 1, r.saturating_mul(c) <= SEQ_CELLS),
                    _ => (false, true),
                };
                let small = small && !p.unordered[r];
                shapes[x] == shapes[y] && (col || (!interior[x] && !interior[y] && small))
            }),
            _ => false,
        };
    }
    let mut top = vec![false; len];
    let mut owner = vec![None; len];
    for c in 0..len {
        if interior[c] {
            let mut r = reader[c].expect("an interior node has a reader");
            while interior[r] {
                r = reader[r].expect("an interior node has a reader");
            }
            top[r] = true;
            owner[c] = Some(r);
        }
    }
    Regions {
        interior,
        top,
        owner,
    }
}

/// The leaves of the region whose top is `top` (the nodes its pass reads), in order.
fn region_leaves(p: &Plan<'_>, regions: &Regions, top: usize) -> Vec<usize> {
    let mut members = regions.members(top);
    members.push(top);
    let mut leaves: Vec<usize> = members
        .iter()
        .flat_map(|&i| p.operands(i))
        .map(usize::from)
        .filter(|&c| !regions.interior[c])
        .collect();
    leaves.sort_unstable();
    leaves.dedup();
    leaves
}

/// The work of a fused region for `--stats`: its leaves read once and its result written once,
/// one operation per cell and region node.
pub(super) fn work(
    p: &Plan<'_>,
    regions: &Regions,
    top: usize,
    vals: &[Val],
    out: &Val,
) -> super::work::Work {
    let members = regions.members(top).len() + 1;
    let leaves = region_leaves(p, regions, top);
    let cells = match &p.nodes[top] {
        Ir::MSum(a) | Ir::RowSums(a) => region_shape(p, regions, usize::from(*a), vals, None),
        _ => region_shape(p, regions, top, vals, None),
    }
    .map_or(0.0, |(m, n)| (m * n) as f64);
    let bytes = super::work::value_bytes;
    super::work::Work {
        bytes: leaves.iter().map(|&c| bytes(&vals[c])).sum::<f64>() + bytes(out),
        flops: cells * members as f64,
    }
}

/// How the operators one at a time would store an instruction's result, from its non-zeros.
#[derive(Clone, Debug)]
enum Store {
    /// an element-wise result (`kernels::binary`, `kernels::unary`): SystemDS's
    /// `examSparsity` of a result the constructors stored
    Examined,
    /// a constructor's rule only (`Matrix::from_dense`: `sprop`, n-ary accumulations)
    Stored,
    /// the n-ary `+` or `*` of these operands (`kernels::elementwise::nary`'s rule)
    Nary(BinOp, Vec<Src>),
}

/// A program under construction.
struct Builder<'v> {
    p: &'v Plan<'v>,
    vals: &'v [Val],
    regions: &'v Regions,
    shape: (usize, usize),
    leaves: Vec<Leaf<'v>>,
    /// the matrix behind each leaf (`None` for scalars), for the n-ary rule's non-zeros
    leaf_mats: Vec<Option<&'v Arc<Matrix>>>,
    leaf_of: HashMap<usize, usize>,
    insts: Vec<Inst>,
    stores: Vec<Store>,
    /// a node not computed yet whose cells this program reads as they are made
    /// ([`Leaf::Cells`]: the program runs after that node's own, [`run_pair`]), and its shape
    pending: Option<(usize, (usize, usize))>,
    /// the non-zeros of the pending node's cells, once they are made
    pending_nnz: usize,
}

/// What a node's value is as far as a program is concerned.
#[derive(Clone, Copy)]
enum Kind {
    Scalar(f64),
    Mat((usize, usize)),
}

/// The kind of node `c`: from its value, or the pending node's shape.
fn kind(vals: &[Val], pending: Option<(usize, (usize, usize))>, c: usize) -> Kind {
    match pending {
        Some((p, shape)) if p == c => Kind::Mat(shape),
        _ => match &vals[c] {
            Val::Scalar(s) => Kind::Scalar(*s),
            Val::Matrix(m) => Kind::Mat(m.shape()),
        },
    }
}

impl<'v> Builder<'v> {
    fn leaf(&mut self, i: usize) -> Option<Src> {
        if let Some(&k) = self.leaf_of.get(&i) {
            return Some(Src::Leaf(k));
        }
        let (m, n) = self.shape;
        if self
            .pending
            .is_some_and(|(p, shape)| p == i && shape == (m, n))
        {
            self.leaves.push(Leaf::Cells);
            self.leaf_mats.push(None);
            let k = self.leaves.len() - 1;
            self.leaf_of.insert(i, k);
            return Some(Src::Leaf(k));
        }
        if self.pending.is_some_and(|(p, _)| p == i) {
            return None;
        }
        let (leaf, mat) = match &self.vals[i] {
            Val::Scalar(x) => (Leaf::Scalar(*x), None),
            Val::Matrix(a) => {
                let Matrix::Dense(d) = &**a else {
                    return None;
                };
                let s = d.as_slice()?;
                let leaf = match a.shape() {
                    sh if sh == (m, n) => Leaf::Full(s),
                    (1, 1) => Leaf::Scalar(s[0]),
                    (r, 1) if r == m => Leaf::Col(s),
                    (1, c) if c == n => Leaf::Row(s),
                    _ => return None,
                };
                (leaf, Some(a))
            }
        };
        self.leaves.push(leaf);
        self.leaf_mats.push(mat);
        let k = self.leaves.len() - 1;
        self.leaf_of.insert(i, k);
        Some(Src::Leaf(k))
    }

    fn scalar(&mut self, v: f64) -> Src {
        self.leaves.push(Leaf::Scalar(v));
        self.leaf_mats.push(None);
        Src::Leaf(self.leaves.len() - 1)
    }

    /// The shape an operand has as a value of its own.
    fn src_shape(&self, s: Src) -> (usize, usize) {
        match s {
            Src::Reg(_) => self.shape,
            Src::Leaf(k) => match &self.leaves[k] {
                Leaf::Scalar(_) => (1, 1),
                Leaf::Full(_) | Leaf::Cells => self.shape,
                Leaf::Col(c) => (c.len(), 1),
                Leaf::Row(r) => (1, r.len()),
            },
        }
    }

    fn push(&mut self, inst: Inst, store: Store) -> Src {
        self.insts.push(inst);
        self.stores.push(store);
        Src::Reg(self.insts.len() - 1)
    }

    /// An operand of a region node: the region's own computation or a leaf.
    fn operand(&mut self, i: usize) -> Option<Src> {
        if self.regions.interior[i] {
            self.node(i)
        } else {
            self.leaf(i)
        }
    }

    /// `a op b`, if its result has the region's shape.
    fn binary(&mut self, op: BinOp, a: Src, b: Src, store: Store) -> Option<Src> {
        let sh = broadcast_shape(self.src_shape(a), self.src_shape(b))?;
        (sh == self.shape).then(|| self.push(Inst::Bin(op, a, b), store))
    }

    /// The instructions of region node `i`.
    fn node(&mut self, i: usize) -> Option<Src> {
        let nodes = self.p.nodes;
        let node = &nodes[i];
        let chain = node
            .children()
            .iter()
            .any(|c| self.p.chained[usize::from(*c)]);
        if chain {
            return self.chain(i);
        }
        let un = |op: UnaryOp| Some((op, node.children()[0]));
        let unary = match node {
            Ir::Neg(_) => un(UnaryOp::Neg),
            Ir::Exp(_) => un(UnaryOp::Exp),
            Ir::Log(_) => un(UnaryOp::Log),
            Ir::Sqrt(_) => un(UnaryOp::Sqrt),
            Ir::Abs(_) => un(UnaryOp::Abs),
            Ir::Sigmoid(_) => un(UnaryOp::Sigmoid),
            _ => None,
        };
        if let Some((op, a)) = unary {
            let a = self.operand(usize::from(a))?;
            return (self.src_shape(a) == self.shape)
                .then(|| self.push(Inst::Un(op, a), Store::Examined));
        }
        match node {
            Ir::Nz(a) => {
                let a = self.operand(usize::from(*a))?;
                let zero = self.scalar(0.0);
                self.binary(BinOp::Ne, a, zero, Store::Examined)
            }
            Ir::Sprop(a) => {
                let a = self.operand(usize::from(*a))?;
                (self.src_shape(a) == self.shape).then(|| self.push(Inst::Sprop(a), Store::Stored))
            }
            _ => {
                let op = match node {
                    Ir::EMul(_) | Ir::Join(_) => BinOp::Mul,
                    Ir::EAdd(_) | Ir::Union(_) => BinOp::Add,
                    Ir::ESub(_) => BinOp::Sub,
                    Ir::EDiv(_) => BinOp::Div,
                    Ir::EPow(_) | Ir::Pow(_) => BinOp::Pow,
                    _ => return None,
                };
                let [a, b] = node.children() else {
                    return None;
                };
                let a = self.operand(usize::from(*a))?;
                let b = self.operand(usize::from(*b))?;
                self.binary(op, a, b, Store::Examined)
            }
        }
    }

    /// A chain's top: `builtins::nary`'s n-ary operation when its operands are scalars and
    /// matrices of one shape, else the links two at a time as the plan nests them.
    fn chain(&mut self, i: usize) -> Option<Src> {
        let nodes = self.p.nodes;
        let op = match &nodes[i] {
            Ir::EAdd(_) | Ir::Union(_) => BinOp::Add,
            Ir::EMul(_) | Ir::Join(_) => BinOp::Mul,
            _ => return None,
        };
        let leaves = self.p.operands(i);
        let nary = leaves.iter().all(|c| {
            let c = usize::from(*c);
            self.regions.interior[c]
                || match kind(self.vals, self.pending, c) {
                    Kind::Scalar(_) => true,
                    Kind::Mat(shape) => shape == self.shape,
                }
        });
        if !nary {
            return self.link(i, op);
        }
        // the scalars first (0 + s1 + ..., 1 * s1 * ...), then the matrices in order
        let mut init = if op == BinOp::Add { 0.0 } else { 1.0 };
        let mut mats = Vec::new();
        for c in &leaves {
            let c = usize::from(*c);
            match (kind(self.vals, self.pending, c), self.regions.interior[c]) {
                (Kind::Scalar(s), false) => init = op.apply(init, s),
                _ => mats.push(self.operand(c)?),
            }
        }
        let mut acc = self.scalar(init);
        let last = mats.len().checked_sub(1)?;
        for (k, &m) in mats.iter().enumerate() {
            let store = if k == last {
                Store::Nary(op, mats.clone())
            } else {
                Store::Stored
            };
            acc = self.binary(op, acc, m, store)?;
        }
        Some(acc)
    }

    /// A chain's links two at a time, as the plan nests them (`raise`'s `chain_tree`).
    fn link(&mut self, i: usize, op: BinOp) -> Option<Src> {
        let [a, b] = self.p.nodes[i].children() else {
            return None;
        };
        let mut side = |c: &Id| {
            let c = usize::from(*c);
            if self.p.chained[c] {
                self.link(c, op)
            } else {
                self.operand(c)
            }
        };
        let (a, b) = (side(a)?, side(b)?);
        self.binary(op, a, b, Store::Examined)
    }

    /// Non-zeros of an operand after the run.
    fn src_nnz(&self, s: Src, fused: &Fused) -> usize {
        match s {
            Src::Reg(k) => fused.nnz[k],
            Src::Leaf(k) if matches!(self.leaves[k], Leaf::Cells) => self.pending_nnz,
            Src::Leaf(k) => self.leaf_mats[k].map_or(1, |m| m.nnz()),
        }
    }

    /// Whether the operators one at a time would store instruction `k`'s result sparse.
    fn sparse(&self, k: usize, fused: &Fused) -> bool {
        let (m, n) = self.shape;
        let nnz = fused.nnz[k];
        match &self.stores[k] {
            Store::Examined => prefers_sparse(m, n, nnz) && exam_sparse(m, n, nnz),
            Store::Stored => prefers_sparse(m, n, nnz),
            Store::Nary(op, operands) => {
                let counts: Vec<usize> = operands.iter().map(|s| self.src_nnz(*s, fused)).collect();
                let estimated = match op {
                    BinOp::Add => counts.iter().sum::<usize>().min(m * n),
                    _ => counts.iter().copied().min().unwrap_or(0),
                };
                // the accumulation as the constructors stored it, then the estimate's rule
                // (`nary`'s last match)
                prefers_sparse_estimated(m, n, estimated)
            }
        }
    }
}

/// A region's program as built from the plan, before it runs.
struct Built<'v> {
    b: Builder<'v>,
    reduce: Reduce,
}

impl Built<'_> {
    fn program(&self) -> Program<'_> {
        Program {
            rows: self.b.shape.0,
            cols: self.b.shape.1,
            leaves: self.b.leaves.clone(),
            insts: self.b.insts.clone(),
        }
    }

    /// The region's value from its run, or `None` when an intermediate (or a reduced
    /// result's operand) would have been stored sparse by the operators one at a time.
    fn finish(&self, fused: Fused) -> Option<Val> {
        let b = &self.b;
        let last = b.insts.len() - 1;
        // every intermediate dense, as the operators one at a time would store it; and the
        // reduced result's operand too
        let keep_last = self.reduce == Reduce::Cells;
        let upto = if keep_last { last } else { last + 1 };
        if (0..upto).any(|k| b.sparse(k, &fused)) {
            return None;
        }
        let sparse_last = b.sparse(last, &fused);
        Some(match fused.out {
            Out::Sum(s) => Val::Scalar(s),
            Out::RowSums(r) => Val::Matrix(Arc::new(Matrix::from_dense(r))),
            Out::Cells(d) => {
                let nnz = fused.nnz[last];
                let out = if sparse_last {
                    Matrix::Sparse(dense_to_csr(&d, nnz))
                } else {
                    Matrix::Dense(d)
                };
                let out = Arc::new(out);
                crate::optimize::segment::know_finite(&out, fused.finite);
                Val::Matrix(out)
            }
        })
    }
}

/// The program of the region whose top is `top`, or `None` when the region must run as its
/// operators one at a time; `pending` is a node not computed yet that the program reads as
/// [`Leaf::Cells`], with its shape.
fn build<'v>(
    p: &'v Plan<'v>,
    regions: &'v Regions,
    top: usize,
    vals: &'v [Val],
    pending: Option<(usize, (usize, usize))>,
) -> Option<Built<'v>> {
    let nodes = p.nodes;
    let (reduce, root) = match &nodes[top] {
        Ir::MSum(a) if p.unordered[top] => (Reduce::SumAnyOrder, usize::from(*a)),
        Ir::MSum(a) => (Reduce::Sum, usize::from(*a)),
        Ir::RowSums(a) => (Reduce::RowSums, usize::from(*a)),
        _ => (Reduce::Cells, top),
    };
    let shape = region_shape(p, regions, root, vals, pending)?;
    if shape.0 * shape.1 < MIN_CELLS {
        return None;
    }
    let mut b = Builder {
        p,
        vals,
        regions,
        shape,
        leaves: Vec::new(),
        leaf_mats: Vec::new(),
        leaf_of: HashMap::new(),
        insts: Vec::new(),
        stores: Vec::new(),
        pending,
        pending_nnz: 0,
    };
    let result = b.node(root)?;
    if result != Src::Reg(b.insts.len() - 1) {
        return None;
    }
    if matches!(reduce, Reduce::Sum | Reduce::SumAnyOrder) {
        // sum(v1 * v2) of column vectors: the dot product of the program as written
        if let Some((x, y)) = dot_like(nodes, Id::from(root)) {
            let sh = |i: Id| {
                let i = usize::from(i);
                if regions.interior[i] {
                    Some(shape)
                } else {
                    match kind(vals, pending, i) {
                        Kind::Mat(shape) => Some(shape),
                        Kind::Scalar(_) => None,
                    }
                }
            };
            if shape.1 == 1 && sh(x).is_some() && sh(x) == sh(y) {
                return None;
            }
        }
    }
    Some(Built { b, reduce })
}

/// Runs the region whose top is node `top` over the values of its leaves (`vals`, the plan's
/// evaluated nodes), or `None` when it must run as its operators one at a time (see the
/// module documentation).
pub(super) fn run(p: &Plan<'_>, regions: &Regions, top: usize, vals: &[Val]) -> Option<Val> {
    let built = build(p, regions, top, vals, None)?;
    let fused = built.program().run(built.reduce);
    built.finish(fused)
}

/// The regions that can run in one pass with an earlier one ([`run_pair`]): for each region
/// top `t` whose region forms cells (not a sum), the first later region top `s`, a `sum`,
/// that reads `t` and otherwise only nodes before `t` (computed when `t` runs) and constants
/// and variables (`Num`, `Symbol`: the caller supplies their values). Such a sum over an
/// update's result (`R = R - alpha * HS; norm_R2 = sum(R ^ 2)`, `HS = ...; sum(S * HS)`)
/// otherwise reads the result back from memory.
pub(super) fn pairs(p: &Plan<'_>, regions: &Regions) -> Vec<Option<usize>> {
    let len = p.nodes.len();
    let mut partner = vec![None; len];
    for s in 0..len {
        if !regions.top[s] || !matches!(p.nodes[s], Ir::MSum(_)) {
            continue;
        }
        let leaves = region_leaves(p, regions, s);
        let mut computed = leaves
            .iter()
            .filter(|&&c| !matches!(p.nodes[c], Ir::Num(_) | Ir::Symbol(_)));
        let Some(&t) = computed.next_back() else {
            continue;
        };
        let cells_top = regions.top[t]
            && !matches!(p.nodes[t], Ir::MSum(_) | Ir::RowSums(_))
            && !p.lazy[t]
            && !p.chained[t];
        if cells_top && partner[t].is_none() {
            partner[t] = Some(s);
        }
    }
    partner
}

/// Runs the region whose top is `top`, forming cells, and in the same pass the sum region
/// `then` that reads them ([`pairs`]; [`Program::run_then_sum`]): `top`'s value, and
/// `then`'s unless the operators one at a time would not have given it (`top` stored
/// sparse, or an intermediate of `then` that would have been; `then` then runs on its own
/// later). `None` when `top` must run on its own: past [`run`]'s conditions, a sum of at most
/// `SEQ_CELLS` cells in SystemDS's order (one sequential pass; a sum in any order,
/// `Plan::unordered`, pairs at any size), or a program that does not
/// read `top` as cells of its own shape. `vals` holds the values of the nodes before `top`
/// and of the constants and variables after it that `then` reads (anything else there is
/// never read).
pub(super) fn run_pair(
    p: &Plan<'_>,
    regions: &Regions,
    top: usize,
    then: usize,
    vals: &[Val],
) -> Option<(Val, Option<Val>)> {
    let first = build(p, regions, top, vals, None)?;
    let shape = first.b.shape;
    let any_order = p.unordered[then];
    if first.reduce != Reduce::Cells || (shape.0 * shape.1 <= SEQ_CELLS && !any_order) {
        return None;
    }
    let mut second = build(p, regions, then, vals, Some((top, shape)))?;
    if !matches!(second.reduce, Reduce::Sum | Reduce::SumAnyOrder)
        || second.b.shape != shape
        || !second.b.leaves.iter().any(|l| matches!(l, Leaf::Cells))
    {
        return None;
    }
    let (fa, fb) = first.program().run_then_sum(&second.program(), any_order);
    let cells_nnz = fa.nnz[fa.nnz.len() - 1];
    let value = first.finish(fa)?;
    // a sparse result is a sparse leaf of the sum, which the sum's kernels read otherwise
    if matches!(&value, Val::Matrix(m) if m.is_sparse()) {
        return Some((value, None));
    }
    second.b.pending_nnz = cells_nnz;
    let sum = second.finish(fb);
    Some((value, sum))
}

/// The shape of a region node from its operands' values (each region node has it).
fn region_shape(
    p: &Plan<'_>,
    regions: &Regions,
    i: usize,
    vals: &[Val],
    pending: Option<(usize, (usize, usize))>,
) -> Option<(usize, usize)> {
    let mut shape: Option<(usize, usize)> = None;
    for c in p.operands(i) {
        let c = usize::from(c);
        let s = if regions.interior[c] {
            region_shape(p, regions, c, vals, pending)?
        } else {
            match kind(vals, pending, c) {
                Kind::Scalar(_) => (1, 1),
                Kind::Mat(shape) => shape,
            }
        };
        shape = Some(match shape {
            None => s,
            Some(t) => broadcast_shape(t, s)?,
        });
    }
    shape
}
