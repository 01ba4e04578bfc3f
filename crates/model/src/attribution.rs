//! Per-run attribution summary: which causes explain the latency tail.
//! Produced by `rtscope_analysis::attribution`; plain data.

use serde::{Deserialize, Serialize};

/// Version of this summary's shape (bumped on incompatible change).
pub const ATTRIBUTION_SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct AttributionSummary {
    pub schema_version: u32,
    /// Per cause, over the whole run, largest tail share first.
    pub causes: Vec<CauseSummary>,
    /// One line per CPU: what dominates its tail.
    pub per_cpu_tail: Vec<(u32, String)>,
    /// Events the capture lost (all CPUs). Non-zero: attribution of some samples is incomplete.
    pub lost_events: u64,
    pub samples_attributed: u64,
    pub samples_unattributed: u64,
    /// Latency at the 99th percentile (nearest rank) over all samples, ns.
    #[serde(default)]
    pub p99_latency_ns: u64,
    /// Samples at or above `p99_latency_ns` (the "p99 tail").
    #[serde(default)]
    pub tail_p99_samples: u64,
    /// The user threshold the `tail_threshold_share`s refer to, and how many samples exceed it.
    #[serde(default)]
    pub tail_threshold_ns: Option<u64>,
    #[serde(default)]
    pub tail_threshold_samples: u64,
    /// Eventless stretches at least this long count as "no guest activity".
    #[serde(default)]
    pub gap_threshold_ns: u64,
    /// Parts of every attributed sample sum to its latency within this many ns (checked).
    #[serde(default)]
    pub sum_tolerance_ns: u64,
    /// The run's worst samples (worst first, `--worst` of them), each with its timeline: what
    /// `rtscope analyze` prints, kept in the record so reports can draw them.
    #[serde(default)]
    pub worst: Vec<WorstSample>,
    /// Relative resolution of which samples form the p99 tail and of the causes'
    /// `p99_contribution_ns` when the summary was built online while streaming (log-linear
    /// buckets, 64 per power of two: a contribution lies in [exact, exact·(1+1/64)), and the tail
    /// also holds the samples of the p99's own bucket below the p99). `p99_latency_ns` itself is
    /// then the HDR histogram's, as in the record's statistics (exact below 2048 ns, within
    /// 1/1024 above). None: exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_relative_resolution: Option<f64>,
}

/// One piece of a sample's timeline.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Segment {
    /// Offsets from the planned wake-up E, ns.
    pub start_ns: u64,
    pub end_ns: u64,
    pub cause: String,
    /// Who/what: the thread that ran, the IRQ, "idle", ...
    pub detail: String,
}

/// A thread that ran on the CPU between the wake-up and the switch to the measured thread.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct ThreadRan {
    pub pid: u32,
    pub comm: String,
    /// Kernel prio (lower is more important).
    pub prio: i32,
    pub ran_ns: u64,
    /// "preempting" (higher priority than the measured thread) or "blocking" (lower or equal:
    /// it held the CPU in a non-preemptible section).
    pub relation: String,
}

/// One of the worst samples of a run with its timeline.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct WorstSample {
    pub cpu: u32,
    pub tid: u32,
    pub cycle: u64,
    /// Planned wake-up, CLOCK_MONOTONIC ns.
    pub expected_ns: u64,
    pub latency_ns: u64,
    /// What woke the thread (`vector:local_timer`, …), empty when not seen.
    #[serde(default)]
    pub handler: String,
    /// (cause, ns), largest first; sums to `latency_ns`.
    pub parts: Vec<(String, u64)>,
    pub segments: Vec<Segment>,
    #[serde(default)]
    pub threads: Vec<ThreadRan>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct CauseSummary {
    pub cause: String,
    /// Samples where this cause took > 0 ns.
    pub samples_affected: u64,
    pub total_ns: u64,
    /// Largest contribution to one sample.
    pub max_ns: u64,
    /// 99th percentile (nearest rank, zeros included) of this cause's per-sample contribution.
    pub p99_contribution_ns: u64,
    /// Share of the latency of samples at/above p99 this cause explains (0..1).
    pub tail_p99_share: f64,
    /// Same for samples above the user threshold (None without a threshold or such samples).
    pub tail_threshold_share: Option<f64>,
}
