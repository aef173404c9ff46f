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
/// digits with an optional fraction and exponent, or hexadecimal digits with a binary exponent
/// (`0x1.8p3`), an optional `d`/`f` suffix, or `NaN` and `Infinity`. Anything else (`inf`,
/// `1,5`, `0x10` without its `p` exponent) is `None`.
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
        _ if body.starts_with("0x") || body.starts_with("0X") => {
            let body = body.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(body);
            parse_hex_double(&body[2..])?
        }
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

/// The value of Java's hexadecimal floating-point digits after `0x`: `H[.H]pE` (at least one
/// hexadecimal digit, a binary exponent required), rounded to nearest, ties to even, as
/// `Double.parseDouble` rounds them. The first 15 significant digits are kept exactly and any
/// later non-zero digit is a sticky bit, so the conversion to `f64` rounds once (subnormal
/// results may round twice).
fn parse_hex_double(t: &str) -> Option<f64> {
    let (mant, exp) = t.split_once(['p', 'P'])?;
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.len() + frac.len() == 0 {
        return None;
    }
    let exp: i64 = {
        let e = exp.strip_prefix('+').unwrap_or(exp);
        let digits = e.strip_prefix('-').unwrap_or(e);
        if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        // exponents beyond any double's range saturate
        e.parse::<i64>().unwrap_or(if e.starts_with('-') {
            -100_000
        } else {
            100_000
        })
    };
    let (mut m, mut kept, mut sticky) = (0u64, 0usize, false);
    // binary exponent adjustment: 4 per fraction digit kept, -4 per integer digit dropped
    let mut shift: i64 = 0;
    for (i, c) in int.bytes().chain(frac.bytes()).enumerate() {
        let d = (c as char).to_digit(16)? as u64;
        let in_frac = i >= int.len();
        if m == 0 && d == 0 {
            if in_frac {
                shift -= 4;
            }
            continue;
        }
        if kept < 15 {
            m = m << 4 | d;
            kept += 1;
            if in_frac {
                shift -= 4;
            }
        } else {
            sticky |= d != 0;
            if !in_frac {
                shift += 4;
            }
        }
    }
    if m == 0 {
        return Some(0.0);
    }
    // 60 bits of digits and a sticky bit below them: one rounding to 53 bits
    let m = m << 1 | u64::from(sticky);
    let e = (exp + shift - 1).clamp(-5000, 5000) as i32;
    Some(m as f64 * 2f64.powi(e.clamp(-1022, 1023)) * 2f64.powi(e - e.clamp(-1022, 1023)))
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

/// `toString(X, ...)` with the given options: each value with `decimal` digits (rounded as
/// SystemDS's `DecimalFormat` rounds: [`java_decimal_format`]), NaN and infinities as Java
/// writes them, a -0.0 cell as 0.0 (SystemDS's dense listing does; a negative value that
/// rounds to zero keeps its sign, `-0.000`, as Java's `DecimalFormat` writes it).
pub fn matrix_to_string_with(x: &Matrix, o: &ToString) -> String {
    let mut out = String::new();
    let value = |out: &mut String, v: f64| {
        if v.is_finite() {
            out.push_str(&java_decimal_format(v, o.decimal));
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

/// Decimal digits and the position of the decimal point: the value is `0.d1 d2 ... x 10^at`.
fn decimal_digits(mantissa: &str, exp: i32) -> (Vec<u8>, i32) {
    // "d.ddd" with exponent `exp`, or a plain "ddd.ddd" (exp 0)
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let mut at = int.len() as i32 + exp;
    while digits.first() == Some(&0) {
        digits.remove(0);
        at -= 1;
    }
    (digits, at)
}

/// Formats a finite double with exactly `decimals` fraction digits as SystemDS's `toString`
/// does (Java's `DecimalFormat` without grouping, `HALF_EVEN`, Java 17's `DigitList`): it
/// rounds the digits of `Double.toString` ([`java_double`]), not the exact binary value, using
/// whether those digits were rounded up or are exact only when the rounding digit is their
/// last `5`; a value whose first digit falls just past the last place keeps the trailing
/// zero of its `d.0E-x` form (`5.0E-4` is a tie there, so `0.0005` prints `0.000` and
/// `0.0025` prints `0.003`). A negative value that rounds to zero keeps its sign (`-0.000`).
pub fn java_decimal_format(v: f64, decimals: usize) -> String {
    let neg = v.is_sign_negative() && v != 0.0;
    let js = java_double(v.abs());
    let (mantissa, exp) = match js.split_once('E') {
        Some((m, e)) => (m.to_string(), e.parse::<i32>().expect("exponent")),
        None => (js.clone(), 0),
    };
    let (mut digits, mut at) = decimal_digits(&mantissa, exp);
    // FloatingDecimal's flags: the digits against the exact binary value
    let (rounded_up, exact) = {
        let full = format!("{:.1100e}", v.abs());
        let (m, e) = full.split_once('e').expect("exponent");
        let (x, xat) = decimal_digits(m, e.parse::<i32>().expect("exponent"));
        let trim = |d: &[u8]| {
            let mut d = d.to_vec();
            while d.last() == Some(&0) {
                d.pop();
            }
            d
        };
        let (a, b) = (trim(&digits), trim(&x));
        let ord = if digits.is_empty() || x.is_empty() {
            a.len().cmp(&b.len())
        } else {
            at.cmp(&xat).then_with(|| {
                let n = a.len().max(b.len());
                let pad = |d: &[u8]| {
                    (0..n)
                        .map(|i| d.get(i).copied().unwrap_or(0))
                        .collect::<Vec<_>>()
                };
                pad(&a).cmp(&pad(&b))
            })
        };
        (
            ord == std::cmp::Ordering::Greater,
            ord == std::cmp::Ordering::Equal,
        )
    };
    let max = decimals as i32;
    // DigitList.shouldRoundUp(HALF_EVEN) at digit index `i`
    let round_up = |digits: &[u8], i: usize| -> bool {
        match digits.get(i) {
            Some(5) => {
                if i + 1 == digits.len() {
                    if rounded_up {
                        false
                    } else if !exact {
                        true
                    } else {
                        i > 0 && digits[i - 1] % 2 == 1
                    }
                } else if digits[i + 1..].iter().any(|&d| d != 0) {
                    true
                } else {
                    i > 0 && digits[i - 1] % 2 == 1
                }
            }
            Some(&d) => d > 5,
            None => false,
        }
    };
    if digits.is_empty() || -at > max {
        digits.clear();
    } else if -at == max {
        // the first digit is just past the last place: a new digit 1 there, or zero
        if round_up(&digits, 0) {
            digits = vec![1];
            at += 1;
        } else {
            digits.clear();
        }
    } else {
        while digits.len() > 1 && digits.last() == Some(&0) {
            digits.pop();
        }
        let keep = (max + at).max(0) as usize;
        if keep < digits.len() {
            let up = round_up(&digits, keep);
            digits.truncate(keep);
            if up {
                // carry
                let mut i = keep;
                loop {
                    if i == 0 {
                        digits.insert(0, 1);
                        at += 1;
                        break;
                    }
                    i -= 1;
                    if digits[i] == 9 {
                        digits[i] = 0;
                    } else {
                        digits[i] += 1;
                        break;
                    }
                }
            }
        }
    }
    // the digits as a fixed-point number with `decimals` fraction digits
    let digit = |k: i32| -> u8 {
        // k: position, 1 = first digit after the decimal point is at index at
        if k < 0 || k as usize >= digits.len() {
            0
        } else {
            digits[k as usize]
        }
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if at <= 0 {
        out.push('0');
    } else {
        for k in 0..at {
            out.push((b'0' + digit(k)) as char);
        }
    }
    if decimals > 0 {
        out.push('.');
        for f in 0..max {
            out.push((b'0' + digit(at + f)) as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{java_double, parse_java_double};

    #[test]
    fn decimal_format_rounds_like_java() {
        use super::java_decimal_format as f;
        // Java 17's DecimalFormat (HALF_EVEN, no grouping) on these values
        for (v, d, want) in [
            (0.0005, 3, "0.000"),
            (-0.0005, 3, "-0.000"),
            (0.0015, 3, "0.002"),
            (0.0025, 3, "0.003"),
            (-0.0025, 3, "-0.003"),
            (0.00051, 3, "0.001"),
            (0.005, 2, "0.01"),
            (0.05, 1, "0.1"),
            (0.125, 2, "0.12"),
            (0.375, 2, "0.38"),
            (0.25, 1, "0.2"),
            (2.5, 0, "2"),
            (1.5, 0, "2"),
            (-0.125, 0, "-0"),
            (1e-20, 3, "0.000"),
            (-1e-20, 3, "-0.000"),
            (0.0105, 3, "0.011"),
            (1.0005, 3, "1.000"),
            (2.0005, 3, "2.001"),
            (0.0445, 2, "0.04"),
            (12.5, 3, "12.500"),
            (9.9995, 3, "9.999"),
            (0.9995, 3, "1.000"),
            (99.5, 0, "100"),
            (0.0, 2, "0.00"),
            (1e10, 1, "10000000000.0"),
        ] {
            assert_eq!(f(v, d), want, "{v} with {d} decimals");
        }
    }

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
            // Java's hexadecimal literals (Double.parseDouble's values)
            ("0x1p3", 8.0),
            ("0X1.8P1", 3.0),
            ("-0x.8p0", -0.5),
            ("0x10p-4d", 1.0),
            ("0x1.fffffffffffffp1023", f64::MAX),
            ("0x1p-1074", 5e-324),
            ("0x1p2000", f64::INFINITY),
            ("0x0p0", 0.0),
            // rounding: 2^53 + 1 is a tie (to even), one more digit below breaks it upward
            ("0x20000000000001p0", 9007199254740992.0),
            ("0x20000000000001001p-12", 9007199254740994.0),
        ] {
            assert_eq!(parse_java_double(s), Some(v), "{s}");
        }
        assert!(parse_java_double("NaN").unwrap().is_nan());
        for s in [
            "", "inf", "nan", "infinity", "1,5", ".", "e5", "1e", "0x10", "1 2", "TRUE", "0xp1",
            "0x1p", "0x1.g", "0x1p1.5",
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
