//! sched-scale: SCHED_FIFO scheduling time against the number of runnable SCHED_OTHER
//! processes (heursch-2001 §4, Table 3: 1.0 µs at 0 load processes to 52.1 µs at 200 on Linux
//! 2.4, whose schedule() walked the whole run queue computing goodness()).
//!
//! One SCHED_FIFO thread sleeps `sleep` (1 s in the paper) and wakes, `wakeups` times per load
//! level, on a CPU where N CPU-bound SCHED_OTHER processes spin. Per wake-up we record
//! - wake-up → run on our own clock: programmed expiry T → first user-space clock read;
//! - from trace events when tracefs works: the timer interrupt's clock read (hrtimer_expire_entry
//!   `now`, ns) → our first clock read — the kernel's wake + schedule + switch + return, the
//!   nearest analogue of the paper's schedule() timing — and sched_waking → sched_switch
//!   (line timestamps, µs resolution).

use crate::common::reaper::Reaper;
use crate::common::rt;
use crate::common::tracefs::{parse_line, Expiries, Instance};
use crate::common::{mono_ns, sleep_until, stop_requested, BenchError, Result};
use rtscope_analysis::benchstats::fit_line;
use rtscope_model::bench::{SchedScaleResult, SchedScaleRow};
use rtscope_model::{Histogram, Stats};
use rtscope_sys::affinity::CpuMask;
use rtscope_sys::mem::SharedMap;
use rtscope_sys::process::{self, Fork};
use rtscope_sys::Signal;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

pub const DEFAULT_LOADS: [u32; 9] = [0, 10, 20, 30, 40, 50, 100, 150, 200];
pub const MAX_LOADS: u32 = 1000;

rtscope_model::request_fields! {
    /// The fields of a scaling request ([`Flags`]) as its errors name them.
    pub enum Field in "sched_scale" {
        Priority = "priority" => PRIORITY,
        Loads = "loads" => LOADS,
        Wakeups = "wakeups" => WAKEUPS,
        Sleep = "sleep" => SLEEP,
        SchedTime = "sched_time" => SCHED_TIME,
        Protocol = "protocol" => PROTOCOL,
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub cpu: u32,
    pub priority: u32,
    pub loads: Vec<u32>,
    pub wakeups: u64,
    pub sleep_ns: u64,
    /// Capture kernel events (tracefs instance) when available.
    pub trace: bool,
    /// Time the scheduler itself with fentry programs (`--sched-time`).
    pub sched_time: SchedTime,
}

/// `--sched-time`: time in the scheduler (Table 3's quantity) through fentry/tp_btf programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedTime {
    /// When the kernel allows it; the result says why not otherwise.
    Auto,
    /// Required: the command stops before measuring if the programs cannot attach.
    On,
    /// Required, and the scheduler's entry marked by the preemptirq tracepoints on any kernel
    /// (the method PREEMPT_RT needs; to compare other kernels by the same method).
    Preemptirq,
    Off,
}

impl SchedTime {
    pub fn parse(s: &str) -> std::result::Result<SchedTime, String> {
        match s {
            "auto" => Ok(SchedTime::Auto),
            "on" => Ok(SchedTime::On),
            "off" => Ok(SchedTime::Off),
            "preemptirq" => Ok(SchedTime::Preemptirq),
            _ => Err(format!(
                "{SCHED_TIME}: must be auto, on, preemptirq or off; got '{s}'"
            )),
        }
    }
}

/// The in-kernel timing of the scheduler (rtscope-trace's fentry programs, given by the caller
/// so this crate needs no BPF).
pub trait SchedTimer {
    /// Durations (ns) timed since the last call, and the switches to the thread that could not
    /// be timed (missed or dropped).
    fn drain(&mut self) -> (Vec<u64>, u64);
}

