//! Stage 6, raise: runs an extracted LA term on the runtime's kernels, one kernel per node
//! (fused operators have their own kernels), each shared subterm once.

pub mod dml;
mod fuse;
pub mod work;

use crate::builtins;
use crate::check::hir::Scalar;
use crate::exec::Value;
use crate::ir::Ir;
use egg::{Id, Language, RecExpr, Symbol};
use spores_runtime::kernels::{self, Operand};
use spores_runtime::ops::{BinOp, UnaryOp};
use spores_runtime::Matrix;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A value of an evaluated term.
#[derive(Clone, Debug)]
pub enum Val {
    /// a scalar
    Scalar(f64),
    /// a matrix (shared with the executor's variables)
    Matrix(Arc<Matrix>),
}

fn mat(m: Matrix) -> Val {
    Val::Matrix(Arc::new(m))
}

/// The `--stats` name of an operator.
pub(crate) fn op_name(node: &Ir) -> &'static str {
    match node {
        Ir::MMul(_) => "%*%",
        Ir::Trans(_) => "t",
        Ir::EMul(_) | Ir::Join(_) => "*",
        Ir::EAdd(_) | Ir::Union(_) => "+",
        Ir::ESub(_) => "-",
        Ir::EDiv(_) => "/",
        Ir::EPow(_) | Ir::Pow(_) => "^",
        Ir::Neg(_) => "neg",
        Ir::Exp(_) => "exp",
        Ir::Log(_) => "log",
        Ir::Sqrt(_) => "sqrt",
        Ir::Abs(_) => "abs",
        Ir::Sigmoid(_) => "sigmoid",
        Ir::MSum(_) => "sum",
        Ir::RowSums(_) => "rowSums",
        Ir::ColSums(_) => "colSums",
        Ir::Fill(_) => "matrix",
        Ir::AsScalar(_) => "as.scalar",
        Ir::Nz(_) => "!=",
        Ir::Sddmm(_) => "sddmm",
        Ir::WsLoss(_) | Ir::WsLossW(_) => "wsloss",
        Ir::Wcemm(_) => "wcemm",
        Ir::WDivMM(_) | Ir::WDivMMT(_) => "wdivmm",
        Ir::WSubMM(_) | Ir::WSubMMT(_) => "wsubmm",
        Ir::MMChain(_) => "mmchain",
        Ir::MMChainR(_) => "mmchainr",
        Ir::SMMChain(_) => "smmchain",
        Ir::Sprop(_) => "sprop",
        Ir::TMMul(_) => "%*%",
        _ => "other",
    }
}

fn to_value(v: &Val) -> Value {
    match v {
        Val::Scalar(x) => Value::Scalar(Scalar::Double(*x)),
        Val::Matrix(m) => Value::Matrix(m.clone()),
    }
}

fn from_value(v: Value) -> Val {
    match v {
        Value::Scalar(s) => Val::Scalar(s.as_f64()),
        Value::Matrix(m) => Val::Matrix(m),
        // no operator of a plan yields a string
        Value::Str(_) | Value::List(_) => Val::Scalar(f64::NAN),
    }
}

impl Val {
    fn operand(&self) -> Operand<'_> {
        match self {
            Val::Scalar(s) => Operand::Scalar(*s),
            Val::Matrix(m) => Operand::Matrix(m),
        }
    }
}

/// Whether node `a` is a square `x ^ 2`.
fn is_square(nodes: &[Ir], a: Id) -> bool {
    matches!(&nodes[usize::from(a)], Ir::EPow([_, e]) | Ir::Pow([_, e])
        if matches!(&nodes[usize::from(*e)], Ir::Num(c) if c.get() == 2.0))
}

/// The operands of a product whose sum is a dot product: `x * y` where neither operand is
/// itself a product or a square, `x * x`, or `x ^ 2` (as `x * x`). SystemDS's simplifyDotProductSum
/// leaves `sum(x * y * z)` and `sum(x ^ 2 * y)` to its ternary aggregate (`tak+*`, a
/// compensated sum of the cells, as a sum of the formed product adds them).
fn dot_operands(nodes: &[Ir], a: Id) -> Option<(Id, Id)> {
    let product = |i: &Id| {
        matches!(&nodes[usize::from(*i)], Ir::EMul(_) | Ir::Join(_)) || is_square(nodes, *i)
    };
    match &nodes[usize::from(a)] {
        // `x * x` is SystemDS's `x ^ 2` (simplifyBinaryToUnaryOperation), a dot product
        // whatever x is
        Ir::EMul([x, y]) | Ir::Join([x, y]) if x == y || (!product(x) && !product(y)) => {
            Some((*x, *y))
        }
        Ir::EPow([x, _]) | Ir::Pow([x, _]) if is_square(nodes, a) => Some((*x, *x)),
        _ => None,
    }
}

/// A term that cannot be evaluated: a non-executable node, or an unbound variable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot evaluate: {0}")]
pub struct EvalError(pub String);

/// Evaluates an LA term with the given variables.
pub fn eval(expr: &RecExpr<Ir>, vars: &HashMap<Symbol, Val>) -> Result<Val, EvalError> {
    eval_with(expr, vars, &mut |_, _| {})
}

