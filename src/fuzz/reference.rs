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
//! * what may excuse a difference, each a documented exception (README, "What an optimized
//!   plan may change") that the program as written actually reached:
//!   - `skip` (exception 1, rounding): a discontinuous function (`round`, `floor`, `ceil`,
//!     `sign`, `!=`, `>`, `%/%`, `%%`, and `sqrt`, `log` and fractional powers at the edge of
//!     their domain, 0) of a value within `1000 TOL * s` of its discontinuity;
//!   - `extreme` (exception 2, overflow and underflow): some intermediate's magnitude, or
//!     that of a product of a subset of the factors of a product (what a reordered product
//!     computes first), reached `1e250`, or a non-zero one fell below `1e-250`, or the
//!     magnitude bound `s` did (a reordered sum may overflow where the written one does
//!     not). `hi` and `lo` bound the subset products: the product of the factors' magnitudes
//!     above 1 and below 1;
//!   - `zsign` (exception 3, the sign of a zero): the value depends on a quotient of a
//!     non-zero by a zero (`x / 0` is `±Inf` by the zero's sign), or on a negative odd power
//!     of a zero, and an optimized plan may change that zero's sign. Only an optimized run
//!     is excused this.
//!
//!   - `ann` (exception 4, the sparse reading): the value involves a product of an exact zero
//!     with Inf or NaN; the two readings `v` and `z` are compared first, but kernels choose
//!     per operation, so an aggregate may mix them (a dense product gives NaN, the sparse
//!     element-wise product after it drops it outside its pattern).
//!
//!   A difference with one of these is counted as excused (by reason), not as agreement; any
//!   other difference is a mismatch. Every flag is inherited by what is computed from the
//!   cell.

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
    /// unstable under reassociation (near a discontinuity)
    pub skip: bool,
    /// some intermediate, or a reordered partial product or sum, is near overflow or
    /// underflow
    pub extreme: bool,
    /// the value depends on the sign of a zero divisor (or a zero to a negative odd power)
    pub zsign: bool,
    /// the product of the magnitudes above 1 of the factors of the value (the largest
    /// partial product a reordering may form)
    pub hi: f64,
    /// the product of the non-zero magnitudes below 1 of the factors (the smallest)
    pub lo: f64,
    /// derived from a matrix product (for the quotient operators' zero semantics)
    pub prod: bool,
    /// the sparse reading dropped a non-finite term somewhere (its magnitude bound does not
    /// cover what an optimized plan may compute there)
    pub ann: bool,
}

impl Cell {
    fn leaf(v: f64) -> Cell {
        let (hi, lo) = atom(v);
        Cell {
            v,
            z: v,
            s: if v.is_finite() { v.abs() } else { 0.0 },
            pz: v == 0.0 && v.is_sign_positive(),
            skip: false,
            extreme: false,
            zsign: false,
            hi,
            lo,
            prod: false,
            ann: false,
        }
        .flag_extreme()
    }

    /// Sets `extreme` when the cell's magnitudes are near overflow or underflow.
    fn flag_extreme(mut self) -> Cell {
        self.extreme |= near_limits(self.v)
            || near_limits(self.s)
            || self.hi.is_nan()
            || self.hi > BIG
            || self.lo.is_nan()
            || self.lo < SMALL;
        self
    }
}

/// Magnitudes from which a reordered computation may overflow (or underflow, below
/// [`SMALL`]).
const BIG: f64 = 1e250;
/// See [`BIG`].
const SMALL: f64 = 1e-250;

/// Whether a value is near overflow or a non-zero value near underflow (NaN: no).
fn near_limits(v: f64) -> bool {
    let a = v.abs();
    (a > BIG && a.is_finite()) || (a > 0.0 && a < SMALL)
}

