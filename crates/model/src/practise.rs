//! Results of `rtscope practise`: the user-space scheduler lab of the SCHED_DEADLINE thesis
//! (lelli-2014, §2.3 "PRAcTISE"). Plain data; the lab itself is the `practise` crate.
//!
//! Every duration is in ns (`_ns`); distributions are the boxplot figures of the thesis
//! (Figs. 2.24–2.27: min, quartiles, max) plus the 99th percentile.

use serde::{Deserialize, Serialize};

/// How the lab was driven.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PractiseMode {
    /// §2.3.3 testing mode: threads unpinned (M may exceed the CPUs), a checker thread.
    Test,
    /// §2.3.3 performance analysis mode: one thread pinned per CPU, memory locked.
    Perf,
    /// The queues driven by a recorded trace's sched_switch/wakeup/migrate events.
    Replay,
}

/// How operation durations were measured.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PractiseClock {
    /// `tsc` (lfence; rdtsc … rdtscp; lfence, calibrated against CLOCK_MONOTONIC) or
    /// `clock_monotonic` (clock_gettime through the vDSO).
    pub source: String,
    /// TSC ticks per second as calibrated (tsc only).
    pub tsc_hz: Option<f64>,
    /// Median duration of an empty timed region: every figure includes it once.
    pub overhead_ns: u64,
    /// Why this source was chosen.
    pub why: String,
}

/// One operation's duration distribution.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PractiseOp {
    /// `enqueue`, `dequeue`, `push`, `pull`, `push_preempt`, `push_finish`, `push_modify`
    /// (preempt and finish together), `push_find`, and the same four for the pull structure.
    pub op: String,
    pub count: u64,
    pub min_ns: u64,
    pub q1_ns: u64,
    pub median_ns: u64,
    pub q3_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
}

/// Scheduling events of one run, summed over the emulated CPUs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PractiseCounts {
    /// Thread cycles (Fig. 2.21 loop iterations).
    pub cycles: u64,
    /// Cycles skipped because the thread woke after their start (more emulated CPUs than real
    /// ones, or a stalled host): the next cycle starts on time instead of catching up.
    pub missed_cycles: u64,
    pub activations: u64,
    /// Early finishes of the running task (`on_block`).
    pub early_finishes: u64,
    /// Early-finish draws on an idle CPU (nothing to block).
    pub finish_on_idle: u64,
    /// The running task blocked because its deadline (EDF) or run time (FP) had passed.
    pub expiries: u64,
    /// Migrations done by push() / pull().
    pub pushes: u64,
    pub pulls: u64,
    /// find() named a CPU, but under both run-queue locks the move was no longer right (the
    /// kernel's push retries in this case: DL_MAX_TRIES / RT_MAX_TRIES).
    pub push_stale: u64,
    pub pull_stale: u64,
}

/// The checker thread's findings in testing mode.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PractiseChecks {
    pub checks: u64,
    /// Checks where the M highest-priority ready tasks were not the running ones.
    pub global_false: u64,
    pub global_false_rate: f64,
    /// … because a CPU was idle while another had a task waiting.
    pub idle_while_waiting: u64,
    /// … because a waiting task had a higher priority than a running one elsewhere.
    pub waiting_beats_running: u64,
    /// Longest run of consecutive checks that found it false.
    pub max_consecutive_false: u64,
    /// How long the checker held every run-queue lock.
    pub hold: Option<PractiseOp>,
}

/// What a replay did with the trace's events.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PractiseReplayCounts {
    /// sched_switch/sched_waking/sched_wakeup/sched_migrate_task events read.
    pub events: u64,
    pub enqueues: u64,
    pub dequeues: u64,
    pub migrations: u64,
    /// Tasks first seen running or preempted (runnable before the trace started).
    pub discovered: u64,
    /// A task's priority changed while queued (PI boosting, sched_setattr): re-queued.
    pub requeued: u64,
    /// Migrations of tasks that were not queued (sleeping tasks moved at wake-up).
    pub migrate_sleeping: u64,
    /// A real-time or deadline task switched in was not the top of its emulated queue.
    pub top_mismatch_rt: u64,
}

/// A task left in a queue at the end of a replay.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PractiseQueued {
    pub id: u64,
    pub key: u64,
}

/// One configuration at one number of emulated CPUs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PractiseRun {
    /// `cpudl`, `pullheap`, `cpupri` or `flat`.
    pub structure: String,
    /// The structure behind push() and behind pull().
    pub push_structure: String,
    pub pull_structure: String,
    /// `edf` or `fp`.
    pub policy: String,
    pub emulated_cpus: u32,
    pub wall_ns: u64,
    pub counts: PractiseCounts,
    pub ops: Vec<PractiseOp>,
    pub checks: Option<PractiseChecks>,
    pub replay: Option<PractiseReplayCounts>,
    /// Replay: every queue at the end, highest priority first.
    #[serde(default)]
    pub final_queues: Vec<Vec<PractiseQueued>>,
}

/// The first invariant a checker found broken.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PractiseViolation {
    pub structure: String,
    pub emulated_cpus: u32,
    /// What must hold and did not, e.g. `cpudl heap property`.
    pub invariant: String,
    /// The state that broke it.
    pub state: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PractiseResult {
    pub mode: PractiseMode,
    /// `auto` (cpupri under FP, the others under EDF, as in the thesis §2.3.9), `edf` or `fp`.
    pub policy: String,
    /// Ready-queue implementation: `heap` (binary heap) or `btree` (ordered map).
    pub queue: String,
    pub cycle_ns: u64,
    pub p_arrival: f64,
    pub p_finish: f64,
    pub duration_per_run_ns: u64,
    pub check_every_ns: Option<u64>,
    pub seed: u64,
    pub clock: PractiseClock,
    pub pinned: bool,
    pub memory_locked: bool,
    pub online_cpus: u32,
    /// A deliberately broken structure (checker self-test), if one was injected.
    pub fault: Option<String>,
    pub trace_file: Option<String>,
    pub runs: Vec<PractiseRun>,
    pub violation: Option<PractiseViolation>,
    pub notes: Vec<String>,
}

/// One kernel function's call durations, fentry to fexit (`rtscope practise kernel`): the
/// kernel side of the thesis' Fig. 2.24 (§2.3.9). Each duration includes the fentry/fexit
/// trampolines and the timing programs, so it is longer than the function alone.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct KfuncStats {
    /// `cpudl_set`, `cpudl_find`, `cpupri_set`, `cpupri_find`.
    pub function: String,
    /// The PRAcTISE operation it corresponds to: `cpudl modify`, `cpudl find`, `cpupri modify`,
    /// `cpupri find`.
    pub practise_op: String,
    pub count: u64,
    /// Exact (from the kernel's sum, min and max).
    pub mean_ns: f64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// From the histogram: the middle of the bucket (`bucket_ns` wide), within [min, max];
    /// a quantile above the histogram's range is `max_ns`.
    pub q1_ns: u64,
    pub median_ns: u64,
    pub q3_ns: u64,
    pub p99_ns: u64,
    pub bucket_ns: u64,
    /// Calls longer than the histogram's range (`bucket_ns` × its bucket count).
    pub above_range: u64,
    /// Exits seen without their entry (programs attached during a call): not counted.
    pub missed: u64,
}

/// `rtscope practise kernel`: the kernel's own cpudl/cpupri costs under a load.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PractiseKernelResult {
    pub duration_ns: u64,
    /// `deadline`, `fifo` or `none`.
    pub load: String,
    pub functions: Vec<KfuncStats>,
    pub notes: Vec<String>,
}
