//! The reference evaluator: runs a generated [`Program`] with naive loops over row-major
//! `Vec<f64>`s, sharing no code with the runtime's kernels (only `rand`'s generator, to get the
//! same input matrices), and produces the printed tokens the program must print, each with
//! what the comparison needs to judge it.
//!
//! Every cell carries:
//!
//! * `v`, its IEEE value as the program is written (`0 * Inf` is NaN, `0 / 0` is NaN);
//! * `z`, its value under the documented sparse semantics: the runtime's sparse kernels and
//!   fused operators treat cells outside a sparse input's pattern as exact zeros, so a product
//!   with an exact zero is 0 even when the other factor is Inf or NaN, and `0 / d` is 0 where
//!   `d` is a (low-rank) matrix product, as in the fused quotient operators. Which cells are
//!   stored sparse depends on densities the reference does not model, so a printed value
//!   passes if it matches `v` or `z`; for the same reason a matrix cell that is `-0.0` is
//!   `+0.0` in `z` (a sparse matrix's implicit zeros are `+0.0`);
//! * `s`, a magnitude bound: the same expression evaluated on absolute values (sums of
//!   `|terms|`, products of bounds, and first-order bounds for quotients, powers, `exp`, `log`,
//!   `sqrt`), so a finite value may differ by `TOL * s` after reassociation and cancellation;
//! * `pz`, whether the value is a `+0.0` that no reassociation may turn into `-0.0`: sums
//!   (`sum`, `%*%`, ...) start from `+0.0` as in BLAS, R and SystemDS, so they are never
//!   `-0.0`, and `x - x` is `+0.0` in every order; such a value must print as `0.0`, not
//!   `-0.0` (`1 / sum(...)` depends on it);
//! * `skip`, whether the value is unstable under reassociation: a discontinuous function
//!   (`round`, `floor`, `ceil`, `sign`, `!=`, `>`) of a value within `1000 TOL * s` of its
//!   discontinuity, or a value whose magnitude bound overflows (a reordered sum may overflow
//!   where the written one does not). Such tokens are not compared (the harness counts them).

use super::gen::{Agg, Bin, InputKind, Program, Ty, Un, E, PRINT_CELLS};
use spores_runtime::kernels::generate::{rand_matrix, RandSpec};

/// Relative tolerance for finite values, against the magnitude bound.
pub const TOL: f64 = 1e-10;

/// One cell of a reference value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    /// the IEEE value as written
    pub v: f64,
    /// the value with exact-zero products (the sparse semantics)
    pub z: f64,
    /// the magnitude bound
    pub s: f64,
    /// a `+0.0` that must print as `0.0`
    pub pz: bool,
    /// unstable under reassociation: not compared
    pub skip: bool,
    /// derived from a matrix product (for the quotient operators' zero semantics)
    pub prod: bool,
    /// the sparse reading dropped a non-finite term somewhere (its magnitude bound does not
    /// cover what an optimized plan may compute there)
    pub ann: bool,
}

impl Cell {
    fn leaf(v: f64) -> Cell {
        Cell {
            v,
            z: v,
            s: if v.is_finite() { v.abs() } else { 0.0 },
            pz: v == 0.0 && v.is_sign_positive(),
            skip: false,
            prod: false,
            ann: false,
        }
    }
}

/// A reference value: a matrix of cells (a scalar is 1x1 with `scalar` set).
#[derive(Clone, Debug)]
pub struct RVal {
    /// rows
    pub rows: usize,
    /// columns
    pub cols: usize,
    /// cells, row-major
    pub cells: Vec<Cell>,
    /// whether it is a scalar
    pub scalar: bool,
}

impl RVal {
    fn at(&self, i: usize, j: usize) -> Cell {
        // broadcasting: a 1-sized dimension repeats
        let i = if self.rows == 1 { 0 } else { i };
        let j = if self.cols == 1 { 0 } else { j };
        self.cells[i * self.cols + j]
    }

    fn scalar(c: Cell) -> RVal {
        RVal {
            rows: 1,
            cols: 1,
            cells: vec![c],
            scalar: true,
        }
    }
}

/// What one printed token must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expect {
    /// the cell
    pub cell: Cell,
    /// printed with three decimals (`toString`) rather than in full
    pub rounded: bool,
}

