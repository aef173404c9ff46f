//! Running DML in Apache SystemDS 3.4 (`spores run --engine systemds|spark`, the SystemDS
//! tests): where SystemDS is installed, and the Java command line for one node or for Spark
//! in local mode.
//!
//! SystemDS is found at `$SYSTEMDS_HOME`, else `~/.cache/spores/systemds` (where
//! `scripts/install-systemds.sh` puts it), else `/opt/systemds`; Spark's jars (from
//! `pyspark==3.5.7`, the version SystemDS 3.4 is built against) in its `spark-jars/`. Each
//! run gets a configuration file that puts SystemDS's scratch space in a temporary folder
//! (it would otherwise write `./scratch_space` where the program runs) and, for Spark,
//! `sysds.local.spark=true`. On Java 17, Spark needs the `--add-opens` of
//! [`SPARK_JAVA_OPTIONS`] (the list Spark's own launcher passes).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a program runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// SystemDS on this machine (`-exec singlenode`)
    #[default]
    SingleNode,
    /// SystemDS on Spark in local mode (`-exec spark`, `sysds.local.spark=true`)
    Spark,
}

/// The JVM options Spark 3.5 needs on Java 17 (from Spark's `JavaModuleOptions`).
pub const SPARK_JAVA_OPTIONS: &[&str] = &[
    "-XX:+IgnoreUnrecognizedVMOptions",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
    "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
    "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
    "-Djdk.reflect.useDirectMethodHandle=false",
];

/// SystemDS's install folder (with `SystemDS.jar`), if there is one and `java` runs.
pub fn home() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(h) = std::env::var_os("SYSTEMDS_HOME") {
        candidates.push(PathBuf::from(h));
    }
    if let Some(h) = std::env::var_os("HOME") {
        candidates.push(Path::new(&h).join(".cache/spores/systemds"));
    }
    candidates.push(PathBuf::from("/opt/systemds"));
    let home = candidates
        .into_iter()
        .find(|h| h.join("SystemDS.jar").is_file())?;
    let java = Command::new("java").arg("-version").output().ok()?;
    java.status.success().then_some(home)
}

/// The folder of Spark's jars in a SystemDS install, if they are there.
pub fn spark_jars(home: &Path) -> Option<PathBuf> {
    let d = home.join("spark-jars");
    std::fs::read_dir(&d)
        .ok()?
        .flatten()
        .any(|e| e.path().extension().is_some_and(|x| x == "jar"))
        .then_some(d)
}

/// The command that runs `program` with SystemDS on `engine`, script arguments
/// `-nvargs`/`-args` already in `script_args` (for example `["-nvargs", "m=10"]`);
/// `work` is a folder for the configuration and scratch files. The JVM heap is
/// `$SPORES_JAVA_XMX` when set.
pub fn command(
    home: &Path,
    engine: Engine,
    program: &Path,
    script_args: &[String],
    work: &Path,
) -> Result<Command, String> {
    let mut cp = format!(
        "{}:{}/lib/*",
        home.join("SystemDS.jar").display(),
        home.display()
    );
    let spark = engine == Engine::Spark;
    if spark {
        let jars = spark_jars(home).ok_or_else(|| {
            format!(
                "Spark's jars are not in {} (run scripts/install-systemds.sh --spark)",
                home.join("spark-jars").display()
            )
        })?;
        cp.push_str(&format!(":{}/*", jars.display()));
    }
    std::fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    let config = work.join("spores-systemds.xml");
    let mut xml = format!(
        "<root>\n  <sysds.scratch>{}</sysds.scratch>\n  <sysds.localtmpdir>{}</sysds.localtmpdir>\n",
        work.join("scratch_space").display(),
        work.join("tmp").display()
    );
    if spark {
        xml.push_str("  <sysds.local.spark>true</sysds.local.spark>\n");
    }
    xml.push_str("</root>\n");
    std::fs::write(&config, xml).map_err(|e| format!("{}: {e}", config.display()))?;
    let mut c = Command::new("java");
    if let Ok(x) = std::env::var("SPORES_JAVA_XMX") {
        c.arg(format!("-Xmx{x}"));
    }
    c.arg("--add-modules=jdk.incubator.vector");
    if spark {
        c.args(SPARK_JAVA_OPTIONS);
    }
    let log4j = home.join("conf/log4j.properties");
    if log4j.is_file() {
        c.arg(format!("-Dlog4j.configuration=file:{}", log4j.display()));
    }
    c.arg("-cp")
        .arg(cp)
        .arg("org.apache.sysds.api.DMLScript")
        .arg("-f")
        .arg(program)
        .arg("-exec")
        .arg(if spark { "spark" } else { "singlenode" })
        .arg("-config")
        .arg(&config)
        .args(script_args);
    Ok(c)
}
