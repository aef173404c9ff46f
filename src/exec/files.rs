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
            "naStrings" => o.na_strings = Some(text(k, v)?),
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
            "header" => o.header = Some(boolean(k, v)?),
            "sep" => o.sep = Some(text(k, v)?),
            "sparse" => o.sparse = Some(boolean(k, v)?),
            "description" => o.description = Some(text(k, v)?),
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