fn ieee_skip(v: f64, s: f64) -> bool {
    s.is_infinite() || s > 1e250 || (v.is_finite() && v.abs() > 1e250)
}

fn pow_java(a: f64, p: f64) -> f64 {
    // Java's Math.pow: IEEE pow (Rust's powf follows C's pow, which agrees with it)
    a.powf(p)
}

fn bin_cell(op: Bin, a: Cell, b: Cell) -> Cell {
    let f = |x: f64, y: f64| -> f64 {
        match op {
            Bin::Add => x + y,
            Bin::Sub => x - y,
            Bin::Mul => x * y,
            Bin::Div => x / y,
            Bin::Pow => pow_java(x, y),
            Bin::Min => {
                if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else if x < y || (x == y && x.is_sign_negative()) {
                    x
                } else {
                    y
                }
            }
            Bin::Max => {
                if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else if x > y || (x == y && x.is_sign_positive()) {
                    x
                } else {
                    y
                }
            }
            Bin::Ne => f64::from(u8::from(x != y)),
            Bin::Gt => f64::from(u8::from(x > y)),
        }
    };
    let v = f(a.v, b.v);
    let annihilated = match op {
        Bin::Mul => (a.z == 0.0 && !b.z.is_finite()) || (b.z == 0.0 && !a.z.is_finite()),
        Bin::Div => a.z == 0.0 && b.prod && (b.z == 0.0 || b.z.is_nan()),
        _ => false,
    };
    let z = if annihilated { 0.0 } else { f(a.z, b.z) };
    let fin = |x: f64| if x.is_finite() { x } else { 0.0 };
    let (sa, sb) = (a.s, b.s);
    let s = match op {
        Bin::Add | Bin::Sub => sa + sb,
        Bin::Mul => sa * sb,
        Bin::Div => {
            let d = b.v.abs();
            if d > 0.0 && d.is_finite() {
                (sa + fin(v).abs() * sb) / d + fin(v).abs()
            } else {
                fin(v).abs()
            }
        }
        Bin::Pow => {
            let base = a.v.abs();
            if base > 0.0 && base.is_finite() {
                fin(v).abs() * (1.0 + b.v.abs() * sa / base)
            } else {
                fin(v).abs()
            }
        }
        Bin::Min | Bin::Max => sa.max(sb),
        Bin::Ne | Bin::Gt => 1.0,
    };
    // discontinuities of the comparisons
    let unstable = match op {
        Bin::Ne | Bin::Gt => {
            let d = a.v - b.v;
            d.is_finite() && d.abs() <= 1e3 * TOL * (sa + sb)
        }
        _ => false,
    };
    let pz = v == 0.0
        && v.is_sign_positive()
        && match op {
            // x + (-x) is +0.0 in every order; only -0.0 + -0.0 is -0.0
            Bin::Add => a.pz || b.pz || a.v != 0.0,
            Bin::Sub => a.pz || a.v != 0.0 || b.v.is_sign_negative(),
            Bin::Mul => (a.pz && (b.pz || b.v > 0.0)) || (b.pz && a.v > 0.0),
            Bin::Div => a.pz && b.v > 0.0,
            Bin::Ne | Bin::Gt => true,
            _ => false,
        };
    Cell {
        v,
        z,
        s,
        pz,
        skip: a.skip || b.skip || unstable || ieee_skip(v, s),
        prod: false,
        ann: a.ann || b.ann || annihilated,
    }
}

