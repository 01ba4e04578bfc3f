//! Bandwidth inheritance for reservations that share mutexes (Lelli 2014 thesis, Ch. 4): the
//! task-set description that both the simulator (`rtscope_analysis::mbwi`) and the real-kernel
//! experiment (`rtscope_bench::mbwi`) take, the simulated schedule, and the kernel runs' results.
//!
//! Times in the task-set description are µs (the thesis' examples are in ms-scale units; the
//! kernel's SCHED_DEADLINE accounting is ns but enforced at tick granularity, see `tick_us`).
//! Kernel measurements are ns relative to the run's epoch (CLOCK_MONOTONIC).

use crate::bench::BenchHistogram;
use crate::Stats;
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// Input: a task set of CBS reservations with job scripts

/// One step of a job: compute for a while, or take/release a mutex (instantaneous).
/// JSON: `{"compute_us": 5000}`, `{"lock": "A"}`, `{"unlock": "A"}`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Segment {
    ComputeUs(u64),
    Lock(String),
    Unlock(String),
}

/// A different script for one job of a task (e.g. the job that overruns its WCET).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct JobScript {
    /// Job index, 0-based.
    pub job: u32,
    pub script: Vec<Segment>,
}

/// A periodic task served by its own hard CBS (a SCHED_DEADLINE reservation).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MbwiTask {
    pub name: String,
    /// Reservation budget Q (sched_runtime).
    pub runtime_us: u64,
    /// Reservation period P (sched_period); jobs are released every P.
    pub period_us: u64,
    /// Relative deadline D ≤ P (sched_deadline) [default: P].
    #[serde(default)]
    pub deadline_us: Option<u64>,
    /// CPUs the task may run on; empty = every CPU of the set.
    #[serde(default)]
    pub affinity: Vec<u32>,
    /// First release.
    #[serde(default)]
    pub offset_us: u64,
    /// Number of jobs [default: as many as fit before the horizon].
    #[serde(default)]
    pub jobs: Option<u32>,
    /// Every job's script, unless `job_scripts` gives one for that job.
    pub script: Vec<Segment>,
    #[serde(default)]
    pub job_scripts: Vec<JobScript>,
}

impl MbwiTask {
    pub fn deadline(&self) -> u64 {
        self.deadline_us.unwrap_or(self.period_us)
    }
    /// The script of job `k`.
    pub fn script_of(&self, k: u32) -> &[Segment] {
        self.job_scripts
            .iter()
            .find(|j| j.job == k)
            .map_or(&self.script[..], |j| &j.script[..])
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MbwiTaskSet {
    /// Processors, numbered 0..cpus.
    pub cpus: u32,
    /// How long to simulate (or, for the kernel, the length of one run), µs.
    pub horizon_us: u64,
    /// Budget enforcement granularity, µs. 0: exact (SCHED_DEADLINE with the HRTICK_DL feature);
    /// otherwise an exhausted budget is noticed at the next tick (4000 µs at HZ=250 without
    /// HRTICK_DL, the default), so a budget may go negative by less than one tick.
    #[serde(default)]
    pub tick_us: u64,
    pub tasks: Vec<MbwiTask>,
}

/// How a blocked task helps the lock holder.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum MbwiProtocol {
    /// No inheritance: a plain futex mutex (the waiter sleeps, the holder keeps its own server).
    None,
    /// Mainline SCHED_DEADLINE with a PI futex (kernel/sched/core.c `rt_mutex_setprio`,
    /// deadline.c `pi_of`/`is_dl_boosted`): the holder keeps its own absolute deadline; while
    /// boosted it is never throttled — an exhausted budget is refilled at once with the donor's
    /// runtime and its deadline pushed by the donor's period.
    Mainline,
    /// Full M-BWI (thesis §4.2.5, [FLC12]): every server of a blocked task runs the end of its
    /// blocking chain; the holder executes in the earliest-deadline server that has a CPU, on that
    /// server's CPUs; a server whose chain end runs elsewhere busy-waits on its own budget;
    /// waiters are woken FIFO.
    Mbwi,
    /// The thesis' Linux implementation (§4.3.2): the holder inherits one server (its top
    /// waiter's, if earlier) but not its affinity — the clustered-scheduling failure of Fig. 4.3.
    MbwiImpl,
    /// The same, inheriting the donor's affinity too — the failure of Fig. 4.4.
    MbwiImplAffinity,
}

impl MbwiProtocol {
    pub const ALL: [MbwiProtocol; 5] = [
        MbwiProtocol::None,
        MbwiProtocol::Mainline,
        MbwiProtocol::Mbwi,
        MbwiProtocol::MbwiImpl,
        MbwiProtocol::MbwiImplAffinity,
    ];
    pub fn name(self) -> &'static str {
        match self {
            MbwiProtocol::None => "none",
            MbwiProtocol::Mainline => "mainline",
            MbwiProtocol::Mbwi => "mbwi",
            MbwiProtocol::MbwiImpl => "mbwi-impl",
            MbwiProtocol::MbwiImplAffinity => "mbwi-impl-affinity",
        }
    }
    pub fn parse(s: &str) -> Option<MbwiProtocol> {
        Self::ALL.into_iter().find(|p| p.name() == s)
    }
}

