//! ECRTS'20 Table 1's thread variables measured in the kernel from the preemptirq tracepoints
//! (`rtscope trace thread-vars`): what the trace crate's in-kernel reduction returns and the
//! report crate prints (`docs/schema/thread-vars.schema.json`).

use crate::bound::ThreadVars;
use crate::warning::Warning;
use serde::{Deserialize, Serialize};

/// Version of the thread-vars JSON document.
pub const THREAD_VARS_SCHEMA_VERSION: u32 = 1;

/// One CPU: the running maxima of Table 1's variables and what they were measured from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuThreadMeasure {
    pub cpu: u32,
    /// D_POID, D_PAIE, D_PSD, D_ST (maxima, ns), interrupt time discounted.
    pub thread: ThreadVars,
    /// preempt_disable/enable and irq_disable/enable events seen (0: none reached the CPU).
    pub preemptirq_events: u64,
    /// Preempt-disabled sections that contained a context switch (the scheduler's).
    pub sched_sections: u64,
    /// Events the state machine never saw on this CPU: `queue_overflows` + `nest_overflows` +
    /// `recursion_misses`. Non-zero: the maxima may be low (not sound).
    pub lost_events: u64,
    /// Events dropped because the CPU's in-kernel queue was full.
    pub queue_overflows: u64,
    /// Interrupt-handler entries dropped because too many handlers were open at once (their
    /// time is then not discounted).
    pub nest_overflows: u64,
    /// Program runs the kernel skipped (bpf_prog_info.recursion_misses); the kernel does not say
    /// on which CPU, so every measured CPU carries the whole count.
    pub recursion_misses: u64,
    /// Most events waiting at once in the CPU's queue (1: no program ever interrupted another).
    pub max_queued: u64,
    /// An interrupt arrival's hard-IRQ context outside its handlers (entry and exit code; max,
    /// ns): the IRQ-disabled stretch around a handler entered with no other open, minus the
    /// handlers. The bound adds it to every IRQ source's per-instance time (docs/bound.md).
    #[serde(default)]
    pub irq_entry_exit_ns: u64,
    /// Arrivals that was measured on.
    #[serde(default)]
    pub irq_arrivals: u64,
    /// Where the longest D_POID was: the event that opened the preempt-/IRQ-disabled union and
    /// the one that closed it (None: no D_POID measured, or a reader without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poid_at: Option<PoidSite>,
}

/// The ends of the longest D_POID interval.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoidSite {
    pub from: CodeSite,
    pub to: CodeSite,
    /// Interrupt execution time inside the interval, discounted from D_POID.
    pub irq_ns: u64,
    /// CLOCK_MONOTONIC time of the opening event.
    #[serde(default)]
    pub from_ts_ns: u64,
    /// Events the reduction applied inside the interval: each ran its tracepoint program
    /// inside it, so part of the interval is the measurement's own cost.
    #[serde(default)]
    pub events: u64,
    /// Kernel stack (innermost first) where the interval was closed: the tracepoint's own
    /// frames, then the enabling code and its callers (`ip` and `symbol` set only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<CodeSite>,
    /// The task on the CPU when the stack was taken (thread id and comm).
    #[serde(default)]
    pub tid: u64,
    #[serde(default)]
    pub comm: String,
}

/// One end of an interval: the tracepoint event and, for the preemptirq ones, its `ip` (the
/// function that disabled or enabled) and `parent_ip` (its caller).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeSite {
    /// preempt_disable, preempt_enable, irq_disable, irq_enable, sched_switch, …
    pub event: String,
    pub ip: u64,
    pub parent_ip: u64,
    /// `ip` as symbol+0xoffset from the kernel's kallsyms (None: not symbolized).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_symbol: Option<String>,
}

/// One `trace thread-vars` run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadVarsRun {
    pub schema_version: u32,
    /// `uname -r` of the measured kernel.
    pub kernel_release: String,
    /// How long the programs were attached and the CPUs measured.
    pub duration_ns: u64,
    pub cpus: Vec<CpuThreadMeasure>,
    /// Sum of the CPUs' queue and nesting overflows plus the programs' recursion misses: events
    /// the reduction did not see. Non-zero means the variables are not a sound measurement.
    pub lost_events: u64,
    /// Per program with recursion misses: "name count".
    #[serde(default)]
    pub missed_by: Vec<String>,
    /// CLOCK_MONOTONIC time the CPUs began to be measured (0: not known).
    #[serde(default)]
    pub started_ns: u64,
    /// Tracepoints the kernel does not have (their programs were not loaded), and similar.
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// Stopped by a signal before the asked duration.
    #[serde(default)]
    pub interrupted: bool,
    /// How the events reached the state machine: `bpf` (in the kernel, at each tracepoint) or
    /// `tracefs` (the events read from the ring buffer and reduced in user space). Empty in
    /// documents written before the field existed (they are `bpf`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mechanism: String,
    /// The tracefs mechanism's reader: what it read and what it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader: Option<TracefsReader>,
}

/// What the tracefs mechanism's reader read and what it cost (the whole rtscope process: the
/// reader is its only busy thread).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracefsReader {
    /// Event records read and decoded (every enabled event, not only the preemptirq ones).
    pub records: u64,
    /// Bytes read from the per-CPU `trace_pipe_raw` files.
    pub bytes: u64,
    /// CPU time of the rtscope process while it measured (user + system), ns.
    pub cpu_ns: u64,
    /// Ring-buffer gaps after which a CPU's state machine was restarted (no interval spans one).
    pub restarts: u64,
    /// Records whose event id no decoder knew (0 unless the kernel changed under us).
    pub undecoded: u64,
}