fn un_cell(op: Un, a: Cell) -> Cell {
    let f = |x: f64| -> f64 {
        match op {
            Un::Neg => -x,
            Un::Exp => x.exp(),
            Un::Log => x.ln(),
            Un::Sqrt => x.sqrt(),
            Un::Abs => x.abs(),
            Un::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            // Java's Math.round: halves round up, a 64-bit integer (NaN is 0, Inf saturates)
            Un::Round => spores_runtime::ops::java_round(x),
            Un::Floor => x.floor(),
            Un::Ceil => x.ceil(),
            Un::Sign => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            }
        }
    };
    let v = f(a.v);
    let fin = |x: f64| if x.is_finite() { x } else { 0.0 };
    let x = a.v.abs();
    let s = match op {
        Un::Neg | Un::Abs => a.s,
        Un::Exp => fin(v).abs() * (1.0 + a.s),
        Un::Log => fin(v).abs() + if x > 0.0 { a.s / x } else { 0.0 },
        Un::Sqrt => fin(v).abs() + if v > 0.0 { a.s / v } else { 0.0 },
        Un::Sigmoid => 1.0 + a.s,
        Un::Round | Un::Floor | Un::Ceil | Un::Sign => fin(v).abs(),
    };
    let margin = 1e3 * TOL * a.s;
    let unstable = a.v.is_finite()
        && match op {
            Un::Round => ((a.v + 0.5) - (a.v + 0.5).round()).abs() <= margin,
            Un::Floor | Un::Ceil => (a.v - a.v.round()).abs() <= margin,
            Un::Sign => a.v.abs() <= margin,
            _ => false,
        };
    let pz = v == 0.0
        && v.is_sign_positive()
        && match op {
            Un::Abs | Un::Round => true,
            Un::Sqrt | Un::Floor | Un::Ceil | Un::Sign => a.pz,
            _ => false,
        };
    Cell {
        v,
        z: f(a.z),
        s,
        pz,
        skip: a.skip || unstable || ieee_skip(v, s),
        prod: false,
        ann: a.ann,
    }
}

/// Sums cells in order, starting from `+0.0` as BLAS, R and SystemDS do: a sum is never
/// `-0.0`, in any order (an exact zero is `-0.0` only as `-0.0 + -0.0`).
fn sum_cells(cells: impl Iterator<Item = Cell>) -> Cell {
    let mut acc = Cell::leaf(0.0);
    for c in cells {
        let v = acc.v + c.v;
        let s = acc.s + c.s;
        acc = Cell {
            v,
            z: acc.z + c.z,
            s,
            pz: v == 0.0 && v.is_sign_positive(),
            skip: acc.skip || c.skip || ieee_skip(v, s),
            prod: false,
            ann: acc.ann || c.ann,
        };
    }
    acc
}

fn extreme(cells: &[Cell], max: bool) -> Cell {
    let mut acc = cells[0];
    for &c in &cells[1..] {
        acc = bin_cell(if max { Bin::Max } else { Bin::Min }, acc, c);
    }
    acc
}

fn mean(c: Cell, n: usize) -> Cell {
    let d = n as f64;
    Cell {
        v: c.v / d,
        z: c.z / d,
        s: c.s / d,
        pz: c.pz && n > 0,
        skip: c.skip,
        prod: false,
        ann: c.ann,
    }
}

/// Evaluation errors (a generated program the reference cannot type: a generator bug).
#[derive(Debug, Clone, PartialEq)]
pub struct RefError(pub String);

/// The reference interpreter's variables.
pub struct Env {
    vars: Vec<(String, RVal)>,
}

impl Env {
    fn get(&self, n: &str) -> Result<&RVal, RefError> {
        self.vars
            .iter()
            .rev()
            .find(|(m, _)| m == n)
            .map(|v| &v.1)
            .ok_or_else(|| RefError(format!("unknown variable {n}")))
    }
}

fn eval(e: &E, env: &Env) -> Result<RVal, RefError> {
    eval_op(e, env).map(stored)
}

