//! A natural logarithm for **sums of logarithms only** (the fused `wcemm`,
//! `sum(X * log(U %*% t(V) + eps))`): within 1 ulp of [`f64::ln`] everywhere, bit for bit
//! `f64::ln` on the special inputs (±0, negatives, ±Inf, NaN, subnormals, 1.0), and about
//! half the cost of `f64::ln` per value on AVX2 (four lanes at a time; 1.2 against 2.2 ns
//! on the development VM, docs/floor.md). A sum already rounds in an
//! order of its own, so a last-bit difference in its terms is of the same kind; an
//! element-wise `log` whose values a program can see keeps `f64::ln` (README, "what an
//! optimized plan may change").
//!
//! The method: a positive normal `x` is `2^k z` with `z` in `[0.6875, 1.375)` (so values near
//! 1 have `k = 0`), and the top 7 bits of `z`'s offset mantissa pick one of 128 intervals
//! with a constant `c ~ 1/z` ([`Table`]). Then `ln x = k ln2 - ln c + log1p(r)` with
//! `r = z c - 1`, `|r| < 2^-7`. `c` is a multiple of `2^-7`, so `z c - 1` is a multiple of
//! `2^-60` (`2^-59` for `z >= 1`) below `2^-7` in size: one FMA gives it exactly. `log1p(r)`
//! is `r + r^2 P(r)` with the Taylor coefficients of `log1p` up to `r^9` (truncation below
//! `2^-66 |r|`). The two intervals around 1 have `c = 1`, so there `r = z - 1` and the result
//! is accurate relative to its small size. `-ln c` is a double-double (computed at startup by
//! an `atanh` series, [`ln_dd`]) whose high part is a multiple of `2^-42`, as is
//! `k * LN2_HI` (`ln2` with its last 11 bits cleared), so their sum `w` is exact, and
//! `w + r` is split exactly (`|w| >= |r|` or `w = 0`); the only error above a hundredth of
//! an ulp is the last addition's rounding: about 0.51 ulp from the true value, against
//! `f64::ln`'s own < 0.52 ulp, hence at most 1 ulp apart (`runtime/tests/kernels.rs` checks
//! millions of inputs, and against [`ln_dd`]). Every other input (zero, negative, subnormal,
//! infinite, NaN) is `f64::ln` itself.
//!
//! The scalar code, the AVX2 code and the AVX-512 code ([`Isa`]) run the same operations in
//! the same order, so the result of a value does not depend on its position in a slice or on
//! the CPU.

use std::sync::OnceLock;

/// Intervals of the table (7 bits of the mantissa).
const BITS: u32 = 7;
const N: usize = 1 << BITS;
/// The bits of 0.6875: `x / 2^k` lands in `[0.6875, 1.375)`.
const OFF: u64 = 0x3fe6_0000_0000_0000;
/// `ln 2` with its last 11 bits cleared: `k * LN2_HI` is exact for `|k| < 2048`.
pub const LN2_HI: f64 = 0.6931471805598903; // bits 0x3fe6_2e42_fefa_3800
/// `(-1)^j / (j + 2)` for `j = 0..8`: `log1p(r) = r + r^2 (C0 + C1 r + ... + C7 r^7) + O(r^10)`.
const C: [f64; 8] = [
    -1.0 / 2.0,
    1.0 / 3.0,
    -1.0 / 4.0,
    1.0 / 5.0,
    -1.0 / 6.0,
    1.0 / 7.0,
    -1.0 / 8.0,
    1.0 / 9.0,
];

/// Per interval: `c ~ 1/z` at the interval's middle rounded to a multiple of `2^-7` (1 for the
/// two intervals that meet at 1), and `-ln c` as `hi + lo`, `hi` a multiple of `2^-42`;
/// `ln2_lo = ln 2 - LN2_HI`.
pub(crate) struct Table {
    /// `[c, hi, lo, 0]` per interval: one 32-byte row, loaded whole by the AVX2 code.
    row: [Row; N],
    ln2_lo: f64,
}

