//! SystemDS's elementary functions, bit for bit: the algorithms of Apache Commons Math 3.4.1's
//! `FastMath` (the version SystemDS 3.4 ships), which SystemDS's `Builtin` function object
//! calls for `exp`, `sigmoid` (`1 / (1 + exp(-x))`), `sin`, `cos`, `tan`, `asin`, `acos`,
//! `sinh`, `cosh` and `tanh` (and its LSTM kernel for its gates). These are table-driven and
//! differ from the platform's libm in the last bit on some arguments (`exp`: about 1 in 2000),
//! which iterative scripts (GLM with a log link) amplify past 1e-8.
//!
//! The tables (`exp` of the integers -750..750 and of the multiples of 1/1024 in [0, 1], and
//! `sin`, `cos`, `tan` of the multiples of 1/8 up to 13/8) are computed at first use in
//! double-double ("split") arithmetic by the algorithms of Commons Math's `FastMathCalc`,
//! exactly as it computes them (tests/fastmath_jar.rs checks every function against the jar).
//! Everything here is plain IEEE double arithmetic in a fixed order, with no fused
//! multiply-add, so the results do not depend on the platform.
//!
//! `log`, `sqrt`, `atan`, `abs`, `round` and `^` are `java.lang.Math`'s in SystemDS, not these.

use std::sync::OnceLock;

/// 2^30, the splitting constant (`HEX_40000000`).
const HEX_40000000: f64 = 1073741824.0;
/// Entries of the integer `exp` table on each side of 0.
const EXP_INT_TABLE_MAX_INDEX: usize = 750;
/// Entries of the fractional `exp` table: 0, 1/1024, ..., 1024/1024.
const EXP_FRAC_TABLE_LEN: usize = 1025;
/// Entries of the sine, cosine and tangent tables: 0, 1/8, ..., 13/8.
const SINE_TABLE_LEN: usize = 14;
/// `StrictMath.log(Double.MAX_VALUE)`.
const LOG_MAX_VALUE: f64 = 709.782712893384;
/// `pi / 2` rounded, and the rest.
const PI2A: f64 = std::f64::consts::FRAC_PI_2;
const PI2B: f64 = 6.123233995736766E-17;
/// The multiples of 1/8 the trigonometric tables are at.
const EIGHTHS: [f64; 14] = [
    0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.125, 1.25, 1.375, 1.5, 1.625,
];
/// The bits of 2/pi (the binary expansion of the constant, 64 bits a word) for the
/// Payne-Hanek reduction of huge arguments.
const RECIP_2PI: [u64; 18] = [
    0x28be60db9391054a,
    0x7f09d5f47d4d3770,
    0x36d8a5664f10e410,
    0x7f9458eaf7aef158,
    0x6dc91b8e909374b8,
    0x01924bba82746487,
    0x3f877ac72c4a69cf,
    0xba208d7d4baed121,
    0x3a671c09ad17df90,
    0x4e64758e60d4ce7d,
    0x272117e2ef7e4a0e,
    0xc7fe25fff7816603,
    0xfbcbc462d6829b47,
    0xdb4d9fb3c9f2c26d,
    0xd3d18fd9a797fa8b,
    0x5d49eeb1faf97c5e,
    0xcf41ce7de294a4ba,
    0x9afed7ec00000000,
];
/// The bits of pi/4, 128 of them.
const PI_O_4_BITS: [u64; 2] = [0xc90fdaa22168c234, 0xc4c6628b80dc1cd1];

/// The lookup tables, each value as a pair `a + b` with `a` holding the leading bits.
struct Tables {
    exp_int_a: Vec<f64>,
    exp_int_b: Vec<f64>,
    exp_frac_a: Vec<f64>,
    exp_frac_b: Vec<f64>,
    sin_a: [f64; SINE_TABLE_LEN],
    sin_b: [f64; SINE_TABLE_LEN],
    cos_a: [f64; SINE_TABLE_LEN],
    cos_b: [f64; SINE_TABLE_LEN],
    tan_a: [f64; SINE_TABLE_LEN],
    tan_b: [f64; SINE_TABLE_LEN],
}

static TABLES: OnceLock<Tables> = OnceLock::new();

#[inline]
fn tables() -> &'static Tables {
    TABLES.get_or_init(calc::build)
}

/// `FastMathCalc`: the exact-arithmetic algorithms that compute the tables.
mod calc {
    use super::*;

    /// 0! .. 19!
    fn fact(i: usize) -> f64 {
        (1..=i).fold(1.0, |f, k| f * k as f64)
    }

    /// A double as a pair whose first part has at most 22 significant bits.
    fn split(d: f64) -> [f64; 2] {
        if d < 8e298 && d > -8e298 {
            let a = d * HEX_40000000;
            let hi = (d + a) - a;
            [hi, d - hi]
        } else {
            let a = d * (1.0 / HEX_40000000);
            let hi = (d + a - d) * HEX_40000000;
            [hi, d - hi]
        }
    }

    /// Renormalises a pair to the form of [`split`].
    fn resplit(a: &mut [f64; 2]) {
        let c = a[0] + a[1];
        let d = -(c - a[0] - a[1]);
        if c < 8e298 && c > -8e298 {
            let z = c * HEX_40000000;
            a[0] = (c + z) - z;
            a[1] = c - a[0] + d;
        } else {
            let z = c * (1.0 / HEX_40000000);
            a[0] = (c + z - c) * HEX_40000000;
            a[1] = c - a[0] + d;
        }
    }

    fn split_mult(a: &[f64; 2], b: &[f64; 2]) -> [f64; 2] {
        let mut ans = [a[0] * b[0], a[0] * b[1] + a[1] * b[0] + a[1] * b[1]];
        resplit(&mut ans);
        ans
    }

    fn split_add(a: &[f64; 2], b: &[f64; 2]) -> [f64; 2] {
        let mut ans = [a[0] + b[0], a[1] + b[1]];
        resplit(&mut ans);
        ans
    }

    /// `1 / input` in split arithmetic. With `wide_exponent`, the first correction's
    /// denominator `x0 * x0 + x0 * x1` is evaluated as with an unbounded exponent (scaled by
    /// an exact power of two, so with the same roundings) instead of overflowing to infinity.
    fn split_reciprocal(input: &[f64; 2], wide_exponent: bool) -> [f64; 2] {
        let b = 1.0 / 4194304.0;
        let a = 1.0 - b;
        let mut x = *input;
        if x[0] == 0.0 {
            x = [x[1], 0.0];
        }
        let r1 = if wide_exponent {
            let s = f64::from_bits(((1023 - 550) as u64) << 52); // 2^-550
            let (x0, x1) = (x[0] * s, x[1] * s);
            (((b * x[0] - a * x[1]) * s) * s) / (x0 * x0 + x0 * x1)
        } else {
            (b * x[0] - a * x[1]) / (x[0] * x[0] + x[0] * x[1])
        };
        let mut r = [a / x[0], r1];
        if r[1].is_nan() {
            r[1] = 0.0;
        }
        resplit(&mut r);
        for _ in 0..2 {
            let mut err = 1.0 - r[0] * x[0] - r[0] * x[1] - r[1] * x[0] - r[1] * x[1];
            err *= r[0] + r[1];
            r[1] += err;
        }
        r
    }

