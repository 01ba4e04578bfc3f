//! Tracing state is removed on SIGINT and SIGTERM (clean stop through the session), and a
//! tracefs instance orphaned by SIGKILL is removed by the next session. The test re-executes its
//! own binary as the traced child (env RTSCOPE_CLEANUP_CHILD=<mechanism>).

use rtscope_sys::Signal;
use rtscope_trace::{check, leftover_instances, Mechanism, TraceSession};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);
extern "C" fn on_signal(_: i32) {
    STOP.store(true, Ordering::SeqCst);
}

/// Child: start a session, report, wait for a signal, stop cleanly, exit 0.
fn child(mech: Mechanism) -> ! {
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        // The handler only stores to an atomic.
        rtscope_sys::signals::install(sig, on_signal);
    }
    let s = match TraceSession::start(&[0], mech) {
        Ok(s) => s,
        Err(e) => {
            println!("ERROR {e}");
            std::process::exit(3);
        }
    };
    println!("READY");
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(5));
    }
    match s.stop() {
        Ok(c) => {
            println!("STOPPED {}", c.events.len());
            std::process::exit(0)
        }
        Err(e) => {
            println!("ERROR {e}");
            std::process::exit(4)
        }
    }
}

fn bpf_link_fds(pid: u32) -> usize {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return 0;
    };
    rd.flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path())
                .map(|t| t.contains("link_type:"))
                .unwrap_or(false)
        })
        .count()
}

/// Kill the child if the test hangs (a stuck child must fail the test, not hang CI).
fn watchdog(pid: u32) -> std::sync::Arc<AtomicBool> {
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let d = done.clone();
    std::thread::spawn(move || {
        for _ in 0..600 {
            if d.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = rtscope_sys::process::kill(pid as i32, Signal::SIGKILL);
    });
    done
}

fn mine(pid: u32) -> Vec<String> {
    leftover_instances()
        .into_iter()
        .filter(|n| n.starts_with(&format!("rtscope-{pid}-")))
        .collect()
}

fn run_child(mech: Mechanism, sig: Signal) {
    let exe = std::env::current_exe().expect("own exe");
    let mut c = Command::new(exe)
        .args([
            "--exact",
            "signals_remove_tracing_state",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RTSCOPE_CLEANUP_CHILD", mech.name())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let pid = c.id();
    let dog = watchdog(pid);
    let mut out = BufReader::new(c.stdout.take().expect("stdout"));
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).expect("read") == 0 {
            panic!("child ended before READY");
        }
        if line.contains("READY") || line.contains("ERROR") {
            break;
        }
    }
    assert!(line.contains("READY"), "child: {line}");
    match mech {
        Mechanism::Tracefs => assert_eq!(mine(pid).len(), 1, "instance should exist while tracing"),
        _ => assert!(
            bpf_link_fds(pid) >= 10,
            "BPF links should be attached while tracing"
        ),
    }
    std::thread::sleep(Duration::from_millis(200));
    let _ = rtscope_sys::process::kill(pid as i32, sig);
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut out, &mut rest);
    let st = c.wait().expect("wait");
    dog.store(true, Ordering::SeqCst);
    assert!(st.success(), "child exit {st:?}, output {rest}");
    assert!(
        rest.contains("STOPPED"),
        "child did not stop cleanly: {rest}"
    );
    assert!(
        mine(pid).is_empty(),
        "tracefs instance left behind after signal {sig}"
    );
    println!("{} + signal {sig}: clean ({})", mech.name(), rest.trim());
}

#[test]
fn signals_remove_tracing_state() {
    if let Ok(m) = std::env::var("RTSCOPE_CLEANUP_CHILD") {
        child(m.parse().unwrap_or(Mechanism::Off));
    }
    if !rtscope_sys::system::is_root() {
        rtscope_testkit::skipped("needs root");
        return;
    }
    let mut ran = 0;
    for mech in [Mechanism::Tracefs, Mechanism::Bpf] {
        if let Err(e) = check(mech) {
            rtscope_testkit::skipped(format_args!("{}: {e}", mech.name()));
            continue;
        }
        for sig in [Signal::SIGINT, Signal::SIGTERM] {
            run_child(mech, sig);
            ran += 1;
        }
    }
    if check(Mechanism::Tracefs).is_ok() {
        // SIGKILL: the child cannot clean up; the next session removes the orphan.
        let exe = std::env::current_exe().expect("own exe");
        let mut c = Command::new(exe)
            .args([
                "--exact",
                "signals_remove_tracing_state",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("RTSCOPE_CLEANUP_CHILD", "tracefs")
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn");
        let pid = c.id();
        let mut out = BufReader::new(c.stdout.take().expect("stdout"));
        let mut line = String::new();
        while out.read_line(&mut line).unwrap_or(0) > 0 && !line.contains("READY") {}
        let _ = c.kill();
        let _ = c.wait();
        assert_eq!(
            mine(pid).len(),
            1,
            "SIGKILL leaves the instance (nothing can run in the child)"
        );
        let s = TraceSession::start(&[0], Mechanism::Tracefs).expect("start");
        assert!(
            mine(pid).is_empty(),
            "stale instance of dead pid {pid} not removed"
        );
        drop(s);
        assert!(
            mine(std::process::id()).is_empty(),
            "dropped session left its instance"
        );
        println!("tracefs + SIGKILL: orphan removed by the next session");
        ran += 1;
    }
    assert!(
        ran > 0
            || check(Mechanism::Auto)
                .map(|m| m == Mechanism::Off)
                .unwrap_or(true)
    );
}
