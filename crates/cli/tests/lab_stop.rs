//! The stop rule of `stop_latency.rs` for the verbs this VM's kernel cannot run, in the lab's
//! `trace` kernel (osnoise tracer, preemptirq tracepoints, BTF for fentry): `noise`,
//! `trace thread-vars` and `practise kernel` each run with a 60 s duration, are signalled a few
//! seconds in, and must exit 0 with their partial record kept, having seen the stop.
//!
//! The guest times each stop itself, in its own clock (`/proc/uptime`, 10 ms resolution): from
//! just before `kill` to the moment the process is a zombie (its exit), polled every 2 ms. Under
//! TCG the guest's CPU runs the teardown (threads joined, the record computed and stored in
//! SQLite) tens of times slower than hardware per guest second, so the host's budget (270 ms)
//! does not apply in guest time. `measure`, which keeps the rule on the host
//! (`stop_latency.rs`), is stopped in the same guest as a yardstick, and each time is printed
//! beside it; each verb must stop within [`GUEST_LIMIT_MS`] (a verb whose loop misses the stop
//! runs on to its 60 s). One boot: the lab's verb is the first `noise` (SIGINT); the
//! `--alongside` script signals it, then starts and signals the others itself.

use rtscope_testkit::lab::{ready, run, text};
use rtscope_testkit::{bin, need_root, tmp};
use serde_json::Value;
use std::path::PathBuf;

/// The host test's light-family budget: the rule (100 ms), one host stall (20 ms), the teardown
/// (150 ms); `lab run` itself runs on the host and keeps it.
const BUDGET_MS: u64 = 270;

/// A guest stop must end the verb within this much guest time, half the 60 s a verb that
/// misses the stop runs on for. This is not the rule: against the yardstick (`measure`, 0.17 s
/// in the guest) `trace thread-vars` took 1.9 s and `noise` 11-12 s once its tracer ran (on
/// the one vCPU, whose whole period the osnoise tracer's runtime takes by default), 0.7-8 s
/// when signalled earlier (docs/reliability.md "Stopping": open, not explained).
const GUEST_LIMIT_MS: u64 = 30_000;

/// The guest's script. `ms` is the guest's uptime in ms; `stop NAME SIG PID` signals PID and
/// prints `STOP NAME SIG MS` when it has exited; `traced` waits until `noise`'s tracer instance
/// exists, then 2 s: the first rtscope of a boot, signalled 4 s after its spawn, once took
/// 8 s to stop where the others took 0.7-2.4 s (likely still in its set-up, which under TCG
/// faults the whole binary in for `mlockall`; not verified). The other verbs get 4 s.
const SCRIPT: &str = r#"
ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }
alive() { [ -d /proc/$1 ] && ! grep -q '^State:[[:space:]]*Z' /proc/$1/status 2>/dev/null; }
stop() {
  T0=$(ms); kill -$2 $3
  while alive $3; do sleep 0.002; done
  T1=$(ms); echo "STOP $1 $2 $((T1 - T0))"
}
traced() { i=0; while [ $i -lt 300 ] && [ -z "$(ls /sys/kernel/tracing/instances 2>/dev/null)" ]; do sleep 0.1; i=$((i + 1)); done; sleep 2; }
P=""; while [ -z "$P" ]; do P=$(pidof rtscope); sleep 0.1; done
traced; stop noise INT $P
sleep 1
/bin/rtscope measure --cpus 0 -D 60s -q --no-store >/out/measure.log 2>&1 &
P=$!; sleep 4; stop measure INT $P; wait $P; echo "EXIT measure INT $?"
/bin/rtscope noise --cpus 0 -D 60s -q >/out/noise-term.log 2>&1 &
P=$!; traced; stop noise TERM $P; wait $P; echo "EXIT noise TERM $?"
/bin/rtscope trace thread-vars --cpus 0 -D 60s --json /out/tv.json >/out/tv.log 2>&1 &
P=$!; sleep 4; stop thread-vars INT $P; wait $P; echo "EXIT thread-vars INT $?"
/bin/rtscope practise kernel -D 60s --load none -q >/out/practise.log 2>&1 &
P=$!; sleep 4; stop practise-kernel INT $P; wait $P; echo "EXIT practise-kernel INT $?"
/bin/rtscope runs --json /out/runs.json
echo "EXIT runs $?"
"#;