// ---------------------------------------------------------------------------------------------
// Simulation output

/// A stretch of time one CPU spent on one thing.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SimSegment {
    pub cpu: u32,
    /// The task executing (for a spinning server: the task busy-waiting in it).
    pub task: String,
    /// Whose server's budget pays for the time.
    pub server: String,
    pub start_us: u64,
    pub end_us: u64,
    /// Whose parameters the task runs with beyond its own: the lending server's task under M-BWI,
    /// the PI donor (`pi_se`) under mainline.
    pub inherited_from: Option<String>,
    /// The server busy-waits for a lock holder running elsewhere (M-BWI).
    pub spinning: bool,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SimEventKind {
    Release,
    /// A release dropped because the previous job was still running past it.
    Skip,
    LockRequest,
    LockAcquire,
    Unlock,
    /// The server ran out of budget and waits for its replenishment.
    Throttle,
    Replenish,
    /// Mainline: `rt_mutex_setprio` made the holder's `pi_se` point to the donor.
    Boost,
    Deboost,
    Finish,
    /// A job passed its deadline unfinished.
    Miss,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SimEvent {
    pub t_us: u64,
    pub task: String,
    pub kind: SimEventKind,
    pub mutex: Option<String>,
    /// The server concerned (throttle, replenish), or the donor (boost).
    pub server: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SimJob {
    pub job: u32,
    pub release_us: u64,
    /// Absolute deadline of the job (release + D).
    pub deadline_us: u64,
    pub start_us: Option<u64>,
    pub finish_us: Option<u64>,
    pub response_us: Option<u64>,
    /// Lock request → acquisition, summed over the job's critical sections.
    pub blocked_us: u64,
    /// Part of `blocked_us` the task's server spent busy-waiting (M-BWI).
    pub spin_us: u64,
    pub missed: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SimTaskResult {
    pub name: String,
    /// Shares a mutex with another task (an interacting task, thesis §4.2.4).
    pub interacts: bool,
    pub jobs: Vec<SimJob>,
    pub misses: u32,
    pub skipped: u32,
    pub max_blocked_us: u64,
    pub max_response_us: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SimResult {
    /// The task set's name (an example's, a file's, a scenario's); may be empty.
    #[serde(default)]
    pub name: String,
    pub protocol: MbwiProtocol,
    pub cpus: u32,
    pub horizon_us: u64,
    pub tick_us: u64,
    /// Per CPU, in time order; adjacent stretches of the same thing are merged.
    pub segments: Vec<SimSegment>,
    pub events: Vec<SimEvent>,
    pub tasks: Vec<SimTaskResult>,
}

// ---------------------------------------------------------------------------------------------
// Real kernel

/// One job of one thread, ns after the run's epoch (CLOCK_MONOTONIC).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct KernelJob {
    pub job: u32,
    pub release_ns: u64,
    pub start_ns: u64,
    pub finish_ns: u64,
    /// First critical section: lock called, lock returned, unlock called.
    pub lock_request_ns: Option<u64>,
    pub lock_acquire_ns: Option<u64>,
    pub unlock_ns: Option<u64>,
    /// Lock request → acquisition, summed over the job's critical sections.
    pub blocked_ns: u64,
    /// Critical sections' wall time minus the thread's CPU time in them: how long the holder was
    /// kept off the CPU while holding the lock (preempted or throttled).
    pub cs_off_cpu_ns: u64,
    pub missed: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct KernelTaskResult {
    pub name: String,
    pub tid: i32,
    pub jobs: u64,
    pub misses: u64,
    /// Releases dropped because the previous job ran past them (not counted in `misses`).
    pub skipped: u64,
    /// Jobs that had to wait for the lock.
    pub contended_jobs: u64,
    /// Blocking of the contended jobs.
    pub blocked: BenchHistogram,
    pub blocked_stats: Stats,
    pub response: BenchHistogram,
    pub response_stats: Stats,
    /// Time the lock holder spent off the CPU inside critical sections, per job that held it.
    pub cs_off_cpu: BenchHistogram,
    pub cs_off_cpu_stats: Stats,
    /// The first jobs, in full (for the Gantt chart and the tests); the rest only in the
    /// histograms.
    pub first_jobs: Vec<KernelJob>,
    /// sched_pi_setprio events naming this thread (the kernel's rt_mutex_setprio changed its
    /// effective parameters: boost or deboost); None when not counted.
    pub pi_setprio_events: Option<u64>,
}

/// What a CPU ran, from sched_switch (or from the threads' own timestamps).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct KernelSegment {
    pub cpu: u32,
    /// A task of the set, or `other` for anything else that ran.
    pub task: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MbwiKernelRun {
    /// `one-cpu`, `one-cpu-overrun`, `two-cpus`.
    pub scenario: String,
    /// `pi` (PTHREAD_PRIO_INHERIT) or `plain` (PTHREAD_PRIO_NONE).
    pub mutex: String,
    pub cpus: Vec<u32>,
    /// Epoch of the run, CLOCK_MONOTONIC ns (every `_ns` in the run is relative to it).
    pub epoch_ns: u64,
    pub duration_ns: u64,
    pub taskset: MbwiTaskSet,
    pub tasks: Vec<KernelTaskResult>,
    /// The first `schedule_window_ns` of the run, per CPU.
    pub schedule: Vec<KernelSegment>,
    pub schedule_window_ns: u64,
    /// `sched_switch (bpf|tracefs)` or `thread timestamps`.
    pub schedule_source: String,
    pub lost_events: u64,
    pub notes: Vec<String>,
}

/// One task of one task set: what the kernel did (measured) beside the simulator.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MbwiComparisonRow {
    pub scenario: String,
    pub task: String,
    pub interacts: bool,
    pub kernel_pi_misses: u64,
    pub kernel_pi_jobs: u64,
    pub kernel_pi_blocked_median_ns: Option<u64>,
    pub kernel_plain_misses: u64,
    pub kernel_plain_jobs: u64,
    pub kernel_plain_blocked_median_ns: Option<u64>,
    pub sim_mainline_misses: u32,
    pub sim_mainline_jobs: u32,
    pub sim_mainline_max_blocked_us: u64,
    pub sim_mbwi_misses: u32,
    pub sim_mbwi_jobs: u32,
    pub sim_mbwi_max_blocked_us: u64,
}

/// Lock/unlock cost under SCHED_DEADLINE (thesis §4.4.3).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OverheadRow {
    /// `pi` or `plain`.
    pub mutex: String,
    /// `lock_uncontended`, `unlock_uncontended`, `unlock_contended` (a waiter blocked in the
    /// kernel), `handoff` (unlock called → the waiter returns from lock).
    pub op: String,
    pub histogram: BenchHistogram,
    pub stats: Stats,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MbwiOverhead {
    pub cpus: Vec<u32>,
    pub rows: Vec<OverheadRow>,
    /// What each number includes, the clock, how many iterations were dropped.
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MbwiResult {
    pub kernel_release: String,
    /// /proc/loadavg at the start (1, 5, 15 min).
    pub load_avg: Option<[f64; 3]>,
    pub simulations: Vec<SimResult>,
    pub runs: Vec<MbwiKernelRun>,
    pub comparison: Vec<MbwiComparisonRow>,
    pub overhead: Option<MbwiOverhead>,
    pub notes: Vec<String>,
}