    /// Adds `z` into the pair `r` with the compensation of `quadMult`.
    fn quad_acc(r: &mut [f64; 2], z: f64) {
        let tmp = r[0] + z;
        r[1] -= tmp - r[0] - z;
        r[0] = tmp;
    }

    fn quad_mult(a: &[f64; 2], b: &[f64; 2]) -> [f64; 2] {
        let xs = split(a[0]);
        let ys = split(b[0]);
        let zs = split_mult(&xs, &ys);
        let mut r = zs;
        let ys = split(b[1]);
        let zs = split_mult(&xs, &ys);
        quad_acc(&mut r, zs[0]);
        quad_acc(&mut r, zs[1]);
        let xs = split(a[1]);
        let ys = split(b[0]);
        let zs = split_mult(&xs, &ys);
        quad_acc(&mut r, zs[0]);
        quad_acc(&mut r, zs[1]);
        let ys = split(b[1]);
        let zs = split_mult(&xs, &ys);
        quad_acc(&mut r, zs[0]);
        quad_acc(&mut r, zs[1]);
        r
    }

    /// `e^p` for an integer `p >= 0`, by squaring a double-double `e`.
    fn expint(mut p: usize) -> [f64; 2] {
        let mut xs = [std::f64::consts::E, 1.4456468917292502E-16];
        let mut ys = split(1.0);
        while p > 0 {
            if p & 1 != 0 {
                ys = quad_mult(&ys, &xs);
            }
            xs = quad_mult(&xs, &xs);
            p >>= 1;
        }
        resplit(&mut ys);
        ys
    }

    /// A Taylor series in split arithmetic over the terms `i` (19 down to 0) that `keep`
    /// selects, with the sign of term `i` negative when `alternate` and `i & 2 != 0`.
    fn taylor(x: f64, keep: impl Fn(usize) -> bool, alternate: bool) -> [f64; 2] {
        let xs = split(x);
        let mut ys = [0.0, 0.0];
        for i in (0..20).rev() {
            ys = split_mult(&xs, &ys);
            if !keep(i) {
                continue;
            }
            let mut facts = split_reciprocal(&split(fact(i)), false);
            if alternate && i & 2 != 0 {
                facts = [-facts[0], -facts[1]];
            }
            ys = split_add(&ys, &facts);
        }
        ys
    }

    fn slow_exp(x: f64) -> [f64; 2] {
        taylor(x, |_| true, false)
    }

    fn slow_sin(x: f64) -> [f64; 2] {
        taylor(x, |i| i & 1 != 0, true)
    }

    fn slow_cos(x: f64) -> [f64; 2] {
        taylor(x, |i| i & 1 == 0, true)
    }

    /// The first negative power of e whose literal table entry had a wide-exponent denominator.
    const WIDE_FROM: usize = 501;

    pub(super) fn build() -> Tables {
        let n = 2 * EXP_INT_TABLE_MAX_INDEX;
        let (mut exp_int_a, mut exp_int_b) = (vec![0.0; n], vec![0.0; n]);
        for i in 0..EXP_INT_TABLE_MAX_INDEX {
            let t = expint(i);
            exp_int_a[i + EXP_INT_TABLE_MAX_INDEX] = t[0];
            exp_int_b[i + EXP_INT_TABLE_MAX_INDEX] = t[1];
            if i != 0 {
                // Commons Math's literal table (FastMathLiteralArrays, which the jar uses)
                // holds for e^-501 .. e^-709 the reciprocals whose denominator did not
                // overflow (e^1002 and beyond: the generating JVM evaluated it with a wider
                // exponent), and for e^-355 .. e^-500 those whose denominator overflowed, as
                // strict double arithmetic does; the test against the jar checks every entry.
                let r = split_reciprocal(&t, i >= WIDE_FROM);
                exp_int_a[EXP_INT_TABLE_MAX_INDEX - i] = r[0];
                exp_int_b[EXP_INT_TABLE_MAX_INDEX - i] = r[1];
            }
        }
        let factor = 1.0 / (EXP_FRAC_TABLE_LEN - 1) as f64;
        let (mut exp_frac_a, mut exp_frac_b) =
            (vec![0.0; EXP_FRAC_TABLE_LEN], vec![0.0; EXP_FRAC_TABLE_LEN]);
        for i in 0..EXP_FRAC_TABLE_LEN {
            let t = slow_exp(i as f64 * factor);
            exp_frac_a[i] = t[0];
            exp_frac_b[i] = t[1];
        }
        let mut sin = [[0.0; 2]; SINE_TABLE_LEN];
        let mut cos = [[0.0; 2]; SINE_TABLE_LEN];
        for i in 0..7 {
            let x = i as f64 / 8.0;
            sin[i] = slow_sin(x);
            cos[i] = slow_cos(x);
        }
        // angle addition up to 13/8, just beyond pi/2
        for i in 7..SINE_TABLE_LEN {
            let (xs, ys) = (sin[i / 2], cos[i / 2]);
            if i & 1 == 0 {
                let r = split_mult(&xs, &ys);
                sin[i] = [r[0] * 2.0, r[1] * 2.0];
                let a = split_mult(&ys, &ys);
                let t = split_mult(&xs, &xs);
                cos[i] = split_add(&a, &[-t[0], -t[1]]);
            } else {
                let (a, b) = (sin[i / 2 + 1], cos[i / 2 + 1]);
                let t = split_mult(&xs, &b);
                let r = split_mult(&ys, &a);
                sin[i] = split_add(&r, &t);
                let r = split_mult(&ys, &b);
                let t = split_mult(&xs, &a);
                cos[i] = split_add(&r, &[-t[0], -t[1]]);
            }
        }
        let mut tan = [[0.0; 2]; SINE_TABLE_LEN];
        for i in 0..SINE_TABLE_LEN {
            let r = split_reciprocal(&cos[i], false);
            tan[i] = split_mult(&sin[i], &r);
        }
        let col = |t: &[[f64; 2]; SINE_TABLE_LEN], k: usize| {
            let mut out = [0.0; SINE_TABLE_LEN];
            for (o, v) in out.iter_mut().zip(t) {
                *o = v[k];
            }
            out
        };
        Tables {
            exp_int_a,
            exp_int_b,
            exp_frac_a,
            exp_frac_b,
            sin_a: col(&sin, 0),
            sin_b: col(&sin, 1),
            cos_a: col(&cos, 0),
            cos_b: col(&cos, 1),
            tan_a: col(&tan, 0),
            tan_b: col(&tan, 1),
        }
    }
}

/// The computed tables by `FastMath`'s field names, for tests against the jar.
#[doc(hidden)]
pub fn tables_by_name() -> Vec<(&'static str, &'static [f64])> {
    let t = tables();
    vec![
        ("SINE_TABLE_A", &t.sin_a[..]),
        ("SINE_TABLE_B", &t.sin_b[..]),
        ("COSINE_TABLE_A", &t.cos_a[..]),
        ("COSINE_TABLE_B", &t.cos_b[..]),
        ("TANGENT_TABLE_A", &t.tan_a[..]),
        ("TANGENT_TABLE_B", &t.tan_b[..]),
        ("EXP_INT_TABLE_A", &t.exp_int_a[..]),
        ("EXP_INT_TABLE_B", &t.exp_int_b[..]),
        ("EXP_FRAC_TABLE_A", &t.exp_frac_a[..]),
        ("EXP_FRAC_TABLE_B", &t.exp_frac_b[..]),
    ]
}

