//! `rtscope mbwi`: bad input is refused with exit 2 and one line naming the field or flag and its
//! range, before anything starts (no privileges needed to be refused); a good simulation prints
//! and writes its record.

use std::process::{Command, Output};

fn rtscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(args)
        .output()
        .expect("running rtscope")
}

/// Exit 2 and exactly one stderr line containing every `want`.
fn refused(args: &[&str], want: &[&str]) {
    let o = rtscope(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line expected, got {err}");
    for w in want {
        assert!(lines[0].contains(w), "{args:?}: {:?} lacks {w:?}", lines[0]);
    }
    assert!(
        o.stdout.is_empty(),
        "{args:?}: printed {:?}",
        String::from_utf8_lossy(&o.stdout)
    );
}

const GOOD: &str = r#"{"cpus": 1, "horizon_us": 48000, "tasks": [
  {"name": "a", "runtime_us": 6000, "period_us": 24000,
   "script": [{"lock": "A"}, {"compute_us": 5000}, {"unlock": "A"}]},
  {"name": "b", "runtime_us": 8000, "period_us": 12000, "offset_us": 1000,
   "script": [{"compute_us": 1000}, {"lock": "A"}, {"compute_us": 3000}, {"unlock": "A"}]}]}"#;

fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn bad_task_sets_exit_2_naming_the_field() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &[&str])] = &[
        (
            r#""runtime_us": 6000"#,
            r#""runtime_us": 30000"#,
            &["tasks[0] (a).runtime_us", "1..=period_us"],
        ),
        (
            r#""period_us": 24000,
   "script": [{"lock""#,
            r#""period_us": 24000, "deadline_us": 25000,
   "script": [{"lock""#,
            &["tasks[0] (a).deadline_us: 25000", "runtime_us..=period_us"],
        ),
        (
            r#""period_us": 12000, "offset_us""#,
            r#""period_us": 0, "offset_us""#,
            &["tasks[1] (b).period_us: 0", "out of range"],
        ),
        (
            r#"{"unlock": "A"}]},"#,
            r#"{"unlock": "B"}]},"#,
            &["tasks[0] (a).script[2].unlock", "'B' is not held"],
        ),
        (r#""cpus": 1"#, r#""cpus": 0"#, &["cpus: 0", "1..=64"]),
    ];
    for (i, (from, to, want)) in cases.iter().enumerate() {
        assert!(GOOD.contains(from), "case {i}");
        let f = file(&d, &format!("bad{i}.json"), &GOOD.replacen(from, to, 1));
        refused(&["mbwi", "sim", &f, "--no-store"], want);
    }
    let f = file(&d, "junk.json", "{\"cpus\": 1, ");
    refused(
        &["mbwi", "sim", &f, "--no-store"],
        &["junk.json", "not a task set (JSON)"],
    );
    let f = file(&d, "junk.toml", "cpus = [");
    refused(
        &["mbwi", "sim", &f, "--no-store"],
        &["junk.toml", "not a task set (TOML)"],
    );
    refused(
        &["mbwi", "sim", "/nonexistent/set.json", "--no-store"],
        &["/nonexistent/set.json", "cannot read"],
    );
}

#[test]
fn bad_flags_exit_2() {
    refused(
        &["mbwi", "sim", "--example", "fig9.9"],
        &["--example", "fig4.2"],
    );
    refused(
        &["mbwi", "sim", "--example", "fig4.2", "--protocol", "bwi"],
        &["--protocol"],
    );
    refused(&["mbwi", "run", "--mutex", "futex"], &["--mutex", "pi"]);
    refused(
        &["mbwi", "run", "-D", "0.1s", "--no-store"],
        &["--duration", "200ms"],
    );
    refused(&["mbwi", "run", "-D", "11m", "--no-store"], &["--duration"]);
    refused(
        &["mbwi", "run", "--cpus", "999", "--no-store"],
        &["--cpus", "999"],
    );
    refused(
        &["mbwi", "run", "--tick", "2s", "--no-store"],
        &["--tick", "0ns ..= 1s"],
    );
    refused(
        &["mbwi", "run", "--scenario", "three-cpus"],
        &["--scenario"],
    );
    refused(
        &["mbwi", "overhead", "--iterations", "5", "--no-store"],
        &["--iterations", "1000..=10000000"],
    );
    refused(
        &[
            "mbwi",
            "overhead",
            "--contended-iterations",
            "0",
            "--no-store",
        ],
        &["--contended-iterations", "10..=1000000"],
    );
}

#[test]
fn simulation_prints_and_records() {
    let d = tempfile::tempdir().unwrap();
    let f = file(&d, "set.json", GOOD);
    let svg = d.path().join("g.svg");
    let o = rtscope(&[
        "mbwi",
        "sim",
        &f,
        "--protocol",
        "mbwi",
        "--no-store",
        "--json",
        "-",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    let s = &rec["kind"]["mbwi"]["simulations"][0];
    assert_eq!(s["protocol"], "mbwi");
    assert_eq!(s["name"], "set");
    // b (deadline 13 ms) preempts a at 1 ms, locks A at 2 while a holds it with 4 ms of its
    // critical section left; a finishes it in b's server: b blocks 2–6 ms. The same at 26–30.
    let b = &s["tasks"][1];
    assert_eq!(b["name"], "b");
    assert_eq!(b["max_blocked_us"], 4000);
    assert_eq!(b["jobs"][0]["blocked_us"], 4000);
    assert_eq!(b["jobs"][0]["finish_us"], 9000);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let o = rtscope(&[
        "mbwi",
        "sim",
        "--example",
        "fig4.3",
        "--protocol",
        "mbwi-impl",
        "--no-store",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    let t3 = out
        .lines()
        .find(|l| l.trim_start().starts_with("tau3"))
        .unwrap();
    assert!(
        t3.contains("(independent)") && t3.split_whitespace().nth(2) == Some("1"),
        "{out}"
    );
}
