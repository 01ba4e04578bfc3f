//! The kernel half of PRAcTISE on the real kernel: attach the cpudl/cpupri timing programs and
//! drive cpudl_set with SCHED_DEADLINE threads — or, under kernel lockdown, the refusal must
//! name lockdown. Needs root.

use rtscope_trace::kfuncs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

const SCHED_DEADLINE: u32 = 6;

/// A thread that makes itself SCHED_DEADLINE (1 ms every 10 ms) and alternates spinning and
/// sleeping until `stop`: every throttle, replenishment, block and wake-up goes through
/// cpudl_set (enqueue/dequeue of the running deadline, kernel/sched/deadline.c).
fn dl_thread(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Result<(), String>> {
    std::thread::spawn(move || {
        let attr = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            policy: SCHED_DEADLINE,
            flags: 0,
            nice: 0,
            priority: 0,
            runtime: 1_000_000,
            deadline: 10_000_000,
            period: 10_000_000,
        };
        // SAFETY: sched_setattr(0 = this thread, a valid sched_attr of its declared size, 0).
        let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr, 0) };
        if r != 0 {
            return Err(format!(
                "sched_setattr(SCHED_DEADLINE): {}",
                std::io::Error::last_os_error()
            ));
        }
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(1500) {
                std::hint::spin_loop();
            }
            std::thread::sleep(Duration::from_millis(3));
        }
        Ok(())
    })
}

#[test]
fn kfuncs_attach_and_time_or_lockdown() {
    if !rtscope_sys::system::is_root() {
        rtscope_testkit::skipped("needs root (fentry/fexit, SCHED_DEADLINE)");
        return;
    }
    let lockdown = kfuncs::lockdown_mode();
    println!("lockdown: {lockdown:?}");
    let locked = matches!(lockdown.as_deref(), Some("integrity" | "confidentiality"));
    let t = match kfuncs::attach() {
        Err(e) => {
            assert!(
                locked,
                "attach failed without kernel lockdown ({lockdown:?}): {e}"
            );
            assert!(e.contains("kernel lockdown"), "not naming lockdown: {e}");
            assert!(
                e.contains(lockdown.as_deref().unwrap_or("?")),
                "not naming the mode: {e}"
            );
            assert!(!e.contains('\n'), "not one line: {e}");
            println!("refused as expected: {e}");
            return;
        }
        Ok(t) => t,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..2).map(|_| dl_thread(stop.clone())).collect();
    std::thread::sleep(Duration::from_millis(400));
    stop.store(true, Ordering::Relaxed);
    for h in threads {
        h.join().expect("thread").expect("SCHED_DEADLINE thread");
    }
    let s = t.read();
    assert_eq!(
        s.iter().map(|f| f.function.as_str()).collect::<Vec<_>>(),
        ["cpudl_set", "cpudl_find", "cpupri_set", "cpupri_find"]
    );
    let set = &s[0];
    assert!(set.count > 0, "no cpudl_set call timed: {set:?}");
    for f in s.iter().filter(|f| f.count > 0) {
        assert!(
            f.min_ns <= f.q1_ns
                && f.q1_ns <= f.median_ns
                && f.median_ns <= f.q3_ns
                && f.q3_ns <= f.p99_ns
                && f.p99_ns <= f.max_ns,
            "quantiles out of order: {f:?}"
        );
        assert!(f.mean_ns >= f.min_ns as f64 && f.mean_ns <= f.max_ns as f64);
    }
}
