//! `taskset run --rt-app FILE` against the real rt-app (Debian's rt-app 1.0): a stop ends rt-app
//! within 100 ms with every loop it logged in the record, and the native engine runs the same
//! small files as rt-app does (event order, relative and shared timers, loops). Real kernel,
//! a few seconds each; CFS threads unless a test says otherwise.

use rtscope_testkit::{bin, need_root};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn have_rt_app() -> bool {
    if rtscope_bench::taskset::rtapp_engine::find_binary().is_some() {
        return true;
    }
    rtscope_testkit::skipped("rt-app is not installed");
    false
}

/// `taskset run --engine ENGINE --rt-app <text>` with `extra` flags, SIGTERM after `term` when
/// given: (time from the signal, or from the start, to the end; the record's `kind.taskset`).
fn run(
    dir: &Path,
    engine: &str,
    text: &str,
    extra: &[&str],
    term: Option<Duration>,
) -> (Duration, Value) {
    let input = dir.join(format!("{engine}.json"));
    std::fs::write(&input, text).unwrap();
    let db = dir.join("results.db");
    let mut child = Command::new(bin!())
        .args(["taskset", "run", "--engine", engine, "--rt-app"])
        .arg(&input)
        .args(["-q", "--json", "--db"])
        .arg(&db)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("taskset run");
    let mut t0 = Instant::now();
    if let Some(after) = term {
        std::thread::sleep(after);
        t0 = Instant::now();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    }
    let out = child.wait_with_output().unwrap();
    let took = t0.elapsed();
    assert!(
        out.status.success(),
        "{engine}: exit {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("the record as JSON");
    (took, v["kind"]["taskset"].clone())
}

/// Per task (rt-app threads sorted by name, native tasks in file order): (jobs, mean response
/// in ms, largest lateness in ms).
fn tasks(t: &Value) -> Vec<(u64, f64, f64)> {
    t["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["jobs"].as_u64().unwrap(),
                x["avg_response_ns"].as_f64().unwrap() / 1e6,
                x["max_lateness_ns"].as_f64().unwrap() / 1e6,
            )
        })
        .collect()
}

#[test]
fn a_stop_ends_rt_app_within_100_ms_with_every_loop_it_logged() {
    need_root!("taskset run sets policies");
    if !have_rt_app() {
        return;
    }
    // One thread inside a 5-s run event (rt-app only looks at its stop flag between events),
    // one logging a loop every 10 ms.
    let text = r#"{"tasks": {
        "fast": {"run": 1000, "timer": {"ref": "t", "period": 10000}},
        "long": {"run": 5000000, "timer": {"ref": "u", "period": 10000000}}},
        "global": {"duration": 5, "default_policy": "SCHED_OTHER", "calibration": 100}}"#;
    let d = tempfile::tempdir().unwrap();
    let (took, t) = run(
        d.path(),
        "rt-app",
        text,
        &[],
        Some(Duration::from_millis(800)),
    );
    assert!(
        took <= Duration::from_millis(100),
        "SIGTERM to exit: {took:?}"
    );
    assert_eq!(t["interrupted"], true);
    let v = &t["rt_app"];
    assert_eq!(v["logs"], "streamed", "{v}");
    let fast = &v["threads"][0];
    assert_eq!(fast["name"], "fast-0");
    // ~80 loops of 10 ms before the stop (rt-app's start-up and a busy machine take some).
    let jobs = fast["jobs"].as_u64().unwrap();
    assert!(jobs >= 30, "loops logged before the stop: {jobs}");
    assert!(
        (9_000.0..=12_000.0).contains(&fast["mean_period_us"].as_f64().unwrap()),
        "{fast}"
    );
    assert_eq!(t["tasks"][0]["jobs"].as_u64(), Some(jobs), "the task table");
}

#[test]
fn the_duration_ends_rt_app_within_a_period_of_d_with_its_logs() {
    need_root!("taskset run sets policies");
    if !have_rt_app() {
        return;
    }
    let text = r#"{"tasks": {
        "fast": {"run": 1000, "timer": {"ref": "t", "period": 10000}},
        "slow": {"run": 1000, "timer": {"ref": "u", "period": 40000}}},
        "global": {"duration": 5, "default_policy": "SCHED_OTHER", "calibration": 100}}"#;
    let d = tempfile::tempdir().unwrap();
    let (took, t) = run(d.path(), "rt-app", text, &["-D", "1s"], None);
    assert!(took < Duration::from_millis(1600), "-D 1s took {took:?}");
    assert_eq!(t["interrupted"], false);
    let th = t["rt_app"]["threads"].as_array().unwrap();
    let jobs: Vec<u64> = th.iter().map(|x| x["jobs"].as_u64().unwrap()).collect();
    assert!((85..=101).contains(&jobs[0]), "fast: {jobs:?}");
    assert!((21..=26).contains(&jobs[1]), "slow: {jobs:?}");
}
