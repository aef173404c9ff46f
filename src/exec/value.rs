//! Run-time values: scalars, strings and shared matrices.

use crate::check::hir::Scalar;
use spores_runtime::format::{java_double, matrix_to_string};
use spores_runtime::Matrix;
use std::fmt;
use std::sync::Arc;

/// A value held by a variable.
#[derive(Clone, Debug)]
pub enum Value {
    /// integer, double or boolean
    Scalar(Scalar),
    /// a string (for printing)
    Str(String),
    /// a matrix; assignment shares it
    Matrix(Arc<Matrix>),
    /// a list; assignment shares it
    List(Arc<List>),
}

/// A DML list: its entries in order and, for a named list, one name per entry.
#[derive(Clone, Debug, Default)]
pub struct List {
    /// the entries
    pub items: Vec<Value>,
    /// the names of the entries (a named list) or `None`
    pub names: Option<Vec<String>>,
}

impl List {
    /// The 0-based position of a named entry.
    pub fn position(&self, name: &str) -> Result<usize, String> {
        let Some(names) = &self.names else {
            return Err(format!(
                "invalid indexing by name in an unnamed list: {name}"
            ));
        };
        names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| format!("the list has no entry named `{name}`"))
    }

    /// Entries `lo..hi` (0-based, half-open) as a list, with their names.
    pub fn slice(&self, lo: usize, hi: usize) -> List {
        List {
            items: self.items[lo..hi].to_vec(),
            names: self.names.as_ref().map(|n| n[lo..hi].to_vec()),
        }
    }
}

impl Value {
    /// Wraps a matrix.
    pub fn matrix(m: Matrix) -> Value {
        Value::Matrix(Arc::new(m))
    }

    /// A double scalar.
    pub fn double(v: f64) -> Value {
        Value::Scalar(Scalar::Double(v))
    }
}

/// Formats a scalar as DML's `print` does.
pub fn scalar_to_string(s: Scalar) -> String {
    match s {
        Scalar::Int(i) => i.to_string(),
        Scalar::Double(d) => java_double(d),
        Scalar::Bool(b) => if b { "TRUE" } else { "FALSE" }.to_string(),
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Scalar(s) => f.write_str(&scalar_to_string(*s)),
            Value::Str(s) => f.write_str(s),
            Value::Matrix(m) => f.write_str(matrix_to_string(m).trim_end_matches('\n')),
            Value::List(l) => {
                // as SystemDS's ListObject prints itself
                f.write_str("List (")?;
                for (i, v) in l.items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if let Some(n) = &l.names {
                        write!(f, "{}=", n[i])?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str(")")
            }
        }
    }
}
