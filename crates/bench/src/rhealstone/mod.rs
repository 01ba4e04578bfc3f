//! The Rhealstone suite (Kar & Porter 1989; the Linux 2.4 versions in heursch-2001 §3.1).
//!
//! Every metric runs its threads pinned to one CPU, SCHED_FIFO, with memory locked, for
//! `iterations` samples or `max_duration`, whichever comes first, and keeps the full
//! distribution (Rhealstone itself reports only the mean). Each sample is taken on
//! CLOCK_MONOTONIC by the threads themselves: the timestamp is read just before the operation
//! that hands the CPU over and just after the other side resumes in user space.

pub mod channel;
mod irq;

use crate::common::reaper::Reaper;
use crate::common::rt::{self, Pacer};
use crate::common::sync::{PiMutex, PlainMutex, Sem};
use crate::common::{mono_ns, sleep_until, spin_for, stop_requested, BenchError, Result};
use channel::{Channel, Kind};
use rtscope_model::bench::{RhealstoneMetric, RhealstoneResult};
use rtscope_model::{Histogram, Stats};
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
    /// Run the secondary variants too (POSIX mq, pipe, POSIX sem, futex, no-PI mutex).
    pub variants: bool,
}

impl Config {
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(BenchError::Invalid(m));
        if !(21..=99).contains(&self.priority_high) {
            return bad(format!("--priority: must be 21..=99 (two lower priorities 10 and 20 below are used), got {}", self.priority_high));
        }
        if !(1..=100_000_000).contains(&self.iterations) {
            return bad(format!(
                "--iterations: must be 1..=100000000, got {}",
                self.iterations
            ));
        }
        if !(1..=100_000).contains(&self.irq_iterations) {
            return bad(format!(
                "--irq-iterations: must be 1..=100000 (trace buffer), got {}",
                self.irq_iterations
            ));
        }
        if !(10_000..=10_000_000).contains(&self.timer_interval_ns) {
            return bad(format!(
                "--timer-interval-us: must be 10..=10000 µs, got {} µs",
                self.timer_interval_ns / 1000
            ));
        }
        if !(1_000..=10_000_000).contains(&self.medium_burst_ns) {
            return bad(format!(
                "--medium-burst-us: must be 1..=10000 µs, got {} µs",
                self.medium_burst_ns / 1000
            ));
        }
        if !(100_000_000..=3_600_000_000_000).contains(&self.max_duration_ns) {
            return bad("--max-seconds: must be 0.1..=3600".to_string());
        }
        for m in &self.only {
            if !METRICS.contains(&m.as_str()) {
                return bad(format!(
                    "--only: unknown metric '{m}' (one of {})",
                    METRICS.join(", ")
                ));
            }
        }
        crate::common::check_cpu(self.cpu)
    }

    fn wants(&self, m: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|x| x == m)
    }
}

/// What one metric run produced before it is described.
struct Measured {
    hist: Histogram,
    stopped_early: Option<String>,
    notes: Vec<String>,
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
    let mut push = |metric: &str,
                    variant: &str,
                    primary: bool,
                    def: &str,
                    m: Result<Measured>,
                    target: u64| {
        let (hist, stopped_early, unavailable, notes) = match m {
            Ok(m) => (m.hist, m.stopped_early, None, m.notes),
            Err(BenchError::Unavailable(why)) => (Histogram::new(), None, Some(why), Vec::new()),
            Err(e) => return Err(e),
        };
        let stats = Stats::from_histogram(&hist);
        metrics.push(RhealstoneMetric {
            metric: metric.into(),
            variant: variant.into(),
            primary,
            iterations_requested: target,
            stopped_early,
            histogram: hist.into(),
            stats,
            unavailable,
            definition: def.into(),
            notes,
        });
        Ok(())
    };
    let n = cfg.iterations;
    let (hi, mid, lo) = (
        cfg.priority_high,
        cfg.priority_high - 10,
        cfg.priority_high - 20,
    );
    let stop = |_: &str| stop_requested();