/// `FastMath.exp(x)`.
#[inline]
pub fn exp(x: f64) -> f64 {
    exp_scalar(x, tables())
}

/// [`exp_hi`]'s result for `-709 < x < 710`, without the recursion and the high-precision
/// pair, so that it inlines into element-wise loops.
#[inline(always)]
fn exp_direct(x: f64, t: &Tables) -> f64 {
    let int_val = if x < 0.0 {
        -((-x) as i32) - 1
    } else {
        x as i32
    };
    let k = (EXP_INT_TABLE_MAX_INDEX as i32 + int_val) as usize;
    let (int_a, int_b) = (t.exp_int_a[k], t.exp_int_b[k]);
    let int_frac = ((x - int_val as f64) * 1024.0) as i32;
    let f = int_frac as usize;
    let (frac_a, frac_b) = (t.exp_frac_a[f], t.exp_frac_b[f]);
    let epsilon = x - (int_val as f64 + int_frac as f64 / 1024.0);
    let mut z = 0.04168701738764507;
    z = z * epsilon + 0.1666666505023083;
    z = z * epsilon + 0.5000000000042687;
    z = z * epsilon + 1.0;
    z = z * epsilon + -3.940510424527919E-20;
    let temp_a = int_a * frac_a;
    let temp_b = int_a * frac_b + int_b * frac_a + int_b * frac_b;
    let temp_c = temp_b + temp_a;
    temp_c * z + temp_b + temp_a
}

/// `1 / (1 + FastMath.exp(-x))`, SystemDS's `sigmoid`.
#[inline]
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + exp(-x))
}

/// Replaces each value by its [`exp`] (the same bits), four lanes at a time with AVX2 when
/// the CPU has it.
pub fn exp_in_place(xs: &mut [f64]) {
    let t = tables();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked above)
        unsafe { avx2::exp_in_place(xs, t) };
        return;
    }
    for x in xs {
        *x = exp_scalar(*x, t);
    }
}

/// Replaces each value by its [`sigmoid`] (the same bits), through [`exp_in_place`].
pub fn sigmoid_in_place(xs: &mut [f64]) {
    for x in xs.iter_mut() {
        *x = -*x;
    }
    exp_in_place(xs);
    for x in xs {
        *x = 1.0 / (1.0 + *x);
    }
}

/// [`exp`] with the tables at hand.
#[inline(always)]
fn exp_scalar(x: f64, t: &Tables) -> f64 {
    // the arguments whose integer part indexes the table directly (NaN fails the test)
    if x > -709.0 && x < 710.0 {
        exp_direct(x, t)
    } else {
        exp_hi(x, t).0
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{exp_scalar, Tables, EXP_INT_TABLE_MAX_INDEX};
    use std::arch::x86_64::*;

    /// [`super::exp_in_place`] with AVX2: [`super::exp_direct`]'s operations, in its order and
    /// without fused multiply-adds, on four lanes; lanes outside (-709, 710) (and NaN) are
    /// computed as 0 and then replaced by the scalar [`super::exp`].
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn exp_in_place(xs: &mut [f64], t: &Tables) {
        let set = _mm256_set1_pd;
        let mut chunks = xs.chunks_exact_mut(4);
        for ch in &mut chunks {
            let x0 = _mm256_loadu_pd(ch.as_ptr());
            let ok = _mm256_and_pd(
                _mm256_cmp_pd::<_CMP_GT_OQ>(x0, set(-709.0)),
                _mm256_cmp_pd::<_CMP_LT_OQ>(x0, set(710.0)),
            );
            let x = _mm256_and_pd(x0, ok);
            // intVal: the truncation, one less for a negative x
            let neg = _mm256_cmp_pd::<_CMP_LT_OQ>(x, _mm256_setzero_pd());
            let int_val = _mm256_sub_pd(
                _mm256_cvtepi32_pd(_mm256_cvttpd_epi32(x)),
                _mm256_and_pd(neg, set(1.0)),
            );
            let k = _mm_add_epi32(
                _mm256_cvttpd_epi32(int_val),
                _mm_set1_epi32(EXP_INT_TABLE_MAX_INDEX as i32),
            );
            // SAFETY (gathers): |intVal| <= 709 and intFrac in [0, 1024] for x in (-709, 710)
            let int_a = _mm256_i32gather_pd::<8>(t.exp_int_a.as_ptr(), k);
            let int_b = _mm256_i32gather_pd::<8>(t.exp_int_b.as_ptr(), k);
            let f = _mm256_cvttpd_epi32(_mm256_mul_pd(_mm256_sub_pd(x, int_val), set(1024.0)));
            let frac_a = _mm256_i32gather_pd::<8>(t.exp_frac_a.as_ptr(), f);
            let frac_b = _mm256_i32gather_pd::<8>(t.exp_frac_b.as_ptr(), f);
            let eps = _mm256_sub_pd(
                x,
                _mm256_add_pd(int_val, _mm256_div_pd(_mm256_cvtepi32_pd(f), set(1024.0))),
            );
            let step = |z: __m256d, c: f64| _mm256_add_pd(_mm256_mul_pd(z, eps), set(c));
            let mut z = set(0.04168701738764507);
            z = step(z, 0.1666666505023083);
            z = step(z, 0.5000000000042687);
            z = step(z, 1.0);
            z = step(z, -3.940510424527919E-20);
            let temp_a = _mm256_mul_pd(int_a, frac_a);
            let temp_b = _mm256_add_pd(
                _mm256_add_pd(_mm256_mul_pd(int_a, frac_b), _mm256_mul_pd(int_b, frac_a)),
                _mm256_mul_pd(int_b, frac_b),
            );
            let temp_c = _mm256_add_pd(temp_b, temp_a);
            let y = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(temp_c, z), temp_b), temp_a);
            let orig = [ch[0], ch[1], ch[2], ch[3]];
            _mm256_storeu_pd(ch.as_mut_ptr(), y);
            let m = _mm256_movemask_pd(ok);
            if m != 0xf {
                for (l, (o, x)) in ch.iter_mut().zip(orig).enumerate() {
                    if m & (1 << l) == 0 {
                        *o = exp_scalar(x, t);
                    }
                }
            }
        }
        for x in chunks.into_remainder() {
            *x = exp_scalar(*x, t);
        }
    }
}

