//! `taskset run --rt-app FILE` against the real rt-app (Debian's rt-app 1.0): a stop ends rt-app
//! within 100 ms with every loop it logged in the record, and the native engine runs the same
//! small files as rt-app does (event order, relative and shared timers, loops). Real kernel,
//! a few seconds each. The comparisons run their threads SCHED_FIFO (a 1 % load) so that a busy
//! machine's CFS delays do not blur what the engines do.

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
    let child = Command::new(bin!())
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
    validate(&v);
    (took, v["kind"]["taskset"].clone())
}

/// The record matches docs/schema (its `kind.taskset.rt_app` has a schema of its own).
fn validate(v: &Value) {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/run-record.schema.json");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(root).expect("schema file"))
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

/// Per task (rt-app threads sorted by name, native tasks in file order): (jobs, mean response
/// in ms, largest lateness in ms).
/// Per thread: jobs, mean response (ms) and largest lateness (ms).
type Table = Vec<(u64, f64, f64)>;

fn tasks(t: &Value) -> Table {
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

/// The same file under `--engine rt-app` (rt-app's own view) and `--engine native`: the task
/// tables, in file order (the tests name threads in alphabetical file order).
fn both(text: &str, d: &str) -> (Table, Table) {
    let dir = tempfile::tempdir().unwrap();
    let (_, r) = run(dir.path(), "rt-app", text, &["-D", d], None);
    let (_, n) = run(dir.path(), "native", text, &["-D", d], None);
    (tasks(&r), tasks(&n))
}

/// Job counts within ±2 of rt-app's: rt-app's start-up (parsing, creating its threads) falls
/// inside rtscope's window and costs it up to one job, and the native run counts the job
/// released at its t0.
const JOBS_TOLERANCE: u64 = 2;

fn close(a: u64, b: u64) -> bool {
    a.abs_diff(b) <= JOBS_TOLERANCE
}

#[test]
fn two_threads_sharing_a_timer_are_each_released_every_other_period_as_in_rt_app() {
    need_root!("taskset run sets policies");
    if !have_rt_app() {
        return;
    }
    // One 100-ms "tick" moved on by each thread's job: each is released every 200 ms, 15 jobs
    // in 3 s (30 if the ref were ignored).
    let text = r#"{"tasks": {
        "a": {"run": 100, "timer": {"ref": "tick", "period": 100000}},
        "b": {"run": 100, "timer": {"ref": "tick", "period": 100000}}},
        "global": {"duration": 3, "default_policy": "SCHED_OTHER", "calibration": 100}}"#;
    let (r, n) = both(text, "3s");
    for (i, (x, y)) in r.iter().zip(&n).enumerate() {
        assert!((13..=16).contains(&x.0), "rt-app thread {i}: {r:?}");
        assert!(close(x.0, y.0), "thread {i}: rt-app {r:?}, native {n:?}");
    }
}

#[test]
fn a_timer_without_mode_is_relative_and_relative_is_accepted_as_in_rt_app() {
    need_root!("taskset run sets policies");
    if !have_rt_app() {
        return;
    }
    // A 15-ms job on a 10-ms timer: relative, each release moves to the job's end (lateness
    // stays ~5 ms); absolute, the grid stays and the lateness grows by 5 ms a job (~300 ms
    // after 1 s). The run is tiny so the two engines' calibrations do not matter.
    let file = |mode: &str| {
        format!(
            r#"{{"tasks": {{"a": {{"policy": "SCHED_FIFO", "priority": 10, "run": 100, "sleep": 15000,
                "timer": {{"ref": "t", "period": 10000{mode}}}}}}},
                "global": {{"duration": 1, "default_policy": "SCHED_OTHER", "calibration": 100}}}}"#
        )
    };
    for (mode, relative) in [
        ("", true),
        (r#", "mode": "relative""#, true),
        (r#", "mode": "absolute""#, false),
    ] {
        let (r, n) = both(&file(mode), "1s");
        assert!((55..=68).contains(&r[0].0), "{mode:?}: rt-app {r:?}");
        assert!(
            close(r[0].0, n[0].0),
            "{mode:?}: rt-app {r:?}, native {n:?}"
        );
        for (engine, lateness_ms) in [("rt-app", r[0].2), ("native", n[0].2)] {
            if relative {
                assert!(lateness_ms < 20.0, "{mode:?} {engine}: {r:?} {n:?}");
            } else {
                assert!(lateness_ms > 100.0, "{mode:?} {engine}: {r:?} {n:?}");
            }
        }
    }
}

#[test]
fn loops_follow_rt_app() {
    need_root!("taskset run sets policies");
    if !have_rt_app() {
        return;
    }
    // A thread `loop` without phases is its one phase's loop, the thread repeating forever
    // (rt-app 1.0): ~100 jobs of a 10-ms timer in 1 s.
    let forever = r#"{"tasks": {"a": {"policy": "SCHED_FIFO", "priority": 10, "loop": 3, "run": 100, "timer": {"ref": "t", "period": 10000}}},
        "global": {"duration": 1, "default_policy": "SCHED_OTHER", "calibration": 100}}"#;
    let (r, n) = both(forever, "1s");
    assert!((90..=101).contains(&r[0].0), "rt-app {r:?}");
    assert!(close(r[0].0, n[0].0), "rt-app {r:?}, native {n:?}");
    // A phase of 5 loops, the thread 2 times: 10 jobs, then the thread ends (tutorial,
    // "loop" of a thread and of a phase).
    let bounded = r#"{"tasks": {"a": {"policy": "SCHED_FIFO", "priority": 10, "loop": 2, "phases": {"p": {"loop": 5, "run": 100,
        "timer": {"ref": "t", "period": 10000}}}}},
        "global": {"duration": 1, "default_policy": "SCHED_OTHER", "calibration": 100}}"#;
    let (r, n) = both(bounded, "1s");
    assert_eq!((r[0].0, n[0].0), (10, 10), "rt-app {r:?}, native {n:?}");
}