/// One interval of [`Table`].
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Row([f64; 4]);

pub(crate) fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = Table {
            row: [Row([0.0; 4]); N],
            ln2_lo: 0.0,
        };
        // the offset mantissa f in [0, 1) maps to z = (1.375 + f) / 2 below 0.625, else f + 0.375
        let z = |f: f64| {
            if f < 0.625 {
                (1.375 + f) / 2.0
            } else {
                f + 0.375
            }
        };
        let one = ((1.0f64.to_bits().wrapping_sub(OFF) >> (52 - BITS)) as usize) & (N - 1);
        for i in 0..N {
            let (a, b) = (z(i as f64 / N as f64), z((i + 1) as f64 / N as f64));
            let c = if i == one || i + 1 == one {
                1.0
            } else {
                (256.0 / (a + b)).round() / 128.0
            };
            let (h, l) = ln_dd(c);
            let (h, l) = (0.0 - h, 0.0 - l);
            let hi = (h * 2f64.powi(42)).round() / 2f64.powi(42);
            t.row[i] = Row([c, hi, (h - hi) + l, 0.0]);
        }
        let (h, l) = ln_dd(2.0);
        debug_assert_eq!(h, std::f64::consts::LN_2);
        t.ln2_lo = (h - LN2_HI) + l;
        t
    })
}

/// `a + b = s + e` exactly.
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `ln c` for `c` in `[0.5, 2]` as a double-double (about 100 bits), by
/// `ln c = 2 atanh((c - 1) / (c + 1))` summed in double-double arithmetic. Startup only.
pub fn ln_dd(c: f64) -> (f64, f64) {
    assert!((0.5..=2.0).contains(&c), "ln_dd domain");
    type Dd = (f64, f64);
    let norm = |(s, e): Dd| two_sum(s, e);
    let add = |a: Dd, b: Dd| {
        let (s, e) = two_sum(a.0, b.0);
        norm((s, e + (a.1 + b.1)))
    };
    let mul = |a: Dd, b: Dd| {
        let p = a.0 * b.0;
        let e = a.0.mul_add(b.0, -p);
        norm((p, e + (a.0 * b.1 + a.1 * b.0)))
    };
    let neg = |a: Dd| (-a.0, -a.1);
    let div = |a: Dd, b: Dd| {
        let q1 = a.0 / b.0;
        let r = add(a, neg(mul((q1, 0.0), b)));
        let q2 = r.0 / b.0;
        let r = add(r, neg(mul((q2, 0.0), b)));
        let q3 = r.0 / b.0;
        add(norm((q1, q2)), (q3, 0.0))
    };
    // c - 1 is exact on [0.5, 2]; c + 1 as a double-double
    let s = div((c - 1.0, 0.0), two_sum(c, 1.0));
    let s2 = mul(s, s);
    let (mut term, mut sum) = (s, s);
    let mut j = 1.0;
    while term.0 != 0.0 && term.0.abs() > sum.0.abs() * 1e-35 {
        term = mul(term, s2);
        sum = add(sum, div(term, (2.0 * j + 1.0, 0.0)));
        j += 1.0;
    }
    (2.0 * sum.0, 2.0 * sum.1)
}

/// True for the inputs the table handles: positive, normal and finite.
#[inline(always)]
fn normal(x: f64) -> bool {
    x.to_bits().wrapping_sub(0x0010_0000_0000_0000) < 0x7fe0_0000_0000_0000
}

/// `ln x` within 1 ulp of [`f64::ln`], and `f64::ln` itself off the positive normal
/// numbers. For sums of logarithms only (see the module's documentation).
#[inline]
pub fn ln(x: f64) -> f64 {
    if !normal(x) {
        return x.ln();
    }
    ln_normal(x, table())
}

