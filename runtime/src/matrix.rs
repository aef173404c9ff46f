//! The runtime's matrix value: dense (row-major `ndarray`) or sparse (CSR, `sprs`).
//!
//! The representation follows the data, as in SystemDS: a matrix with more than one column
//! whose density (non-zeros / cells) is below [`SPARSE_THRESHOLD`] is stored as CSR, anything
//! else densely ([`prefers_sparse`]); an element-wise matrix-matrix result follows SystemDS's
//! estimate-based rule instead ([`prefers_sparse_estimated`]). Kernels return whatever is natural for them and callers pass results through
//! [`Matrix::normalized`] (the constructors [`Matrix::from_dense`] and [`Matrix::from_csr`] do
//! this), so a product that turns out sparse is stored sparse and vice versa.
//!
//! Invariants (checked by [`Matrix::check_invariants`] in tests): dense arrays are in standard
//! (row-major, contiguous) layout; CSR matrices are in CSR storage with sorted column indices and
//! no duplicate entries; explicit zeros are removed by the constructors.

use ndarray::Array2;
use sprs::CsMatI;

/// Density below which a matrix with more than one column is stored sparse (SystemDS's
/// `SPARSITY_TURN_POINT`).
pub const SPARSE_THRESHOLD: f64 = 0.4;

/// A dense matrix: row-major, contiguous.
pub type Dense = Array2<f64>;
/// The type of a CSR matrix's column indices: 32 bits, as SystemDS's `int` column indexes, so
/// a stored entry takes 12 bytes (its value and its index) and every pass over a sparse matrix
/// reads a quarter less than with `usize` indices. The row pointers stay `usize` (a matrix may
/// hold more than 2^32 entries). Kernels read an index with [`col`] and write one with
/// [`idx`]; this is the one place that names the type.
pub type Idx = u32;

/// The most columns a CSR matrix can have ([`Idx`]'s range): a wider matrix is stored
/// densely, whatever its density (the representation rules [`prefers_sparse`],
/// [`exam_sparse`] and [`prefers_sparse_estimated`] say so, and the kernels that build a CSR
/// result of a new width check it).
pub const MAX_SPARSE_COLS: usize = Idx::MAX as usize;

/// The bytes of one stored entry of a CSR matrix: its value and its column index (12).
pub const CSR_ENTRY_BYTES: usize = std::mem::size_of::<f64>() + std::mem::size_of::<Idx>();

/// The bytes of one row pointer of a CSR matrix (a `usize`; a matrix has one per row plus one).
pub const CSR_ROW_BYTES: usize = std::mem::size_of::<usize>();

/// A sparse matrix in compressed sparse row storage: `f64` values, [`Idx`] column indices,
/// `usize` row pointers.
pub type Csr = CsMatI<f64, Idx, usize>;

/// A column index of CSR storage as a `usize` (lossless).
#[inline(always)]
pub fn col(j: Idx) -> usize {
    j as usize
}

/// A column `j` of a matrix with at most [`MAX_SPARSE_COLS`] columns as a CSR index (checked
/// in debug builds; the callers build CSR matrices only of such widths).
#[inline(always)]
pub fn idx(j: usize) -> Idx {
    debug_assert!(j <= MAX_SPARSE_COLS, "column {j} beyond CSR's index range");
    j as Idx
}

/// A matrix of doubles, stored densely or as CSR.
#[derive(Clone, Debug)]
pub enum Matrix {
    /// Row-major dense storage.
    Dense(Dense),
    /// Compressed sparse rows.
    Sparse(Csr),
}

/// Whether a matrix of this shape and non-zero count should be stored sparse: density below
/// [`SPARSE_THRESHOLD`] and more than one column (and at most [`MAX_SPARSE_COLS`]). This is SystemDS's representation of data it
/// reads and of the results it re-examines (`MatrixBlock.examSparsity`, which allows CSR, whose
/// size estimate is below the dense one at any such density, except for tiny matrices:
/// [`exam_sparse`]).
pub fn prefers_sparse(rows: usize, cols: usize, nnz: usize) -> bool {
    let cells = rows * cols;
    cols > 1
        && cols <= MAX_SPARSE_COLS
        && cells > 0
        && (nnz as f64) < SPARSE_THRESHOLD * cells as f64
}