impl Config {
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(BenchError::Invalid(m));
        if !(1..=99).contains(&self.priority) {
            return bad(format!("{PRIORITY}: must be 1..=99, got {}", self.priority));
        }
        if self.loads.is_empty() {
            return bad(format!(
                "{LOADS}: needs at least one number of load processes"
            ));
        }
        if let Some(n) = self.loads.iter().find(|n| **n > MAX_LOADS) {
            return bad(format!(
                "{LOADS}: each value must be 0..={MAX_LOADS}, got {n}"
            ));
        }
        let mut s = self.loads.clone();
        s.sort_unstable();
        s.dedup();
        if s.len() != self.loads.len() {
            return bad(format!("{LOADS}: values must be distinct"));
        }
        if !(2..=100_000).contains(&self.wakeups) {
            return bad(format!(
                "{WAKEUPS}: must be 2..=100000, got {}",
                self.wakeups
            ));
        }
        if !(100_000..=10_000_000_000).contains(&self.sleep_ns) {
            return bad(format!(
                "{SLEEP}: must be 0.1ms..=10s, got {} ms",
                self.sleep_ns as f64 / 1e6
            ));
        }
        crate::common::check_cpu(self.cpu)
    }
}

/// Parse "0,10,20" into distinct values (validated by `Config::validate`).
pub fn parse_loads(s: &str) -> std::result::Result<Vec<u32>, String> {
    s.split(',')
        .map(|p| {
            p.trim().parse::<u32>().map_err(|_| {
                format!("{LOADS}: '{p}' is not a whole number (expected a list like 0,10,20)")
            })
        })
        .collect()
}

/// N CPU-bound SCHED_OTHER processes on one CPU. Each child dies with us (PR_SET_PDEATHSIG,
/// SIGKILL) and exits by itself at a deadline anyway; drop kills and reaps them.
///
/// The deadline lives in a shared page so that it can be set once every child runs: forking
/// N processes onto a CPU the earlier ones already keep busy takes a time that grows with N
/// (the parent gets 1/(k+1) of the CPU after k forks), seconds for N = 200 on a slow or
/// emulated CPU, so a deadline fixed before the first fork could pass during the level.
pub struct Loads {
    pids: Vec<i32>,
    deadline: SharedMap,
}

impl Loads {
    /// `until_ns` bounds the children until [`Loads::set_deadline`] replaces it.
    pub fn spawn(n: u32, cpu: u32, until_ns: u64) -> Result<Loads> {
        // A fresh anonymous shared page: zero-filled, a valid AtomicU64.
        let deadline =
            SharedMap::new(4096).map_err(|e| BenchError::io("mmap (load deadline)", e))?;
        let loads_deadline = |m: &SharedMap| -> &'static AtomicU64 {
            // SAFETY: the page is mapped, aligned and zero-filled until `Loads` drops (after its
            // children are reaped); the child's copy lives until it exits.
            unsafe { &*(m.as_ptr() as *const AtomicU64) }
        };
        loads_deadline(&deadline).store(until_ns, std::sync::atomic::Ordering::Relaxed);
        // Everything the child needs is prepared before fork: it then calls only
        // async-signal-safe syscalls (prctl, getppid, sched_setaffinity, clock_gettime, _exit).
        // cpu was validated against the online CPUs (< CPU_SETSIZE).
        let set = CpuMask::of(&[cpu]).map_err(|e| BenchError::io("cpu set", e))?;
        let parent = process::getpid();
        let mut loads = Loads {
            pids: Vec::with_capacity(n as usize),
            deadline,
        };
        for _ in 0..n {
            // SAFETY: the child runs only `load_child`, which never returns.
            match unsafe { process::fork() } {
                Err(e) => return Err(BenchError::io("fork (load process)", e)),
                Ok(Fork::Child) => load_child(parent, &set, loads_deadline(&loads.deadline)),
                Ok(Fork::Parent(pid)) => loads.pids.push(pid),
            }
        }
        Ok(loads)
    }

    /// Every child exits by itself at `until_ns` (CLOCK_MONOTONIC).
    pub fn set_deadline(&self, until_ns: u64) {
        // SAFETY: the page is mapped until drop, zero-filled then only used as an AtomicU64.
        unsafe { &*(self.deadline.as_ptr() as *const AtomicU64) }
            .store(until_ns, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn pids(&self) -> &[i32] {
        &self.pids
    }

    /// How many are in state R right now (/proc/<pid>/stat).
    pub fn running(&self) -> u32 {
        self.pids
            .iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .ok()
                    .and_then(|s| {
                        s.rsplit_once(')')
                            .map(|(_, r)| r.trim_start().starts_with('R'))
                    })
                    .unwrap_or(false)
            })
            .count() as u32
    }
}

