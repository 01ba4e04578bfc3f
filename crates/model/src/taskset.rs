//! Task sets: tasks, how a set was generated, schedulability verdicts and the observed
//! outcome of a run. Plain data; generation lives in `bench::taskset::gen`, the tests in
//! `analysis::sched`, the runner in `bench::taskset`.

use serde::{Deserialize, Serialize};

/// One sporadic/periodic task (Liu & Layland model with constrained deadlines D ≤ T).
// A set file is input: a misspelt key is an error, not a default.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub id: u32,
    /// Worst-case execution time C (the work each job is calibrated to take).
    pub wcet_ns: u64,
    pub period_ns: u64,
    /// Relative deadline D (≤ period).
    pub deadline_ns: u64,
    /// Working-set size of the job's memory work (Lelli 2014 §3.5.3); None = the run's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wss_bytes: Option<u64>,
    /// Name (rt-app thread name), for display only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Task {
    pub fn utilisation(&self) -> f64 {
        self.wcet_ns as f64 / self.period_ns as f64
    }
    pub fn density(&self) -> f64 {
        self.wcet_ns as f64 / self.deadline_ns.min(self.period_ns) as f64
    }
}

/// How a task set was produced (so a set file can be regenerated bit for bit).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GenInfo {
    /// "randfixedsum" or "uunifast-discard".
    pub method: String,
    pub n: u32,
    pub target_utilisation: f64,
    pub seed: u64,
    /// Index of this set in a `--count` batch (the RNG stream is seed + index).
    pub index: u32,
    pub tmin_ns: u64,
    pub tmax_ns: u64,
    /// Periods drawn from this set instead of log-uniform [tmin, tmax] (empty = log-uniform).
    #[serde(default)]
    pub period_set_ns: Vec<u64>,
    pub period_granularity_ns: u64,
    /// C_min rescaling (Lelli 2014 §3.5.1): every C ≥ this; None = off.
    pub cmin_ns: Option<u64>,
    /// Per-task utilisation cap.
    pub umax: f64,
    /// "implicit" or "constrained".
    pub deadlines: String,
    /// Constrained deadlines: D uniform in [C + f·(T − C), T] with f = this.
    pub dmin_frac: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TaskSet {
    pub schema_version: u32,
    pub tasks: Vec<Task>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<GenInfo>,
}

impl TaskSet {
    pub fn utilisation(&self) -> f64 {
        self.tasks.iter().map(Task::utilisation).sum()
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Schedulable,
    NotSchedulable,
    /// A sufficient test failed: it says nothing either way.
    Inconclusive,
}

/// One schedulability test applied to one scope (a CPU, a cluster, the whole set).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TestResult {
    /// e.g. "edf-utilisation", "edf-processor-demand", "liu-layland", "hyperbolic", "rta",
    /// "gfb", "kernel-admission".
    pub test: String,
    /// "all", "cpu0", "cluster0-1", …
    pub scope: String,
    pub verdict: Verdict,
    /// Whether the test is exact (necessary and sufficient) for this scope and model.
    pub exact: bool,
    /// The arithmetic, e.g. "U = 0.812 ≤ 1".
    pub detail: String,
}

/// Where each task runs: `cpus[i]` is the CPU list of task i (by index in the set).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Placement {
    /// "global", "partitioned", "clustered".
    pub kind: String,
    /// "first-fit", "best-fit", "worst-fit" (all decreasing by utilisation), "none".
    pub heuristic: String,
    pub cpus: Vec<Vec<u32>>,
}

