//! What every real-kernel integration test repeats: is this root (and if not, say `SKIPPED:` with
//! the reason, never skip silently), one lock so that real-kernel runs of one test binary do not
//! share the CPUs, the `rtscope` binary under test, temporary directories and JSON files;
//! [`synth`], a generated traced run for the streaming pipeline's offline tests and benchmarks;
//! and [`http`], one request on the loopback for the monitor's endpoint tests.

pub mod http;
pub mod synth;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// The `rtscope` binary Cargo built for this test crate (only in crates that have it:
/// `CARGO_BIN_EXE_rtscope` is set for the cli crate's tests).
#[macro_export]
macro_rules! bin {
    () => {
        env!("CARGO_BIN_EXE_rtscope")
    };
}

/// Return from the test (after printing `SKIPPED: needs root (<why>)`) unless running as root;
/// then hold the real-kernel lock until the end of the test.
#[macro_export]
macro_rules! need_root {
    ($why:expr) => {
        if !$crate::root_or_skip($why) {
            return;
        }
        let _serial = $crate::serial();
    };
}

pub fn is_root() -> bool {
    rtscope_sys::system::is_root()
}

/// True when root; otherwise reports `SKIPPED: needs root (<why>)` and returns false.
pub fn root_or_skip(why: &str) -> bool {
    if is_root() {
        return true;
    }
    skipped(format_args!("needs root ({why})"));
    false
}

/// Say that the calling test did not run and why: `SKIPPED: <reason>` on stdout, and a line
/// `<test binary>\t<test>\t<reason>` appended to the file named by `RTSCOPE_SKIP_LOG`.
/// Cargo captures a passing test's stdout, so the printed line alone never reaches a CI log;
/// `scripts/test.sh` sets the variable, prints every skip at the end and fails the run on a
/// skip this machine could have run.
pub fn skipped(reason: impl std::fmt::Display) {
    let reason = reason.to_string();
    println!("SKIPPED: {reason}");
    let Some(log) = std::env::var_os("RTSCOPE_SKIP_LOG") else {
        return;
    };
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    // Cargo's test binaries are `<name>-<hash>`: the hash says nothing to a reader.
    let exe = exe
        .rsplit_once('-')
        .map_or(exe.as_str(), |(n, _)| n)
        .to_owned();
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let line = format!("{exe}\t{test}\t{}\n", reason.replace(['\n', '\t'], " "));
    use std::io::Write;
    // O_APPEND: one write of a short line, so concurrent test binaries do not interleave.
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
}

static SERIAL: Mutex<()> = Mutex::new(());

/// Real-kernel tests of one binary run one at a time: concurrent runs would share the CPUs, the
/// /dev/cpu_dma_latency request and the cpuset hierarchy, and disturb each other's counts. A
/// test that panicked while holding it does not block the others.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// A JSON file the command under test must have written.
pub fn read_json(p: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{} not written: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: invalid JSON: {e}", p.display()))
}

/// The kernel lab's tests: `rtscope lab run` boots a cached kernel under QEMU.
pub mod lab {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output};

    /// Run `bin` with `args` in `cwd`, collecting its output.
    pub fn run(bin: &str, args: &[&str], cwd: &Path) -> Output {
        Command::new(bin)
            .args(args)
            .current_dir(cwd)
            .output()
            .expect("running rtscope")
    }

    pub fn text(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    /// QEMU present, else `SKIPPED:` and false; a kernel of `preset` in the lab's cache, else a
    /// failure naming the build command (the suite's set-up builds it: a missing kernel must not
    /// pass as a skip).
    pub fn ready(bin: &str, preset: &str) -> bool {
        if Command::new("qemu-system-x86_64")
            .arg("--version")
            .output()
            .is_err()
        {
            crate::skipped("qemu-system-x86_64 is not installed (scripts/setup.sh installs it)");
            return false;
        }
        let d = crate::tmp();
        let o = run(bin, &["lab", "list", "--json", "-"], d.path());
        assert!(o.status.success(), "lab list: {}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("lab list JSON");
        assert!(
            v.as_array()
                .is_some_and(|a| a.iter().any(|k| k["preset"] == preset)),
            "no `{preset}` kernel in the lab cache: build it with `rtscope lab kernel build --preset {preset}` (scripts/setup.sh does)"
        );
        true
    }

    /// Whether the lab's cache has a kernel of `preset` (no assertion: for the presets the
    /// suite's set-up does not build by default).
    pub fn has_kernel(bin: &str, preset: &str) -> bool {
        let d = crate::tmp();
        let o = run(bin, &["lab", "list", "--json", "-"], d.path());
        serde_json::from_slice::<serde_json::Value>(&o.stdout)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .is_some_and(|a| a.iter().any(|k| k["preset"] == preset))
    }

    /// `rtscope lab run --kernel KERNEL [--preempt MODEL] --icount --smp 1 --no-store --timeout
    /// 110s -- VERB… --no-store --json NAME`, which must succeed within 120 s; the record the
    /// verb wrote, brought home.
    pub fn icount_record(
        bin: &str,
        kernel: &str,
        preempt: Option<&str>,
        verb: &[&str],
        name: &str,
    ) -> serde_json::Value {
        icount_record_smp(bin, kernel, preempt, "1", verb, name)
    }

    /// [`icount_record`] with `smp` vCPUs (QEMU runs them in turns on one host thread).
    pub fn icount_record_smp(
        bin: &str,
        kernel: &str,
        preempt: Option<&str>,
        smp: &str,
        verb: &[&str],
        name: &str,
    ) -> serde_json::Value {
        let d = crate::tmp();
        let mut args = vec!["lab", "run", "--kernel", kernel];
        if let Some(p) = preempt {
            args.extend(["--preempt", p]);
        }
        args.extend([
            "--icount",
            "--smp",
            smp,
            "--no-store",
            "--timeout",
            "110s",
            "--",
        ]);
        args.extend(verb);
        args.extend(["--no-store", "--json", name]);
        let t0 = std::time::Instant::now();
        let o = run(bin, &args, d.path());
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert!(o.status.success(), "{kernel}: {out}\n{err}");
        let took = t0.elapsed();
        assert!(
            took < std::time::Duration::from_secs(120),
            "{kernel}: {took:?}"
        );
        let p = brought_home(d.path(), name)
            .unwrap_or_else(|| panic!("{kernel}: {name} not brought home: {err}"));
        crate::read_json(&p)
    }

    /// A file the guest wrote in its working directory, brought home under `dir`.
    pub fn brought_home(dir: &Path, name: &str) -> Option<PathBuf> {
        std::fs::read_dir(dir.join("rtscope-results"))
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path().join(name))
            .find(|p| p.is_file())
    }
}