/// `FastMath.exp(x, 0, hiPrec)`: the result and the pair `hiPrec` (`exp(x)` in two parts).
#[inline]
fn exp_hi(x: f64, t: &Tables) -> (f64, [f64; 2]) {
    let (int_a, int_b, int_val): (f64, f64, i32);
    if x < 0.0 {
        let iv = (-x) as i32;
        if iv > 746 {
            return (0.0, [0.0, 0.0]);
        }
        if iv > 709 {
            // a subnormal result
            let s = 285040095144011776.0;
            let (r, h) = exp_hi(x + 40.19140625, t);
            return (r / s, [h[0] / s, h[1] / s]);
        }
        if iv == 709 {
            // exp(1.494140625) is nearly a machine number
            let s = 4.455_505_956_692_757;
            let (r, h) = exp_hi(x + 1.494140625, t);
            return (r / s, [h[0] / s, h[1] / s]);
        }
        let iv = iv + 1;
        let k = EXP_INT_TABLE_MAX_INDEX - iv as usize;
        int_a = t.exp_int_a[k];
        int_b = t.exp_int_b[k];
        int_val = -iv;
    } else {
        let iv = x as i32;
        if iv > 709 {
            return (f64::INFINITY, [f64::INFINITY, 0.0]);
        }
        let k = EXP_INT_TABLE_MAX_INDEX + iv as usize;
        int_a = t.exp_int_a[k];
        int_b = t.exp_int_b[k];
        int_val = iv;
    }
    // the greatest multiple of 2^-10 below the fraction, and the rest
    let int_frac = ((x - int_val as f64) * 1024.0) as i32;
    // (x - intVal) is in [0, 1) for finite x; NaN gives 0
    let f = int_frac as usize;
    let frac_a = t.exp_frac_a[f];
    let frac_b = t.exp_frac_b[f];
    let epsilon = x - (int_val as f64 + int_frac as f64 / 1024.0);
    // exp(epsilon) - 1 by a minimax polynomial on [0, 2^-10]
    let mut z = 0.04168701738764507;
    z = z * epsilon + 0.1666666505023083;
    z = z * epsilon + 0.5000000000042687;
    z = z * epsilon + 1.0;
    z = z * epsilon + -3.940510424527919E-20;
    let temp_a = int_a * frac_a;
    let temp_b = int_a * frac_b + int_b * frac_a + int_b * frac_b;
    let temp_c = temp_b + temp_a;
    // extra == 0: `tempC*extra*z + tempC*extra` are signed zeros (or NaN) added first
    let result = temp_c * z + temp_b + temp_a;
    let hi1 = temp_c * 0.0 * z + temp_c * 0.0 + temp_c * z + temp_b;
    (result, [temp_a, hi1])
}

/// `FastMath.expm1(x, hiPrecOut)` for `|x| < 1`, `x != 0` (the only use: `sinh`, `tanh`).
fn expm1_hi(x: f64, t: &Tables) -> [f64; 2] {
    let (x, negative) = if x < 0.0 { (-x, true) } else { (x, false) };
    let int_frac = (x * 1024.0) as i32 as usize;
    let mut temp_a = t.exp_frac_a[int_frac] - 1.0;
    let mut temp_b = t.exp_frac_b[int_frac];
    let mut temp = temp_a + temp_b;
    temp_b = -(temp - temp_a - temp_b);
    temp_a = temp;
    temp = temp_a * HEX_40000000;
    let base_a = temp_a + temp - temp;
    let base_b = temp_b + (temp_a - base_a);
    let epsilon = x - int_frac as f64 / 1024.0;
    let mut zb = 0.008336750013465571;
    zb = zb * epsilon + 0.041666663879186654;
    zb = zb * epsilon + 0.16666666666745392;
    zb = zb * epsilon + 0.49999999999999994;
    zb *= epsilon;
    zb *= epsilon;
    let mut za = epsilon;
    temp = za + zb;
    zb = -(temp - za - zb);
    za = temp;
    temp = za * HEX_40000000;
    temp = za + temp - temp;
    zb += za - temp;
    za = temp;
    // expm1(a + b) = expm1(a) + expm1(b) + expm1(a) * expm1(b)
    let mut ya = za * base_a;
    temp = ya + za * base_b;
    let mut yb = -(temp - ya - za * base_b);
    ya = temp;
    temp = ya + zb * base_a;
    yb += -(temp - ya - zb * base_a);
    ya = temp;
    temp = ya + zb * base_b;
    yb += -(temp - ya - zb * base_b);
    ya = temp;
    temp = ya + base_a;
    yb += -(temp - base_a - ya);
    ya = temp;
    temp = ya + za;
    yb += -(temp - ya - za);
    ya = temp;
    temp = ya + base_b;
    yb += -(temp - ya - base_b);
    ya = temp;
    temp = ya + zb;
    yb += -(temp - ya - zb);
    ya = temp;
    if negative {
        // expm1(-x) = -expm1(x) / (expm1(x) + 1)
        let denom = 1.0 + ya;
        let denomr = 1.0 / denom;
        let denomb = -(denom - 1.0 - ya) + yb;
        let ratio = ya * denomr;
        temp = ratio * HEX_40000000;
        let ra = ratio + temp - temp;
        let mut rb = ratio - ra;
        temp = denom * HEX_40000000;
        let za = denom + temp - temp;
        let zb = denom - za;
        rb += (ya - za * ra - za * rb - zb * ra - zb * rb) * denomr;
        rb += yb * denomr;
        rb += -ya * denomb * denomr * denomr;
        ya = -ra;
        yb = -rb;
    }
    [ya, yb]
}

/// `y + s / y` for `y = exp(x)` given as `hiPrec`, `s` = +1 (cosh) or -1 (sinh), halved.
fn exp_plus_recip(h: [f64; 2], negate_recip: bool) -> f64 {
    let mut ya = h[0] + h[1];
    let mut yb = -(ya - h[0] - h[1]);
    let mut temp = ya * HEX_40000000;
    let yaa = ya + temp - temp;
    let yab = ya - yaa;
    let recip = 1.0 / ya;
    temp = recip * HEX_40000000;
    let mut recipa = recip + temp - temp;
    let mut recipb = recip - recipa;
    recipb += (1.0 - yaa * recipa - yaa * recipb - yab * recipa - yab * recipb) * recip;
    recipb += -yb * recip * recip;
    if negate_recip {
        recipa = -recipa;
        recipb = -recipb;
    }
    temp = ya + recipa;
    yb += -(temp - ya - recipa);
    ya = temp;
    temp = ya + recipb;
    yb += -(temp - ya - recipb);
    ya = temp;
    (ya + yb) * 0.5
}

/// `exp(a) / 2` for `a > 20` as FastMath's `cosh`/`sinh` compute it: through `exp(a / 2)`
/// squared where `exp(a)` alone would overflow.
fn half_exp_large(a: f64) -> f64 {
    if a >= LOG_MAX_VALUE {
        let t = exp(0.5 * a);
        (0.5 * t) * t
    } else {
        0.5 * exp(a)
    }
}

/// `FastMath.cosh(x)`.
pub fn cosh(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 20.0 {
        return half_exp_large(x);
    } else if x < -20.0 {
        return half_exp_large(-x);
    }
    let x = if x < 0.0 { -x } else { x };
    exp_plus_recip(exp_hi(x, tables()).1, false)
}

