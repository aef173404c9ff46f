//! SystemDS's command line, accepted as it is: `spores run` takes the place of `systemds` or
//! `java ... DMLScript` in a shell script, with nothing else changed.
//!
//! SystemDS spells its options with one dash (`-f FILE`, `-args a b`, `-nvargs k=v`, `-stats`,
//! `-explain`, `-exec singlenode`) and lets them come in any order around the program file.
//! [`normalize`] rewrites such a command line into spores's own (`run FILE --stats ...`) and
//! takes the script arguments out, so that a list of values never swallows the file name:
//!
//! * `-args v1 v2 ...` (or `--args`): positional values for `$1`, `$2`, ...; an empty value
//!   leaves its `$N` unset, as in SystemDS.
//! * `-nvargs k=v ...` (or `--nvargs`, or `--nvargs=k=v`): named values for `$k`; a name
//!   starts with a letter and has letters, digits and `_`.
//! * A list of values ends at the next option spores knows (so negative numbers are values)
//!   or, for `-nvargs`, at the first word without `=` (the program file).
//! * `-f FILE` names the program, as does the first word that is not a value.
//! * `-stats [N]`, `-explain [LEVEL]` mean `--stats` and `--explain`; `-exec singlenode` and
//!   `-exec hybrid` are accepted (spores runs on one machine); `spores run -exec spark` means
//!   `--engine spark` (the program is emitted and run by SystemDS on Spark in local mode);
//!   `-config FILE` is ignored with a warning (a missing file is an error, as in SystemDS).
//! * SystemDS's options that change nothing spores computes (`-seed N`, `-mem`, `-debug`,
//!   `-gpu [force]`, `-lineage [policies]`, `-ngrams [...]`, `-fedStats [N]`,
//!   `-checkPrivacy`, `-sparseIntermediate`, ... see [`IGNORED`]) are accepted and ignored
//!   with a warning; the server modes (`-w`, `-python`, `-fedMonitoring`) are errors.
//! * `-s "SCRIPT"` runs the script text given on the command line; `-clean` (SystemDS cleans
//!   its working directories and runs nothing) runs nothing: spores keeps none.
//! * A word after the program file that is no option's value is ignored with a warning, as
//!   SystemDS ignores it; `-explain` with `--no-opt` has no plan to show and is dropped with a
//!   warning.

use std::collections::HashMap;

/// The script arguments found on a command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptValues {
    /// `-args` values in order (`$1` is the first); empty ones are unset
    pub positional: Vec<String>,
    /// `-nvargs` name=value pairs in order
    pub named: Vec<(String, String)>,
}

impl ScriptValues {
    /// The values by name, as the checker looks them up (`"1"` for `$1`).
    pub fn to_map(&self) -> HashMap<String, String> {
        let mut m = HashMap::new();
        for (k, v) in self.positional.iter().enumerate() {
            if !v.is_empty() {
                m.insert((k + 1).to_string(), v.clone());
            }
        }
        for (k, v) in &self.named {
            m.insert(k.clone(), v.clone());
        }
        m
    }
}

/// A command line rewritten for spores's parser, with the script arguments taken out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Normalized {
    /// the arguments for the `clap` parser
    pub argv: Vec<String>,
    /// the script arguments
    pub values: ScriptValues,
    /// notes for standard error (ignored options)
    pub warnings: Vec<String>,
    /// the program text of `-s SCRIPT`, in place of a file
    pub script: Option<String>,
    /// `-clean`: nothing to run
    pub clean: bool,
}

/// How many values one of SystemDS's ignored options takes.
#[derive(Clone, Copy, Debug)]
enum Arity {
    /// none
    Flag,
    /// exactly one
    One,
    /// up to this many, each a word that is not an option or the program file
    UpTo(usize),
}