/// Per-task outcome of a run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TaskOutcome {
    pub id: u32,
    pub tid: u32,
    pub cpus: Vec<u32>,
    pub policy: String,
    pub priority: i32,
    pub wcet_ns: u64,
    pub period_ns: u64,
    pub deadline_ns: u64,
    /// Jobs released during the measured window.
    pub jobs: u64,
    pub misses: u64,
    pub miss_pct: f64,
    pub max_response_ns: u64,
    pub avg_response_ns: f64,
    /// Largest finish − absolute deadline (negative = every job early).
    pub max_lateness_ns: i64,
    /// Mean over jobs of (D − R)/T (Lelli 2014 Table 3.3).
    pub avg_norm_laxity: f64,
    pub min_norm_laxity: f64,
    /// Start − release (the scheduling delay of each job), max and mean.
    pub max_start_delay_ns: u64,
    pub avg_start_delay_ns: f64,
    /// Thread CPU time per job (CLOCK_THREAD_CPUTIME_ID), to compare with C.
    pub max_exec_ns: u64,
    pub avg_exec_ns: f64,
    /// Σ job CPU time / measured window.
    pub measured_utilisation: f64,
    /// From /proc/<pid>/task/<tid>/sched over the measured window.
    pub migrations: Option<u64>,
    pub voluntary_switches: Option<u64>,
    pub involuntary_switches: Option<u64>,
    /// SCHED_DEADLINE runtime overruns signalled by SIGXCPU (SCHED_FLAG_DL_OVERRUN).
    pub dl_overruns: u64,
    /// Misses of jobs that finished at or after this task's first overrun: the reservation was
    /// throttled, so these misses are the overrun's consequence, not the scheduler's choice.
    #[serde(default)]
    pub misses_after_overrun: u64,
}

/// What the real rt-app said of a run, from its per-thread logs (one line per loop of a thread's
/// phase: rt-app's doc/tutorial.txt, "Log and gnuplot"); times in µs as rt-app writes them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RtAppView {
    /// The rt-app binary that ran, and how it ended ("exited 0", "killed after SIGTERM", …).
    pub binary: String,
    pub ended: String,
    /// Its process id (its threads are that process's tasks).
    pub pid: u32,
    /// How its logs were read: "streamed" (each log a pty, line-buffered: every loop rt-app
    /// logged before it ended or was killed is here) or "files" (block-buffered files read at
    /// the end: a kill loses their unwritten tails).
    #[serde(default)]
    pub logs: String,
    pub threads: Vec<RtAppThread>,
    /// The kernel's view of the same threads (`rtscope watch`'s machinery: every wake-up and
    /// switch of rt-app's threads from the scheduler's tracepoints); None when it was not taken
    /// (no eBPF here, or not asked for), with the reason in the run's warnings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<crate::watch::WatchResult>,
    /// Per rt-app thread, its jobs beside the kernel's activations of its task; empty without
    /// the kernel's view.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agreement: Vec<RtAppAgreement>,
}

/// One rt-app thread's jobs (its log's loops) beside the activations the kernel reported for
/// its task (each wake-up after a sleep or timer is one).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RtAppAgreement {
    /// `<name>-<index>` as rt-app logs it.
    pub name: String,
    /// The thread's tid (rt-app creates its threads in log-index order).
    pub tid: Option<u32>,
    pub jobs: u64,
    /// Wake-ups measured, and the ones the kernel reported no event for (unseen).
    pub activations: u64,
    pub unseen_activations: u64,
    /// True when the measured activations are at most jobs + 3 + jobs/50 and, with the unseen ones, at
    /// least jobs − (loops with slack < 0) − 1: the edges of the run and the loops that did not
    /// sleep (`rtscope_analysis::rtapp`).
    pub agree: bool,
    /// Why they differ, when they do.
    pub why: Option<String>,
}

/// One rt-app thread's loops, summarised from its log's columns.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RtAppThread {
    /// The thread's name and index as rt-app logs them (`<name>-<index>`).
    pub name: String,
    /// "SCHED_OTHER priority : 0" … from the log's header.
    pub policy: String,
    /// Loops of the phase logged (rt-app's jobs).
    pub jobs: u64,
    /// c_duration and c_period of the first loop: the run and timer period asked for.
    pub c_duration_us: u64,
    pub c_period_us: u64,
    /// Mean of the `run` column (time spent in run events) and of `period` (a loop's length).
    pub mean_run_us: f64,
    pub mean_period_us: f64,
    /// Smallest `slack` (negative: the loop overran its timer) and the loops with slack < 0.
    pub min_slack_us: i64,
    pub mean_slack_us: f64,
    pub negative_slack_jobs: u64,
    /// Mean and largest `wu_lat` (wake-up latency after the timer).
    pub mean_wu_lat_us: f64,
    pub max_wu_lat_us: i64,
}

/// Work-loop calibration: ns per visited 64-byte element, before and after the run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    pub wss_bytes: u64,
    pub access: String,
    pub ns_per_element_start: f64,
    pub ns_per_element_end: Option<f64>,
    /// (end − start)/start in percent.
    pub drift_pct: Option<f64>,
}