/// `FastMath.sinh(x)`.
pub fn sinh(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 20.0 {
        return half_exp_large(x);
    } else if x < -20.0 {
        // FastMath's `(-0.5 * t) * t` and `-0.5 * exp(-x)`: negation is exact and rounding
        // symmetric, so the same bits
        return -half_exp_large(-x);
    }
    if x == 0.0 {
        return x;
    }
    let (x, negate) = if x < 0.0 { (-x, true) } else { (x, false) };
    let t = tables();
    let result = if x > 0.25 {
        exp_plus_recip(exp_hi(x, t).1, true)
    } else {
        let h = expm1_hi(x, t);
        let mut ya = h[0] + h[1];
        let mut yb = -(ya - h[0] - h[1]);
        // expm1(-x) = -expm1(x) / (expm1(x) + 1)
        let denom = 1.0 + ya;
        let denomr = 1.0 / denom;
        let denomb = -(denom - 1.0 - ya) + yb;
        let ratio = ya * denomr;
        let mut temp = ratio * HEX_40000000;
        let ra = ratio + temp - temp;
        let mut rb = ratio - ra;
        temp = denom * HEX_40000000;
        let za = denom + temp - temp;
        let zb = denom - za;
        rb += (ya - za * ra - za * rb - zb * ra - zb * rb) * denomr;
        rb += yb * denomr;
        rb += -ya * denomb * denomr * denomr;
        temp = ya + ra;
        yb += -(temp - ya - ra);
        ya = temp;
        temp = ya + rb;
        yb += -(temp - ya - rb);
        ya = temp;
        (ya + yb) * 0.5
    };
    if negate {
        -result
    } else {
        result
    }
}

/// `FastMath.tanh(x)`.
pub fn tanh(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 20.0 {
        return 1.0;
    }
    if x < -20.0 {
        return -1.0;
    }
    if x == 0.0 {
        return x;
    }
    let (x, negate) = if x < 0.0 { (-x, true) } else { (x, false) };
    let t = tables();
    // ratio = (na + nb) / (da + db) with da, db from `y` plus `add`
    let ratio = |na: f64, nb: f64, ya: f64, yb: f64, add: f64| {
        let mut da = add + ya;
        let mut db = -(da - add - ya);
        let temp = da + yb;
        db += -(temp - da - yb);
        da = temp;
        let temp = da * HEX_40000000;
        let daa = da + temp - temp;
        let dab = da - daa;
        let ratio = na / da;
        let temp = ratio * HEX_40000000;
        let ratioa = ratio + temp - temp;
        let mut ratiob = ratio - ratioa;
        ratiob += (na - daa * ratioa - daa * ratiob - dab * ratioa - dab * ratiob) / da;
        ratiob += nb / da;
        ratiob += -db * na / da / da;
        ratioa + ratiob
    };
    let result = if x >= 0.5 {
        // (exp(2x) - 1) / (exp(2x) + 1)
        let h = exp_hi(x * 2.0, t).1;
        let ya = h[0] + h[1];
        let yb = -(ya - h[0] - h[1]);
        let mut na = -1.0 + ya;
        let mut nb = -(na + 1.0 - ya);
        let temp = na + yb;
        nb += -(temp - na - yb);
        na = temp;
        ratio(na, nb, ya, yb, 1.0)
    } else {
        // expm1(2x) / (expm1(2x) + 2)
        let h = expm1_hi(x * 2.0, t);
        let ya = h[0] + h[1];
        let yb = -(ya - h[0] - h[1]);
        ratio(ya, yb, ya, yb, 2.0)
    };
    if negate {
        -result
    } else {
        result
    }
}

fn poly_sine(x: f64) -> f64 {
    let x2 = x * x;
    let mut p = 2.7553817452272217E-6;
    p = p * x2 + -1.9841269659586505E-4;
    p = p * x2 + 0.008333333333329196;
    p = p * x2 + -0.16666666666666666;
    p * x2 * x
}

fn poly_cosine(x: f64) -> f64 {
    let x2 = x * x;
    let mut p = 2.479773539153719E-5;
    p = p * x2 + -0.0013888888689039883;
    p = p * x2 + 0.041666666666621166;
    p = p * x2 + -0.49999999999999994;
    p * x2
}

/// The table entry at the nearest eighth of `xa` (in [0, pi/2]): its index, the distance,
/// and `sin`, `cos` of the distance split as `FastMath` splits them
/// (`sinEpsA + sinEpsB`, `cosEpsB` with `cosEpsA = 1`).
#[inline]
fn eps_parts(xa: f64) -> (usize, f64, f64, f64) {
    let idx = ((xa * 8.0) + 0.5) as i32 as usize;
    let epsilon = xa - EIGHTHS[idx];
    let mut sin_eps_a = epsilon;
    let mut sin_eps_b = poly_sine(epsilon);
    let cos_eps_b = poly_cosine(epsilon);
    let temp = sin_eps_a * HEX_40000000;
    let temp2 = (sin_eps_a + temp) - temp;
    sin_eps_b += sin_eps_a - temp2;
    sin_eps_a = temp2;
    (idx, sin_eps_a, sin_eps_b, cos_eps_b)
}

/// Adds `t` into the pair `(a, b)` (`c = a + t; b += -(c - a - t); a = c`).
#[inline]
fn acc(a: &mut f64, b: &mut f64, t: f64) {
    let c = *a + t;
    let d = -(c - *a - t);
    *a = c;
    *b += d;
}

/// `sin(xa + xb)` for `xa` in [0, pi/2] (`FastMath.sinQ`).
fn sin_q(xa: f64, xb: f64, t: &Tables) -> f64 {
    let (idx, sin_eps_a, sin_eps_b, cos_eps_b) = eps_parts(xa);
    let cos_eps_a = 1.0;
    let (sint_a, sint_b, cost_a, cost_b) = (t.sin_a[idx], t.sin_b[idx], t.cos_a[idx], t.cos_b[idx]);
    let (mut a, mut b) = (0.0, 0.0);
    acc(&mut a, &mut b, sint_a);
    acc(&mut a, &mut b, cost_a * sin_eps_a);
    b = b + sint_a * cos_eps_b + cost_a * sin_eps_b;
    b = b + sint_b + cost_b * sin_eps_a + sint_b * cos_eps_b + cost_b * sin_eps_b;
    if xb != 0.0 {
        // the cosine times xb
        let t = ((cost_a + cost_b) * (cos_eps_a + cos_eps_b)
            - (sint_a + sint_b) * (sin_eps_a + sin_eps_b))
            * xb;
        acc(&mut a, &mut b, t);
    }
    a + b
}

/// `cos(xa + xb)` for `xa` in [0, pi/2] (`FastMath.cosQ`).
fn cos_q(xa: f64, xb: f64, t: &Tables) -> f64 {
    let a = PI2A - xa;
    let mut b = -(a - PI2A + xa);
    b += PI2B - xb;
    sin_q(a, b, t)
}

