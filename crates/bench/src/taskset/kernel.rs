//! What the kernel admits for SCHED_DEADLINE and per-thread scheduler counters.
//!
//! Fair-server detection: Linux ≥ 6.12 runs a per-CPU deadline server for CFS (dl_server) whose
//! reservation (50 ms / 1 s by default) counts against DEADLINE admission. Its parameters live in
//! debugfs (/sys/kernel/debug/sched/fair_server/cpuN/{runtime,period}), which kernel lockdown
//! makes unreadable here, so rtscope measures it instead: sleeping helper threads are given
//! SCHED_DEADLINE reservations (they never run, so this costs no CPU time) and the largest total
//! the kernel admits is found by bisection; the fair-server share is what is missing from
//! limit × CPUs after subtracting what other DEADLINE threads already hold. debugfs is read first
//! when it is readable.

use rtscope_probe::sys;
use std::sync::mpsc;

/// sched_rt_runtime_us / sched_rt_period_us; 1.0 when runtime is -1 (no limit).
pub fn rt_limit() -> Option<f64> {
    let rt = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").ok()?;
    let per = std::fs::read_to_string("/proc/sys/kernel/sched_rt_period_us").ok()?;
    let rt: f64 = rt.trim().parse().ok()?;
    let per: f64 = per.trim().parse().ok()?;
    if rt < 0.0 {
        return Some(1.0);
    }
    Some(rt / per)
}

/// RT throttling is on (sched_rt_runtime_us ≠ -1).
pub fn rt_throttling_on() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .map(|s| s.trim() != "-1")
        .unwrap_or(false)
}

/// Fair-server reservation per CPU from debugfs, when readable (runtime/period in ns).
pub fn fair_server_debugfs() -> Option<f64> {
    let base = std::path::Path::new("/sys/kernel/debug/sched/fair_server/cpu0");
    let rt: f64 = std::fs::read_to_string(base.join("runtime"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let per: f64 = std::fs::read_to_string(base.join("period"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (per > 0.0).then_some(rt / per)
}

/// Σ runtime/period of every SCHED_DEADLINE thread on the machine except this process's.
pub fn other_dl_bandwidth() -> f64 {
    let me = std::process::id().to_string();
    let mut sum = 0.0;
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    for p in procs.flatten() {
        let name = p.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if let Ok(a) = sys::sched_getattr(tid) {
                if a.sched_policy == sys::SCHED_DEADLINE && a.sched_period > 0 {
                    sum += a.sched_runtime as f64 / a.sched_period as f64;
                }
            }
        }
    }
    sum
}

fn set_dl(tid: i32, bw: f64) -> std::io::Result<()> {
    const PERIOD: u64 = 100_000_000;
    let runtime = ((bw * PERIOD as f64) as u64).max(1024);
    sys::sched_setattr(
        tid,
        &sys::SchedAttr {
            sched_policy: sys::SCHED_DEADLINE,
            sched_runtime: runtime,
            sched_deadline: PERIOD,
            sched_period: PERIOD,
            ..Default::default()
        },
    )
}

fn set_other(tid: i32) {
    let _ = sys::sched_setattr(
        tid,
        &sys::SchedAttr {
            sched_policy: sys::SCHED_OTHER,
            ..Default::default()
        },
    );
}

/// Largest total DEADLINE bandwidth the kernel admits right now for new threads in this
/// process's root domain of `cpus` CPUs, to a resolution of cpus/2^14. Uses cpus + 1 sleeping
/// helper threads so no single reservation needs more than one CPU. Returns None when even a tiny
/// reservation is refused for another reason than EBUSY (e.g. affinity narrower than the root
/// domain, no CAP_SYS_NICE).
pub fn probe_free_bandwidth(cpus: u32) -> Option<f64> {
    let k = cpus as usize + 1;
    let mut tids = Vec::with_capacity(k);
    let mut releases = Vec::with_capacity(k);
    let mut handles = Vec::with_capacity(k);
    for _ in 0..k {
        let (tid_tx, tid_rx) = mpsc::channel::<i32>();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let h = std::thread::Builder::new()
            .name("rtscope-dlprobe".into())
            .spawn(move || {
                let _ = tid_tx.send(sys::gettid());
                // Sleep (never run) until released; a blocked DEADLINE task uses no CPU time.
                let _ = go_rx.recv();
                set_other(0);
            })
            .ok()?;
        tids.push(tid_rx.recv().ok()?);
        releases.push(go_tx);
        handles.push(h);
    }
    let try_total = |x: f64| -> Result<bool, ()> {
        let mut admitted = Vec::new();
        let mut ok = true;
        for &t in &tids {
            match set_dl(t, x / k as f64) {
                Ok(()) => admitted.push(t),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    ok = false;
                    break;
                }
                Err(_) => {
                    for &a in &admitted {
                        set_other(a);
                    }
                    return Err(());
                }
            }
        }
        for &a in &admitted {
            set_other(a);
        }
        Ok(ok)
    };
    let result = (|| {
        if !try_total(1e-4).ok()? {
            return Some(0.0);
        }
        let (mut lo, mut hi) = (0.0f64, cpus as f64);
        if try_total(hi).ok()? {
            return Some(hi);
        }
        for _ in 0..14 {
            let mid = (lo + hi) / 2.0;
            if try_total(mid).ok()? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    })();
    drop(releases);
    for h in handles {
        let _ = h.join();
    }
    result
}

/// Scheduler counters of one thread (/proc/<pid>/task/<tid>/sched needs CONFIG_SCHED_DEBUG;
/// /proc/<pid>/task/<tid>/status is the fallback, without migrations).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedCounters {
    pub migrations: Option<u64>,
    pub voluntary: Option<u64>,
    pub involuntary: Option<u64>,
}

pub fn sched_counters(tid: i32) -> SchedCounters {
    let pid = std::process::id();
    let mut c = SchedCounters::default();
    if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/sched")) {
        for line in s.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim().parse::<u64>().ok();
            match k.trim() {
                "se.nr_migrations" => c.migrations = v,
                "nr_voluntary_switches" => c.voluntary = v,
                "nr_involuntary_switches" => c.involuntary = v,
                _ => {}
            }
        }
    }
    if c.voluntary.is_none() {
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")) {
            for line in s.lines() {
                if let Some(v) = line.strip_prefix("voluntary_ctxt_switches:") {
                    c.voluntary = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("nonvoluntary_ctxt_switches:") {
                    c.involuntary = v.trim().parse().ok();
                }
            }
        }
    }
    c
}
