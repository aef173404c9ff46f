//! Data generators: SystemDS's `rand`, `sample` and `seq`, and constant matrices.
//!
//! # `rand`, cell for cell as SystemDS 3.4
//!
//! A seeded `rand(rows, cols, min, max, sparsity, pdf, seed)` gives the matrix SystemDS gives
//! (`LibMatrixDatagen`), so that scripts drawing their initial factors inside reproduce
//! SystemDS's results:
//!
//! 1. **Block seeds.** The matrix is cut into blocks of `blen x blen` cells (SystemDS's block
//!    size, 1000 by default; edge blocks are smaller). A `java.util.Random(seed)` draws 32
//!    ints that seed a WELL1024a generator, whose successive `nextLong()`s are the seeds of
//!    the blocks in row-major block order.
//! 2. **Per block**, a value generator is seeded with the block's seed (uniform:
//!    `java.util.Random`; normal: Box-Muller over `java.util.Random`; poisson: Commons Math's
//!    sampler over WELL1024a). Its first draw, times `2^63` and truncated to a long, seeds a
//!    second `java.util.Random` that decides which cells are non-zero.
//! 3. **Which cells.** A block whose expected non-zeros `(long)(sparsity * r * c)` make
//!    SystemDS store it sparse (density below 0.4, more than one column and a smaller
//!    in-memory estimate than dense: [`crate::matrix::prefers_sparse_estimated`]) places its non-zeros by
//!    geometric skips: from index 0, `idx += ceil(ln(u) / ln(1 - sparsity))` until it passes
//!    the block's cells, cell `idx - 1` in row-major order. Any other block with sparsity
//!    below 1 draws one Bernoulli `u <= sparsity` per cell, row-major. A block with
//!    sparsity 1 fills every cell. Either way each non-zero cell takes the next value,
//!    `min + (max - min) * v` (normal and poisson: `v` itself).
//! 4. **Shortcuts.** Sparsity 0, or uniform with `min == max == 0`, is all zeros; uniform
//!    with sparsity 1 and `min == max` is the constant.
//!
//! Blocks are independent, so they are generated in parallel (row blocks, and column blocks
//! within a row block), written straight into the dense output or collected per block and
//! merged row by row into CSR: the result does not depend on the number of threads.
//!
//! Uniform streams are exact (integer arithmetic and one multiplication). Normal values use
//! the platform's `ln`, `sin` and `cos` where the JVM uses its own; they agree with SystemDS
//! except for rare last-bit differences. Poisson samples agree exactly for `lambda < 40`
//! up to the same caveat on `exp(-lambda)`.
//!
//! # Counter-based: `pdf="cb_uniform"` and `"cb_normal"`
//!
//! Block seeds as above; each block's values come from SystemDS's Philox4x64 generator
//! ([`super::prng::Philox4x64`]) keyed by the block seed, at a counter that SystemDS shares
//! between the blocks of one of its threads' tasks: the values of a matrix of at least 512Ki
//! cells therefore depend on SystemDS's thread count, which [`rand_with`] takes from
//! [`systemds_threads`](super::systemds_threads) ([`rand_with_tasks`] names it). Min and max are ignored
//! (`cb_uniform` is in `[0, 1]`), and below sparsity 1 the matrix is all zeros, both as in
//! SystemDS 3.4, which generates only fully dense counter-based blocks. Spores computes every
//! block's starting counter first, so it still generates the blocks in parallel.
//!
//! # Unseeded calls
//!
//! SystemDS draws a fresh seed from the clock when no seed is given (or seed is -1); spores
//! stays reproducible instead: the caller (the evaluator) passes a fixed seed per call site and
//! call count. This module only sees explicit seeds.

use super::prng::{JavaRandom, NormalGen, Philox4x64, PoissonGen, Well1024a};
use crate::error::RuntimeError;
use crate::matrix::{idx, Idx, Matrix};
use ndarray::{Array2, ArrayViewMut2, Axis};
use rayon::prelude::*;

/// SystemDS's default block size (rows and columns per block).
pub const DEFAULT_BLOCK: usize = 1000;

