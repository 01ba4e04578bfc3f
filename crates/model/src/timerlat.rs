//! `measure --probe timerlat`: latency measured by the kernel's timerlat tracer
//! (kernel/trace/trace_osnoise.c, Documentation/trace/timerlat-tracer.rst) instead of a user-space
//! thread. Per CPU a kernel thread (`timerlat/N`, SCHED_FIFO) arms an absolute hrtimer every
//! period; the tracer records two latencies per activation, both from the timer's expiry time:
//! - IRQ latency: expiry → the hrtimer's handler runs (interrupts or the timer IRQ held off);
//! - thread latency: expiry → the woken thread runs (the IRQ latency plus the scheduling delay).
//!
//! The record's threads ([`crate::ThreadResult`]) carry the thread latency, so `show`, `compare`
//! and `report` read such a run as any other; this section adds the IRQ side and the tracer's
//! own counters. It lives in the measurement's `timerlat` section ([`crate::Measurement::timerlat`]).

use crate::bench::BenchHistogram;
use crate::Stats;
use serde::{Deserialize, Serialize};

/// One CPU's two distributions.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TimerlatCpu {
    pub cpu: u32,
    /// Expiry → the timer handler (the tracer's `context: irq` samples).
    pub irq: BenchHistogram,
    pub irq_stats: Stats,
    /// Expiry → the timerlat thread runs (`context: thread` samples).
    pub thread: BenchHistogram,
    pub thread_stats: Stats,
    /// Activations whose sequence number never showed up (their samples were lost in the ring
    /// buffer): gaps in the IRQ samples' `seqnum`.
    pub seq_gaps: u64,
    /// IRQ samples with no thread sample of the same activation (the run ended between them, or
    /// the thread sample was lost).
    pub irq_without_thread: u64,
    /// Events the kernel dropped on this CPU (ring-buffer overrun/dropped counts).
    pub lost_events: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TimerlatResult {
    /// `osnoise/timerlat_period_us`.
    pub period_us: u64,
    /// SCHED_FIFO priority the `timerlat/N` threads ran at (as read back from the kernel).
    pub thread_priority: Option<i32>,
    pub cpus: Vec<TimerlatCpu>,
    /// Sum of the CPUs' `lost_events`.
    pub lost_events: u64,
}
