//! Reading and writing matrices and scalars in the files SystemDS reads and writes.
//!
//! Formats (SystemDS's names):
//! * `text`: one `i j v` line per non-zero cell, row-major, 1-based; an all-zero matrix is the
//!   single line `0 0 0`. Its size lives in the `.mtd` file next to it.
//! * `csv`: one line per row, fields separated by `sep` (default `,`), an optional header line
//!   (`C1,C2,...` when SystemDS writes one); zeros are written `0`. Reading honours `header`,
//!   `sep`, `fill` (empty fields allowed, default TRUE), `default` (their value, default 0) and
//!   `naStrings` (fields read as NaN).
//! * `mm`: Matrix Market, `coordinate` or `array` (see [`read_matrix_market`]).
//! * `binary`: SystemDS's binary blocks, a Hadoop SequenceFile (or a folder of them) of
//!   `(MatrixIndexes, MatrixBlock)` records ([`binary`]); its size and block size come from the
//!   `.mtd`. A scalar written as `binary` is written as `text`, as SystemDS does.
//!
//! Numbers are written as Java's `Double.toString` writes them (`1.0`, `1.0E-7`), so files are
//! byte-identical to SystemDS's. `text`, `csv` and `binary` outputs (and scalars, written as the bare
//! value) get a JSON `.mtd` file ([`mtd`]); missing output folders are created.
//!
//! [`read`] resolves the format as SystemDS does and then some: the `format=` argument, else a
//! Matrix Market header (`%%` on the first line) when there is no `.mtd`, else the `.mtd`'s
//! format, else the file's content (a comma on the first line: CSV; three numbers: `text`;
//! otherwise one-column CSV). Sizes and CSV settings come from the read arguments and the
//! `.mtd`; where both give a value they must agree. The data must agree with the declared
//! size. A folder is read as the concatenation of its part files (SystemDS writes big outputs
//! that way). Every problem is an [`IoError`] naming the file and, for content, the line;
//! sizes are checked against the machine's memory before anything is allocated.
//!
//! Writers stream from the matrix's own storage (dense rows or CSR rows) through a buffered
//! file, never building a second copy of the matrix.

pub mod binary;
mod csv;
pub mod mtd;
mod mtx;
mod text;

pub use mtd::{metadata_to_string, mtd_path, parse_metadata, read_metadata, Metadata};
pub use mtx::{matrix_market_size, read_matrix_market, write_matrix_market};

use crate::format::{java_double, parse_java_double};
use crate::matrix::{prefers_sparse, Matrix, CSR_ENTRY_BYTES, CSR_ROW_BYTES};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A failure to read or write a matrix or scalar file.
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
    /// A line of the file is malformed or disagrees with the declared size.
    #[error("{path}:{line}: {message}")]
    Format {
        /// the file
        path: String,
        /// 1-based line of the problem
        line: usize,
        /// what is wrong
        message: String,
    },
    /// The file as a whole cannot be read or written as asked.
    #[error("{path}: {message}")]
    Invalid {
        /// the file
        path: String,
        /// what is wrong
        message: String,
    },
}

/// A scalar read from or written to a file.
#[derive(Clone, Debug, PartialEq)]
pub enum ScalarValue {
    /// a double
    Double(f64),
    /// an integer
    Int(i64),
    /// a boolean
    Bool(bool),
    /// a string
    Str(String),
}

impl ScalarValue {
    /// The value type SystemDS writes in the `.mtd`.
    pub fn value_type(&self) -> &'static str {
        match self {
            ScalarValue::Double(_) => "double",
            ScalarValue::Int(_) => "int",
            ScalarValue::Bool(_) => "boolean",
            ScalarValue::Str(_) => "string",
        }
    }
}

/// What [`read`] returns.
#[derive(Clone, Debug)]
pub enum Data {
    /// a matrix
    Matrix(Matrix),
    /// a scalar (`data_type="scalar"`)
    Scalar(ScalarValue),
}

/// The arguments of DML's `read` besides the file name; `None` means not given.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// `format`
    pub format: Option<String>,
    /// `data_type`: "matrix" or "scalar"
    pub data_type: Option<String>,
    /// `value_type` of a scalar: "double", "int", "boolean", "string"
    pub value_type: Option<String>,
    /// `rows`
    pub rows: Option<i64>,
    /// `cols`
    pub cols: Option<i64>,
    /// `nnz`
    pub nnz: Option<i64>,
    /// `header` (CSV)
    pub header: Option<bool>,
    /// `sep` (CSV)
    pub sep: Option<String>,
    /// `fill` (CSV)
    pub fill: Option<bool>,
    /// `default` (CSV)
    pub default: Option<f64>,
    /// `naStrings` (CSV), separated by `·` as in SystemDS
    pub na_strings: Option<String>,
}

