//! Real-kernel tests of the tail model and `--until-stable` (root, a few seconds each).

use rtscope_testkit::{bin, need_root, read_json, tmp};
use std::path::Path;
use std::process::Command;

fn validate(v: &serde_json::Value) {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/run-record.schema.json");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root).expect("schema file"))
            .expect("schema json");
    let schema = jsonschema::JSONSchema::options()
        .compile(&s)
        .expect("schema compiles");
    let msgs: Vec<String> = match schema.validate(v) {
        Ok(()) => Vec::new(),
        Err(errs) => errs
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect(),
    };
    assert!(
        msgs.is_empty(),
        "record does not match docs/schema: {msgs:?}"
    );
}

#[test]
fn until_stable_refuses_bad_input_with_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--until-stable", "--stable-tolerance", "0", "-D", "5s"],
            "--stable-tolerance: 0 is out of range (0 < x < 1",
        ),
        (
            &["--until-stable", "--stable-tolerance", "1", "-D", "5s"],
            "--stable-tolerance: 1 is out of range (0 < x < 1",
        ),
        (
            &["--until-stable", "--stable-tolerance", "-0.5", "-D", "5s"],
            "--stable-tolerance: -0.5 is out of range",
        ),
        (
            &["--until-stable"],
            "--until-stable: the run has no end without --max-duration",
        ),
        (
            &["--max-duration", "5s"],
            "--max-duration: only with --until-stable",
        ),
    ];
    for (extra, want) in cases {
        let out = Command::new(bin!())
            .args(["measure", "--no-store", "-q"])
            .args(*extra)
            .output()
            .expect("spawn rtscope");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert_eq!(
            err.lines().filter(|l| !l.trim().is_empty()).count(),
            1,
            "{extra:?}: one line: {err}"
        );
    }
}

/// A few seconds are far too few block maxima: the run ends at --max-duration, the record says
/// so, the tail has no numbers and one warning says how many maxima a fit needs.
#[test]
fn until_stable_short_run_ends_at_max_duration_and_says_why() {
    need_root!("SCHED_FIFO, mlockall");
    let d = tmp();
    let json = d.path().join("r.json");
    let out = Command::new(bin!())
        .args([
            "measure",
            "--cpus",
            "0",
            "--until-stable",
            "--stable-window",
            "1s",
            "--stable-tolerance",
            "0.2",
            "--max-duration",
            "3s",
            "--no-store",
            "-q",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("spawn rtscope");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&json);
    validate(&v);
    let m = &v["kind"]["measurement"];
    assert_eq!(m["stable"]["criterion"], "max_duration", "{}", m["stable"]);
    assert_eq!(m["stable"]["window_s"], 1.0);
    let cpu = &m["tail"]["cpus"][0];
    assert_eq!(cpu["cpu"], 0);
    assert!(
        cpu["blocks"].as_u64().is_some_and(|b| (2..=4).contains(&b)),
        "{cpu}"
    );
    assert_eq!(cpu["needed_blocks"], 40);
    assert!(cpu["gev"].is_null() && cpu["levels"].as_array().is_some_and(|l| l.is_empty()));
    let codes: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert!(codes.contains(&"tail_few_maxima"), "{codes:?}");
}

/// A stored run long enough for a fit (60 one-second blocks): the verdict is in the record and the
/// summary, with every level's interval and the checks.
#[test]
fn a_minute_gives_a_tail_verdict() {
    need_root!("SCHED_FIFO, mlockall");
    let d = tmp();
    let json = d.path().join("r.json");
    let out = Command::new(bin!())
        // Stored (the default): its checkpoints stream the samples the tail model reads.
        .args(["measure", "--cpus", "0", "-D", "62s", "-q", "--db"])
        .arg(d.path().join("r.db"))
        .arg("--json")
        .arg(&json)
        .output()
        .expect("spawn rtscope");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&json);
    validate(&v);
    let cpu = &v["kind"]["measurement"]["tail"]["cpus"][0];
    assert!(cpu["blocks"].as_u64().is_some_and(|b| b >= 40), "{cpu}");
    assert!(cpu["gev"].is_object(), "{cpu}");
    assert_eq!(cpu["levels"].as_array().map(Vec::len), Some(6));
    assert_eq!(cpu["checks"].as_array().map(Vec::len), Some(3));
    assert!(text.contains("tail model (GEV on block maxima"), "{text}");
    assert!(text.contains("tail CPU 0"), "{text}");
}
