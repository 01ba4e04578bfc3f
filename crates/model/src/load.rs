//! Figures a background load reports, so a run record shows the load really ran.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every background load's name, as a command line, a campaign file and a record spell it
/// (`rtscope_load::LoadKind` runs them).
pub const NAMES: [&str; 7] = [
    "idle",
    "cpu-cache",
    "hackbench",
    "disk",
    "net",
    "io",
    "exec",
];

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct LoadReport {
    /// `idle`, `cpu-cache`, `hackbench`, `disk`, `net`, `io`, `exec`.
    pub kind: String,
    /// Parameters as resolved (working-set size, groups, scratch dir, argv, …).
    pub params: BTreeMap<String, String>,
    /// Intensity figures with units in the name: `accesses_per_s`, `messages_per_s`,
    /// `ctx_switches_per_s`, `disk_read_mb_per_s`, `irqs_per_s`, …
    pub figures: BTreeMap<String, f64>,
    pub duration_s: f64,
    pub warnings: Vec<String>,
}