/// The arguments of DML's `write` besides the value and file name.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `format` (default `text`)
    pub format: Option<String>,
    /// `header` (CSV, default FALSE)
    pub header: Option<bool>,
    /// `sep` (CSV, default `,`)
    pub sep: Option<String>,
    /// `sparse` (CSV: zeros left empty, default FALSE)
    pub sparse: Option<bool>,
    /// `description`, copied into the `.mtd`
    pub description: Option<String>,
}

/// File formats of SystemDS that spores does not read or write.
const UNSUPPORTED: &[&str] = &[
    "libsvm",
    "jsonl",
    "hdf5",
    "compressed",
    "federated",
    "proto",
    "cog",
    "delta",
    "unknown",
];

/// A matrix format spores reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Csv,
    Mm,
    Binary,
}

fn parse_format(path: &str, f: &str) -> Result<Format, IoError> {
    match f.to_ascii_lowercase().as_str() {
        "text" => Ok(Format::Text),
        "csv" => Ok(Format::Csv),
        "mm" => Ok(Format::Mm),
        "binary" => Ok(Format::Binary),
        other => Err(IoError::Invalid {
            path: path.to_string(),
            message: if UNSUPPORTED.contains(&other) {
                format!("format \"{f}\" is not supported (spores reads and writes text, csv, mm and binary)")
            } else {
                format!("unknown format \"{f}\" (expected text, csv, mm or binary)")
            },
        }),
    }
}

fn invalid(path: &Path, message: String) -> IoError {
    IoError::Invalid {
        path: path.display().to_string(),
        message,
    }
}

fn os_err<'a>(action: &'static str, path: &'a Path) -> impl Fn(std::io::Error) -> IoError + 'a {
    move |source| IoError::Os {
        action,
        path: path.display().to_string(),
        source,
    }
}

/// The most memory a matrix read from a file may take: the machine's memory (64 GiB when it
/// cannot be found out).
fn memory_limit() -> f64 {
    let total_kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok())
    });
    total_kib.map_or((1u64 << 36) as f64, |k| k * 1024.0)
}

/// Rejects a declared or found size that cannot be held: dimensions beyond SystemDS's
/// (2^31 - 1) or storage beyond the machine's memory.
fn check_size(path: &Path, rows: i64, cols: i64, nnz: i64) -> Result<(), IoError> {
    let max = i64::from(i32::MAX);
    if rows < 0 || cols < 0 || rows > max || cols > max {
        return Err(invalid(
            path,
            format!("a {rows}x{cols} matrix is out of range (dimensions are 0..{max})"),
        ));
    }
    let cells = rows as f64 * cols as f64;
    let nnz = (nnz.max(0) as f64).min(cells);
    let bytes = if prefers_sparse(rows as usize, cols as usize, nnz as usize) {
        CSR_ENTRY_BYTES as f64 * nnz + CSR_ROW_BYTES as f64 * (rows as f64 + 1.0)
    } else {
        8.0 * cells
    };
    let limit = memory_limit();
    if bytes > limit {
        return Err(invalid(
            path,
            format!(
                "a {rows}x{cols} matrix with {nnz} non-zeros needs about {bytes:.1e} bytes, \
                 more than this machine's {limit:.1e}"
            ),
        ));
    }
    Ok(())
}

/// The files holding the data of `path`: itself, or the sorted non-hidden files of a folder.
fn parts(path: &Path) -> Result<Vec<PathBuf>, IoError> {
    let meta = std::fs::metadata(path).map_err(os_err("open", path))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(os_err("read", path))? {
        let entry = entry.map_err(os_err("read", path))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.starts_with('.') && !name.starts_with('_') && !name.ends_with(".crc") {
            files.push(entry.path());
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(invalid(path, "is an empty folder".into()));
    }
    Ok(files)
}

/// Reads the lines of a data file with their 1-based numbers, calling `f` for each; stops at
/// the first error.
fn for_each_line(
    path: &Path,
    mut f: impl FnMut(usize, &str) -> Result<(), IoError>,
) -> Result<(), IoError> {
    let file = std::fs::File::open(path).map_err(os_err("open", path))?;
    let mut r = BufReader::with_capacity(1 << 16, file);
    let mut line = String::new();
    let mut n = 0;
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(os_err("read", path))? == 0 {
            return Ok(());
        }
        n += 1;
        let l = line.strip_suffix('\n').unwrap_or(&line);
        let l = l.strip_suffix('\r').unwrap_or(l);
        f(n, l)?;
    }
}

