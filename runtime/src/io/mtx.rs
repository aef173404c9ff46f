//! Matrix Market (<https://math.nist.gov/MatrixMarket/formats.html>): `coordinate` and `array`
//! formats; `real`, `integer` and `pattern` fields; `general`, `symmetric` and
//! `skew-symmetric` symmetry. Every malformed input is an [`IoError`] naming the line.

use crate::matrix::Matrix;
use ndarray::Array2;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

/// A failure to read or write a matrix file.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The file could not be opened, read or written.
    #[error("cannot {action} '{path}': {source}")]
    Os {
        /// "open", "read" or "write"
        action: &'static str,
        /// the file
        path: String,
        /// the OS error
        source: std::io::Error,
    },
    /// The file's content is not valid Matrix Market.
    #[error("{path}:{line}: {message}")]
    Format {
        /// the file
        path: String,
        /// 1-based line of the problem
        line: usize,
        /// what is wrong
        message: String,
    },
}

#[derive(PartialEq)]
enum Symmetry {
    General,
    Symmetric,
    Skew,
}

/// The largest matrix a file may declare, in bytes of storage (as for `rand` and `matrix`).
const MAX_BYTES: f64 = (1u64 << 36) as f64;

/// Reads a Matrix Market file.
pub fn read_matrix_market(path: &Path) -> Result<Matrix, IoError> {
    let p = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| IoError::Os {
        action: "open",
        path: p.clone(),
        source,
    })?;
    let fmt_err = |line: usize, message: String| IoError::Format {
        path: p.clone(),
        line,
        message,
    };
    let mut lines = BufReader::new(file).lines().enumerate();
    let next = |lines: &mut std::iter::Enumerate<std::io::Lines<BufReader<std::fs::File>>>| {
        lines.next().map(|(n, l)| {
            l.map(|l| (n + 1, l)).map_err(|source| IoError::Os {
                action: "read",
                path: p.clone(),
                source,
            })
        })
    };
    let (n, header) = next(&mut lines).ok_or_else(|| fmt_err(1, "empty file".into()))??;
    let words: Vec<String> = header.split_whitespace().map(str::to_lowercase).collect();
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(fmt_err(
            n,
            "expected a header '%%MatrixMarket matrix <format> <field> <symmetry>'".into(),
        ));
    }
    let coordinate = match words[2].as_str() {
        "coordinate" => true,
        "array" => false,
        f => {
            return Err(fmt_err(
                n,
                format!("unsupported format '{f}' (coordinate or array)"),
            ))
        }
    };
    let pattern = match words[3].as_str() {
        "real" | "integer" | "double" => false,
        "pattern" if coordinate => true,
        f => {
            return Err(fmt_err(
                n,
                format!("unsupported field '{f}' (real, integer, pattern)"),
            ))
        }
    };
    let sym = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::Skew,
        s => return Err(fmt_err(n, format!("unsupported symmetry '{s}'"))),
    };
    // size line (after comments)
    let (n, size) = loop {
        let (n, l) =
            next(&mut lines).ok_or_else(|| fmt_err(n + 1, "missing size line".into()))??;
        let t = l.trim();
        if !t.is_empty() && !t.starts_with('%') {
            break (n, t.to_string());
        }
    };
    let dims: Vec<usize> = size
        .split_whitespace()
        .map(|w| w.parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| fmt_err(n, format!("malformed size line '{size}'")))?;
    let want = if coordinate { 3 } else { 2 };
    if dims.len() != want {
        return Err(fmt_err(
            n,
            format!("size line needs {want} numbers, found {}", dims.len()),
        ));
    }
    let (rows, cols) = (dims[0], dims[1]);
    if sym != Symmetry::General && rows != cols {
        return Err(fmt_err(
            n,
            format!("a {rows}x{cols} matrix cannot be {}", words[4]),
        ));
    }
    // the header's sizes are not trusted: storage is bounded before anything is allocated,
    // and the entries are counted against the file itself
    let stored = if coordinate {
        dims[2]
    } else {
        rows.saturating_mul(cols)
    };
    let bytes = if coordinate {
        16.0 * stored as f64 + 8.0 * rows as f64
    } else {
        8.0 * rows as f64 * cols as f64
    };
    if rows.checked_mul(cols).is_none() || bytes > MAX_BYTES {
        return Err(fmt_err(
            n,
            format!("a {rows}x{cols} matrix with {stored} entries is too large (about {bytes:.1e} bytes; the limit is 64 GiB)"),
        ));
    }
    let file_len = std::fs::metadata(path).map_or(0, |m| m.len()) as usize;
    // an entry takes at least two bytes of the file ("1\n", or "1 1\n" for coordinates)
    let capacity = stored.min(file_len / 2 + 1);
    let parse_val = |n: usize, w: &str| -> Result<f64, IoError> {
        w.parse::<f64>()
            .map_err(|_| fmt_err(n, format!("'{w}' is not a number")))
    };
    if !coordinate {
        let mut vals = Vec::with_capacity(capacity);
        for item in lines.by_ref() {
            let (n, l) = item;
            let l = l.map_err(|source| IoError::Os {
                action: "read",
                path: p.clone(),
                source,
            })?;
            let t = l.trim();
            if t.is_empty() || t.starts_with('%') {
                continue;
            }
            vals.push(parse_val(n + 1, t)?);
        }
        if vals.len() != rows * cols {
            return Err(fmt_err(
                n,
                format!(
                    "array of {rows}x{cols} needs {} values, found {}",
                    rows * cols,
                    vals.len()
                ),
            ));
        }
        // array format is column-major
        let d = Array2::from_shape_fn((rows, cols), |(i, j)| vals[j * rows + i]);
        return Ok(Matrix::from_dense(d));
    }
    let declared = dims[2];
    let mut entries = Vec::with_capacity(capacity);
    let mut seen = 0usize;
    let mut last = n;
    for (n0, l) in lines {
        let n = n0 + 1;
        last = n;
        let l = l.map_err(|source| IoError::Os {
            action: "read",
            path: p.clone(),
            source,
        })?;
        let t = l.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let w: Vec<&str> = t.split_whitespace().collect();
        let need = if pattern { 2 } else { 3 };
        if w.len() != need {
            return Err(fmt_err(
                n,
                format!("entry needs {need} fields, found {}", w.len()),
            ));
        }
        let idx = |k: usize, bound: usize, what: &str| -> Result<usize, IoError> {
            match w[k].parse::<usize>() {
                Ok(v) if v >= 1 && v <= bound => Ok(v - 1),
                Ok(v) => Err(fmt_err(
                    n,
                    format!("{what} index {v} out of range 1..{bound}"),
                )),
                Err(_) => Err(fmt_err(n, format!("'{}' is not a {what} index", w[k]))),
            }
        };
        let (i, j) = (idx(0, rows, "row")?, idx(1, cols, "column")?);
        let v = if pattern { 1.0 } else { parse_val(n, w[2])? };
        entries.push((i, j, v));
        if sym != Symmetry::General && i != j {
            entries.push((j, i, if sym == Symmetry::Skew { -v } else { v }));
        }
        seen += 1;
    }
    if seen != declared {
        return Err(fmt_err(
            last,
            format!("size line declares {declared} entries, file has {seen}"),
        ));
    }
    Ok(Matrix::from_triplets(rows, cols, &entries))
}