/// The in-memory size SystemDS estimates for a dense block (`MatrixBlock.
/// estimateSizeDenseInMemory`, a 64-bit JVM): the matrix header, the dense block object with
/// its one-int dims array, then the array of doubles.
fn systemds_dense_bytes(rows: f64, cols: f64) -> f64 {
    (SYSTEMDS_HEADER + 64.0 + double_array_bytes(rows * cols)).floor()
}

/// `MatrixBlock.getHeaderSize()`: object, three ints, boolean and padding, nnz, two references.
const SYSTEMDS_HEADER: f64 = 16.0 + 12.0 + 1.0 + 3.0 + 8.0 + 16.0;

/// `MemoryEstimates.intArrayCost`: reference, header, 4 bytes per int, padded to 8 bytes.
fn int_array_bytes(len: f64) -> f64 {
    8.0 + 20.0
        + if len <= 1.0 {
            4.0
        } else {
            4.0 * len + if len % 2.0 == 0.0 { 4.0 } else { 0.0 }
        }
}

/// `MemoryEstimates.doubleArrayCost`: reference, header, padding, 8 bytes per double.
fn double_array_bytes(len: f64) -> f64 {
    8.0 + 20.0 + 4.0 + 8.0 * len
}

/// SystemDS's in-memory representation of a block with this shape and this many non-zeros
/// (`MatrixBlock.evalSparseFormatInMemory`): sparse when [`prefers_sparse`] and the sparse
/// estimate takes fewer bytes than the dense one. `csr` picks the sparse estimate: CSR's (the
/// rule of `MatrixBlock.examSparsity`, which SystemDS applies to the result of every
/// element-wise operation once it knows its non-zeros: [`exam_sparse`]) or the per-row
/// MCSR's (the rule of blocks allocated from an estimate: [`prefers_sparse_estimated`]).
fn systemds_sparse(rows: usize, cols: usize, nnz: usize, csr: bool) -> bool {
    let (r, c) = (rows as f64, cols as f64);
    // the same double operations as SystemDS's, so the comparisons and the ceil see the same
    // rounding (an empty shape: NaN, dense)
    let sp = nnz as f64 / r / c;
    if !(sp < SPARSE_THRESHOLD && cols > 1 && cols <= MAX_SPARSE_COLS) {
        return false;
    }
    let sparse = if sp == 0.0 {
        0.0 // allocated on demand
    } else if csr {
        // SparseBlockCSR.estimateSizeInMemory: row pointers, column indexes and values of
        // at least 4 entries
        let lnnz = (sp * r * c).ceil().max(4.0);
        (16.0
            + 4.0
            + 4.0
            + int_array_bytes(r + 1.0)
            + int_array_bytes(lnnz)
            + double_array_bytes(lnnz))
        .floor()
    } else {
        // SparseBlockMCSR.estimateSizeInMemory: the array of rows plus, per row holding
        // values, a row object with its index and value arrays (at least 4 entries each)
        let nnz = (sp * r * c).ceil();
        let rlen = r.min(nnz);
        let cnnz = (nnz / rlen).max(4.0);
        let row_size = (16.0 + 8.0 + 32.0 + 32.0 + 12.0 * cnnz.max(1.0)).floor();
        (16.0 + (8.0 + 20.0 + 4.0 + 8.0 * r) + rlen * row_size).floor()
    };
    (SYSTEMDS_HEADER + sparse).floor() < systemds_dense_bytes(r, c)
}

/// SystemDS's representation of a result it re-examines once computed
/// (`MatrixBlock.examSparsity`, CSR allowed): [`prefers_sparse`], unless the CSR estimate of so
/// few non-zeros (at least 4 entries and a pointer per row) is not below the dense size, which
/// keeps tiny matrices dense (a 1 x 10 row with 3 non-zeros, a 3 x 3 matrix with one).
/// SystemDS examines the result of every element-wise matrix-matrix, matrix-scalar and unary
/// instruction this way ([`Matrix::examined`]).
pub fn exam_sparse(rows: usize, cols: usize, nnz: usize) -> bool {
    systemds_sparse(rows, cols, nnz, true)
}

