//! Nothing survives rtscope: after a normal end, SIGINT, SIGTERM and SIGKILL of the parent, no
//! load process, scratch file or listening port may be left after 2 s. The parent is the
//! `rtscope-load-testhost` helper binary so the test process itself survives the kill.

mod common;

use rtscope_sys::Signal;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const HOST: &str = env!("CARGO_BIN_EXE_rtscope-load-testhost");
const GRACE: Duration = Duration::from_secs(2);

struct Started {
    child: Child,
    /// Kept open so the host never writes into a closed pipe.
    out: BufReader<std::process::ChildStdout>,
    sup: i32,
    workers: Vec<i32>,
    scratch: Option<String>,
    port: u16,
    /// Network interfaces that must be gone afterwards.
    ifaces: Vec<String>,
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|t| t.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in {line}"))
}

fn launch(args: &[&str]) -> Started {
    let mut cmd = Command::new(HOST);
    // If this test binary is killed (e.g. by a CI timeout), the host and its loads go too.
    // SAFETY: prctl is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            let _ = rtscope_sys::process::set_parent_death_signal(Signal::SIGTERM);
            Ok(())
        });
    }
    let mut child = cmd
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn testhost");
    let out = child.stdout.take().expect("stdout");
    let mut out = BufReader::new(out);
    let mut line = String::new();
    out.read_line(&mut line).expect("READY line");
    assert!(line.starts_with("READY"), "testhost said: {line:?}");
    let workers = field(&line, "workers=")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("pid"))
        .collect();
    let scratch = Some(field(&line, "scratch=").to_string()).filter(|s| s != "-");
    Started {
        sup: field(&line, "sup=").parse().expect("sup pid"),
        workers,
        scratch,
        port: field(&line, "port=").parse().expect("port"),
        child,
        out,
        ifaces: Vec::new(),
    }
}

impl Started {
    /// Reads the host's remaining output (FIGURE/WARNING lines, DONE) until it closes stdout.
    fn drain(&mut self) -> String {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.out, &mut rest);
        rest
    }
}

impl Drop for Started {
    /// A failed assertion must not leave a load running on the shared machine.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = rtscope_sys::process::kill(self.child.id() as i32, Signal::SIGTERM);
            let _ = self.child.wait();
        }
    }
}

/// Waits up to 2 s for every trace of the load to disappear; returns what is left.
fn leftovers(s: &Started) -> Vec<String> {
    let deadline = Instant::now() + GRACE;
    loop {
        let mut left = Vec::new();
        for &p in std::iter::once(&s.sup).chain(&s.workers) {
            if common::running(p) {
                left.push(format!("process {p}"));
            }
            // Anything a worker spawned stays in the worker's process group.
            for m in common::group_members(p) {
                left.push(format!("process {m} in group {p}"));
            }
        }
        if let Some(d) = &s.scratch {
            if std::path::Path::new(d).exists() {
                left.push(format!("scratch dir {d}"));
            }
        }
        for n in &s.ifaces {
            if std::path::Path::new(&format!("/sys/class/net/{n}")).exists() {
                left.push(format!("interface {n}"));
            }
        }
        if s.port != 0 && common::port_listening(s.port) {
            left.push(format!("listening port {}", s.port));
        }
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

const MIX: &[&str] = &[
    "cpu-cache,io",
    "--wss",
    "8M",
    "--disk-size",
    "32M",
    "--groups",
    "2",
];

fn check_signal(sig: Signal, name: &str) {
    let _g = common::serial();
    let mut s = launch(MIX);
    assert!(
        s.workers.len() >= 2 + 80 + 1 + 4,
        "{} workers",
        s.workers.len()
    );
    assert!(s.scratch.is_some() && s.port != 0);
    std::thread::sleep(Duration::from_millis(500));
    let _ = rtscope_sys::process::kill(s.child.id() as i32, sig);
    let left = leftovers(&s);
    let rest = s.drain();
    let _ = s.child.wait();
    assert!(left.is_empty(), "after {name}: {left:?}");
    if sig != Signal::SIGKILL {
        // A signalled rtscope still stops the loads properly and reports their figures.
        assert!(
            rest.contains("FIGURE io hackbench_messages_per_s"),
            "{rest}"
        );
        assert!(rest.trim_end().ends_with("DONE"), "{rest}");
    }
    // The port can be bound again (TIME_WAIT leftovers do not block a listener).
    std::net::TcpListener::bind(("127.0.0.1", s.port)).expect("port free again");
}

#[test]
fn cleanup_after_normal_end() {
    let _g = common::serial();
    let mut args = MIX.to_vec();
    args.extend(["--duration-ms", "800"]);
    let mut s = launch(&args);
    let rest = s.drain();
    let status = s.child.wait().expect("wait");
    assert!(status.success(), "{rest}");
    assert!(rest.contains("FIGURE cpu-cache accesses_per_s"), "{rest}");
    let left = leftovers(&s);
    assert!(left.is_empty(), "after normal end: {left:?}");
}

#[test]
fn cleanup_after_sigint() {
    check_signal(Signal::SIGINT, "SIGINT");
}

#[test]
fn cleanup_after_sigterm() {
    check_signal(Signal::SIGTERM, "SIGTERM");
}

#[test]
fn cleanup_after_sigkill_of_the_parent() {
    check_signal(Signal::SIGKILL, "SIGKILL");
}

#[test]
fn exec_descendants_die_with_a_sigkilled_parent() {
    let _g = common::serial();
    // The command forks a grandchild that would outlive a naive kill of the direct child.
    let mut s = launch(&["exec", "--", "/bin/sh", "-c", "sleep 100 & sleep 100"]);
    std::thread::sleep(Duration::from_millis(300));
    let group = common::group_members(s.workers[0]);
    assert!(
        group.len() >= 2,
        "expected sh and its sleeps, got {group:?}"
    );
    let _ = rtscope_sys::process::kill(s.child.id() as i32, Signal::SIGKILL);
    let left = leftovers(&s);
    let _ = s.child.wait();
    assert!(left.is_empty(), "after SIGKILL: {left:?}");
}

#[test]
fn veth_leaves_no_interface_after_sigkill() {
    let _g = common::serial();
    if !common::is_root() {
        rtscope_testkit::skipped("--net-veth needs root");
        return;
    }
    let mut s = launch(&["net", "--veth"]);
    s.ifaces = vec![format!("rts{}a", s.sup), format!("rts{}b", s.sup)];
    assert!(
        std::path::Path::new(&format!("/sys/class/net/{}", s.ifaces[1])).exists(),
        "host end of the veth pair missing while running"
    );
    std::thread::sleep(Duration::from_millis(300));
    let _ = rtscope_sys::process::kill(s.child.id() as i32, Signal::SIGKILL);
    let left = leftovers(&s);
    let _ = s.child.wait();
    assert!(left.is_empty(), "after SIGKILL: {left:?}");
}