/// Evaluates an LA term, reporting the time of each kernel to `record`.
pub fn eval_with(
    expr: &RecExpr<Ir>,
    vars: &HashMap<Symbol, Val>,
    record: &mut dyn FnMut(&'static str, Duration),
) -> Result<Val, EvalError> {
    let root = Id::from(
        expr.as_ref()
            .len()
            .checked_sub(1)
            .ok_or_else(|| EvalError("empty term".into()))?,
    );
    Ok(eval_roots(expr, &[root], vars, record)?.remove(0))
}

/// Evaluates the nodes `roots` of an LA term (a block's outputs), each shared subterm once,
/// reporting the time of each kernel to `record`.
pub fn eval_roots(
    expr: &RecExpr<Ir>,
    roots: &[Id],
    vars: &HashMap<Symbol, Val>,
    record: &mut dyn FnMut(&'static str, Duration),
) -> Result<Vec<Val>, EvalError> {
    eval_roots_traced(
        expr,
        roots,
        vars,
        Some(&mut |s: &Step| record(s.op, s.time)),
    )
}

/// Whether node `p` is a product `A %*% B` whose operands are formed (neither a transpose
/// nor a sampled product that a product absorbs): one a subtraction may absorb.
fn plain_product(nodes: &[Ir], p: Id) -> bool {
    match &nodes[usize::from(p)] {
        Ir::MMul([l, _]) => !matches!(nodes[usize::from(*l)], Ir::Trans(_) | Ir::Sddmm(_)),
        _ => false,
    }
}

/// The operator of a link of an n-ary chain: `+` or `*`.
fn chain_op(n: &Ir) -> Option<BinOp> {
    match n {
        Ir::EAdd(_) | Ir::Union(_) => Some(BinOp::Add),
        Ir::EMul(_) | Ir::Join(_) => Some(BinOp::Mul),
        _ => None,
    }
}

/// One kernel call of [`eval_roots_traced`].
#[derive(Clone, Debug)]
pub struct Step {
    /// the node of the term
    pub index: usize,
    /// its `--stats` name
    pub op: &'static str,
    /// how long the kernel ran (wall time)
    pub time: Duration,
    /// the CPU time of the process while it ran (every thread of the kernel)
    pub cpu: Duration,
    /// the bytes and flops of the call
    pub work: work::Work,
    /// the nodes whose work this call did without forming them (the product of a
    /// `sum(sddmm)`, the products of `A %*% S - X %*% V`, the element-wise nodes of a fused
    /// region)
    pub absorbed: Vec<usize>,
}

/// The operands of the chain whose top is `node`, in order: its children, each chained child
/// (an inner link, not formed) replaced by its own operands.
fn chain_leaves(nodes: &[Ir], chained: &[bool], node: &Ir, out: &mut Vec<Id>) {
    for c in node.children() {
        if chained[usize::from(*c)] {
            chain_leaves(nodes, chained, &nodes[usize::from(*c)], out);
        } else {
            out.push(*c);
        }
    }
}

/// The chain whose top is `node` applied two operands at a time, as the plan nests it, to its
/// operands' values (taken in [`chain_leaves`]'s order from `vals`).
fn chain_tree(
    nodes: &[Ir],
    chained: &[bool],
    op: BinOp,
    node: &Ir,
    vals: &mut impl Iterator<Item = Value>,
) -> Value {
    let mut side = |c: &Id| {
        if chained[usize::from(*c)] {
            chain_tree(nodes, chained, op, &nodes[usize::from(*c)], vals)
        } else {
            vals.next().expect("a value per operand")
        }
    };
    let [a, b] = node.children() else {
        unreachable!("a chain's links are binary")
    };
    let (va, vb) = (side(a), side(b));
    builtins::binary(op, &va, &vb)
}

/// [`eval_roots`], reporting each kernel call with its node and work to `trace`; with `None`
/// nothing is timed or counted (the plain run, without `--stats`).
pub fn eval_roots_traced(
    expr: &RecExpr<Ir>,
    roots: &[Id],
    vars: &HashMap<Symbol, Val>,
    trace: Option<&mut dyn FnMut(&Step)>,
) -> Result<Vec<Val>, EvalError> {
    eval_plan_traced(expr, roots, &[], vars, trace)
}

/// [`eval_roots_traced`] for a plan whose `sum` nodes marked in `unordered` (one flag per
/// node of `expr`, or none) run in the parallel sum's blocks at any size
/// (`optimize::Plan::unordered`); every other sum keeps SystemDS's order.
pub fn eval_plan_traced(
    expr: &RecExpr<Ir>,
    roots: &[Id],
    unordered: &[bool],
    vars: &HashMap<Symbol, Val>,
    trace: Option<&mut dyn FnMut(&Step)>,
) -> Result<Vec<Val>, EvalError> {
    match split_additive_sums(expr, roots, unordered, vars) {
        Some((split, split_roots, flags)) => eval_split(&split, &split_roots, &flags, vars, trace),
        None => eval_split(expr, roots, unordered, vars, trace),
    }
}

/// How many consumers each node of a plan has: its parents' references, and one for each
/// time it is a root.
fn use_counts(nodes: &[Ir], roots: &[Id]) -> Vec<usize> {
    let mut uses = vec![0usize; nodes.len()];
    for node in nodes {
        for c in node.children() {
            uses[usize::from(*c)] += 1;
        }
    }
    for r in roots {
        uses[usize::from(*r)] += 1;
    }
    uses
}

/// `sum(A + B)` and `sum(A - B)` of matrices of one shape known before running, the sum
/// their only user, as `sum(A) + sum(B)` and `sum(A) - sum(B)`: SystemDS's
/// pushdownSumOnAdditiveBinary, which `--no-opt` follows too (each sum then as SystemDS runs
/// it: a dot product, or this split again). `None` when the plan has no such sum.
fn split_additive_sums(
    expr: &RecExpr<Ir>,
    roots: &[Id],
    unordered: &[bool],
    vars: &HashMap<Symbol, Val>,
) -> Option<(RecExpr<Ir>, Vec<Id>, Vec<bool>)> {
    let nodes = expr.as_ref();
    // the common case, no sum of a sum or difference, without the shapes and counts
    let additive = |a: &Id| matches!(&nodes[usize::from(*a)], Ir::EAdd(_) | Ir::ESub(_));
    if !nodes
        .iter()
        .any(|n| matches!(n, Ir::MSum(a) if additive(a)))
    {
        return None;
    }
    let shapes = fuse::shapes(nodes, vars);
    let uses = use_counts(nodes, roots);
    let splits = |a: Id| match &nodes[usize::from(a)] {
        Ir::EAdd([x, y]) | Ir::ESub([x, y]) if uses[usize::from(a)] == 1 => {
            let (sx, sy) = (shapes[usize::from(*x)], shapes[usize::from(*y)]);
            (matches!(sx, Some(fuse::Shape::Mat(..))) && sx == sy).then_some((*x, *y))
        }
        _ => None,
    };
    if !nodes
        .iter()
        .any(|n| matches!(n, Ir::MSum(a) if splits(*a).is_some()))
    {
        return None;
    }
    let mut out = RecExpr::default();
    // the flags of `out`'s nodes: a split sum's parts keep its own
    let mut flags: Vec<bool> = Vec::with_capacity(nodes.len());
    let mut map: Vec<Id> = Vec::with_capacity(nodes.len());
    // the sum of original node `a` in `out` (split again where it applies), each new sum
    // flagged `free`
    fn sum_of(
        a: Id,
        nodes: &[Ir],
        map: &[Id],
        out: &mut RecExpr<Ir>,
        flags: &mut Vec<bool>,
        free: bool,
        splits: &dyn Fn(Id) -> Option<(Id, Id)>,
    ) -> Id {
        let (node, flag) = match splits(a) {
            Some((x, y)) => {
                let (sx, sy) = (
                    sum_of(x, nodes, map, out, flags, free, splits),
                    sum_of(y, nodes, map, out, flags, free, splits),
                );
                let node = match &nodes[usize::from(a)] {
                    Ir::EAdd(_) => Ir::EAdd([sx, sy]),
                    _ => Ir::ESub([sx, sy]),
                };
                (node, false)
            }
            None => (Ir::MSum(map[usize::from(a)]), free),
        };
        flags.push(flag);
        out.add(node)
    }
    // the split operations themselves (used only by their sum) are not computed
    let mut dead = vec![false; nodes.len()];
    let mut stack: Vec<Id> = nodes
        .iter()
        .filter_map(|n| match n {
            Ir::MSum(a) => Some(*a),
            _ => None,
        })
        .collect();
    while let Some(a) = stack.pop() {
        if let Some((x, y)) = splits(a) {
            dead[usize::from(a)] = true;
            stack.extend([x, y]);
        }
    }
    let free = |i: usize| unordered.get(i).copied().unwrap_or(false);
    for (i, node) in nodes.iter().enumerate() {
        let id = match node {
            // never read: its only user is the sum split here
            _ if dead[i] => Id::from(0),
            Ir::MSum(a) if splits(*a).is_some() => {
                sum_of(*a, nodes, &map, &mut out, &mut flags, free(i), &splits)
            }
            n => {
                flags.push(free(i));
                out.add(n.clone().map_children(|c| map[usize::from(c)]))
            }
        };
        map.push(id);
    }
    let roots = roots.iter().map(|r| map[usize::from(*r)]).collect();
    Some((out, roots, flags))
}

/// [`eval_roots_traced`] after [`split_additive_sums`].
fn eval_split(
    expr: &RecExpr<Ir>,
    roots: &[Id],
    unordered: &[bool],
    vars: &HashMap<Symbol, Val>,
    mut trace: Option<&mut dyn FnMut(&Step)>,
) -> Result<Vec<Val>, EvalError> {
    let nodes = expr.as_ref();
    // a sum the plan made over a matrix the statements never form: any order
    let unordered: Vec<bool> = (0..nodes.len())
        .map(|i| unordered.get(i).copied().unwrap_or(false))
        .collect();
    // Operands that are never formed: a transpose used only as the left operand of products
    // (they run `t(A) %*% B` directly, `kernels::tmatmul`), `X != 0` used only as the
    // weights of a fused operator over the same X (its kernel drives on X's non-zeros), and
    // `X * (U %*% t(V))` used only by a `sum` (`kernels::sddmm_sum`: the same bits) or by a
    // product with its own factor, `S %*% V`, `t(S) %*% U` or `t(U) %*% S`
    // (`kernels::sddmm_mm`), and
    // `X ^ c` used only by a `rowSums` (`kernels::row_sums_mapped` on a sparse X: the same
    // bits; formed as written otherwise), and the two products of `A %*% S - X %*% V` used
    // only by the subtraction (`kernels::small_minus_csr_narrow` for a thin dense A and a
    // sparse X: the same bits; formed as written otherwise).
    // Also the product of `sum(x * y)` (or the square of `sum(x ^ 2)`) of column vectors of
    // a shape known before running, used only by the sum: the dot product reads x and y.
    let shapes = fuse::shapes(nodes, vars);
    let dot_product = |a: Id| {
        dot_operands(nodes, a).is_some_and(|(x, y)| {
            let (x, y) = (shapes[usize::from(x)], shapes[usize::from(y)]);
            matches!(x, Some(fuse::Shape::Mat(_, 1))) && x == y
        })
    };
    let mut lazy = vec![false; nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        lazy[i] = matches!(
            node,
            Ir::Trans(_) | Ir::Nz(_) | Ir::Sddmm(_) | Ir::EPow(_) | Ir::MMul(_) | Ir::EMul(_)
        );
    }
    for node in nodes {
        for (pos, c) in node.children().iter().enumerate() {
            let absorbed = match (node, &nodes[usize::from(*c)]) {
                (Ir::ESub([a, b]), Ir::MMul(_)) => {
                    a != b && plain_product(nodes, *a) && plain_product(nodes, *b)
                }
                (Ir::MMul(_), Ir::Trans(_)) => pos == 0,
                (Ir::MSum(_), Ir::Sddmm(_)) => true,
                (Ir::RowSums(_), Ir::EPow(_)) => true,
                (Ir::MSum(_), Ir::EMul(_) | Ir::EPow(_)) => dot_product(*c),
                (Ir::MMul([_, b]), Ir::Sddmm([_, _, v])) => pos == 0 && b == v,
                (Ir::TMMul([a, b]), Ir::Sddmm([_, u, _])) => {
                    (pos == 0 && b == u) || (pos == 1 && a == u)
                }
                (
                    Ir::WSubMM([_, x, ..]) | Ir::WSubMMT([_, x, ..]) | Ir::WsLossW([_, x, ..]),
                    Ir::Nz(inner),
                ) => pos == 0 && inner == x,
                _ => false,
            };
            if !absorbed {
                lazy[usize::from(*c)] = false;
            }
        }
    }
    for r in roots {
        lazy[usize::from(*r)] = false;
    }
    // Chains of `+` (or `*`) that SystemDS folds into one n-ary operation
    // (`foldMultipleMinMaxOperations`): an inner link, used only by the next link of its
    // chain and not a root, is not formed; the chain's top applies the operator to all the
    // chain's operands at once (`builtins::nary`: SystemDS's order and representation)
    // A scalar computed from literals alone is not a link: SystemDS folds such constants
    // (its static ConstantFolding) before it folds chains, so `(0 * (1e308 * 2)) * X` is
    // `NaN * X`, never `0 * 1e308 * 2 * X` with the scalars multiplied first
    let uses = use_counts(nodes, roots);
    let mut literal = vec![false; nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        literal[i] = match node {
            Ir::Num(_) => true,
            _ => {
                shapes[i] == Some(fuse::Shape::Scalar)
                    && !node.children().is_empty()
                    && node.children().iter().all(|c| literal[usize::from(*c)])
            }
        };
    }
    let mut chained = vec![false; nodes.len()];
    for node in nodes {
        if let Some(op) = chain_op(node) {
            for c in node.children() {
                let c = usize::from(*c);
                chained[c] |= chain_op(&nodes[c]) == Some(op) && uses[c] == 1 && !literal[c];
            }
        }
    }
    // a chain whose operands are known not to be scalars and matrices of one shape runs two
    // at a time as the plan nests it (`builtins::nary` declines it): its links are ordinary
    // nodes then, which a fused region can hold
    for i in (0..nodes.len()).rev() {
        let node = &nodes[i];
        let top = chain_op(node).is_some()
            && !chained[i]
            && node.children().iter().any(|c| chained[usize::from(*c)]);
        if !top {
            continue;
        }
        let mut leaves = Vec::new();
        chain_leaves(nodes, &chained, node, &mut leaves);
        let mut mats = leaves.iter().filter_map(|l| match shapes[usize::from(*l)] {
            Some(fuse::Shape::Mat(r, c)) => Some((r, c)),
            _ => None,
        });
        let first = mats.next();
        let declined = match first {
            Some(s) => mats.any(|t| t != s),
            None => leaves
                .iter()
                .all(|l| shapes[usize::from(*l)] == Some(fuse::Shape::Scalar)),
        };
        if declined {
            let mut stack = vec![i];
            while let Some(j) = stack.pop() {
                for c in nodes[j].children() {
                    let c = usize::from(*c);
                    if chained[c] {
                        chained[c] = false;
                        stack.push(c);
                    }
                }
            }
        }
    }
    let cx = Ctx {
        nodes,
        lazy: &lazy,
        chained: &chained,
        unordered: &unordered,
        vars,
    };
    // element-wise nodes computed inside their consumer's pass (`fuse`)
    let plan = fuse::Plan {
        nodes,
        lazy: &lazy,
        chained: &chained,
        unordered: &unordered,
    };
    let regions = fuse::regions(&plan, roots, &uses, &shapes);
    // sums that run in the pass of the region whose cells they read, and their values
    let partner = fuse::pairs(&plan, &regions);
    let mut early: HashMap<usize, Val> = HashMap::new();
    let mut vals: Vec<Val> = Vec::with_capacity(nodes.len());
    for idx in 0..nodes.len() {
        if lazy[idx] || chained[idx] || regions.interior[idx] {
            vals.push(Val::Scalar(f64::NAN));
            continue;
        }
        if let Some(v) = early.remove(&idx) {
            vals.push(v);
            continue;
        }
        if regions.top[idx] {
            let (t, cpu0) = (Instant::now(), work::cpu_now());
            // (`None` also when the pair ran and this region's program must not stand: the
            // region then runs again below and falls back the same way, a rare double pass)
            let paired = partner[idx].and_then(|s| {
                // the values the sum may read: those before this node, then its constants
                // and variables up to the sum (this node's own slot filled once it has run)
                let mut ahead = vals.clone();
                for node in &nodes[idx..s] {
                    ahead.push(match node {
                        Ir::Num(x) => Val::Scalar(x.get()),
                        Ir::Symbol(name) => vars.get(name)?.clone(),
                        _ => Val::Scalar(f64::NAN),
                    });
                }
                let r = fuse::run_pair(&plan, &regions, idx, s, &ahead)?;
                Some((s, ahead, r))
            });
            if let Some((s, mut ahead, (out, sum))) = paired {
                ahead[idx] = out.clone();
                vals.push(out);
                if let Some(trace) = trace.as_mut() {
                    let (time, cpu) = (t.elapsed(), work::cpu_now().saturating_sub(cpu0));
                    let mut absorbed = regions.members(idx);
                    let mut w = fuse::work(&plan, &regions, idx, &vals[..idx], &vals[idx]);
                    if let Some(sum) = &sum {
                        // the sum reads the cells in the cache, not from memory
                        let ws = fuse::work(&plan, &regions, s, &ahead, sum);
                        w.bytes += ws.bytes - work::value_bytes(&vals[idx]);
                        w.flops += ws.flops;
                        absorbed.push(s);
                        absorbed.extend(regions.members(s));
                    }
                    trace(&Step {
                        index: idx,
                        absorbed,
                        op: "cell",
                        time,
                        cpu,
                        work: w,
                    });
                }
                if let Some(sum) = sum {
                    early.insert(s, sum);
                }
                continue;
            }
            if let Some(out) = fuse::run(&plan, &regions, idx, &vals) {
                if let Some(trace) = trace.as_mut() {
                    // a fused region: its leaves read once, its result written once
                    trace(&Step {
                        index: idx,
                        absorbed: regions.members(idx),
                        op: "cell",
                        time: t.elapsed(),
                        cpu: work::cpu_now().saturating_sub(cpu0),
                        work: fuse::work(&plan, &regions, idx, &vals, &out),
                    });
                }
                vals.push(out);
                continue;
            }
            // the region's nodes one at a time
            for i in regions.members(idx) {
                if !lazy[i] {
                    vals[i] = traced_eval(&cx, i, &vals, &mut trace)?;
                }
            }
        }
        let out = traced_eval(&cx, idx, &vals, &mut trace)?;
        vals.push(out);
    }
    roots
        .iter()
        .map(|r| {
            vals.get(usize::from(*r))
                .cloned()
                .ok_or_else(|| EvalError(format!("root {r} out of range")))
        })
        .collect()
}

/// A builtin row evaluated as a plan operator: no source position, its own count of `rand`
/// calls.
fn eval_builtin(b: &'static builtins::Builtin, args: &[Value]) -> Result<Val, EvalError> {
    let mut calls = 0;
    let mut ctx = builtins::Ctx {
        name: b.name,
        span: Default::default(),
        spans: &[],
        rand_calls: &mut calls,
        epoch: Instant::now(),
    };
    builtins::eval(b, &mut ctx, args)
        .map(from_value)
        .map_err(|e| EvalError(e.message))
}

/// The `--stats` record of one kernel call: node `idx` of the plan computed `out` from the
/// values before it in `time` (wall) and `cpu`.
fn node_step(
    cx: &Ctx<'_>,
    idx: usize,
    vals: &[Val],
    out: &Val,
    time: Duration,
    cpu: Duration,
) -> Step {
    let Ctx {
        nodes,
        lazy,
        chained,
        ..
    } = *cx;
    let node = &nodes[idx];
    // the operands as the kernel read them: a transpose that is not formed is read as
    // the matrix it transposes, absorbed weights are not read
    let mut transposed = false;
    // a sum or product that absorbed a sampled product does its work, plus the sum's
    // or product's own
    let absorbed_id = match node {
        Ir::MSum(a) | Ir::MMul([a, _]) | Ir::TMMul([a, _]) | Ir::TMMul([_, a])
            if lazy[usize::from(*a)] && matches!(nodes[usize::from(*a)], Ir::Sddmm(_)) =>
        {
            Some(usize::from(*a))
        }
        _ => None,
    };
    let absorbed = absorbed_id.map(|a| &nodes[a]);
    let worker = absorbed.unwrap_or(node);
    let operands: Vec<Option<&Val>> = worker
        .children()
        .iter()
        .map(|c| {
            let c = usize::from(*c);
            match &nodes[c] {
                Ir::Trans(inner) if lazy[c] => {
                    transposed = true;
                    Some(&vals[usize::from(*inner)])
                }
                _ if lazy[c] || chained[c] => None,
                _ => Some(&vals[c]),
            }
        })
        .collect();
    let mut work = work::work(worker, &operands, out, transposed);
    // a subtraction that absorbed products reads their operands and does their work
    let mut products_absorbed = [None; 2];
    if let Ir::ESub(children) = node {
        let mut products: Vec<(&Val, &Val)> = Vec::new();
        for (slot, c) in children.iter().enumerate() {
            if let (true, Ir::MMul([l, r])) = (lazy[usize::from(*c)], &nodes[usize::from(*c)]) {
                products.push((&vals[usize::from(*l)], &vals[usize::from(*r)]));
                products_absorbed[slot] = Some(usize::from(*c));
            }
        }
        if !products.is_empty() {
            work += work::products(&products);
        }
    }
    let nnz = operands[0].map_or(0.0, work::stored);
    let width = |i: usize| operands[i].map_or(0.0, |v| work::shape(v).1);
    let op = match (node, absorbed) {
        (Ir::MSum(_), Some(_)) => {
            work.flops += nnz;
            "sum(sddmm)"
        }
        (_, Some(_)) => {
            work.flops += 2.0 * nnz * width(1);
            "sddmm %*%"
        }
        _ if products_absorbed.iter().any(Option::is_some) => "%*% - %*%",
        _ => op_name(node),
    };
    Step {
        index: idx,
        absorbed: match absorbed_id {
            Some(a) => vec![a],
            None => products_absorbed.iter().flatten().copied().collect(),
        },
        op,
        time,
        cpu,
        work,
    }
}

/// Runs node `idx` ([`eval_one`]), reporting the call to `trace` (with `--stats`).
fn traced_eval(
    cx: &Ctx<'_>,
    idx: usize,
    vals: &[Val],
    trace: &mut Option<&mut dyn FnMut(&Step)>,
) -> Result<Val, EvalError> {
    let node = &cx.nodes[idx];
    let Some(trace) = trace
        .as_mut()
        .filter(|_| !matches!(node, Ir::Num(_) | Ir::Symbol(_)))
    else {
        return eval_one(cx, idx, vals);
    };
    let (t, cpu0) = (Instant::now(), work::cpu_now());
    let out = eval_one(cx, idx, vals)?;
    let (time, cpu) = (t.elapsed(), work::cpu_now().saturating_sub(cpu0));
    trace(&node_step(cx, idx, vals, &out, time, cpu));
    Ok(out)
}

/// What [`eval_one`] reads of a plan besides the values: its nodes, the nodes not formed
/// (`lazy`: read by their consumer's kernel; `chained`: inner links of an n-ary chain) and
/// the inputs.
struct Ctx<'a> {
    nodes: &'a [Ir],
    lazy: &'a [bool],
    chained: &'a [bool],
    /// per node: a sum whose order the program does not fix ([`eval_plan_traced`])
    unordered: &'a [bool],
    vars: &'a HashMap<Symbol, Val>,
}

/// Runs node `idx` of a plan on the values of the nodes before it (one kernel call).
fn eval_one(cx: &Ctx<'_>, idx: usize, vals: &[Val]) -> Result<Val, EvalError> {
    let Ctx {
        nodes,
        lazy,
        chained,
        unordered,
        vars,
    } = *cx;
    let node = &nodes[idx];
    // the weights of a fused operator: `None` when they are an absorbed `X != 0`
    let weights = |vals: &[Val], w: &Id| -> Result<Option<Arc<Matrix>>, EvalError> {
        if lazy[usize::from(*w)] {
            return Ok(None);
        }
        match &vals[usize::from(*w)] {
            Val::Matrix(m) => Ok(Some(m.clone())),
            Val::Scalar(_) => Err(EvalError("expected a matrix".into())),
        }
    };
    let v = |i: &Id| &vals[usize::from(*i)];
    // a dense matrix input of the plan whose values are all finite (scanned when the plan was
    // chosen, and remembered per value)
    let finite_input = |i: &Id, x: &Arc<Matrix>| {
        matches!(nodes[usize::from(*i)], Ir::Symbol(_))
            && !x.is_sparse()
            && crate::optimize::segment::all_finite_cached(x)
    };
    let m = |i: &Id| match &vals[usize::from(*i)] {
        Val::Matrix(m) => Ok(m),
        Val::Scalar(_) => Err(EvalError("expected a matrix".into())),
    };
    let s = |i: &Id| match &vals[usize::from(*i)] {
        Val::Scalar(x) => Ok(*x),
        Val::Matrix(m) if m.shape() == (1, 1) => Ok(m.get(0, 0)),
        Val::Matrix(_) => Err(EvalError("expected a scalar".into())),
    };
    let ew = |op: BinOp, a: &Id, b: &Id| -> Val {
        from_value(builtins::binary(op, &to_value(v(a)), &to_value(v(b))))
    };
    // an operator that came from a builtin row: the row's evaluation, the parameters
    // beyond the operator's children at their defaults
    let row = |b: &'static builtins::Builtin| -> Result<Val, EvalError> {
        let mut args: Vec<Value> = node.children().iter().map(|c| to_value(v(c))).collect();
        for p in &b.params[args.len()..] {
            args.push(
                builtins::default_value(p.default)
                    .ok_or_else(|| EvalError(format!("{} needs `{}`", b.name, p.name)))?,
            );
        }
        eval_builtin(b, &args)
    };
    Ok(match node {
        Ir::Num(c) => Val::Scalar(c.get()),
        Ir::Symbol(name) => vars
            .get(name)
            .cloned()
            .ok_or_else(|| EvalError(format!("unbound {name}")))?,
        Ir::MMul([a, b]) => match &nodes[usize::from(*a)] {
            // A %*% t(A): SystemDS's tsmm, its kernel and order of additions
            _ if matches!(&nodes[usize::from(*b)], Ir::Trans(inner) if inner == a) => {
                mat(kernels::mul_self_t(m(a)?))
            }
            // t(A) %*% A: SystemDS's left tsmm, its kernel and order of additions
            Ir::Trans(inner) if inner == b => mat(kernels::t_mul_self(m(b)?)),
            // a dense input of the plan: the planner scanned it for Inf and NaN (remembered
            // per value), so the rows a vector weighs by zero need not be read, and the
            // product's repair of skipped zeros (`ieee_zeros`) need not scan it again
            Ir::Trans(inner) if lazy[usize::from(*a)] => {
                let (x, y) = (m(inner)?, m(b)?);
                let (x_finite, y_finite) = (finite_input(inner, x), finite_input(b, y));
                mat(kernels::tmatmul_with(x, y, x_finite, y_finite))
            }
            Ir::Sddmm([x, u, w]) if lazy[usize::from(*a)] => {
                mat(Matrix::from_dense(kernels::sddmm_mm(
                    m(x)?,
                    &kernels::dense_view(m(u)?),
                    &kernels::dense_view(m(w)?),
                    kernels::Side::Right,
                )))
            }
            _ => {
                let (v, x) = (m(a)?, m(b)?);
                mat(kernels::matmul_with(
                    v,
                    x,
                    finite_input(a, v),
                    finite_input(b, x),
                ))
            }
        },
        Ir::EMul([a, b]) | Ir::Join([a, b]) | Ir::EAdd([a, b]) | Ir::Union([a, b])
            if chained[usize::from(*a)] || chained[usize::from(*b)] =>
        {
            let op = chain_op(node).expect("a chain's operator");
            let mut leaves = Vec::new();
            chain_leaves(nodes, chained, node, &mut leaves);
            let operands: Vec<Value> = leaves.iter().map(|c| to_value(v(c))).collect();
            match builtins::nary(op, &operands) {
                Some(r) => from_value(r),
                // operands of other shapes: two at a time, as the plan has them
                None => {
                    let mut it = operands.into_iter();
                    from_value(chain_tree(nodes, chained, op, node, &mut it))
                }
            }
        }
        Ir::EMul([a, b]) | Ir::Join([a, b]) => ew(BinOp::Mul, a, b),
        Ir::EAdd([a, b]) | Ir::Union([a, b]) => ew(BinOp::Add, a, b),
        Ir::ESub([a, b]) if lazy[usize::from(*a)] || lazy[usize::from(*b)] => {
            // a product that is not formed: its operands (a plain product's are formed)
            let factors = |p: &Id| -> Result<(&Arc<Matrix>, &Arc<Matrix>), EvalError> {
                match &nodes[usize::from(*p)] {
                    Ir::MMul([l, r]) => Ok((m(l)?, m(r)?)),
                    _ => Err(EvalError("only a product is absorbed by `-`".into())),
                }
            };
            let fused = if lazy[usize::from(*a)] && lazy[usize::from(*b)] {
                let (pa, pb) = (factors(a)?, factors(b)?);
                let fuse = |(u, s): (&Arc<Matrix>, &Arc<Matrix>),
                            (x, w): (&Arc<Matrix>, &Arc<Matrix>),
                            flip: bool| match (&**u, &**s, &**x, &**w) {
                    (Matrix::Dense(u), Matrix::Dense(s), Matrix::Sparse(x), Matrix::Dense(w)) => {
                        kernels::small_minus_csr_narrow(u, s, x, w, flip)
                    }
                    _ => None,
                };
                fuse(pa, pb, false).or_else(|| fuse(pb, pa, true))
            } else {
                None
            };
            match fused {
                Some(g) => mat(Matrix::Dense(g)),
                None => {
                    let formed = |p: &Id| -> Result<Val, EvalError> {
                        if lazy[usize::from(*p)] {
                            let (l, r) = factors(p)?;
                            Ok(mat(kernels::matmul(l, r)))
                        } else {
                            Ok(v(p).clone())
                        }
                    };
                    let (va, vb) = (formed(a)?, formed(b)?);
                    from_value(builtins::binary(BinOp::Sub, &to_value(&va), &to_value(&vb)))
                }
            }
        }
        Ir::ESub([a, b]) => ew(BinOp::Sub, a, b),
        Ir::EDiv([a, b]) => ew(BinOp::Div, a, b),
        Ir::EPow([a, b]) | Ir::Pow([a, b]) => ew(BinOp::Pow, a, b),
        Ir::Neg(a) => from_value(builtins::unary(UnaryOp::Neg, &to_value(v(a)))),
        Ir::Nz(a) => match v(a) {
            Val::Scalar(x) => Val::Scalar(f64::from(u8::from(*x != 0.0))),
            x => mat(kernels::binary(
                BinOp::Ne,
                x.operand(),
                Operand::Scalar(0.0),
            )),
        },
        // sum(v1 * v2) and sum(v ^ 2) of column vectors: a dot product, as the program
        // as written runs it (SystemDS's simplifyDotProductSum), not a compensated sum (the
        // product is not formed when the shapes were known before running)
        Ir::MSum(a)
            if dot_operands(nodes, *a).is_some_and(|(x, y)| {
                matches!((v(&x), v(&y)), (Val::Matrix(p), Val::Matrix(q))
                    if p.cols() == 1 && p.shape() == q.shape())
            }) =>
        {
            let (x, y) = dot_operands(nodes, *a).expect("matched above");
            let (dx, dy) = (m(&x)?.to_dense(), m(&y)?.to_dense());
            Val::Scalar(kernels::matmul::dot(
                dx.as_slice().expect("a column is contiguous"),
                dy.as_slice().expect("a column is contiguous"),
            ))
        }
        Ir::MSum(a) if lazy[usize::from(*a)] => {
            let Ir::Sddmm([x, u, w]) = &nodes[usize::from(*a)] else {
                return Err(EvalError("only a product is absorbed by a sum".into()));
            };
            Val::Scalar(kernels::sddmm_sum(
                m(x)?,
                &kernels::dense_view(m(u)?),
                &kernels::dense_view(m(w)?),
            ))
        }
        // a sum the plan made over a matrix the statements never form: the parallel sum's
        // blocks at any size, not SystemDS's sequential order (`optimize::Plan::unordered`)
        Ir::MSum(a) if unordered[idx] && matches!(v(a), Val::Matrix(_)) => {
            Val::Scalar(kernels::aggregate::sum_any_order(m(a)?))
        }
        Ir::RowSums(a) if lazy[usize::from(*a)] => {
            let Ir::EPow([x, e]) = &nodes[usize::from(*a)] else {
                return Err(EvalError("only a power is absorbed by a rowSums".into()));
            };
            let fused = match (v(x), v(e)) {
                (Val::Matrix(xm), Val::Scalar(c)) if BinOp::Pow.apply(0.0, *c) == 0.0 => {
                    match &**xm {
                        Matrix::Sparse(sx) => {
                            kernels::row_sums_mapped(sx, |t| BinOp::Pow.apply(t, *c))
                        }
                        Matrix::Dense(_) => None,
                    }
                }
                _ => None,
            };
            match fused {
                Some(r) => mat(r),
                None => {
                    let pw = ew(BinOp::Pow, x, e);
                    let b = builtins::by_operator("rowSums", 1)
                        .ok_or_else(|| EvalError("rowSums is a builtin".into()))?;
                    eval_builtin(b, &[to_value(&pw)])?
                }
            }
        }
        Ir::Sddmm([x, u, w]) => mat(kernels::sddmm(
            m(x)?,
            &kernels::dense_view(m(u)?),
            &kernels::dense_view(m(w)?),
        )),
        Ir::WsLoss([x, u, w]) => Val::Scalar(kernels::wsloss(
            m(x)?,
            &kernels::dense_view(m(u)?),
            &kernels::dense_view(m(w)?),
        )),
        Ir::WsLossW([wt, x, u, w]) => Val::Scalar(kernels::wsloss_weighted(
            weights(vals, wt)?.as_deref(),
            m(x)?,
            &kernels::dense_view(m(u)?),
            &kernels::dense_view(m(w)?),
        )),
        Ir::Wcemm([x, u, w, e]) => Val::Scalar(kernels::wcemm(
            m(x)?,
            &kernels::dense_view(m(u)?),
            &kernels::dense_view(m(w)?),
            s(e)?,
        )),
        Ir::WDivMM([x, u, w, e]) | Ir::WDivMMT([x, u, w, e]) => {
            let side = if matches!(node, Ir::WDivMM(_)) {
                kernels::Side::Right
            } else {
                kernels::Side::Left
            };
            let (u, w) = (kernels::dense_view(m(u)?), kernels::dense_view(m(w)?));
            mat(Matrix::from_dense(kernels::wdivmm(
                m(x)?,
                &u,
                &w,
                s(e)?,
                side,
            )))
        }
        Ir::WSubMM([wt, x, u, w]) | Ir::WSubMMT([wt, x, u, w]) => {
            let side = if matches!(node, Ir::WSubMM(_)) {
                kernels::Side::Right
            } else {
                kernels::Side::Left
            };
            mat(Matrix::from_dense(kernels::wsubmm(
                weights(vals, wt)?.as_deref(),
                m(x)?,
                &kernels::dense_view(m(u)?),
                &kernels::dense_view(m(w)?),
                side,
            )))
        }
        Ir::MMChain([x, wt, w]) => {
            let x = m(x)?;
            let wt = match v(wt) {
                Val::Scalar(c) => Arc::new(kernels::constant(x.rows(), 1, *c)),
                Val::Matrix(mm) => mm.clone(),
            };
            mat(Matrix::from_dense(kernels::mmchain(
                x,
                &wt,
                &kernels::dense_view(m(w)?),
            )))
        }
        Ir::MMChainR([x, w, y]) => mat(Matrix::from_dense(kernels::mmchain_minus(
            m(x)?,
            m(y)?,
            &kernels::dense_view(m(w)?),
        ))),
        Ir::SMMChain([x, p, w]) => mat(Matrix::from_dense(kernels::smmchain(
            m(x)?,
            &kernels::dense_view(m(p)?),
            &kernels::dense_view(m(w)?),
        ))),
        // t(A) %*% A: SystemDS's left tsmm, its kernel and order of additions
        Ir::TMMul([a, b]) if a == b => mat(kernels::t_mul_self(m(a)?)),
        // t(U) %*% (X * (U %*% t(W))): the transpose of the left sampled product (`k x n`)
        Ir::TMMul([a, b]) if lazy[usize::from(*b)] => {
            let Ir::Sddmm([x, u, w]) = &nodes[usize::from(*b)] else {
                return Err(EvalError(
                    "only a sampled product is absorbed by t(U) %*%".into(),
                ));
            };
            let left = kernels::sddmm_mm(
                m(x)?,
                &kernels::dense_view(m(u)?),
                &kernels::dense_view(m(w)?),
                kernels::Side::Left,
            );
            mat(Matrix::from_dense(
                left.t().as_standard_layout().into_owned(),
            ))
        }
        Ir::TMMul([a, b]) => match &nodes[usize::from(*a)] {
            Ir::Sddmm([x, u, w]) if lazy[usize::from(*a)] => {
                mat(Matrix::from_dense(kernels::sddmm_mm(
                    m(x)?,
                    &kernels::dense_view(m(u)?),
                    &kernels::dense_view(m(w)?),
                    kernels::Side::Left,
                )))
            }
            // the plan's dense inputs known finite, as for `t(A) %*% B` above
            _ => {
                let (x, y) = (m(a)?, m(b)?);
                let (x_finite, y_finite) = (finite_input(a, x), finite_input(b, y));
                mat(kernels::tmatmul_with(x, y, x_finite, y_finite))
            }
        },
        Ir::Sprop(a) => match v(a) {
            Val::Scalar(x) => Val::Scalar(x * (1.0 - x)),
            Val::Matrix(x) => mat(kernels::sprop(x)),
        },
        other => match builtins::by_operator(&other.to_string(), other.len()) {
            Some(b) => row(b)?,
            None => return Err(EvalError(format!("`{other}` is not executable"))),
        },
    })
}
