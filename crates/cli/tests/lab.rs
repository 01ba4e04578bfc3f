//! `rtscope lab`: a verb run inside the `trace` kernel under QEMU/TCG, its record brought home
//! with the lab's tags; the timeout, SIGINT and SIGKILL leave no QEMU and no temporary directory
//! behind; bad input exits 2 before anything boots.
//!
//! The kernel comes from `scripts/setup.sh` (`rtscope lab kernel build --preset trace`). A
//! missing kernel fails these tests (the suite's set-up builds it); only a machine without QEMU
//! skips them.

use rtscope_testkit::lab::{ready, run, text};
use rtscope_testkit::{bin, need_root, tmp};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How many runs the host's store `db` holds, and the newest one as `show --json` prints it.
fn newest_stored(db: &Path, cwd: &Path) -> (usize, serde_json::Value) {
    let db = db.to_str().unwrap();
    let o = run(bin!(), &["runs", "--db", db, "--json", "-"], cwd);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = runs.as_array().expect("runs list");
    let id = runs[0]["id"].as_str().unwrap().to_string();
    let o = run(bin!(), &["show", &id, "--db", db, "--json", "-"], cwd);
    assert!(o.status.success(), "{}", text(&o.stderr));
    (runs.len(), serde_json::from_slice(&o.stdout).unwrap())
}

/// The QEMU this lab run started (its temporary directory carries the rtscope pid).
fn qemu_of(pid: u32) -> Vec<u32> {
    let needle = format!("rtscope-lab.{pid}.");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .map(|c| text(&c).contains(&needle))
                .unwrap_or(false)
        })
        .collect()
}

fn lab_dirs_of(pid: u32) -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter(|n| n.starts_with(&format!("rtscope-lab.{pid}.")))
        .collect()
}

