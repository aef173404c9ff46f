//! CSV as SystemDS reads and writes it: one line per row; fields split by the whole separator
//! string and trimmed; an empty field is `default` when `fill` is on (an error otherwise); a
//! field equal to one of `naStrings` is NaN. Written zeros are `0` (left empty with
//! `sparse=TRUE`), other values as Java prints doubles; the optional header is `C1,C2,...`.

use super::{check_size, create, for_each_line, os_err, IoError};
use crate::format::{java_double_into, parse_java_double};
use crate::matrix::{prefers_sparse, Csr, Dense, Idx, Matrix};
use std::io::Write;
use std::path::{Path, PathBuf};

/// How to read a CSV file.
pub(super) struct Settings {
    pub header: bool,
    pub sep: String,
    pub fill: bool,
    pub default: f64,
    pub na_strings: Vec<String>,
}

/// Cells as they are read: densely, or as CSR when the declared size and non-zeros say the
/// matrix is sparse (so a big sparse CSV never takes the memory of its dense form).
enum Cells {
    Dense(Vec<f64>),
    Sparse {
        indptr: Vec<usize>,
        indices: Vec<Idx>,
        data: Vec<f64>,
    },
}

/// Reads CSV rows from the part files (the header, if any, is the first line of the first
/// part); `rows` and `cols`, when declared, must match the data. The declared size has been
/// checked against memory by the caller.
pub(super) fn read(
    path: &Path,
    parts: &[PathBuf],
    s: &Settings,
    rows: Option<i64>,
    cols: Option<i64>,
    nnz: Option<i64>,
) -> Result<Matrix, IoError> {
    let mut cells = match (rows, cols, nnz) {
        (Some(r), Some(c), Some(n)) if prefers_sparse(r as usize, c as usize, n as usize) => {
            let n = n.min(r * c);
            let mut indptr = Vec::with_capacity(r as usize + 1);
            indptr.push(0);
            Cells::Sparse {
                indptr,
                indices: Vec::with_capacity(n as usize),
                data: Vec::with_capacity(n as usize),
            }
        }
        (Some(r), Some(c), _) => Cells::Dense(Vec::with_capacity((r * c) as usize)),
        _ => Cells::Dense(Vec::new()),
    };
    let mut ncols: Option<usize> = cols.map(|c| c as usize);
    let mut nrows = 0usize;
    let mut nnz = 0usize;
    let mut last = (path.display().to_string(), 0usize);
    for (k, part) in parts.iter().enumerate() {
        let name = part.display().to_string();
        for_each_line(part, |n, l| {
            last = (name.clone(), n);
            if k == 0 && n == 1 && s.header {
                return Ok(());
            }
            let err = |message: String| IoError::Format {
                path: name.clone(),
                line: n,
                message,
            };
            let l = l.trim();
            let mut count = 0usize;
            for field in l.split(s.sep.as_str()) {
                let f = field.trim();
                let v = if f.is_empty() {
                    if !s.fill {
                        return Err(err(
                            "empty field; read with fill=TRUE to read empty fields as `default`"
                                .into(),
                        ));
                    }
                    s.default
                } else if s.na_strings.iter().any(|na| na == f) {
                    f64::NAN
                } else if f == "0" {
                    0.0
                } else {
                    parse_java_double(f)
                        .ok_or_else(|| err(format!("field {} is '{f}', not a number", count + 1)))?
                };
                match &mut cells {
                    Cells::Dense(d) => d.push(v),
                    Cells::Sparse { indices, data, .. } => {
                        if crate::matrix::is_stored(v) {
                            // a row with more fields than the declared columns (at most
                            // `MAX_SPARSE_COLS`: the representation rule) is an error below
                            indices.push(count as Idx);
                            data.push(v);
                        }
                    }
                }
                if crate::matrix::is_stored(v) {
                    nnz += 1;
                }
                count += 1;
            }
            if let Cells::Sparse {
                indptr, indices, ..
            } = &mut cells
            {
                indptr.push(indices.len());
            }
            let want = *ncols.get_or_insert(count);
            if count != want {
                return Err(err(format!(
                    "{count} fields, expected {want}{}",
                    if cols.is_some() {
                        " (the declared number of columns)"
                    } else {
                        " (as on the first row)"
                    }
                )));
            }
            nrows += 1;
            if let Some(r) = rows {
                if nrows as i64 > r {
                    return Err(err(format!("more rows than the declared {r}")));
                }
            }
            Ok(())
        })?;
    }
    if let Some(r) = rows {
        if (nrows as i64) < r {
            return Err(IoError::Format {
                path: last.0,
                line: last.1,
                message: format!("the file ends after {nrows} rows, the declared size has {r}"),
            });
        }
    }
    let c = ncols.unwrap_or(0);
    check_size(path, nrows as i64, c as i64, nnz as i64)?;
    Ok(match cells {
        Cells::Dense(d) => Matrix::from_dense_nnz(
            Dense::from_shape_vec((nrows, c), d).expect("rows times columns cells were read"),
            nnz,
        ),
        Cells::Sparse {
            indptr,
            indices,
            data,
        } => Matrix::from_csr(Csr::new((nrows, c), indptr, indices, data)),
    })
}

/// Writes the matrix as CSV rows, streaming from its storage.
pub(super) fn write(
    path: &Path,
    x: &Matrix,
    header: bool,
    sep: &str,
    sparse: bool,
) -> Result<(), IoError> {
    let mut w = create(path)?;
    let cols = x.cols();
    let zero: &[u8] = if sparse { b"" } else { b"0" };
    let sep = sep.as_bytes();
    let mut num = String::new();
    let mut cell = |w: &mut dyn Write, j: usize, v: f64| -> std::io::Result<()> {
        if j > 0 {
            w.write_all(sep)?;
        }
        if v == 0.0 {
            w.write_all(zero)
        } else {
            java_double_into(&mut num, v);
            w.write_all(num.as_bytes())
        }
    };
    let result = (|| -> std::io::Result<()> {
        if header {
            for j in 0..cols {
                if j > 0 {
                    w.write_all(sep)?;
                }
                write!(w, "C{}", j + 1)?;
            }
            w.write_all(b"\n")?;
        }
        match x {
            Matrix::Dense(d) => {
                for row in d.rows() {
                    for (j, &v) in row.iter().enumerate() {
                        cell(&mut w, j, v)?;
                    }
                    w.write_all(b"\n")?;
                }
            }
            Matrix::Sparse(s) => {
                for row in s.outer_iterator() {
                    let mut nz = row.iter().peekable();
                    for j in 0..cols {
                        let v = match nz.peek() {
                            Some(&(k, &v)) if k == j => {
                                nz.next();
                                v
                            }
                            _ => 0.0,
                        };
                        cell(&mut w, j, v)?;
                    }
                    w.write_all(b"\n")?;
                }
            }
        }
        w.flush()
    })();
    result.map_err(os_err("write", path))
}