/// Parameters of `rand`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandSpec {
    /// number of rows
    pub rows: usize,
    /// number of columns
    pub cols: usize,
    /// smallest value (uniform only)
    pub min: f64,
    /// largest value (uniform only)
    pub max: f64,
    /// probability that a cell is non-zero, in [0, 1]
    pub sparsity: f64,
    /// generator seed: the bits of SystemDS's `long` seed (`-1i64 as u64` is an ordinary seed
    /// here; the caller decides what an unspecified seed becomes)
    pub seed: u64,
}

/// The distribution of `rand`'s values (`pdf=`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pdf {
    /// uniform in `[min, max)`
    Uniform,
    /// standard normal (min and max are ignored)
    Normal,
    /// Poisson with mean `lambda > 0` (min and max are ignored)
    Poisson {
        /// the mean
        lambda: f64,
    },
    /// SystemDS's counter-based uniform (`"cb_uniform"`): Philox4x64 values in `[0, 1]`;
    /// min and max are ignored, as SystemDS ignores them (see [`rand_with`])
    CbUniform,
    /// SystemDS's counter-based normal (`"cb_normal"`): Box-Muller over Philox4x64
    CbNormal,
}

impl Pdf {
    /// Parses DML's `pdf=` string (`"uniform"`, `"normal"`, `"poisson"`, `"cb_uniform"`,
    /// `"cb_normal"`, any case).
    pub fn parse(name: &str, lambda: f64) -> Result<Pdf, RuntimeError> {
        match name.to_ascii_lowercase().as_str() {
            "uniform" => Ok(Pdf::Uniform),
            "normal" => Ok(Pdf::Normal),
            "poisson" => Ok(Pdf::Poisson { lambda }),
            "cb_uniform" => Ok(Pdf::CbUniform),
            "cb_normal" => Ok(Pdf::CbNormal),
            _ => Err(RuntimeError::invalid(
                "rand",
                format!(
                    "unsupported distribution \"{name}\": it must be \"uniform\", \"normal\", \"poisson\", \"cb_uniform\" or \"cb_normal\""
                ),
            )),
        }
    }

    /// A counter-based (Philox) distribution.
    fn counter_based(self) -> bool {
        matches!(self, Pdf::CbUniform | Pdf::CbNormal)
    }
}

/// Generates a uniform `rand` matrix with SystemDS's default block size (see the module doc).
/// The caller has validated the spec (sparsity in [0, 1]).
pub fn rand_matrix(spec: &RandSpec) -> Matrix {
    rand_with(spec, Pdf::Uniform, DEFAULT_BLOCK).expect("uniform rand of a validated spec")
}

/// Generates `rand(..., pdf=...)` with blocks of `blen x blen` cells, as SystemDS does with
/// the thread count it has for the operation ([`systemds_threads`](super::systemds_threads):
/// see [`rand_with_tasks`]).
/// Errors: sparsity outside [0, 1], a non-positive Poisson mean, a zero block size.
pub fn rand_with(spec: &RandSpec, pdf: Pdf, blen: usize) -> Result<Matrix, RuntimeError> {
    rand_with_tasks(spec, pdf, blen, super::matmul::systemds_threads())
}

