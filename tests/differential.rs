//! Tacos against Java Nacos: every scenario answer compared with the one the
//! real server gave (tests/reference/README.md).
//!
//! `tests/scenarios/*.txt` hold Tacos' answers (checked against the binary
//! by `tests/scenarios.rs` on every run). `tests/reference/nacos-VERSION/`
//! holds the same scripts played against Java Nacos VERSION
//! (`scripts/reference-record.sh`). This test compares the two block by
//! block, after masking what must differ between two servers (ids), and
//! fails on any difference that `tests/reference/differences.toml` does
//! not explain: a documented, deliberate difference (docs/compat-diff.md)
//! or a bug of Nacos' own. A listed difference that no longer differs fails
//! too, so the list stays true.
//!
//! A script says which generations it speaks in its `# reference:` line
//! (`nacos-2 nacos-3`, or `none: WHY` for a Tacos-only script; `with
//! key=value...` after the generations are the Nacos properties its
//! recording ran with: its `start` flags in Nacos' words); a block
//! that calls a Tacos route is not compared. A block whose commands are
//! not in the recording (a script changed after it was recorded) is
//! counted as not recorded, never as equal: re-record to compare it.

#[path = "common/reference.rs"]
mod reference;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One block of a script: its command lines (comments left out) and its
/// output lines; `line` is where its first command is (1-based).
#[derive(Debug, Clone)]
struct Block {
    line: usize,
    commands: Vec<String>,
    output: Vec<String>,
}

/// Splits a goldenscript into blocks: commands, `---`, output up to a
/// blank line.
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut block = Block {
            line: n + 1,
            commands: vec![line.to_string()],
            output: Vec::new(),
        };
        for (_, line) in lines.by_ref() {
            if line == "---" {
                break;
            }
            if !line.starts_with('#') {
                block.commands.push(line.to_string());
            }
        }
        for (_, line) in lines.by_ref() {
            if line.is_empty() {
                break;
            }
            block.output.push(line.to_string());
        }
        out.push(block);
    }
    out
}

/// The generations a script speaks, from its `# reference:` line.
#[derive(Debug, PartialEq)]
enum Speaks {
    Generations(Vec<String>),
    None(String),
}

fn speaks(text: &str) -> Result<Speaks, String> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("# reference:"))
        .ok_or("no `# reference:` line (say `nacos-2 nacos-3`, or `none: WHY`)")?
        .trim();
    if let Some(why) = line.strip_prefix("none:") {
        return Ok(Speaks::None(why.trim().to_string()));
    }
    // `with key=value...`: how the reference server is set up for it.
    let gens = line.split(" with ").next().unwrap_or(line);
    let generations: Vec<String> = gens.split_whitespace().map(str::to_string).collect();
    if generations.is_empty() || generations.iter().any(|g| g != "nacos-2" && g != "nacos-3") {
        return Err(format!(
            "`# reference: {line}`: expected nacos-2 and/or nacos-3, or none: WHY"
        ));
    }
    Ok(Speaks::Generations(generations))
}