/// The first non-blank line of a file, if any.
fn first_line(path: &Path) -> Result<Option<String>, IoError> {
    let file = std::fs::File::open(path).map_err(os_err("open", path))?;
    let r = BufReader::new(file);
    for l in r.lines() {
        let l = l.map_err(os_err("read", path))?;
        if !l.trim().is_empty() {
            return Ok(Some(l));
        }
    }
    Ok(None)
}

/// Picks a value given by the read statement and/or the `.mtd`; they must agree.
fn agree<T: PartialEq + std::fmt::Display + Clone>(
    path: &Path,
    key: &str,
    given: &Option<T>,
    mtd: &Option<T>,
) -> Result<Option<T>, IoError> {
    match (given, mtd) {
        (Some(g), Some(m)) if g != m => Err(invalid(
            path,
            format!("read gives {key}={g} but the metadata file says {m}"),
        )),
        (Some(g), _) => Ok(Some(g.clone())),
        (None, m) => Ok(m.clone()),
    }
}

/// Reads a matrix or scalar as DML's `read(path, ...)` does.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<Data, IoError> {
    let name = path.display().to_string();
    let scalar_asked = opts
        .data_type
        .as_deref()
        .is_some_and(|d| d.eq_ignore_ascii_case("scalar"));
    // SystemDS skips the metadata when the statement says everything about a scalar
    let mtd = if scalar_asked && opts.value_type.is_some() {
        None
    } else {
        read_metadata(path)?
    };
    let m = mtd.clone().unwrap_or_default();
    let data_type = opts
        .data_type
        .clone()
        .or(m.data_type.clone())
        .unwrap_or_else(|| "matrix".into())
        .to_ascii_lowercase();
    match data_type.as_str() {
        "scalar" => {
            let vt = opts
                .value_type
                .clone()
                .or(m.value_type.clone())
                .unwrap_or_else(|| "double".into());
            return read_scalar(path, &vt).map(Data::Scalar);
        }
        "matrix" => {}
        other => {
            return Err(invalid(
                path,
                format!("cannot read data type \"{other}\" (spores reads matrix and scalar)"),
            ))
        }
    }
    if std::fs::metadata(path).is_err() {
        // the OS error names the problem (missing file, no permission)
        std::fs::File::open(path).map_err(os_err("open", path))?;
    }
    let format = match (&opts.format, &mtd) {
        (Some(f), _) => parse_format(&name, f)?,
        (
            None,
            Some(Metadata {
                format: Some(f), ..
            }),
        ) => parse_format(&name, f)?,
        (None, _) => sniff(path)?,
    };
    if let (Some(g), Some(f)) = (&opts.format, &m.format) {
        if format != Format::Mm && parse_format(&name, f)? != format {
            return Err(invalid(
                path,
                format!("read gives format=\"{g}\" but the metadata file says \"{f}\""),
            ));
        }
    }
    let rows = agree(path, "rows", &opts.rows, &m.rows)?.filter(|&r| r >= 0);
    let cols = agree(path, "cols", &opts.cols, &m.cols)?.filter(|&c| c >= 0);
    if let (Some(r), Some(c)) = (rows, cols) {
        let nnz = agree(path, "nnz", &opts.nnz, &m.nnz)?
            .filter(|&n| n >= 0)
            .unwrap_or(r.saturating_mul(c));
        check_size(path, r, c, nnz)?;
    }
    let x = match format {
        Format::Mm => {
            let x = read_matrix_market(path)?;
            for (key, want, got) in [("rows", opts.rows, x.rows()), ("cols", opts.cols, x.cols())] {
                if let Some(w) = want.filter(|&w| w >= 0 && w as usize != got) {
                    return Err(invalid(
                        path,
                        format!("read gives {key}={w} but the Matrix Market header says {got}"),
                    ));
                }
            }
            x
        }
        Format::Text => {
            let nnz = agree(path, "nnz", &opts.nnz, &m.nnz)?.filter(|&n| n >= 0);
            text::read(path, &parts(path)?, rows, cols, nnz)?
        }
        Format::Csv => {
            let na = opts
                .na_strings
                .as_ref()
                .map(|s| s.split('\u{b7}').map(String::from).collect())
                .or(m.na_strings.clone())
                .unwrap_or_default();
            let settings = csv::Settings {
                header: agree(path, "header", &opts.header, &m.header)?.unwrap_or(false),
                sep: agree(path, "sep", &opts.sep, &m.sep)?.unwrap_or_else(|| ",".into()),
                fill: agree(path, "fill", &opts.fill, &m.fill)?.unwrap_or(true),
                default: opts.default.or(m.default).unwrap_or(0.0),
                na_strings: na,
            };
            if settings.sep.is_empty() {
                return Err(invalid(path, "the CSV separator is empty".into()));
            }
            let nnz = agree(path, "nnz", &opts.nnz, &m.nnz)?.filter(|&n| n >= 0);
            csv::read(path, &parts(path)?, &settings, rows, cols, nnz)?
        }
        Format::Binary => {
            let (Some(r), Some(c)) = (rows, cols) else {
                return Err(invalid(
                    path,
                    "a binary matrix needs its size: rows and cols in its .mtd or in the read \
                     statement"
                        .into(),
                ));
            };
            let block = (
                m.rows_in_block.unwrap_or(binary::DEFAULT_BLOCK),
                m.cols_in_block.unwrap_or(binary::DEFAULT_BLOCK),
            );
            let nnz = agree(path, "nnz", &opts.nnz, &m.nnz)?.filter(|&n| n >= 0);
            binary::read(path, &parts(path)?, (r, c), block, nnz)?
        }
    };
    Ok(Data::Matrix(x))
}

