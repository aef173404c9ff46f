//! SystemDS's JSON metadata file, `X.mtd` next to a data file `X`: data and value type, size,
//! non-zeros, format and the CSV settings. Written exactly as SystemDS 3.4 writes it (keys in
//! its order, four-space indentation, no final newline) so that tools comparing the files see
//! the same text apart from the `created` time stamp.

use super::IoError;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The metadata of a matrix or scalar file. Every field is optional: a hand-written `.mtd`
/// may give only some of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metadata {
    /// "matrix", "scalar", "frame", ...
    pub data_type: Option<String>,
    /// "double", "int", "boolean", "string"
    pub value_type: Option<String>,
    /// rows of a matrix
    pub rows: Option<i64>,
    /// columns of a matrix
    pub cols: Option<i64>,
    /// non-zero cells (an estimate for the reader, as in SystemDS)
    pub nnz: Option<i64>,
    /// "text", "csv", "mm", "binary", ...
    pub format: Option<String>,
    /// binary: rows of a block
    pub rows_in_block: Option<i64>,
    /// binary: columns of a block
    pub cols_in_block: Option<i64>,
    /// CSV: the first line is a header
    pub header: Option<bool>,
    /// CSV: the field separator
    pub sep: Option<String>,
    /// CSV: empty fields are filled with `default`
    pub fill: Option<bool>,
    /// CSV: the value of empty fields
    pub default: Option<f64>,
    /// CSV: strings read as NaN
    pub na_strings: Option<Vec<String>>,
    /// CSV write: zeros left empty
    pub sparse: Option<bool>,
    /// free text
    pub description: Option<String>,
}

/// Keys SystemDS accepts in a `.mtd` file (it rejects any other).
const KNOWN_KEYS: &[&str] = &[
    "data_type",
    "value_type",
    "rows",
    "cols",
    "nnz",
    "format",
    "header",
    "sep",
    "fill",
    "default",
    "naStrings",
    "sparse",
    "description",
    "author",
    "created",
    "rows_in_block",
    "cols_in_block",
    "schema",
    "privacy",
    "fine_grained_privacy",
    "dims",
    "indSep",
];

/// The metadata file of a data file: its name with `.mtd` appended.
pub fn mtd_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".mtd");
    PathBuf::from(s)
}

/// Reads the `.mtd` next to `path`, if there is one.
pub fn read_metadata(path: &Path) -> Result<Option<Metadata>, IoError> {
    let mtd = mtd_path(path);
    if !mtd.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&mtd).map_err(|source| IoError::Os {
        action: "read",
        path: mtd.display().to_string(),
        source,
    })?;
    parse_metadata(&text, &mtd.display().to_string()).map(Some)
}

/// Parses the text of a `.mtd` file; `name` is used in messages.
pub fn parse_metadata(text: &str, name: &str) -> Result<Metadata, IoError> {
    let err = |line: usize, message: String| IoError::Format {
        path: name.to_string(),
        line,
        message,
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| err(e.line().max(1), format!("not JSON: {e}")))?;
    let obj = value
        .as_object()
        .ok_or_else(|| err(1, "expected a JSON object".into()))?;
    // the line of a key, for messages
    let line_of = |key: &str| {
        text.lines()
            .position(|l| l.contains(&format!("\"{key}\"")))
            .map_or(1, |n| n + 1)
    };
    let mut m = Metadata::default();
    for (key, v) in obj {
        if !KNOWN_KEYS.contains(&key.as_str()) {
            return Err(err(
                line_of(key),
                format!("unknown key \"{key}\" in metadata"),
            ));
        }
        let bad = |what: &str| err(line_of(key), format!("\"{key}\" must be {what}, found {v}"));
        let string = || -> Result<String, IoError> {
            match v {
                serde_json::Value::String(s) => Ok(s.clone()),
                serde_json::Value::Number(n) => Ok(n.to_string()),
                serde_json::Value::Bool(b) => Ok(b.to_string()),
                _ => Err(bad("a string")),
            }
        };
        let int = || -> Result<i64, IoError> {
            match v {
                serde_json::Value::Number(n) => n.as_i64().ok_or_else(|| bad("an integer")),
                serde_json::Value::String(s) => s.trim().parse().map_err(|_| bad("an integer")),
                _ => Err(bad("an integer")),
            }
        };
        let boolean = || -> Result<bool, IoError> {
            match v {
                serde_json::Value::Bool(b) => Ok(*b),
                serde_json::Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
                serde_json::Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
                _ => Err(bad("true or false")),
            }
        };
        match key.as_str() {
            "data_type" => m.data_type = Some(string()?.to_lowercase()),
            "value_type" => m.value_type = Some(string()?.to_lowercase()),
            "rows" => m.rows = Some(int()?),
            "cols" => m.cols = Some(int()?),
            "nnz" => m.nnz = Some(int()?),
            "rows_in_block" => m.rows_in_block = Some(int()?),
            "cols_in_block" => m.cols_in_block = Some(int()?),
            "format" => m.format = Some(string()?.to_lowercase()),
            "header" => m.header = Some(boolean()?),
            "sep" => {
                let s = string()?;
                if s.is_empty() {
                    return Err(bad("a non-empty string"));
                }
                m.sep = Some(s)
            }
            "fill" => m.fill = Some(boolean()?),
            "sparse" => m.sparse = Some(boolean()?),
            "default" => {
                m.default = Some(match v {
                    serde_json::Value::Number(n) => n.as_f64().ok_or_else(|| bad("a number"))?,
                    serde_json::Value::String(s) => {
                        crate::format::parse_java_double(s).ok_or_else(|| bad("a number"))?
                    }
                    _ => return Err(bad("a number")),
                })
            }
            "naStrings" => {
                m.na_strings = Some(match v {
                    serde_json::Value::String(s) => s.split('\u{b7}').map(String::from).collect(),
                    serde_json::Value::Array(a) => a
                        .iter()
                        .map(|x| x.as_str().map(String::from).ok_or_else(|| bad("strings")))
                        .collect::<Result<_, _>>()?,
                    _ => return Err(bad("a string or a list of strings")),
                })
            }
            "description" => m.description = Some(string()?),
            _ => {}
        }
    }
    for (what, v) in [("rows", m.rows), ("cols", m.cols), ("nnz", m.nnz)] {
        if let Some(n) = v {
            if n < -1 {
                return Err(err(line_of(what), format!("\"{what}\" is negative ({n})")));
            }
        }
    }
    Ok(m)
}