/// SystemDS's stricter rule for the blocks it allocates from an estimate and does not examine
/// again (`MatrixBlock.evalSparseFormatInMemory` without CSR: the n-ary `+` and `*` of a chain
/// of same-sized matrices, `rand`'s blocks): [`prefers_sparse`] and a sparse (MCSR) size
/// estimate below the dense one. The size test keeps a matrix with few columns dense once most
/// rows hold a value (a matrix of up to 17 columns with a value in every row; a 12x12
/// tridiagonal with 34 non-zeros). Dense and sparse kernels add in different orders, so the
/// representation decides the rounding of a product or a sum.
pub fn prefers_sparse_estimated(rows: usize, cols: usize, nnz: usize) -> bool {
    systemds_sparse(rows, cols, nnz, false)
}

impl Matrix {
    /// Wraps a dense array, converting to CSR when it is sparse enough.
    pub fn from_dense(d: Dense) -> Matrix {
        let d = if d.is_standard_layout() {
            d
        } else {
            d.as_standard_layout().into_owned()
        };
        let nnz = count_nnz(d.as_slice().expect("standard layout"));
        if prefers_sparse(d.nrows(), d.ncols(), nnz) {
            Matrix::Sparse(dense_to_csr(&d, nnz))
        } else {
            Matrix::Dense(d)
        }
    }

    /// Wraps a standard-layout dense array whose non-zero count is already known.
    pub fn from_dense_nnz(d: Dense, nnz: usize) -> Matrix {
        debug_assert!(d.is_standard_layout());
        debug_assert_eq!(nnz, count_nnz(d.as_slice().expect("standard layout")));
        if prefers_sparse(d.nrows(), d.ncols(), nnz) {
            Matrix::Sparse(dense_to_csr(&d, nnz))
        } else {
            Matrix::Dense(d)
        }
    }

    /// Wraps a CSR matrix, dropping explicit zeros and densifying it when dense enough.
    pub fn from_csr(s: Csr) -> Matrix {
        let s = if s.is_csr() { s } else { s.to_csr() };
        let s = drop_explicit_zeros(s);
        if prefers_sparse(s.rows(), s.cols(), s.nnz()) {
            Matrix::Sparse(s)
        } else {
            Matrix::Dense(csr_to_dense(&s))
        }
    }

    /// The representation SystemDS gives an element-wise result once computed
    /// ([`exam_sparse`] on its non-zeros), for a matrix that a constructor has stored by
    /// [`prefers_sparse`]: the two rules differ only for tiny matrices, which SystemDS holds
    /// dense where [`prefers_sparse`] says sparse, so only a sparse matrix can change.
    pub fn examined(self) -> Matrix {
        match self {
            Matrix::Sparse(s) if !exam_sparse(s.rows(), s.cols(), s.nnz()) => {
                Matrix::Dense(csr_to_dense(&s))
            }
            m => m,
        }
    }

    /// Re-decides the representation from the current non-zero count.
    pub fn normalized(self) -> Matrix {
        match self {
            Matrix::Dense(d) => Matrix::from_dense(d),
            Matrix::Sparse(s) => Matrix::from_csr(s),
        }
    }

    /// A `rows x cols` matrix with every cell equal to `v` (sparse and empty when `v` is
    /// `+0.0`; `-0.0` is stored, [`is_stored`]).
    pub fn filled(rows: usize, cols: usize, v: f64) -> Matrix {
        if !is_stored(v) && prefers_sparse(rows, cols, 0) {
            Matrix::Sparse(Csr::zero((rows, cols)))
        } else {
            Matrix::Dense(Array2::from_elem((rows, cols), v))
        }
    }