/// What the kernel admits for SCHED_DEADLINE, and how it was found out.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AdmissionInfo {
    /// sched_rt_runtime_us / sched_rt_period_us (1.0 when runtime is -1).
    pub limit_per_cpu: f64,
    pub cpus: u32,
    /// Fair-server reservation per CPU the kernel counts against DEADLINE admission (dl_server,
    /// Linux ≥ 6.12), as inferred by the admission probe; None when not probed.
    pub fair_server_per_cpu: Option<f64>,
    /// Bandwidth other DEADLINE threads on the machine already hold (sched_getattr of every tid).
    pub other_dl_bandwidth: f64,
    /// Largest total bandwidth the kernel admitted for new threads in the default root domain
    /// (binary search with sleeping helper threads), None when not probed.
    pub probed_free_bandwidth: Option<f64>,
    /// Bandwidth missing from the probe that neither a plausible fair server (≤ 0.1/CPU) nor
    /// a visible DEADLINE thread explains (another tenant's transient reservations, or kernel
    /// accounting); counted against admission in the predictions.
    #[serde(default)]
    pub unaccounted_bandwidth: f64,
    pub method: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TasksetRunConfig {
    /// "deadline", "fifo", "other".
    pub policy: String,
    /// "rm" or "dm" for fifo.
    pub priorities: Option<String>,
    pub placement: Placement,
    /// DEADLINE runtime = C × margin.
    pub runtime_margin: f64,
    pub duration_s: f64,
    pub wss_bytes: u64,
    pub access: String,
    /// C inflation used by the predictions (overhead-aware analysis), ns added to every C.
    pub inflate_ns: u64,
    /// Source of the set (file path, "rt-app:<file>").
    pub source: String,
    /// "calibrated" (element count from the calibration) or "cputime" (run until C of CPU time).
    #[serde(default)]
    pub work: String,
}

/// A whole task-set run: config, predictions, observations.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TasksetResult {
    pub config: TasksetRunConfig,
    pub set: TaskSet,
    pub calibration: Vec<Calibration>,
    pub admission: AdmissionInfo,
    pub predictions: Vec<TestResult>,
    pub tasks: Vec<TaskOutcome>,
    pub total_jobs: u64,
    pub total_misses: u64,
    pub miss_pct: f64,
    pub total_dl_overruns: u64,
    pub measured_utilisation: f64,
    /// The set's migrations and context switches (voluntary + involuntary) per second of the
    /// run, summed over its tasks (thesis Ch. 3 compares placements by these rates); absent
    /// when a task's counts could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switches_per_s: Option<f64>,
    /// Did any job miss? (to compare with the verdicts)
    pub any_miss: bool,
    pub interrupted: bool,
    pub warnings: Vec<crate::warning::Warning>,
    /// The run by the real rt-app (`--engine rt-app`): its own per-thread view, from its logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt_app: Option<RtAppView>,
}

/// Pure: misses per 100 jobs; 0 without jobs.
pub fn miss_pct(misses: u64, jobs: u64) -> f64 {
    if jobs > 0 {
        misses as f64 * 100.0 / jobs as f64
    } else {
        0.0
    }
}

/// Pure: a per-second rate of a count summed over the tasks, None if any task's count is
/// unknown or the duration is not positive.
pub fn set_rate(counts: impl IntoIterator<Item = Option<u64>>, duration_s: f64) -> Option<f64> {
    let mut sum = 0u64;
    for c in counts {
        sum = sum.saturating_add(c?);
    }
    (duration_s > 0.0).then(|| sum as f64 / duration_s)
}

#[cfg(test)]
mod rate_tests {
    #[test]
    fn miss_percentages_are_per_100_jobs() {
        assert_eq!(super::miss_pct(2, 200), 1.0);
        assert_eq!(super::miss_pct(3, 0), 0.0);
    }

    #[test]
    fn set_rates_sum_the_tasks_and_need_every_count() {
        assert_eq!(super::set_rate([Some(10), Some(30)], 4.0), Some(10.0));
        assert_eq!(super::set_rate([Some(10), None], 4.0), None);
        assert_eq!(super::set_rate([Some(1)], 0.0), None);
        assert_eq!(super::set_rate([], 2.0), Some(0.0));
    }
}

