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
        }
    }
}
