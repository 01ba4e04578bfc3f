//! Real-time thread set-up (through rtscope-probe) and the pacer that keeps RT bursts short.
//!
//! RT throttling stays on (sched_rt_runtime_us = 950000 of 1 s here). A benchmark whose RT
//! threads kept a CPU busy for more than 950 ms would be throttled for 50 ms, and that gap would
//! land in a sample. The pacer makes every driver rest `REST_NS` after `BURST_NS` of work, so
//! the throttle never triggers and the machine never hangs; samples spanning a rest are dropped.

use super::{BenchError, Result};
use rtscope_model::Policy;
use rtscope_probe::{admission, hygiene, sys};

/// Longest stretch a benchmark keeps its RT threads runnable without a rest.
pub const BURST_NS: u64 = 100_000_000;
/// Rest after each burst: ≥ 5 % of the burst keeps us under the 95 % RT bandwidth limit.
pub const REST_NS: u64 = 10_000_000;
/// Stack every benchmark thread prefaults before its loop.
pub const PREFAULT_STACK_BYTES: usize = 128 * 1024;

/// What a benchmark record says of its threads: pinned, memory locked, and SCHED_FIFO with
/// `priority` the highest of them (0: their policies are in the result).
pub fn hygiene(priority: u32) -> rtscope_model::Hygiene {
    if priority > 0 {
        rtscope_model::Hygiene {
            mlockall: true,
            prefaulted_stack_bytes: PREFAULT_STACK_BYTES as u64,
            notes: vec![format!(
                "benchmark threads pinned, SCHED_FIFO (highest priority {priority}), memory locked; RT throttling left on (drivers rest 10 ms every 100 ms)"
            )],
            ..Default::default()
        }
    } else {
        rtscope_model::Hygiene {
            mlockall: true,
            notes: vec!["threads pinned, memory locked; their policies are in the result".into()],
            ..Default::default()
        }
    }
}

/// Pin the calling thread to `cpu`, admit it as SCHED_FIFO `prio` (probe's POSIX backend: it
/// sets SCHED_FLAG_RESET_ON_FORK) and prefault its stack.
pub fn become_fifo(cpu: u32, prio: u32) -> Result<()> {
    sys::set_affinity(0, &[cpu])
        .map_err(|e| rtscope_probe::ProbeError::Affinity { cpu, source: e })?;
    admission::backend(Policy::Fifo, prio, 0, None).admit()?;
    hygiene::prefault_stack(PREFAULT_STACK_BYTES);
    Ok(())
}

/// Pin the calling thread and leave it SCHED_OTHER (nice 0).
pub fn become_other(cpu: u32) -> Result<()> {
    sys::set_affinity(0, &[cpu])
        .map_err(|e| rtscope_probe::ProbeError::Affinity { cpu, source: e })?;
    admission::backend(Policy::Other, 0, 0, None).admit()?;
    Ok(())
}

/// Lock memory for the whole process (MCL_FUTURE also covers the threads started later).
pub fn lock_memory() -> Result<()> {
    hygiene::mlockall()?;
    Ok(())
}

/// Decides when the driving thread must rest, and how long the whole run may last.
pub struct Pacer {
    burst_start_ns: u64,
    deadline_ns: u64,
}

impl Pacer {
    pub fn new(max_duration_ns: u64) -> Self {
        let now = super::mono_ns();
        Pacer {
            burst_start_ns: now,
            deadline_ns: now.saturating_add(max_duration_ns),
        }
    }

    /// True when the run must end (duration cap or stop requested).
    #[inline]
    pub fn expired(&self, now_ns: u64) -> bool {
        now_ns >= self.deadline_ns || super::stop_requested()
    }

    /// When a burst is over: sleep `REST_NS` and return true (the caller drops the sample that
    /// spans the rest).
    #[inline]
    pub fn rest_if_due(&mut self, now_ns: u64) -> bool {
        if !self.due(now_ns) {
            return false;
        }
        self.rest();
        true
    }

    #[inline]
    pub fn due(&self, now_ns: u64) -> bool {
        now_ns.saturating_sub(self.burst_start_ns) >= BURST_NS
    }

    /// Start a new burst now (after a rest taken elsewhere).
    pub fn restart(&mut self) {
        self.burst_start_ns = super::mono_ns();
    }

    pub fn rest(&mut self) {
        super::sleep_until(super::mono_ns() + REST_NS);
        self.burst_start_ns = super::mono_ns();
    }
}

/// Join a scoped thread, mapping a panic to an error.
pub fn join<T>(h: std::thread::ScopedJoinHandle<'_, Result<T>>, who: &'static str) -> Result<T> {
    h.join().map_err(|_| BenchError::Panic(who))?
}
