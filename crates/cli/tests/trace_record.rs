//! `rtscope trace record` stores a run like every producing verb: a RunRecord whose `trace_file`
//! is the written `.rtt` (absolute) and whose `bench` holds the capture's summary; `--no-store`
//! stores nothing; `--json -` prints the record and nothing else on stdout.

use rtscope_testkit::{need_root, tmp};
use std::path::Path;
use std::process::{Command, Output};

fn rtscope(args: &[&str], data_home: &Path) -> Output {
    Command::new(rtscope_testkit::bin!())
        .args(args)
        // A store that is not given lands in the test's directory, never the user's.
        .env("XDG_DATA_HOME", data_home)
        .output()
        .expect("running rtscope")
}

fn ok(args: &[&str], data_home: &Path) -> Output {
    let o = rtscope(args, data_home);
    assert!(
        o.status.success(),
        "{args:?}: exit {:?}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

/// The stored runs of `db`.
fn stored(db: &Path, data_home: &Path) -> Vec<serde_json::Value> {
    let o = ok(
        &["runs", "--db", db.to_str().unwrap(), "--json", "-"],
        data_home,
    );
    json(&o)
        .as_array()
        .expect("runs --json is an array")
        .clone()
}

/// The record's capture summary and trace file, as every form of the record must carry them.
fn check_record(rec: &serde_json::Value) {
    assert_eq!(rec["verb"], "trace", "{rec}");
    let file = rec["trace_file"].as_str().expect("trace_file");
    assert!(Path::new(file).is_absolute(), "{file}");
    assert!(Path::new(file).is_file(), "{file} does not exist");
    let d = &rec["kind"]["trace_record"];
    assert!(d.is_object(), "{rec}");
    assert!(
        ["bpf", "tracefs"].contains(&d["mechanism"].as_str().unwrap()),
        "{d}"
    );
    let events = d["events"].as_u64().expect("events");
    let per_kind: u64 = d["events_per_kind"]
        .as_object()
        .expect("events_per_kind")
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(per_kind, events, "{d}");
    let lost = d["lost_events"].as_u64().expect("lost_events");
    let warned = rec["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["code"] == "lost_events");
    assert_eq!(lost > 0, warned, "lost {lost}: {}", rec["warnings"]);
    let secs = d["duration_s"].as_f64().expect("duration_s");
    assert!(secs > 0.5 && secs < 30.0, "duration_s {secs}");
    assert!(d["file_bytes"].as_u64().unwrap() > 0, "{d}");
}

#[test]
fn a_capture_is_stored_pointing_at_its_trace() {
    need_root!("trace record needs tracefs or eBPF");
    let d = tmp();
    let db = d.path().join("tmp.db");
    let trace = d.path().join("t.rtt");
    let o = ok(
        &[
            "trace",
            "record",
            "-D",
            "1s",
            "--cpus",
            "0",
            "-o",
            trace.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--tag",
            "case=stored",
        ],
        d.path(),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(" events in "), "{out}");
    let runs = stored(&db, d.path());
    assert_eq!(runs.len(), 1, "{runs:?}");
    let id = runs[0]["id"].as_str().unwrap();
    let rec = json(&ok(
        &["show", id, "--db", db.to_str().unwrap(), "--json", "-"],
        d.path(),
    ));
    check_record(&rec);
    assert_eq!(rec["tags"]["case"], "stored");
    let page = ok(&["show", id, "--db", db.to_str().unwrap()], d.path());
    let page = String::from_utf8_lossy(&page.stdout);
    assert!(
        page.contains("\ncapture   ") && page.contains("\ntrace     /"),
        "{page}"
    );
    assert_eq!(
        Path::new(rec["trace_file"].as_str().unwrap()),
        trace.canonicalize().unwrap()
    );
}

#[test]
fn no_store_stores_nothing_and_json_prints_the_record() {
    need_root!("trace record needs tracefs or eBPF");
    let d = tmp();
    let db = d.path().join("tmp.db");
    let trace = d.path().join("t.rtt");
    let o = ok(
        &[
            "trace",
            "record",
            "-D",
            "1s",
            "--cpus",
            "0",
            "-o",
            trace.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--no-store",
            "--json",
            "-",
            "-q",
        ],
        d.path(),
    );
    // stdout is the record alone.
    check_record(&json(&o));
    assert!(trace.is_file());
    // Not even created (`runs` refuses a database that does not exist).
    assert!(!db.exists() || stored(&db, d.path()).is_empty());
    // Nor did it go to the default database.
    assert!(!d.path().join("rtscope/results.db").exists());
}

#[test]
fn output_flags_are_refused_before_the_capture() {
    // No privileges needed: bad output flags are refused before the kernel is touched.
    let d = tmp();
    let trace = d.path().join("t.rtt");
    let o = rtscope(
        &[
            "trace",
            "record",
            "-D",
            "1s",
            "-o",
            trace.to_str().unwrap(),
            "--tag",
            "nokv",
            "--no-store",
        ],
        d.path(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--tag"), "{err}");
    assert!(!trace.exists());
    let help =
        String::from_utf8_lossy(&ok(&["trace", "record", "--help"], d.path()).stdout).into_owned();
    for flag in [
        "--no-store",
        "--db <PATH|URL>",
        "--tag <K=V>",
        "--quiet",
        "--json [<FILE|->]",
    ] {
        assert!(help.contains(flag), "trace record --help lacks {flag}");
    }
}

/// Where the kernel has no preemptirq events (this host, distribution kernels), asking for them
/// through tracefs exits 2 with one line saying why — never a capture of nothing. Where it has
/// them the lab test (`lab_thread_vars`) measures instead.
#[test]
fn preemptirq_through_tracefs_is_refused_where_the_kernel_has_none() {
    if Path::new("/sys/kernel/tracing/events/preemptirq").exists() {
        return rtscope_testkit::skipped(format_args!(
            "this kernel has preemptirq events (tests/lab_thread_vars.rs measures them)"
        ));
    }
    let d = tmp();
    let out = d.path().join("pi.rtt");
    for args in [
        vec!["trace", "thread-vars", "--mechanism", "tracefs", "-D", "1s"],
        vec![
            "trace",
            "record",
            "--preemptirq",
            "-D",
            "1s",
            "--no-store",
            "-o",
            out.to_str().unwrap(),
        ],
    ] {
        let o = rtscope(&args, d.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("CONFIG_PREEMPTIRQ_TRACEPOINTS") || err.contains("tracefs"),
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    assert!(!out.exists(), "no trace file for a refused capture");
    // The eBPF capture has no preemptirq programs: refused whatever the kernel.
    let o = rtscope(
        &[
            "trace",
            "record",
            "--preemptirq",
            "--mechanism",
            "bpf",
            "-D",
            "1s",
            "--no-store",
            "-o",
            out.to_str().unwrap(),
        ],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--mechanism tracefs"));
}