/// SystemDS 3.4's options (`DMLOptions.createCLIOptions`) that change nothing spores computes,
/// with the values each takes: accepted and ignored, with a warning.
const IGNORED: &[(&str, Arity)] = &[
    // the seed of compression and transform encoders (rand's seeds are the program's own)
    ("seed", Arity::One),
    ("mem", Arity::Flag),
    ("debug", Arity::Flag),
    ("gpu", Arity::UpTo(1)),
    ("lineage", Arity::UpTo(usize::MAX)),
    ("ngrams", Arity::UpTo(3)),
    ("fedStats", Arity::UpTo(1)),
    ("oocStats", Arity::UpTo(1)),
    ("oocLogEvents", Arity::UpTo(1)),
    ("ooc", Arity::Flag),
    ("checkPrivacy", Arity::Flag),
    ("noFedRuntimeConversion", Arity::Flag),
    ("federatedCompilation", Arity::UpTo(usize::MAX)),
    ("sparseIntermediate", Arity::Flag),
];

/// The values an ignored SystemDS option takes ([`IGNORED`]), if `name` is one.
fn ignored(name: &str) -> Option<Arity> {
    IGNORED.iter().find(|(n, _)| *n == name).map(|&(_, a)| a)
}

/// SystemDS's server modes, which spores does not have.
const SERVERS: &[&str] = &[
    "w",
    "python",
    "fedMonitoring",
    "fedMonitoringAddress",
    "monitorId",
];

/// Options that end a list of `-args`/`-nvargs` values (without their dashes).
const OPTIONS: &[&str] = &[
    "f",
    "args",
    "nvargs",
    "stats",
    "explain",
    "exec",
    "config",
    "no-opt",
    "verify",
    "dump-egraph",
    "lib",
    "why",
    "scheduler",
    "compile-budget",
    "help",
    "h",
    "shape",
    "engine",
    "o",
    "s",
    "clean",
];

/// Whether a word names a program file (rather than an option's value).
fn program_like(tok: &str) -> bool {
    [".dml", ".pydml", ".la"].iter().any(|e| tok.ends_with(e))
}

/// Levels of SystemDS's `-explain`.
const EXPLAIN_LEVELS: &[&str] = &[
    "hops",
    "runtime",
    "recompile_hops",
    "recompile_runtime",
    "codegen",
    "codegen_recompile",
];

fn option_name(tok: &str) -> Option<&str> {
    let name = tok
        .strip_prefix("--")
        .or_else(|| tok.strip_prefix('-'))?
        .split('=')
        .next()?;
    (OPTIONS.contains(&name) || ignored(name).is_some() || SERVERS.contains(&name)).then_some(name)
}

