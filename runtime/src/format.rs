//! Printing values the way SystemDS does: doubles as Java's `Double.toString` (`0.5`, `3.0`,
//! `1.0E-7`, `1.2345E10`, `NaN`, `Infinity`) and matrices as `toString(X)` with three decimals.

use crate::matrix::Matrix;
use std::fmt::Write;

/// Formats a double like Java's `Double.toString`: the shortest digits that round-trip, plain
/// notation for magnitudes in `[1e-3, 1e7)`, otherwise `d.dddE±x`.
pub fn java_double(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let a = v.abs();
    if (1e-3..1e7).contains(&a) {
        let s = format!("{v}");
        if s.contains('.') {
            s
        } else {
            s + ".0"
        }
    } else {
        // Rust's `{:e}` gives the shortest round-trip mantissa, e.g. "1e-7", "1.2345e10".
        let s = format!("{v:e}");
        let (mant, exp) = s.split_once('e').expect("exponent form");
        let mant = if mant.contains('.') {
            mant.to_string()
        } else {
            format!("{mant}.0")
        };
        format!("{mant}E{exp}")
    }
}

/// Formats a matrix like DML's `toString(X)`: one line per row, cells with three decimals
/// separated by a space, each line ending in a newline.
pub fn matrix_to_string(x: &Matrix) -> String {
    let mut out = String::new();
    for i in 0..x.rows() {
        for j in 0..x.cols() {
            if j > 0 {
                out.push(' ');
            }
            let v = x.get(i, j);
            if v.is_finite() {
                let _ = write!(out, "{v:.3}");
            } else {
                out.push_str(&java_double(v));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::java_double;

    #[test]
    fn formats_like_java() {
        let cases = [
            (3.0, "3.0"),
            (0.5, "0.5"),
            (1e-7, "1.0E-7"),
            (1.2345e10, "1.2345E10"),
            (1e7, "1.0E7"),
            (9999999.0, "9999999.0"),
            (0.001, "0.001"),
            (0.0009, "9.0E-4"),
            (-2.5, "-2.5"),
            (5075.129407794886, "5075.129407794886"),
            (8.622841008828373e12, "8.622841008828373E12"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (v, want) in cases {
            assert_eq!(java_double(v), want, "{v}");
        }
    }
}
