//! Shape rules of the operators, on dimensions that may be unknown. The checker calls them with
//! what it knows at compile time, the executor again with the actual sizes, so a program gets
//! the same message whichever finds the mismatch.

use super::hir::{shape_str, Dim};

/// A shape with possibly unknown dimensions.
pub type Shape = (Dim, Dim);

/// Broadcasting of element-wise operators, dimension by dimension (the runtime's
/// [`spores_runtime::kernels::broadcast_dim`] where both sizes are known): equal sizes, or
/// one side 1 (a scalar-like 1x1, a row or column vector, or an outer column-by-row
/// combination).
pub fn elementwise(op: &str, a: Shape, b: Shape) -> Result<Shape, String> {
    let one = |x: Dim, y: Dim| -> Result<Dim, ()> {
        match (x, y) {
            (Some(x), Some(y)) => spores_runtime::kernels::broadcast_dim(x, y)
                .map(Some)
                .ok_or(()),
            (Some(1), y) => Ok(y),
            (x, Some(1)) => Ok(x),
            // an unknown size may be 1, so the result size is unknown too
            _ => Ok(None),
        }
    };
    match (one(a.0, b.0), one(a.1, b.1)) {
        (Ok(r), Ok(c)) => Ok((r, c)),
        _ => Err(format!(
            "dimension mismatch in {op}: {} and {} (shapes must be equal, or one side a scalar, a row vector or a column vector that fits)",
            shape_str(a.0, a.1),
            shape_str(b.0, b.1)
        )),
    }
}

/// `A %*% B`: the inner dimensions must agree.
pub fn matmul(a: Shape, b: Shape) -> Result<Shape, String> {
    match (a.1, b.0) {
        (Some(x), Some(y)) if x != y => Err(format!(
            "dimension mismatch in %*%: {} times {}",
            shape_str(a.0, a.1),
            shape_str(b.0, b.1)
        )),
        _ => Ok((a.0, b.1)),
    }
}

/// `as.scalar(X)`: X must be 1x1.
pub fn as_scalar(a: Shape) -> Result<(), String> {
    match a {
        (Some(r), Some(c)) if (r, c) != (1, 1) => Err(format!(
            "as.scalar needs a 1x1 matrix, found {}",
            shape_str(a.0, a.1)
        )),
        _ => Ok(()),
    }
}

/// `matrix(X, rows, cols)`: the cell counts must agree.
pub fn reshape(a: Shape, rows: Dim, cols: Dim) -> Result<(), String> {
    match (a.0, a.1, rows, cols) {
        (Some(r), Some(c), Some(nr), Some(nc)) if r * c != nr * nc => Err(format!(
            "cannot reshape a {} matrix into {}x{}: cell counts differ",
            shape_str(a.0, a.1),
            nr,
            nc
        )),
        _ => Ok(()),
    }
}

/// Whether a checker message is a shape error of these rules (or an index out of bounds):
/// errors that depend on which statements run, so that code which may not run reports them
/// only when it does.
pub fn is_shape_error(message: &str) -> bool {
    message.starts_with("dimension mismatch")
        || message.starts_with("cannot reshape")
        || message.starts_with("as.scalar needs")
        || message.contains(" out of bounds ")
        || message.starts_with("empty ")
}
