//! The Rhealstone suite (Kar & Porter 1989; the Linux 2.4 versions in heursch-2001 §3.1).
//!
//! Every metric runs its threads pinned to one CPU, SCHED_FIFO, with memory locked, for
//! `iterations` samples or `max_duration`, whichever comes first, and keeps the full
//! distribution (Rhealstone itself reports only the mean). Each sample is taken on
//! CLOCK_MONOTONIC by the threads themselves: the timestamp is read just before the operation
//! that hands the CPU over and just after the other side resumes in user space.

pub mod channel;
pub mod intervals;
mod irq;
pub mod shuffle;

use crate::common::reaper::Reaper;
use crate::common::rt::{self, Pacer};
use crate::common::sync::{PiMutex, PlainMutex, Sem};
use crate::common::{mono_ns, sleep_until, spin_for, stop_requested, BenchError, Result};
use channel::{Channel, Kind};
use rtscope_model::bench::{
    RhealstoneMetric, RhealstonePart, RhealstoneResult, QUANTITY_AS_DEFINED, QUANTITY_CONTRAST,
    QUANTITY_NEAREST_MEASURABLE,
};
use rtscope_model::{Histogram, Stats};
use shuffle::{SemKind, SemPair, Which};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Barrier;

/// Metric names in Kar's order t1…t6 is not the run order; this is the run order.
pub const METRICS: [&str; 6] = [
    "task_switch",
    "preemption",
    "intertask_message",
    "semaphore_shuffle",
    "deadlock_break",
    "interrupt_response",
];

/// Every (metric, variant) in run order; the first variant of each metric is its primary (the
/// one entering the composite).
pub const VARIANTS: [(&str, &str); 14] = [
    ("task_switch", "sched_yield"),
    ("preemption", "setparam"),
    ("preemption", "futex_wake"),
    ("preemption", "hrtimer_wake"),
    ("intertask_message", "sysv_msg"),
    ("intertask_message", "posix_mq"),
    ("intertask_message", "pipe"),
    ("semaphore_shuffle", "sysv_sem"),
    ("semaphore_shuffle", "posix_sem"),
    ("semaphore_shuffle", "futex"),
    ("deadlock_break", "pi_mutex"),
    ("deadlock_break", "no_pi_mutex"),
    ("interrupt_response", "parallel_port"),
    ("interrupt_response", "hrtimer_expire"),
];

/// The variant names `--variants` accepts, in run order.
pub fn variant_names() -> Vec<&'static str> {
    VARIANTS.iter().map(|(_, v)| *v).collect()
}

/// The holder's own work in a semaphore-shuffle round (a spin between its two clock reads): it
/// is the run time heursch-2001 §3.1 excludes, made long enough to see it subtracted.
pub const SHUFFLE_HOLD_NS: u64 = 1_000;
/// The preempted thread's user-space loop between two preemptions.
pub const PREEMPT_LOOP_NS: u64 = 1_000;

rtscope_model::request_fields! {
    /// The fields of a suite request ([`Flags`]) as its errors name them.
    pub enum Field in "rhealstone" {
        Priority = "priority" => PRIORITY,
        Iterations = "iterations" => ITERATIONS,
        IrqIterations = "irq_iterations" => IRQ_ITERATIONS,
        TimerInterval = "timer_interval" => TIMER_INTERVAL,
        MediumBurst = "medium_burst" => MEDIUM_BURST,
        Timeout = "timeout" => TIMEOUT,
        Only = "only" => ONLY,
        Variants = "variants" => VARIANTS_FIELD,
        NoVariants = "no_variants" => NO_VARIANTS,
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub cpu: u32,
    /// Highest SCHED_FIFO priority used; the others are 10 and 20 below (so ≥ 21).
    pub priority_high: u32,
    pub iterations: u64,
    pub max_duration_ns: u64,
    /// Timer period of the preemption and interrupt-response metrics.
    pub timer_interval_ns: u64,
    /// Samples for interrupt response (each needs trace events; keep the buffer bounded).
    pub irq_iterations: u64,
    /// The medium-priority thread's compute burst in the deadlock-break metric.
    pub medium_burst_ns: u64,
    /// Subset of METRICS to run (empty = all).
    pub only: Vec<String>,
    /// Run the secondary variants too (futex and timer wake-ups, POSIX mq, pipe, POSIX sem,
    /// futex, no-PI mutex).
    pub variants: bool,
    /// Run exactly these variants (names of [`VARIANTS`]; empty = by `variants`).
    pub select_variants: Vec<String>,
    /// The lab's test driver is here (`/dev/rtscope_lab`): the interrupt response is then the
    /// paper's quantity (a device interrupt), its primary variant `parallel_port`; without it
    /// the nearest measurable quantity (`hrtimer_expire`) is the primary.
    pub irq_device: bool,
}

impl Config {
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(BenchError::Invalid(m));
        if !(21..=99).contains(&self.priority_high) {
            return bad(format!("{PRIORITY}: must be 21..=99 (two lower priorities 10 and 20 below are used), got {}", self.priority_high));
        }
        if !(1..=100_000_000).contains(&self.iterations) {
            return bad(format!(
                "{ITERATIONS}: must be 1..=100000000, got {}",
                self.iterations
            ));
        }
        if !(1..=100_000).contains(&self.irq_iterations) {
            return bad(format!(
                "{IRQ_ITERATIONS}: must be 1..=100000 (trace buffer), got {}",
                self.irq_iterations
            ));
        }
        let human = |ns: u64| rtscope_model::duration::human(ns as f64 / 1e9);
        if !(10_000..=10_000_000).contains(&self.timer_interval_ns) {
            return bad(format!(
                "{TIMER_INTERVAL}: must be in 10us ..= 10ms, got {}",
                human(self.timer_interval_ns)
            ));
        }
        if !(1_000..=10_000_000).contains(&self.medium_burst_ns) {
            return bad(format!(
                "{MEDIUM_BURST}: must be in 1us ..= 10ms, got {}",
                human(self.medium_burst_ns)
            ));
        }
        if !(100_000_000..=3_600_000_000_000).contains(&self.max_duration_ns) {
            return bad(format!("{TIMEOUT}: must be 0.1s..=1h"));
        }
        for m in &self.only {
            if !METRICS.contains(&m.as_str()) {
                return bad(format!(
                    "{ONLY}: unknown metric '{m}' (one of {})",
                    METRICS.join(", ")
                ));
            }
        }
        check_variants(&self.select_variants, &self.only, !self.variants)
            .map_err(BenchError::Invalid)?;
        crate::common::check_cpu(self.cpu)
    }

    fn wants(&self, m: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|x| x == m)
    }

    /// Whether `variant` of `metric` runs: its metric is chosen, and it is listed in
    /// `select_variants`, or (with none listed) it is the primary or variants are on.
    fn wants_variant(&self, metric: &str, variant: &str) -> bool {
        if !self.wants(metric) {
            return false;
        }
        if !self.select_variants.is_empty() {
            return self.select_variants.iter().any(|v| v == variant);
        }
        self.variants || self.primary_variant(metric) == Some(variant)
    }

    /// The variant a metric's summary (and the composite) uses: the first listed, except that
    /// the interrupt response's is the device interrupt only where the device exists.
    fn primary_variant(&self, metric: &str) -> Option<&'static str> {
        if metric == "interrupt_response" && !self.irq_device {
            return Some("hrtimer_expire");
        }
        VARIANTS.iter().find(|(m, _)| *m == metric).map(|(_, v)| *v)
    }
}