impl Drop for Loads {
    fn drop(&mut self) {
        for &p in &self.pids {
            let _ = process::kill(p, Signal::SIGKILL);
        }
        for &p in &self.pids {
            let _ = process::wait(p);
        }
        // The page is unmapped when `deadline` drops, no child left to use it.
    }
}

fn load_child(parent: i32, set: &CpuMask, deadline: &AtomicU64) -> ! {
    // Async-signal-safe calls only; the loop is bounded by the deadline.
    process::die_with_parent(Signal::SIGKILL, parent);
    let _ = set.apply(0);
    // heursch-2001 §4's load: `while(1) { result = sqrt(400); }`.
    let mut x = 400.0f64;
    loop {
        for _ in 0..10_000 {
            x = std::hint::black_box(std::hint::black_box(x).sqrt() * 20.0);
        }
        let until_ns = deadline.load(std::sync::atomic::Ordering::Relaxed);
        if rtscope_sys::clock::monotonic_ns() >= until_ns {
            process::exit_now(0);
        }
    }
}

/// Per-wake-up kernel figures from the trace: (irq→run ns, waking→switch ns).
pub fn kernel_times(text: &str, tid: u32, wakes: &[(u64, u64)]) -> (Histogram, Histogram) {
    let run_of: HashMap<u64, u64> = wakes.iter().copied().collect();
    let mut ours = Expiries::default();
    let mut irq_to_run = Histogram::new();
    let mut waking_to_switch = Histogram::new();
    let mut waking_ts: Option<u64> = None;
    let tid_s = tid.to_string();
    for l in text.lines().filter_map(parse_line) {
        if let Some((e, now)) = ours.line(&l, tid, |e| run_of.contains_key(&e)) {
            if let Some(&run) = run_of.get(&e) {
                if run >= now {
                    irq_to_run.record(run - now);
                }
            }
            continue;
        }
        match l.event {
            "sched_waking" if l.field("pid") == Some(tid_s.as_str()) => waking_ts = Some(l.ts_ns),
            "sched_switch" if l.field("next_pid") == Some(tid_s.as_str()) => {
                if let Some(w) = waking_ts.take() {
                    // µs-resolution line timestamps: a 0 difference is recorded as 1 ns so the
                    // histogram (1 ns … 100 s) keeps the sample.
                    waking_to_switch.record(l.ts_ns.saturating_sub(w).max(1));
                }
            }
            _ => {}
        }
    }
    (irq_to_run, waking_to_switch)
}

fn cv(s: &Stats) -> Option<f64> {
    match (s.avg_ns, s.stddev_ns) {
        (Some(m), Some(d)) if m > 0.0 => Some(d / m),
        _ => None,
    }
}