/// [`ln`] of a positive normal `x`.
#[inline(always)]
fn ln_normal(x: f64, t: &Table) -> f64 {
    let ix = x.to_bits();
    let tmp = ix.wrapping_sub(OFF);
    let i = ((tmp >> (52 - BITS)) as usize) & (N - 1);
    let kd = ((tmp as i64) >> 52) as f64;
    let z = f64::from_bits(ix.wrapping_sub(tmp & 0xfff0_0000_0000_0000));
    let [c, hi, lo, _] = t.row[i].0;
    let r = z.mul_add(c, -1.0); // exact
    let w = kd.mul_add(LN2_HI, hi); // exact
    let h = w + r;
    let e = (w - h) + r; // w + r = h + e
    let r2 = r * r;
    let q = C[1].mul_add(r, C[0]) + r2 * C[3].mul_add(r, C[2]);
    let q = q + (r2 * r2) * (C[5].mul_add(r, C[4]) + r2 * C[7].mul_add(r, C[6]));
    let lo = e + kd.mul_add(t.ln2_lo, lo) + r2 * q;
    h + lo
}

/// The instruction sets the slice functions of this module can run on: each gives the bits of
/// [`ln`] one value at a time, whatever the lane a value lands in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// One value at a time.
    Scalar,
    /// Four lanes, AVX2 and FMA.
    Avx2,
    /// Eight lanes, AVX-512F.
    Avx512,
}

impl Isa {
    /// The widest one the CPU has (checked at run time).
    #[inline]
    pub fn best() -> Isa {
        if Isa::Avx512.available() {
            Isa::Avx512
        } else if Isa::Avx2.available() {
            Isa::Avx2
        } else {
            Isa::Scalar
        }
    }

    /// Whether the CPU can run it.
    #[inline]
    pub fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Isa::Scalar => true,
                Isa::Avx2 => {
                    std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                }
                Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Isa::Scalar
        }
    }
}

/// [`ln`] with the table at hand.
#[inline(always)]
pub(crate) fn ln_with(x: f64, t: &Table) -> f64 {
    if normal(x) {
        ln_normal(x, t)
    } else {
        x.ln()
    }
}

/// Replaces each value of `xs` by its [`ln`], on the widest [`Isa`] the CPU has; the same bits
/// on any.
pub fn ln_in_place(xs: &mut [f64]) {
    ln_in_place_on(Isa::best(), xs)
}

/// [`ln_in_place`] on `isa`. Panics if the CPU does not have it ([`Isa::available`]).
pub fn ln_in_place_on(isa: Isa, xs: &mut [f64]) {
    assert!(isa.available(), "sumlog: the CPU has no {isa:?}");
    let t = table();
    match isa {
        // SAFETY: the CPU has AVX-512F (asserted above)
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { avx512::ln_in_place(xs, t) },
        // SAFETY: the CPU has AVX2 and FMA (asserted above)
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { avx2::ln_in_place(xs, t) },
        _ => {
            for x in xs {
                *x = ln_with(*x, t);
            }
        }
    }
}

/// `acc + x_0 ln(d_0) + x_1 ln(d_1) + ...`: each product `x_q * ln(d_q)` ([`ln`]'s bits) added
/// in order, on the widest [`Isa`] the CPU has; `d` is left with any values (the logarithms,
/// or `d` itself). With AVX2 or AVX-512 the serial additions of one group of four or eight
/// run while the next group's logarithms are computed, rather than after the whole slice.
#[inline]
pub fn add_x_ln(acc: f64, x: &[f64], d: &mut [f64]) -> f64 {
    add_x_ln_on(Isa::best(), acc, x, d)
}