/// `--variants` against the known names, `--only` and `--no-variants`: the one-line error.
pub fn check_variants(
    select: &[String],
    only: &[String],
    no_variants: bool,
) -> std::result::Result<(), String> {
    if select.is_empty() {
        return Ok(());
    }
    if no_variants {
        return Err(format!(
            "{VARIANTS_FIELD}: cannot be combined with {NO_VARIANTS}"
        ));
    }
    for v in select {
        if !VARIANTS.iter().any(|(_, x)| x == v) {
            return Err(format!(
                "{VARIANTS_FIELD}: unknown variant '{v}' (one of {})",
                variant_names().join(", ")
            ));
        }
    }
    let runs = |m: &str| only.is_empty() || only.iter().any(|o| o == m);
    if !VARIANTS
        .iter()
        .any(|(m, v)| runs(m) && select.iter().any(|s| s == v))
    {
        return Err(format!(
            "{VARIANTS_FIELD}: none of {} belongs to a metric chosen by {ONLY} ({})",
            select.join(", "),
            only.join(", ")
        ));
    }
    Ok(())
}

/// What one metric run produced before it is described.
struct Measured {
    hist: Histogram,
    stopped_early: Option<String>,
    notes: Vec<String>,
    parts: Vec<RhealstonePart>,
    counters: BTreeMap<String, u64>,
}

impl Measured {
    fn new(hist: Histogram, stopped_early: Option<String>, notes: Vec<String>) -> Measured {
        Measured {
            hist,
            stopped_early,
            notes,
            parts: Vec::new(),
            counters: BTreeMap::new(),
        }
    }
}

fn part(name: &str, definition: &str, h: Histogram) -> RhealstonePart {
    RhealstonePart {
        name: name.into(),
        definition: definition.into(),
        stats: Stats::from_histogram(&h),
        histogram: h.into(),
    }
}

/// (voluntary, involuntary) context switches of the calling thread so far.
fn thread_switches() -> (u64, u64) {
    rtscope_sys::mem::usage_thread()
        .map_or((0, 0), |u| (u.voluntary_switches, u.involuntary_switches))
}

/// Context switches of the calling thread since `before`, as counters named `who_…`.
fn switches_since(before: (u64, u64), who: &str, into: &mut BTreeMap<String, u64>) {
    let now = thread_switches();
    into.insert(
        format!("{who}_voluntary_switches"),
        intervals::delta(before.0, now.0).unwrap_or(0),
    );
    into.insert(
        format!("{who}_involuntary_switches"),
        intervals::delta(before.1, now.1).unwrap_or(0),
    );
}

/// The CPU's local timer interrupt count (LOC in /proc/interrupts), if readable.
fn local_timer_count(cpu: u32) -> Option<u64> {
    let t = std::fs::read_to_string("/proc/interrupts").ok()?;
    intervals::local_timer_interrupts(&t, cpu)
}

fn early(count: u64, target: u64) -> Option<String> {
    if count >= target {
        None
    } else if stop_requested() {
        Some(format!("interrupted after {count} of {target} samples"))
    } else {
        Some(format!(
            "duration cap reached after {count} of {target} samples"
        ))
    }
}