/// [`rand_with`] for SystemDS running with `k` threads. Only the counter-based distributions
/// depend on `k` (see "Counter-based" in the module doc); the others give the same matrix
/// for every `k`.
pub fn rand_with_tasks(
    spec: &RandSpec,
    pdf: Pdf,
    blen: usize,
    k: usize,
) -> Result<Matrix, RuntimeError> {
    let RandSpec {
        rows,
        cols,
        sparsity,
        ..
    } = *spec;
    if !(0.0..=1.0).contains(&sparsity) {
        return Err(RuntimeError::invalid(
            "rand",
            format!("sparsity must be between 0 and 1, found {sparsity}"),
        ));
    }
    if blen == 0 {
        return Err(RuntimeError::invalid("rand", "block size must be positive"));
    }
    if let Pdf::Poisson { lambda } = pdf {
        if lambda.is_nan() || lambda <= 0.0 {
            return Err(RuntimeError::invalid(
                "rand",
                format!("invalid parameter ({lambda}) for Poisson distribution"),
            ));
        }
    }
    let (min, max) = match pdf {
        Pdf::Uniform => (spec.min, spec.max),
        // SystemDS reads min and max for "uniform" only: cb_uniform is in [0, 1] whatever
        // they are
        _ => (0.0, 1.0),
    };
    if rows == 0
        || cols == 0
        || sparsity == 0.0
        || (pdf == Pdf::Uniform && min == 0.0 && max == 0.0)
    {
        return Ok(Matrix::filled(rows, cols, 0.0));
    }
    if pdf == Pdf::Uniform && sparsity == 1.0 && (min == max || (min.is_nan() && max.is_nan())) {
        return Ok(Matrix::filled(rows, cols, min));
    }
    let gen = BlockGen {
        rows,
        cols,
        blen,
        sparsity,
        min,
        range: max - min,
        pdf,
    };
    let seeds = block_seeds(spec.seed as i64, gen.nrb() * gen.ncb());
    if pdf.counter_based() {
        // SystemDS fills only fully dense counter-based blocks: below sparsity 1 its sparse
        // and Bernoulli block generators skip Philox, leaving every cell zero
        return Ok(if sparsity < 1.0 {
            Matrix::filled(rows, cols, 0.0)
        } else {
            gen.dense_cb(&seeds, &gen.cb_counters(k))
        });
    }
    let expected = sparsity * rows as f64 * cols as f64;
    Ok(
        if crate::matrix::prefers_sparse(rows, cols, expected as usize) {
            gen.sparse(&seeds)
        } else {
            gen.dense(&seeds)
        },
    )
}

/// The seeds of `n` blocks, in row-major block order: WELL1024a seeded by 32 ints of
/// `java.util.Random(seed)`.
pub fn block_seeds(seed: i64, n: usize) -> Vec<i64> {
    let mut r = JavaRandom::new(seed);
    let ints: Vec<i32> = (0..32).map(|_| r.next_int()).collect();
    let mut well = Well1024a::from_ints(&ints);
    (0..n).map(|_| well.next_long()).collect()
}

/// The value stream of one block.
enum Values {
    Uniform(JavaRandom),
    Normal(NormalGen),
    Poisson(PoissonGen),
}

impl Values {
    #[inline(always)]
    fn next(&mut self) -> f64 {
        match self {
            Values::Uniform(r) => r.next_double(),
            Values::Normal(g) => g.next_double(),
            Values::Poisson(g) => g.next_double(),
        }
    }
}

/// The shape and parameters shared by every block of one `rand` call.
struct BlockGen {
    rows: usize,
    cols: usize,
    blen: usize,
    sparsity: f64,
    min: f64,
    range: f64,
    pdf: Pdf,
}

impl BlockGen {
    fn nrb(&self) -> usize {
        self.rows.div_ceil(self.blen)
    }

    fn ncb(&self) -> usize {
        self.cols.div_ceil(self.blen)
    }

    /// Generates one `br x bc` block from its seed, calling `emit(i, j, v)` for each non-zero
    /// candidate in row-major order (values may be exactly zero).
    #[inline]
    fn block(&self, seed: i64, br: usize, bc: usize, mut emit: impl FnMut(usize, usize, f64)) {
        let mut values = match self.pdf {
            Pdf::Uniform => Values::Uniform(JavaRandom::new(seed)),
            Pdf::Normal => Values::Normal(NormalGen::new(seed)),
            Pdf::Poisson { lambda } => Values::Poisson(PoissonGen::new(lambda, seed)),
            Pdf::CbUniform | Pdf::CbNormal => unreachable!("counter-based blocks use dense_cb"),
        };
        // saturating float-to-long cast, as Java's
        let nnz_seed = (values.next() * 9_223_372_036_854_775_808.0) as i64;
        let mut cells = JavaRandom::new(nnz_seed);
        let (min, range, sp) = (self.min, self.range, self.sparsity);
        let est = (sp * br as f64 * bc as f64) as i64;
        if sp < 1.0 && crate::matrix::prefers_sparse_estimated(br, bc, est as usize) {
            let log1mp = (1.0 - sp).ln();
            let size = (br * bc) as i64;
            let mut idx: i64 = 0;
            while idx < size {
                let skip = (cells.next_double().ln() / log1mp).ceil();
                if skip.is_nan() || skip >= size as f64 {
                    break; // beyond the block (also u == 0, whose skip is infinite)
                }
                idx += skip as i64;
                if idx > size {
                    break;
                }
                let k = (idx - 1) as usize;
                let v = min + range * values.next();
                emit(k / bc, k % bc, v);
            }
        } else if sp < 1.0 {
            for i in 0..br {
                for j in 0..bc {
                    if cells.next_double() <= sp {
                        emit(i, j, min + range * values.next());
                    }
                }
            }
        } else {
            for i in 0..br {
                for j in 0..bc {
                    emit(i, j, min + range * values.next());
                }
            }
        }
    }