/// `lab run --kernel trace --smp 1 --icount --alongside SCRIPT -- noise --cpus 0 -D 60s -q`:
/// the guest's /out on the host.
fn lab_run(d: &std::path::Path) -> PathBuf {
    let out = d.join("res");
    let o = run(
        bin!(),
        &[
            "lab",
            "run",
            "--kernel",
            "trace",
            // One vCPU: with two, `noise` failed at its start here ("cannot read
            // /sys/kernel/tracing/osnoise/cpus: Invalid argument"), not yet explained.
            "--smp",
            "1",
            "--icount",
            "--no-store",
            "-q",
            "--out",
            out.to_str().expect("utf-8 path"),
            "--alongside",
            SCRIPT,
            "--",
            "noise",
            "--cpus",
            "0",
            "-D",
            "60s",
            "-q",
        ],
        d,
    );
    assert!(
        o.status.success(),
        "lab run failed ({}):\n{}\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    let dirs: Vec<PathBuf> = std::fs::read_dir(&out)
        .expect("the lab's results")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[test]
fn noise_thread_vars_and_practise_kernel_stop_within_the_rule_in_the_trace_kernel() {
    need_root!("QEMU guest");
    if !ready(bin!(), "trace") {
        return;
    }
    let d = tmp();
    let dir = lab_run(d.path());
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let console = read("console.log");
    let said = read("alongside.log");
    let logs = format!(
        "alongside.log:\n{said}\nnoise-term.log:\n{}\ntv.log:\n{}\npractise.log:\n{}",
        read("noise-term.log"),
        read("tv.log"),
        read("practise.log")
    );
    // The lab's own verb (the first noise) exits 0 on its SIGINT.
    assert!(
        console.contains("RTSCOPE-LAB-EXIT=0"),
        "the first noise did not exit 0:\n{console}\n{logs}"
    );
    // `practise kernel` attaches fentry programs to the scheduler's cpudl/cpupri functions;
    // where the kernel refuses them (EINVAL: the functions inlined or not traceable) it cannot
    // run at all, and its stop is not a case of this kernel: said, not counted.
    let practise_refused = read("practise.log")
        .lines()
        .find(|l| l.contains("bpf load of the cpudl/cpupri timing programs failed"))
        .map(str::to_string);
    if let Some(why) = &practise_refused {
        println!("not a case in the trace kernel: practise kernel: {why}");
    }
    let mut failures = Vec::new();
    let mut stops = 0;
    let yardstick: u64 = said
        .lines()
        .find_map(|l| l.strip_prefix("STOP measure INT "))
        .and_then(|ms| ms.trim().parse().ok())
        .unwrap_or_else(|| panic!("no yardstick stop (measure):\n{logs}"));
    let budget = GUEST_LIMIT_MS;
    println!("yardstick: measure stopped in {yardstick} ms of guest time; limit {budget} ms");
    for line in said.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["STOP", "practise-kernel", ..] | ["EXIT", "practise-kernel", ..]
                if practise_refused.is_some() => {}
            ["STOP", name, sig, ms] => {
                stops += 1;
                let ms: u64 = ms.parse().expect("a time in ms");
                println!(
                    "STOP {name} on SIG{sig}: {ms} ms of guest time ({:.1} x the yardstick; limit {budget} ms)",
                    ms as f64 / yardstick.max(1) as f64
                );
                if ms > budget {
                    failures.push(format!("{name} on SIG{sig}: {ms} ms > {budget} ms"));
                }
            }
            ["EXIT", name, sig, code] if *code != "0" => {
                failures.push(format!("{name} on SIG{sig}: exit {code} (0 expected)"));
            }
            ["EXIT", "runs", code] if *code != "0" => {
                failures.push(format!("runs: exit {code}"));
            }
            _ => {}
        }
    }
    let expected = if practise_refused.is_some() { 4 } else { 5 };
    assert_eq!(stops, expected, "{expected} stops expected:\n{logs}");
    assert!(failures.is_empty(), "{}\n{logs}", failures.join("\n"));
    // The partial records: the two noise runs and the practise run stored as interrupted, the
    // thread variables' document written.
    let runs: Value = serde_json::from_str(&read("runs.json"))
        .unwrap_or_else(|e| panic!("runs.json: {e}\n{logs}"));
    let runs = runs
        .as_array()
        .or_else(|| runs["runs"].as_array())
        .unwrap_or_else(|| panic!("runs.json is not a list: {runs}"))
        .clone();
    let interrupted = |verb: &str| {
        runs.iter()
            .filter(|r| {
                r["verb"].as_str().is_some_and(|v| v.starts_with(verb))
                    && r["state"] == "interrupted"
            })
            .count()
    };
    assert_eq!(interrupted("noise"), 2, "{runs:?}");
    if practise_refused.is_none() {
        assert_eq!(interrupted("practise"), 1, "{runs:?}");
    }
    let tv: Value =
        serde_json::from_str(&read("tv.json")).unwrap_or_else(|e| panic!("tv.json: {e}\n{logs}"));
    assert!(tv.is_object(), "{tv}");
}