/// Values that differ between any two servers: masked on both sides.
fn normalize(line: &str) -> String {
    // A `show` of ids (`pageItems.id: ["1","2"]`, `data.nid: 7`).
    if let Some((path, value)) = line.split_once(": ") {
        let last = path.rsplit('.').next().unwrap_or(path);
        if (last == "id" || last == "nid") && !path.contains([' ', '"']) {
            return format!("{path}: {}", mask_numbers(value));
        }
    }
    let mut s = line.to_string();
    // Ids: Tacos counts from 1, Nacos uses snowflake ids.
    for key in ["\"id\"", "\"nid\""] {
        let mut from = 0;
        while let Some(at) = s[from..].find(key) {
            let start = from + at + key.len();
            let rest = &s[start..];
            let colon = rest.len() - rest.trim_start_matches([':', ' ']).len();
            let value_start = start + colon;
            let value = &s[value_start..];
            let quoted = value.starts_with('"');
            let digits_from = value_start + usize::from(quoted);
            let digits = s[digits_from..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if colon > 0 && digits > 0 {
                let end = digits_from + digits + usize::from(quoted);
                s.replace_range(value_start..end, "\"<id>\"");
            }
            from = start;
        }
    }
    s
}

/// What the list says of one difference.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Listed {
    script: String,
    /// The first command of the block, as written in the script.
    block: String,
    /// The recordings (`nacos-2.5.1`, ...) it applies to; all when empty.
    #[serde(default)]
    reference: Vec<String>,
    /// `deliberate` (docs/compat-diff.md says why), `nacos-bug`, or `open`:
    /// seen and not decided yet (docs/compat-diff.md lists them; each is
    /// work to do: fix Tacos or move it to one of the other two).
    kind: String,
    /// A heading of docs/compat-diff.md: `#anchor`.
    doc: String,
    /// What differs in this block, when the heading alone does not say
    /// (a block can show more than one cause).
    #[serde(default)]
    note: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct List {
    #[serde(default)]
    difference: Vec<Listed>,
}

/// Every run of digits as `<id>`.
fn mask_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push_str("<id>");
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// GitHub's anchor of a Markdown heading.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn recordings() -> Vec<(String, PathBuf)> {
    let dir = root().join("tests/reference");
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .expect("reading tests/reference")
        .filter_map(|e| {
            let path = e.expect("a directory entry").path();
            let name = path.file_name()?.to_string_lossy().into_owned();
            (path.is_dir() && name.starts_with("nacos-")).then_some((name, path))
        })
        .collect();
    out.sort();
    out
}

/// `nacos-3.0.3` speaks generation `nacos-3`.
fn generation(recording: &str) -> String {
    let version = recording.trim_start_matches("nacos-");
    format!("nacos-{}", version.split('.').next().unwrap_or(version))
}

fn script_texts() -> BTreeMap<String, String> {
    let dir = root().join("tests/scenarios");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("reading tests/scenarios") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "txt") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).expect("reading a script");
            out.insert(name, text);
        }
    }
    out
}

fn calls_tacos_route(block: &Block) -> bool {
    block.commands.iter().any(|c| {
        let c = c.trim_start_matches('(');
        let mut words = c.split_whitespace();
        let verb = words.next().unwrap_or("");
        let path = words.next().unwrap_or("");
        matches!(verb, "get" | "post" | "put" | "delete") && reference::tacos_route(path)
    })
}

