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
            // a known size other than 1 is the result's: the unknown one is either the same
            // or 1 (broadcast), anything else fails when the statement runs
            (Some(x), None) | (None, Some(x)) => Ok(Some(x)),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every known pair of sizes broadcasts as the runtime does, and an unknown size takes
    /// what every size it may be agrees on.
    #[test]
    fn elementwise_shapes_with_unknown_sizes() {
        let sizes = [0, 1, 2, 7];
        for &x in &sizes {
            for &y in &sizes {
                let want = spores_runtime::kernels::broadcast_dim(x, y);
                let got = elementwise("+", (Some(x), Some(1)), (Some(y), Some(1)));
                assert_eq!(got.ok().map(|s| s.0), want.map(Some), "{x} and {y}");
            }
            // the unknown side is x (or 1, broadcast) or the statement fails at run time:
            // the result is x whenever x is not 1, and unknown when x is 1
            let want = if x == 1 { None } else { Some(x) };
            for (a, b) in [
                ((Some(x), Some(3)), (None, Some(3))),
                ((None, Some(3)), (Some(x), Some(3))),
            ] {
                let got = elementwise("+", a, b).expect("may fit");
                assert_eq!(got, (want, Some(3)), "{a:?} and {b:?}");
                // and it agrees with every size the unknown side could have that fits
                for &y in &sizes {
                    let (ka, kb) = ((a.0.or(Some(y)), a.1), (b.0.or(Some(y)), b.1));
                    if let Ok(known) = elementwise("+", ka, kb) {
                        if let Some(w) = want {
                            assert_eq!(known.0, Some(w), "{ka:?} and {kb:?}");
                        }
                    }
                }
            }
        }
        assert_eq!(
            elementwise("+", (None, None), (None, None)),
            Ok((None, None))
        );
    }
}
