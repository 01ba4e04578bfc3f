//! The RunRecord: everything one run produced, as stored and exported.

use crate::{Histogram, LoadReport, RunConfig, Stats, SystemInfo};
use serde::{Deserialize, Serialize};

/// One sample worth keeping individually (worst N, above threshold, break).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SampleRef {
    pub cpu: u32,
    pub tid: u32,
    /// 0-based cycle number of the thread.
    pub cycle: u64,
    /// Planned wake-up, ns on the run's clock.
    pub expected_ns: u64,
    pub latency_ns: u64,
}

/// Every sample of a thread, for traced runs and `--raw` files: planned wake-up and latency on
/// CLOCK_MONOTONIC (so they line up with kernel event timestamps).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RawSample {
    pub cpu: u32,
    pub tid: u32,
    pub cycle: u64,
    pub expected_ns: u64,
    pub latency_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct Hygiene {
    pub mlockall: bool,
    pub prefaulted_stack_bytes: u64,
    pub prefaulted_heap_bytes: u64,
    /// Value written to /dev/cpu_dma_latency and held for the run (None = not held).
    pub cpu_dma_latency_us: Option<u32>,
    /// Timer slack applied to SCHED_OTHER threads (1 ns), None when not applicable.
    pub timer_slack_ns: Option<u64>,
    pub notes: Vec<String>,
    /// Peak resident set size of the rtscope process over the run (getrusage ru_maxrss).
    #[serde(default)]
    pub peak_rss_kib: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ThreadResult {
    pub index: u32,
    pub cpu: u32,
    pub tid: u32,
    /// Policy as observed from the kernel during the run (sched_getattr).
    pub observed_policy: String,
    pub observed_priority: i32,
    pub cycles: u64,
    /// Periods missed entirely (the thread woke after one or more whole further periods).
    pub overruns: u64,
    pub histogram: Histogram,
    pub linear: crate::histogram::LinearHistogram,
    pub stats: Stats,
    pub worst: Vec<SampleRef>,
    pub above_threshold: Vec<SampleRef>,
    /// Samples above threshold beyond the stored cap.
    pub above_threshold_dropped: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    #[default]
    Completed,
    /// SIGINT/SIGTERM: results are partial.
    Interrupted,
    /// `--break-above`: stopped at the first sample over the threshold.
    BreakAbove,
    Error,
    /// An interim record written while the run was going (`--checkpoint`). Stored and still
    /// this: the run never finished (killed, out of memory, power lost) or is still running;
    /// `checkpoint` says when it was written.
    Checkpoint,
}

/// When an interim record was written (`EndReason::Checkpoint`), and by whom, so that `runs` and
/// `show` can tell a run that died after its last checkpoint from one still going.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct CheckpointInfo {
    /// 1 for the first checkpoint of the run.
    pub number: u32,
    /// RFC 3339, UTC.
    pub written_at: String,
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// The writing process and host (a run is "still running" only if both match a live
    /// rtscope process).
    pub pid: u32,
    pub hostname: String,
    /// Seconds between checkpoints.
    pub interval_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub schema_version: u32,
    pub id: String,
    pub tool_version: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub wall_duration_s: f64,
    pub end_reason: EndReason,
    pub interrupted: bool,
    pub break_sample: Option<SampleRef>,
    pub config: RunConfig,
    pub system: SystemInfo,
    pub hygiene: Hygiene,
    pub threads: Vec<ThreadResult>,
    pub histogram: Histogram,
    pub stats: Stats,
    pub overruns: u64,
    pub loads: Vec<LoadReport>,
    pub attribution: Option<crate::attribution::AttributionSummary>,
    pub bound: Option<crate::bound::BoundReport>,
    pub trace_file: Option<String>,
    /// Each with a stable code (crate::warning); plain strings of older records read back too.
    pub warnings: Vec<crate::warning::Warning>,
    pub tags: std::collections::BTreeMap<String, String>,
    /// Results of other verbs (rhealstone, sched-scale, pdlt, taskset) stored in the same record.
    #[serde(default)]
    pub bench: Option<crate::bench::BenchResult>,
    /// Set on interim records (`end_reason: checkpoint`) and kept on the final record of a run
    /// that wrote checkpoints (the last one written before the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointInfo>,
}