/// `tan(xa + xb)` (or the cotangent) for `xa` in [0, pi/2] (`FastMath.tanQ`).
fn tan_q(xa: f64, xb: f64, cotan: bool, t: &Tables) -> f64 {
    let (idx, sin_eps_a, sin_eps_b, cos_eps_b) = eps_parts(xa);
    let cos_eps_a = 1.0;
    let (sint_a, sint_b, cost_a, cost_b) = (t.sin_a[idx], t.sin_b[idx], t.cos_a[idx], t.cos_b[idx]);
    let (mut a, mut b) = (0.0, 0.0);
    acc(&mut a, &mut b, sint_a);
    acc(&mut a, &mut b, cost_a * sin_eps_a);
    b += sint_a * cos_eps_b + cost_a * sin_eps_b;
    b += sint_b + cost_b * sin_eps_a + sint_b * cos_eps_b + cost_b * sin_eps_b;
    let mut sina = a + b;
    let mut sinb = -(sina - a - b);
    let (mut a, mut b) = (0.0, 0.0);
    acc(&mut a, &mut b, cost_a * cos_eps_a);
    acc(&mut a, &mut b, -sint_a * sin_eps_a);
    b += cost_b * cos_eps_a + cost_a * cos_eps_b + cost_b * cos_eps_b;
    b -= sint_b * sin_eps_a + sint_a * sin_eps_b + sint_b * sin_eps_b;
    let mut cosa = a + b;
    let mut cosb = -(cosa - a - b);
    if cotan {
        std::mem::swap(&mut cosa, &mut sina);
        std::mem::swap(&mut cosb, &mut sinb);
    }
    let est = sina / cosa;
    let mut temp = est * HEX_40000000;
    let esta = (est + temp) - temp;
    let estb = est - esta;
    temp = cosa * HEX_40000000;
    let cosaa = (cosa + temp) - temp;
    let cosab = cosa - cosaa;
    let mut err = (sina - esta * cosaa - esta * cosab - estb * cosaa - estb * cosab) / cosa;
    err += sinb / cosa;
    err += -sina * cosb / cosa / cosa;
    if xb != 0.0 {
        // tan' = 1 + tan^2, cot' = -(1 + cot^2)
        let mut xbadj = xb + est * est * xb;
        if cotan {
            xbadj = -xbadj;
        }
        err += xbadj;
    }
    est + err
}

/// `(a * b) mod 2^64` and the carry-aware 128-bit accumulation steps of `reducePayneHanek`:
/// whether adding two words whose top bits are `bita`, `bitb` to a sum whose top bit is
/// `bitsum` carried out.
#[inline]
fn carried(bita: bool, bitb: bool, bitsum: bool) -> bool {
    (bita && bitb) || ((bita || bitb) && !bitsum)
}

const TOP: u64 = 0x8000000000000000;

/// `x * 2/pi` for a huge `x`: the quadrant (integer part) and the remainder times pi/2 as a
/// pair (`FastMath.reducePayneHanek`).
fn reduce_payne_hanek(x: f64) -> (i32, f64, f64) {
    let mut inbits = x.to_bits();
    let mut exponent = ((inbits >> 52) & 0x7ff) as i32 - 1023;
    inbits &= 0x000fffffffffffff;
    inbits |= 0x0010000000000000;
    exponent += 1;
    inbits <<= 11;
    let idx = (exponent >> 6) as usize;
    let shift = (exponent - ((idx as i32) << 6)) as u32;
    let (shpi0, shpi_a, shpi_b);
    if shift != 0 {
        let mut s0 = if idx == 0 {
            0
        } else {
            RECIP_2PI[idx - 1] << shift
        };
        s0 |= RECIP_2PI[idx] >> (64 - shift);
        shpi0 = s0;
        shpi_a = (RECIP_2PI[idx] << shift) | (RECIP_2PI[idx + 1] >> (64 - shift));
        shpi_b = (RECIP_2PI[idx + 1] << shift) | (RECIP_2PI[idx + 2] >> (64 - shift));
    } else {
        shpi0 = if idx == 0 { 0 } else { RECIP_2PI[idx - 1] };
        shpi_a = RECIP_2PI[idx];
        shpi_b = RECIP_2PI[idx + 1];
    }
    let m = |p: u64, q: u64| p.wrapping_mul(q);
    let mut a = inbits >> 32;
    let mut b = inbits & 0xffffffff;
    let mut c = shpi_a >> 32;
    let mut d = shpi_a & 0xffffffff;
    let mut ac = m(a, c);
    let mut bd = m(b, d);
    let mut bc = m(b, c);
    let mut ad = m(a, d);
    let mut prod_b = bd.wrapping_add(ad << 32);
    let mut prod_a = ac.wrapping_add(ad >> 32);
    let mut bita = bd & TOP != 0;
    let mut bitb = ad & 0x80000000 != 0;
    let mut bitsum = prod_b & TOP != 0;
    if carried(bita, bitb, bitsum) {
        prod_a = prod_a.wrapping_add(1);
    }
    bita = prod_b & TOP != 0;
    bitb = bc & 0x80000000 != 0;
    prod_b = prod_b.wrapping_add(bc << 32);
    prod_a = prod_a.wrapping_add(bc >> 32);
    bitsum = prod_b & TOP != 0;
    if carried(bita, bitb, bitsum) {
        prod_a = prod_a.wrapping_add(1);
    }
    c = shpi_b >> 32;
    d = shpi_b & 0xffffffff;
    ac = m(a, c);
    bc = m(b, c);
    ad = m(a, d);
    ac = ac.wrapping_add(bc.wrapping_add(ad) >> 32);
    bita = prod_b & TOP != 0;
    bitb = ac & TOP != 0;
    prod_b = prod_b.wrapping_add(ac);
    bitsum = prod_b & TOP != 0;
    if carried(bita, bitb, bitsum) {
        prod_a = prod_a.wrapping_add(1);
    }
    c = shpi0 >> 32;
    d = shpi0 & 0xffffffff;
    bd = m(b, d);
    bc = m(b, c);
    ad = m(a, d);
    prod_a = prod_a.wrapping_add(bd.wrapping_add(bc.wrapping_add(ad) << 32));
    let int_part = (prod_a >> 62) as i32;
    prod_a <<= 2;
    prod_a |= prod_b >> 62;
    prod_b <<= 2;
    // times pi/4
    a = prod_a >> 32;
    b = prod_a & 0xffffffff;
    c = PI_O_4_BITS[0] >> 32;
    d = PI_O_4_BITS[0] & 0xffffffff;
    ac = m(a, c);
    bd = m(b, d);
    bc = m(b, c);
    ad = m(a, d);
    let mut prod2_b = bd.wrapping_add(ad << 32);
    let mut prod2_a = ac.wrapping_add(ad >> 32);
    bita = bd & TOP != 0;
    bitb = ad & 0x80000000 != 0;
    bitsum = prod2_b & TOP != 0;
    if carried(bita, bitb, bitsum) {
        prod2_a = prod2_a.wrapping_add(1);
    }
    bita = prod2_b & TOP != 0;
    bitb = bc & 0x80000000 != 0;
    prod2_b = prod2_b.wrapping_add(bc << 32);
    prod2_a = prod2_a.wrapping_add(bc >> 32);
    bitsum = prod2_b & TOP != 0;
    if carried(bita, bitb, bitsum) {
        prod2_a = prod2_a.wrapping_add(1);
    }
    c = PI_O_4_BITS[1] >> 32;
    d = PI_O_4_BITS[1] & 0xffffffff;
    ac = m(a, c);
    bc = m(b, c);
    ad = m(a, d);
    ac = ac.wrapping_add(bc.wrapping_add(ad) >> 32);
    bita = prod2_b & TOP != 0;
    bitb = ac & TOP != 0;
    prod2_b = prod2_b.wrapping_add(ac);
    bitsum = prod2_b & TOP != 0;
    if carried(bita, bitb, bitsum) {
        prod2_a = prod2_a.wrapping_add(1);
    }
    a = prod_b >> 32;
    b = prod_b & 0xffffffff;
    c = PI_O_4_BITS[0] >> 32;
    d = PI_O_4_BITS[0] & 0xffffffff;
    ac = m(a, c);
    bc = m(b, c);
    ad = m(a, d);
    ac = ac.wrapping_add(bc.wrapping_add(ad) >> 32);
    bita = prod2_b & TOP != 0;
    bitb = ac & TOP != 0;
    prod2_b = prod2_b.wrapping_add(ac);
    bitsum = prod2_b & TOP != 0;
    if carried(bita, bitb, bitsum) {
        prod2_a = prod2_a.wrapping_add(1);
    }
    let two52 = 4503599627370496.0;
    let tmp_a = (prod2_a >> 12) as f64 / two52;
    let tmp_b = (((prod2_a & 0xfff) << 40) + (prod2_b >> 24)) as f64 / two52 / two52;
    let sum_a = tmp_a + tmp_b;
    let sum_b = -(sum_a - tmp_a - tmp_b);
    (int_part, sum_a * 2.0, sum_b * 2.0)
}

