//! The Java and Go SDK drivers the project builds (`tests/java/prepare.sh`,
//! `tests/go/prepare.sh`; `scripts/test.sh` runs both): the commands that
//! start them, with a clear failure when one is not built.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A Nacos Java client generation of `tests/java/` (one Maven module each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JavaClient {
    /// `nacos-client` 2.x (module `nacos2`).
    Nacos2,
    /// `nacos-client` 3.x (module `nacos3`).
    Nacos3,
}

impl JavaClient {
    pub fn module(self) -> &'static str {
        match self {
            JavaClient::Nacos2 => "nacos2",
            JavaClient::Nacos3 => "nacos3",
        }
    }
}

/// The `java` the Java tests run: `$JAVA`, else `$JAVA_HOME/bin/java`,
/// else `java` on the PATH (a JDK 17 or newer).
pub fn java_bin() -> PathBuf {
    if let Some(java) = std::env::var_os("JAVA") {
        return PathBuf::from(java);
    }
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let java = Path::new(&home).join("bin/java");
        if java.is_file() {
            return java;
        }
    }
    PathBuf::from("java")
}

/// The driver's class path (its classes, then its dependencies); panics
/// naming `tests/java/prepare.sh` when it is not built.
pub fn java_driver_classpath(client: JavaClient) -> String {
    let module = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/java")
        .join(client.module());
    let classes = module.join("target/classes");
    let classpath_file = module.join("target/classpath.txt");
    let dependencies = std::fs::read_to_string(&classpath_file).unwrap_or_default();
    assert!(
        classes.join("tacos/sdk/Driver.class").is_file() && !dependencies.trim().is_empty(),
        "the Java SDK driver is not built ({} or {} missing): run tests/java/prepare.sh \
         (scripts/test.sh runs it; it needs a JDK 17 and Maven)",
        classes.display(),
        classpath_file.display()
    );
    format!("{}:{}", classes.display(), dependencies.trim())
}

/// `java -cp <classes>:<dependencies> tacos.sdk.Driver` of `client`, with
/// the client's snapshot and logs in `work` and timestamps on its log lines.
pub fn java_driver(client: JavaClient, work: &Path) -> Command {
    let classpath = java_driver_classpath(client);
    let mut command = Command::new(java_bin());
    command
        .arg(format!(
            "-DJM.SNAPSHOT.PATH={}",
            work.join("snapshot").display()
        ))
        .arg(format!("-DJM.LOG.PATH={}", work.join("logs").display()))
        .arg("-Dorg.slf4j.simpleLogger.showDateTime=true")
        .arg("-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS")
        .arg("-cp")
        .arg(classpath)
        .arg("tacos.sdk.Driver");
    command
}

/// The Go driver binary (`tests/go/bin/tacos-go-sdk`); panics naming
/// `tests/go/prepare.sh` when it is missing or older than the module's
/// sources.
pub fn go_driver_path() -> PathBuf {
    let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go");
    let bin = module.join("bin/tacos-go-sdk");
    let built = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| {
            panic!(
                "the Go SDK driver {} is not built: run tests/go/prepare.sh (scripts/test.sh does)",
                bin.display()
            )
        });
    let newest_source = std::fs::read_dir(&module)
        .expect("reading tests/go")
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with(".go") || name == "go.mod" || name == "go.sum"
        })
        .filter_map(|e| e.metadata().and_then(|m| m.modified()).ok())
        .max()
        .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
    assert!(
        built >= newest_source,
        "the Go SDK driver {} is older than its sources: run tests/go/prepare.sh",
        bin.display()
    );
    bin
}
