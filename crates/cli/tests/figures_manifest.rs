//! Provenance of the committed figures: `docs/figures/MANIFEST` lists every file under
//! docs/figures with its revision, the document that cites it and the command that made it.
//! Checked here: the list and the tree agree both ways, each cited document names its file, and
//! each command starts with something that exists — a script in bench/ or scripts/,
//! an `rtscope` verb (and, for `lab run … -- VERB`, the guest's verb too) or a `cargo test`
//! target.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The verbs `rtscope --help` lists under "Commands:" (`help` left out).
fn verbs() -> BTreeSet<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .arg("--help")
        .output()
        .expect("rtscope --help");
    assert!(o.status.success(), "rtscope --help failed");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let v: BTreeSet<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|v| v != "help")
        .collect();
    assert!(
        v.contains("measure") && v.contains("lab"),
        "no verbs read from --help: {text}"
    );
    v
}

#[derive(Debug)]
struct Entry {
    line: usize,
    path: String,
    commit: String,
    doc: String,
    command: String,
}

fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let l = l.split(" # ").next().unwrap_or(l);
        let mut g = l.split_whitespace();
        let (Some(path), Some(commit), Some(doc)) = (g.next(), g.next(), g.next()) else {
            return Err(format!("MANIFEST:{}: not PATH COMMIT DOC COMMAND", i + 1));
        };
        let command = g.collect::<Vec<_>>().join(" ");
        if command.is_empty() {
            return Err(format!("MANIFEST:{}: {path}: no command", i + 1));
        }
        out.push(Entry {
            line: i + 1,
            path: path.into(),
            commit: commit.into(),
            doc: doc.into(),
            command,
        });
    }
    Ok(out)
}

/// `crates/*/tests/NAME.rs` of the package named `krate`.
fn cargo_test_exists(root: &Path, krate: &str, test: &str) -> bool {
    let Ok(dirs) = std::fs::read_dir(root.join("crates")) else {
        return false;
    };
    dirs.flatten().any(|d| {
        let toml = std::fs::read_to_string(d.path().join("Cargo.toml")).unwrap_or_default();
        toml.lines()
            .any(|l| l.replace(' ', "") == format!("name=\"{krate}\""))
            && d.path().join("tests").join(format!("{test}.rs")).is_file()
    })
}

/// Why `command` does not name something that exists, or None when it does.
fn command_problem(root: &Path, verbs: &BTreeSet<String>, command: &str) -> Option<String> {
    let toks: Vec<&str> = command
        .split_whitespace()
        .take_while(|t| !matches!(*t, ">" | "|" | "&&" | ";" | "2>&1"))
        .collect();
    let mut i = 0;
    while i < toks.len()
        && (matches!(toks[i], "sudo" | "python3" | "bash" | "sh")
            || (toks[i].contains('=') && !toks[i].starts_with('-')))
    {
        i += 1;
    }
    let Some(&head) = toks.get(i) else {
        return Some("no command".into());
    };
    if head == "rtscope" || head.ends_with("/rtscope") {
        let verb = toks.get(i + 1).copied().unwrap_or("");
        if !verbs.contains(verb) {
            return Some(format!("'{verb}' is not an rtscope verb"));
        }
        if verb == "lab" {
            if let Some(j) = toks.iter().position(|t| *t == "--") {
                let inner = toks.get(j + 1).copied().unwrap_or("");
                if !verbs.contains(inner) {
                    return Some(format!("the guest's '{inner}' is not an rtscope verb"));
                }
            }
        }
        return None;
    }
    if head.starts_with("bench/") || head.starts_with("scripts/") {
        return (!root.join(head).is_file()).then(|| format!("{head} does not exist"));
    }
    if head == "cargo" && toks.get(i + 1) == Some(&"test") {
        let after = |flag: &str| {
            toks.iter()
                .position(|t| *t == flag)
                .and_then(|j| toks.get(j + 1))
                .copied()
        };
        return match (after("-p"), after("--test")) {
            (Some(k), Some(t)) if cargo_test_exists(root, k, t) => None,
            (Some(k), Some(t)) => Some(format!("no test target {t} in package {k}")),
            _ => Some("cargo test without -p PACKAGE --test NAME".into()),
        };
    }
    Some(format!(
        "'{head}' is neither a bench/ or scripts/ script, an rtscope verb nor a cargo test"
    ))
}