    /// Builds a matrix from (row, col, value) triplets; duplicates are summed, in the order
    /// they come (the first value, then `+` each later one). Panics if a triplet is outside
    /// the shape.
    pub fn from_triplets(rows: usize, cols: usize, entries: &[(usize, usize, f64)]) -> Matrix {
        // each row's entries in input order (a counting sort by row), then by column (a
        // stable sort), duplicates merged
        let mut start = vec![0usize; rows + 1];
        for &(i, j, _) in entries {
            assert!(
                i < rows && j < cols,
                "triplet ({i}, {j}) outside {rows}x{cols}"
            );
            start[i + 1] += 1;
        }
        for i in 0..rows {
            start[i + 1] += start[i];
        }
        let mut next = start.clone();
        let mut by_row = vec![(0usize, 0.0f64); entries.len()];
        for &(i, j, v) in entries {
            by_row[next[i]] = (j, v);
            next[i] += 1;
        }
        let mut indptr = Vec::with_capacity(rows + 1);
        let (mut cols_of, mut data) = (Vec::with_capacity(entries.len()), Vec::new());
        data.reserve(entries.len());
        indptr.push(0);
        for i in 0..rows {
            let row = &mut by_row[start[i]..start[i + 1]];
            row.sort_by_key(|e| e.0);
            let first = cols_of.len();
            for &(j, v) in row.iter() {
                if cols_of.len() > first && cols_of.last() == Some(&j) {
                    *data.last_mut().expect("an entry") += v;
                } else {
                    cols_of.push(j);
                    data.push(v);
                }
            }
            indptr.push(cols_of.len());
        }
        if cols > MAX_SPARSE_COLS {
            // wider than CSR's indices: dense (unstored cells +0.0)
            let mut d = zeros(rows, cols);
            for i in 0..rows {
                for q in indptr[i]..indptr[i + 1] {
                    d[[i, cols_of[q]]] = data[q];
                }
            }
            return Matrix::from_dense(d);
        }
        let indices = cols_of.into_iter().map(idx).collect();
        Matrix::from_csr(Csr::new((rows, cols), indptr, indices, data))
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        match self {
            Matrix::Dense(d) => d.nrows(),
            Matrix::Sparse(s) => s.rows(),
        }
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        match self {
            Matrix::Dense(d) => d.ncols(),
            Matrix::Sparse(s) => s.cols(),
        }
    }

    /// `(rows, cols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows(), self.cols())
    }

    /// Number of cells, `rows * cols`.
    pub fn cells(&self) -> usize {
        self.rows() * self.cols()
    }

    /// Whether every value is finite (no Inf, no NaN).
    pub fn all_finite(&self) -> bool {
        match self {
            Matrix::Dense(d) => match d.as_slice() {
                Some(s) => all_finite(s),
                None => d.iter().all(|v| v.is_finite()),
            },
            Matrix::Sparse(c) => all_finite(c.data()),
        }
    }

    /// The number of non-zero values.
    pub fn nnz(&self) -> usize {
        match self {
            Matrix::Dense(d) => count_nnz(d.as_slice().expect("standard layout")),
            Matrix::Sparse(s) => s.nnz(),
        }
    }

    /// Whether the matrix is stored as CSR.
    pub fn is_sparse(&self) -> bool {
        matches!(self, Matrix::Sparse(_))
    }

    /// The value at `(i, j)` (0-based).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        match self {
            Matrix::Dense(d) => d[[i, j]],
            Matrix::Sparse(s) => s.get(i, j).copied().unwrap_or(0.0),
        }
    }

    /// A dense copy (or the dense array itself).
    pub fn to_dense(&self) -> Dense {
        match self {
            Matrix::Dense(d) => d.clone(),
            Matrix::Sparse(s) => csr_to_dense(s),
        }
    }

    /// Consumes the matrix into a dense array.
    pub fn into_dense(self) -> Dense {
        match self {
            Matrix::Dense(d) => d,
            Matrix::Sparse(s) => csr_to_dense(&s),
        }
    }

    /// A CSR copy (or the CSR matrix itself).
    pub fn to_csr(&self) -> Csr {
        match self {
            Matrix::Dense(d) => dense_to_csr(d, count_nnz(d.as_slice().expect("standard layout"))),
            Matrix::Sparse(s) => s.clone(),
        }
    }

    /// Panics if a representation invariant is broken (used by tests).
    pub fn check_invariants(&self) {
        match self {
            Matrix::Dense(d) => assert!(d.is_standard_layout(), "dense matrix not row-major"),
            Matrix::Sparse(s) => {
                assert!(s.is_csr(), "sparse matrix not CSR");
                for row in s.outer_iterator() {
                    let idx = row.indices();
                    assert!(idx.windows(2).all(|w| w[0] < w[1]), "unsorted CSR row");
                    assert!(
                        row.data().iter().all(|&v| is_stored(v)),
                        "explicit zero in CSR"
                    );
                }
            }
        }
    }
}

