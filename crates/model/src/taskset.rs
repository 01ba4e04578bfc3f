//! Task sets (issue 8): tasks, placements, per-job outcomes. Owned by the taskset work.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Task {
    pub id: u32,
    pub wcet_ns: u64,
    pub period_ns: u64,
    pub deadline_ns: u64,
}