/// `xa` (positive, finite) reduced to [0, pi/2]: quadrant and remainder pair.
fn reduce(xa: f64) -> (i32, f64, f64) {
    if xa > 3294198.0 {
        let (k, a, b) = reduce_payne_hanek(xa);
        (k & 3, a, b)
    } else if xa > PI2A {
        // Cody-Waite
        let mut k = (xa * std::f64::consts::FRAC_2_PI) as i32;
        loop {
            let kf = -(k as f64);
            let mut a = kf * 1.570796251296997;
            let mut rem_a = xa + a;
            let mut rem_b = -(rem_a - xa - a);
            a = kf * 7.549789948768648E-8;
            let mut b = rem_a;
            rem_a = a + b;
            rem_b += -(rem_a - b - a);
            a = kf * 6.123233995736766E-17;
            b = rem_a;
            rem_a = a + b;
            rem_b += -(rem_a - b - a);
            if rem_a > 0.0 {
                return (k & 3, rem_a, rem_b);
            }
            // the input is very close to an even multiple of pi/2
            k -= 1;
        }
    } else {
        (0, xa, 0.0)
    }
}

/// `FastMath.sin(x)`.
pub fn sin(x: f64) -> f64 {
    let negative = x < 0.0;
    let xa = if negative { -x } else { x };
    if xa == 0.0 {
        return x;
    }
    if xa.is_nan() || xa == f64::INFINITY {
        return f64::NAN;
    }
    let (mut quadrant, xa, xb) = reduce(xa);
    if negative {
        quadrant ^= 2;
    }
    let t = tables();
    match quadrant {
        0 => sin_q(xa, xb, t),
        1 => cos_q(xa, xb, t),
        2 => -sin_q(xa, xb, t),
        _ => -cos_q(xa, xb, t),
    }
}

/// `FastMath.cos(x)`.
pub fn cos(x: f64) -> f64 {
    let xa = if x < 0.0 { -x } else { x };
    if xa.is_nan() || xa == f64::INFINITY {
        return f64::NAN;
    }
    let (quadrant, xa, xb) = reduce(xa);
    let t = tables();
    match quadrant {
        0 => cos_q(xa, xb, t),
        1 => -sin_q(xa, xb, t),
        2 => -cos_q(xa, xb, t),
        _ => sin_q(xa, xb, t),
    }
}

/// `FastMath.tan(x)`.
pub fn tan(x: f64) -> f64 {
    let mut negative = x < 0.0;
    let xa = if negative { -x } else { x };
    if xa == 0.0 {
        return x;
    }
    if xa.is_nan() || xa == f64::INFINITY {
        return f64::NAN;
    }
    let (mut quadrant, mut xa, mut xb) = reduce(xa);
    if xa > 1.5 {
        let a = PI2A - xa;
        let mut b = -(a - PI2A + xa);
        b += PI2B - xb;
        xa = a + b;
        xb = -(xa - a - b);
        quadrant ^= 1;
        negative = !negative;
    }
    let t = tables();
    let result = if quadrant & 1 == 0 {
        tan_q(xa, xb, false, t)
    } else {
        -tan_q(xa, xb, true, t)
    };
    if negative {
        -result
    } else {
        result
    }
}

/// `FastMath.atan(xa + xb)`, or `pi - atan` when `left_plane` (`FastMath.atan(xa, xb,
/// leftPlane)`, used by [`asin`] and [`acos`]; SystemDS's own `atan` is `Math.atan`).
fn atan_pair(mut xa: f64, mut xb: f64, left_plane: bool) -> f64 {
    if xa == 0.0 {
        return if left_plane {
            std::f64::consts::PI.copysign(xa)
        } else {
            xa
        };
    }
    let negate = xa < 0.0;
    if negate {
        xa = -xa;
        xb = -xb;
    }
    if xa > 1.633123935319537E16 {
        let h = std::f64::consts::PI * 0.5;
        return if negate ^ left_plane { -h } else { h };
    }
    let idx = if xa < 1.0 {
        (((-1.7168146928204136 * xa * xa + 8.0) * xa) + 0.5) as i32
    } else {
        let one_over_xa = 1.0 / xa;
        (-((-1.7168146928204136 * one_over_xa * one_over_xa + 8.0) * one_over_xa) + 13.07) as i32
    } as usize;
    let t = tables();
    let tt_a = t.tan_a[idx];
    let tt_b = t.tan_b[idx];
    let mut eps_a = xa - tt_a;
    let mut eps_b = -(eps_a - xa + tt_a);
    eps_b += xb - tt_b;
    let mut temp = eps_a + eps_b;
    eps_b = -(temp - eps_a - eps_b);
    eps_a = temp;
    temp = xa * HEX_40000000;
    let mut ya = xa + temp - temp;
    let mut yb = xb + xa - ya;
    xa = ya;
    xb += yb;
    if idx == 0 {
        let denom = 1.0 / (1.0 + (xa + xb) * (tt_a + tt_b));
        ya = eps_a * denom;
        yb = eps_b * denom;
    } else {
        let mut temp2 = xa * tt_a;
        let mut za = 1.0 + temp2;
        let mut zb = -(za - 1.0 - temp2);
        temp2 = xb * tt_a + xa * tt_b;
        temp = za + temp2;
        zb += -(temp - za - temp2);
        za = temp;
        zb += xb * tt_b;
        ya = eps_a / za;
        temp = ya * HEX_40000000;
        let yaa = (ya + temp) - temp;
        let yab = ya - yaa;
        temp = za * HEX_40000000;
        let zaa = (za + temp) - temp;
        let zab = za - zaa;
        yb = (eps_a - yaa * zaa - yaa * zab - yab * zaa - yab * zab) / za;
        yb += -eps_a * zb / za / za;
        yb += eps_b / za;
    }
    eps_a = ya;
    eps_b = yb;
    let eps_a2 = eps_a * eps_a;
    yb = 0.07490822288864472;
    yb = yb * eps_a2 - 0.09088450866185192;
    yb = yb * eps_a2 + 0.11111095942313305;
    yb = yb * eps_a2 - 0.1428571423679182;
    yb = yb * eps_a2 + 0.19999999999923582;
    yb = yb * eps_a2 - 0.33333333333333287;
    yb = yb * eps_a2 * eps_a;
    ya = eps_a;
    temp = ya + yb;
    yb = -(temp - ya - yb);
    ya = temp;
    yb += eps_b / (1.0 + eps_a * eps_a);
    let eighths = EIGHTHS[idx];
    let mut za = eighths + ya;
    let mut zb = -(za - eighths - ya);
    temp = za + yb;
    zb += -(temp - za - yb);
    za = temp;
    let mut result = za + zb;
    if left_plane {
        let resultb = -(result - za - zb);
        let pia = PI2A * 2.0;
        let pib = PI2B * 2.0;
        za = pia - result;
        zb = -(za - pia + result);
        zb += pib - resultb;
        result = za + zb;
    }
    if negate ^ left_plane {
        -result
    } else {
        result
    }
}

