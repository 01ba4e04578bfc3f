//! One grammar (docs/cli.md): every verb's `--help` spells the shared flags the same way.

use std::process::Command;

fn help(verb: &[&str]) -> String {
    let mut args: Vec<&str> = verb.to_vec();
    args.push("--help");
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(&args)
        .output()
        .expect("rtscope --help");
    assert!(o.status.success(), "{verb:?} --help failed");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The flag's usage as `--help` prints it (`-D, --duration <TIME>`), when the verb has it.
fn spelling(help: &str, flag: &str) -> Option<String> {
    help.lines().map(str::trim).find_map(|l| {
        let head = l.split("  ").next().unwrap_or(l).trim();
        let long = head.split(", ").last().unwrap_or(head);
        (long == flag || long.starts_with(&format!("{flag} "))).then(|| head.to_string())
    })
}

const VERBS: &[&[&str]] = &[
    &["run"],
    &["measure"],
    &["monitor"],
    &["import"],
    &["load"],
    &["trace", "record"],
    &["analyze"],
    &["bound"],
    &["rhealstone"],
    &["sched-scale"],
    &["pdlt"],
    &["taskset", "gen"],
    &["taskset", "check"],
    &["taskset", "run"],
    &["campaign"],
    &["runs"],
    &["show"],
    &["compare"],
    &["report"],
    &["export"],
    &["practise", "test"],
    &["practise", "perf"],
    &["practise", "replay"],
    &["mbwi", "sim"],
    &["mbwi", "run"],
    &["mbwi", "overhead"],
    &["trace", "record"],
    &["lab", "run"],
];

/// Verbs that produce a result: they store it by default and take `--no-store`, `--db`, `--tag`
/// and `-q`.
const PRODUCERS: &[&[&str]] = &[
    &["run"],
    &["load"],
    &["measure"],
    &["monitor"],
    &["import"],
    &["rhealstone"],
    &["sched-scale"],
    &["pdlt"],
    &["taskset", "run"],
    &["practise", "test"],
    &["practise", "perf"],
    &["practise", "replay"],
    &["mbwi", "sim"],
    &["mbwi", "run"],
    &["mbwi", "overhead"],
];

#[test]
fn shared_flags_have_one_spelling() {
    let expected = [
        ("--duration", "-D, --duration <TIME>"),
        ("--db", "--db <PATH|URL>"),
        ("--cpus", "--cpus <LIST>"),
        ("--tag", "--tag <K=V>"),
        ("--json", "--json [<FILE|->]"),
    ];
    let mut bad = Vec::new();
    for v in VERBS {
        let h = help(v);
        for (flag, want) in expected {
            if let Some(got) = spelling(&h, flag) {
                // `-c, --cpus <LIST>` (measure's short form) is the same flag.
                if !got.ends_with(want.trim_start_matches("-D, "))
                    || (flag == "--duration" && got != want)
                {
                    bad.push(format!("{v:?}: {got:?}, expected {want:?}"));
                }
            }
        }
    }
    for v in PRODUCERS {
        let h = help(v);
        for flag in ["--no-store", "--db", "--tag", "--quiet", "--json"] {
            if spelling(&h, flag).is_none() {
                bad.push(format!("{v:?} produces a result but has no {flag}"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// One exit-code table: `rtscope --help` prints it and the README holds the same lines.
#[test]
fn exit_code_table_in_help_and_readme() {
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .arg("--help")
        .output()
        .expect("rtscope --help");
    let help = String::from_utf8_lossy(&o.stdout);
    let table = &help[help.find("Exit codes").expect("exit codes in --help")..];
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    for line in table.lines().filter(|l| !l.trim().is_empty()) {
        assert!(readme.contains(line), "README lacks {line:?}");
    }
    assert_eq!(table.lines().filter(|l| l.starts_with("  ")).count(), 4);
}

/// `--json -` makes stdout one JSON document; `--json FILE` writes the file; in `analyze --json
/// x.rtt` the optional value took the trace, and the error names the new spelling.
#[test]
fn json_flag_means_file_or_stdout() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let ct = d.path().join("ct.txt");
    // cyclictest -q status lines (rt-tests 2.x layout).
    std::fs::write(
        &ct,
        "# /dev/cpu_dma_latency set to 0us\nT: 0 (16875) P:90 I:1000 C:    100 Min:     25 Act:   39 Avg:   40 Max:     140\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rtscope"))
            .args(args)
            .output()
            .expect("rtscope")
    };
    let dbs = db.to_str().unwrap();
    let o = run(&["import", "--db", dbs, "--json", "-", ct.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(rec["kind"]["measurement"]["stats"]["samples"], 100);
    assert_eq!(rec["kind"]["measurement"]["stats"]["max_ns"], 140_000);
    assert_eq!(rec["kind"]["measurement"]["config"]["priority"], 90);
    let file = d.path().join("runs.json");
    for args in [
        vec!["runs", "--db", dbs, "--json", "-"],
        vec!["runs", "--db", dbs, "--json"],
    ] {
        let o = run(&args);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
        assert_eq!(v.as_array().map(Vec::len), Some(1), "{args:?}");
    }
    let o = run(&["runs", "--db", dbs, "--json", file.to_str().unwrap()]);
    assert!(o.status.success() && o.stdout.is_empty());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(v[0]["id"], rec["id"]);
    let o = run(&["analyze", "--json", "x.rtt"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("rtscope analyze x.rtt --json -"), "{e}");
}

/// `rtscope completions SHELL` and `rtscope man` come from the same definitions as `--help`:
/// every verb and the shared flags are in them.
#[test]
fn completions_and_man_page_cover_every_verb() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
            .args(args)
            .output()
            .expect("rtscope");
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    for shell in ["bash", "zsh", "fish"] {
        let c = run(&["completions", shell]);
        for v in VERBS {
            assert!(c.contains(v[0]), "{shell}: no {}", v[0]);
        }
        for flag in ["no-store", "duration", "cpus"] {
            assert!(c.contains(flag), "{shell}: no --{flag}");
        }
    }
    // roff escapes hyphens (`sched\\-scale`).
    let man = run(&["man"]).replace("\\-", "-");
    assert!(
        man.contains(".TH rtscope 1"),
        "{}",
        &man[..man.len().min(200)]
    );
    for v in VERBS {
        assert!(man.contains(v[0]), "man page: no {}", v[0]);
    }
}

/// The loads' choices are typed: `--help` lists them and a typo gets the nearest name; a
/// parametrised policy (`fifo:PRIO`) out of range says why. Refused before anything starts.
#[test]
fn load_choices_are_listed_and_typos_suggested() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
            .args(args)
            .output()
            .expect("rtscope");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    for v in [&["load"][..], &["measure"]] {
        let h = help(v);
        assert!(
            h.contains("[possible values: idle, cpu-cache, hackbench, disk, net, io, exec]"),
            "{v:?}: {h}"
        );
        assert!(
            h.contains("[possible values: other, fifo, fifo:PRIO]"),
            "{v:?}"
        );
    }
    let rows: &[(&[&str], &[&str])] = &[
        (
            &["load", "idle,cpu-cach", "-D", "1s"],
            &["invalid value 'cpu-cach'", "a similar value exists: 'cpu-cache'"],
        ),
        (
            &["measure", "--load", "hackbench,bogus", "-D", "1s"],
            &["invalid value 'bogus' for '--load <KIND[,KIND…]>'", "[possible values: idle,"],
        ),
        (
            &["load", "cpu-cache", "--load-policy", "fifp"],
            &["[possible values: other, fifo, fifo:PRIO]", "a similar value exists: 'fifo'"],
        ),
        (
            &["load", "cpu-cache", "--load-policy", "fifo:100"],
            &["invalid value 'fifo:100' for '--load-policy <POLICY>': expected 'other', 'fifo' or 'fifo:PRIO' with PRIO 1..=99, got 'fifo:100'"],
        ),
        (
            &["load", "io,disk", "-D", "1s"],
            &["rtscope: error: --load: 'disk' overlaps 'io' in 'io,disk' (io = hackbench+disk+net)"],
        ),
    ];
    for (args, wants) in rows {
        let (code, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        for w in *wants {
            assert!(err.contains(w), "{args:?}: {err} lacks {w}");
        }
    }
}

/// A renamed flag's old spelling still works, with one notice on stderr naming the new one: the
/// old and the new spelling end the same way (here: the same refusal of a bad value, exit 2).
#[test]
fn old_spellings_still_work_with_a_notice() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("none.db").display().to_string();
    let rows: &[(&[&str], &[&str], &str)] = &[
        (
            &["measure", "--threshold", "0"],
            &["measure", "--record-above", "0"],
            "--record-above",
        ),
        (
            &["noise", "--threshold=x"],
            &["noise", "--min-noise=x"],
            "--min-noise",
        ),
        (
            &["noise", "-p", "x"],
            &["noise", "--period", "x"],
            "--period",
        ),
        (
            &["compare", "--db", &db, "--threshold=x", "a"],
            &["compare", "--db", &db, "--fail-above-pct=x", "a"],
            "--fail-above-pct",
        ),
        (
            &["analyze", "--top", "x", "none.rtt"],
            &["analyze", "--worst", "x", "none.rtt"],
            "--worst",
        ),
        (
            &["trace", "record", "--keep", "some"],
            &["trace", "record", "--trace-keep", "some"],
            "--trace-keep",
        ),
        (
            &["rhealstone", "--cpus", "x"],
            &["rhealstone", "--cpu", "x"],
            "--cpu",
        ),
        (&["pdlt", "--cpus", "x"], &["pdlt", "--cpu", "x"], "--cpu"),
        (
            &["sched-scale", "--cpus", "x"],
            &["sched-scale", "--cpu", "x"],
            "--cpu",
        ),
        (
            &["rhealstone", "--max-seconds", "0"],
            &["rhealstone", "--timeout", "0"],
            "--timeout",
        ),
        (
            &["pdlt", "--max-seconds", "0"],
            &["pdlt", "--timeout", "0"],
            "--timeout",
        ),
        (
            &["sched-scale", "--sleep-ms", "0"],
            &["sched-scale", "--sleep", "0ms"],
            "--sleep",
        ),
        (
            &["taskset", "gen", "--cpus", "x"],
            &["taskset", "gen", "--cpu-count", "x"],
            "--cpu-count",
        ),
    ];
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
            .args(args)
            .env("XDG_DATA_HOME", d.path())
            .output()
            .expect("rtscope");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let mut bad = Vec::new();
    for (old, new, flag) in rows {
        let (code_old, err_old) = run(old);
        let (code_new, err_new) = run(new);
        let mut lines = err_old.lines().filter(|l| !l.trim().is_empty());
        let notice = lines.next().unwrap_or("");
        let rest: Vec<&str> = lines.collect();
        if !(notice.starts_with("rtscope: warning: ")
            && notice.contains(&format!("is deprecated, use {flag}")))
        {
            bad.push(format!("{old:?}: no notice naming {flag}: {err_old}"));
        }
        if code_old != code_new || rest.join("\n") != err_new.trim_end() {
            bad.push(format!(
                "{old:?} ({code_old:?}: {err_old}) ends unlike {new:?} ({code_new:?}: {err_new})"
            ));
        }
        if err_new.contains("deprecated") || code_new != Some(2) || !err_new.contains(flag) {
            bad.push(format!("{new:?}: exit {code_new:?}, {err_new}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
