//! `rtscope noise`: the kernel's osnoise tracer (kernel/trace/trace_osnoise.c,
//! Documentation/trace/osnoise-tracer.rst), summarised per CPU as `rtla osnoise top` does, plus the
//! sources of the noise from the tracer's `osnoise:*_noise` events.
//!
//! Per CPU a kernel thread spins for `runtime_us` of every `period_us` with preemption enabled,
//! reading the clock in a loop; every gap it sees above `tracing_thresh` is noise. Interference it
//! can attribute (an NMI, IRQ, softirq or another thread that ran meanwhile) is counted by kind;
//! a gap with none of them is hardware noise (SMIs, the hypervisor).

use serde::{Deserialize, Serialize};

/// One CPU, summed over the tracer's periods (its `osnoise` entries).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct NoiseCpu {
    pub cpu: u32,
    /// Periods summed (one tracer entry each).
    pub periods: u64,
    /// Time the tracer's thread spun (`runtime`, summed; the tracer's entries are in µs).
    pub runtime_us: u64,
    /// Noise within it (`noise`, summed).
    pub noise_us: u64,
    /// 100 × (runtime − noise) / runtime.
    pub cpu_available_pct: f64,
    /// Largest noise of one period (rtla's "Max Noise").
    pub max_period_noise_us: u64,
    /// Longest single noise (`max_sample`, the largest of the periods).
    pub max_single_noise_us: u64,
    /// Interference counts of the periods, summed (`hw_count` … `thread_count`).
    pub hw_count: u64,
    pub nmi_count: u64,
    pub irq_count: u64,
    pub softirq_count: u64,
    pub thread_count: u64,
    /// `osnoise:sample_threshold` events: noises above the threshold.
    pub threshold_samples: u64,
    /// Events the kernel dropped on this CPU.
    pub lost_events: u64,
}

/// What caused noise, from the `osnoise:{irq,softirq,thread,nmi}_noise` events.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct NoiseSource {
    pub cpu: u32,
    /// `irq`, `softirq`, `thread` or `nmi`.
    pub kind: String,
    /// The IRQ's description (`local_timer`, `virtio0-input.0`), the softirq (`TIMER`, `RCU`),
    /// the thread's comm, or `nmi`.
    pub name: String,
    /// The IRQ's vector or number, the softirq's number, the thread's last pid.
    pub id: u64,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct NoiseResult {
    /// `osnoise/period_us`, `osnoise/runtime_us`.
    pub period_us: u64,
    pub runtime_us: u64,
    /// `tracing_thresh` (minimum gap counted as noise; the kernel's default of 1 µs when None).
    pub threshold_us: Option<u64>,
    /// `osnoise/stop_tracing_us`: the tracer stopped at the first single noise above it.
    pub stop_us: Option<u64>,
    /// The tracer stopped itself (`stop_us` was reached) before the run's end.
    pub stopped_by_tracer: bool,
    pub cpus: Vec<NoiseCpu>,
    /// Per CPU, largest total first.
    pub sources: Vec<NoiseSource>,
    pub lost_events: u64,
}
