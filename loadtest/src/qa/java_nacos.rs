//! Java Nacos as a server of the qa run (`--baseline nacos`): one standalone node with
//! its embedded Derby database, started as `scripts/reference-nacos.sh` starts the
//! reference server the differential scenarios are recorded against.
//!
//! Java Nacos' server modules are not on Maven Central, so the server is the
//! `nacos-server.jar` of a release or of a build of its release tag:
//! `$REFERENCE_NACOS3_JAR` (`--baseline nacos`, `nacos3`) or `$REFERENCE_NACOS2_JAR`
//! (`--baseline nacos2`), or any path with `--baseline-kind nacos` (a `.jar` is taken
//! for Java Nacos without it). Its version is read from the jar's file list
//! (`BOOT-INF/lib/nacos-core-X.Y.Z.jar`) and decides the generation of its
//! `application.properties` (2.x or 3.x, the script's two files).
//!
//! A node of HTTP port `P` (context `/nacos`): gRPC on `P + 1000`, cluster gRPC on
//! `P + 1001` and JRaft on `P - 1000` (Nacos derives them), Nacos 3's console on
//! `P + 1`; `nacos.home` is the
//! node's dir (Derby under `data/`, Nacos' own logs under `logs/` through
//! `-Dnacos.logs.path`, the properties under `conf/`). The JVM gets the heap flags of
//! Nacos' `startup.sh` in standalone mode, `-Xms512m -Xmx512m -Xmn256m`, and the JDK's
//! default GC (`$REFERENCE_NACOS_JVM` replaces the heap flags, `$REFERENCE_NACOS_JAVA`
//! the `java` binary, as for the script); the report names both in the server's
//! version line. Java Nacos standalone is one node: a cluster of Java nodes needs an
//! external MySQL, which qa does not set up, so a Nacos side refuses `--nodes 3`.
//!
//! Auth is as the script leaves it: the client API (everything the scenarios send) is
//! open, so no login and no admin password are needed.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::servers::Ports;
use super::QaError;

/// `--baseline nacos` / `nacos3`: the Nacos 3 jar named by this variable.
pub const NACOS3_JAR_VAR: &str = "REFERENCE_NACOS3_JAR";
/// `--baseline nacos2`: the Nacos 2 jar named by this variable.
pub const NACOS2_JAR_VAR: &str = "REFERENCE_NACOS2_JAR";
/// The `java` binary (default: `java` on the PATH).
pub const JAVA_VAR: &str = "REFERENCE_NACOS_JAVA";
/// Replaces the heap flags (words).
pub const JVM_VAR: &str = "REFERENCE_NACOS_JVM";
/// The heap flags of Nacos' `bin/startup.sh` in standalone mode.
pub const DEFAULT_JVM: [&str; 3] = ["-Xms512m", "-Xmx512m", "-Xmn256m"];
/// The script that starts Java Nacos for the differential scenarios: the one place
/// its `conf/application.properties` is written down (`properties GEN PORT`).
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/reference-nacos.sh");
/// Environment a Java Nacos node must not inherit: Spring Boot binds `NACOS_*`,
/// `SERVER_*`, `SPRING_*` variables over the properties file, and the `*JAVA_OPTIONS`
/// ones would add JVM flags the report does not show.
const CLEARED_ENV: [&str; 6] = [
    "NACOS_",
    "SERVER_",
    "SPRING_",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
];

/// The JVM and the Nacos release of a Java Nacos server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaNacos {
    /// The `java` binary.
    pub java: PathBuf,
    /// The heap (and any other) flags before `-jar`.
    pub jvm: Vec<String>,
    /// `3.0.3`, from the jar's file list.
    pub nacos_version: String,
    /// The JDK's feature release, e.g. `17`.
    pub jdk: String,
    /// The collector the JVM picks with these flags (`G1`, `Serial`, ...), if known.
    pub gc: Option<String>,
}

