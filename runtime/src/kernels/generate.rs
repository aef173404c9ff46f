//! Data generators: `rand` with an exact number of non-zeros, and constant matrices.
//!
//! `rand(rows, cols, min, max, sparsity, seed)` places exactly `round(sparsity * rows * cols)`
//! non-zeros at uniformly random distinct cells, with values uniform in `[min, max)` (a value
//! that comes out exactly 0 is drawn again, so the count is exact unless `min == max == 0`).
//! Positions are drawn with replacement, sorted and de-duplicated, and topped up until the count
//! is reached; every step is exchangeable over cells, so each set of cells is equally likely.
//! The generator is ChaCha8 seeded with `seed`: the same arguments give the same matrix on every
//! machine and thread count. It does not reproduce SystemDS's generator.

use crate::matrix::Matrix;
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use sprs::CsMat;

/// Parameters of `rand`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandSpec {
    /// number of rows
    pub rows: usize,
    /// number of columns
    pub cols: usize,
    /// smallest value
    pub min: f64,
    /// largest value
    pub max: f64,
    /// fraction of non-zero cells, in [0, 1]
    pub sparsity: f64,
    /// generator seed
    pub seed: u64,
}

impl RandSpec {
    /// The exact number of non-zeros the matrix will have.
    pub fn nnz(&self) -> usize {
        let cells = self.rows * self.cols;
        ((self.sparsity * cells as f64).round() as usize).min(cells)
    }
}

/// Generates the matrix described by `spec` (see the module doc).
pub fn rand_matrix(spec: &RandSpec) -> Matrix {
    let RandSpec {
        rows,
        cols,
        min,
        max,
        ..
    } = *spec;
    let cells = rows * cols;
    let nnz = spec.nnz();
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let value = move |rng: &mut ChaCha8Rng| {
        if min == 0.0 && max == 0.0 {
            return 0.0;
        }
        loop {
            let v = if min == max {
                min
            } else {
                min + (max - min) * rng.gen::<f64>()
            };
            if v != 0.0 {
                return v;
            }
        }
    };
    if nnz == cells {
        let data: Vec<f64> = (0..cells).map(|_| value(&mut rng)).collect();
        return Matrix::from_dense(Array2::from_shape_vec((rows, cols), data).expect("shape"));
    }
    let positions = distinct_positions(&mut rng, cells as u64, nnz);
    let mut indptr = vec![0usize; rows + 1];
    let mut indices = Vec::with_capacity(nnz);
    let mut data = Vec::with_capacity(nnz);
    for &p in &positions {
        let (i, j) = ((p / cols as u64) as usize, (p % cols as u64) as usize);
        indptr[i + 1] += 1;
        indices.push(j);
        data.push(value(&mut rng));
    }
    for i in 0..rows {
        indptr[i + 1] += indptr[i];
    }
    Matrix::from_csr(CsMat::new((rows, cols), indptr, indices, data))
}

/// `count` distinct cell numbers below `cells`, sorted.
fn distinct_positions(rng: &mut ChaCha8Rng, cells: u64, count: usize) -> Vec<u64> {
    if count == 0 {
        return Vec::new();
    }
    // Dense requests: choose which cells stay empty instead.
    if count as u64 > cells / 2 {
        let empty = distinct_positions(rng, cells, (cells - count as u64) as usize);
        let mut out = Vec::with_capacity(count);
        let mut e = empty.iter().peekable();
        for p in 0..cells {
            if e.peek() == Some(&&p) {
                e.next();
            } else {
                out.push(p);
            }
        }
        return out;
    }
    let mut pos: Vec<u64> = Vec::with_capacity(count + count / 8);
    while pos.len() < count {
        let need = count - pos.len();
        pos.extend((0..need).map(|_| rng.gen_range(0..cells)));
        pos.par_sort_unstable();
        pos.dedup();
    }
    pos
}

/// `matrix(v, rows, cols)`: every cell `v`.
pub fn constant(rows: usize, cols: usize, v: f64) -> Matrix {
    Matrix::filled(rows, cols, v)
}
