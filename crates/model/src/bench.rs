//! Results of the fine-grained benchmarks (rhealstone, sched-scale, pdlt) and task-set runs.
//! Owned by the bench work; extend here, keep it plain data.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BenchResult {
    Other { name: String, data: serde_json::Value },
}