impl JavaNacos {
    /// Reads the Nacos version of `jar` and asks the JVM (`$REFERENCE_NACOS_JAVA` or
    /// `java`, with the heap flags) for its version and collector.
    pub fn probe(
        jar: &Path,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<JavaNacos, QaError> {
        let names = jar_entries(jar)
            .map_err(|e| QaError::io(format!("reading the file list of {}", jar.display()), e))?;
        let nacos_version = nacos_version_of(&names).ok_or_else(|| {
            QaError::Setup(format!(
                "{}: not a Nacos server jar (no BOOT-INF/lib/nacos-core-*.jar in it): give \
                 the target/nacos-server.jar of a Nacos 2.x or 3.x release",
                jar.display()
            ))
        })?;
        let java = PathBuf::from(
            lookup(JAVA_VAR)
                .filter(|j| !j.trim().is_empty())
                .unwrap_or_else(|| "java".into()),
        );
        let jvm = jvm_flags(lookup(JVM_VAR).as_deref());
        let out = Command::new(&java)
            .args(&jvm)
            .args(["-XX:+PrintCommandLineFlags", "-version"])
            .output()
            .map_err(|e| QaError::io(format!("running {} -version", java.display()), e))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(QaError::Setup(format!(
                "{} {} -version failed: {}",
                java.display(),
                jvm.join(" "),
                stderr.trim()
            )));
        }
        let jdk = parse_jdk(&stderr).unwrap_or_else(|| "unknown".into());
        let gc = parse_gc(&String::from_utf8_lossy(&out.stdout));
        Ok(JavaNacos {
            java,
            jvm,
            nacos_version,
            jdk,
            gc,
        })
    }

    /// The major version: 2 or 3 (the properties differ).
    pub fn generation(&self) -> u32 {
        generation_of(&self.nacos_version)
    }

    /// The server's version line in the report: `Java Nacos 3.0.3 (JDK 17, -Xms512m
    /// -Xmx512m -Xmn256m, default GC: G1)`.
    pub fn describe(&self) -> String {
        let gc_chosen = self
            .jvm
            .iter()
            .any(|f| f.starts_with("-XX:+Use") && f.ends_with("GC") && !f.contains("Adaptive"));
        let gc = match (&self.gc, gc_chosen) {
            (Some(gc), true) => format!("{gc} GC"),
            (Some(gc), false) => format!("default GC: {gc}"),
            (None, _) => "default GC".into(),
        };
        format!(
            "Java Nacos {} (JDK {}, {}, {gc})",
            self.nacos_version,
            self.jdk,
            self.jvm.join(" ")
        )
    }
}

/// The heap flags: `$REFERENCE_NACOS_JVM`'s words when set, else [`DEFAULT_JVM`].
pub fn jvm_flags(custom: Option<&str>) -> Vec<String> {
    match custom.map(str::trim).filter(|c| !c.is_empty()) {
        Some(words) => words.split_whitespace().map(String::from).collect(),
        None => DEFAULT_JVM.iter().map(|s| s.to_string()).collect(),
    }
}

/// The major version of `3.0.3` (3); 3 when it cannot be read.
pub fn generation_of(version: &str) -> u32 {
    version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(3)
}

