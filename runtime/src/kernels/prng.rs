//! The pseudo-random number generators behind SystemDS's `rand` and `sample`, reimplemented
//! from their published definitions so that a seed gives SystemDS's numbers bit for bit:
//!
//! * [`JavaRandom`]: `java.util.Random`, the 48-bit linear congruential generator of Knuth
//!   (multiplier `0x5DEECE66D`, increment 11), with its `nextInt`, `nextInt(bound)`,
//!   `nextLong` and 53-bit `nextDouble`.
//! * [`Well1024a`]: the WELL1024a generator of Panneton, L'Ecuyer and Matsumoto (32 words of
//!   state, parameters m1 = 3, m2 = 24, m3 = 10) as Apache Commons Math 3 seeds and tempers
//!   it, with Commons Math's `nextLong`, 52-bit `nextDouble` and Box-Muller `nextGaussian`.
//! * [`NormalGen`]: SystemDS's standard normal stream: Box-Muller pairs from a `JavaRandom`,
//!   the first pair drawn when the generator is seeded.
//! * [`PoissonGen`]: Commons Math's Poisson sampler over a WELL1024a: the product of
//!   uniforms for a mean below 40, otherwise the rejection method of Devroye (1986) with the
//!   Ahrens-Dieter exponential sampler.
//!
//! The transcendental functions come from the platform's libm where Java uses its own
//! (`Math.log` intrinsics, `FastMath`); both are faithfully rounded, so they can disagree in
//! the last bit on rare arguments. For uniform values (no transcendental function) the
//! streams are exact; normal values agree except in such rare last-bit cases.

/// `java.util.Random`: a 48-bit linear congruential generator.
#[derive(Clone, Debug)]
pub struct JavaRandom {
    state: u64,
}

const LCG_MULT: u64 = 0x5_DEEC_E66D;
const LCG_ADD: u64 = 0xB;
const LCG_MASK: u64 = (1 << 48) - 1;

impl JavaRandom {
    /// `new Random(seed)` (the seed is scrambled as Java does).
    pub fn new(seed: i64) -> JavaRandom {
        JavaRandom {
            state: (seed as u64 ^ LCG_MULT) & LCG_MASK,
        }
    }

    /// `setSeed(seed)`.
    pub fn set_seed(&mut self, seed: i64) {
        self.state = (seed as u64 ^ LCG_MULT) & LCG_MASK;
    }

    /// `next(bits)`: the top `bits` bits of the advanced state, as a Java `int`.
    #[inline(always)]
    fn next(&mut self, bits: u32) -> i32 {
        self.state = self.state.wrapping_mul(LCG_MULT).wrapping_add(LCG_ADD) & LCG_MASK;
        (self.state >> (48 - bits)) as u32 as i32
    }

    /// `nextInt()`.
    pub fn next_int(&mut self) -> i32 {
        self.next(32)
    }

    /// `nextInt(bound)` for `bound > 0`: uniform in `[0, bound)`, rejecting the biased tail.
    pub fn next_int_bounded(&mut self, bound: i32) -> i32 {
        debug_assert!(bound > 0);
        let mut r = self.next(31);
        let m = bound - 1;
        if bound & m == 0 {
            return ((bound as i64 * r as i64) >> 31) as i32;
        }
        let mut u = r;
        loop {
            r = u % bound;
            if u.wrapping_sub(r).wrapping_add(m) >= 0 {
                return r;
            }
            u = self.next(31);
        }
    }

    /// `nextLong()`.
    pub fn next_long(&mut self) -> i64 {
        ((self.next(32) as i64) << 32).wrapping_add(self.next(32) as i64)
    }