pub fn run(
    cfg: &Config,
    reaper: &Reaper,
    mut timer: Option<&mut dyn SchedTimer>,
    mut progress: impl FnMut(u32),
) -> Result<SchedScaleResult> {
    cfg.validate()?;
    rt::lock_memory()?;
    let mut rows = Vec::new();
    let mut trace_unavailable = if cfg.trace {
        None
    } else {
        Some("disabled on request".to_string())
    };
    let inst = if cfg.trace {
        match Instance::create(
            reaper,
            &format!("rtscope-bench-sched-{}", std::process::id()),
            cfg.cpu,
            4096,
            &[
                ("timer/hrtimer_start", None),
                ("timer/hrtimer_expire_entry", None),
                ("sched/sched_waking", None),
                ("sched/sched_switch", None),
            ],
        ) {
            Ok(i) => Some(i),
            Err(e) => {
                trace_unavailable = Some(e.to_string());
                None
            }
        }
    } else {
        None
    };
    for &n in &cfg.loads {
        if stop_requested() {
            break;
        }
        progress(n);
        // Settle time lets every load process become runnable before the first sample.
        let settle_ns = 100_000_000 + n as u64 * 1_000_000;
        let level_ns = settle_ns + cfg.wakeups * cfg.sleep_ns + 5_000_000_000;
        // While forking: a generous bound (1 s per child), replaced once all of them run.
        let loads = Loads::spawn(n, cfg.cpu, mono_ns() + level_ns + n as u64 * 1_000_000_000)?;
        loads.set_deadline(mono_ns() + level_ns);
        sleep_until(mono_ns() + settle_ns);
        if let Some(t) = timer.as_deref_mut() {
            // Only this level's wake-ups.
            t.drain();
        }
        let res = std::thread::scope(|s| {
            let t = s.spawn(|| -> Result<(u32, Vec<(u64, u64)>)> {
                rt::become_fifo(cfg.cpu, cfg.priority)?;
                let tid = rtscope_probe::sys::gettid() as u32;
                let mut wakes = Vec::with_capacity(cfg.wakeups as usize);
                if let Some(i) = &inst {
                    i.on()?;
                }
                for _ in 0..cfg.wakeups {
                    if stop_requested() {
                        break;
                    }
                    let t = mono_ns() + cfg.sleep_ns;
                    sleep_until(t);
                    let run = mono_ns();
                    wakes.push((t, run));
                    // The paper's FIFO process computes a little after each wake-up.
                    let mut k = 0.0f64;
                    for _ in 0..50 {
                        k = std::hint::black_box(std::hint::black_box(2.0f64).sqrt() + k);
                    }
                }
                if let Some(i) = &inst {
                    i.off()?;
                }
                Ok((tid, wakes))
            });
            rt::join(t, "sched-scale")
        });
        let running = loads.running();
        drop(loads);
        let (tid, wakes) = res?;
        let mut own = Histogram::new();
        for (t, r) in &wakes {
            own.record(r.saturating_sub(*t));
        }
        let own_stats = Stats::from_histogram(&own);
        let (mut irq, mut wts) = (None, None);
        if let Some(i) = &inst {
            let (text, lost) = i.read()?;
            let (h1, h2) = kernel_times(&text, tid, &wakes);
            if lost > 0 {
                trace_unavailable
                    .get_or_insert(format!("trace ring buffer dropped {lost} events at N={n}"));
            }
            irq = Some(h1);
            wts = Some(h2);
        }
        let irq_stats = irq.as_ref().map(Stats::from_histogram);
        let (mut sched, mut sched_missed) = (None, 0);
        if let Some(t) = timer.as_deref_mut() {
            let (samples, missed) = t.drain();
            let mut h = Histogram::new();
            for d in samples {
                h.record(d.max(1));
            }
            sched = Some(h);
            sched_missed = missed;
        }
        let sched_stats = sched.as_ref().map(Stats::from_histogram);
        let wts_stats = wts.as_ref().map(Stats::from_histogram);
        rows.push(SchedScaleRow {
            load_processes: n,
            wakeups: wakes.len() as u64,
            wakeup_to_run_cv: cv(&own_stats),
            wakeup_to_run: own.into(),
            wakeup_to_run_stats: own_stats,
            irq_to_run_cv: irq_stats.as_ref().and_then(cv),
            irq_to_run: irq.map(Into::into),
            irq_to_run_stats: irq_stats,
            waking_to_switch: wts.map(Into::into),
            waking_to_switch_stats: wts_stats,
            load_running_at_end: running,
            sched_time_cv: sched_stats.as_ref().and_then(cv),
            sched_time: sched.map(Into::into),
            sched_time_stats: sched_stats,
            sched_time_missed: sched_missed,
        });
    }
    if let Some(i) = inst {
        i.remove(reaper);
    }
    let xs: Vec<f64> = rows.iter().map(|r| r.load_processes as f64).collect();
    let own_means: Vec<f64> = rows
        .iter()
        .map(|r| r.wakeup_to_run_stats.avg_ns.unwrap_or(f64::NAN))
        .collect();
    let irq_means: Option<Vec<f64>> = rows
        .iter()
        .map(|r| r.irq_to_run_stats.as_ref().and_then(|s| s.avg_ns))
        .collect();
    let sched_means: Option<Vec<f64>> = rows
        .iter()
        .map(|r| r.sched_time_stats.as_ref().and_then(|s| s.avg_ns))
        .collect();
    Ok(SchedScaleResult {
        cpu: cfg.cpu,
        priority: cfg.priority,
        sleep_us: cfg.sleep_ns / 1000,
        fit_wakeup_to_run: fit_line(&xs, &own_means, 0.95),
        fit_irq_to_run: irq_means.and_then(|m| fit_line(&xs, &m, 0.95)),
        fit_sched_time: sched_means.and_then(|m| fit_line(&xs, &m, 0.95)),
        rows,
        trace_unavailable,
        sched_time_unavailable: None,
        sched_time_method: None,
    })
}