#[test]
fn every_script_says_what_it_speaks() {
    let mut bad = Vec::new();
    for (name, text) in script_texts() {
        match speaks(&text) {
            Ok(Speaks::None(why)) if why.is_empty() => bad.push(format!(
                "tests/scenarios/{name}.txt: `none:` without a reason"
            )),
            // Tacos `start` flags must be said in Nacos' words for the
            // recording to set the reference server up the same way.
            Ok(Speaks::Generations(_)) => {
                let with = text
                    .lines()
                    .find_map(|l| l.strip_prefix("# reference:"))
                    .is_some_and(|l| l.contains(" with "));
                let flagged = text.lines().any(|l| {
                    l.strip_prefix("start ")
                        .is_some_and(|f| !f.trim().is_empty())
                });
                if flagged && !with {
                    bad.push(format!(
                        "tests/scenarios/{name}.txt: its `start` flags need the same setup in \
                         Nacos' words: `# reference: ... with key=value`"
                    ));
                }
            }
            Ok(Speaks::None(_)) => {}
            Err(e) => bad.push(format!("tests/scenarios/{name}.txt: {e}")),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn tacos_answers_as_java_nacos() {
    let list_path = root().join("tests/reference/differences.toml");
    let list: List = toml::from_str(
        &std::fs::read_to_string(&list_path).expect("reading tests/reference/differences.toml"),
    )
    .unwrap_or_else(|e| panic!("tests/reference/differences.toml: {e}"));
    let doc = std::fs::read_to_string(root().join("docs/compat-diff.md"))
        .expect("reading docs/compat-diff.md");
    let anchors: Vec<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|h| format!("#{}", anchor(h.trim_start_matches('#'))))
        .collect();
    let mut problems = Vec::new();
    for listed in &list.difference {
        if !anchors.contains(&listed.doc) {
            problems.push(format!(
                "differences.toml: {} / {:?}: docs/compat-diff.md has no heading {}",
                listed.script, listed.block, listed.doc
            ));
        }
        if !["deliberate", "nacos-bug", "open"].contains(&listed.kind.as_str()) {
            problems.push(format!(
                "differences.toml: {} / {:?}: kind {:?} (deliberate, nacos-bug or open)",
                listed.script, listed.block, listed.kind
            ));
        }
    }
    // UPDATE_DIFFERENCES=1 appends every unexplained difference to the list
    // as `open` (seen, not decided yet), to be triaged from there.
    let update = std::env::var("UPDATE_DIFFERENCES").as_deref() == Ok("1");
    let mut new_entries = Vec::new();
    let mut used = vec![false; list.difference.len()];
    let scripts = script_texts();
    let mut report = String::new();
    // SHOW_DIFFERENCES=FILE writes every listed difference, both answers
    // side by side, to FILE: the triage view.
    let show_to = std::env::var("SHOW_DIFFERENCES").ok();
    let show = show_to.is_some();
    let mut shown = String::new();
    for (recording, dir) in recordings() {
        let generation = generation(&recording);
        let (mut compared, mut equal, mut explained, mut open, mut unrecorded, mut tacos_only) =
            (0, 0, 0, 0, 0, 0);
        for (name, text) in &scripts {
            let Ok(Speaks::Generations(gens)) = speaks(text) else {
                continue;
            };
            if !gens.contains(&generation) {
                continue;
            }
            let path = dir.join(format!("{name}.txt"));
            let Ok(recorded) = std::fs::read_to_string(&path) else {
                problems.push(format!(
                    "tests/scenarios/{name}.txt speaks {generation} but has no recording in \
                     tests/reference/{recording}/ (scripts/reference-record.sh)"
                ));
                continue;
            };
            let theirs = blocks(&recorded);
            let mut next = 0;
            for ours in blocks(text) {
                if calls_tacos_route(&ours) {
                    tacos_only += 1;
                    continue;
                }
                let Some(at) = theirs[next..]
                    .iter()
                    .position(|b| b.commands == ours.commands)
                else {
                    unrecorded += 1;
                    continue;
                };
                let theirs = &theirs[next + at];
                next += at + 1;
                compared += 1;
                let norm = |b: &Block| b.output.iter().map(|l| normalize(l)).collect::<Vec<_>>();
                if norm(&ours) == norm(theirs) {
                    equal += 1;
                    continue;
                }
                let listed = list.difference.iter().position(|d| {
                    d.script == *name
                        && d.block == ours.commands[0]
                        && (d.reference.is_empty() || d.reference.contains(&recording))
                });
                match listed {
                    Some(i) => {
                        // A block's first command may repeat in a script: one
                        // entry covers every block it names.
                        for (j, d) in list.difference.iter().enumerate() {
                            if d.script == *name
                                && d.block == ours.commands[0]
                                && (d.reference.is_empty() || d.reference.contains(&recording))
                            {
                                used[j] = true;
                            }
                        }
                        match list.difference[i].kind.as_str() {
                            "open" => open += 1,
                            _ => explained += 1,
                        }
                        if show {
                            shown.push_str(&format!(
                                "=== {name}.txt:{} {recording} [{}] {} {}\n  first: {}\n  \
                                 block: {}\n  Tacos:\n{}\n  Nacos:\n{}\n\n",
                                ours.line,
                                list.difference[i].kind,
                                list.difference[i].doc,
                                list.difference[i].note,
                                ours.commands[0],
                                ours.commands.join(" | "),
                                indent(&ours.output),
                                indent(&theirs.output)
                            ));
                        }
                    }
                    None if update => new_entries.push(format!(
                        "\n[[difference]]\nscript = {:?}\nblock = {:?}\nreference = [{:?}]\n\
                         kind = \"open\"\ndoc = \"#open-differences\"\n",
                        name, ours.commands[0], recording
                    )),
                    None => problems.push(format!(
                        "tests/scenarios/{name}.txt:{} differs from Java {recording} \
                         (fix Tacos, or list it in tests/reference/differences.toml):\n  \
                         block: {}\n  Tacos:\n{}\n  Nacos:\n{}",
                        ours.line,
                        ours.commands[0],
                        indent(&ours.output),
                        indent(&theirs.output)
                    )),
                }
            }
        }
        report.push_str(&format!(
            "{recording}: {compared} blocks compared, {equal} equal, {explained} documented \
             differences, {open} open; {unrecorded} not recorded, {tacos_only} Tacos routes\n"
        ));
    }
    if !new_entries.is_empty() {
        let mut text = std::fs::read_to_string(&list_path).expect("reading the list");
        text.push_str(&new_entries.concat());
        std::fs::write(&list_path, text).expect("writing tests/reference/differences.toml");
        eprintln!("added {} open differences to the list", new_entries.len());
    }
    for (i, listed) in list.difference.iter().enumerate() {
        if !used[i] {
            problems.push(format!(
                "differences.toml lists {} / {:?}, which no longer differs (or no longer \
                 exists): take it out",
                listed.script, listed.block
            ));
        }
    }
    if let Some(path) = &show_to {
        std::fs::write(path, &shown).expect("writing SHOW_DIFFERENCES");
    }
    eprint!("{report}");
    assert!(problems.is_empty(), "{report}{}", problems.join("\n\n"));
}

fn indent(lines: &[String]) -> String {
    lines
        .iter()
        .take(30)
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn helpers() {
    let text = "# reference: nacos-2 nacos-3\n# c\nget a\n# inner\n(get b)\n---\n200 x\n200 y\n\nget c\n---\n404\n";
    let b = blocks(text);
    assert_eq!(b.len(), 2);
    assert_eq!(b[0].line, 3);
    assert_eq!(b[0].commands, ["get a", "(get b)"]);
    assert_eq!(b[0].output, ["200 x", "200 y"]);
    assert_eq!(b[1].output, ["404"]);
    assert_eq!(
        speaks(text).unwrap(),
        Speaks::Generations(vec!["nacos-2".into(), "nacos-3".into()])
    );
    assert_eq!(
        speaks("# reference: none: Tacos' console\n").unwrap(),
        Speaks::None("Tacos' console".into())
    );
    assert!(speaks("# reference: nacos-4\n").is_err());
    assert_eq!(
        speaks("# reference: nacos-3 with maxContent=16\n").unwrap(),
        Speaks::Generations(vec!["nacos-3".into()])
    );
    assert!(speaks("get a\n").is_err());
    assert_eq!(
        normalize(r#"{"id": "1234567890", "nid":7, "idx": 3, "id":"abc"}"#),
        r#"{"id": "<id>", "nid":"<id>", "idx": 3, "id":"abc"}"#
    );
    assert_eq!(
        normalize(r#"pageItems.id: ["1","1103732143569248256"]"#),
        r#"pageItems.id: ["<id>","<id>"]"#
    );
    assert_eq!(normalize("data.nid: 7"), "data.nid: <id>");
    assert_eq!(normalize("pageItems.idx: [1]"), "pageItems.idx: [1]");
    assert_eq!(generation("nacos-3.0.3"), "nacos-3");
    assert_eq!(anchor(" Ids: why they differ"), "ids-why-they-differ");
    assert_eq!(anchor("v1 `tenant` echo"), "v1-tenant-echo");
}