/// Whether every value of a slice is finite (no Inf, no NaN), in parallel blocks.
pub fn all_finite(xs: &[f64]) -> bool {
    use rayon::prelude::*;
    if xs.len() < 1 << 16 {
        xs.iter().all(|v| v.is_finite())
    } else {
        xs.par_chunks(1 << 14)
            .all(|c| c.iter().all(|v| v.is_finite()))
    }
}

/// `len` zeros in a fresh vector, written rather than allocated zeroed: jemalloc zeroes a
/// reused extent for `calloc` (`vec![0.0; n]`, `Array2::zeros`) by returning its pages to the
/// kernel, so a large result of every loop iteration was page-faulted in again 4 KiB at a
/// time (22k faults per iteration of the mlr_hv peer kernel); written zeros reuse the pages.
///
/// From [`PAR_ZEROED`] values the zeros are written in parallel blocks of 1 MiB, each
/// [`populate`]d first by the thread that writes it: a fresh 400 MB result (MultiLogReg's
/// `cbind(X, ones)`) otherwise spent 150 ms on one thread faulting its pages in.
pub fn zeroed(len: usize) -> Vec<f64> {
    use rayon::prelude::*;
    use std::mem::MaybeUninit;
    let mut v = Vec::with_capacity(len);
    if len < PAR_ZEROED {
        // through `black_box`, so that LLVM cannot see an allocation followed by a memset of
        // zeros and turn the two into a zeroed allocation (`calloc`), which is what this
        // function avoids
        let buf = std::hint::black_box(&mut v.spare_capacity_mut()[..len]);
        buf.fill(MaybeUninit::new(0.0));
        // SAFETY: the first `len` values of the capacity were just written
        unsafe { v.set_len(len) };
        return v;
    }
    v.spare_capacity_mut()[..len]
        .par_chunks_mut(1 << 17)
        .for_each(|c| {
            populate(c);
            c.fill(MaybeUninit::new(0.0));
        });
    // SAFETY: the loop above initialized each of the first `len` values of the capacity
    unsafe { v.set_len(len) };
    v
}

/// Values from which [`zeroed`] writes its zeros in parallel (4 MiB).
pub const PAR_ZEROED: usize = 1 << 19;

