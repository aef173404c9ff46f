//! SystemDS's `text` format: `i j v` per non-zero cell, row-major, 1-based; `0 0 0` alone for a
//! matrix without non-zeros. Cells with value 0 are skipped when read (so is `0 0 0`); a cell
//! given twice keeps its last value, as SystemDS's reader does.

use super::{check_size, create, for_each_line, os_err, IoError};
use crate::format::{java_double_into, parse_java_double};
use crate::matrix::{self, Csr, Matrix};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Reads `text` cells from the part files; the size comes from the metadata or read arguments,
/// else from the largest indices found.
pub(super) fn read(
    path: &Path,
    parts: &[PathBuf],
    rows: Option<i64>,
    cols: Option<i64>,
    nnz: Option<i64>,
) -> Result<Matrix, IoError> {
    // room for the declared non-zeros, but never more than the files can hold (a line has at
    // least 6 bytes)
    let bytes: u64 = parts
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let room = (bytes / 6 + 1).min(nnz.map_or(u64::MAX, |n| n.max(0) as u64 + 1));
    let mut entries: Vec<(usize, usize, f64)> = Vec::with_capacity(room as usize);
    let (mut max_i, mut max_j) = (0usize, 0usize);
    for part in parts {
        let name = part.display().to_string();
        for_each_line(part, |n, l| {
            let err = |message: String| IoError::Format {
                path: name.clone(),
                line: n,
                message,
            };
            let mut it = l.split_whitespace();
            let w = match (it.next(), it.next(), it.next(), it.next()) {
                (None, ..) => return Ok(()),
                (Some(a), Some(b), Some(c), None) => [a, b, c],
                _ => {
                    return Err(err(format!(
                        "expected 'row column value', found {} fields",
                        l.split_whitespace().count()
                    )))
                }
            };
            let v = parse_java_double(w[2])
                .ok_or_else(|| err(format!("'{}' is not a number", w[2])))?;
            let idx = |k: usize, bound: Option<i64>, what: &str| -> Result<usize, IoError> {
                let i: i64 = w[k]
                    .parse()
                    .map_err(|_| err(format!("'{}' is not a {what} index", w[k])))?;
                match bound {
                    Some(b) if i < 1 || i > b => Err(err(format!(
                        "{what} index {i} out of range 1..{b} of the declared size"
                    ))),
                    None if i < 1 || i > i64::from(i32::MAX) => {
                        Err(err(format!("{what} index {i} out of range")))
                    }
                    _ => Ok(i as usize - 1),
                }
            };
            if v == 0.0 {
                // zeros are not stored (SystemDS writes `0 0 0` for an empty matrix)
                return Ok(());
            }
            let (i, j) = (idx(0, rows, "row")?, idx(1, cols, "column")?);
            max_i = max_i.max(i + 1);
            max_j = max_j.max(j + 1);
            entries.push((i, j, v));
            Ok(())
        })?;
    }
    let r = rows.unwrap_or(max_i as i64);
    let c = cols.unwrap_or(max_j as i64);
    check_size(path, r, c, entries.len() as i64)?;
    // row-major order (as written by SystemDS and spores); the last value wins for a cell
    // given twice, since the sort is stable
    if !entries
        .windows(2)
        .all(|w| (w[0].0, w[0].1) <= (w[1].0, w[1].1))
    {
        entries.sort_by_key(|&(i, j, _)| (i, j));
    }
    entries.dedup_by(|later, earlier| {
        let same = (later.0, later.1) == (earlier.0, earlier.1);
        if same {
            earlier.2 = later.2;
        }
        same
    });
    let (r, c) = (r as usize, c as usize);
    let mut indptr = vec![0usize; r + 1];
    for &(i, _, _) in &entries {
        indptr[i + 1] += 1;
    }
    for i in 0..r {
        indptr[i + 1] += indptr[i];
    }
    let indices = entries.iter().map(|e| matrix::idx(e.1)).collect();
    let data = entries.iter().map(|e| e.2).collect();
    drop(entries);
    Ok(Matrix::from_csr(Csr::new((r, c), indptr, indices, data)))
}

/// The number of cells [`for_each_nonzero`] writes: the non-zeros, without the `-0.0`s that
/// sparse storage keeps (files do not store the sign of a zero cell, as SystemDS's do not).
pub(super) fn written_nnz(x: &Matrix) -> usize {
    match x {
        Matrix::Sparse(s) => s.data().iter().filter(|v| **v != 0.0).count(),
        Matrix::Dense(d) => d.iter().filter(|v| **v != 0.0).count(),
    }
}

/// Calls `f(i, j, v)` for each non-zero cell in row-major order, from the matrix's storage.
pub(super) fn for_each_nonzero(
    x: &Matrix,
    mut f: impl FnMut(usize, usize, f64) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match x {
        Matrix::Sparse(s) => {
            for (i, row) in s.outer_iterator().enumerate() {
                for (j, &v) in row.iter() {
                    if v != 0.0 {
                        f(i, j, v)?;
                    }
                }
            }
        }
        Matrix::Dense(d) => {
            for (i, row) in d.rows().into_iter().enumerate() {
                for (j, &v) in row.iter().enumerate() {
                    if v != 0.0 {
                        f(i, j, v)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Writes the non-zero cells as `i j v` lines (`0 0 0` when there are none).
pub(super) fn write(path: &Path, x: &Matrix) -> Result<(), IoError> {
    let mut w = create(path)?;
    let mut any = false;
    let mut num = String::new();
    for_each_nonzero(x, |i, j, v| {
        any = true;
        java_double_into(&mut num, v);
        writeln!(w, "{} {} {num}", i + 1, j + 1)
    })
    .and_then(|_| if any { Ok(()) } else { w.write_all(b"0 0 0\n") })
    .and_then(|_| w.flush())
    .map_err(os_err("write", path))
}
