//! What the kernel admits for SCHED_DEADLINE and per-thread scheduler counters.
//!
//! Fair-server detection: Linux ≥ 6.12 runs a per-CPU deadline server for CFS (dl_server) whose
//! reservation (50 ms / 1 s by default) counts against DEADLINE admission. Its parameters live in
//! debugfs (/sys/kernel/debug/sched/fair_server/cpuN/{runtime,period}), which kernel lockdown
//! makes unreadable here; rtscope then assumes the default on kernels ≥ 6.12 and says so.
//!
//! The free bandwidth is not probed by giving sleeping helper threads SCHED_DEADLINE
//! reservations: that leaks. A task that leaves SCHED_DEADLINE while blocked keeps its bandwidth
//! in the root domain's total until the domain is rebuilt — sched_dl_overflow leaves the decrease
//! to switched_from_dl()'s 0-lag timer, which is only armed for queued tasks — so every later
//! admission on the machine fails with EBUSY.

use rtscope_probe::sys;

/// The kernel's bounds on a SCHED_DEADLINE period, ns (`kernel.sched_deadline_period_min_us`
/// and `…_max_us`; the kernel's defaults, 100 µs and 2^22 µs, where they cannot be read).
pub fn dl_period_limits_ns() -> (u64, u64) {
    let read = |name: &str, default_us: u64| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(default_us)
            .saturating_mul(1000)
    };
    (
        read("sched_deadline_period_min_us", 100),
        read("sched_deadline_period_max_us", 1 << 22),
    )
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

/// The fair server's default reservation: 50 ms every 1 s (kernel/sched/fair.c, fair_server_init).
pub const FAIR_SERVER_DEFAULT: f64 = 0.05;

/// (major, minor) of the running kernel.
pub fn kernel_version() -> Option<(u32, u32)> {
    let s = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let mut it = s.trim().split(['.', '-']);
    let maj = it.next()?.parse().ok()?;
    let min = it.next()?.parse().ok()?;
    Some((maj, min))
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