    fn block_dims(&self, rb: usize, cb: usize) -> (usize, usize) {
        let br = (self.rows - rb * self.blen).min(self.blen);
        let bc = (self.cols - cb * self.blen).min(self.blen);
        (br, bc)
    }

    /// Every block written into a dense array ([`Self::dense_blocks`]).
    fn dense(&self, seeds: &[i64]) -> Matrix {
        let ncb = self.ncb();
        self.dense_blocks(|rb, cb, mut view| {
            let (br, bc) = self.block_dims(rb, cb);
            // each row of a block is contiguous in the row-major output
            let mut lines: Vec<&mut [f64]> = view
                .rows_mut()
                .into_iter()
                .map(|r| r.into_slice().expect("contiguous block row"))
                .collect();
            if matches!(self.pdf, Pdf::Uniform) && self.sparsity >= 1.0 {
                // every cell drawn, in row-major order ([`Self::block`]'s full branch after
                // its one draw for the non-zero seed): a line's uniforms at once
                // (and counted while each line is in the cache)
                let mut values = JavaRandom::new(seeds[rb * ncb + cb]);
                values.next_double();
                let mut nnz = 0;
                for line in lines {
                    let line = &mut line[..bc];
                    values.fill_doubles(line);
                    for x in line.iter_mut() {
                        *x = self.min + self.range * *x;
                    }
                    nnz += line
                        .iter()
                        .filter(|&&x| crate::matrix::is_stored(x))
                        .count();
                }
                return Some(nnz);
            }
            self.block(seeds[rb * ncb + cb], br, bc, |i, j, v| {
                lines[i][j] = v;
            });
            None
        })
    }

    /// A dense `rows x cols` matrix of zeros, each block's view (row block, column block)
    /// handed to `fill`: row blocks in parallel, and the column blocks of a row block in
    /// parallel too (disjoint views). `fill` returns the non-zeros ([`crate::matrix::is_stored`])
    /// it wrote when it counted them; when every block did, the matrix is not scanned again.
    fn dense_blocks(
        &self,
        fill: impl Fn(usize, usize, ArrayViewMut2<f64>) -> Option<usize> + Sync,
    ) -> Matrix {
        let add = |a: Option<usize>, b: Option<usize>| a.zip(b).map(|(x, y)| x + y);
        let mut out = Array2::<f64>::zeros((self.rows, self.cols));
        let nnz = out
            .axis_chunks_iter_mut(Axis(0), self.blen)
            .into_par_iter()
            .enumerate()
            .map(|(rb, mut rows)| {
                // the row block's pages backed at once, by the thread that writes them
                if let Some(s) = rows.as_slice_mut() {
                    crate::matrix::populate(s);
                }
                rows.axis_chunks_iter_mut(Axis(1), self.blen)
                    .into_par_iter()
                    .enumerate()
                    .map(|(cb, view)| fill(rb, cb, view))
                    .reduce(|| Some(0), add)
            })
            .reduce(|| Some(0), add);
        match nnz {
            Some(nnz) => Matrix::from_dense_nnz(out, nnz),
            None => Matrix::from_dense(out),
        }
    }