    /// `nextDouble()`: 53 random bits in `[0, 1)`.
    #[inline(always)]
    pub fn next_double(&mut self) -> f64 {
        let hi = (self.next(26) as i64) << 27;
        let lo = self.next(27) as i64;
        (hi + lo) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `out.len()` calls of [`Self::next_double`] into `out`, in order, leaving the generator
    /// where those calls would: the same values, bit for bit. Long runs are cut into
    /// [`FILL_LANES`] consecutive segments, each started from its state by a jump ahead of the
    /// LCG (`x -> a x + c` composed `2 * offset` times, mod 2^48), and the segments advance
    /// side by side, so the processor overlaps their multiplies instead of waiting on one chain.
    pub fn fill_doubles(&mut self, out: &mut [f64]) {
        const L: usize = FILL_LANES;
        let q = out.len() / L;
        if q < 16 {
            for o in out {
                *o = self.next_double();
            }
            return;
        }
        // two LCG steps per double: the start of segment l is 2 q l steps ahead
        let (ja, jc) = lcg_jump(2 * q as u64);
        let mut st = [0u64; L];
        st[0] = self.state;
        for l in 1..L {
            st[l] = st[l - 1].wrapping_mul(ja).wrapping_add(jc) & LCG_MASK;
        }
        let (body, rest) = out.split_at_mut(L * q);
        let step = |s: u64| s.wrapping_mul(LCG_MULT).wrapping_add(LCG_ADD) & LCG_MASK;
        let unit = 1.0 / (1u64 << 53) as f64;
        for i in 0..q {
            for l in 0..L {
                let s1 = step(st[l]);
                let s2 = step(s1);
                st[l] = s2;
                // next(26) << 27 plus next(27), as next_double
                let hi = ((s1 >> (48 - 26)) as u32 as i32 as i64) << 27;
                let lo = (s2 >> (48 - 27)) as u32 as i32 as i64;
                body[l * q + i] = (hi + lo) as f64 * unit;
            }
        }
        // the last segment ends where all L q doubles end
        self.state = st[L - 1];
        for o in rest {
            *o = self.next_double();
        }
    }
}

/// Segments that [`JavaRandom::fill_doubles`] advances side by side.
const FILL_LANES: usize = 4;

/// The LCG of [`JavaRandom`] composed `k` times, `x -> a x + c (mod 2^48)`, as `(a, c)`
/// (square and multiply on the affine maps; wrapping arithmetic mod 2^64 is exact mod 2^48).
fn lcg_jump(mut k: u64) -> (u64, u64) {
    let (mut a, mut c) = (1u64, 0u64); // the identity
    let (mut pa, mut pc) = (LCG_MULT, LCG_ADD); // the map composed 2^bit times
    while k > 0 {
        if k & 1 == 1 {
            // apply (a, c) first, then (pa, pc)
            a = a.wrapping_mul(pa);
            c = c.wrapping_mul(pa).wrapping_add(pc);
        }
        pc = pc.wrapping_mul(pa).wrapping_add(pc);
        pa = pa.wrapping_mul(pa);
        k >>= 1;
    }
    (a & LCG_MASK, c & LCG_MASK)
}

/// The WELL1024a generator as seeded and used by Apache Commons Math 3.
#[derive(Clone, Debug)]
pub struct Well1024a {
    v: [u32; 32],
    index: usize,
    /// the second value of the last Box-Muller pair, if not yet used
    gaussian: Option<f64>,
}

impl Well1024a {
    /// A generator seeded with an array of ints (`setSeed(int[])`): the ints fill the state
    /// and the rest is extended by Knuth's multiplicative recurrence.
    pub fn from_ints(seed: &[i32]) -> Well1024a {
        let mut v = [0u32; 32];
        let n = seed.len().min(32);
        for (d, &s) in v.iter_mut().zip(&seed[..n]) {
            *d = s as u32;
        }
        for i in n..32 {
            // sign-extended previous word, arithmetic shift, as in Commons Math
            let l = v[i - n] as i32 as i64;
            v[i] = (1_812_433_253i64
                .wrapping_mul(l ^ (l >> 30))
                .wrapping_add(i as i64)
                & 0xffff_ffff) as u32;
        }
        Well1024a {
            v,
            index: 0,
            gaussian: None,
        }
    }

    /// `setSeed(long)`: the high and low halves as a two-int seed.
    pub fn from_long(seed: i64) -> Well1024a {
        let s = seed as u64;
        Well1024a::from_ints(&[(s >> 32) as u32 as i32, s as u32 as i32])
    }