#[test]
fn a_measure_in_the_trace_kernel_comes_home_tagged() {
    need_root!("QEMU guest with SCHED_FIFO inside");
    if !ready(bin!(), "trace") {
        return;
    }
    let d = tmp();
    let db = d.path().join("host.db");
    let o = run(
        bin!(),
        &[
            "lab",
            "run",
            "--kernel",
            "trace",
            "--preempt",
            "full",
            "--db",
            db.to_str().unwrap(),
            "--tag",
            "suite=lab",
            "--",
            "measure",
            "-D",
            "2s",
            "-i",
            "1000",
        ],
        d.path(),
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{out}\n{err}");
    // The verb's own summary came through the console.
    assert!(out.contains("rtscope measure"), "{out}");
    assert!(err.contains("stored run"), "{err}");
    let (stored, rec) = newest_stored(&db, d.path());
    assert_eq!(stored, 1);
    let tags = &rec["tags"];
    assert!(
        tags["kernel"].as_str().unwrap().starts_with("trace-6.12"),
        "{tags}"
    );
    assert_eq!(tags["preempt"], "full");
    assert_eq!(tags["emulated"], "tcg-single");
    assert_eq!(tags["lab_smp"], "2");
    assert_eq!(tags["suite"], "lab");
    assert!(
        rec["system"]["kernel_release"]
            .as_str()
            .unwrap_or("")
            .starts_with("6.12"),
        "{}",
        rec["system"]
    );
    // The guest's files (its store, the console) are on the host.
    let labdir = std::fs::read_dir(d.path().join("rtscope-results"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("lab-"))
        .expect("lab directory");
    assert!(labdir.path().join("console.log").is_file());
    assert!(labdir.path().join("data/rtscope/results.db").is_file());
}

/// The paper's io load (hackbench + disk + net) in a guest: its workers start (the gate: a
/// supervisor forking 400 busy workers on one vCPU took minutes), the disk load's files are on
/// the lab's scratch virtio-blk disk (not the initramfs, in memory), and the net load connects
/// over the guest's loopback interface.
#[test]
fn the_io_load_runs_in_a_guest_on_a_scratch_disk() {
    need_root!("QEMU guest with SCHED_FIFO inside");
    if !ready(bin!(), "trace") {
        return;
    }
    let d = tmp();
    let db = d.path().join("host.db");
    let t0 = Instant::now();
    let o = run(
        bin!(),
        &[
            "lab",
            "run",
            "--kernel",
            "trace",
            "--preempt",
            "full",
            "--icount",
            "--smp",
            "1",
            "-q",
            "--db",
            db.to_str().unwrap(),
            "--",
            "measure",
            "-D",
            "3s",
            "--load",
            "io",
            "--disk-size",
            "64M",
            "--hackbench-groups",
            "1",
        ],
        d.path(),
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{out}\n{err}");
    let (_, rec) = newest_stored(&db, d.path());
    assert_eq!(rec["tags"]["lab_scratch"], "virtio-blk", "{}", rec["tags"]);
    let load = &rec["loads"][0];
    assert_eq!(load["kind"], "io", "{load}");
    let f = &load["figures"];
    assert_eq!(f["hackbench_workers"], 40.0, "{f}");
    assert!(f["hackbench_messages_per_s"].as_f64().unwrap() > 0.0, "{f}");
    assert!(f["net_connections"].as_f64().unwrap() >= 1.0, "{f}");
    assert!(f["net_rx_mb_per_s"].as_f64().unwrap() > 0.0, "{f}");
    // The disk worker ran (its writes reach the scratch disk in 1 MiB steps: too coarse for 3 s).
    assert!(f["disk_worker_cpu_pct"].as_f64().unwrap() > 0.0, "{f}");
    // Neither "no I/O reaches a block device" (tmpfs) nor "the net load did not run".
    assert_eq!(load["warnings"], serde_json::json!([]), "{load}");
    println!(
        "io load in the guest: {:.1} s end to end",
        t0.elapsed().as_secs_f64()
    );
}

/// Under -icount with a fixed shift and one vCPU no host delay reaches guest time: every part of
/// the p99 tail has a guest cause (docs/lab.md, "no_guest_activity under icount").
#[test]
fn icount_single_vcpu_tail_has_a_guest_cause() {
    need_root!("QEMU guest, eBPF capture inside");
    if !ready(bin!(), "trace") {
        return;
    }
    let d = tmp();
    let db = d.path().join("host.db");
    let o = run(
        bin!(),
        &[
            "lab",
            "run",
            "--kernel",
            "trace",
            "--icount",
            "--smp",
            "1",
            "-q",
            "--db",
            db.to_str().unwrap(),
            "--",
            "measure",
            "-D",
            "2s",
            "--trace",
            "bpf",
            "--bound",
        ],
        d.path(),
    );
    assert!(
        o.status.success(),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let (_, rec) = newest_stored(&db, d.path());
    assert_eq!(rec["tags"]["emulated"], "tcg-icount");
    // The bound's thread terms come from the in-kernel preemptirq reduction, with each
    // interrupt arrival's entry and exit code measured (the local timer alone gives hundreds
    // of arrivals in 2 s), and no converged bound lies below the observed maximum.
    let b = &rec["kind"]["measurement"]["bound"];
    let c = &b["cpus"][0];
    assert_eq!(c["thread_estimated"], false, "{b}");
    let e = c["irq_entry_exit_ns"].as_u64().unwrap_or(0);
    assert!(e > 0 && e < 100_000, "IRQ entry/exit {e} ns: {b}");
    let obs = c["observed_max_latency_ns"].as_u64().expect("observed max");
    for (name, x) in c["bounds"].as_object().unwrap() {
        if x["converged"] == true {
            let l = x["latency_ns"].as_u64().unwrap();
            assert!(l >= obs, "{name}: bound {l} < observed {obs}: {b}");
        }
    }
    let a = &rec["kind"]["measurement"]["attribution"];
    assert_eq!(a["lost_events"], 0, "{a}");
    assert_eq!(a["samples_unattributed"], 0, "{a}");
    for c in a["causes"].as_array().unwrap() {
        if c["cause"] == "no_guest_activity" {
            let share = c["tail_p99_share"].as_f64().unwrap_or(0.0);
            assert!(share < 0.02, "no_guest_activity {share} of the tail: {a}");
        }
    }
    // Guest time is instruction time: the worst latency is tens of µs, never a host stall.
    let max_ns = rec["kind"]["measurement"]["stats"]["max_ns"]
        .as_u64()
        .unwrap_or(u64::MAX);
    assert!(max_ns < 500_000, "max {max_ns} ns");
    let w: Vec<&str> = rec["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["code"] == "hypervisor")
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("-icount shift=1"), "{w:?}");
}

/// sched-scale's time in the scheduler (heursch-2001 Table 3's quantity) by both methods: fentry
/// on the trace kernel (a switch reached through preempt_schedule() may go untimed), and the
/// preemptirq method PREEMPT_RT needs — forced on the trace kernel, by itself on rt-trace when
/// the cache has it (every switch timed). Every load process running at the end of its level.
#[test]
fn sched_scale_times_the_scheduler_in_the_lab_kernels() {
    need_root!("QEMU guest, fentry and tracepoint programs inside");
    if !ready(bin!(), "trace") {
        return;
    }
    // (kernel, --preempt, --sched-time, the method's name in the record, switches timed per level)
    let mut runs = vec![
        ("trace", Some("none"), "on", "fentry on schedule", 25..=35),
        (
            "trace",
            Some("none"),
            "preemptirq",
            "preemptirq tracepoints",
            30..=32,
        ),
    ];
    if rtscope_testkit::lab::has_kernel(bin!(), "rt-trace") {
        runs.push(("rt-trace", None, "auto", "preemptirq tracepoints", 30..=32));
    } else {
        rtscope_testkit::skipped("the PREEMPT_RT run: no rt-trace kernel in the lab cache (RTSCOPE_LAB_KERNELS=\"trace rt-trace\" scripts/setup.sh builds it)");
    }
    for (kernel, preempt, mode, method, timed) in runs {
        let verb = [
            "sched-scale",
            "--sched-time",
            mode,
            "--loads",
            "0,40",
            "--wakeups",
            "30",
            "--sleep-ms",
            "5",
        ];
        let rec = rtscope_testkit::lab::icount_record(bin!(), kernel, preempt, &verb, "ss.json");
        let r = &rec["kind"]["sched_scale"];
        assert!(
            r["sched_time_unavailable"].is_null(),
            "{kernel} {mode}: {r}"
        );
        let m = r["sched_time_method"].as_str().unwrap_or_default();
        assert!(m.contains(method), "{kernel} {mode}: {m}");
        for row in r["rows"].as_array().unwrap() {
            assert_eq!(row["load_running_at_end"], row["load_processes"], "{row}");
            // Every wake-up is a switch to the thread; the thread's first run adds one.
            let n = row["sched_time_stats"]["samples"].as_u64().unwrap();
            assert!(timed.contains(&n), "{kernel} {mode}: {row}");
            if mode != "on" {
                assert_eq!(row["sched_time_missed"], 0, "{kernel} {mode}: {row}");
            }
            let mean = row["sched_time_stats"]["avg_ns"].as_f64().unwrap();
            assert!(mean > 100.0 && mean < 100_000.0, "{kernel} {mode}: {row}");
        }
    }
}

/// `--nic-load`: datagrams from the host reach a socket in the guest through its virtio-net
/// device, and the device's receive-queue interrupt fires for them. NAPI bounds the count from
/// above: one interrupt starts a poll that takes every packet already in the queue, and the
/// queue's interrupt stays masked until the poll ends, so there are at most as many RX
/// interrupts as packets (plus a few for ARP). From below, a loose bound: at these rates a poll
/// usually finds one packet (0.9 interrupts per packet measured), but a host that did not run
/// QEMU's main loop for a while lets slirp hand over a burst that one interrupt takes; at least
/// one interrupt per 10 packets still shows the packets came in as device interrupts.
#[test]
fn nic_load_raises_virtio_net_rx_interrupts() {
    need_root!("QEMU guest with SCHED_FIFO inside");
    if !ready(bin!(), "trace") {
        return;
    }
    let d = tmp();
    let db = d.path().join("host.db");
    let child = Command::new(bin!())
        .args([
            "lab",
            "run",
            "--kernel",
            "trace",
            "--icount",
            "--smp",
            "1",
            "--nic-load",
            "2000",
            "--db",
            db.to_str().unwrap(),
            "--",
            "measure",
            "-D",
            "5s",
        ])
        .current_dir(d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert!(o.status.success(), "{}\n{err}", text(&o.stdout));
    assert!(err.contains("virtio-net fed 2000 datagrams/s"), "{err}");
    assert!(err.contains("lab: NIC load: the host sent"), "{err}");
    // Everything started is gone: QEMU, its directory (the sending thread ended with rtscope).
    assert!(qemu_of(pid).is_empty(), "QEMU left running");
    assert!(lab_dirs_of(pid).is_empty(), "temporary directory left");

    let labdir = std::fs::read_dir(d.path().join("rtscope-results"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("lab-"))
        .expect("lab directory")
        .path();
    let files: Vec<(String, Vec<u8>)> = ["host.txt", "before.txt", "after.txt"]
        .iter()
        .map(|n| {
            let p = labdir.join("lab-nic").join(n);
            let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (format!("lab-nic/{n}"), b)
        })
        .collect();
    let f = rtscope_lab::nic::Figures::from_files(&files)
        .expect("lab-nic/host.txt")
        .unwrap_or_else(|m| panic!("{m}"));
    let show = f.summary();
    assert_eq!(f.pps, 2000);
    assert!(f.guest_secs >= 5.0, "{show}");
    // The host keeps sending until it sees the verb's end marker, a moment after the guest's
    // last snapshot: what it sent bounds what the guest counted, less that moment's datagrams.
    assert!(f.sent >= 1000, "{show}");
    assert!(
        f.rx_packets <= f.sent + 20 && f.rx_packets * 2 >= f.sent,
        "{show}"
    );
    // Through the stack into the sink's socket. The sink is a SCHED_OTHER process sharing the
    // one vCPU with the verb, so its buffer can overflow for a moment (4 of 9290 datagrams
    // seen once): at most 2 % dropped.
    assert!(f.udp_in * 10 >= f.rx_packets * 9, "{show}");
    assert!(f.udp_dropped * 50 <= f.rx_packets, "{show}");
    assert!(
        f.rx_irqs <= f.rx_packets + 20 && f.rx_irqs * 10 >= f.rx_packets,
        "{show}"
    );
    // The record says it ran under the NIC load.
    let (_, rec) = newest_stored(&db, d.path());
    assert_eq!(rec["tags"]["lab_nic_pps"], "2000");
}

#[test]
fn the_timeout_kills_the_guest_and_says_so() {
    need_root!("QEMU guest");
    if !ready(bin!(), "trace") {
        return;
    }
    let d = tmp();
    let t0 = Instant::now();
    let child = Command::new(bin!())
        .args([
            "lab",
            "run",
            "--kernel",
            "trace",
            "--no-store",
            "--timeout",
            "15s",
            "--",
            "measure",
            "-D",
            "10m",
        ])
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("did not finish within 15 s") && err.contains("killed"),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(40));
    assert!(qemu_of(pid).is_empty(), "QEMU left running");
    assert!(lab_dirs_of(pid).is_empty(), "temporary directory left");
}

#[test]
fn sigint_and_sigkill_leave_no_qemu_behind() {
    need_root!("QEMU guest");
    if !ready(bin!(), "trace") {
        return;
    }
    let d = tmp();
    let start = || {
        Command::new(bin!())
            .args([
                "lab",
                "run",
                "--kernel",
                "trace",
                "--no-store",
                "-q",
                "--",
                "measure",
                "-D",
                "10m",
            ])
            .current_dir(d.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let wait_qemu = |pid: u32| {
        let t = Instant::now();
        while qemu_of(pid).is_empty() {
            assert!(t.elapsed() < Duration::from_secs(20), "QEMU never started");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    // SIGINT: a clean stop, exit 0, nothing left.
    let c = start();
    let pid = c.id();
    wait_qemu(pid);
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let o = c.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("stopped by SIGINT"), "{err}");
    assert!(qemu_of(pid).is_empty(), "QEMU left after SIGINT");
    assert!(lab_dirs_of(pid).is_empty(), "temporary directory left");

    // SIGKILL: QEMU dies with its parent (PR_SET_PDEATHSIG); the directory goes at the next
    // lab command.
    let mut c = start();
    let pid = c.id();
    wait_qemu(pid);
    c.kill().unwrap();
    c.wait().unwrap();
    let t = Instant::now();
    while !qemu_of(pid).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "QEMU survived its parent's SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !lab_dirs_of(pid).is_empty(),
        "expected the killed run's directory"
    );
    let o = run(bin!(), &["lab", "list"], d.path());
    assert!(o.status.success());
    assert!(lab_dirs_of(pid).is_empty(), "stale directory not swept");
}

#[test]
fn bad_input_exits_2_before_anything_boots() {
    let d = tmp();
    let cases: &[(&[&str], &str)] = &[
        (&["lab", "kernel", "build", "--preset", "rt"], "--preset"),
        (
            &["lab", "run", "--kernel", "no-such-kernel", "--", "measure"],
            "rtscope lab list",
        ),
        (&["lab", "run", "--kernel", "trace", "--", "report"], "host"),
        (&["lab", "run", "--kernel", "trace", "--", "lab"], "host"),
        (
            &[
                "lab", "run", "--kernel", "trace", "--mem", "1T", "--", "measure",
            ],
            "--mem",
        ),
        (
            &[
                "lab",
                "run",
                "--kernel",
                "trace",
                "--preempt",
                "some",
                "--",
                "measure",
            ],
            "--preempt",
        ),
        (
            &[
                "lab",
                "run",
                "--kernel",
                "trace",
                "--timeout",
                "1s",
                "--",
                "measure",
            ],
            "--timeout",
        ),
        (&["lab", "run", "--kernel", "trace"], "VERB"),
        (
            &[
                "lab",
                "run",
                "--kernel",
                "trace",
                "--nic-load",
                "0",
                "--",
                "measure",
            ],
            "--nic-load: must be 1..=50000",
        ),
        // The guest verb's own flags, read by the same grammar on the host.
        (
            &[
                "lab", "run", "--kernel", "trace", "--", "measure", "-D", "10x",
            ],
            "'10x' for '--duration",
        ),
        (
            &[
                "lab", "run", "--kernel", "trace", "--", "taskset", "sweep", "--loads", "0.5",
            ],
            "--placement",
        ),
    ];
    for (args, needle) in cases {
        let o = run(bin!(), args, d.path());
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(err.lines().count() <= 3, "{args:?}: {err}");
    }
}
