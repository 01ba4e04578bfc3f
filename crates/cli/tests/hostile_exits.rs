//! The exit codes and messages of the audit's cases that are not readers (those are in
//! `hostile_readers.rs`): DEADLINE parameters the kernel would refuse are bad input (exit 2, one
//! line naming the flag or field and the range, nothing started); a `--trace-file` that fills
//! the disk fails the run (exit 1, one line naming the flag) while the run itself is stored; the
//! verbs' own refusals name the flag, never the library's field token.
//! Real kernel, seconds each.

use rtscope_testkit::{bin, run_measured, Measured};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn run(args: &[&str], limit: Duration) -> Measured {
    let mut c = Command::new(bin!());
    c.args(args);
    run_measured(c, limit)
}

/// Exit 2 with exactly one stderr line holding every `want`, quickly (nothing was started).
fn refused(what: &str, o: &Measured, want: &[&str]) {
    let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(o.code, 2, "{what}: exit {}: {}", o.code, o.stderr);
    assert_eq!(lines.len(), 1, "{what}: one line expected:\n{}", o.stderr);
    for w in want {
        assert!(lines[0].contains(w), "{what}: {w:?} not in {}", lines[0]);
    }
    assert!(
        o.elapsed < Duration::from_secs(3),
        "{what}: took {:?}: something started",
        o.elapsed
    );
    println!(
        "{what}: exit 2 in {:.2} s, peak RSS {} MiB: {}",
        o.elapsed.as_secs_f64(),
        o.maxrss_kib / 1024,
        lines[0]
    );
}

fn kernel_max_period_us() -> u64 {
    std::fs::read_to_string("/proc/sys/kernel/sched_deadline_period_max_us")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 22)
}

#[test]
fn deadline_parameters_the_kernel_refuses_are_bad_input() {
    let d = tempfile::tempdir().expect("tmp");
    let limit = Duration::from_secs(20);
    // measure: a period over the kernel's limit, given as the period or as the interval.
    let over = (kernel_max_period_us() + 1).to_string();
    for (what, args) in [
        (
            "measure --dl-period over the kernel's limit",
            vec!["--policy", "deadline", "--dl-period", over.as_str()],
        ),
        (
            "measure --policy deadline -i over the kernel's limit",
            vec!["--policy", "deadline", "-i", over.as_str()],
        ),
    ] {
        let mut a = vec!["measure", "-D", "2s", "--no-store"];
        a.extend(args);
        refused(what, &run(&a, limit), &["--dl-period", "100..="]);
    }
    // taskset run: a task of period 10 s under SCHED_DEADLINE (the kernel's default limit is
    // 2^22 µs, about 4.2 s): refused before a thread starts, not by sched_setattr afterwards.
    let set = d.path().join("long-period.json");
    std::fs::write(
        &set,
        r#"{"schema_version": 1, "tasks": [
    {"id": 0, "wcet_ns": 1000000, "period_ns": 10000000000, "deadline_ns": 10000000000}]}"#,
    )
    .expect("write the set");
    let db = d.path().join("r.db");
    let o = run(
        &[
            "taskset",
            "run",
            set.to_str().expect("utf-8"),
            "--policy",
            "deadline",
            "--placement",
            "partitioned",
            "--cpus",
            "0",
            "-D",
            "1s",
            "-q",
            "--db",
            db.to_str().expect("utf-8"),
        ],
        limit,
    );
    refused(
        "taskset run, a DEADLINE period of 10 s",
        &o,
        &["task 0", "period 10000000 us", "sched_deadline_period"],
    );
}

