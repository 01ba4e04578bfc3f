//! The libraries of `trace record`, `analyze`, the verbs that read the store, `mbwi` and the
//! benchmarks name a refused value by its typed field; the user still reads the flag they typed:
//! exit 2, one line, nothing started.

use rtscope_testkit::{bin, run_measured, Measured};
use std::process::Command;
use std::time::Duration;

fn run(args: &[&str]) -> Measured {
    let mut c = Command::new(bin!());
    c.args(args);
    run_measured(c, Duration::from_secs(20))
}

/// Exit 2 with exactly one stderr line holding `want` and no field token.
fn refused(args: &[&str], want: &str) {
    let o = run(args);
    let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(o.code, 2, "{args:?}: exit {}: {}", o.code, o.stderr);
    assert_eq!(lines.len(), 1, "{args:?}: one line expected:\n{}", o.stderr);
    assert!(
        lines[0].contains(want),
        "{args:?}: {want:?} not in {}",
        lines[0]
    );
    assert!(
        !lines[0].contains('⟨'),
        "{args:?}: a field token left: {}",
        lines[0]
    );
}

#[test]
fn trace_record_names_its_flags() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("t.rtt");
    let out = out.to_str().unwrap();
    let base = ["trace", "record", "-D", "1s", "--no-store", "-o", out];
    refused(
        &[&base[..], &["--trace-keep", "relevant", "--preemptirq"]].concat(),
        "--trace-keep relevant: --preemptirq needs every switch (the thread analysis follows each one): use --trace-keep all or leave --trace-keep out",
    );
    refused(
        &[&base[..], &["--cpus", "4095"]].concat(),
        "--cpus: CPU 4095 is not online",
    );
    refused(
        &[
            "trace",
            "record",
            "-D",
            "1s",
            "--no-store",
            "-o",
            "/proc/x.rtt",
        ],
        "--output /proc/x.rtt: ",
    );
}

#[test]
fn analyze_names_its_flags() {
    refused(
        &["analyze", "/nonexistent/x.rtt", "--worst", "10001"],
        "--worst: must be 0..=10000, got 10001",
    );
    refused(
        &["analyze", "/nonexistent/x.rtt", "--gap-threshold", "0us"],
        "'--gap-threshold <TIME>': 0us is out of range (1us ..= 1s)",
    );
    refused(
        &["analyze", "--json", "x.rtt"],
        "FILE: missing (--json took x.rtt as its output): write `rtscope analyze x.rtt --json -`",
    );
}

/// The analysis's own warning names the flags too, in its text and in its JSON.
#[test]
fn analyze_warns_with_the_flags() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../session/tests/corpus/rtt/record-1s.rtt"
    );
    let o = run(&["analyze", file, "--gap-threshold", "5us"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let want = "--gap-threshold 5us: below the relevance filter's 10 us split";
    assert!(
        o.stdout.contains(&format!("warning: {want}")),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("(record with --trace-keep all for finer gaps)"),
        "{}",
        o.stdout
    );
    let o = run(&["analyze", file, "--gap-threshold", "5us", "--json", "-"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains(want) && !o.stdout.contains('⟨'));
}

#[test]
fn the_store_readers_name_their_flags() {
    let none = "/nonexistent/none.db";
    refused(
        &["runs", "--db", none, "--policy", "batch"],
        "--policy: 'batch' is not one of fifo, rr, other, deadline",
    );
    refused(
        &[
            "compare",
            "a",
            "b",
            "--db",
            none,
            "--metric",
            "p99",
            "--fail-above-pct=-1",
        ],
        "--fail-above-pct: must be 0..=10000 percent, got -1",
    );
    refused(
        &["export", "a", "--db", none, "-o", "/proc/x.json"],
        "-o /proc/x.json: ",
    );
}

#[test]
fn mbwi_and_the_benchmarks_name_their_output_flags() {
    refused(
        &[
            "mbwi",
            "sim",
            "--example",
            "fig4.2",
            "--no-store",
            "--svg",
            "/proc/x.svg",
        ],
        "--svg /proc/x.svg: ",
    );
    refused(
        &[
            "mbwi",
            "sim",
            "--example",
            "fig4.2",
            "--no-store",
            "--figure-dir",
            "/proc/x",
        ],
        "--figure-dir /proc/x: ",
    );
    refused(
        &["sched-scale", "--no-store", "--csv", "/proc/x.csv"],
        "--csv /proc/x.csv: ",
    );
}

/// `export --format`'s help names the flag a bound figure needs.
#[test]
fn export_help_names_the_bound_flag() {
    let o = run(&["export", "--help"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("(--bound runs)"), "{}", o.stdout);
    assert!(!o.stdout.contains('⟨'), "{}", o.stdout);
}
