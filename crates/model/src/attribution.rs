//! Per-run attribution summary (issue 4): which causes explain the latency tail.
//! Owned by the trace/attribution work; extend here, keep it plain data.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct AttributionSummary {
    pub schema_version: u32,
    /// Per cause, over the whole run.
    pub causes: Vec<CauseSummary>,
    /// One line per CPU: what dominates its tail.
    pub per_cpu_tail: Vec<(u32, String)>,
    pub lost_events: u64,
    pub samples_attributed: u64,
    pub samples_unattributed: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct CauseSummary {
    pub cause: String,
    pub samples_affected: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub p99_contribution_ns: u64,
    /// Share of the latency of samples above p99 this cause explains (0..1).
    pub tail_p99_share: f64,
    pub tail_threshold_share: Option<f64>,
}