    /// `next(bits)`: one step of the recurrence, the top `bits` bits of the new word.
    #[inline]
    fn next(&mut self, bits: u32) -> u32 {
        const R: usize = 32;
        let i = self.index;
        let rm1 = (i + R - 1) % R;
        let v0 = self.v[i];
        let vm1 = self.v[(i + 3) % R];
        let vm2 = self.v[(i + 24) % R];
        let vm3 = self.v[(i + 10) % R];
        let z0 = self.v[rm1];
        let z1 = v0 ^ (vm1 ^ (vm1 >> 8));
        let z2 = (vm2 ^ (vm2 << 19)) ^ (vm3 ^ (vm3 << 14));
        let z3 = z1 ^ z2;
        let z4 = (z0 ^ (z0 << 11)) ^ (z1 ^ (z1 << 7)) ^ (z2 ^ (z2 << 13));
        self.v[i] = z3;
        self.v[rm1] = z4;
        self.index = rm1;
        z4 >> (32 - bits)
    }

    /// `nextLong()`: two 32-bit words, high first.
    pub fn next_long(&mut self) -> i64 {
        let hi = (self.next(32) as u64) << 32;
        let lo = self.next(32) as u64;
        (hi | lo) as i64
    }

    /// `nextDouble()`: 52 random bits in `[0, 1)`.
    pub fn next_double(&mut self) -> f64 {
        let hi = (self.next(26) as u64) << 26;
        let lo = self.next(26) as u64;
        (hi | lo) as f64 * (1.0 / (1u64 << 52) as f64)
    }

    /// `nextGaussian()`: Box-Muller pairs, the second value kept for the next call.
    pub fn next_gaussian(&mut self) -> f64 {
        if let Some(g) = self.gaussian.take() {
            return g;
        }
        let x = self.next_double();
        let y = self.next_double();
        let alpha = 2.0 * std::f64::consts::PI * x;
        let r = (-2.0 * y.ln()).sqrt();
        self.gaussian = Some(r * alpha.sin());
        r * alpha.cos()
    }
}

/// SystemDS's standard normal stream (`NormalPRNGenerator`): Box-Muller pairs
/// `sqrt(-2 ln u1) * (cos, sin)(2 pi u2)` from a `java.util.Random`.
#[derive(Clone, Debug)]
pub struct NormalGen {
    rng: JavaRandom,
    pair: (f64, f64),
    second: bool,
}

impl NormalGen {
    /// Seeds the stream; the first pair is drawn at once, as SystemDS does.
    pub fn new(seed: i64) -> NormalGen {
        let mut rng = JavaRandom::new(seed);
        let pair = box_muller(&mut rng);
        NormalGen {
            rng,
            pair,
            second: false,
        }
    }

    /// The next normal deviate.
    #[inline]
    pub fn next_double(&mut self) -> f64 {
        if !self.second {
            self.second = true;
            self.pair.0
        } else {
            self.second = false;
            let d = self.pair.1;
            self.pair = box_muller(&mut self.rng);
            d
        }
    }
}

#[inline]
fn box_muller(rng: &mut JavaRandom) -> (f64, f64) {
    let u1 = rng.next_double();
    let u2 = rng.next_double();
    let v1 = (-2.0 * u1.ln()).sqrt();
    let v2 = 2.0 * std::f64::consts::PI * u2;
    (v1 * v2.cos(), v1 * v2.sin())
}

/// Commons Math's Poisson sampler (`PoissonDistribution.sample()`) over a WELL1024a seeded
/// with a long, as SystemDS's `PoissonPRNGenerator` builds it.
#[derive(Clone, Debug)]
pub struct PoissonGen {
    rng: Well1024a,
    mean: f64,
}

impl PoissonGen {
    /// A sampler of the given mean (`mean > 0`, checked by the caller).
    pub fn new(mean: f64, seed: i64) -> PoissonGen {
        PoissonGen {
            rng: Well1024a::from_long(seed),
            mean,
        }
    }

