//! Fault tests: a benchmark interrupted by SIGINT, or killed by SIGKILL, leaves no SysV IPC
//! object, no scratch file and no load process behind.
//!
//! The test binary re-executes itself (`--ignored --exact child_entry`) with
//! RTSCOPE_BENCH_CLEANUP_CHILD=<mode> to get a real process running a long benchmark, then
//! signals it and inspects the system.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ENV: &str = "RTSCOPE_BENCH_CLEANUP_CHILD";
const DIR_ENV: &str = "RTSCOPE_BENCH_CLEANUP_DIR";

/// Not a test by itself: the body of the re-executed child.
#[test]
#[ignore = "helper run by the cleanup tests in a child process"]
fn child_entry() {
    let Ok(mode) = std::env::var(ENV) else {
        rtscope_testkit::skipped(format_args!("helper only runs when {ENV} is set"));
        return;
    };
    use rtscope_bench::common::{install_stop_handlers, reaper::Reaper};
    install_stop_handlers().unwrap();
    let reaper = Reaper::start().unwrap();
    let cpu = rtscope_bench::common::default_cpu();
    match mode.as_str() {
        "msg" => {
            let cfg = rtscope_bench::rhealstone::Config {
                cpu,
                priority_high: 80,
                iterations: 100_000_000,
                max_duration_ns: 30_000_000_000,
                timer_interval_ns: 50_000,
                irq_iterations: 10,
                medium_burst_ns: 50_000,
                only: vec!["intertask_message".into()],
                variants: false,
                select_variants: vec![],
                irq_device: false,
            };
            rtscope_bench::rhealstone::run(&cfg, &reaper, |_, _| {}).unwrap();
        }
        "sem" => {
            let cfg = rtscope_bench::rhealstone::Config {
                cpu,
                priority_high: 80,
                iterations: 100_000_000,
                max_duration_ns: 30_000_000_000,
                timer_interval_ns: 50_000,
                irq_iterations: 10,
                medium_burst_ns: 50_000,
                only: vec!["semaphore_shuffle".into()],
                variants: false,
                select_variants: vec![],
                irq_device: false,
            };
            rtscope_bench::rhealstone::run(&cfg, &reaper, |_, _| {}).unwrap();
        }
        "pdlt" => {
            let dir = PathBuf::from(std::env::var(DIR_ENV).unwrap());
            let cfg = rtscope_bench::pdlt::Config {
                cpu,
                producer_priority: 80,
                consumer_priority: 70,
                syscall: rtscope_bench::pdlt::Syscall::Getdents,
                size: 3000,
                step_ns: 1_000,
                range_ns: None,
                repeats: 1000,
                scratch_dir: dir,
                compare_preempt: false,
                max_duration_ns: 30_000_000_000,
                points: 0,
            };
            rtscope_bench::pdlt::run(&cfg, &reaper, |_| {}).unwrap();
        }
        "loads" => {
            let cfg = rtscope_bench::sched_scale::Config {
                cpu,
                priority: 80,
                loads: vec![8],
                wakeups: 10_000,
                sleep_ns: 1_000_000,
                trace: false,
                sched_time: rtscope_bench::sched_scale::SchedTime::Off,
            };
            rtscope_bench::sched_scale::run(&cfg, &reaper, None, |_| {}).unwrap();
        }
        m => panic!("unknown mode {m}"),
    }
}

fn spawn(mode: &str, dir: Option<&PathBuf>) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--ignored", "--exact", "child_entry", "--nocapture"])
        .env(ENV, mode)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(d) = dir {
        c.env(DIR_ENV, d);
    }
    c.spawn().unwrap()
}

fn msq_ids() -> HashSet<i64> {
    ipc_ids("msg")
}

/// Ids of the SysV objects of one kind (`msg`, `sem`): the second column of /proc/sysvipc/KIND.
fn ipc_ids(kind: &str) -> HashSet<i64> {
    std::fs::read_to_string(format!("/proc/sysvipc/{kind}"))
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .collect()
}

fn wait_for(what: &str, limit: Duration, f: impl Fn() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(c: &Child, sig: i32) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(c.id() as i32, sig) };
}

fn root() -> bool {
    rtscope_testkit::root_or_skip("SCHED_FIFO, SysV IPC cleanup checks")
}

#[test]
fn sysv_queue_removed_after_sigint_and_sigkill() {
    if !root() {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGKILL] {
        let before = msq_ids();
        let mut c = spawn("msg", None);
        wait_for(
            "the child's SysV message queue",
            Duration::from_secs(10),
            || msq_ids().difference(&before).next().is_some(),
        );
        std::thread::sleep(Duration::from_millis(200));
        kill(&c, sig);
        let st = c.wait().unwrap();
        if sig == libc::SIGINT {
            assert!(st.success(), "SIGINT ends the run cleanly: {st:?}");
        }
        wait_for("the queue to be removed", Duration::from_secs(3), || {
            msq_ids().difference(&before).next().is_none()
        });
    }
}

/// The semaphore shuffle's SysV set (two semaphores) goes with the run, however it ends.
#[test]
fn sysv_semaphores_removed_after_sigint_and_sigkill() {
    if !root() {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGKILL] {
        let before = ipc_ids("sem");
        let mut c = spawn("sem", None);
        wait_for(
            "the child's SysV semaphore set",
            Duration::from_secs(10),
            || ipc_ids("sem").difference(&before).next().is_some(),
        );
        let ours: HashSet<i64> = ipc_ids("sem").difference(&before).copied().collect();
        std::thread::sleep(Duration::from_millis(200));
        kill(&c, sig);
        let st = c.wait().unwrap();
        if sig == libc::SIGINT {
            assert!(st.success(), "SIGINT ends the run cleanly: {st:?}");
        }
        wait_for("the set to be removed", Duration::from_secs(3), || {
            ipc_ids("sem").is_disjoint(&ours)
        });
    }
}

#[test]
fn pdlt_scratch_removed_after_sigkill() {
    if !root() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("rtscope-cleanup-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = spawn("pdlt", Some(&dir));
    wait_for("the scratch directory", Duration::from_secs(10), || {
        std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
    });
    std::thread::sleep(Duration::from_millis(500));
    kill(&c, libc::SIGKILL);
    let _ = c.wait();
    wait_for(
        "scratch files to be removed",
        Duration::from_secs(5),
        || {
            std::fs::read_dir(&dir)
                .map(|mut d| d.next().is_none())
                .unwrap_or(true)
        },
    );
    let _ = std::fs::remove_dir(&dir);
}

#[test]
fn load_processes_die_with_sigkilled_parent() {
    if !root() {
        return;
    }
    let mut c = spawn("loads", None);
    let pid = c.id();
    let children = || -> Vec<u32> {
        let mut v = Vec::new();
        if let Ok(d) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in d.flatten() {
                if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                    v.extend(s.split_whitespace().filter_map(|x| x.parse::<u32>().ok()));
                }
            }
        }
        v
    };
    // 8 load processes plus the cleanup reaper.
    wait_for("the load processes", Duration::from_secs(10), || {
        children().len() >= 9
    });
    let kids = children();
    kill(&c, libc::SIGKILL);
    let _ = c.wait();
    wait_for("every load process to exit", Duration::from_secs(3), || {
        kids.iter().all(|k| {
            // Gone, or a zombie waiting for init to reap it.
            std::fs::read_to_string(format!("/proc/{k}/stat"))
                .map(|s| {
                    s.rsplit_once(')')
                        .map(|(_, r)| r.trim_start().starts_with('Z'))
                        .unwrap_or(true)
                })
                .unwrap_or(true)
        })
    });
}