    /// The counter each block starts from, as SystemDS's tasks advance it: one counter per
    /// task, from zero, carried through the task's blocks in row-major order, each block
    /// advancing it by its whole groups of four uniforms (`n / 4` for `n` cells; normal
    /// draws `n` rounded up to even uniforms). SystemDS runs one task when `k <= 1` or the
    /// matrix has fewer than 512Ki cells; otherwise `ceil(parts / k)` row blocks per task, or
    /// column blocks when there are fewer row blocks than threads and more column blocks
    /// than row blocks.
    fn cb_counters(&self, k: usize) -> Vec<u64> {
        let (nrb, ncb) = (self.nrb(), self.ncb());
        let advance = |rb: usize, cb: usize| {
            let (br, bc) = self.block_dims(rb, cb);
            let n = (br * bc) as u64;
            match self.pdf {
                Pdf::CbNormal => (n + n % 2) / 4,
                _ => n / 4,
            }
        };
        let mut start = vec![0u64; nrb * ncb];
        let parallel = k > 1 && (self.rows as u64) * (self.cols as u64) >= 512 * 1024;
        // the task rectangles [rl, ru) x [cl, cu), each walked row-major
        let tasks: Vec<(usize, usize, usize, usize)> = if !parallel {
            vec![(0, nrb, 0, ncb)]
        } else {
            let parcol = nrb < k && ncb > nrb;
            let parts = if parcol { ncb } else { nrb };
            let per = parts.div_ceil(k);
            (0..k)
                .take_while(|i| i * per < parts)
                .map(|i| {
                    let (lo, hi) = (i * per, ((i + 1) * per).min(parts));
                    if parcol {
                        (0, nrb, lo, hi)
                    } else {
                        (lo, hi, 0, ncb)
                    }
                })
                .collect()
        };
        for (rl, ru, cl, cu) in tasks {
            let mut ctr = 0u64;
            for rb in rl..ru {
                for cb in cl..cu {
                    start[rb * ncb + cb] = ctr;
                    ctr += advance(rb, cb);
                }
            }
        }
        start
    }

    /// Every counter-based block (sparsity 1) generated in parallel from its seed and starting
    /// counter, `min + (max - min) * v` with min 0 and max 1 as SystemDS applies it.
    fn dense_cb(&self, seeds: &[i64], counters: &[u64]) -> Matrix {
        let ncb = self.ncb();
        self.dense_blocks(|rb, cb, mut view| {
            let (br, bc) = self.block_dims(rb, cb);
            let philox = Philox4x64::new(seeds[rb * ncb + cb]);
            let mut ctr = [counters[rb * ncb + cb], 0, 0, 0];
            let mut v = vec![0.0; br * bc];
            match self.pdf {
                Pdf::CbNormal => philox.normal(&mut ctr, &mut v),
                _ => philox.uniform(&mut ctr, &mut v),
            }
            for (mut row, vals) in view.rows_mut().into_iter().zip(v.chunks_exact(bc)) {
                for (o, &x) in row.iter_mut().zip(vals) {
                    *o = self.min + self.range * x;
                }
            }
            None
        })
    }

