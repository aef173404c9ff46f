//! Printing values the way SystemDS does: doubles as Java's `Double.toString` (`0.5`, `3.0`,
//! `1.0E-7`, `1.2345E10`, `NaN`, `Infinity`) and matrices as `toString(X)` with three decimals.

use crate::matrix::Matrix;
use std::fmt::Write;

/// Formats a double like Java's `Double.toString`: the shortest digits that round-trip, plain
/// notation for magnitudes in `[1e-3, 1e7)`, otherwise `d.dddE±x`.
pub fn java_double(v: f64) -> String {
    let mut s = String::new();
    java_double_into(&mut s, v);
    s
}

/// [`java_double`] into a reused buffer (cleared first), for writers of many numbers.
pub fn java_double_into(out: &mut String, v: f64) {
    use std::fmt::Write as _;
    out.clear();
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0.0" } else { "0.0" });
    } else if (1e-3..1e7).contains(&v.abs()) {
        let _ = write!(out, "{v}");
        if !out.contains('.') {
            out.push_str(".0");
        }
    } else {
        // Rust's `{:e}` gives the shortest round-trip mantissa, e.g. "1e-7", "1.2345e10".
        let _ = write!(out, "{v:e}");
        let e = out.find('e').expect("exponent form");
        if !out[..e].contains('.') {
            out.insert_str(e, ".0");
        }
        let e = out.find('e').expect("exponent form");
        out.replace_range(e..e + 1, "E");
    }
}

/// Parses a number as Java's `Double.parseDouble` does (SystemDS reads numbers in files and on
/// the command line this way): surrounding whitespace is ignored, an optional sign, decimal
/// digits with an optional fraction and exponent, an optional `d`/`f` suffix, or `NaN` and
/// `Infinity`. Anything else (`inf`, `1,5`, `0x10`) is `None`.
pub fn parse_java_double(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c <= ' ');
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let v = match body {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            let body = body.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(body);
            let b = body.as_bytes();
            let mut i = 0;
            let digits = |i: &mut usize| {
                let start = *i;
                while *i < b.len() && b[*i].is_ascii_digit() {
                    *i += 1;
                }
                *i - start
            };
            let mut n = digits(&mut i);
            if i < b.len() && b[i] == b'.' {
                i += 1;
                n += digits(&mut i);
            }
            if n == 0 {
                return None;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
                if digits(&mut i) == 0 {
                    return None;
                }
            }
            if i != b.len() {
                return None;
            }
            body.parse::<f64>().ok()?
        }
    };
    Some(if neg { -v } else { v })
}

/// Formats a matrix like DML's `toString(X)`: one line per row, cells with three decimals
/// separated by a space, each line ending in a newline.
pub fn matrix_to_string(x: &Matrix) -> String {
    let all = ToString {
        rows: usize::MAX,
        cols: usize::MAX,
        ..ToString::default()
    };
    matrix_to_string_with(x, &all)
}

/// The options of DML's `toString(X, rows=, cols=, decimal=, sparse=, sep=, linesep=)`; the
/// default is SystemDS's (100 rows and columns, 3 decimals, dense, `" "`, `"\n"`).
#[derive(Clone, Debug)]
pub struct ToString {
    /// at most this many leading rows are printed
    pub rows: usize,
    /// at most this many leading columns are printed
    pub cols: usize,
    /// digits after the decimal point
    pub decimal: usize,
    /// `i j v` lines (1-based) of the non-zeros instead of the cells
    pub sparse: bool,
    /// between the values of a line
    pub sep: String,
    /// after each line
    pub linesep: String,
}

impl Default for ToString {
    fn default() -> Self {
        ToString {
            rows: 100,
            cols: 100,
            decimal: 3,
            sparse: false,
            sep: " ".into(),
            linesep: "\n".into(),
        }
    }
}

/// `toString(X, ...)` with the given options: each value with `decimal` digits (rounded half
/// to even on the exact value, as SystemDS's formatter does), NaN and infinities as Java
/// writes them, a -0.0 cell as 0.0 (SystemDS's dense listing does; a negative value that
/// rounds to zero keeps its sign, `-0.000`, as Java's `DecimalFormat` writes it).
pub fn matrix_to_string_with(x: &Matrix, o: &ToString) -> String {
    let mut out = String::new();
    let value = |out: &mut String, v: f64| {
        if v.is_finite() {
            let _ = write!(out, "{v:.*}", o.decimal);
        } else {
            out.push_str(&java_double(v));
        }
    };
    let (m, n) = (x.rows().min(o.rows), x.cols().min(o.cols));
    for i in 0..m {
        for j in 0..n {
            let v = x.get(i, j);
            if o.sparse {
                if v != 0.0 {
                    let _ = write!(out, "{}{}{}{}", i + 1, o.sep, j + 1, o.sep);
                    value(&mut out, v);
                    out.push_str(&o.linesep);
                }
                continue;
            }
            if j > 0 {
                out.push_str(&o.sep);
            }
            // SystemDS prints a -0.0 cell as 0.0 (DataConverter.toString)
            value(&mut out, if v == 0.0 { 0.0 } else { v });
        }
        if !o.sparse {
            out.push_str(&o.linesep);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{java_double, parse_java_double};

    #[test]
    fn parses_like_java() {
        for (s, v) in [
            ("1", 1.0),
            (" 2.5 ", 2.5),
            ("-1e3", -1000.0),
            ("+.5", 0.5),
            ("3.", 3.0),
            ("1.5d", 1.5),
            ("2F", 2.0),
            ("-Infinity", f64::NEG_INFINITY),
            ("1E-7", 1e-7),
        ] {
            assert_eq!(parse_java_double(s), Some(v), "{s}");
        }
        assert!(parse_java_double("NaN").unwrap().is_nan());
        for s in [
            "", "inf", "nan", "infinity", "1,5", ".", "e5", "1e", "0x10", "1 2", "TRUE",
        ] {
            assert_eq!(parse_java_double(s), None, "{s}");
        }
    }

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
