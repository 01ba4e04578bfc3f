//! `rtscope practise`: bad input is refused with exit 2 and the flag named before anything
//! runs; a short testing run passes its checkers; the deliberately broken cpudl makes the
//! checker fail with exit 1; a replay of a crafted trace ends with the hand-checked queues.

use rtscope_model::event::{Event, EventKind};
use rtscope_trace::{write_rtt, RttFile};
use std::process::{Command, Output};

fn rtscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(args)
        .output()
        .expect("rtscope")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["test", "--emulated-cpus", "0"],
            "--emulated-cpus: 0 is out of range (1..=48",
        ),
        (
            &["test", "--emulated-cpus", "49"],
            "--emulated-cpus: 49 is out of range (1..=48",
        ),
        (
            &["test", "--emulated-cpus", "x"],
            "invalid value 'x' for '--emulated-cpus <LIST>': bad CPU number 'x'",
        ),
        (
            &["perf", "--emulated-cpus", "4096"],
            "invalid value '4096' for '--emulated-cpus <LIST>': bad CPU range '4096'",
        ),
        (
            &["test", "--p-arrival", "0.8", "--p-finish", "0.5"],
            "--p-arrival + --p-finish: 0.8 + 0.5",
        ),
        (
            &["test", "--p-arrival", "1.5"],
            "--p-arrival: 1.5 is not a probability (0..=1)",
        ),
        (&["test", "--p-finish", "-0.1"], "--p-finish"),
        (&["test", "--cycle", "0"], "--cycle"),
        (&["test", "--cycle", "20s"], "--cycle"),
        (
            &["test", "-D", "1ms"],
            "'--duration <TIME>': 1ms is out of range (10ms ..= 1d)",
        ),
        (&["test", "--check-every", "1us"], "--check-every"),
        (
            &["test", "--policy", "edf", "--structure", "cpupri"],
            "--policy edf with --structure cpupri",
        ),
        (&["test", "--structure", "rbtree"], "--structure"),
        (&["replay", "/nonexistent/x.rtt"], "FILE /nonexistent/x.rtt"),
    ];
    for (args, want) in cases {
        let mut a = vec!["practise"];
        a.extend_from_slice(args);
        a.push("--no-store");
        let o = rtscope(&a);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {e}");
        assert!(e.contains(want), "{a:?}: {e:?} lacks {want:?}");
        assert_eq!(e.trim().lines().count(), 1, "{a:?}: one line: {e}");
        assert!(o.stdout.is_empty(), "{a:?}: nothing ran");
    }
    // Performance mode refuses more emulated CPUs than online CPUs.
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let n = rtscope_model::cpus::parse_cpu_list(online.trim())
        .unwrap()
        .len();
    let more = (n + 1).to_string();
    let o = rtscope(&["practise", "perf", "--emulated-cpus", &more, "--no-store"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&format!(
            "--emulated-cpus: {more} is out of range (1..={n}: performance mode"
        )),
        "{e}"
    );
}

