//! Latency-bound results (issue 5, ECRTS'20 Theorem 8). JSON field names are fixed by the issue.
//! Owned by the bound work; extend here, keep it plain data.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct BoundReport {
    pub schema_version: u32,
    pub cpus: Vec<serde_json::Value>,
    /// True when thread terms were estimated (kernel lacks preemptirq tracepoints).
    pub estimate: bool,
}