/// What [`run_measured`] saw of a child.
pub struct Measured {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// Peak resident set, KiB (`ru_maxrss` from wait4).
    pub maxrss_kib: u64,
    pub elapsed: std::time::Duration,
    /// Killed with SIGKILL after the timeout.
    pub timed_out: bool,
}

/// Run `c` (stdin closed, output captured), SIGKILL it after `timeout`, and read its exit code
/// (128 + signal when killed), peak RSS and wall time.
///
/// A child's `ru_maxrss` starts from the memory of the process it was forked from (Linux folds
/// the old address space's high-water mark in at exec), and a test that generated large inputs
/// is large: so the command runs under `/usr/bin/time -f %M`, a small process whose own child's
/// peak it reports. Without `/usr/bin/time` the child's wait4 figure is used (an upper bound).
pub fn run_measured(c: std::process::Command, timeout: std::time::Duration) -> Measured {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let time = Path::new("/usr/bin/time");
    let rss_file = tempfile::NamedTempFile::new().expect("a temporary file");
    let mut c = if time.exists() {
        let mut w = std::process::Command::new(time);
        w.args(["-f", "%M", "-o"])
            .arg(rss_file.path())
            .arg(c.get_program())
            .args(c.get_args());
        for (k, v) in c.get_envs() {
            match v {
                Some(v) => w.env(k, v),
                None => w.env_remove(k),
            };
        }
        if let Some(d) = c.get_current_dir() {
            w.current_dir(d);
        }
        w
    } else {
        c
    };
    // Its own group: the timeout kills the command and its wrapper together.
    c.process_group(0);
    let t0 = std::time::Instant::now();
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Reaped by wait4 below (for its rusage), not by Child::wait.
    #[allow(clippy::zombie_processes)]
    let mut child = c.spawn().expect("spawn the child");
    let pid = child.id() as i32;
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = so.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = se.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    });
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let late = rx.recv_timeout(timeout).is_err();
        if late {
            // Our own child's group, not reaped yet (the reaper sends first).
            let _ = rtscope_sys::process::kill(-pid, rtscope_sys::Signal::SIGKILL);
        }
        late
    });
    // Reaped here (for its peak RSS), not by Child::wait.
    let (status, child_rss_kib) = rtscope_sys::process::wait_with_max_rss(pid).expect("wait4");
    let elapsed = t0.elapsed();
    let _ = tx.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    let mut code = rtscope_sys::process::exit_code(status)
        .unwrap_or_else(|| 128 + rtscope_sys::process::term_signal(status).unwrap_or(0));
    let mut stderr = err.join().unwrap_or_default();
    let mut maxrss_kib = child_rss_kib;
    let measured = std::fs::read_to_string(rss_file.path()).unwrap_or_default();
    // GNU time writes "Command exited with non-zero status N" (or "terminated by signal N")
    // before the figure; its own exit is the command's, and it says a signal on stderr.
    if let Some(kib) = measured.lines().last().and_then(|l| l.trim().parse().ok()) {
        maxrss_kib = kib;
        if let Some(sig) = measured
            .lines()
            .find_map(|l| l.strip_prefix("Command terminated by signal "))
            .and_then(|n| n.trim().parse::<i32>().ok())
        {
            code = 128 + sig;
        }
        stderr = stderr
            .lines()
            .filter(|l| !l.starts_with("Command terminated by signal"))
            .map(|l| format!("{l}\n"))
            .collect();
    }
    Measured {
        code,
        stdout: out.join().unwrap_or_default(),
        stderr,
        maxrss_kib,
        elapsed,
        timed_out,
    }
}