    /// The next sample, as a double (capped at `i32::MAX` as Commons Math does).
    pub fn next_double(&mut self) -> f64 {
        let n = next_poisson(&mut self.rng, self.mean);
        n.min(i32::MAX as i64) as f64
    }
}

fn next_poisson(rng: &mut Well1024a, mean: f64) -> i64 {
    if mean < 40.0 {
        // multiply uniforms until the product drops below exp(-mean)
        let p = (-mean).exp();
        let mut n = 0i64;
        let mut r = 1.0;
        while (n as f64) < 1000.0 * mean {
            r *= rng.next_double();
            if r >= p {
                n += 1;
            } else {
                return n;
            }
        }
        return n;
    }
    let lambda = mean.floor();
    let lambda_frac = mean - lambda;
    let log_lambda = lambda.ln();
    let log_lambda_fact = factorial_ln(lambda as i64);
    let y2 = if lambda_frac <= 0.0 {
        0
    } else {
        next_poisson(rng, lambda_frac)
    };
    let delta = (lambda * (32.0 * lambda / std::f64::consts::PI + 1.0).ln()).sqrt();
    let half_delta = delta / 2.0;
    let twolpd = 2.0 * lambda + delta;
    let a1 = (std::f64::consts::PI * twolpd).sqrt() * (1.0 / (8.0 * lambda)).exp();
    let a2 = (twolpd / delta) * (-delta * (1.0 + delta) / twolpd).exp();
    let a_sum = a1 + a2 + 1.0;
    let p1 = a1 / a_sum;
    let p2 = a2 / a_sum;
    let c1 = 1.0 / (8.0 * lambda);
    let mut x;
    let mut y;
    let mut v;
    loop {
        let u = rng.next_double();
        if u <= p1 {
            let n = rng.next_gaussian();
            x = n * (lambda + half_delta).sqrt() - 0.5;
            if x > delta || x < -lambda {
                continue;
            }
            y = if x < 0.0 { x.floor() } else { x.ceil() };
            let e = exponential(rng);
            v = -e - (n * n / 2.0) + c1;
        } else if u > p1 + p2 {
            y = lambda;
            break;
        } else {
            x = delta + (twolpd / delta) * exponential(rng);
            y = x.ceil();
            v = -exponential(rng) - delta * (x + 1.0) / twolpd;
        }
        let a = if x < 0.0 { 1.0 } else { 0.0 };
        let t = y * (y + 1.0) / (2.0 * lambda);
        if v < -t && a == 0.0 {
            y += lambda;
            break;
        }
        let qr = t * ((2.0 * y + 1.0) / (6.0 * lambda) - 1.0);
        let qa = qr - (t * t) / (3.0 * (lambda + a * (y + 1.0)));
        if v < qa {
            y += lambda;
            break;
        }
        if v > qr {
            continue;
        }
        if v < y * log_lambda - factorial_ln((y + lambda) as i64) + log_lambda_fact {
            y += lambda;
            break;
        }
    }
    y2 + y as i64
}

/// `ln(n!)`: exact products up to 20!, else Stirling's series (relative error far below
/// an ulp for n > 20).
fn factorial_ln(n: i64) -> f64 {
    if n < 21 {
        let mut f = 1.0f64;
        for k in 2..=n.max(1) {
            f *= k as f64;
        }
        return f.ln();
    }
    let x = (n + 1) as f64;
    // ln Gamma(x) = (x - 1/2) ln x - x + ln(2 pi)/2 + 1/(12x) - 1/(360x^3) + 1/(1260x^5) - ...
    let x2 = x * x;
    let series = 1.0 / (12.0 * x) - 1.0 / (360.0 * x * x2) + 1.0 / (1260.0 * x * x2 * x2)
        - 1.0 / (1680.0 * x * x2 * x2 * x2);
    (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + series
}

/// The Ahrens-Dieter (1972) SA exponential sampler of mean 1, as Commons Math implements it:
/// `q_i = sum_{k<=i} ln(2)^k / k!` until it reaches 1.
fn exponential(rng: &mut Well1024a) -> f64 {
    let qi = exp_sa_qi();
    let mut a = 0.0;
    let mut u = rng.next_double();
    while u < 0.5 {
        a += qi[0];
        u *= 2.0;
    }
    u += u - 1.0;
    if u <= qi[0] {
        return a + u;
    }
    let mut i = 0;
    let mut u2 = rng.next_double();
    let mut umin = u2;
    loop {
        i += 1;
        u2 = rng.next_double();
        if u2 < umin {
            umin = u2;
        }
        if u <= qi[i] {
            break;
        }
    }
    a + umin * qi[0]
}

fn exp_sa_qi() -> &'static [f64] {
    use std::sync::OnceLock;
    static QI: OnceLock<Vec<f64>> = OnceLock::new();
    QI.get_or_init(|| {
        let ln2 = std::f64::consts::LN_2;
        let mut q = 0.0;
        let mut out = Vec::new();
        let mut i = 1;
        let mut fact = 1.0f64;
        while q < 1.0 {
            fact *= i as f64;
            q += ln2.powi(i) / fact;
            out.push(q);
            i += 1;
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_random_matches_known_values() {
        // new Random(42): nextInt() = -1170105035, nextInt() = 234785527 (Java's documented
        // LCG; values as printed by a JVM)
        let mut r = JavaRandom::new(42);
        assert_eq!(r.next_int(), -1_170_105_035);
        assert_eq!(r.next_int(), 234_785_527);
        let mut r = JavaRandom::new(42);
        assert_eq!(r.next_double(), 0.7275636800328681);
        let mut r = JavaRandom::new(0);
        assert_eq!(r.next_long(), -4_962_768_465_676_381_896);
    }

    #[test]
    fn filled_doubles_are_the_sequence_of_next_double() {
        for seed in [0i64, 42, -7, 1 << 40] {
            for n in [0usize, 1, 5, 63, 64, 65, 67, 500, 1001] {
                let mut a = JavaRandom::new(seed);
                let want: Vec<f64> = (0..n).map(|_| a.next_double()).collect();
                let mut b = JavaRandom::new(seed);
                let mut got = vec![0.0; n];
                b.fill_doubles(&mut got);
                for (i, (x, y)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(x.to_bits(), y.to_bits(), "seed {seed} n {n} value {i}");
                }
                // the generator continues where the calls would have left it
                assert_eq!(b.next_int(), a.next_int(), "seed {seed} n {n}: state after");
            }
        }
        for k in [0u64, 1, 2, 3, 1000, 123_456_789] {
            let mut r = JavaRandom::new(9);
            let (ja, jc) = lcg_jump(k);
            let jumped = r.state.wrapping_mul(ja).wrapping_add(jc) & LCG_MASK;
            for _ in 0..k.min(1000) {
                r.next(32);
            }
            if k <= 1000 {
                assert_eq!(jumped, r.state, "jump {k}");
            }
        }
    }

    #[test]
    fn bounded_ints_stay_in_range() {
        let mut r = JavaRandom::new(7);
        for bound in [1, 2, 3, 7, 8, 1000, i32::MAX] {
            for _ in 0..100 {
                let v = r.next_int_bounded(bound);
                assert!((0..bound).contains(&v));
            }
        }
    }

    #[test]
    fn poisson_mean_is_close() {
        for mean in [0.5, 3.0, 45.5] {
            let mut g = PoissonGen::new(mean, 11);
            let n = 20000;
            let s: f64 = (0..n).map(|_| g.next_double()).sum();
            let m = s / n as f64;
            assert!((m - mean).abs() < 0.05 * mean + 0.05, "mean {mean}: {m}");
        }
    }
}

/// SystemDS's counter-based generator (`PhiloxUniformCBPRNGenerator`, `pdf="cb_uniform"`):
/// Philox4x64 with 10 rounds, the key `(seed, seed)`, and a 256-bit counter the caller owns.
///
/// A call [`Philox4x64::uniform`] of `n` values runs the rounds once per group of four
/// (counter `ctr`, `ctr + 1`, ...) and advances the caller's counter by the number of *whole*
/// groups, `n / 4`: a trailing partial group is computed from the counter reached but does not
/// advance it (so a call for fewer than four values leaves the counter where it was), as
/// SystemDS's generator does. Each 64-bit word `w` (a Java `long`) becomes
/// `w * (0.5 / Long.MAX_VALUE) + 0.5`, a double in `[0, 1]`.
#[derive(Clone, Copy, Debug)]
pub struct Philox4x64 {
    key: [u64; 2],
}

const PHILOX_M0: u64 = 0xD2E7_470E_E14C_6C93;
const PHILOX_M1: u64 = 0xCA5A_8263_9512_1157;
const PHILOX_W0: u64 = 0x9E37_79B9_7F4A_7C15;
const PHILOX_W1: u64 = 0xBB67_AE85_84CA_A73B;

impl Philox4x64 {
    /// `setSeed(seed)`: the key is the seed twice.
    pub fn new(seed: i64) -> Philox4x64 {
        Philox4x64 {
            key: [seed as u64, seed as u64],
        }
    }

    /// The four words for one counter value: ten rounds, the key bumped after each.
    #[inline]
    fn block(&self, ctr: [u64; 4]) -> [u64; 4] {
        let mut c = ctr;
        let mut k = self.key;
        for _ in 0..10 {
            let p0 = PHILOX_M0 as u128 * c[0] as u128;
            let p1 = PHILOX_M1 as u128 * c[2] as u128;
            let (hi0, lo0) = ((p0 >> 64) as u64, p0 as u64);
            let (hi1, lo1) = ((p1 >> 64) as u64, p1 as u64);
            c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
            k[0] = k[0].wrapping_add(PHILOX_W0);
            k[1] = k[1].wrapping_add(PHILOX_W1);
        }
        c
    }

    /// `getDoubles(ctr, n)` into `out` (`n = out.len()`): see the type's doc for the counter.
    pub fn uniform(&self, ctr: &mut [u64; 4], out: &mut [f64]) {
        let to01 = 0.5 / i64::MAX as f64;
        let conv = |w: u64| (w as i64) as f64 * to01 + 0.5;
        let mut chunks = out.chunks_exact_mut(4);
        for group in &mut chunks {
            let w = self.block(*ctr);
            for (o, &x) in group.iter_mut().zip(&w) {
                *o = conv(x);
            }
            counter_add(ctr, 1);
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let w = self.block(*ctr);
            for (o, &x) in rest.iter_mut().zip(&w) {
                *o = conv(x);
            }
        }
    }

    /// `PhiloxNormalCBPRNGenerator.getDoubles(ctr, n)` (`pdf="cb_normal"`): `n` rounded up to
    /// even uniforms (advancing the counter as [`Philox4x64::uniform`] does for that many),
    /// then Box-Muller on each pair `(u1, u2)`: `sqrt(-2 ln u1) * cos(2 pi u2)` and, when
    /// wanted, `... * sin(2 pi u2)`.
    pub fn normal(&self, ctr: &mut [u64; 4], out: &mut [f64]) {
        let n = out.len();
        let mut u = vec![0.0; n + n % 2];
        self.uniform(ctr, &mut u);
        for (i, pair) in u.chunks_exact(2).enumerate() {
            let v1 = (-2.0 * pair[0].ln()).sqrt();
            let v2 = 2.0 * std::f64::consts::PI * pair[1];
            out[2 * i] = v1 * v2.cos();
            if 2 * i + 1 < n {
                out[2 * i + 1] = v1 * v2.sin();
            }
        }
    }
}

/// Adds `n` to a 256-bit little-endian counter (word 0 lowest), carrying as SystemDS's
/// increment does.
pub fn counter_add(ctr: &mut [u64; 4], n: u64) {
    let mut carry = n;
    for w in ctr.iter_mut() {
        let (s, o) = w.overflowing_add(carry);
        *w = s;
        if !o {
            return;
        }
        carry = 1;
    }
}