/// Run the suite. `progress` is told each metric/variant as it starts.
pub fn run(
    cfg: &Config,
    reaper: &Reaper,
    mut progress: impl FnMut(&str, &str),
) -> Result<RhealstoneResult> {
    cfg.validate()?;
    rt::lock_memory()?;
    let mut metrics = Vec::new();
    let n = cfg.iterations;
    let (hi, mid, lo) = (
        cfg.priority_high,
        cfg.priority_high - 10,
        cfg.priority_high - 20,
    );
    let burst = cfg.medium_burst_ns / 1000;
    let timer_us = cfg.timer_interval_ns / 1000;
    for (metric, variant) in VARIANTS {
        if stop_requested() || !cfg.wants_variant(metric, variant) {
            continue;
        }
        progress(metric, variant);
        let primary = cfg.primary_variant(metric) == Some(variant);
        let mut target = n;
        let mut quantity = QUANTITY_AS_DEFINED;
        let (def, m): (String, Result<Measured>) = match (metric, variant) {
            ("task_switch", _) => (
                "two equal-priority SCHED_FIFO threads alternating with sched_yield(): one thread's clock read before its yield → the other's first read after its own yield returns".into(),
                task_switch(cfg, mid),
            ),
            ("preemption", "setparam") => (
                format!("a ready thread is raised above the running one: the low thread (SCHED_FIFO {mid}) runs a {PREEMPT_LOOP_NS} ns user-space loop, reads the clock and raises the other thread (ready, SCHED_FIFO {lo}) to {hi} with sched_setparam(); that thread preempts it at once: low's read → high's first read. Includes the sched_setparam() call, the scheduler's choice and the switch; no interrupt, no wake-up (the high thread never blocks)"),
                preemption_setparam(cfg, hi, mid, lo),
            ),
            ("preemption", "futex_wake") => (
                format!("the running thread wakes the preempting one: the low thread (SCHED_FIFO {lo}) runs a {PREEMPT_LOOP_NS} ns user-space loop, reads the clock and wakes the high thread (SCHED_FIFO {hi}, blocked in FUTEX_WAIT) with FUTEX_WAKE; it preempts at once: low's read → high's first read. Includes the wake-up system call, the scheduler's choice and the switch; no interrupt"),
                preemption_futex(cfg, hi, lo),
            ),
            ("preemption", "hrtimer_wake") => {
                quantity = QUANTITY_CONTRAST;
                (
                format!("a low-priority thread spins in user space storing the time; a high-priority thread woken by an hrtimer ({timer_us} µs period) runs: last store of the low thread → first read of the high one. Includes the timer interrupt's entry/exit and the wake-up besides the scheduler and the switch (and, in a virtual machine, the hypervisor's timer injection): not the paper's preemption time"),
                preemption_timer(cfg, hi, lo),
            )
            }
            ("intertask_message", v) => (
                "receiver (high priority) blocked in receive; sender (low priority) reads the clock and sends a 16-byte message: send → receiver back in user space with the message".into(),
                handoff(cfg, reaper, message_kind(v), hi, lo),
            ),
            ("semaphore_shuffle", v) => (
                format!("heursch-2001 §3.1: the high-priority thread requests a semaphore the low-priority thread holds → obtains it, minus the time the holder runs until it releases it. Measured per round: request → holder back on the CPU (the request's system call, blocking, the scheduler, the switch) + release → requester owns it (wake-up, switch back); the holder's own run ({SHUFFLE_HOLD_NS} ns of work, clock read to clock read) is subtracted"),
                semaphore_shuffle(cfg, reaper, sem_kind(v), hi, lo),
            ),
            ("deadlock_break", v) => (
                format!("low holds a mutex; high (woken by low) asks for it while a medium thread has a {burst} µs compute burst ready: high's request → high owns the mutex"),
                deadlock_break(cfg, v == "pi_mutex", hi, mid, lo),
            ),
            ("interrupt_response", "parallel_port") => {
                target = cfg.irq_iterations.min(n);
                (
                    "heursch-2001 §3.1: \"the time in between an external peripheral device generates an interrupt and the first command of the interrupt service routine\". The lab's test driver (rtscope_lab) writes the emulated parallel port's control register with outb(), which raises the port's IRQ 7 at once (the paper wired the port's output back to its interrupt input): the clock read just before the outb() → the clock read by the handler's first statement, both in the kernel, CLOCK_MONOTONIC; the raising thread is SCHED_FIFO in the driver with interrupts on, and the IRQ is routed to its CPU".into(),
                    irq::interrupt_response_device(cfg, hi),
                )
            }
            ("interrupt_response", _) => {
                target = cfg.irq_iterations.min(n);
                quantity = QUANTITY_NEAREST_MEASURABLE;
                (
                    "NEAREST MEASURABLE QUANTITY, not the paper's interrupt response time (device raises an interrupt → first instruction of its handler, heursch-2001 §3.1): programmed hrtimer expiry (hrtimer_start `expires`) → the timer interrupt's hrtimer core reading the clock (hrtimer_expire_entry `now`), both CLOCK_MONOTONIC ns from trace events; in a virtual machine it includes the hypervisor's timer injection".into(),
                    irq::interrupt_response(cfg, reaper, hi),
                )
            }
            _ => unreachable!("VARIANTS lists every pair handled here"),
        };
        let (m, unavailable) = match m {
            Ok(m) => (m, None),
            Err(BenchError::Unavailable(why)) => {
                (Measured::new(Histogram::new(), None, Vec::new()), Some(why))
            }
            Err(e) => return Err(e),
        };
        metrics.push(RhealstoneMetric {
            metric: metric.into(),
            variant: variant.into(),
            primary,
            iterations_requested: target,
            stopped_early: m.stopped_early,
            stats: Stats::from_histogram(&m.hist),
            histogram: m.hist.into(),
            unavailable,
            definition: def,
            notes: m.notes,
            quantity: quantity.into(),
            parts: m.parts,
            counters: m.counters,
        });
    }
    // Kar's t1…t6 order for the composite.
    let mean_of = |m: &str| {
        metrics
            .iter()
            .find(|x| x.metric == m && x.primary)
            .and_then(|x| x.stats.avg_ns)
    };
    let comps: Vec<(&str, Option<f64>)> = [
        "task_switch",
        "preemption",
        "interrupt_response",
        "semaphore_shuffle",
        "deadlock_break",
        "intertask_message",
    ]
    .iter()
    .map(|m| (*m, mean_of(m)))
    .collect();
    let composite = rtscope_analysis::benchstats::rhealstone_composite(&comps);
    Ok(RhealstoneResult {
        cpu: cfg.cpu,
        priority_high: hi,
        metrics,
        composite,
    })
}

fn message_kind(v: &str) -> Kind {
    match v {
        "posix_mq" => Kind::PosixMq,
        "pipe" => Kind::Pipe,
        _ => Kind::SysvMsg,
    }
}

fn sem_kind(v: &str) -> SemKind {
    match v {
        "posix_sem" => SemKind::PosixSem,
        "futex" => SemKind::Futex,
        _ => SemKind::SysvSem,
    }
}