#[test]
fn events_run_in_file_order_as_in_rt_app() {
    need_root!("SCHED_FIFO threads");
    if !have_rt_app() {
        return;
    }
    // On CPU 0, every 200 ms: "hi" (FIFO 50) spins 40 ms from 35 ms on (`delay`); "lo" (FIFO
    // 40), released at 0, spins 25 ms and sleeps 40 ms, or sleeps then spins. Run first: lo's
    // spin ends before hi's release and its sleep ends inside hi's spin, so lo completes when hi
    // does (~75 ms). Sleep first: lo wakes inside hi's spin and spins after it (~100 ms). The
    // spins are `runtime` (wall-clock time): a calibrated `run` stretches on a busy machine (by
    // half here with builds beside it), which can push lo's spin past hi's release and erase the
    // difference. The period leaves room for either response.
    let file = |lo: &str| {
        format!(
            r#"{{"tasks": {{
            "hi": {{"policy": "SCHED_FIFO", "priority": 50, "cpus": [0], "delay": 35000, "runtime": 40000,
                   "timer": {{"ref": "t", "period": 200000}}}},
            "lo": {{"policy": "SCHED_FIFO", "priority": 40, "cpus": [0], {lo},
                   "timer": {{"ref": "u", "period": 200000}}}}}},
            "global": {{"duration": 2, "calibration": 15}}}}"#
        )
    };
    let (r1, n1) = both(&file(r#""sleep": 40000, "runtime": 25000"#), "2s");
    let (r2, n2) = both(&file(r#""runtime": 25000, "sleep": 40000"#), "2s");
    for (engine, a, b) in [("rt-app", &r1, &r2), ("native", &n1, &n2)] {
        println!("{engine}: sleep-then-run {a:?}, run-then-sleep {b:?}");
        // lo's mean response (ms): sleep first is later by about lo's spin (25 ms; at least
        // 12: rt-app starts its threads a few ms apart, which blurs the release of hi).
        assert!(
            a[1].1 - b[1].1 > 12.0,
            "{engine}: sleep-then-run {a:?}, run-then-sleep {b:?}"
        );
    }
}

/// The kernel's view beside rt-app's own: every rt-app thread paired with its task by log
/// index, its wake-ups counted from the scheduler's tracepoints. A loop that sleeps once agrees
/// with rt-app's job count; a loop with a `sleep` before its timer wakes twice per job, and the
/// record says so.
#[test]
fn the_kernels_view_of_rt_apps_threads_agrees_with_its_logs() {
    need_root!("taskset run sets policies; the watch attaches eBPF programs");
    if !have_rt_app() {
        return;
    }
    if let Err(e) = rtscope_trace::watch::available() {
        rtscope_testkit::skipped(format_args!("the watch's eBPF programs cannot load: {e}"));
        return;
    }
    let text = r#"{"tasks": {
        "once": {"policy": "SCHED_FIFO", "priority": 10, "run": 1000, "timer": {"ref": "t", "period": 10000}},
        "twice": {"policy": "SCHED_FIFO", "priority": 11, "run": 500, "sleep": 3000,
                  "timer": {"ref": "u", "period": 10000}}},
        "global": {"duration": 2, "calibration": 15}}"#;
    let dir = tempfile::tempdir().unwrap();
    let (_, t) = run(dir.path(), "rt-app", text, &["-D", "2s"], None);
    let v = &t["rt_app"];
    let pid = v["pid"].as_u64().unwrap();
    let kernel = &v["kernel"];
    assert_eq!(kernel["tgids"], serde_json::json!([pid]), "{kernel}");
    let rows = v["agreement"].as_array().expect("agreement rows");
    assert_eq!(rows.len(), 2, "{v}");
    let row = |name: &str| rows.iter().find(|r| r["name"] == name).expect(name).clone();
    let once = row("once-0");
    let twice = row("twice-1");
    for r in [&once, &twice] {
        // Each paired with a task of rt-app's own process, not its main thread.
        let tid = r["tid"].as_u64().expect("tid");
        assert_ne!(tid, pid);
        assert!(r["jobs"].as_u64().unwrap() >= 150, "{r}");
    }
    assert_eq!(once["agree"], true, "{once}");
    let (jobs, act) = (
        twice["jobs"].as_u64().unwrap(),
        twice["activations"].as_u64().unwrap() + twice["unseen_activations"].as_u64().unwrap(),
    );
    // Two wake-ups per job, give or take the run's edges (each at most 2 per edge loop).
    assert!(act.abs_diff(2 * jobs) <= 6, "two wake-ups per job: {twice}");
    assert_eq!(twice["agree"], false);
    assert!(
        twice["why"]
            .as_str()
            .unwrap()
            .starts_with("2.0 wake-ups per job"),
        "{twice}"
    );
}