fn files_under(dir: &Path, base: &Path, out: &mut BTreeSet<String>) {
    for e in std::fs::read_dir(dir)
        .expect("reading docs/figures")
        .flatten()
    {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, base, out);
        } else if let Ok(rel) = p.strip_prefix(base) {
            out.insert(rel.to_string_lossy().into_owned());
        }
    }
}

#[test]
fn every_figure_has_a_command_that_exists_and_a_document_that_cites_it() {
    let root = root();
    let figs = root.join("docs/figures");
    let text = std::fs::read_to_string(figs.join("MANIFEST")).expect("docs/figures/MANIFEST");
    let entries = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let verbs = verbs();

    let mut on_disk = BTreeSet::new();
    files_under(&figs, &figs, &mut on_disk);
    on_disk.remove("MANIFEST");

    let mut problems = Vec::new();
    let mut listed: BTreeMap<&str, usize> = BTreeMap::new();
    let mut docs: BTreeMap<String, String> = BTreeMap::new();
    for e in &entries {
        let at = format!("MANIFEST:{}: {}", e.line, e.path);
        if let Some(first) = listed.insert(&e.path, e.line) {
            problems.push(format!("{at}: listed twice (first at line {first})"));
        }
        if !on_disk.contains(&e.path) {
            problems.push(format!("{at}: no such file under docs/figures"));
        }
        if e.commit.len() < 7 || !e.commit.chars().all(|c| c.is_ascii_hexdigit()) {
            problems.push(format!("{at}: '{}' is not a commit", e.commit));
        }
        let doc = docs
            .entry(e.doc.clone())
            .or_insert_with(|| std::fs::read_to_string(root.join(&e.doc)).unwrap_or_default());
        let name = Path::new(&e.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if doc.is_empty() {
            problems.push(format!("{at}: document {} missing or empty", e.doc));
        } else if !doc.contains(&name) {
            problems.push(format!("{at}: {} does not name {name}", e.doc));
        }
        if let Some(p) = command_problem(&root, &verbs, &e.command) {
            problems.push(format!("{at}: {p}"));
        }
    }
    for f in &on_disk {
        if !listed.contains_key(f.as_str()) {
            problems.push(format!(
                "docs/figures/{f}: not in docs/figures/MANIFEST (add the command that made it)"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(entries.len(), on_disk.len());
}

#[test]
fn the_checks_catch_what_they_are_for() {
    let root = root();
    let verbs: BTreeSet<String> = ["measure", "lab", "report"].map(String::from).into();
    let ok = |c: &str| command_problem(&root, &verbs, c);
    assert_eq!(ok("bench/lab-driver.sh"), None);
    assert_eq!(
        ok("sudo RTSCOPE=x python3 bench/vs_cyclictest.py --pairs 2 > out.txt"),
        None
    );
    assert_eq!(
        ok("target/release/rtscope lab run --kernel trace -- measure -D 1s"),
        None
    );
    assert_eq!(
        ok("cargo test -p rtscope-cli --test figures_manifest -- --nocapture"),
        None
    );
    assert!(ok("bench/no-such-script.sh")
        .unwrap()
        .contains("does not exist"));
    assert!(ok("rtscope frobnicate -D 1s")
        .unwrap()
        .contains("'frobnicate' is not an rtscope verb"));
    assert!(ok("rtscope lab run --kernel trace -- frobnicate")
        .unwrap()
        .contains("guest's 'frobnicate'"));
    assert!(ok("cargo test -p rtscope-cli --test no_such_test")
        .unwrap()
        .contains("no test target"));
    assert!(ok("make figures").unwrap().contains("'make'"));

    let e = parse("# c\n\na/b.svg  abc1234  docs/x.md  bench/x.sh -D 1s   # note\n").unwrap();
    assert_eq!(e.len(), 1);
    assert_eq!(
        (
            e[0].path.as_str(),
            e[0].commit.as_str(),
            e[0].doc.as_str(),
            e[0].command.as_str()
        ),
        ("a/b.svg", "abc1234", "docs/x.md", "bench/x.sh -D 1s")
    );
    assert!(parse("a/b.svg  abc1234  docs/x.md\n")
        .unwrap_err()
        .contains("no command"));
}