/// `FastMath.asin(x)`.
pub fn asin(x: f64) -> f64 {
    if x.is_nan() || !(-1.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == 1.0 {
        return std::f64::consts::PI / 2.0;
    }
    if x == -1.0 {
        return -std::f64::consts::PI / 2.0;
    }
    if x == 0.0 {
        return x;
    }
    // sqrt(1 - x^2) in two parts
    let mut temp = x * HEX_40000000;
    let xa = x + temp - temp;
    let xb = x - xa;
    let mut ya = xa * xa;
    let mut yb = xa * xb * 2.0 + xb * xb;
    ya = -ya;
    yb = -yb;
    let mut za = 1.0 + ya;
    let mut zb = -(za - 1.0 - ya);
    temp = za + yb;
    zb += -(temp - za - yb);
    za = temp;
    let y = za.sqrt();
    temp = y * HEX_40000000;
    ya = y + temp - temp;
    yb = y - ya;
    yb += (za - ya * ya - 2.0 * ya * yb - yb * yb) / (2.0 * y);
    let dx = zb / (2.0 * y);
    // x / sqrt(1 - x^2)
    let r = x / y;
    temp = r * HEX_40000000;
    let mut ra = r + temp - temp;
    let mut rb = r - ra;
    rb += (x - ra * ya - ra * yb - rb * ya - rb * yb) / y;
    rb += -x * dx / y / y;
    temp = ra + rb;
    rb = -(temp - ra - rb);
    ra = temp;
    atan_pair(ra, rb, false)
}

/// `FastMath.acos(x)`.
pub fn acos(x: f64) -> f64 {
    if x.is_nan() || !(-1.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == -1.0 {
        return std::f64::consts::PI;
    }
    if x == 1.0 {
        return 0.0;
    }
    if x == 0.0 {
        return std::f64::consts::PI / 2.0;
    }
    // sqrt(1 - x^2) in two parts
    let mut temp = x * HEX_40000000;
    let xa = x + temp - temp;
    let xb = x - xa;
    let mut ya = xa * xa;
    let mut yb = xa * xb * 2.0 + xb * xb;
    ya = -ya;
    yb = -yb;
    let mut za = 1.0 + ya;
    let mut zb = -(za - 1.0 - ya);
    temp = za + yb;
    zb += -(temp - za - yb);
    za = temp;
    let mut y = za.sqrt();
    temp = y * HEX_40000000;
    ya = y + temp - temp;
    yb = y - ya;
    yb += (za - ya * ya - 2.0 * ya * yb - yb * yb) / (2.0 * y);
    yb += zb / (2.0 * y);
    y = ya + yb;
    yb = -(y - ya - yb);
    // sqrt(1 - x^2) / x
    let r = y / x;
    if r.is_infinite() {
        return std::f64::consts::PI / 2.0;
    }
    let mut ra = double_high_part(r);
    let mut rb = r - ra;
    rb += (y - ra * xa - ra * xb - rb * xa - rb * xb) / x;
    rb += yb / x;
    temp = ra + rb;
    rb = -(temp - ra - rb);
    ra = temp;
    atan_pair(ra, rb, x < 0.0)
}

/// `d` with the low 30 bits of its significand cleared (subnormals as they are).
fn double_high_part(d: f64) -> f64 {
    let safe_min = f64::MIN_POSITIVE;
    if d > -safe_min && d < safe_min {
        return d;
    }
    f64::from_bits(d.to_bits() & 0xFFFFFFFFC0000000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_close_to_libm_and_handles_the_edges() {
        for i in -7450..7100 {
            let x = i as f64 * 0.1 + 0.0123;
            let (f, l) = (exp(x), x.exp());
            assert!(
                f == l || (f - l).abs() <= (2e-16 * l).max(1e-322),
                "exp({x}): {f} vs {l}"
            );
        }
        assert_eq!(exp(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-0.0), 1.0);
        assert_eq!(exp(1.0), std::f64::consts::E);
    }

    #[test]
    fn slices_give_the_scalar_bits() {
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let mut xs: Vec<f64> = vec![0.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
        for e in [-709.0f64, 710.0, -745.2, 709.8, -708.5] {
            for d in -3i64..=3 {
                xs.push(f64::from_bits(f64::to_bits(e).wrapping_add(d as u64)));
            }
        }
        let mut state = 0x9e3779b97f4a7c15u64;
        for i in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            xs.push(match i % 3 {
                0 => f64::from_bits(state),
                1 => (state >> 11) as f64 / (1u64 << 53) as f64 * 1500.0 - 750.0,
                _ => (state >> 11) as f64 / (1u64 << 53) as f64 * 20.0 - 10.0,
            });
        }
        // every offset, so that each value lands in every lane and in the remainder
        for start in 0..5 {
            let mut e = xs[start..].to_vec();
            exp_in_place(&mut e);
            let mut s = xs[start..].to_vec();
            sigmoid_in_place(&mut s);
            for ((&x, &y), &z) in xs[start..].iter().zip(&e).zip(&s) {
                assert!(same(y, exp(x)), "exp({x:e}): {y:e} vs {:e}", exp(x));
                assert!(
                    same(z, sigmoid(x)),
                    "sigmoid({x:e}): {z:e} vs {:e}",
                    sigmoid(x)
                );
            }
        }
    }

    #[test]
    fn trig_and_hyperbolic_are_close_to_libm() {
        let close = |name: &str, x: f64, f: f64, l: f64| {
            let tol = 4e-16 * l.abs().max(f64::MIN_POSITIVE);
            assert!((f - l).abs() <= tol, "{name}({x}): {f} vs {l}");
        };
        for i in -20000..20000 {
            let x = i as f64 * 0.00731 + 1e-7;
            close("sin", x, sin(x), x.sin());
            close("cos", x, cos(x), x.cos());
            if x.abs() < 30.0 {
                close("sinh", x, sinh(x), x.sinh());
                close("cosh", x, cosh(x), x.cosh());
                close("tanh", x, tanh(x), x.tanh());
            }
            let u = x / 146.3;
            close("asin", u, asin(u), u.asin());
            close("acos", u, acos(u), u.acos());
            if (x.cos()).abs() > 1e-3 {
                let tol = 1e-15 * x.tan().abs();
                assert!((tan(x) - x.tan()).abs() <= tol, "tan({x})");
            }
        }
        for x in [1e7, 3.3e6, 1e22, 1e300, f64::MAX] {
            close("sin", x, sin(x), x.sin());
            close("cos", x, cos(x), x.cos());
        }
        assert!(sin(-0.0).is_sign_negative() && tan(-0.0).is_sign_negative());
        assert!(asin(-0.0).is_sign_negative() && sinh(-0.0).is_sign_negative());
        assert!(sin(f64::INFINITY).is_nan() && cos(f64::NAN).is_nan() && asin(1.5).is_nan());
    }
}