/// One run of a sweep (`taskset sweep`): one set under one policy, reduced to what the per-point
/// table needs (a whole [`TasksetResult`] per run would make a 1000-run record megabytes long).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SweepRun {
    /// The point's load: per-CPU R for a partitioned sweep, the total U for a global one.
    pub load: f64,
    /// Index of the set at this point (its generator stream).
    pub set: u32,
    /// "deadline", "other" or "fifo".
    pub policy: String,
    /// The set's utilisation as generated (Σ C/T).
    pub utilisation: f64,
    /// "ok", "refused" (the plan or the kernel refused the set: not run, not in the mean) or
    /// "failed" (the run itself failed).
    pub status: String,
    /// Why the set was refused or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub jobs: u64,
    pub misses: u64,
    /// misses / jobs in percent (0 when nothing ran).
    pub miss_pct: f64,
    /// SCHED_DEADLINE runtime overruns (SIGXCPU) and the misses at or after a task's first one.
    pub dl_overruns: u64,
    pub misses_after_overrun: u64,
    /// Largest mean job CPU time of a task over its C (1.0 = the job used exactly C).
    pub max_exec_over_c: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switches_per_s: Option<f64>,
    /// Every prediction of the policy's timing tests said schedulable (the kernel's admission
    /// rule not counted); None for CFS, which no test covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_schedulable: Option<bool>,
}

/// One cell of the sweep's table: a load and a policy over the sets that ran.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SweepPoint {
    pub load: f64,
    pub policy: String,
    /// Sets that ran ("ok"); the mean and the CI are over these.
    pub sets: u32,
    /// Sets the plan or the kernel refused, and runs that failed: not in the mean.
    pub refused: u32,
    pub failed: u32,
    /// Mean over the sets of each set's miss percentage.
    pub mean_miss_pct: f64,
    /// Half-width of the 95 % confidence interval of that mean (Student t, n − 1 degrees of
    /// freedom); None with fewer than 2 sets.
    pub ci95_half_pct: Option<f64>,
    pub max_miss_pct: f64,
    /// Sets with at least one miss.
    pub sets_with_misses: u32,
    pub jobs: u64,
    pub misses: u64,
    /// misses / jobs over every set pooled, percent (the thesis does not say which it reports).
    pub pooled_miss_pct: f64,
    pub dl_overruns: u64,
    pub misses_after_overrun: u64,
}

/// A kernel setting a sweep changed for its runs and restored afterwards.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct KernelSetting {
    /// The file, e.g. `/proc/sys/kernel/sched_rt_runtime_us`.
    pub path: String,
    pub before: String,
    pub during: String,
    /// Whether writing `before` back succeeded (false: the error is in the warnings).
    pub restored: bool,
}

/// The sweep's parameters as run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SweepConfig {
    /// "partitioned" (per-CPU load R: every CPU gets its own set of `tasks_per_cpu` tasks at
    /// U = R, pinned in a one-CPU root domain) or "global" (one set of `tasks_per_cpu` × CPUs
    /// tasks at total U on every CPU).
    pub placement: String,
    pub loads: Vec<f64>,
    pub sets: u32,
    pub tasks_per_cpu: u32,
    pub cpus: Vec<u32>,
    pub policies: Vec<String>,
    pub seed: u64,
    pub duration_s: f64,
    /// "cputime" or "calibrated".
    pub work: String,
    /// SCHED_DEADLINE runtime Q = C × margin + margin_us.
    pub margin: f64,
    pub margin_us: u64,
    pub cmin_us: u64,
    pub tmin_ms: f64,
    pub tmax_ms: f64,
    pub wss_bytes: u64,
}

/// `taskset sweep`: every set × policy of a load sweep run in one process, summarised per point.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SweepResult {
    pub config: SweepConfig,
    /// The admission facts of the sweep's kernel settings (read after they were applied).
    pub admission: AdmissionInfo,
    pub kernel_settings: Vec<KernelSetting>,
    pub points: Vec<SweepPoint>,
    pub runs: Vec<SweepRun>,
    /// Wall-clock seconds the sweep took, start to end (the runs, generation and set-up).
    pub elapsed_s: f64,
    pub interrupted: bool,
    pub warnings: Vec<crate::warning::Warning>,
}