/// `hi` and `lo` of a value used as one factor: its magnitude, on the side of 1 it lies (a
/// zero or a non-finite value is no partial product of its own).
fn atom(v: f64) -> (f64, f64) {
    let a = v.abs();
    if a == 0.0 || !a.is_finite() {
        (1.0, 1.0)
    } else {
        (a.max(1.0), a.min(1.0))
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

fn pow_java(a: f64, p: f64) -> f64 {
    // Java's Math.pow: IEEE pow (Rust's powf follows C's pow, which agrees with it)
    a.powf(p)
}

/// SystemDS's `%/%`: the IEEE quotient if it is not finite, else the quotient truncated
/// towards zero, as a Java `long` (saturating, never `-0.0`).
fn int_div(a: f64, b: f64) -> f64 {
    let q = a / b;
    if q.is_finite() {
        let t = q.trunc();
        if t >= 9.2e18 {
            i64::MAX as f64
        } else if t <= -9.2e18 {
            i64::MIN as f64
        } else {
            (t as i64) as f64
        }
    } else {
        q
    }
}

/// SystemDS's `%%`: `a - (a %/% b) * b`, NaN for a zero divisor.
fn modulus(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        f64::NAN
    } else {
        a - int_div(a, b) * b
    }
}

/// `a op b` of two cells; `sparse`: the operation may run in a sparse kernel (a matrix
/// operand), so that its product with an exact zero may be read as 0.
fn bin_cell(op: Bin, a: Cell, b: Cell, sparse: bool) -> Cell {
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
            Bin::IntDiv => int_div(x, y),
            Bin::Mod => modulus(x, y),
        }
    };
    let v = f(a.v, b.v);
    let annihilated = sparse
        && match op {
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
            } else if base == 0.0 && sa > 0.0 && b.v > 0.0 {
                // a base that is 0 here but rounding noise of size up to `TOL * sa` in
                // another order (`mean(X - t(X))`): its power is at most `(TOL * sa) ^ p`,
                // below `TOL * sa ^ p` for p >= 1 (fractional powers there are `unstable`)
                sa.powf(b.v)
            } else {
                fin(v).abs()
            }
        }
        Bin::Min | Bin::Max => sa.max(sb),
        Bin::Ne | Bin::Gt => 1.0,
        Bin::IntDiv => fin(v).abs(),
        // a - q * b with a whole q
        Bin::Mod => sa + fin(int_div(a.v, b.v)).abs() * sb,
    };
    // discontinuities of the comparisons
    let unstable = match op {
        Bin::Ne | Bin::Gt => {
            let d = a.v - b.v;
            d.is_finite() && d.abs() <= 1e3 * TOL * (sa + sb)
        }
        // a fractional power of a base rounded to either side of 0; or a negative base to an
        // exponent within rounding of a whole number (`x ^ sum(matrix(0.1, 1, 30))`: 3 as
        // SystemDS's compensated sum gives it, 3.0000000000000004 summed plainly, NaN)
        Bin::Pow => {
            let near_whole = b.v.is_finite()
                && a.v < 0.0
                && (b.v - b.v.round()).abs() <= 1e3 * TOL * sb + 4.0 * f64::EPSILON * b.v.abs()
                && (sb > 0.0 || b.v.fract() != 0.0);
            near_whole
                || (b.v.is_finite()
                    && b.v.fract() != 0.0
                    && sa > 0.0
                    && a.v.abs() <= 1e3 * TOL * sa)
        }
        // the truncated quotient jumps where the quotient is whole
        Bin::IntDiv | Bin::Mod => {
            let q = a.v / b.v;
            let bound = (sa + q.abs() * sb) / b.v.abs();
            q.is_finite() && (q - q.round()).abs() <= 1e3 * TOL * bound + 4.0 * f64::EPSILON
        }
        _ => false,
    };
    let pz = v == 0.0
        && v.is_sign_positive()
        && match op {
            // x + (-x) is +0.0 in every order; but a plan drops a zero term (`x + 0` is x),
            // so -0.0 + 0.0 may be -0.0
            Bin::Add => a.v != 0.0 || (a.pz && b.pz),
            Bin::Sub => a.v != 0.0 || (a.pz && b.v.is_sign_negative()),
            Bin::Mul => (a.pz && (b.pz || b.v > 0.0)) || (b.pz && a.v > 0.0),
            Bin::Div => a.pz && b.v > 0.0,
            Bin::Ne | Bin::Gt | Bin::IntDiv => true,
            _ => false,
        };
    // partial products a reordering may form: a product multiplies its factors'; a sum may
    // be distributed, so its terms' products are formed separately; a quotient, power or
    // comparison is one factor (its operands' partial products stay inside it)
    let (hi, lo) = match op {
        Bin::Mul => (a.hi * b.hi, a.lo * b.lo),
        Bin::Add | Bin::Sub | Bin::Min | Bin::Max => (a.hi.max(b.hi), a.lo.min(b.lo)),
        Bin::Div => {
            let (h, l) = atom(1.0 / b.v);
            (a.hi * h, a.lo * l)
        }
        // a whole power is a product of its base (`pow-square`)
        Bin::Pow if b.v.fract() == 0.0 && b.v.abs() <= 64.0 => {
            let p = b.v as i32;
            if p >= 0 {
                (a.hi.powi(p), a.lo.powi(p))
            } else {
                ((1.0 / a.lo).powi(-p), (1.0 / a.hi).powi(-p))
            }
        }
        Bin::Pow | Bin::Ne | Bin::Gt | Bin::IntDiv | Bin::Mod => atom(v),
    };
    // an overflow or underflow as written: a product or quotient of finite non-zeros that is
    // infinite or zero
    let finite_nonzero = |x: f64| x.is_finite() && x != 0.0;
    let written_limit = matches!(op, Bin::Mul | Bin::Div | Bin::Pow | Bin::IntDiv | Bin::Mod)
        && finite_nonzero(a.v)
        && finite_nonzero(b.v)
        && !finite_nonzero(v)
        && !v.is_nan();
    // x / ±0 is ±Inf by the zero's sign, and so is a zero to a negative odd power
    let zsign = match op {
        // (a `+0.0` that every order keeps, `pz`, keeps its sign in a plan too)
        Bin::Div | Bin::IntDiv => {
            (b.v == 0.0 && !b.pz && a.v != 0.0 && !a.v.is_nan())
                || (b.z == 0.0 && !b.pz && a.z != 0.0 && !a.z.is_nan())
        }
        Bin::Pow => (a.v == 0.0 || a.z == 0.0) && !a.pz && b.v < 0.0 && b.v % 2.0 == -1.0,
        _ => false,
    };
    Cell {
        v,
        z,
        s,
        pz,
        skip: a.skip || b.skip || unstable,
        extreme: a.extreme || b.extreme || written_limit,
        zsign: a.zsign || b.zsign || zsign,
        hi,
        lo,
        prod: false,
        ann: a.ann || b.ann || annihilated,
    }
    .flag_extreme()
}

