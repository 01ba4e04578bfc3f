//! Real-kernel tests of what long runs need (root, seconds each): checkpoints that survive
//! SIGKILL, a store that fails mid-run, the SIGUSR2 snapshot, and memory that does not grow with
//! the run's length.

use rtscope_testkit::{bin, need_root};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn runs_json(db: &Path) -> serde_json::Value {
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
    serde_json::from_slice(&out.stdout).expect("runs --json")
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn checkpoint_survives_sigkill() {
    need_root!("SCHED_FIFO, mlockall, tracing");
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    let mut child = Command::new(bin!())
        .args([
            "measure",
            "-D",
            "60s",
            "-q",
            "--trace",
            "--checkpoint",
            "2s",
            "--db",
        ])
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first checkpoint lands about 2 s after the threads start.
    wait_for("the first checkpoint", Duration::from_secs(20), || {
        db.exists() && runs_json(&db).as_array().is_some_and(|a| !a.is_empty())
    });
    // A second one, so the kill falls between checkpoints.
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let status = child.wait().unwrap();
    assert!(!status.success());
    let runs = runs_json(&db);
    let r = &runs.as_array().unwrap()[0];
    let state = r["state"].as_str().unwrap();
    assert!(state.starts_with("checkpoint "), "state {state}");
    let samples = r["samples"].as_i64().unwrap();
    // ≥ 2 checkpoints of 2 s on every CPU at 1 kHz (host stalls may cost a few).
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as i64;
    assert!(samples >= 3_500 * ncpu, "samples counted: {samples}");
    let id = r["id"].as_str().unwrap();
    let show = Command::new(bin!())
        .args(["show", id, "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("interrupted (last checkpoint"),
        "show marks the dead run: {text}"
    );
    let list = Command::new(bin!())
        .args(["runs", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains("interrupted (last checkpoint"));
    // The interim record carries the explanation so far.
    let json = Command::new(bin!())
        .args(["show", id, "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let rec: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(rec["end_reason"], "checkpoint");
    assert!(rec["checkpoint"]["number"].as_u64().unwrap() >= 2);
    assert!(
        rec["kind"]["measurement"]["attribution"]["samples_attributed"]
            .as_u64()
            .unwrap()
            > 1000
    );
}

#[test]
fn store_failing_mid_run_keeps_the_run() {
    need_root!("SCHED_FIFO, mlockall, tracing");
    let d = tempfile::tempdir().unwrap();
    let dbdir = d.path().join("db");
    let db = dbdir.join("results.db");
    let xdg = d.path().join("xdg");
    let child = Command::new(bin!())
        .args(["measure", "-D", "6s", "-q", "--checkpoint", "1s", "--db"])
        .arg(&db)
        .env("XDG_DATA_HOME", &xdg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the first checkpoint", Duration::from_secs(20), || {
        db.exists() && runs_json(&db).as_array().is_some_and(|a| !a.is_empty())
    });
    // The database's directory becomes a plain file: every later open fails.
    std::fs::remove_dir_all(&dbdir).unwrap();
    std::fs::write(&dbdir, b"not a directory").unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the run goes on: {err}");
    assert_eq!(
        err.matches("checkpoint not stored").count(),
        1,
        "warned once: {err}"
    );
    // The final record went to the fallback file, with the command that imports it.
    let fb = xdg.join("rtscope/fallback");
    let files: Vec<_> = std::fs::read_dir(&fb).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "one fallback record");
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(files[0].path()).unwrap()).unwrap();
    assert_eq!(rec["end_reason"], "completed");
    assert!(
        rec["kind"]["measurement"]["stats"]["samples"]
            .as_u64()
            .unwrap()
            > 4000
    );
    assert!(err.contains("rtscope import"), "{err}");
}

#[test]
fn sigusr2_prints_a_snapshot_and_the_run_goes_on() {
    need_root!("SCHED_FIFO, mlockall, tracing");
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("r.json");
    let child = Command::new(bin!())
        .args(["measure", "-D", "4s", "-q", "--no-store", "--json"])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGUSR2) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("snapshot at"), "{err}");
    assert!(err.contains("CPU"), "{err}");
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(rec["end_reason"], "completed");
}

/// Peak RSS (KiB) and the record of a traced run at 100 µs (10 kHz per CPU).
fn traced_rss(secs: u32, dir: &Path) -> (u64, serde_json::Value, u64) {
    let json = dir.join(format!("r{secs}.json"));
    let rtt = dir.join(format!("t{secs}.rtt"));
    let out = Command::new(bin!())
        .args([
            "measure",
            "-i",
            "100",
            "-q",
            "--no-store",
            "--trace",
            "--bound",
        ])
        .args(["-D", &format!("{secs}s"), "--json"])
        .arg(&json)
        .arg("--trace-file")
        .arg(&rtt)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rss = rec["hygiene"]["peak_rss_kib"].as_u64().unwrap();
    (rss, rec, std::fs::metadata(&rtt).unwrap().len())
}

#[test]
fn memory_and_trace_file_do_not_grow_with_the_run() {
    need_root!("SCHED_FIFO, mlockall, tracing");
    let d = tempfile::tempdir().unwrap();
    let (short, _, short_file) = traced_rss(4, d.path());
    let (long, rec, long_file) = traced_rss(16, d.path());
    let samples = rec["kind"]["measurement"]["stats"]["samples"]
        .as_u64()
        .unwrap();
    assert!(samples > 100_000, "{samples} samples");
    // Four times the samples and events; holding them would add ~80 MiB here (12 s × 20 000
    // samples/s, each with ~10 events). What may grow between 4 s and 16 s is the bound's
    // interrupt history filling up to its longest window (10 s, a few MiB at 10 kHz), and the
    // high-water mark of a host stall's backlog: a 15–45 ms stall at 10 kHz queues hundreds of
    // samples and their events at once; three 16-s runs of this debug binary peaked at 88, 97
    // and 97 MiB. The absolute figure (≤ 64 MiB) is the release build's at 1 kHz, in
    // docs/long-runs.md: this debug binary's own text adds ~18 MiB under mlockall. The
    // measurement keeps what the set-up freed (`sys::mem::retain_freed`: no munmap, hence no
    // preempt-off `zap_pte_range()`, between the reduction's start and the sampling's end,
    // docs/bound.md), which adds the set-up's freed heap to the peak once: 106–116 MiB here.
    assert!(
        long <= short + 16 * 1024,
        "peak RSS {short} KiB at 4 s, {long} KiB at 16 s"
    );
    assert!(long < 128 * 1024, "peak RSS {long} KiB");
    // Every sample explained, the bound computed.
    let a = &rec["kind"]["measurement"]["attribution"];
    let explained =
        a["samples_attributed"].as_u64().unwrap() + a["samples_unattributed"].as_u64().unwrap();
    assert!(explained * 100 >= samples * 99, "{explained} of {samples}");
    assert!(rec["kind"]["measurement"]["bound"].is_object());
    // The flight recorder holds windows, not the run.
    assert!(
        long_file < short_file * 3 + 256 * 1024,
        "trace file {short_file} B at 4 s, {long_file} B at 16 s"
    );
    let an = Command::new(bin!())
        .arg("analyze")
        .arg(d.path().join("t16.rtt"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&an.stdout);
    assert!(
        an.status.success(),
        "{}",
        String::from_utf8_lossy(&an.stderr)
    );
    assert!(text.contains("flight recorder"), "{text}");
}