/// t1: equal-priority threads alternate through sched_yield().
fn task_switch(cfg: &Config, prio: u32) -> Result<Measured> {
    let last_ts = AtomicU64::new(0);
    let last_who = AtomicU32::new(u32::MAX);
    let count = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let rest_until = AtomicU64::new(0);
    let barrier = Barrier::new(2);
    let target = cfg.iterations;
    let body = |me: u32| -> Result<Histogram> {
        rt::become_fifo(cfg.cpu, prio)?;
        let mut h = Histogram::new();
        barrier.wait();
        let mut pacer = Pacer::new(cfg.max_duration_ns);
        loop {
            let now = mono_ns();
            if done.load(Ordering::Relaxed) {
                break;
            }
            let who = last_who.load(Ordering::Relaxed);
            let ts = last_ts.load(Ordering::Relaxed);
            if who != me && who != u32::MAX && ts != 0 {
                h.record(now.saturating_sub(ts));
                if count.fetch_add(1, Ordering::Relaxed) + 1 >= target {
                    done.store(true, Ordering::Relaxed);
                }
            }
            if pacer.expired(now) {
                done.store(true, Ordering::Relaxed);
                break;
            }
            // Both threads rest together: the first to notice the burst is over publishes the
            // end of the rest; the sample spanning it is invalidated (ts = 0).
            let ru = rest_until.load(Ordering::Relaxed);
            if ru > now {
                last_ts.store(0, Ordering::Relaxed);
                sleep_until(ru);
                pacer.restart();
                continue;
            }
            if me == 0 && pacer.due(now) {
                let until = now + rt::REST_NS;
                last_ts.store(0, Ordering::Relaxed);
                rest_until.store(until, Ordering::Relaxed);
                sleep_until(until);
                pacer.restart();
                continue;
            }
            last_who.store(me, Ordering::Relaxed);
            last_ts.store(mono_ns(), Ordering::Relaxed);
            rtscope_sys::sched::yield_now();
        }
        Ok(h)
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| body(0));
        let b = s.spawn(|| body(1));
        (rt::join(a, "task switch A"), rt::join(b, "task switch B"))
    });
    let mut h = a?;
    h.merge(&b?);
    let c = h.count();
    Ok(Measured::new(
        h,
        early(c, target),
        vec!["the partner sleeps with the driver during each 10 ms rest (RT throttling stays on); samples spanning a rest are dropped".into()],
    ))
}

/// t2, primary: the preempted thread makes a ready thread the highest-priority one
/// (sched_setparam), as heursch-2001 §3.1 replaced sched_yield() by sched_setscheduler() with a
/// different priority. The preempting thread is always runnable: it is never woken, so no
/// interrupt and no wake-up lie in the interval.
fn preemption_setparam(cfg: &Config, hi: u32, mid: u32, lo: u32) -> Result<Measured> {
    let slot = AtomicU64::new(0);
    let high_tid = AtomicU32::new(0);
    let done = AtomicBool::new(false);
    let resume = Sem::new(0);
    let barrier = Barrier::new(2);
    let target = cfg.iterations;
    let is_done = || done.load(Ordering::Relaxed);
    let loc0 = local_timer_count(cfg.cpu);
    let (h, l) = std::thread::scope(|s| {
        let high = s.spawn(|| -> Result<(Histogram, u64, BTreeMap<String, u64>)> {
            // Starts below the low thread: ready, but not running.
            rt::become_fifo(cfg.cpu, lo)?;
            high_tid.store(rtscope_probe::sys::gettid() as u32, Ordering::Relaxed);
            let mut h = Histogram::new();
            let mut bad = 0u64;
            let mut counters = BTreeMap::new();
            let sw0 = thread_switches();
            barrier.wait();
            loop {
                let now = mono_ns();
                let t0 = slot.swap(0, Ordering::Relaxed);
                if t0 != 0 {
                    match intervals::preemption_sample(t0, now) {
                        Some(d) => h.record(d),
                        None => bad += 1,
                    }
                    // Back below the low thread: it preempts us inside this call.
                    set_priority(0, lo)?;
                    continue;
                }
                if is_done() {
                    break;
                }
                // We run at the lower priority only while the low thread sleeps (its rest, or
                // it has finished): wait for it instead of spinning.
                resume.wait(is_done);
            }
            switches_since(sw0, "high", &mut counters);
            Ok((h, bad, counters))
        });
        let low = s.spawn(|| -> Result<BTreeMap<String, u64>> {
            let r = (|| {
                rt::become_fifo(cfg.cpu, mid)?;
                barrier.wait();
                let mut tid = 0;
                while tid == 0 {
                    tid = high_tid.load(Ordering::Relaxed) as i32;
                }
                let sw0 = thread_switches();
                let mut pacer = Pacer::new(cfg.max_duration_ns);
                let mut n = 0u64;
                while n < target {
                    spin_for(PREEMPT_LOOP_NS);
                    let now = mono_ns();
                    if pacer.expired(now) {
                        break;
                    }
                    if pacer.due(now) {
                        pacer.rest();
                        resume.post();
                        continue;
                    }
                    slot.store(mono_ns(), Ordering::Relaxed);
                    set_priority(tid, hi)?;
                    n += 1;
                }
                let mut c = BTreeMap::new();
                switches_since(sw0, "low", &mut c);
                Ok(c)
            })();
            done.store(true, Ordering::Relaxed);
            resume.post();
            r
        });
        (
            rt::join(high, "preemption high"),
            rt::join(low, "preemption low"),
        )
    });
    let note = format!(
        "the preempting thread alternates SCHED_FIFO {lo} (ready, below the running thread) and {hi} (raised by it); it never blocks except while the low thread rests"
    );
    preemption_pair(cfg, loc0, h, l, target, vec![note])
}