fn un_cell(op: Un, a: Cell) -> Cell {
    let f = |x: f64| -> f64 {
        match op {
            Un::Neg => -x,
            Un::Exp => spores_runtime::kernels::fastmath::exp(x),
            Un::Log => x.ln(),
            Un::Sqrt => x.sqrt(),
            Un::Abs => x.abs(),
            Un::Sigmoid => spores_runtime::kernels::fastmath::sigmoid(x),
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
            // the edge of the domain: a rounded argument just below 0 is NaN (a compensated
            // sum may give exactly 1 where a plain one gives 1 - ulp, and `sqrt(log(...))`
            // NaN)
            Un::Sqrt | Un::Log => margin > 0.0 && a.v.abs() <= margin,
            _ => false,
        };
    let pz = v == 0.0
        && v.is_sign_positive()
        && match op {
            Un::Abs | Un::Round => true,
            Un::Sqrt | Un::Floor | Un::Ceil | Un::Sign => a.pz,
            _ => false,
        };
    // exp overflows or underflows as written
    let written_limit = op == Un::Exp && a.v.is_finite() && !(v > 0.0 && v.is_finite());
    let (hi, lo) = match op {
        Un::Neg | Un::Abs => (a.hi, a.lo),
        _ => atom(v),
    };
    Cell {
        v,
        z: f(a.z),
        s,
        pz,
        skip: a.skip || unstable,
        extreme: a.extreme || written_limit,
        zsign: a.zsign,
        hi,
        lo,
        prod: false,
        ann: a.ann,
    }
    .flag_extreme()
}

/// Sums cells in order, starting from `+0.0` as BLAS, R and SystemDS do: a sum is never
/// `-0.0`, in any order (an exact zero is `-0.0` only as `-0.0 + -0.0`); but a plan may read
/// a one-cell sum as its cell, and may factor a negative constant out of the sum
/// (`sum(-1 * (1 - 1))` as `-1 * sum(1 - 1)`, `-0.0`): README exception 3. So a zero sum
/// keeps a fixed `+0.0` only when every cell is a `+0.0` that keeps its sign (`sum(X - X)`).
fn sum_cells(cells: impl Iterator<Item = Cell>) -> Cell {
    let mut acc = Cell::leaf(0.0);
    let mut n = 0;
    let mut all_pz = true;
    for c in cells {
        n += 1;
        all_pz &= c.pz;
        let v = acc.v + c.v;
        let s = acc.s + c.s;
        acc = Cell {
            v,
            z: acc.z + c.z,
            s,
            pz: v == 0.0 && v.is_sign_positive(),
            skip: acc.skip || c.skip,
            extreme: acc.extreme || c.extreme,
            zsign: acc.zsign || c.zsign,
            hi: acc.hi.max(c.hi),
            lo: acc.lo.min(c.lo),
            prod: false,
            ann: acc.ann || c.ann,
        }
        .flag_extreme();
    }
    acc.pz &= n != 1 && all_pz;
    acc
}

fn extreme(cells: &[Cell], max: bool) -> Cell {
    let mut acc = cells[0];
    for &c in &cells[1..] {
        acc = bin_cell(if max { Bin::Max } else { Bin::Min }, acc, c, false);
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
        prod: false,
        ..c
    }
    .flag_extreme()
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
                    let mut c = bin_cell(*op, x, y, !scalar);
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
                    let mut c = sum_cells(
                        (0..a.cols).map(|k| bin_cell(Bin::Mul, a.at(i, k), b.at(k, j), true)),
                    );
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
        E::IfElse(c, a, b) => {
            let (c, a, b) = (eval(c, env)?, eval(a, env)?, eval(b, env)?);
            let ty = |x: &RVal| {
                if x.scalar {
                    Ty::Scalar
                } else {
                    Ty::Mat(x.rows, x.cols)
                }
            };
            let t = super::gen::broadcast(ty(&a), ty(&b))
                .and_then(|t| super::gen::broadcast(ty(&c), t))
                .ok_or_else(|| RefError("ifelse broadcast mismatch".into()))?;
            let (rows, cols, scalar) = match t {
                Ty::Mat(r, c) => (r, c, false),
                Ty::Scalar => (1, 1, true),
            };
            let mut cells = Vec::with_capacity(rows * cols);
            for i in 0..rows {
                for j in 0..cols {
                    let (k, y, n) = (c.at(i, j), a.at(i, j), b.at(i, j));
                    // the branch as written; the sparse reading takes its own branch
                    let pick = |x: f64| if x != 0.0 { y } else { n };
                    let mut cell = pick(k.v);
                    cell.z = pick(k.z).z;
                    // a condition next to zero may flip with rounding
                    cell.skip |= k.skip || (k.v.is_finite() && k.v.abs() <= 1e3 * TOL * k.s);
                    cell.extreme |= k.extreme;
                    cell.zsign |= k.zsign;
                    cell.ann |= k.ann || pick(k.z).ann;
                    // a cell of a matrix is stored: no product semantics carry through
                    cell.prod = false;
                    cells.push(cell);
                }
            }
            RVal {
                rows,
                cols,
                cells,
                scalar,
            }
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

/// Why a difference from the reference is allowed: a documented exception that the program
/// as written reached (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Excuse {
    /// (1) rounding next to a discontinuity (`round`, `!=`, ...)
    Rounding,
    /// (2) an intermediate near overflow or underflow
    Overflow,
    /// (3) a result decided by the sign of a zero (optimized runs only)
    ZeroSign,
    /// (4) a product of an exact zero with Inf or NaN, which a sparse kernel reads as 0: each
    /// kernel on the way (and each cell) may take either reading, so an aggregate of such
    /// cells may mix them
    Sparse,
}

/// How a printed token compares with the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// it agrees (as written, or in the sparse reading)
    Agree,
    /// it differs, but a documented exception the program reached allows it
    Excused(Excuse),
    /// it differs
    Differ,
}

/// How a printed token of an unoptimized run compares with the reference.
pub fn agrees(token: &str, e: &Expect) -> Verdict {
    verdict(token, e, false)
}

/// [`agrees`] for an optimized run: the sign of a zero result is free (README, exception
/// (3): distributing `-1 * (1 - 1)`, or a one-cell sum read as its cell, changes it), and so
/// is what a zero's sign decided (`x / 0`).
pub fn agrees_optimized(token: &str, e: &Expect) -> Verdict {
    verdict(token, e, true)
}

fn verdict(token: &str, e: &Expect, optimized: bool) -> Verdict {
    if agrees_with(token, e, !optimized) {
        return Verdict::Agree;
    }
    let c = e.cell;
    if c.skip {
        Verdict::Excused(Excuse::Rounding)
    } else if c.extreme {
        Verdict::Excused(Excuse::Overflow)
    } else if c.zsign && optimized {
        Verdict::Excused(Excuse::ZeroSign)
    } else if c.ann {
        Verdict::Excused(Excuse::Sparse)
    } else {
        Verdict::Differ
    }
}

fn agrees_with(token: &str, e: &Expect, zero_sign: bool) -> bool {
    let c = e.cell;
    // the reference models values, not SystemDS's value types: a boolean (`sum` of a 1x1
    // comparison prints TRUE, as SystemDS prints it; tests/dml/expected checks that form)
    // is its number
    let a = match token {
        "TRUE" => 1.0,
        "FALSE" => 0.0,
        t => match t.parse::<f64>() {
            Ok(a) => a,
            Err(_) => return false,
        },
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
    close(c.v) || close_z(c.z)
}
