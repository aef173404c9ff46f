//! Matrix Market (<https://math.nist.gov/MatrixMarket/formats.html>): `coordinate` and `array`
//! formats; `real`, `integer` and `pattern` fields; `general`, `symmetric` and
//! `skew-symmetric` symmetry. Every malformed input is an [`IoError`] naming the line. SystemDS
//! writes an all-zero matrix with the entry line `0 0 0`, which is read as no entry.

use super::{check_size, create, os_err, IoError};
use crate::format::java_double_into;
use crate::matrix::Matrix;
use ndarray::Array2;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

#[derive(PartialEq)]
enum Symmetry {
    General,
    Symmetric,
    Skew,
}

/// The `rows x cols` of a Matrix Market file's size line (after its `%%MatrixMarket matrix`
/// header and comments), reading only these lines; `None` when the file is missing, is not
/// Matrix Market or has a malformed size line (reading it reports why).
pub fn matrix_market_size(path: &Path) -> Option<(usize, usize)> {
    let file = std::fs::File::open(path).ok()?;
    let mut lines = BufReader::new(file).lines();
    let header = lines.next()?.ok()?;
    let words: Vec<String> = header.split_whitespace().map(str::to_lowercase).collect();
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return None;
    }
    let size = lines
        .map_while(Result::ok)
        .find(|l| !l.trim().is_empty() && !l.trim().starts_with('%'))?;
    let dims: Vec<usize> = size
        .split_whitespace()
        .map(|w| w.parse::<usize>().ok())
        .collect::<Option<_>>()?;
    match dims.as_slice() {
        [r, c] | [r, c, _] => Some((*r, *c)),
        _ => None,
    }
}

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
    let declared_nnz = if coordinate {
        dims[2]
    } else {
        rows.saturating_mul(cols)
    };
    check_size(
        path,
        rows.min(i64::MAX as usize) as i64,
        cols.min(i64::MAX as usize) as i64,
        declared_nnz.min(i64::MAX as usize) as i64,
    )?;
    // capacity from the file's length, not from a size line that may be absurd
    let file_len = std::fs::metadata(path).map_or(0, |m| m.len() as usize);
    let parse_val = |n: usize, w: &str| -> Result<f64, IoError> {
        w.parse::<f64>()
            .map_err(|_| fmt_err(n, format!("'{w}' is not a number")))
    };
    if !coordinate {
        let mut vals = Vec::with_capacity((rows * cols).min(file_len / 2 + 1));
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
    let mut entries = Vec::with_capacity(declared.min(file_len / 6 + 1));
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
        if !pattern && w[0] == "0" && w[1] == "0" && parse_val(n, w[2])? == 0.0 {
            // SystemDS's line for a matrix without non-zeros
            continue;
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

/// Writes a matrix in Matrix Market coordinate format as SystemDS does: the non-zeros
/// row-major with Java's number format, and the line `0 0 0` when there are none.
pub fn write_matrix_market(path: &Path, x: &Matrix) -> Result<(), IoError> {
    let mut w = create(path)?;
    let mut any = false;
    let mut num = String::new();
    writeln!(w, "%%MatrixMarket matrix coordinate real general")
        .and_then(|_| {
            writeln!(
                w,
                "{} {} {}",
                x.rows(),
                x.cols(),
                super::text::written_nnz(x)
            )
        })
        .and_then(|_| {
            super::text::for_each_nonzero(x, |i, j, v| {
                any = true;
                java_double_into(&mut num, v);
                writeln!(w, "{} {} {num}", i + 1, j + 1)
            })
        })
        .and_then(|_| if any { Ok(()) } else { w.write_all(b"0 0 0\n") })
        .and_then(|_| w.flush())
        .map_err(os_err("write", path))
}