fn eval_op(e: &E, env: &Env) -> Result<RVal, RefError> {
    Ok(match e {
        E::Num(v) => RVal::scalar(Cell::leaf(*v)),
        E::Var(n) => env.get(n)?.clone(),
        E::Bin(op, a, b) => {
            let (a, b) = (eval(a, env)?, eval(b, env)?);
            let scalar = a.scalar && b.scalar;
            let ta = if a.scalar {
                Ty::Scalar
            } else {
                Ty::Mat(a.rows, a.cols)
            };
            let tb = if b.scalar {
                Ty::Scalar
            } else {
                Ty::Mat(b.rows, b.cols)
            };
            let (rows, cols) = match super::gen::broadcast(ta, tb) {
                Some(Ty::Mat(r, c)) => (r, c),
                Some(Ty::Scalar) => (1, 1),
                None => return Err(RefError("broadcast mismatch".into())),
            };
            let mut cells = Vec::with_capacity(rows * cols);
            for i in 0..rows {
                for j in 0..cols {
                    let (x, y) = (a.at(i, j), b.at(i, j));
                    let mut c = bin_cell(*op, x, y);
                    // `U %*% t(V) + eps` stays a product for the quotient operators
                    c.prod = *op == Bin::Add && ((x.prod && b.scalar) || (y.prod && a.scalar));
                    cells.push(c);
                }
            }
            RVal {
                rows,
                cols,
                cells,
                scalar,
            }
        }
        E::Un(op, a) => {
            let a = eval(a, env)?;
            RVal {
                cells: a.cells.iter().map(|&c| un_cell(*op, c)).collect(),
                ..a
            }
        }
        E::MatMul(a, b) => {
            let (a, b) = (eval(a, env)?, eval(b, env)?);
            if a.cols != b.rows || a.scalar || b.scalar {
                return Err(RefError("matmul shapes".into()));
            }
            let mut cells = Vec::with_capacity(a.rows * b.cols);
            for i in 0..a.rows {
                for j in 0..b.cols {
                    let mut c =
                        sum_cells((0..a.cols).map(|k| bin_cell(Bin::Mul, a.at(i, k), b.at(k, j))));
                    // BLAS does not promise the zero sign of a product's sum
                    c.pz = false;
                    c.prod = true;
                    cells.push(c);
                }
            }
            RVal {
                rows: a.rows,
                cols: b.cols,
                cells,
                scalar: false,
            }
        }
        E::T(a) => {
            let a = eval(a, env)?;
            let mut cells = Vec::with_capacity(a.cells.len());
            for j in 0..a.cols {
                for i in 0..a.rows {
                    cells.push(a.cells[i * a.cols + j]);
                }
            }
            RVal {
                rows: a.cols,
                cols: a.rows,
                cells,
                scalar: false,
            }
        }
        E::Agg(op, a) => {
            let a = eval(a, env)?;
            let (r, c) = (a.rows, a.cols);
            let row = |i: usize| (0..c).map(move |j| i * c + j);
            let col = |j: usize| (0..r).map(move |i| i * c + j);
            let pick = |idx: Vec<usize>| idx.into_iter().map(|k| a.cells[k]).collect::<Vec<_>>();
            match op {
                Agg::Sum => RVal::scalar(sum_cells(a.cells.iter().copied())),
                Agg::Mean => RVal::scalar(mean(sum_cells(a.cells.iter().copied()), r * c)),
                Agg::Min | Agg::Max => {
                    if a.cells.is_empty() {
                        return Err(RefError("min/max of an empty matrix".into()));
                    }
                    RVal::scalar(extreme(&a.cells, *op == Agg::Max))
                }
                Agg::RowSums | Agg::RowMeans | Agg::RowMins | Agg::RowMaxs => {
                    let cells = (0..r)
                        .map(|i| {
                            let cs = pick(row(i).collect());
                            match op {
                                Agg::RowSums => Ok(sum_cells(cs.into_iter())),
                                Agg::RowMeans => Ok(mean(sum_cells(cs.into_iter()), c)),
                                _ if cs.is_empty() => Err(RefError("empty row".into())),
                                _ => Ok(extreme(&cs, *op == Agg::RowMaxs)),
                            }
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    RVal {
                        rows: r,
                        cols: 1,
                        cells,
                        scalar: false,
                    }
                }
                Agg::ColSums | Agg::ColMeans | Agg::ColMins | Agg::ColMaxs => {
                    let cells = (0..c)
                        .map(|j| {
                            let cs = pick(col(j).collect());
                            match op {
                                Agg::ColSums => Ok(sum_cells(cs.into_iter())),
                                Agg::ColMeans => Ok(mean(sum_cells(cs.into_iter()), r)),
                                _ if cs.is_empty() => Err(RefError("empty column".into())),
                                _ => Ok(extreme(&cs, *op == Agg::ColMaxs)),
                            }
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    RVal {
                        rows: 1,
                        cols: c,
                        cells,
                        scalar: false,
                    }
                }
            }
        }
        E::AsScalar(a) => {
            let a = eval(a, env)?;
            if a.cells.len() != 1 {
                return Err(RefError("as.scalar of a non-1x1".into()));
            }
            let mut c = a.cells[0];
            c.prod = false;
            RVal::scalar(c)
        }
        E::Fill(v, r, c) => {
            let v = eval(v, env)?;
            let mut cell = v.cells[0];
            cell.prod = false;
            RVal {
                rows: *r,
                cols: *c,
                cells: vec![cell; r * c],
                scalar: false,
            }
        }
    })
}

/// A matrix as the runtime may store it: a `-0.0` cell of a matrix stored sparse is an implicit
/// `+0.0`, so the sparse reading has no `-0.0` cells.
fn stored(mut r: RVal) -> RVal {
    if !r.scalar {
        for c in &mut r.cells {
            if c.z == 0.0 {
                c.z = 0.0;
            }
        }
    }
    r
}

/// Runs a program; returns the tokens it must print, in order.
pub fn run(p: &Program) -> Result<Vec<Expect>, RefError> {
    let mut env = Env { vars: Vec::new() };
    for i in &p.inputs {
        let val = match &i.kind {
            InputKind::Scalar(v) => RVal::scalar(Cell::leaf(*v)),
            InputKind::Fill(v) => RVal {
                rows: i.rows,
                cols: i.cols,
                cells: vec![Cell::leaf(*v); i.rows * i.cols],
                scalar: false,
            },
            InputKind::Rand {
                min,
                max,
                sparsity,
                seed,
            } => {
                let m = rand_matrix(&RandSpec {
                    rows: i.rows,
                    cols: i.cols,
                    min: *min,
                    max: *max,
                    sparsity: *sparsity,
                    seed: *seed,
                });
                let mut cells = Vec::with_capacity(i.rows * i.cols);
                for r in 0..i.rows {
                    for c in 0..i.cols {
                        cells.push(Cell::leaf(m.get(r, c)));
                    }
                }
                RVal {
                    rows: i.rows,
                    cols: i.cols,
                    cells,
                    scalar: false,
                }
            }
        };
        env.vars.push((i.name.clone(), stored(val)));
    }
    for _ in 0..p.iters.max(1) {
        for s in &p.stmts {
            let v = eval(&s.expr, &env)?;
            env.vars.push((s.name.clone(), v));
        }
    }
    let mut out = Vec::new();
    for s in &p.stmts {
        let v = env.get(&s.name)?;
        if v.scalar {
            out.push(Expect {
                cell: v.cells[0],
                rounded: false,
            });
        } else {
            out.push(Expect {
                cell: sum_cells(v.cells.iter().copied()),
                rounded: false,
            });
            if v.rows * v.cols <= PRINT_CELLS {
                out.extend(v.cells.iter().map(|&cell| Expect {
                    cell,
                    rounded: true,
                }));
            }
        }
    }
    Ok(out)
}

/// Whether a printed token agrees with what the reference expects; `None` if the token is not
/// compared (unstable), else `Some(agrees)`.
pub fn agrees(token: &str, e: &Expect) -> Option<bool> {
    agrees_with(token, e, true)
}

/// [`agrees`] for an optimized run: the sign of a zero result is free (README, exception
/// (3): distributing `-1 * (1 - 1)`, or a one-cell sum read as its cell, changes it).
pub fn agrees_up_to_zero_sign(token: &str, e: &Expect) -> Option<bool> {
    agrees_with(token, e, false)
}

fn agrees_with(token: &str, e: &Expect, zero_sign: bool) -> Option<bool> {
    let c = e.cell;
    if c.skip {
        return None;
    }
    let Ok(a) = token.parse::<f64>() else {
        return Some(false);
    };
    let close = |b: f64| -> bool {
        if b.is_nan() || a.is_nan() {
            return a.is_nan() && b.is_nan();
        }
        if b.is_infinite() || a.is_infinite() {
            return a == b;
        }
        let tol = TOL * c.s + if e.rounded { 5.0005e-4 } else { 0.0 };
        if (a - b).abs() > tol {
            return false;
        }
        // a +0.0 that every evaluation order keeps must print as such
        !(zero_sign && c.pz && !e.rounded && a == 0.0 && a.is_sign_negative())
    };
    // where the sparse reading dropped non-finite terms, its bound says nothing about the
    // dropped terms' cancellation: allow an absolute 1e-9 more
    let close_z =
        |b: f64| close(b) || (c.ann && b.is_finite() && a.is_finite() && (a - b).abs() <= 1e-9);
    Some(close(c.v) || close_z(c.z))
}