    if cfg.wants("task_switch") && !stop("") {
        progress("task_switch", "sched_yield");
        push("task_switch", "sched_yield", true,
            "two equal-priority SCHED_FIFO threads alternating with sched_yield(): one thread's clock read before its yield → the other's first read after its own yield returns",
            task_switch(cfg, mid), n)?;
    }
    if cfg.wants("preemption") && !stop("") {
        progress("preemption", "user_spin");
        push("preemption", "user_spin", true,
            "a low-priority thread spins in user space storing the time; a high-priority thread woken by an hrtimer runs: last store of the low thread → first read of the high one (includes timer-interrupt entry/exit, wake-up, schedule and switch)",
            preemption(cfg, hi, lo), n)?;
    }
    let msg_def = "receiver (high priority) blocked in receive; sender (low priority) reads the clock and sends a 16-byte message: send → receiver back in user space with the message";
    let sem_def = "waiter (high priority) blocked on a semaphore held by a lower-priority thread; holder reads the clock and releases: release → waiter owns it (heursch-2001 §3.1: the holder's own run time is excluded)";
    for (metric, kinds, def) in [
        (
            "intertask_message",
            [Kind::SysvMsg, Kind::PosixMq, Kind::Pipe],
            msg_def,
        ),
        (
            "semaphore_shuffle",
            [Kind::SysvSem, Kind::PosixSem, Kind::Futex],
            sem_def,
        ),
    ] {
        if !cfg.wants(metric) {
            continue;
        }
        for (i, k) in kinds.iter().enumerate() {
            if stop("") || (i > 0 && !cfg.variants) {
                break;
            }
            progress(metric, k.name());
            push(
                metric,
                k.name(),
                i == 0,
                def,
                handoff(cfg, reaper, *k, hi, lo),
                n,
            )?;
        }
    }
    if cfg.wants("deadlock_break") && !stop("") {
        let def = format!(
            "low holds a mutex; high (woken by low) asks for it while a medium thread has a {} µs compute burst ready: high's request → high owns the mutex",
            cfg.medium_burst_ns / 1000
        );
        progress("deadlock_break", "pi_mutex");
        push(
            "deadlock_break",
            "pi_mutex",
            true,
            &def,
            deadlock_break(cfg, true, hi, mid, lo),
            n,
        )?;
        if cfg.variants && !stop("") {
            progress("deadlock_break", "no_pi_mutex");
            push(
                "deadlock_break",
                "no_pi_mutex",
                false,
                &def,
                deadlock_break(cfg, false, hi, mid, lo),
                n,
            )?;
        }
    }
    if cfg.wants("interrupt_response") && !stop("") {
        progress("interrupt_response", "hrtimer_expire");
        push("interrupt_response", "hrtimer_expire", true,
            "programmed hrtimer expiry (hrtimer_start `expires`) → the timer interrupt's hrtimer core reading the clock (hrtimer_expire_entry `now`), both CLOCK_MONOTONIC ns from trace events; in a virtual machine it includes the hypervisor's timer injection",
            irq::interrupt_response(cfg, reaper, hi), cfg.irq_iterations.min(n))?;
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
            // SAFETY: no arguments.
            unsafe { libc::sched_yield() };
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
    Ok(Measured {
        hist: h,
        stopped_early: early(c, target),
        notes: vec!["the partner sleeps with the driver during each 10 ms rest (RT throttling stays on); samples spanning a rest are dropped".into()],
    })
}

/// t2: a high-priority thread woken by a timer preempts a low-priority user-space spinner.
fn preemption(cfg: &Config, hi: u32, lo: u32) -> Result<Measured> {
    let last = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let barrier = Barrier::new(2);
    let target = cfg.iterations;
    let mut dropped = 0u64;
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
    l?;
    let (h, d) = h?;
    dropped += d;
    let c = h.count();
    Ok(Measured {
        hist: h,
        stopped_early: early(c, target),
        notes: vec![format!(
            "timer period {} µs; {dropped} wake-ups dropped (low thread resting or not yet spinning)",
            cfg.timer_interval_ns / 1000
        )],
    })
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
            let t_end = mono_ns() + 1_000_000_000;
            while !recv_done.load(Ordering::Relaxed) && mono_ns() < t_end {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let rh = if recv_done.load(Ordering::Relaxed) {
                rt::join(recv, "receiver")
            } else {
                Err(BenchError::Panic("receiver did not stop"))
            };
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
    Ok(Measured {
        hist: h,
        stopped_early: early(c, target),
        notes: Vec::new(),
    })
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
    Ok(Measured {
        hist: h,
        stopped_early: early(c, target),
        notes: vec![if pi {
            "FUTEX_LOCK_PI: the kernel boosts the holder above the medium thread".to_string()
        } else {
            format!("plain futex mutex: the medium thread's {} µs burst runs before the holder can release (unbounded inversion)", cfg.medium_burst_ns / 1000)
        }],
    })
}

/// `rtscope rhealstone`'s flags as given.
#[derive(Clone, Debug, PartialEq)]
pub struct Flags {
    pub cpus: Option<String>,
    pub priority: u32,
    pub iterations: u64,
    pub max_seconds: f64,
    pub timer_interval_us: u64,
    pub irq_iterations: u64,
    pub medium_burst_us: u64,
    pub only: Vec<String>,
    pub no_variants: bool,
}

impl Flags {
    /// The suite's configuration, checked; bad input names its flag.
    pub fn resolve<V: crate::common::Values>(
        &self,
        v: &V,
    ) -> std::result::Result<Config, V::Error> {
        let secs = self.max_seconds;
        if !secs.is_finite() || !(0.1..=3600.0).contains(&secs) {
            return Err(BenchError::Invalid(format!(
                "--max-seconds: must be 0.1..=3600, got {secs}"
            ))
            .into());
        }
        for m in &self.only {
            if !METRICS.contains(&m.as_str()) {
                return Err(BenchError::Invalid(format!(
                    "--only: unknown metric '{m}' (one of {})",
                    METRICS.join(", ")
                ))
                .into());
            }
        }
        let cfg = Config {
            cpu: crate::common::one_cpu(v, self.cpus.as_deref())?,
            priority_high: self.priority,
            iterations: self.iterations,
            max_duration_ns: (secs * 1e9) as u64,
            timer_interval_ns: self.timer_interval_us.saturating_mul(1000),
            irq_iterations: self.irq_iterations,
            medium_burst_ns: self.medium_burst_us.saturating_mul(1000),
            only: self.only.clone(),
            variants: !self.no_variants,
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
            max_seconds: 10.0,
            timer_interval_us: 50,
            irq_iterations: 100,
            medium_burst_us: 50,
            only: vec!["task_switch".into()],
            no_variants: true,
        };
        let c = f.resolve(&crate::common::tests::NoMachine).unwrap();
        assert_eq!(
            (c.max_duration_ns, c.timer_interval_ns, c.variants),
            (10_000_000_000, 50_000, false)
        );
        let rows: Vec<(Flags, String)> = vec![
            (
                Flags {
                    max_seconds: 0.0,
                    ..f.clone()
                },
                "--max-seconds: must be 0.1..=3600, got 0".into(),
            ),
            (
                Flags {
                    only: vec!["bogus".into()],
                    ..f.clone()
                },
                format!(
                    "--only: unknown metric 'bogus' (one of {})",
                    METRICS.join(", ")
                ),
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
}