/// Guesses the format of a file without metadata from its first line.
fn sniff(path: &Path) -> Result<Format, IoError> {
    let first_part = parts(path)?.first().cloned();
    if first_part.as_deref().is_some_and(binary::is_sequence_file) {
        return Ok(Format::Binary);
    }
    let first = match first_part {
        Some(p) => first_line(&p)?,
        None => None,
    };
    let Some(l) = first else {
        return Err(invalid(
            path,
            "is empty and has no metadata file (.mtd) saying what it holds".into(),
        ));
    };
    let w: Vec<&str> = l.split_whitespace().collect();
    Ok(if l.starts_with("%%") {
        Format::Mm
    } else if l.contains(',') {
        Format::Csv
    } else if w.len() == 3
        && w[0].parse::<u64>().is_ok()
        && w[1].parse::<u64>().is_ok()
        && parse_java_double(w[2]).is_some()
    {
        Format::Text
    } else {
        Format::Csv
    })
}

/// Reads a scalar file: the first line parsed by the value type (a string is the whole file).
fn read_scalar(path: &Path, value_type: &str) -> Result<ScalarValue, IoError> {
    let text = std::fs::read_to_string(path).map_err(os_err("read", path))?;
    let vt = value_type.to_ascii_lowercase();
    if matches!(vt.as_str(), "string" | "str") {
        let mut s = text.replace("\r\n", "\n");
        if s.ends_with('\n') {
            s.pop();
        }
        return Ok(ScalarValue::Str(s));
    }
    let Some(line) = text.lines().next() else {
        return Err(invalid(path, "is empty (expected a scalar)".into()));
    };
    let bad = |what: &str| IoError::Format {
        path: path.display().to_string(),
        line: 1,
        message: format!("'{line}' is not {what}"),
    };
    Ok(match vt.as_str() {
        "double" | "fp64" | "fp32" => {
            ScalarValue::Double(parse_java_double(line).ok_or_else(|| bad("a number"))?)
        }
        "int" | "int64" | "int32" => {
            ScalarValue::Int(line.trim().parse().map_err(|_| bad("an integer"))?)
        }
        // Java's Boolean.parseBoolean: "true" in any case, anything else is false
        "boolean" => ScalarValue::Bool(line.trim().eq_ignore_ascii_case("true")),
        other => {
            return Err(invalid(
                path,
                format!("unknown value type \"{other}\" (expected double, int, boolean or string)"),
            ))
        }
    })
}

/// Creates the folder a file goes into.
fn create_parent(path: &Path) -> Result<(), IoError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(os_err("create the folder of", path))?;
    }
    if path.is_dir() {
        // SystemDS writes big outputs as a folder of part files and replaces such a folder
        // when it writes again; a folder holding anything else is left alone
        let only_parts = std::fs::read_dir(path)
            .map_err(os_err("read", path))?
            .all(|e| e.is_ok_and(|e| is_part_file(&e.file_name().to_string_lossy())));
        if !only_parts {
            return Err(invalid(
                path,
                "is a folder (not one of part files); cannot write a file there".into(),
            ));
        }
        std::fs::remove_dir_all(path).map_err(os_err("replace", path))?;
    }
    Ok(())
}

