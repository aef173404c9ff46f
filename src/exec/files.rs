//! `read` and `write`: the statement's evaluated arguments turned into the runtime's I/O
//! options ([`spores_runtime::io`] holds the formats and metadata).

use super::value::Value;
use crate::check::hir::{Scalar, ScalarTy, Ty};
use spores_runtime::io::{self, Data, ReadOptions, ScalarValue, WriteOptions};
use std::path::Path;

/// A named argument's value as a string, number or boolean.
fn text(key: &str, v: &Value) -> Result<String, String> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        _ => Err(format!("the {key} argument must be a string")),
    }
}

/// `naStrings`: a string (several separated by `·`, as in a `.mtd`) or a list of strings
/// (`naStrings=["NA", "null"]`), which SystemDS joins with `·`.
fn na_strings(v: &Value) -> Result<String, String> {
    match v {
        Value::List(l) => {
            let mut parts = Vec::with_capacity(l.items.len());
            for item in &l.items {
                parts.push(text("naStrings", item)?);
            }
            Ok(parts.join("\u{b7}"))
        }
        _ => text("naStrings", v),
    }
}

/// A write option SystemDS takes as its literal's text (`sep=10` writes `10` between the
/// fields): a string as it is, a number as it prints.
fn literal_text(key: &str, v: &Value) -> Result<String, String> {
    match v {
        Value::Scalar(Scalar::Int(i)) => Ok(i.to_string()),
        Value::Scalar(Scalar::Double(d)) => Ok(spores_runtime::format::java_double(*d)),
        Value::Scalar(Scalar::Bool(b)) => Ok(if *b { "TRUE" } else { "FALSE" }.to_string()),
        _ => text(key, v),
    }
}

/// A write flag as SystemDS reads its literal (`Boolean.parseBoolean` of its text): a number
/// is false.
fn literal_boolean(key: &str, v: &Value) -> Result<bool, String> {
    match v {
        Value::Scalar(Scalar::Bool(b)) => Ok(*b),
        Value::Scalar(_) => Ok(false),
        _ => Err(format!("the {key} argument must be TRUE or FALSE")),
    }
}

fn number(key: &str, v: &Value) -> Result<f64, String> {
    match v {
        Value::Scalar(s) => Ok(s.as_f64()),
        _ => Err(format!("the {key} argument must be a number")),
    }
}

fn integer(key: &str, v: &Value) -> Result<i64, String> {
    let x = number(key, v)?;
    if x.fract() != 0.0 || !x.is_finite() {
        return Err(format!(
            "the {key} argument must be a whole number, found {x}"
        ));
    }
    Ok(x as i64)
}

fn boolean(key: &str, v: &Value) -> Result<bool, String> {
    match v {
        Value::Scalar(Scalar::Bool(b)) => Ok(*b),
        Value::Scalar(s) => Ok(s.as_f64() != 0.0),
        _ => Err(format!("the {key} argument must be TRUE or FALSE")),
    }
}

/// Reads a file as `read(path, opts...)` with the type the checker gave the expression.
pub(crate) fn read(path: &str, opts: &[(&str, Value)], ty: Ty) -> Result<Value, String> {
    let mut o = ReadOptions::default();
    for (k, v) in opts {
        match *k {
            "format" => o.format = Some(text(k, v)?),
            "data_type" => o.data_type = Some(text(k, v)?),
            "value_type" => o.value_type = Some(text(k, v)?),
            "rows" => o.rows = Some(integer(k, v)?),
            "cols" => o.cols = Some(integer(k, v)?),
            "nnz" => o.nnz = Some(integer(k, v)?),
            "header" => o.header = Some(boolean(k, v)?),
            "sep" => o.sep = Some(text(k, v)?),
            "fill" => o.fill = Some(boolean(k, v)?),
            "default" => o.default = Some(number(k, v)?),
            "naStrings" => o.na_strings = Some(na_strings(v)?),
            other => unreachable!("the checker binds read's arguments, not {other}"),
        }
    }
    // a scalar's type was fixed when the program was checked
    let want = match ty {
        Ty::Scalar(ScalarTy::Double) => Some("double"),
        Ty::Scalar(ScalarTy::Int) => Some("int"),
        Ty::Scalar(ScalarTy::Bool) => Some("boolean"),
        Ty::Str => Some("string"),
        _ => None,
    };
    if ty == Ty::List {
        return read_list(Path::new(path)).map_err(|e| e.to_string());
    }
    if let Some(vt) = want {
        o.data_type = Some("scalar".into());
        o.value_type = Some(vt.into());
    }
    let what = |d: &Data| match d {
        Data::Matrix(_) => "a matrix",
        Data::Scalar(_) => "a scalar",
    };
    match (
        io::read(Path::new(path), &o).map_err(|e| e.to_string())?,
        want,
    ) {
        (Data::Matrix(m), None) => Ok(Value::matrix(m)),
        (Data::Scalar(s), Some(_)) => Ok(match s {
            ScalarValue::Double(d) => Value::Scalar(Scalar::Double(d)),
            ScalarValue::Int(i) => Value::Scalar(Scalar::Int(i)),
            ScalarValue::Bool(b) => Value::Scalar(Scalar::Bool(b)),
            ScalarValue::Str(s) => Value::Str(s),
        }),
        (d, _) => Err(format!(
            "'{path}' holds {}, but the program was checked reading {} (its .mtd changed?)",
            what(&d),
            if want.is_some() {
                "a scalar"
            } else {
                "a matrix"
            }
        )),
    }
}