/// Backs the whole pages of `buf` with memory now, by one `madvise(MADV_POPULATE_WRITE)`
/// (Linux 5.14 and later; elsewhere, or when the kernel refuses, nothing happens and the pages
/// fault in on first write as before). A fresh large buffer written by a kernel otherwise
/// takes one page fault per 4 KiB page; on a virtual machine each fault costs microseconds
/// (L2-SVM's 400 MB `rand`: 98k faults, 0.2-0.5 s of system time), and populating a range in
/// one call takes about half of that, on every thread that populates its own part. Pages
/// already backed (a reused extent) are left as they are; the contents never change.
/// Buffers under 1 MiB are left alone (one system call would cost more than their faults).
pub fn populate<T>(buf: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = buf.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(buf);
        let (lo, hi) = (start.next_multiple_of(PAGE), end / PAGE * PAGE);
        if hi >= lo + (1 << 20) {
            // SAFETY: [lo, hi) lies inside `buf`, which this call borrows mutably; populating
            // pages for writing does not change what they hold.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_POPULATE_WRITE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// A dense `rows x cols` matrix of zeros, [`zeroed`].
pub fn zeros(rows: usize, cols: usize) -> Dense {
    Array2::from_shape_vec((rows, cols), zeroed(rows * cols)).expect("rows x cols")
}

/// Whether a value is kept in sparse storage: anything but `+0.0`, the value of the cells
/// outside the pattern. A `-0.0` is kept, so that converting a matrix to sparse storage (a
/// transpose, a product) does not turn it into `+0.0` (`1 / t(matrix(-0.0, 1, 3))` is
/// `-Inf`, as IEEE and the program as written say); it counts as a non-zero.
#[inline]
pub fn is_stored(v: f64) -> bool {
    v.to_bits() != 0
}

/// Counts the non-zero values of a slice (NaN and `-0.0` count as non-zero: [`is_stored`]).
pub fn count_nnz(xs: &[f64]) -> usize {
    use rayon::prelude::*;
    if xs.len() < 1 << 16 {
        count_stored(xs)
    } else {
        xs.par_chunks(1 << 14).map(count_stored).sum()
    }
}

/// The number of stored values of a slice ([`is_stored`]), in one sequential pass
/// ([`count_stored_nonfinite`] without the second count).
pub fn count_stored(xs: &[f64]) -> usize {
    counts::<false>(xs).0
}

/// The number of stored values of a slice ([`is_stored`]) and of its values that are not
/// finite, in one sequential pass.
pub fn count_stored_nonfinite(xs: &[f64]) -> (usize, usize) {
    counts::<true>(xs)
}

/// The counts of [`count_stored`] (and with `NONFINITE` of [`count_stored_nonfinite`]), with
/// AVX2 when the CPU has it: the baseline x86-64 build compares 64-bit integers in three SSE2
/// instructions, and a fused cell-wise kernel counts every register it fills.
fn counts<const NONFINITE: bool>(xs: &[f64]) -> (usize, usize) {
    #[inline(always)]
    fn scan<const NONFINITE: bool>(xs: &[f64]) -> (usize, usize) {
        let (mut stored, mut nonfinite) = (0, 0);
        for &v in xs {
            stored += usize::from(is_stored(v));
            if NONFINITE {
                nonfinite += usize::from(!v.is_finite());
            }
        }
        (stored, nonfinite)
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        fn scan_avx2<const NONFINITE: bool>(xs: &[f64]) -> (usize, usize) {
            scan::<NONFINITE>(xs)
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2
            return unsafe { scan_avx2::<NONFINITE>(xs) };
        }
    }
    scan::<NONFINITE>(xs)
}

/// Converts a dense array to CSR; `nnz` is the exact number of non-zeros (capacity hint).
pub fn dense_to_csr(d: &Dense, nnz: usize) -> Csr {
    let (m, n) = d.dim();
    let mut indptr = Vec::with_capacity(m + 1);
    let mut indices = Vec::with_capacity(nnz);
    let mut data = Vec::with_capacity(nnz);
    indptr.push(0);
    for row in d.rows() {
        for (j, &v) in row.iter().enumerate() {
            if is_stored(v) {
                indices.push(idx(j));
                data.push(v);
            }
        }
        indptr.push(indices.len());
    }
    Csr::new((m, n), indptr, indices, data)
}

/// Expands a CSR matrix into a dense array.
pub fn csr_to_dense(s: &Csr) -> Dense {
    let mut d = Array2::zeros((s.rows(), s.cols()));
    if s.is_csr() {
        for (i, row) in s.outer_iterator().enumerate() {
            let mut out = d.row_mut(i);
            for (j, &v) in row.iter() {
                out[j] = v;
            }
        }
    } else {
        for (&v, (i, j)) in s.iter() {
            d[[col(i), col(j)]] = v;
        }
    }
    d
}

/// Removes explicitly stored `+0.0`s from a CSR matrix ([`is_stored`]).
pub fn drop_explicit_zeros(s: Csr) -> Csr {
    retain_values(s, is_stored)
}

/// Removes stored zeros of either sign from a CSR matrix, as SystemDS's sparse rows drop an
/// appended zero: a `-0.0` an element-wise operation left at a stored entry then reads as the
/// unstored `+0.0`, like the cells around it.
pub fn drop_zeros(s: Csr) -> Csr {
    retain_values(s, |v| v != 0.0)
}

/// The CSR matrix with only the stored values `keep` accepts (itself when it accepts all,
/// found by a scan in parallel blocks for large matrices).
fn retain_values(s: Csr, keep: impl Fn(f64) -> bool + Sync) -> Csr {
    let all = if s.nnz() < 1 << 16 {
        s.data().iter().all(|&v| keep(v))
    } else {
        use rayon::prelude::*;
        s.data()
            .par_chunks(1 << 14)
            .all(|c| c.iter().all(|&v| keep(v)))
    };
    if all {
        return s;
    }
    let (m, n) = s.shape();
    let mut indptr = Vec::with_capacity(m + 1);
    let mut indices = Vec::with_capacity(s.nnz());
    let mut data = Vec::with_capacity(s.nnz());
    indptr.push(0);
    for row in s.outer_iterator() {
        for (j, &v) in row.iter() {
            if keep(v) {
                indices.push(idx(j));
                data.push(v);
            }
        }
        indptr.push(indices.len());
    }
    Csr::new((m, n), indptr, indices, data)
}

/// Items at or above which [`par_copy`], [`par_map`] and [`par_build2`] run in parallel.
const PAR_ITEMS: usize = 1 << 16;

/// A copy of a slice, written in parallel blocks for large slices: each thread writes (and so
/// first touches, page-faulting it in) its own part of the fresh allocation.
pub fn par_copy<T: Copy + Send + Sync>(s: &[T]) -> Vec<T> {
    par_map(s, |&x| x)
}

/// `s` mapped by `f` into a fresh vector, in parallel blocks for large slices (as
/// [`par_copy`]); each item's result depends on that item alone, so the split does not
/// change it.
pub fn par_map<T: Sync, U: Send>(s: &[T], f: impl Fn(&T) -> U + Sync + Send) -> Vec<U> {
    use rayon::prelude::*;
    if s.len() < PAR_ITEMS {
        s.iter().map(f).collect()
    } else {
        let mut out = Vec::with_capacity(s.len());
        out.par_extend(s.par_iter().with_min_len(1 << 12).map(f));
        out
    }
}

/// `f(a[k], b[k])` for each `k` into a fresh vector, in parallel blocks for large slices (as
/// [`par_map`]). Panics if the slices differ in length.
pub fn par_zip_map<T: Sync, S: Sync, U: Send>(
    a: &[T],
    b: &[S],
    f: impl Fn(&T, &S) -> U + Sync + Send,
) -> Vec<U> {
    use rayon::prelude::*;
    assert_eq!(a.len(), b.len(), "par_zip_map: slices of one length");
    if a.len() < PAR_ITEMS {
        a.iter().zip(b).map(|(x, y)| f(x, y)).collect()
    } else {
        let mut out = Vec::with_capacity(a.len());
        out.par_extend(
            a.par_iter()
                .zip(b)
                .with_min_len(1 << 12)
                .map(|(x, y)| f(x, y)),
        );
        out
    }
}

/// The consecutive slots of one piece of [`par_build2`]'s two vectors, written in order by
/// [`Sink::push`].
pub struct Sink<'a, A, B> {
    a: &'a mut [std::mem::MaybeUninit<A>],
    b: &'a mut [std::mem::MaybeUninit<B>],
    k: usize,
}

impl<A, B> Sink<'_, A, B> {
    /// Writes the next pair. Panics when the piece is full.
    #[inline]
    pub fn push(&mut self, x: A, y: B) {
        self.a[self.k].write(x);
        self.b[self.k].write(y);
        self.k += 1;
    }
}