/// The processes whose parent is `pid`, by their command name.
fn children(pid: u32) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: the name may hold spaces, the last ')' ends it.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = stat[stat.find('(').map_or(0, |i| i + 1)..close].to_string();
        let ppid = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|x| x.parse::<u32>().ok());
        if ppid == Some(pid) {
            v.push((p, comm));
        }
    }
    v
}

/// `lab run` itself: SIGINT while the guest's verb runs ends it within the rule (its loop looks
/// every 100 ms; QEMU is killed and reaped), exit 0, and its QEMU is gone. What the guest had
/// not yet sent home is lost, and the lab says so ("nothing stored"): the guest's record
/// travels only at the verb's end.
#[test]
fn lab_run_stops_on_sigint_within_the_rule_and_leaves_no_qemu() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    need_root!("QEMU guest");
    if !ready(bin!(), "trace") {
        return;
    }
    let d = tmp();
    let mut child = Command::new(bin!())
        .args([
            "lab",
            "run",
            "--kernel",
            "trace",
            "--smp",
            "1",
            "--icount",
            "--no-store",
            "--",
            "measure",
            "-D",
            "60s",
            "--no-store",
            "-q",
        ])
        .current_dir(d.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lab run");
    let pid = child.id();
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            // The verb has run 10 s of guest time: QEMU is up and the guest measuring.
            if line.contains("the verb has run") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let seen = rx.recv_timeout(Duration::from_secs(240)).is_ok();
    let qemu: Vec<(u32, String)> = children(pid)
        .into_iter()
        .filter(|(_, c)| c.starts_with("qemu"))
        .collect();
    let t0 = Instant::now();
    // SAFETY: kill(2) on the child this test spawned and has not reaped.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let status = child.wait().expect("wait lab run");
    let took = t0.elapsed();
    let said = reader.join().unwrap_or_default();
    assert!(seen, "the guest never reported progress:\n{said}");
    assert!(!qemu.is_empty(), "no QEMU child of the lab run:\n{said}");
    println!("STOP lab run on SIGINT: {:.1} ms", took.as_secs_f64() * 1e3);
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(
        took <= Duration::from_millis(BUDGET_MS),
        "lab run took {took:?} from SIGINT to its exit (budget {BUDGET_MS} ms):\n{said}"
    );
    assert!(said.contains("nothing stored"), "{said}");
    let left: Vec<_> = qemu
        .iter()
        .filter(|(p, _)| std::path::Path::new(&format!("/proc/{p}")).exists())
        .collect();
    assert!(left.is_empty(), "QEMU outlived the lab run: {left:?}");
}