/// Reads a list as SystemDS's `ListReader` does, what [`write_value`] writes: the folder's
/// entries `i_name` in the order of `i`, each by its own `.mtd` (a nested list as a folder
/// again), unnamed when every name is `null`; the `.mtd` beside the folder gives the length.
fn read_list(p: &Path) -> Result<Value, io::IoError> {
    let shown = p.display().to_string();
    let bad = |message: String| io::IoError::Invalid {
        path: shown.clone(),
        message,
    };
    let len = io::read_metadata(p)?
        .and_then(|m| m.rows)
        .ok_or_else(|| bad("a list's .mtd must give its length (rows)".into()))?;
    let dir = std::fs::read_dir(p).map_err(|source| io::IoError::Os {
        action: "read the folder",
        path: shown.clone(),
        source,
    })?;
    let mut entries = Vec::new();
    for e in dir.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = file.strip_suffix(".mtd") else {
            continue;
        };
        let (i, name) = stem
            .split_once('_')
            .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.to_string())))
            .ok_or_else(|| bad(format!("a list entry must be named INDEX_NAME, not {stem}")))?;
        entries.push((i, name, p.join(stem)));
    }
    entries.sort_by_key(|e| e.0);
    if entries.len() as i64 != len || entries.iter().enumerate().any(|(k, e)| e.0 != k) {
        return Err(bad(format!(
            "the .mtd says {len} entries, the folder holds entries {:?}",
            entries.iter().map(|e| e.0).collect::<Vec<_>>()
        )));
    }
    let mut items = Vec::with_capacity(entries.len());
    for (_, _, path) in &entries {
        let dt = io::read_metadata(path)?.and_then(|m| m.data_type);
        items.push(if dt.as_deref() == Some("list") {
            read_list(path)?
        } else {
            match io::read(path, &ReadOptions::default())? {
                Data::Matrix(m) => Value::matrix(m),
                Data::Scalar(s) => match s {
                    ScalarValue::Double(d) => Value::Scalar(Scalar::Double(d)),
                    ScalarValue::Int(i) => Value::Scalar(Scalar::Int(i)),
                    ScalarValue::Bool(b) => Value::Scalar(Scalar::Bool(b)),
                    ScalarValue::Str(s) => Value::Str(s),
                },
            }
        });
    }
    let names = entries.iter().any(|e| e.1 != "null");
    Ok(Value::List(std::sync::Arc::new(super::value::List {
        items,
        names: names.then(|| entries.into_iter().map(|e| e.1).collect()),
    })))
}

/// Writes a value as `write(value, path, format=, opts...)`.
pub(super) fn write(
    value: &Value,
    path: &str,
    format: Option<String>,
    opts: &[(&str, Value)],
) -> Result<(), String> {
    let mut o = WriteOptions {
        format,
        ..Default::default()
    };
    for (k, v) in opts {
        match *k {
            "header" => o.header = Some(literal_boolean(k, v)?),
            "sep" => o.sep = Some(literal_text(k, v)?),
            "sparse" => o.sparse = Some(literal_boolean(k, v)?),
            "description" => o.description = Some(literal_text(k, v)?),
            other => unreachable!("the checker binds write's arguments, not {other}"),
        }
    }
    write_value(value, Path::new(path), &o).map_err(|e| e.to_string())
}

/// Writes one value; a list as SystemDS's `ListWriter` does: a folder holding each entry as
/// `i_name` (0-based, `null` for an unnamed list; nested lists as folders again), each with
/// its own `.mtd`, and a `.mtd` beside the folder saying `list` and the number of entries.
/// Matrices take the write's format; scalars and strings are written as text.
fn write_value(value: &Value, p: &Path, o: &WriteOptions) -> Result<(), io::IoError> {
    match value {
        Value::Matrix(m) => io::write_matrix(p, m, o),
        Value::Scalar(s) => io::write_scalar(
            p,
            &match *s {
                Scalar::Double(d) => ScalarValue::Double(d),
                Scalar::Int(i) => ScalarValue::Int(i),
                Scalar::Bool(b) => ScalarValue::Bool(b),
            },
        ),
        Value::Str(s) => io::write_scalar(p, &ScalarValue::Str(s.clone())),
        Value::List(l) => {
            let os = |source| io::IoError::Os {
                action: "create the folder",
                path: p.display().to_string(),
                source,
            };
            std::fs::create_dir_all(p).map_err(os)?;
            io::mtd::write_metadata(
                p,
                &io::Metadata {
                    data_type: Some("list".into()),
                    value_type: Some("unknown".into()),
                    rows: Some(l.items.len() as i64),
                    cols: Some(1),
                    format: Some(o.format.clone().unwrap_or_else(|| "text".into())),
                    ..Default::default()
                },
            )?;
            for (i, item) in l.items.iter().enumerate() {
                let name = l.names.as_ref().map_or("null", |n| n[i].as_str());
                write_value(item, &p.join(format!("{i}_{name}")), o)?;
            }
            Ok(())
        }
    }
}