    /// Every block collected as row-major entries, then merged per row into CSR: a stable
    /// counting sort of a row block's entries by row (blocks in column order, each row-major)
    /// leaves every row's columns increasing. Memory is proportional to the non-zeros.
    fn sparse(&self, seeds: &[i64]) -> Matrix {
        let (nrb, ncb) = (self.nrb(), self.ncb());
        // one CSR piece (row ends, indices, data) per row block
        let pieces: Vec<(Vec<usize>, Vec<Idx>, Vec<f64>)> = (0..nrb)
            .into_par_iter()
            .map(|rb| {
                // (row in the block, column, value); the caller's representation rule keeps
                // the columns within CSR's indices (`MAX_SPARSE_COLS`)
                let blocks: Vec<Vec<(u32, Idx, f64)>> = (0..ncb)
                    .into_par_iter()
                    .map(|cb| {
                        let (br, bc) = self.block_dims(rb, cb);
                        let mut entries = Vec::new();
                        self.block(seeds[rb * ncb + cb], br, bc, |i, j, v| {
                            if v != 0.0 {
                                entries.push((i as u32, idx(cb * self.blen + j), v));
                            }
                        });
                        entries
                    })
                    .collect();
                let br = self.block_dims(rb, 0).0;
                let nnz: usize = blocks.iter().map(Vec::len).sum();
                let mut ends = vec![0usize; br];
                for &(i, _, _) in blocks.iter().flatten() {
                    ends[i as usize] += 1;
                }
                let mut next = Vec::with_capacity(br);
                let mut acc = 0;
                for e in ends.iter_mut() {
                    next.push(acc);
                    acc += *e;
                    *e = acc;
                }
                let mut indices: Vec<Idx> = vec![0; nnz];
                let mut data = vec![0.0f64; nnz];
                for &(i, j, v) in blocks.iter().flatten() {
                    let p = &mut next[i as usize];
                    indices[*p] = j;
                    data[*p] = v;
                    *p += 1;
                }
                (ends, indices, data)
            })
            .collect();
        // the pieces side by side, copied in parallel (each thread first touches its part of
        // the result); rows sorted by the counting sort above
        let mut indptr = Vec::with_capacity(self.rows + 1);
        let mut starts = Vec::with_capacity(pieces.len() + 1);
        indptr.push(0);
        starts.push(0);
        for (p, _, d) in &pieces {
            let base = indptr[indptr.len() - 1];
            indptr.extend(p.iter().map(|&e| e + base));
            starts.push(base + d.len());
        }
        let (indices, data) = crate::matrix::par_build2(&starts, |k, sink| {
            let (_, i, d) = &pieces[k];
            for (&j, &v) in i.iter().zip(d) {
                sink.push(j, v);
            }
        });
        Matrix::from_csr(crate::matrix::csr_from_valid(
            (self.rows, self.cols),
            indptr,
            indices,
            data,
        ))
    }
}

/// `sample(range, size, replace, seed)`: a `size x 1` column of integers in `[1, range]`, as
/// SystemDS draws them: without replacement by reservoir sampling then a Knuth shuffle, with
/// replacement by `1 + nextLong mod range` (rejecting the biased tail), from a
/// `java.util.Random(seed)`.
pub fn sample(range: i64, size: usize, replace: bool, seed: i64) -> Result<Matrix, RuntimeError> {
    if range <= 0 && size > 0 {
        return Err(RuntimeError::invalid(
            "sample",
            format!("range must be positive, found {range}"),
        ));
    }
    if !replace && (range as u64) < size as u64 {
        return Err(RuntimeError::invalid(
            "sample",
            format!(
                "sample (size={size}) larger than population (size={range}) can only be generated with replacement"
            ),
        ));
    }
    if size > i32::MAX as usize {
        return Err(RuntimeError::invalid("sample", "size is too large"));
    }
    let mut a = vec![0.0f64; size];
    let mut r = JavaRandom::new(seed);
    if !replace {
        for (i, v) in a.iter_mut().enumerate() {
            *v = (i + 1) as f64;
        }
        let sz = size as i64;
        if sz > 0 {
            for i in sz + 1..=range {
                // i fits an int: range < 2^31 when size > 0 is an int and i is drawn by nextInt
                let i32v = i.min(i32::MAX as i64) as i32;
                if (r.next_int_bounded(i32v) as i64) < sz {
                    let k = r.next_int_bounded(sz as i32) as usize;
                    a[k] = i as f64;
                }
            }
            for i in 0..size.saturating_sub(1) {
                let j = r.next_int_bounded((size - i) as i32) as usize + i;
                a.swap(i, j);
            }
        }
    } else {
        for v in a.iter_mut() {
            *v = 1.0 + next_long_bounded(&mut r, range) as f64;
        }
    }
    Ok(Matrix::from_dense(
        Array2::from_shape_vec((size, 1), a).expect("sample shape"),
    ))
}