/// Whether a file name is one SystemDS (Hadoop) writes in an output folder: `0-m-00000`,
/// `part-00000`, `_SUCCESS` and their `.crc` checksums.
fn is_part_file(name: &str) -> bool {
    let name = name.trim_start_matches('.');
    let name = name.strip_suffix(".crc").unwrap_or(name);
    name == "_SUCCESS"
        || name.starts_with("part-")
        || name.split('-').all(|p| {
            !p.is_empty() && (p.bytes().all(|b| b.is_ascii_digit()) || p == "m" || p == "r")
        })
}

/// Removes the Hadoop checksum file (`.NAME.crc`) SystemDS may have left beside `path`: it
/// would not match what spores writes there, and SystemDS's reader would reject the file.
pub(crate) fn remove_checksum(path: &Path) -> Result<(), IoError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(());
    };
    let crc = dir.join(format!(".{}.crc", name.to_string_lossy()));
    if crc.is_file() {
        std::fs::remove_file(&crc).map_err(os_err("remove", &crc))?;
    }
    Ok(())
}

/// Opens an output file for buffered writing.
fn create(path: &Path) -> Result<BufWriter<std::fs::File>, IoError> {
    std::fs::File::create(path)
        .map(|f| BufWriter::with_capacity(1 << 16, f))
        .map_err(os_err("write", path))
}

/// Writes a matrix as DML's `write(X, path, format=...)` does, with its `.mtd` for `text` and
/// `csv`.
pub fn write_matrix(path: &Path, x: &Matrix, opts: &WriteOptions) -> Result<(), IoError> {
    let name = path.display().to_string();
    let format = parse_format(&name, opts.format.as_deref().unwrap_or("text"))?;
    create_parent(path)?;
    let mut meta = Metadata {
        data_type: Some("matrix".into()),
        value_type: Some("double".into()),
        rows: Some(x.rows() as i64),
        cols: Some(x.cols() as i64),
        nnz: Some(text::written_nnz(x) as i64),
        format: None,
        description: opts.description.clone(),
        ..Default::default()
    };
    match format {
        Format::Mm => {
            write_matrix_market(path, x)?;
            remove_checksum(path)?;
            // a stale .mtd would make the next read take this file for something else
            let stale = mtd_path(path);
            if stale.is_file() {
                std::fs::remove_file(&stale).map_err(os_err("remove", &stale))?;
            }
            return Ok(());
        }
        Format::Text => {
            text::write(path, x)?;
            meta.format = Some("text".into());
        }
        Format::Csv => {
            if x.rows() == 0 || x.cols() == 0 {
                return Err(invalid(
                    path,
                    format!(
                        "cannot write a {}x{} matrix as CSV (no rows or no columns)",
                        x.rows(),
                        x.cols()
                    ),
                ));
            }
            let sep = opts.sep.clone().unwrap_or_else(|| ",".into());
            let header = opts.header.unwrap_or(false);
            csv::write(path, x, header, &sep, opts.sparse.unwrap_or(false))?;
            meta.format = Some("csv".into());
            meta.header = Some(header);
            meta.sep = Some(sep);
        }
        Format::Binary => {
            let block = binary::DEFAULT_BLOCK;
            meta.nnz = Some(binary::write(path, x, block as usize)? as i64);
            meta.format = Some("binary".into());
            meta.rows_in_block = Some(block);
            meta.cols_in_block = Some(block);
        }
    }
    remove_checksum(path)?;
    mtd::write_metadata(path, &meta)
}

/// Writes a scalar as DML's `write(s, path)` does: the bare value (no newline) and a `.mtd`.
pub fn write_scalar(path: &Path, v: &ScalarValue) -> Result<(), IoError> {
    create_parent(path)?;
    let text = match v {
        ScalarValue::Double(d) => java_double(*d),
        ScalarValue::Int(i) => i.to_string(),
        ScalarValue::Bool(b) => b.to_string(),
        ScalarValue::Str(s) => s.clone(),
    };
    let mut w = create(path)?;
    w.write_all(text.as_bytes())
        .and_then(|_| w.flush())
        .map_err(os_err("write", path))?;
    mtd::write_metadata(
        path,
        &Metadata {
            data_type: Some("scalar".into()),
            value_type: Some(v.value_type().into()),
            format: Some("text".into()),
            ..Default::default()
        },
    )
}

#[cfg(test)]
mod tests;