/// `--protocol` names: a paper's whole protocol in one flag.
pub const PROTOCOLS: [&str; 1] = ["heursch2001"];

/// heursch-2001 §4: 200 wake-ups of the SCHED_FIFO process, `sleep(1)` apart, per number of
/// load processes, at the N of Table 3 (0, 10, 20, 30, 40, 50, 100, 150, 200).
pub const HEURSCH2001_WAKEUPS: u64 = 200;
pub const HEURSCH2001_SLEEP: std::time::Duration = std::time::Duration::from_secs(1);

/// `rtscope sched-scale`'s flags as given (None: not given).
#[derive(Clone, Debug, PartialEq)]
pub struct Flags {
    pub cpus: Option<String>,
    pub priority: u32,
    /// Comma-separated numbers of load processes [default: Table 3's N].
    pub loads: Option<String>,
    /// [default: 200]
    pub wakeups: Option<u64>,
    /// Between wake-ups, 100 µs ..= 10 s [default: 10 ms]
    pub sleep: Option<std::time::Duration>,
    /// A paper's protocol (`heursch2001`), instead of --loads/--wakeups/--sleep.
    pub protocol: Option<String>,
    pub no_trace: bool,
    pub sched_time: SchedTime,
}

impl Flags {
    /// The measurement's configuration, checked; bad input names its flag.
    pub fn resolve<V: crate::common::Values>(
        &self,
        v: &V,
    ) -> std::result::Result<Config, V::Error> {
        let (loads, wakeups, sleep) = match self.protocol.as_deref() {
            None => (
                match &self.loads {
                    Some(l) => parse_loads(l).map_err(BenchError::Invalid)?,
                    None => DEFAULT_LOADS.to_vec(),
                },
                self.wakeups.unwrap_or(200),
                self.sleep.unwrap_or(std::time::Duration::from_millis(10)),
            ),
            Some("heursch2001") => {
                if self.loads.is_some() || self.wakeups.is_some() || self.sleep.is_some() {
                    return Err(BenchError::Invalid(
                        format!("{PROTOCOL} heursch2001 sets {LOADS}, {WAKEUPS} and {SLEEP} (Table 3's N, 200 wake-ups 1000 ms apart); leave them out"),
                    )
                    .into());
                }
                (
                    DEFAULT_LOADS.to_vec(),
                    HEURSCH2001_WAKEUPS,
                    HEURSCH2001_SLEEP,
                )
            }
            Some(p) => {
                return Err(BenchError::Invalid(format!(
                    "{PROTOCOL}: must be {}; got '{p}'",
                    PROTOCOLS.join(", ")
                ))
                .into())
            }
        };
        let range = std::time::Duration::from_micros(100)..=std::time::Duration::from_secs(10);
        if !range.contains(&sleep) {
            return Err(BenchError::Invalid(format!(
                "{SLEEP}: must be in 100us ..= 10s, got {}",
                rtscope_model::duration::human(sleep.as_secs_f64())
            ))
            .into());
        }
        let cfg = Config {
            cpu: crate::common::one_cpu(v, self.cpus.as_deref())?,
            priority: self.priority,
            loads,
            wakeups,
            sleep_ns: sleep.as_nanos() as u64,
            trace: !self.no_trace,
            sched_time: self.sched_time,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// What a result's reader must know: kernel events not captured, load levels not measured.
pub fn warnings(res: &SchedScaleResult, interrupted: bool) -> Vec<rtscope_model::Warning> {
    use rtscope_model::{WarningCode, Warnings};
    let mut warnings = Vec::new();
    if let Some(t) = &res.trace_unavailable {
        warnings.warn(WarningCode::Trace, format!("kernel events: {t}"));
    }
    if DEFAULT_LOADS.len() != res.rows.len() && interrupted {
        warnings.warn(
            WarningCode::Interrupted,
            "interrupted: not every load level was measured",
        );
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_parse() {
        assert_eq!(parse_loads("0, 10,200").unwrap(), vec![0, 10, 200]);
        assert!(parse_loads("1,x").is_err());
        assert!(parse_loads("-1").is_err());
    }

    #[test]
    fn kernel_times_hand_checked() {
        // One wake-up: T = 5000000, expiry handled at now = 5000800, thread ran at 5002000:
        // irq→run = 1200 ns. waking at 10.000003 s, switch at 10.000005 s (line clock): 2000 ns.
        let t = "\
 ss-9 [001] d..1. 10.000000: hrtimer_start: hrtimer=0000000011 function=hrtimer_wakeup expires=5000000 softexpires=5000000 mode=ABS was_armed=0
 load-3 [001] d.h1. 10.000003: hrtimer_expire_entry: hrtimer=0000000011 function=hrtimer_wakeup now=5000800
 load-3 [001] d.h3. 10.000003: sched_waking: comm=ss pid=9 prio=89 target_cpu=001
 load-3 [001] d..2. 10.000005: sched_switch: prev_comm=load prev_pid=3 prev_prio=120 prev_state=R ==> next_comm=ss next_pid=9 next_prio=89
";
        let (irq, wts) = kernel_times(t, 9, &[(5_000_000, 5_002_000)]);
        assert_eq!((irq.count(), irq.min_ns()), (1, Some(1200)));
        assert_eq!((wts.count(), wts.min_ns()), (1, Some(2000)));
    }

    #[test]
    fn validation() {
        let c = Config {
            cpu: 0,
            priority: 80,
            loads: vec![0, 10],
            wakeups: 10,
            sleep_ns: 1_000_000,
            trace: false,
            sched_time: SchedTime::Off,
        };
        assert!(c.validate().is_ok());
        assert!(Config {
            loads: vec![],
            ..c.clone()
        }
        .validate()
        .is_err());
        assert!(Config {
            loads: vec![1, 1],
            ..c.clone()
        }
        .validate()
        .is_err());
        assert!(Config {
            loads: vec![5000],
            ..c.clone()
        }
        .validate()
        .is_err());
        assert!(Config {
            wakeups: 1,
            ..c.clone()
        }
        .validate()
        .is_err());
        assert!(Config {
            priority: 0,
            ..c.clone()
        }
        .validate()
        .is_err());
        assert!(Config { sleep_ns: 10, ..c }.validate().is_err());
    }

    #[test]
    fn flags_resolve_to_a_config_or_name_the_flag() {
        let f = Flags {
            cpus: None,
            priority: 80,
            loads: Some("0,10".into()),
            wakeups: Some(200),
            sleep: Some(std::time::Duration::from_millis(10)),
            protocol: None,
            no_trace: true,
            sched_time: SchedTime::Auto,
        };
        let c = f.resolve(&crate::common::tests::NoMachine).unwrap();
        assert_eq!(
            (c.loads.clone(), c.sleep_ns, c.trace),
            (vec![0, 10], 10_000_000, false)
        );
        let e = Flags {
            sleep: Some(std::time::Duration::ZERO),
            ..f.clone()
        }
        .resolve(&crate::common::tests::NoMachine)
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "⟨sched_scale.sleep⟩: must be in 100us ..= 10s, got 0ns"
        );
        assert_eq!(
            SchedTime::parse("yes").unwrap_err(),
            "⟨sched_scale.sched_time⟩: must be auto, on, preemptirq or off; got 'yes'"
        );
        // The paper's protocol: Table 3's N, 200 wake-ups 1 s apart; alone or refused.
        let p = Flags {
            loads: None,
            wakeups: None,
            sleep: None,
            protocol: Some("heursch2001".into()),
            ..f.clone()
        };
        let c = p.resolve(&crate::common::tests::NoMachine).unwrap();
        assert_eq!(
            (c.loads.clone(), c.wakeups, c.sleep_ns),
            (
                vec![0, 10, 20, 30, 40, 50, 100, 150, 200],
                200,
                1_000_000_000
            )
        );
        let e = Flags {
            wakeups: Some(50),
            ..p.clone()
        }
        .resolve(&crate::common::tests::NoMachine)
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("⟨sched_scale.protocol⟩ heursch2001 sets ⟨sched_scale.loads⟩"),
            "{e}"
        );
        let e = Flags {
            protocol: Some("heursch".into()),
            ..p
        }
        .resolve(&crate::common::tests::NoMachine)
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "⟨sched_scale.protocol⟩: must be heursch2001; got 'heursch'"
        );
        assert!(Flags {
            loads: Some("x".into()),
            ..f
        }
        .resolve(&crate::common::tests::NoMachine)
        .is_err());
    }
}