fn create(path: &Path) -> Result<BufWriter<std::fs::File>, IoError> {
    std::fs::File::create(path)
        .map(BufWriter::new)
        .map_err(|source| IoError::Os {
            action: "write",
            path: path.display().to_string(),
            source,
        })
}

fn write_err(path: &Path) -> impl Fn(std::io::Error) -> IoError + '_ {
    move |source| IoError::Os {
        action: "write",
        path: path.display().to_string(),
        source,
    }
}

/// Writes a matrix in Matrix Market coordinate format (non-zeros only, shortest exact values).
pub fn write_matrix_market(path: &Path, x: &Matrix) -> Result<(), IoError> {
    let mut w = create(path)?;
    let e = write_err(path);
    writeln!(w, "%%MatrixMarket matrix coordinate real general").map_err(&e)?;
    writeln!(w, "{} {} {}", x.rows(), x.cols(), x.nnz()).map_err(&e)?;
    match x {
        Matrix::Sparse(s) => {
            for (i, row) in s.outer_iterator().enumerate() {
                for (j, v) in row.iter() {
                    writeln!(w, "{} {} {:?}", i + 1, j + 1, v).map_err(&e)?;
                }
            }
        }
        Matrix::Dense(d) => {
            for ((i, j), v) in d.indexed_iter() {
                if *v != 0.0 {
                    writeln!(w, "{} {} {:?}", i + 1, j + 1, v).map_err(&e)?;
                }
            }
        }
    }
    w.flush().map_err(&e)
}

/// Writes a matrix as comma-separated rows.
pub fn write_csv(path: &Path, x: &Matrix) -> Result<(), IoError> {
    let mut w = create(path)?;
    let e = write_err(path);
    let d = x.to_dense();
    for row in d.rows() {
        let line: Vec<String> = row.iter().map(|v| format!("{v:?}")).collect();
        writeln!(w, "{}", line.join(",")).map_err(&e)?;
    }
    w.flush().map_err(&e)
}
