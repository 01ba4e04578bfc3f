//! Bin-packing of tasks onto CPUs or clusters: first-fit, best-fit and worst-fit, all decreasing
//! by utilisation (the usual heuristics of partitioned scheduling; Lelli 2014 Ch. 3 uses
//! partitioned and clustered EDF/RM).

use super::uni::{edf_processor_demand, rta, PriorityOrder};
use super::{global::gfb, implicit, total_util};
use rtscope_model::taskset::{Task, Verdict};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    FirstFit,
    BestFit,
    WorstFit,
}

impl Fit {
    pub fn name(self) -> &'static str {
        match self {
            Fit::FirstFit => "first-fit",
            Fit::BestFit => "best-fit",
            Fit::WorstFit => "worst-fit",
        }
    }
}

/// The test a bin must pass after a task is added.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PartitionTest {
    /// EDF on one CPU: U ≤ capacity, and dbf(t) ≤ t for constrained deadlines.
    Edf { capacity: f64 },
    /// Fixed priority on one CPU: exact RTA, and U ≤ capacity.
    FixedPriority { order: PriorityOrder, capacity: f64 },
    /// Global EDF inside a cluster of `cpus` CPUs: GFB, and U ≤ capacity × cpus.
    ClusterGfb { cpus: u32, capacity: f64 },
}

impl PartitionTest {
    fn fits(&self, tasks: &[Task]) -> bool {
        let u = total_util(tasks);
        match *self {
            PartitionTest::Edf { capacity } => {
                u <= capacity + 1e-12
                    && (implicit(tasks)
                        || edf_processor_demand(tasks, "").verdict == Verdict::Schedulable)
            }
            PartitionTest::FixedPriority { order, capacity } => {
                u <= capacity + 1e-12 && rta(tasks, order, "").verdict == Verdict::Schedulable
            }
            PartitionTest::ClusterGfb { cpus, capacity } => {
                u <= capacity * cpus as f64 + 1e-12
                    && gfb(tasks, cpus, "").verdict == Verdict::Schedulable
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{fit} could not place task {task_id} (U = {util:.4}) on any of {bins} bins: {loads}")]
pub struct PartitionError {
    pub fit: &'static str,
    pub task_id: u32,
    pub util: f64,
    pub bins: usize,
    /// Utilisation of each bin when placement failed.
    pub loads: String,
}

/// Assign each task to one of `bins` bins; returns the bin index of every task (same order as
/// `tasks`). Tasks are considered by decreasing utilisation (ties by id).
pub fn partition(
    tasks: &[Task],
    bins: usize,
    fit: Fit,
    test: PartitionTest,
) -> Result<Vec<usize>, PartitionError> {
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by(|&a, &b| {
        tasks[b]
            .utilisation()
            .total_cmp(&tasks[a].utilisation())
            .then(tasks[a].id.cmp(&tasks[b].id))
    });
    let mut content: Vec<Vec<Task>> = vec![Vec::new(); bins];
    let mut assign = vec![usize::MAX; tasks.len()];
    for &i in &order {
        let t = &tasks[i];
        let mut candidates: Vec<usize> = (0..bins)
            .filter(|&b| {
                let mut trial = content[b].clone();
                trial.push(t.clone());
                test.fits(&trial)
            })
            .collect();
        let load = |b: usize| total_util(&content[b]);
        match fit {
            Fit::FirstFit => {}
            // Best fit: the fullest bin that still fits; worst fit: the emptiest (stable on ties).
            Fit::BestFit => {
                candidates.sort_by(|&a, &b| load(b).total_cmp(&load(a)).then(a.cmp(&b)))
            }
            Fit::WorstFit => {
                candidates.sort_by(|&a, &b| load(a).total_cmp(&load(b)).then(a.cmp(&b)))
            }
        }
        match candidates.first() {
            Some(&b) => {
                content[b].push(t.clone());
                assign[i] = b;
            }
            None => {
                return Err(PartitionError {
                    fit: fit.name(),
                    task_id: t.id,
                    util: t.utilisation(),
                    bins,
                    loads: (0..bins)
                        .map(|b| format!("bin{b}={:.4}", load(b)))
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            }
        }
    }
    Ok(assign)
}