#[test]
fn a_trace_without_scheduling_events_exits_2() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("irqs.rtt");
    let f = RttFile {
        events: vec![Event {
            ts_ns: 10,
            cpu: 0,
            kind: EventKind::IrqEntry { irq: 3 },
        }],
        ..Default::default()
    };
    write_rtt(&p, &f).unwrap();
    let o = rtscope(&["practise", "replay", p.to_str().unwrap(), "--no-store"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("holds no scheduling events"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
}

#[test]
fn short_testing_run_passes_and_writes_json() {
    let o = rtscope(&[
        "practise",
        "test",
        "--emulated-cpus",
        "3",
        "-D",
        "200ms",
        "--cycle",
        "1ms",
        "--structure",
        "cpudl",
        "--seed",
        "5",
        "--no-store",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    let b = &rec["kind"]["practise"];
    assert!(b.is_object(), "{rec}");
    assert_eq!(b["mode"], "test");
    assert_eq!(b["seed"], 5);
    assert!(b["violation"].is_null());
    let run = &b["runs"][0];
    assert_eq!(run["structure"], "cpudl");
    assert_eq!(run["emulated_cpus"], 3);
    assert!(run["checks"]["checks"].as_u64().unwrap() > 10, "{run}");
    assert!(run["counts"]["activations"].as_u64().unwrap() > 10, "{run}");
}

#[test]
fn broken_cpudl_fails_the_checker_with_exit_1() {
    let d = tempfile::tempdir().unwrap();
    let svg = d.path().join("f.svg");
    let o = rtscope(&[
        "practise",
        "test",
        "--inject-fault",
        "cpudl-left-only",
        "--structure",
        "cpudl",
        "--emulated-cpus",
        "8",
        "--cycle",
        "200us",
        "--p-arrival",
        "0.5",
        "--p-finish",
        "0.2",
        "--check-every",
        "200us",
        "-D",
        "5s",
        "--no-store",
        "-q",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    let last = e.trim().lines().last().unwrap_or("");
    assert!(
        last.starts_with("rtscope: error: checker failed: cpudl"),
        "{e}"
    );
    assert!(last.contains("state: heap (size"), "{e}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("CHECKER FAILED"));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}

/// The replay fixture of the practise crate (replay.rs), through a .rtt file: CPU 1 ends with
/// pids 11 (prio 30), 10 (prio 50), 12 (prio 120); CPU 0 empty.
#[test]
fn replay_of_a_crafted_trace() {
    let events = rtscope_practise::replay::crafted_trace();
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("t.rtt");
    write_rtt(
        &p,
        &RttFile {
            events,
            ..Default::default()
        },
    )
    .unwrap();
    let o = rtscope(&[
        "practise",
        "replay",
        p.to_str().unwrap(),
        "--structure",
        "all",
        "--no-store",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    // One final-queue listing per structure, each the hand-checked one.
    assert_eq!(out.matches("cpu 0: []").count(), 4, "{out}");
    assert_eq!(
        out.matches("cpu 1: [11:31 10:51 12:121]").count(),
        4,
        "{out}"
    );
}

/// The kernel's lockdown mode as `rtscope_trace::kfuncs` reads it (securityfs, mounted
/// privately when it is not mounted).
fn kernel_locked_down() -> Option<String> {
    rtscope_trace::kfuncs::lockdown_mode().filter(|m| m == "integrity" || m == "confidentiality")
}

#[test]
fn kernel_timing_runs_or_names_lockdown() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        rtscope_testkit::skipped("needs root (fentry/fexit)");
        return;
    }
    let o = rtscope(&["practise", "kernel", "-D", "1s", "--no-store"]);
    let e = stderr(&o);
    match kernel_locked_down() {
        Some(mode) => {
            assert_eq!(o.status.code(), Some(1), "{e}");
            assert!(
                e.contains(&format!("kernel lockdown ({mode}) forbids fentry/fexit")),
                "{e}"
            );
            assert_eq!(e.trim_end().lines().count(), 1, "not one line: {e:?}");
            assert!(!e.contains("stored run"), "{e}");
            assert!(o.stdout.is_empty(), "printed a result: {:?}", o.stdout);
        }
        None => {
            assert_eq!(o.status.code(), Some(0), "{e}");
            let out = String::from_utf8_lossy(&o.stdout);
            for f in [
                "cpudl_set",
                "cpudl_find",
                "cpupri_set",
                "cpupri_find",
                "cpudl modify",
                "cpupri find",
            ] {
                assert!(out.contains(f), "{f} missing: {out}");
            }
        }
    }
}

#[test]
fn kernel_bad_input_exits_2() {
    for (args, want) in [
        (
            &["-D", "0s"][..],
            "'--duration <TIME>': 0s is out of range (10ms ..= 1d)",
        ),
        (
            &["-D", "2d"][..],
            "'--duration <TIME>': 2d is out of range (10ms ..= 1d)",
        ),
        (&["--load", "rr"][..], "--load"),
    ] {
        let mut a = vec!["practise", "kernel"];
        a.extend_from_slice(args);
        a.push("--no-store");
        let o = rtscope(&a);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {e}");
        assert!(e.contains(want), "{a:?}: {e:?} lacks {want:?}");
        assert!(!e.contains("lockdown"), "{a:?} reached attach: {e}");
    }
}