/// Join a thread that sets `done` once it has left its loop; one that has not left it 1 s after
/// the other side finished (its wake-up could not be delivered) is reported as stuck instead of
/// joined here.
fn join_when_done<T>(
    done: &AtomicBool,
    h: std::thread::ScopedJoinHandle<'_, Result<T>>,
    who: &'static str,
    stuck: &'static str,
) -> Result<T> {
    let t_end = mono_ns() + 1_000_000_000;
    while !done.load(Ordering::Relaxed) && mono_ns() < t_end {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    if done.load(Ordering::Relaxed) {
        rt::join(h, who)
    } else {
        Err(BenchError::Panic(stuck))
    }
}

/// SCHED_FIFO priority of thread `tid` (0 = the caller); the policy stays as it is.
fn set_priority(tid: i32, prio: u32) -> Result<()> {
    rtscope_sys::sched::set_priority(tid, prio as i32).map_err(|e| BenchError::Io {
        what: "sched_setparam".into(),
        source: e,
    })
}

/// t2 variant: the running thread wakes the preempting one (FUTEX_WAKE).
fn preemption_futex(cfg: &Config, hi: u32, lo: u32) -> Result<Measured> {
    let slot = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let go = Sem::new(0);
    let barrier = Barrier::new(2);
    let target = cfg.iterations;
    let is_done = || done.load(Ordering::Relaxed);
    let loc0 = local_timer_count(cfg.cpu);
    let (h, l) = std::thread::scope(|s| {
        let high = s.spawn(|| -> Result<(Histogram, u64, BTreeMap<String, u64>)> {
            rt::become_fifo(cfg.cpu, hi)?;
            let mut h = Histogram::new();
            let mut bad = 0u64;
            let mut counters = BTreeMap::new();
            let sw0 = thread_switches();
            barrier.wait();
            while go.wait(is_done) {
                let now = mono_ns();
                let t0 = slot.swap(0, Ordering::Relaxed);
                if is_done() {
                    break;
                }
                match intervals::preemption_sample(t0, now) {
                    Some(d) if t0 != 0 => h.record(d),
                    _ => bad += 1,
                }
            }
            switches_since(sw0, "high", &mut counters);
            Ok((h, bad, counters))
        });
        let low = s.spawn(|| -> Result<BTreeMap<String, u64>> {
            let r = (|| {
                rt::become_fifo(cfg.cpu, lo)?;
                barrier.wait();
                let sw0 = thread_switches();
                let mut pacer = Pacer::new(cfg.max_duration_ns);
                let mut n = 0u64;
                while n < target {
                    spin_for(PREEMPT_LOOP_NS);
                    let now = mono_ns();
                    if pacer.expired(now) {
                        break;
                    }
                    pacer.rest_if_due(now);
                    slot.store(mono_ns(), Ordering::Relaxed);
                    go.post();
                    n += 1;
                }
                let mut c = BTreeMap::new();
                switches_since(sw0, "low", &mut c);
                Ok(c)
            })();
            done.store(true, Ordering::Relaxed);
            go.post();
            r
        });
        (
            rt::join(high, "preemption high"),
            rt::join(low, "preemption low"),
        )
    });
    preemption_pair(cfg, loc0, h, l, target, Vec::new())
}

/// A preemption variant's two threads into one metric: the high thread's samples and switch
/// counts, the low thread's, the samples read out of order, and the local timer interrupts the
/// CPU took meanwhile (`loc0`: the count before).
fn preemption_pair(
    cfg: &Config,
    loc0: Option<u64>,
    h: Result<(Histogram, u64, BTreeMap<String, u64>)>,
    l: Result<BTreeMap<String, u64>>,
    target: u64,
    notes: Vec<String>,
) -> Result<Measured> {
    let loc1 = local_timer_count(cfg.cpu);
    let mut counters = l?;
    let (h, bad, hc) = h?;
    counters.extend(hc);
    counters.insert("samples_out_of_order".into(), bad);
    if let Some(d) = loc0.zip(loc1).and_then(|(a, b)| intervals::delta(a, b)) {
        counters.insert("local_timer_interrupts".into(), d);
    }
    let c = h.count();
    let mut m = Measured::new(h, early(c, target), notes);
    m.counters = counters;
    Ok(m)
}

/// t2 with a timer in the path (the contrast to the variants without one): a high-priority
/// thread woken by an hrtimer preempts a low-priority user-space spinner.
fn preemption_timer(cfg: &Config, hi: u32, lo: u32) -> Result<Measured> {
    let last = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let barrier = Barrier::new(2);
    let target = cfg.iterations;
    let mut dropped = 0u64;
    let loc0 = local_timer_count(cfg.cpu);
    let (h, l) = std::thread::scope(|s| {
        let low = s.spawn(|| -> Result<()> {
            rt::become_fifo(cfg.cpu, lo)?;
            barrier.wait();
            let mut pacer = Pacer::new(cfg.max_duration_ns + 100_000_000);
            let mut i = 0u32;
            while !done.load(Ordering::Relaxed) {
                let now = mono_ns();
                last.store(now, Ordering::Relaxed);
                i = i.wrapping_add(1);
                if i.is_multiple_of(1024) {
                    if pacer.expired(now) {
                        break;
                    }
                    if pacer.due(now) {
                        // Mark "not spinning" before resting so the high thread drops the sample.
                        last.store(0, Ordering::Relaxed);
                        pacer.rest();
                    }
                }
            }
            done.store(true, Ordering::Relaxed);
            Ok(())
        });
        let high = s.spawn(|| -> Result<(Histogram, u64)> {
            rt::become_fifo(cfg.cpu, hi)?;
            let mut h = Histogram::new();
            let mut dropped = 0;
            barrier.wait();
            let end = mono_ns() + cfg.max_duration_ns;
            while h.count() < target && !done.load(Ordering::Relaxed) && !stop_requested() {
                let t = mono_ns() + cfg.timer_interval_ns;
                if t > end {
                    break;
                }
                sleep_until(t);
                let now = mono_ns();
                let l = last.load(Ordering::Relaxed);
                // Valid only if the low thread was spinning when the timer fired: its last
                // store is at most a few hundred ns before the interrupt.
                if l != 0 && l + 2_000 >= t && l <= now {
                    h.record(now - l);
                } else {
                    dropped += 1;
                }
            }
            done.store(true, Ordering::Relaxed);
            Ok((h, dropped))
        });
        (
            rt::join(high, "preemption high"),
            rt::join(low, "preemption low"),
        )
    });
    let loc1 = local_timer_count(cfg.cpu);
    l?;
    let (h, d) = h?;
    dropped += d;
    let c = h.count();
    let mut m = Measured::new(
        h,
        early(c, target),
        vec![format!(
            "timer period {} µs; {dropped} wake-ups dropped (low thread resting or not yet spinning)",
            cfg.timer_interval_ns / 1000
        )],
    );
    if let Some(d) = loc0.zip(loc1).and_then(|(a, b)| intervals::delta(a, b)) {
        m.counters.insert("local_timer_interrupts".into(), d);
    }
    Ok(m)
}

/// t4/t6: one timestamp handed from a low-priority sender to a high-priority receiver.
fn handoff(cfg: &Config, reaper: &Reaper, kind: Kind, hi: u32, lo: u32) -> Result<Measured> {
    let mut ch = Channel::open(kind, reaper)?;
    let target = cfg.iterations;
    let barrier = Barrier::new(2);
    let recv_done = AtomicBool::new(false);
    let (rh, sres) = {
        let chr = &ch;
        std::thread::scope(|s| {
            let recv = s.spawn(|| -> Result<Histogram> {
                let r = (|| {
                    rt::become_fifo(cfg.cpu, hi)?;
                    let mut h = Histogram::new();
                    barrier.wait();
                    loop {
                        let ts = chr.recv()?;
                        let now = mono_ns();
                        if ts == 0 {
                            break;
                        }
                        h.record(now.saturating_sub(ts));
                    }
                    Ok(h)
                })();
                recv_done.store(true, Ordering::Relaxed);
                r
            });
            let send = s.spawn(|| -> Result<u64> {
                let r = (|| {
                    rt::become_fifo(cfg.cpu, lo)?;
                    barrier.wait();
                    let mut pacer = Pacer::new(cfg.max_duration_ns);
                    let mut sent = 0u64;
                    while sent < target {
                        let now = mono_ns();
                        if pacer.expired(now) {
                            break;
                        }
                        // Nothing is in flight here: the receiver preempted us on the last send
                        // and is blocked again, so resting loses no sample.
                        pacer.rest_if_due(now);
                        chr.send(mono_ns())?;
                        sent += 1;
                    }
                    Ok(sent)
                })();
                // Always release the receiver.
                let _ = chr.send(0);
                r
            });
            let sres = rt::join(send, "sender");
            // If the sentinel could not be delivered, removing the object unblocks the receiver.
            let rh = join_when_done(&recv_done, recv, "receiver", "receiver did not stop");
            (rh, sres)
        })
    };
    ch.abort();
    let sent = sres?;
    let h = rh?;
    if h.count() != sent {
        return Err(BenchError::Invalid(format!(
            "{}: {} sent but {} received",
            kind.name(),
            sent,
            h.count()
        )));
    }
    let c = h.count();
    Ok(Measured::new(h, early(c, target), Vec::new()))
}

/// t4: heursch-2001 §3.1's semaphore shuffle (the round is described in [`shuffle`]).
fn semaphore_shuffle(
    cfg: &Config,
    reaper: &Reaper,
    kind: SemKind,
    hi: u32,
    lo: u32,
) -> Result<Measured> {
    let mut pair = SemPair::open(kind, reaper)?;
    let target = cfg.iterations;
    let barrier = Barrier::new(2);
    let done = AtomicBool::new(false);
    let high_done = AtomicBool::new(false);
    // The holder's two reads, handed to the requester (it reads them once it owns the
    // semaphore, while the holder cannot run).
    let resumed = AtomicU64::new(0);
    let released = AtomicU64::new(0);
    type High = ([Histogram; 5], u64, BTreeMap<String, u64>);
    let (hres, lres) = {
        let pr = &pair;
        std::thread::scope(|s| {
            let high = s.spawn(|| -> Result<High> {
                let r = (|| {
                    rt::become_fifo(cfg.cpu, hi)?;
                    let mut hs: [Histogram; 5] = Default::default();
                    let mut bad = 0u64;
                    let sw0 = thread_switches();
                    barrier.wait();
                    loop {
                        if !pr.take(Which::Go)? || done.load(Ordering::Relaxed) {
                            break;
                        }
                        let request = mono_ns();
                        if !pr.take(Which::Held)? {
                            break;
                        }
                        let obtained = mono_ns();
                        let st = intervals::ShuffleStamps {
                            request,
                            holder_resumed: resumed.load(Ordering::Relaxed),
                            release: released.load(Ordering::Relaxed),
                            obtained,
                        };
                        pr.give(Which::Held)?;
                        match intervals::shuffle_sample(&st) {
                            Some(x) => {
                                hs[0].record(x.shuffle_ns);
                                hs[1].record(x.request_to_holder_ns);
                                hs[2].record(x.release_to_own_ns);
                                hs[3].record(x.holder_run_ns);
                                hs[4].record(x.request_to_obtain_ns);
                            }
                            None => bad += 1,
                        }
                    }
                    let mut c = BTreeMap::new();
                    switches_since(sw0, "high", &mut c);
                    Ok((hs, bad, c))
                })();
                high_done.store(true, Ordering::Relaxed);
                r
            });
            let low = s.spawn(|| -> Result<(u64, BTreeMap<String, u64>)> {
                let r = (|| {
                    rt::become_fifo(cfg.cpu, lo)?;
                    barrier.wait();
                    let sw0 = thread_switches();
                    let mut pacer = Pacer::new(cfg.max_duration_ns);
                    let mut n = 0u64;
                    while n < target {
                        let now = mono_ns();
                        if pacer.expired(now) {
                            break;
                        }
                        // The requester is blocked on `go`, nothing is held: resting loses
                        // no sample.
                        pacer.rest_if_due(now);
                        pr.take(Which::Held)?;
                        // The requester preempts us here, asks for `held` and blocks.
                        pr.give(Which::Go)?;
                        let t = mono_ns();
                        spin_for(SHUFFLE_HOLD_NS);
                        resumed.store(t, Ordering::Relaxed);
                        released.store(mono_ns(), Ordering::Relaxed);
                        // The requester preempts us here: it owns `held`.
                        pr.give(Which::Held)?;
                        n += 1;
                    }
                    let mut c = BTreeMap::new();
                    switches_since(sw0, "low", &mut c);
                    Ok((n, c))
                })();
                done.store(true, Ordering::Relaxed);
                let _ = pr.give(Which::Go);
                r
            });
            let lres = rt::join(low, "semaphore holder");
            // If the stop could not be posted, aborting the pair unblocks the requester.
            let hres = join_when_done(
                &high_done,
                high,
                "semaphore requester",
                "semaphore requester did not stop",
            );
            (hres, lres)
        })
    };
    pair.abort();
    let (n, mut counters) = lres?;
    let (hs, bad, hc) = hres?;
    counters.extend(hc);
    counters.insert("samples_out_of_order".into(), bad);
    let [shuffle, req_holder, rel_own, holder_run, req_obtain] = hs;
    if shuffle.count() + bad != n {
        return Err(BenchError::Invalid(format!(
            "{}: {n} rounds but {} samples",
            kind.name(),
            shuffle.count() + bad
        )));
    }
    let c = shuffle.count();
    let mut m = Measured::new(
        shuffle,
        early(c, target),
        vec![format!(
            "{bad} rounds with clock reads out of order dropped"
        )],
    );
    m.parts = vec![
        part(
            "request_to_holder",
            "request → the holder back on the CPU: the request's system call, blocking, the scheduler, the switch to the holder",
            req_holder,
        ),
        part(
            "release_to_own",
            "release → the requester owns the semaphore: the wake-up and the switch back",
            rel_own,
        ),
        part(
            "holder_run",
            "the holder's own run between resuming and releasing (subtracted)",
            holder_run,
        ),
        part(
            "request_to_obtain",
            "request → obtain as the requester sees it (shuffle + holder run)",
            req_obtain,
        ),
    ];
    m.counters = counters;
    Ok(m)
}

enum AnyMutex {
    Pi(PiMutex),
    Plain(PlainMutex),
}

impl AnyMutex {
    #[inline]
    fn lock(&self, tid: u32) {
        match self {
            AnyMutex::Pi(m) => m.lock(tid),
            AnyMutex::Plain(m) => m.lock(),
        }
    }
    #[inline]
    fn unlock(&self, tid: u32) {
        match self {
            AnyMutex::Pi(m) => m.unlock(tid),
            AnyMutex::Plain(m) => m.unlock(),
        }
    }
}

/// t5: priority inversion resolved (PI) or not (plain mutex).
fn deadlock_break(cfg: &Config, pi: bool, hi: u32, mid: u32, lo: u32) -> Result<Measured> {
    let m = if pi {
        AnyMutex::Pi(PiMutex::default())
    } else {
        AnyMutex::Plain(PlainMutex::default())
    };
    let h_go = Sem::new(0);
    let med_go = Sem::new(0);
    let done = AtomicBool::new(false);
    let barrier = Barrier::new(3);
    let target = cfg.iterations;
    let is_done = || done.load(Ordering::Relaxed);
    let (hres, medres, lowres) = std::thread::scope(|s| {
        let high = s.spawn(|| -> Result<Histogram> {
            rt::become_fifo(cfg.cpu, hi)?;
            let tid = rtscope_probe::sys::gettid() as u32;
            let mut h = Histogram::new();
            barrier.wait();
            while h_go.wait(is_done) {
                if is_done() {
                    break;
                }
                // Make the medium thread ready before asking for the mutex: without PI it will
                // run ahead of the low-priority holder.
                med_go.post();
                let t0 = mono_ns();
                m.lock(tid);
                let t1 = mono_ns();
                m.unlock(tid);
                h.record(t1 - t0);
            }
            Ok(h)
        });
        let medium = s.spawn(|| -> Result<()> {
            rt::become_fifo(cfg.cpu, mid)?;
            barrier.wait();
            while med_go.wait(is_done) {
                if is_done() {
                    break;
                }
                spin_for(cfg.medium_burst_ns);
            }
            Ok(())
        });
        let low = s.spawn(|| -> Result<u64> {
            let r = (|| {
                rt::become_fifo(cfg.cpu, lo)?;
                let tid = rtscope_probe::sys::gettid() as u32;
                barrier.wait();
                let mut pacer = Pacer::new(cfg.max_duration_ns);
                let mut n = 0u64;
                while n < target {
                    let now = mono_ns();
                    if pacer.expired(now) {
                        break;
                    }
                    pacer.rest_if_due(now);
                    m.lock(tid);
                    h_go.post(); // high preempts us here and blocks on the mutex
                    m.unlock(tid);
                    n += 1;
                }
                Ok(n)
            })();
            done.store(true, Ordering::Relaxed);
            h_go.post();
            med_go.post();
            r
        });
        (
            rt::join(high, "deadlock high"),
            rt::join(medium, "deadlock medium"),
            rt::join(low, "deadlock low"),
        )
    });
    medres?;
    let n = lowres?;
    let h = hres?;
    let c = h.count();
    if c != n {
        return Err(BenchError::Invalid(format!(
            "deadlock break: {n} rounds but {c} samples"
        )));
    }
    Ok(Measured::new(
        h,
        early(c, target),
        vec![if pi {
            "FUTEX_LOCK_PI: the kernel boosts the holder above the medium thread".to_string()
        } else {
            format!("plain futex mutex: the medium thread's {} µs burst runs before the holder can release (unbounded inversion)", cfg.medium_burst_ns / 1000)
        }],
    ))
}

/// `rtscope rhealstone`'s flags as given.
#[derive(Clone, Debug, PartialEq)]
pub struct Flags {
    pub cpus: Option<String>,
    pub priority: u32,
    pub iterations: u64,
    /// Cap on each metric's run time (100 ms ..= 1 h).
    pub timeout: std::time::Duration,
    /// Timer period of the preemption and interrupt-response metrics (10 µs ..= 10 ms).
    pub timer_interval: std::time::Duration,
    pub irq_iterations: u64,
    /// Compute burst of the medium thread in deadlock break (1 µs ..= 10 ms).
    pub medium_burst: std::time::Duration,
    pub only: Vec<String>,
    pub no_variants: bool,
    /// `--variants`: run exactly these variants.
    pub variants: Vec<String>,
}

impl Flags {
    /// The suite's configuration, checked; bad input names its flag.
    pub fn resolve<V: crate::common::Values>(
        &self,
        v: &V,
    ) -> std::result::Result<Config, V::Error> {
        let secs = self.timeout.as_secs_f64();
        if !(0.1..=3600.0).contains(&secs) {
            return Err(BenchError::Invalid(format!(
                "{TIMEOUT}: must be in 100ms ..= 1h, got {}",
                rtscope_model::duration::human(secs)
            ))
            .into());
        }
        for m in &self.only {
            if !METRICS.contains(&m.as_str()) {
                return Err(BenchError::Invalid(format!(
                    "{ONLY}: unknown metric '{m}' (one of {})",
                    METRICS.join(", ")
                ))
                .into());
            }
        }
        check_variants(&self.variants, &self.only, self.no_variants)
            .map_err(BenchError::Invalid)?;
        let cfg = Config {
            cpu: crate::common::one_cpu(v, self.cpus.as_deref())?,
            priority_high: self.priority,
            iterations: self.iterations,
            max_duration_ns: self.timeout.as_nanos() as u64,
            timer_interval_ns: u64::try_from(self.timer_interval.as_nanos()).unwrap_or(u64::MAX),
            irq_iterations: self.irq_iterations,
            medium_burst_ns: u64::try_from(self.medium_burst.as_nanos()).unwrap_or(u64::MAX),
            only: self.only.clone(),
            variants: !self.no_variants,
            select_variants: self.variants.clone(),
            irq_device: crate::labdev::unavailable().is_none(),
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// What a result's reader must know: metrics stopped early or unavailable, and a hypervisor
/// (said only when one was detected, with what detected it).
pub fn warnings(res: &RhealstoneResult) -> Vec<rtscope_model::Warning> {
    use rtscope_model::{WarningCode, Warnings};
    let mut warnings = Vec::new();
    for m in &res.metrics {
        if let Some(s) = &m.stopped_early {
            warnings.warn(
                WarningCode::Interrupted,
                format!("{}/{}: {s}", m.metric, m.variant),
            );
        }
        if let Some(u) = &m.unavailable {
            warnings.warn(
                WarningCode::Unavailable,
                format!("{}/{}: unavailable: {u}", m.metric, m.variant),
            );
        }
    }
    if let (Some(h), src) = rtscope_probe::system::hypervisor() {
        warnings.warn(WarningCode::Hypervisor, format!(
            "measured inside a virtual machine ({h}; detected by {}): timer interrupts are injected by the hypervisor, and host stalls appear in the maxima",
            src.unwrap_or_else(|| "cpuinfo".into())
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_resolve_to_a_config_or_name_the_flag() {
        let f = Flags {
            cpus: None,
            priority: 80,
            iterations: 1000,
            timeout: std::time::Duration::from_secs(10),
            timer_interval: std::time::Duration::from_micros(50),
            irq_iterations: 100,
            medium_burst: std::time::Duration::from_micros(50),
            only: vec!["task_switch".into()],
            no_variants: true,
            variants: vec![],
        };
        let c = f.resolve(&crate::common::tests::NoMachine).unwrap();
        assert_eq!(
            (c.max_duration_ns, c.timer_interval_ns, c.variants),
            (10_000_000_000, 50_000, false)
        );
        let rows: Vec<(Flags, String)> = vec![
            (
                Flags {
                    timeout: std::time::Duration::ZERO,
                    ..f.clone()
                },
                "⟨rhealstone.timeout⟩: must be in 100ms ..= 1h, got 0ns".into(),
            ),
            (
                Flags {
                    timer_interval: std::time::Duration::from_micros(5),
                    ..f.clone()
                },
                "⟨rhealstone.timer_interval⟩: must be in 10us ..= 10ms, got 5us".into(),
            ),
            (
                Flags {
                    medium_burst: std::time::Duration::from_millis(20),
                    ..f.clone()
                },
                "⟨rhealstone.medium_burst⟩: must be in 1us ..= 10ms, got 20ms".into(),
            ),
            (
                Flags {
                    only: vec!["bogus".into()],
                    ..f.clone()
                },
                format!(
                    "⟨rhealstone.only⟩: unknown metric 'bogus' (one of {})",
                    METRICS.join(", ")
                ),
            ),
            (
                Flags {
                    no_variants: false,
                    variants: vec!["setparam".into(), "bogus".into()],
                    ..f.clone()
                },
                "⟨rhealstone.variants⟩: unknown variant 'bogus' (one of sched_yield, setparam, futex_wake, \
                 hrtimer_wake, sysv_msg, posix_mq, pipe, sysv_sem, posix_sem, futex, pi_mutex, \
                 no_pi_mutex, parallel_port, hrtimer_expire)"
                    .into(),
            ),
            (
                Flags {
                    variants: vec!["setparam".into()],
                    ..f.clone()
                },
                "⟨rhealstone.variants⟩: cannot be combined with ⟨rhealstone.no_variants⟩".into(),
            ),
            (
                Flags {
                    no_variants: false,
                    variants: vec!["sysv_sem".into()],
                    ..f.clone()
                },
                "⟨rhealstone.variants⟩: none of sysv_sem belongs to a metric chosen by ⟨rhealstone.only⟩ (task_switch)"
                    .into(),
            ),
        ];
        for (f, want) in rows {
            assert_eq!(
                f.resolve(&crate::common::tests::NoMachine)
                    .unwrap_err()
                    .to_string(),
                want
            );
        }
    }

    #[test]
    fn variants_select_what_runs() {
        let cfg = |only: &[&str], variants: bool, select: &[&str]| Config {
            cpu: 0,
            priority_high: 80,
            iterations: 10,
            max_duration_ns: 1_000_000_000,
            timer_interval_ns: 50_000,
            irq_iterations: 10,
            medium_burst_ns: 50_000,
            only: only.iter().map(|s| s.to_string()).collect(),
            variants,
            select_variants: select.iter().map(|s| s.to_string()).collect(),
            irq_device: false,
        };
        let runs = |c: &Config| -> Vec<&str> {
            VARIANTS
                .iter()
                .filter(|(m, v)| c.wants_variant(m, v))
                .map(|(_, v)| *v)
                .collect()
        };
        // Primaries only: the first of each metric.
        assert_eq!(
            runs(&cfg(&[], false, &[])),
            [
                "sched_yield",
                "setparam",
                "sysv_msg",
                "sysv_sem",
                "pi_mutex",
                "hrtimer_expire"
            ]
        );
        assert_eq!(runs(&cfg(&[], true, &[])).len(), VARIANTS.len());
        // With the lab's device the interrupt response is the paper's quantity.
        let mut with_device = cfg(&["interrupt_response"], false, &[]);
        with_device.irq_device = true;
        assert_eq!(runs(&with_device), ["parallel_port"]);
        with_device.variants = true;
        assert_eq!(runs(&with_device), ["parallel_port", "hrtimer_expire"]);
        assert_eq!(
            runs(&cfg(&["preemption"], true, &[])),
            ["setparam", "futex_wake", "hrtimer_wake"]
        );
        assert_eq!(
            runs(&cfg(&[], true, &["futex_wake", "posix_sem"])),
            ["futex_wake", "posix_sem"]
        );
        assert_eq!(
            runs(&cfg(
                &["semaphore_shuffle"],
                true,
                &["futex_wake", "posix_sem"]
            )),
            ["posix_sem"]
        );
    }
}