/// The verbs' own refusals (bound, monitor, noise, `measure --probe timerlat`, load, import,
/// campaign) name the flag as the user typed it: the library names a typed field and the cli
/// renders it, so no field token reaches the terminal.
#[test]
fn verb_refusals_name_the_flag() {
    let d = tempfile::tempdir().expect("tmp");
    let missing = d.path().join("missing.file").display().to_string();
    let db = d.path().join("r.db").display().to_string();
    let campaign = d.path().join("c.toml");
    std::fs::write(
        &campaign,
        "name = \"c1\"\npolicies = [\"other\"]\nloads = [\"idle\"]\nintervals_us = [1000]\ndurations = [\"1s\"]\n",
    )
    .expect("write the campaign");
    let campaign = campaign.display().to_string();
    let m = missing.as_str();
    let cases: Vec<(Vec<&str>, &[&str])> =
        vec![
        (
            vec!["bound"],
            &["give exactly one of --input FILE.json, --rtsl-db PATH…, --trace FILE.rtt"],
        ),
        (vec!["bound", "--input", m], &["--input ", "cannot read"]),
        (vec!["bound", "--rtsl-db", m], &["--rtsl-db "]),
        (vec!["bound", "--trace", m], &["--trace ", "no such file"]),
        (
            vec!["bound", "--trace", m, "--cap", "5000"],
            &["'--cap <TIME>': '5000' has no unit", "write 5000ns"],
        ),
        (
            vec!["bound", "--trace", m, "--assume-thread", "0ns"],
            &["'--assume-thread <TIME>': 0ns is out of range (1ns ..= 1s)"],
        ),
        (
            vec!["bound", "--trace", m, "--max-iterations", "0"],
            &["--max-iterations: must be 1..=10000000, got 0"],
        ),
        (
            vec!["bound", "--trace", m, "--series", "0"],
            &["--series: must be 1..=1000 points, got 0"],
        ),
        (
            vec!["monitor", "--listen", "nowhere"],
            &["'--listen <ADDRESS:PORT>': 'nowhere' is not ADDRESS:PORT"],
        ),
        (
            vec!["monitor", "--window", "0s"],
            &["'--window <TIME>': 0s is out of range (1s ..= 1d)"],
        ),
        (
            vec!["monitor", "--trace-burst", "0s/5s"],
            &["'--trace-burst <LENGTH/EVERY>': LENGTH 0s is out of range (1s ..= 1h)"],
        ),
        (
            vec!["monitor", "--trace-burst", "5s/5s"],
            &["'--trace-burst <LENGTH/EVERY>': EVERY 5s is not longer than LENGTH 5s"],
        ),
        (
            vec!["monitor", "--checkpoint", "1m"],
            &["--checkpoint: a monitor stores its record every --window; give --window instead"],
        ),
        (vec!["noise", "--top", "1001"], &["--top: must be 0..=1000; got 1001"]),
        (
            vec!["noise", "--period", "1ms", "--runtime", "2ms"],
            &["--runtime: must be 100 µs ..= --period (1000 µs); got 2000"],
        ),
        (
            vec!["noise", "--period", "20s"],
            &["--period: must be 100..=10000000 µs; got 20000000"],
        ),
        (
            vec!["noise", "--min-noise", "2s"],
            &["--min-noise: must be 1..=1000000 µs; got 2000000"],
        ),
        (
            vec!["noise", "--stop", "20s"],
            &["--stop: must be 1..=10000000 µs; got 20000000"],
        ),
        (
            vec!["measure", "--probe", "timerlat", "-i", "50"],
            &["--interval: must be 100..=1000000 µs with --probe timerlat"],
        ),
        (
            vec!["load", "cpu-cache", "--cpus", "4095", "--no-store"],
            &["--cpus: CPU 4095 is not online"],
        ),
        (
            vec!["import", m, m, "--json", "-", "--no-store"],
            &["--json: only with a single input file"],
        ),
        (
            vec!["campaign", &campaign, "--db", &db, "--lease", "10s"],
            &["--lease: only with a PostgreSQL --db"],
        ),
    ];
    for (args, want) in &cases {
        let o = run(args, Duration::from_secs(20));
        let what = args.join(" ");
        refused(&what, &o, want);
        assert!(
            !o.stderr.contains('⟨'),
            "{what}: a field token: {}",
            o.stderr
        );
    }
}

/// Mount a tmpfs of `size` at `at` (root).
fn tmpfs(at: &Path, size: &str) -> bool {
    std::fs::create_dir_all(at).is_ok()
        && Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
}

/// Fill the file system of `dir` until it refuses a write.
fn fill(dir: &Path) {
    use std::io::Write;
    let Ok(mut f) = std::fs::File::create(dir.join("filler")) else {
        return;
    };
    let block = vec![0u8; 4096];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
}

#[test]
fn a_trace_file_that_fills_the_disk_fails_the_run_and_keeps_the_record() {
    if !rtscope_testkit::is_root() {
        rtscope_testkit::skipped("needs root (mounts a small tmpfs, SCHED_FIFO, tracing)");
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let small = d.path().join("small");
    // Room for the pre-run free-space check (1 MiB per output file), and little more.
    assert!(tmpfs(&small, "1200k"), "mount -t tmpfs");
    let rtt = small.join("t.rtt");
    let db = d.path().join("r.db");
    // The disk fills a second into the run, as a disk shared with something else would.
    let filler = {
        let small = small.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1000));
            fill(&small);
        })
    };
    let o = run(
        &[
            "measure",
            "-D",
            "3s",
            "-i",
            "200",
            "-q",
            "--trace",
            "--trace-file-mode",
            "all",
            "--trace-file",
            rtt.to_str().expect("utf-8"),
            "--db",
            db.to_str().expect("utf-8"),
        ],
        Duration::from_secs(60),
    );
    let _ = filler.join();
    let left: Vec<String> = std::fs::read_dir(&small)
        .map(|r| {
            r.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let _ = Command::new("umount").arg(&small).status();
    assert_eq!(o.code, 1, "exit {}: {}", o.code, o.stderr);
    let errors: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.contains("--trace-file"))
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "one line names --trace-file:\n{}",
        o.stderr
    );
    assert!(
        errors[0].contains("could not be written") && errors[0].contains("stored in"),
        "{}",
        errors[0]
    );
    assert_eq!(
        left,
        vec!["filler".to_string()],
        "no trace file left half-written"
    );
    // The run itself is in the database, with the reason.
    let runs = Command::new(bin!())
        .args(["runs", "--json", "--db"])
        .arg(&db)
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&runs.stdout).expect("runs --json");
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    println!(
        "--trace-file on a full disk: exit 1 in {:.2} s, peak RSS {} MiB: {}",
        o.elapsed.as_secs_f64(),
        o.maxrss_kib / 1024,
        errors[0]
    );
}
