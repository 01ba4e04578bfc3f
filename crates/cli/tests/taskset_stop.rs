//! `taskset run` stops on `-D`, SIGINT and SIGTERM within one period and at most 100 ms, even in
//! the middle of a job far longer than the run (the busy loop looks at the stop flag and the
//! clock about every millisecond), and the partial record is stored each time. Real kernel,
//! seconds each; CFS threads so the machine is not held.

use rtscope_testkit::{bin, need_root};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One task of C = 5 s every 10 s.
const SET: &str = r#"{"schema_version": 1, "tasks": [
    {"id": 0, "wcet_ns": 5000000000, "period_ns": 10000000000, "deadline_ns": 10000000000}]}"#;

/// The same as an rt-app file: a 5-s run on a 10-s timer, CFS.
const RT_APP: &str = r#"{
    "tasks": {"long": {"run": 5000000, "timer": {"ref": "t", "period": 10000000}}},
    "global": {"duration": 3, "default_policy": "SCHED_OTHER"}
}"#;

fn runs(db: &Path) -> Vec<serde_json::Value> {
    let out = Command::new(bin!())
        .args(["runs", "--json", "--db"])
        .arg(db)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("runs --json");
    v.as_array().cloned().unwrap_or_default()
}

/// `taskset run` on `input` (a set, or an rt-app file with `rt_app`), with `extra` flags,
/// signalled with `signal` after `after` when given: the wall time and the stored runs.
fn run(
    dir: &Path,
    rt_app: Option<&str>,
    extra: &[&str],
    signal: Option<(i32, Duration)>,
) -> (Duration, Vec<serde_json::Value>) {
    let input = dir.join(if rt_app.is_some() {
        "long-rtapp.json"
    } else {
        "long-set.json"
    });
    std::fs::write(&input, if rt_app.is_some() { RT_APP } else { SET }).unwrap();
    let db = dir.join(format!("results-{}.db", rand_suffix()));
    let mut cmd = Command::new(bin!());
    cmd.args(["taskset", "run"]);
    // CFS (the rt-app file's threads are SCHED_OTHER by its default_policy).
    cmd.args(["--policy", "other"]);
    if let Some(engine) = rt_app {
        cmd.args(["--engine", engine, "--rt-app"]);
    }
    cmd.arg(&input)
        .args(["--cpus", "0", "-q", "--db"])
        .arg(&db)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("taskset run");
    if let Some((sig, after)) = signal {
        std::thread::sleep(after);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
    }
    let status = child.wait().unwrap();
    let took = t0.elapsed();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "exit {status}: {err}");
    (took, runs(&db))
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[test]
fn a_long_job_ends_at_the_duration() {
    need_root!("taskset run pins and locks its threads");
    let d = tempfile::tempdir().unwrap();
    for rt_app in [None, Some("native")] {
        let (took, stored) = run(d.path(), rt_app, &["-D", "1s"], None);
        assert!(
            took < Duration::from_millis(1200),
            "{rt_app:?}: -D 1s with a 5-s job took {took:?}"
        );
        assert_eq!(stored.len(), 1, "the record is stored");
    }
}

#[test]
fn sigterm_and_sigint_end_a_long_job() {
    need_root!("taskset run pins and locks its threads");
    let d = tempfile::tempdir().unwrap();
    let mut cases = vec![
        (None, libc::SIGTERM),
        (Some("native"), libc::SIGTERM),
        (None, libc::SIGINT),
    ];
    // The real rt-app is stopped too (killed when its run event does not end in time).
    if rtscope_bench::taskset::rtapp_engine::find_binary().is_some() {
        cases.push((Some("rt-app"), libc::SIGTERM));
    } else {
        rtscope_testkit::skipped("the rt-app case: rt-app is not installed");
    }
    for (rt_app, sig) in cases {
        let (took, stored) = run(
            d.path(),
            rt_app,
            &[],
            Some((sig, Duration::from_millis(500))),
        );
        assert!(
            took < Duration::from_millis(700),
            "{rt_app:?}, signal {sig}: took {took:?}"
        );
        assert_eq!(stored.len(), 1, "the record is stored");
        assert_eq!(stored[0]["state"], "interrupted", "{:?}", stored[0]);
    }
}