/// `--baseline nacos` (or `nacos3`, `java-nacos`) and `nacos2`: the jar named by
/// `$REFERENCE_NACOS3_JAR` / `$REFERENCE_NACOS2_JAR`. `None`: `arg` is no such word (a
/// path); `Some(Err)`: the variable is not set or names no file.
pub fn resolve_keyword(
    arg: &Path,
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<Result<PathBuf, String>> {
    let word = arg.to_str()?.to_ascii_lowercase();
    let (var, generation) = match word.as_str() {
        "nacos" | "nacos3" | "java-nacos" => (NACOS3_JAR_VAR, 3),
        "nacos2" => (NACOS2_JAR_VAR, 2),
        _ => return None,
    };
    let why = |what: String| {
        Err(format!(
            "{word}: {what}; set {var} to the target/nacos-server.jar of a Nacos \
             {generation}.x release (its server modules are not on Maven Central; see \
             scripts/reference-nacos.sh)"
        ))
    };
    Some(match lookup(var).filter(|v| !v.trim().is_empty()) {
        None => why(format!("{var} is not set")),
        Some(path) if !Path::new(&path).is_file() => why(format!("{var}={path} is no file")),
        Some(path) => Ok(PathBuf::from(path)),
    })
}

/// The names in a zip file (a jar).
pub fn jar_entries(path: &Path) -> std::io::Result<Vec<String>> {
    let invalid =
        |e: zip::result::ZipError| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
    let archive = zip::ZipArchive::new(std::fs::File::open(path)?).map_err(invalid)?;
    archive
        .file_names()
        .map(|name| name.map(|n| n.into_owned()).map_err(invalid))
        .collect()
}

/// The Nacos version of a server jar's file list: `BOOT-INF/lib/nacos-core-3.0.3.jar`
/// (else `nacos-config-`) gives `3.0.3`.
pub fn nacos_version_of(names: &[String]) -> Option<String> {
    ["nacos-core-", "nacos-config-"].iter().find_map(|module| {
        names.iter().find_map(|n| {
            let file = n.strip_prefix("BOOT-INF/lib/")?.strip_prefix(module)?;
            let version = file.strip_suffix(".jar")?;
            version
                .starts_with(|c: char| c.is_ascii_digit())
                .then(|| version.to_string())
        })
    })
}

/// The JDK's feature release from `java -version`'s first line: `openjdk version
/// "17.0.15" ...` gives `17`, `java version "1.8.0_292"` gives `8`.
pub fn parse_jdk(version_output: &str) -> Option<String> {
    let line = version_output.lines().find(|l| l.contains("version"))?;
    let quoted = line.split('"').nth(1)?;
    let mut parts = quoted.split(['.', '-', '+', '_']);
    let first = parts.next()?;
    let major = if first == "1" { parts.next()? } else { first };
    major
        .chars()
        .all(|c| c.is_ascii_digit())
        .then(|| major.to_string())
}

/// The collector in `-XX:+PrintCommandLineFlags`' line: `-XX:+UseG1GC` gives `G1`.
pub fn parse_gc(flags_output: &str) -> Option<String> {
    flags_output.split_whitespace().find_map(|f| {
        let gc = f.strip_prefix("-XX:+Use")?.strip_suffix("GC")?;
        (!gc.is_empty() && !gc.contains("Adaptive") && !gc.contains("Compressed"))
            .then(|| gc.to_string())
    })
}

/// A Java Nacos node's ports: HTTP `P`, gRPC `P + 1000`, cluster gRPC `P + 1001` and
/// JRaft `P - 1000` (Nacos derives them from `P`; JRaft listens in standalone mode
/// too), Nacos 3's console `P + 1` (its properties set it). Nacos binds them on every
/// interface, not only loopback.
pub fn ports(http: u16) -> Ports {
    Ports {
        http,
        grpc: http + 1000,
        cluster: http + 1001,
        console: http + 1,
        raft: http.checked_sub(1000),
    }
}

/// The `conf/application.properties` of a node on HTTP port `port`, of generation 2
/// or 3: what `scripts/reference-nacos.sh properties GEN PORT` prints.
pub fn properties(generation: u32, port: u16) -> Result<String, QaError> {
    let output = Command::new("bash")
        .arg(SCRIPT)
        .args(["properties", &generation.to_string(), &port.to_string()])
        .output()
        .map_err(|e| QaError::io(format!("running {SCRIPT}"), e))?;
    if !output.status.success() {
        return Err(QaError::io(
            format!("{SCRIPT} properties {generation} {port}"),
            std::io::Error::other(String::from_utf8_lossy(&output.stderr).into_owned()),
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Prepares `home` (a node's dir, kept over a restart): `conf/application.properties`
/// for `port`, and `logs/`.
pub fn write_home(home: &Path, generation: u32, port: u16) -> Result<(), QaError> {
    for sub in ["conf", "logs"] {
        let dir = home.join(sub);
        std::fs::create_dir_all(&dir)
            .map_err(|e| QaError::io(format!("creating {}", dir.display()), e))?;
    }
    let file = home.join("conf/application.properties");
    std::fs::write(&file, properties(generation, port)?)
        .map_err(|e| QaError::io(format!("writing {}", file.display()), e))
}

/// The JVM of a standalone node with `home` as `nacos.home` (absolute), as the script
/// starts it: `java <heap> -XX:-OmitStackTraceInFastThrow -Dnacos.standalone=true
/// -Dnacos.home=H -Dnacos.logs.path=H/logs -Dnacos.member.list= -jar JAR
/// --spring.config.additional-location=file:H/conf/`.
pub fn command(java: &JavaNacos, jar: &Path, home: &Path) -> Command {
    let mut c = Command::new(&java.java);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if CLEARED_ENV.iter().any(|p| name.starts_with(p)) {
            c.env_remove(&*name);
        }
    }
    c.current_dir(home)
        .args(&java.jvm)
        .arg("-XX:-OmitStackTraceInFastThrow")
        .arg("-Dnacos.standalone=true")
        .arg(format!("-Dnacos.home={}", home.display()))
        // The server's own logs: without it they go to ~/nacos/logs, shared by every
        // node.
        .arg(format!("-Dnacos.logs.path={}", home.join("logs").display()))
        .arg("-Dnacos.member.list=")
        .arg("-jar")
        .arg(jar)
        .arg(format!(
            "--spring.config.additional-location=file:{}/",
            home.join("conf").display()
        ));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn java() -> JavaNacos {
        JavaNacos {
            java: PathBuf::from("java"),
            jvm: jvm_flags(None),
            nacos_version: "3.0.3".into(),
            jdk: "17".into(),
            gc: Some("G1".into()),
        }
    }

    #[test]
    fn keywords_name_the_reference_jars() {
        let jar = std::env::current_exe().unwrap();
        let jar_text = jar.display().to_string();
        let env = |var: &str| (var == NACOS3_JAR_VAR).then(|| jar_text.clone());
        assert_eq!(
            resolve_keyword(Path::new("nacos"), env),
            Some(Ok(jar.clone()))
        );
        assert_eq!(
            resolve_keyword(Path::new("Nacos3"), env),
            Some(Ok(jar.clone()))
        );
        // nacos2: its variable is not set.
        let e = resolve_keyword(Path::new("nacos2"), env)
            .unwrap()
            .unwrap_err();
        assert!(e.contains("REFERENCE_NACOS2_JAR is not set"), "{e}");
        let missing = |_: &str| Some("/no/such/nacos-server.jar".to_string());
        let e = resolve_keyword(Path::new("nacos"), missing)
            .unwrap()
            .unwrap_err();
        assert!(e.contains("is no file"), "{e}");
        // Paths and other words are not keywords.
        assert_eq!(resolve_keyword(Path::new("./nacos"), env), None);
        assert_eq!(resolve_keyword(Path::new("/x/nacos-server.jar"), env), None);
        assert_eq!(resolve_keyword(Path::new("rnacos"), env), None);
    }

    #[test]
    fn versions_from_the_jar_and_the_jdk() {
        let names: Vec<String> = [
            "META-INF/MANIFEST.MF",
            "BOOT-INF/lib/nacos-config-plugin-3.0.3.jar",
            "BOOT-INF/lib/nacos-core-3.0.3.jar",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(nacos_version_of(&names).as_deref(), Some("3.0.3"));
        let config_only = vec!["BOOT-INF/lib/nacos-config-2.5.1.jar".to_string()];
        assert_eq!(nacos_version_of(&config_only).as_deref(), Some("2.5.1"));
        assert_eq!(
            nacos_version_of(&["BOOT-INF/lib/nacos-config-plugin-2.5.1.jar".into()]),
            None
        );
        assert_eq!(generation_of("2.5.1"), 2);
        assert_eq!(generation_of("3.0.3"), 3);
        assert_eq!(
            parse_jdk("openjdk version \"17.0.15\" 2025-04-15\nOpenJDK Runtime").as_deref(),
            Some("17")
        );
        assert_eq!(
            parse_jdk("java version \"1.8.0_292\"").as_deref(),
            Some("8")
        );
        assert_eq!(
            parse_jdk("openjdk version \"21-ea\" 2023-09-19").as_deref(),
            Some("21")
        );
        assert_eq!(parse_jdk("nothing"), None);
        assert_eq!(
            parse_gc("-XX:InitialHeapSize=536870912 -XX:+UseCompressedOops -XX:+UseG1GC")
                .as_deref(),
            Some("G1")
        );
        assert_eq!(parse_gc("-XX:+UseSerialGC").as_deref(), Some("Serial"));
        assert_eq!(parse_gc("-XX:-UseAdaptiveSizePolicy"), None);
    }

    #[test]
    fn the_version_line_shows_heap_and_gc() {
        assert_eq!(
            java().describe(),
            "Java Nacos 3.0.3 (JDK 17, -Xms512m -Xmx512m -Xmn256m, default GC: G1)"
        );
        let custom = JavaNacos {
            jvm: jvm_flags(Some(" -Xmx1g  -XX:+UseParallelGC ")),
            gc: Some("Parallel".into()),
            ..java()
        };
        assert_eq!(custom.jvm, ["-Xmx1g", "-XX:+UseParallelGC"]);
        assert_eq!(
            custom.describe(),
            "Java Nacos 3.0.3 (JDK 17, -Xmx1g -XX:+UseParallelGC, Parallel GC)"
        );
        assert_eq!(jvm_flags(Some("  ")), DEFAULT_JVM);
    }

    #[test]
    fn reads_a_jars_names() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let mut zip = zip::ZipWriter::new(std::fs::File::create(file.path()).unwrap());
        for name in ["META-INF/MANIFEST.MF", "BOOT-INF/lib/nacos-core-3.0.3.jar"] {
            zip.start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
        }
        zip.finish().unwrap();
        let names = jar_entries(file.path()).unwrap();
        assert_eq!(nacos_version_of(&names).as_deref(), Some("3.0.3"));
        std::fs::write(file.path(), b"not a zip").unwrap();
        assert!(jar_entries(file.path()).is_err());
    }

    #[test]
    fn properties_and_command_follow_the_script() {
        let p3 = properties(3, 31000).unwrap();
        assert!(p3.contains("nacos.server.main.port=31000\n"));
        assert!(p3.contains("nacos.console.port=31001\n"));
        assert!(p3.contains("nacos.core.auth.enabled=false\n"));
        assert!(p3.contains("nacos.core.api.compatibility.client.enabled=true\n"));
        let p2 = properties(2, 31000).unwrap();
        assert!(p2.starts_with("server.port=31000\nserver.servlet.contextPath=/nacos\n"));
        assert!(!p2.contains("nacos.console.port"));
        let p = ports(31000);
        assert_eq!(
            (p.grpc, p.cluster, p.console, p.raft),
            (32000, 32001, 31001, Some(30000))
        );

        let c = command(
            &java(),
            Path::new("/j/nacos-server.jar"),
            Path::new("/w/n1"),
        );
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args.join(" "),
            "-Xms512m -Xmx512m -Xmn256m -XX:-OmitStackTraceInFastThrow \
             -Dnacos.standalone=true -Dnacos.home=/w/n1 -Dnacos.logs.path=/w/n1/logs -Dnacos.member.list= -jar /j/nacos-server.jar \
             --spring.config.additional-location=file:/w/n1/conf/"
        );
        assert_eq!(c.get_current_dir(), Some(Path::new("/w/n1")));

        let home = tempfile::tempdir().unwrap();
        write_home(home.path(), 3, 31000).unwrap();
        assert!(home.path().join("logs").is_dir());
        let written =
            std::fs::read_to_string(home.path().join("conf/application.properties")).unwrap();
        assert_eq!(written, p3);
    }
}