/// Writes `metadata` to the `.mtd` next to `path`, as SystemDS does.
pub fn write_metadata(path: &Path, m: &Metadata) -> Result<(), IoError> {
    let mtd = mtd_path(path);
    super::remove_checksum(&mtd)?;
    std::fs::write(&mtd, metadata_to_string(m)).map_err(|source| IoError::Os {
        action: "write",
        path: mtd.display().to_string(),
        source,
    })
}

/// The text SystemDS writes for this metadata: data type, value type, rows, cols, nnz (matrices),
/// format, description, author, header and sep (CSV), created.
pub fn metadata_to_string(m: &Metadata) -> String {
    let mut fields: Vec<(&str, String)> = Vec::new();
    let s = |v: &str| json_string(v);
    if let Some(d) = &m.data_type {
        fields.push(("data_type", s(d)));
    }
    if let Some(v) = &m.value_type {
        fields.push(("value_type", s(v)));
    }
    if let Some(r) = m.rows {
        fields.push(("rows", r.to_string()));
    }
    if let Some(c) = m.cols {
        fields.push(("cols", c.to_string()));
    }
    if let Some(b) = m.rows_in_block {
        fields.push(("rows_in_block", b.to_string()));
    }
    if let Some(b) = m.cols_in_block {
        fields.push(("cols_in_block", b.to_string()));
    }
    if let Some(n) = m.nnz {
        fields.push(("nnz", n.to_string()));
    }
    if let Some(f) = &m.format {
        fields.push(("format", s(f)));
    }
    if let Some(d) = m.description.as_deref().filter(|d| !d.is_empty()) {
        // SystemDS escapes the description for JSON before its JSON writer escapes it again
        let once = json_string(d);
        fields.push(("description", s(&once[1..once.len() - 1])));
    }
    fields.push(("author", s(&author())));
    if let Some(h) = m.header {
        fields.push(("header", h.to_string()));
    }
    if let Some(sep) = &m.sep {
        fields.push(("sep", s(sep)));
    }
    fields.push(("created", s(&created())));
    let mut out = String::from("{\n");
    for (k, (key, v)) in fields.iter().enumerate() {
        let comma = if k + 1 < fields.len() { "," } else { "" };
        let _ = writeln!(out, "    \"{key}\": {v}{comma}");
    }
    out.push('}');
    out
}

/// A JSON string literal with JSON4J's escapes (it also escapes `/`).
fn json_string(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' => out.push_str("\\/"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The user name Java reports as `user.name`: the password entry of the process's user id,
/// else `$USER`, else "SystemDS" as SystemDS writes when it has none.
fn author() -> String {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next().map(String::from))
        });
    let from_passwd = uid.and_then(|uid| {
        let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
        passwd.lines().find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() > 2 && f[2] == uid).then(|| f[0].to_string())
        })
    });
    from_passwd
        .or_else(|| std::env::var("USER").ok())
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "SystemDS".into())
}

/// The time stamp `yyyy-MM-dd HH:mm:ss UTC`.
fn created() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_keys_in_systemds_order() {
        let m = Metadata {
            data_type: Some("matrix".into()),
            value_type: Some("double".into()),
            rows: Some(2),
            cols: Some(3),
            nnz: Some(3),
            format: Some("csv".into()),
            header: Some(false),
            sep: Some(",".into()),
            ..Default::default()
        };
        let s = metadata_to_string(&m);
        let keys: Vec<&str> = s
            .lines()
            .filter_map(|l| l.trim().strip_prefix('"'))
            .map(|l| l.split('"').next().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "data_type",
                "value_type",
                "rows",
                "cols",
                "nnz",
                "format",
                "author",
                "header",
                "sep",
                "created"
            ]
        );
        assert!(s.starts_with("{\n    \"data_type\": \"matrix\",\n"), "{s}");
        assert!(s.ends_with("UTC\"\n}"), "{s}");
        assert_eq!(parse_metadata(&s, "x").unwrap(), m);
    }

    #[test]
    fn rejects_unknown_keys_and_bad_values_with_the_line() {
        let e = parse_metadata("{\n  \"rows\": 2,\n  \"colz\": 3\n}", "a.mtd").unwrap_err();
        assert_eq!(e.to_string(), "a.mtd:3: unknown key \"colz\" in metadata");
        let e = parse_metadata("{\n  \"rows\": \"many\"\n}", "a.mtd").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("a.mtd:2: \"rows\" must be an integer"),
            "{e}"
        );
        let e = parse_metadata("{\n  \"rows\": 2,,\n}", "a.mtd").unwrap_err();
        assert!(e.to_string().starts_with("a.mtd:2: not JSON"), "{e}");
    }

    #[test]
    fn civil_date_is_well_formed() {
        let c = created();
        assert_eq!(c.len(), "2026-11-23 05:10:27 UTC".len(), "{c}");
    }
}