fn valid_name(k: &str) -> bool {
    let mut c = k.chars();
    c.next().is_some_and(|c| c.is_ascii_alphabetic())
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn named(tok: &str) -> Result<(String, String), String> {
    match tok.split_once('=') {
        Some((k, v)) if valid_name(k) && !v.is_empty() => Ok((k.to_string(), v.to_string())),
        Some((k, _)) if valid_name(k) => Err(format!("-nvargs {tok}: `{k}` has no value")),
        _ => Err(format!(
            "-nvargs expects NAME=VALUE with a name of letters, digits and _ starting with a \
             letter, found '{tok}'"
        )),
    }
}

/// Rewrites the command line of `run`, `check`, `opt` and `emit` (others pass through
/// unchanged).
pub fn normalize(argv: &[String]) -> Result<Normalized, String> {
    let mut out = Normalized::default();
    if argv.len() < 2 || !matches!(argv[1].as_str(), "run" | "check" | "opt" | "emit") {
        out.argv = argv.to_vec();
        return Ok(out);
    }
    let mut file: Option<String> = None;
    let mut flags: Vec<String> = Vec::new();
    let mut passed_option = false;
    let mut i = 2;
    let toks = argv;
    while i < toks.len() {
        let tok = &toks[i];
        i += 1;
        // an option normalize does not know (`--dot DIR`) passes to clap with its value
        let after_passed = std::mem::take(&mut passed_option);
        let Some(name) = option_name(tok) else {
            if file.is_none() && out.script.is_none() && !tok.starts_with('-') {
                file = Some(tok.clone());
            } else if !tok.starts_with('-') && !after_passed {
                // SystemDS ignores words that are no option's value
                out.warnings
                    .push(format!("'{tok}' is ignored (no option takes it)"));
            } else {
                passed_option = tok.starts_with('-') && !tok.contains('=');
                flags.push(tok.clone());
            }
            continue;
        };
        let inline = tok.split_once('=').map(|(_, v)| v.to_string());
        let next_value = |i: &mut usize| -> Option<String> {
            let t = toks.get(*i)?;
            if option_name(t).is_some() {
                return None;
            }
            *i += 1;
            Some(t.clone())
        };
        match name {
            "f" => {
                let f = inline
                    .or_else(|| next_value(&mut i))
                    .ok_or("-f needs the program file")?;
                if out.script.is_some() {
                    return Err("-f and -s both give the program: use one".into());
                }
                match file.replace(f.clone()) {
                    Some(prev) if prev != f => {
                        return Err(format!("two program files given: '{prev}' and '{f}'"))
                    }
                    _ => {}
                }
            }
            "s" => {
                let text = inline
                    .or_else(|| toks.get(i).cloned().inspect(|_| i += 1))
                    .ok_or("-s needs the script text")?;
                if file.is_some() || out.script.is_some() {
                    return Err("-f and -s both give the program: use one".into());
                }
                out.script = Some(text);
            }
            "clean" => out.clean = true,
            name if SERVERS.contains(&name) => {
                return Err(format!(
                    "-{name} starts one of SystemDS's servers (federated worker, Python \
                     gateway or monitoring), which spores does not have"
                ))
            }
            name if ignored(name).is_some() => {
                let arity = ignored(name).expect("listed");
                let mut values: Vec<String> = inline.into_iter().collect();
                match arity {
                    Arity::Flag => {}
                    Arity::One => {
                        if values.is_empty() {
                            values.push(
                                next_value(&mut i)
                                    .ok_or_else(|| format!("-{name} needs a value"))?,
                            );
                        }
                    }
                    Arity::UpTo(n) => {
                        while values.len() < n {
                            match toks.get(i) {
                                Some(t)
                                    if option_name(t).is_none()
                                        && !t.starts_with('-')
                                        && !(file.is_none() && program_like(t)) =>
                                {
                                    values.push(t.clone());
                                    i += 1;
                                }
                                _ => break,
                            }
                        }
                    }
                }
                let shown = std::iter::once(format!("-{name}"))
                    .chain(values)
                    .collect::<Vec<_>>()
                    .join(" ");
                out.warnings.push(format!(
                    "{shown} is ignored (a SystemDS setting that changes nothing spores computes)"
                ));
            }
            "args" => {
                if let Some(v) = inline {
                    out.values.positional.push(v);
                }
                while let Some(v) = next_value(&mut i) {
                    out.values.positional.push(v);
                }
            }
            "nvargs" => {
                if let Some(v) = inline {
                    out.values.named.push(named(&v)?);
                }
                while let Some(t) = toks.get(i) {
                    // a word without `=` ends the list when it can be the program file
                    if option_name(t).is_some()
                        || (file.is_none() && !t.contains('=') && !t.is_empty())
                    {
                        break;
                    }
                    i += 1;
                    if !t.is_empty() {
                        out.values.named.push(named(t)?);
                    }
                }
            }
            "stats" => {
                flags.push("--stats".into());
                // SystemDS's optional count of heavy hitters
                if toks.get(i).is_some_and(|t| t.parse::<u32>().is_ok()) {
                    i += 1;
                }
            }
            "explain" => {
                flags.push("--explain".into());
                if toks
                    .get(i)
                    .is_some_and(|t| EXPLAIN_LEVELS.contains(&t.to_ascii_lowercase().as_str()))
                {
                    i += 1;
                }
            }
            "exec" => {
                let mode = inline
                    .or_else(|| next_value(&mut i))
                    .ok_or("-exec needs a mode (singlenode or hybrid)")?;
                match mode.to_ascii_lowercase().as_str() {
                    "singlenode" | "hybrid" => {}
                    // SystemDS's spelling of `--engine spark`: emitted, then run by SystemDS
                    // on Spark in local mode
                    "spark" if argv.get(1).is_some_and(|c| c == "run") => {
                        flags.push("--engine=spark".into())
                    }
                    "spark" | "hadoop" => {
                        return Err(format!(
                            "-exec {mode} is not supported here: spores runs on one machine, \
                             and `spores run -exec spark` hands the program to SystemDS on \
                             Spark (use -exec singlenode)"
                        ))
                    }
                    _ => {
                        return Err(format!(
                            "invalid -exec mode '{mode}' (expected singlenode, hybrid or spark)"
                        ))
                    }
                }
            }
            "config" => {
                let f = inline
                    .or_else(|| next_value(&mut i))
                    .ok_or("-config needs a file")?;
                // SystemDS stops on a configuration file it cannot find
                if !std::path::Path::new(&f).is_file() {
                    return Err(format!("-config {f}: no such configuration file"));
                }
                out.warnings.push(format!(
                    "-config {f} is ignored (SystemDS settings do not apply)"
                ));
            }
            // spores's options that take a value: the next word is the value, not the file
            "lib" | "dump-egraph" | "shape" | "engine" | "o" | "scheduler" | "compile-budget" => {
                let v = inline
                    .or_else(|| next_value(&mut i))
                    .ok_or_else(|| format!("--{name} needs a value"))?;
                flags.push(match name {
                    "o" => format!("--output={v}"),
                    _ => format!("--{name}={v}"),
                });
            }
            "h" => flags.push("-h".into()),
            // spores's own options, in either spelling
            other => flags.push(format!(
                "--{other}{}",
                inline.map_or(String::new(), |v| format!("={v}"))
            )),
        }
    }
    // `-args a b prog.dml`: the program file came last
    if file.is_none()
        && out
            .values
            .positional
            .last()
            .is_some_and(|l| l.ends_with(".dml") || l.ends_with(".la"))
    {
        file = out.values.positional.pop();
    }
    if out.script.is_some() {
        // the program text came with -s: the name diagnostics show for it
        file = Some(SCRIPT_NAME.into());
    }
    if flags.iter().any(|f| f == "--no-opt") && flags.iter().any(|f| f == "--explain") {
        flags.retain(|f| f != "--explain");
        out.warnings
            .push("-explain shows no plan with --no-opt: the statements run as written".into());
    }
    if out.clean && file.is_none() {
        // `-clean` alone: clap still wants a file to parse the command line
        file = Some(SCRIPT_NAME.into());
    }
    out.argv = vec![argv[0].clone(), argv[1].clone()];
    out.argv.extend(file);
    out.argv.extend(flags);
    Ok(out)
}

/// The name of a program given as text with `-s`, in diagnostics.
pub const SCRIPT_NAME: &str = "<-s script>";

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> Normalized {
        let argv: Vec<String> = s.split(' ').map(String::from).collect();
        normalize(&argv).unwrap()
    }

    #[test]
    fn systemds_forms_become_spores_forms() {
        let n = norm("spores run -f a.dml -exec singlenode -stats -nvargs X=x.csv k=3 -explain");
        assert_eq!(n.argv, ["spores", "run", "a.dml", "--stats", "--explain"]);
        assert_eq!(
            n.values.named,
            [("X".into(), "x.csv".into()), ("k".into(), "3".into())]
        );
        let n = norm("spores run --nvargs m=20 f.la --no-opt");
        assert_eq!(n.argv, ["spores", "run", "f.la", "--no-opt"]);
        assert_eq!(n.values.named, [("m".into(), "20".into())]);
        let n = norm("spores run f.dml -args -5 out/R -stats 20");
        assert_eq!(n.argv, ["spores", "run", "f.dml", "--stats"]);
        assert_eq!(n.values.positional, ["-5", "out/R"]);
        let n = norm("spores run -args 1 2 f.dml");
        assert_eq!(n.argv, ["spores", "run", "f.dml"]);
        assert_eq!(n.values.positional, ["1", "2"]);
        let n = norm("spores run f.la --nvargs=a=1 -args x -nvargs b=2");
        assert_eq!(n.values.to_map().len(), 3);
        assert_eq!(n.values.to_map()["1"], "x");
        let n = norm("spores run f.la -config Cargo.toml -explain hops");
        assert_eq!(n.argv, ["spores", "run", "f.la", "--explain"]);
        assert_eq!(n.warnings.len(), 1);
        assert_eq!(norm("spores run -h").argv, ["spores", "run", "-h"]);
        assert_eq!(norm("spores run -help").argv, ["spores", "run", "--help"]);
        let n = norm("spores emit f.la -o out.dml --shape X=10x20:5 -nvargs m=3");
        assert_eq!(
            n.argv,
            [
                "spores",
                "emit",
                "f.la",
                "--output=out.dml",
                "--shape=X=10x20:5"
            ]
        );
        let n = norm("spores run -f f.la -exec spark -nvargs m=3");
        assert_eq!(n.argv, ["spores", "run", "f.la", "--engine=spark"]);
        let n = norm("spores run --scheduler mcts f.la");
        assert_eq!(n.argv, ["spores", "run", "f.la", "--scheduler=mcts"]);
        let n = norm("spores extract -args g.json");
        assert_eq!(n.argv, ["spores", "extract", "-args", "g.json"]);
    }

    #[test]
    fn systemds_settings_are_accepted_and_ignored() {
        // each of SystemDS's settings, before and after the file, with and without values
        let n = norm("spores run -seed 7 -f p.dml -args 3 -mem -lineage reuse_full dedup");
        assert_eq!(n.argv, ["spores", "run", "p.dml"]);
        assert_eq!(n.values.positional, ["3"]);
        assert_eq!(n.warnings.len(), 3, "{:?}", n.warnings);
        // an optional value never swallows the program file
        let n = norm("spores run -lineage p.dml -nvargs a=1");
        assert_eq!(n.argv, ["spores", "run", "p.dml"]);
        let n = norm("spores run -gpu force -ngrams 1,2 10 true -debug -sparseIntermediate p.dml");
        assert_eq!(n.argv, ["spores", "run", "p.dml"]);
        assert_eq!(n.warnings.len(), 4, "{:?}", n.warnings);
        // they end a list of positional values
        let n = norm("spores run p.dml -args 1 2 -checkPrivacy -stats");
        assert_eq!(n.values.positional, ["1", "2"]);
        assert_eq!(n.argv, ["spores", "run", "p.dml", "--stats"]);
        // a stray word is ignored, the same file twice is one file
        let n = norm("spores run -f p.dml extra -f p.dml");
        assert_eq!(n.argv, ["spores", "run", "p.dml"]);
        assert_eq!(n.warnings.len(), 1);
        // but the value of an option clap parses (`--dot DIR`) is kept
        let n = norm("spores run p.dml --dot out/plans -stats");
        assert_eq!(
            n.argv,
            ["spores", "run", "p.dml", "--dot", "out/plans", "--stats"]
        );
        assert!(n.warnings.is_empty(), "{:?}", n.warnings);
        // -s gives the program text; -clean runs nothing
        let argv = |s: &[&str]| s.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let n = normalize(&argv(&[
            "spores",
            "run",
            "-s",
            "print($1 * 2)",
            "-args",
            "3",
        ]))
        .unwrap();
        assert_eq!(n.script.as_deref(), Some("print($1 * 2)"));
        assert_eq!(n.argv, ["spores", "run", SCRIPT_NAME]);
        assert_eq!(n.values.positional, ["3"]);
        assert!(norm("spores run -clean").clean);
        // -explain has nothing to show without optimization
        let n = norm("spores run p.dml -explain --no-opt");
        assert_eq!(n.argv, ["spores", "run", "p.dml", "--no-opt"]);
    }

    #[test]
    fn bad_forms_are_errors() {
        let argv = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        for bad in [
            "spores run f.la -nvargs 1x=2",
            "spores run f.la -nvargs k=",
            "spores emit f.la -exec spark",
            "spores run f.la -exec hadoop",
            "spores run -f a.la -f b.la",
            "spores run -f a.la -s print(1)",
            "spores run p.dml -seed",
            "spores run p.dml -w 8000",
            "spores run p.dml -python 4000",
            "spores run p.dml -config /nonexistent/SystemDS-config.xml",
            "spores run f.la -exec",
            "spores run f.la -nvargs m",
        ] {
            assert!(normalize(&argv(bad)).is_err(), "{bad}");
        }
    }
}