/// [`add_x_ln`] on `isa`. Panics if the CPU does not have it, or if the slices' lengths differ.
pub fn add_x_ln_on(isa: Isa, mut acc: f64, x: &[f64], d: &mut [f64]) -> f64 {
    assert_eq!(x.len(), d.len(), "add_x_ln: lengths");
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 {
        assert!(isa.available(), "sumlog: the CPU has no {isa:?}");
        // SAFETY: the CPU has AVX-512F (asserted above)
        return unsafe { avx512::add_x_ln(acc, x, d, table()) };
    }
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2 {
        assert!(isa.available(), "sumlog: the CPU has no {isa:?}");
        // SAFETY: the CPU has AVX2 and FMA (asserted above)
        return unsafe { avx2::add_x_ln(acc, x, d, table()) };
    }
    ln_in_place_on(isa, d);
    for (&xv, &l) in x.iter().zip(d.iter()) {
        acc += xv * l;
    }
    acc
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{ln_with, normal, Row, Table, BITS, C, LN2_HI, N, OFF};
    use std::arch::x86_64::*;

    /// [`super::ln_in_place`] with AVX2: [`super::ln_normal`]'s operations on four lanes, the
    /// lanes that are not positive normal numbers replaced by `f64::ln`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn ln_in_place(xs: &mut [f64], t: &Table) {
        let mut chunks = xs.chunks_exact_mut(4);
        for ch in &mut chunks {
            let y = ln_four(ch, t);
            ch.copy_from_slice(&y);
        }
        for x in chunks.into_remainder() {
            *x = ln_with(*x, t);
        }
    }

    /// [`super::ln`] of the first four values of `xs`: [`ln4`] on the four lanes, a lane that
    /// is not a positive normal number replaced by `f64::ln`.
    #[inline(always)]
    unsafe fn ln_four(xs: &[f64], t: &Table) -> [f64; 4] {
        let xs = &xs[..4];
        let x = _mm256_loadu_pd(xs.as_ptr());
        // the table rows' indices from the bits in general registers: shorter than a vector
        // shift, store and reload
        let row = |l: usize| {
            let b = xs[l].to_bits().wrapping_sub(OFF);
            &t.row[(b >> (52 - BITS)) as usize & (N - 1)]
        };
        let y = ln4(x, [row(0), row(1), row(2), row(3)], t.ln2_lo);
        let ok = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(x, _mm256_set1_pd(f64::MIN_POSITIVE)),
            _mm256_cmp_pd::<_CMP_LE_OQ>(x, _mm256_set1_pd(f64::MAX)),
        );
        let mut ls = [0.0f64; 4];
        _mm256_storeu_pd(ls.as_mut_ptr(), y);
        if _mm256_movemask_pd(ok) != 0xf {
            for (l, &x) in ls.iter_mut().zip(xs) {
                if !normal(x) {
                    *l = x.ln();
                }
            }
        }
        ls
    }

    /// [`super::add_x_ln`] with AVX2: per four values, their logarithms ([`ln_four`]), then the four products
    /// `x_q * ln(d_q)` added to `acc` one by one in order, so that the serial additions of one
    /// group run while the next group's logarithms are computed (rather than after a whole
    /// batch of logarithms).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn add_x_ln(mut acc: f64, x: &[f64], d: &[f64], t: &Table) -> f64 {
        let mut dc = d.chunks_exact(4);
        let mut xc = x.chunks_exact(4);
        for (dq, xq) in (&mut dc).zip(&mut xc) {
            let ls = ln_four(dq, t);
            for (&xv, &l) in xq.iter().zip(&ls) {
                acc += xv * l;
            }
        }
        for (&dv, &xv) in dc.remainder().iter().zip(xc.remainder()) {
            acc += xv * ln_with(dv, t);
        }
        acc
    }

    /// [`super::ln_normal`] on four lanes, given their table rows (any bits in a lane that is
    /// not positive normal).
    #[inline(always)]
    unsafe fn ln4(x: __m256d, rows: [&Row; 4], ln2_lo: f64) -> __m256d {
        let ix = _mm256_castpd_si256(x);
        let tmp = _mm256_sub_epi64(ix, _mm256_set1_epi64x(OFF as i64));
        // k + 1023 in [1, 2047] for a normal x, turned into k as a double: 2^52 + (k + 1023)
        // minus 2^52 + 1023, exact
        let kb = _mm256_srli_epi64::<52>(_mm256_add_epi64(
            tmp,
            _mm256_set1_epi64x(0x3ff0_0000_0000_0000),
        ));
        let kd = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(
                kb,
                _mm256_set1_epi64x(0x4330_0000_0000_0000),
            )),
            _mm256_set1_pd(4503599627370496.0 + 1023.0),
        );
        let z = _mm256_castsi256_pd(_mm256_sub_epi64(
            ix,
            _mm256_and_si256(tmp, _mm256_set1_epi64x(0xfff0_0000_0000_0000u64 as i64)),
        ));
        // the four lanes' rows [c, hi, lo, 0], transposed
        let row = |l: usize| _mm256_load_pd(rows[l].0.as_ptr());
        let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
        let (t0, t1) = (_mm256_unpacklo_pd(r0, r1), _mm256_unpackhi_pd(r0, r1));
        let (t2, t3) = (_mm256_unpacklo_pd(r2, r3), _mm256_unpackhi_pd(r2, r3));
        let c = _mm256_permute2f128_pd::<0x20>(t0, t2);
        let lo = _mm256_permute2f128_pd::<0x31>(t0, t2);
        let hi = _mm256_permute2f128_pd::<0x20>(t1, t3);
        let r = _mm256_fmsub_pd(z, c, _mm256_set1_pd(1.0));
        let w = _mm256_fmadd_pd(kd, _mm256_set1_pd(LN2_HI), hi);
        let h = _mm256_add_pd(w, r);
        let e = _mm256_add_pd(_mm256_sub_pd(w, h), r);
        let r2 = _mm256_mul_pd(r, r);
        let q = _mm256_add_pd(
            _mm256_fmadd_pd(_mm256_set1_pd(C[1]), r, _mm256_set1_pd(C[0])),
            _mm256_mul_pd(
                r2,
                _mm256_fmadd_pd(_mm256_set1_pd(C[3]), r, _mm256_set1_pd(C[2])),
            ),
        );
        let q = _mm256_add_pd(
            q,
            _mm256_mul_pd(
                _mm256_mul_pd(r2, r2),
                _mm256_add_pd(
                    _mm256_fmadd_pd(_mm256_set1_pd(C[5]), r, _mm256_set1_pd(C[4])),
                    _mm256_mul_pd(
                        r2,
                        _mm256_fmadd_pd(_mm256_set1_pd(C[7]), r, _mm256_set1_pd(C[6])),
                    ),
                ),
            ),
        );
        let l = _mm256_add_pd(
            _mm256_add_pd(e, _mm256_fmadd_pd(kd, _mm256_set1_pd(ln2_lo), lo)),
            _mm256_mul_pd(r2, q),
        );
        _mm256_add_pd(h, l)
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    use super::{ln_with, normal, Table, BITS, C, LN2_HI, N, OFF};
    use std::arch::x86_64::*;

    /// [`super::ln_in_place`] with AVX-512F, eight lanes at a time ([`ln8`]).
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn ln_in_place(xs: &mut [f64], t: &Table) {
        let mut chunks = xs.chunks_exact_mut(8);
        for ch in &mut chunks {
            let y = ln8(ch, t);
            _mm512_storeu_pd(ch.as_mut_ptr(), y);
        }
        for x in chunks.into_remainder() {
            *x = ln_with(*x, t);
        }
    }

    /// [`super::add_x_ln`] with AVX-512F: per eight values, their logarithms ([`ln8`]), the
    /// eight products `x_q * ln(d_q)` in one register, then added to `acc` one by one in order.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn add_x_ln(mut acc: f64, x: &[f64], d: &[f64], t: &Table) -> f64 {
        let mut dc = d.chunks_exact(8);
        let mut xc = x.chunks_exact(8);
        for (dq, xq) in (&mut dc).zip(&mut xc) {
            let p = _mm512_mul_pd(_mm512_loadu_pd(xq.as_ptr()), ln8(dq, t));
            let mut ps = [0.0f64; 8];
            _mm512_storeu_pd(ps.as_mut_ptr(), p);
            for v in ps {
                acc += v;
            }
        }
        for (&dv, &xv) in dc.remainder().iter().zip(xc.remainder()) {
            acc += xv * ln_with(dv, t);
        }
        acc
    }

    /// [`super::ln`] of eight values (`xs.len() >= 8`, the first eight): [`super::ln_normal`]'s
    /// operations in its order on eight lanes, so its bits, the lanes that are not positive
    /// normal numbers replaced by `f64::ln`. The table rows `[c, hi, lo, 0]` are loaded by
    /// indices computed in general registers and transposed (cheaper than three gathers).
    /// Inlined into its AVX-512F callers (no closures in it: a closure would not have the
    /// callers' target features, and its intrinsics would become calls).
    #[inline(always)]
    unsafe fn ln8(xs: &[f64], t: &Table) -> __m512d {
        let xs = &xs[..8];
        // two 256-bit loads: the values may just have been stored 256 bits at a time (wcemm's
        // AVX2 dot products), and one 512-bit load of two such stores waits for them to reach
        // the cache
        let x = _mm512_insertf64x4::<1>(
            _mm512_castpd256_pd512(_mm256_loadu_pd(xs.as_ptr())),
            _mm256_loadu_pd(xs[4..].as_ptr()),
        );
        macro_rules! row {
            ($l:expr) => {
                _mm256_load_pd(
                    t.row[(xs[$l].to_bits().wrapping_sub(OFF) >> (52 - BITS)) as usize & (N - 1)]
                        .0
                        .as_ptr(),
                )
            };
        }
        let rows = [
            row!(0),
            row!(1),
            row!(2),
            row!(3),
            row!(4),
            row!(5),
            row!(6),
            row!(7),
        ];
        ln8_rows(x, rows, t)
    }

    /// [`super::ln`] of the eight lanes of `x`, as [`ln8`] (its bits), for values already in a
    /// register: the table rows' byte offsets ([`row_offsets`]) are stored once, then loaded by
    /// general registers ([`ln8_at`]). Inlined into its AVX-512F callers (no closures in it).
    #[inline(always)]
    pub(crate) unsafe fn ln8_lanes(x: __m512d, t: &Table) -> __m512d {
        let mut offs = [0usize; 8];
        _mm512_storeu_si512(offs.as_mut_ptr().cast(), row_offsets(x));
        ln8_at(x, &offs, t)
    }

    /// The byte offsets in the table of the rows of [`ln8`]'s eight lanes: the top [`BITS`]
    /// bits of each value's offset mantissa times the row's 32 bytes (any offset in the table
    /// for a lane that is not a positive normal number).
    #[inline(always)]
    pub(crate) unsafe fn row_offsets(x: __m512d) -> __m512i {
        let tmp = _mm512_sub_epi64(_mm512_castpd_si512(x), _mm512_set1_epi64(OFF as i64));
        _mm512_and_si512(
            _mm512_srli_epi64::<{ 52 - BITS - 5 }>(tmp),
            _mm512_set1_epi64(((N - 1) << 5) as i64),
        )
    }

    /// [`ln8`] of the lanes of `x`, given their rows' byte offsets ([`row_offsets`] of `x`,
    /// stored: `offs.len() >= 8`, the first eight; each offset is masked into the table).
    #[inline(always)]
    pub(crate) unsafe fn ln8_at(x: __m512d, offs: &[usize], t: &Table) -> __m512d {
        let offs = &offs[..8];
        let base = t.row.as_ptr().cast::<u8>();
        macro_rules! row {
            ($l:expr) => {
                // SAFETY: a multiple of 32 below the table's N rows of 32 bytes
                _mm256_load_pd(base.add(offs[$l] & ((N - 1) << 5)).cast())
            };
        }
        let rows = [
            row!(0),
            row!(1),
            row!(2),
            row!(3),
            row!(4),
            row!(5),
            row!(6),
            row!(7),
        ];
        ln8_rows(x, rows, t)
    }

    /// [`ln8`] given the eight lanes' table rows (any rows for lanes that are not positive
    /// normal numbers). No closures in it, as in [`ln8`].
    #[inline(always)]
    unsafe fn ln8_rows(x: __m512d, rows: [__m256d; 8], t: &Table) -> __m512d {
        macro_rules! pair {
            ($a:expr) => {
                _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(rows[$a]), rows[$a + 1])
            };
        }
        let (z01, z23, z45, z67) = (pair!(0), pair!(2), pair!(4), pair!(6));
        // per 128-bit lane: [c, hi] and [lo, 0] of rows 0/2, 1/3 (4/6, 5/7) interleaved
        let (a, b) = (_mm512_unpacklo_pd(z01, z23), _mm512_unpackhi_pd(z01, z23));
        let (a2, b2) = (_mm512_unpacklo_pd(z45, z67), _mm512_unpackhi_pd(z45, z67));
        let first = _mm512_set_epi64(13, 9, 12, 8, 5, 1, 4, 0);
        let second = _mm512_set_epi64(15, 11, 14, 10, 7, 3, 6, 2);
        let c = _mm512_permutex2var_pd(a, first, a2);
        let lo = _mm512_permutex2var_pd(a, second, a2);
        let hi = _mm512_permutex2var_pd(b, first, b2);

        let ix = _mm512_castpd_si512(x);
        let tmp = _mm512_sub_epi64(ix, _mm512_set1_epi64(OFF as i64));
        // k as a double, as in the AVX2 code
        let kb = _mm512_srli_epi64::<52>(_mm512_add_epi64(
            tmp,
            _mm512_set1_epi64(0x3ff0_0000_0000_0000),
        ));
        let kd = _mm512_sub_pd(
            _mm512_castsi512_pd(_mm512_or_si512(
                kb,
                _mm512_set1_epi64(0x4330_0000_0000_0000),
            )),
            _mm512_set1_pd(4503599627370496.0 + 1023.0),
        );
        let z = _mm512_castsi512_pd(_mm512_sub_epi64(
            ix,
            _mm512_and_si512(tmp, _mm512_set1_epi64(0xfff0_0000_0000_0000u64 as i64)),
        ));
        use _mm512_set1_pd as s;
        let r = _mm512_fmsub_pd(z, c, s(1.0));
        let w = _mm512_fmadd_pd(kd, s(LN2_HI), hi);
        let h = _mm512_add_pd(w, r);
        let e = _mm512_add_pd(_mm512_sub_pd(w, h), r);
        let r2 = _mm512_mul_pd(r, r);
        let q = _mm512_add_pd(
            _mm512_fmadd_pd(s(C[1]), r, s(C[0])),
            _mm512_mul_pd(r2, _mm512_fmadd_pd(s(C[3]), r, s(C[2]))),
        );
        let q = _mm512_add_pd(
            q,
            _mm512_mul_pd(
                _mm512_mul_pd(r2, r2),
                _mm512_add_pd(
                    _mm512_fmadd_pd(s(C[5]), r, s(C[4])),
                    _mm512_mul_pd(r2, _mm512_fmadd_pd(s(C[7]), r, s(C[6]))),
                ),
            ),
        );
        let l = _mm512_add_pd(
            _mm512_add_pd(e, _mm512_fmadd_pd(kd, s(t.ln2_lo), lo)),
            _mm512_mul_pd(r2, q),
        );
        let y = _mm512_add_pd(h, l);
        let ok = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(x, s(f64::MIN_POSITIVE))
            & _mm512_cmp_pd_mask::<_CMP_LE_OQ>(x, s(f64::MAX));
        if ok == 0xff {
            return y;
        }
        let (mut ys, mut xs) = ([0.0f64; 8], [0.0f64; 8]);
        _mm512_storeu_pd(ys.as_mut_ptr(), y);
        _mm512_storeu_pd(xs.as_mut_ptr(), x);
        for (o, x) in ys.iter_mut().zip(xs) {
            if !normal(x) {
                *o = x.ln();
            }
        }
        _mm512_loadu_pd(ys.as_ptr())
    }
}