/// SystemDS's `nextLong(r, n)`: a non-negative long modulo `n`, rejecting the biased tail.
fn next_long_bounded(r: &mut JavaRandom, n: i64) -> i64 {
    loop {
        let bits = ((r.next_long() as u64) << 1 >> 1) as i64;
        let val = bits % n;
        if bits.wrapping_sub(val).wrapping_add(n - 1) >= 0 {
            return val;
        }
    }
}

/// The length of `seq(from, to, incr)` as SystemDS's `getSeqLength` computes it:
/// `1 + floor(to/incr - from/incr)`, plus one when rounding lost the last element.
pub fn seq_length(from: f64, to: f64, incr: f64) -> Result<usize, RuntimeError> {
    if incr == 0.0
        || !(from.is_finite() && to.is_finite() && incr.is_finite())
        || (from > to && incr > 0.0)
        || (from < to && incr < 0.0)
    {
        return Err(RuntimeError::invalid(
            "seq",
            format!("wrong sequence increment: from={from}, to={to}, incr={incr}"),
        ));
    }
    let tmp = (to / incr - from / incr).floor();
    let next = from + (tmp + 1.0) * incr;
    let extra = if (incr > 0.0 && next <= to) || (incr < 0.0 && next >= to) {
        1.0
    } else {
        0.0
    };
    let len = 1.0 + tmp + extra;
    if len > (1u64 << 40) as f64 {
        return Err(RuntimeError::invalid(
            "seq",
            format!("sequence of {len} elements is too long"),
        ));
    }
    Ok(len as usize)
}

/// `seq(from, to, incr)`: a column `from, from + incr, ...` (the value at `i` is the running
/// sum, as SystemDS accumulates it). `incr` defaults to 1, or -1 when `from > to`
/// ([`seq_default_incr`]).
pub fn seq(from: f64, to: f64, incr: f64) -> Result<Matrix, RuntimeError> {
    let n = seq_length(from, to, incr)?;
    let mut v = Vec::with_capacity(n);
    let mut cur = from;
    for _ in 0..n {
        v.push(cur);
        cur += incr;
    }
    Ok(Matrix::from_dense(
        Array2::from_shape_vec((n, 1), v).expect("seq shape"),
    ))
}

/// DML's default increment of `seq(from, to)`: 1, or -1 when `from > to`.
pub fn seq_default_incr(from: f64, to: f64) -> f64 {
    if from > to {
        -1.0
    } else {
        1.0
    }
}

/// `matrix(v, rows, cols)`: every cell `v`.
pub fn constant(rows: usize, cols: usize, v: f64) -> Matrix {
    Matrix::filled(rows, cols, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dense uniform path (each line's doubles drawn at once, non-zeros counted as they
    /// are written) gives the cells of [`BlockGen::block`], one draw at a time, bit for bit.
    #[test]
    fn dense_uniform_lines_are_the_cells_drawn_one_by_one() {
        for (rows, cols, blen) in [(7, 5, 3), (70, 130, 64), (2, 300, 1000), (40, 90, 40)] {
            let gen = BlockGen {
                rows,
                cols,
                blen,
                sparsity: 1.0,
                min: -1.5,
                range: 4.0,
                pdf: Pdf::Uniform,
            };
            let seeds = block_seeds(11, gen.nrb() * gen.ncb());
            let got = gen.dense(&seeds);
            let mut want = Array2::<f64>::zeros((rows, cols));
            for rb in 0..gen.nrb() {
                for cb in 0..gen.ncb() {
                    let (br, bc) = gen.block_dims(rb, cb);
                    gen.block(seeds[rb * gen.ncb() + cb], br, bc, |i, j, v| {
                        want[[rb * blen + i, cb * blen + j]] = v;
                    });
                }
            }
            let Matrix::Dense(d) = &got else {
                panic!("a full uniform matrix is dense")
            };
            for ((i, j), w) in want.indexed_iter() {
                assert_eq!(
                    d[[i, j]].to_bits(),
                    w.to_bits(),
                    "{rows}x{cols} cell ({i}, {j})"
                );
            }
            let nnz = want
                .iter()
                .filter(|&&x| crate::matrix::is_stored(x))
                .count();
            assert_eq!(got.nnz(), nnz);
        }
    }
}