/// Two vectors of `starts.last()` items each, built in parallel pieces: piece `p` holds the
/// items `starts[p]..starts[p + 1]` (`starts` ascending from 0), pushed in order by `fill(p,
/// sink)`. Each thread writes (and first touches) its own pieces of the fresh allocations.
/// Panics if a piece gets another number of items than its length.
pub fn par_build2<A: Copy + Send, B: Copy + Send>(
    starts: &[usize],
    fill: impl Fn(usize, &mut Sink<'_, A, B>) + Sync,
) -> (Vec<A>, Vec<B>) {
    use rayon::prelude::*;
    let len = starts.last().copied().unwrap_or(0);
    let mut va: Vec<A> = Vec::with_capacity(len);
    let mut vb: Vec<B> = Vec::with_capacity(len);
    {
        let (mut ra, mut rb) = (
            &mut va.spare_capacity_mut()[..len],
            &mut vb.spare_capacity_mut()[..len],
        );
        let mut sinks = Vec::with_capacity(starts.len().saturating_sub(1));
        for w in starts.windows(2) {
            let (ha, ta) = std::mem::take(&mut ra).split_at_mut(w[1] - w[0]);
            let (hb, tb) = std::mem::take(&mut rb).split_at_mut(w[1] - w[0]);
            sinks.push(Sink { a: ha, b: hb, k: 0 });
            (ra, rb) = (ta, tb);
        }
        assert!(ra.is_empty(), "par_build2: pieces do not start at 0");
        let run = |(p, sink): (usize, &mut Sink<'_, A, B>)| {
            fill(p, sink);
            assert_eq!(sink.k, sink.a.len(), "par_build2: piece {p} not filled");
        };
        if len < PAR_ITEMS {
            sinks.iter_mut().enumerate().for_each(run);
        } else {
            sinks.par_iter_mut().enumerate().for_each(run);
        }
    }
    // SAFETY: the pieces tile `0..len` (the split above), and every piece wrote each of its
    // slots (`Sink::push` writes them in order and the count was checked; a panic leaves
    // this function before here).
    unsafe {
        va.set_len(len);
        vb.set_len(len);
    }
    (va, vb)
}

/// A CSR matrix from the row pointers and column indices of a valid CSR matrix of this shape
/// (copied, or built with the same invariants) and values to match: no structure check (a
/// scan of every index), which the copied structure makes needless (checked in debug builds).
pub fn csr_from_valid(
    shape: (usize, usize),
    indptr: Vec<usize>,
    indices: Vec<Idx>,
    data: Vec<f64>,
) -> Csr {
    assert!(
        indptr.len() == shape.0 + 1
            && shape.1 <= MAX_SPARSE_COLS
            && indices.len() == data.len()
            && indptr.last() == Some(&indices.len()),
        "csr_from_valid: parts of different lengths"
    );
    // SAFETY: the caller passes the structure of a valid CSR matrix of this shape (sorted,
    // in-range, distinct column indices per row; monotone row pointers), which sprs's
    // unchecked accesses rely on; the lengths are checked above.
    let s =
        unsafe { Csr::new_unchecked(sprs::CompressedStorage::CSR, shape, indptr, indices, data) };
    debug_assert!(s.check_compressed_structure().is_ok());
    s
}

/// The CSR matrix with `x`'s structure and the values `data` (one per stored entry of `x`),
/// without the entries whose value is a zero of either sign (as [`drop_zeros`]). The structure
/// is copied in parallel ([`par_copy`]) when no value is zero, the common case.
pub fn with_pattern(x: &Csr, data: Vec<f64>) -> Csr {
    assert_eq!(data.len(), x.nnz(), "with_pattern: one value per entry");
    let indptr = x.indptr();
    let indptr = indptr.raw_storage();
    let any_zero = if data.len() < PAR_ITEMS {
        // either sign: -0.0 == 0.0
        data.contains(&0.0)
    } else {
        use rayon::prelude::*;
        data.par_chunks(1 << 14).any(|c| c.contains(&0.0))
    };
    if indptr.first() == Some(&0) && !any_zero {
        return csr_from_valid(x.shape(), par_copy(indptr), par_copy(x.indices()), data);
    }
    drop_zeros(Csr::new(
        x.shape(),
        indptr.iter().map(|&p| p - indptr[0]).collect(),
        x.indices().to_vec(),
        data,
    ))
}
