//! Schedulability tests for task sets (Lelli 2014 thesis §2.3 and Ch. 3, Cerqueira &
//! Brandenburg 2013 §4: only an analysis of the whole set says whether all tasks meet their
//! deadlines). Pure functions over `model::taskset::Task`; every verdict carries its arithmetic.
//!
//! Model: sporadic tasks, constrained deadlines (D ≤ T), synchronous release, no blocking;
//! `inflate_ns` adds a measured overhead bound to every C (overhead-aware analysis).

mod global;
mod kernel;
mod partition;
pub mod sweep;
mod uni;

#[cfg(test)]
mod tests;

pub use global::gfb;
pub use kernel::{kernel_admission, KernelLimits};
pub use partition::{partition, Fit, PartitionError, PartitionTest};
pub use uni::{
    edf_processor_demand, edf_utilisation, fp_priorities, hyperbolic, liu_layland, rta,
    PriorityOrder,
};

use rtscope_model::taskset::{Task, TestResult, Verdict};

/// Copy of `tasks` with every C increased by `inflate_ns` (capped at nothing: a C above D then
/// simply fails the tests, which is the honest answer).
pub fn inflate(tasks: &[Task], inflate_ns: u64) -> Vec<Task> {
    tasks
        .iter()
        .map(|t| Task {
            wcet_ns: t.wcet_ns.saturating_add(inflate_ns),
            ..t.clone()
        })
        .collect()
}

pub(crate) fn result(
    test: &str,
    scope: &str,
    verdict: Verdict,
    exact: bool,
    detail: String,
) -> TestResult {
    TestResult {
        test: test.to_string(),
        scope: scope.to_string(),
        verdict,
        exact,
        detail,
    }
}

pub(crate) fn total_util(tasks: &[Task]) -> f64 {
    tasks.iter().map(Task::utilisation).sum()
}

pub(crate) fn implicit(tasks: &[Task]) -> bool {
    tasks.iter().all(|t| t.deadline_ns >= t.period_ns)
}

/// Every test that applies to one uniprocessor scope under EDF.
pub fn edf_uniprocessor_tests(tasks: &[Task], scope: &str) -> Vec<TestResult> {
    let mut v = vec![edf_utilisation(tasks, scope)];
    if !implicit(tasks) {
        v.push(edf_processor_demand(tasks, scope));
    }
    v
}

/// Every test that applies to one uniprocessor scope under fixed priorities in `order`.
pub fn fp_uniprocessor_tests(tasks: &[Task], order: PriorityOrder, scope: &str) -> Vec<TestResult> {
    let mut v = Vec::new();
    if implicit(tasks) && order == PriorityOrder::RateMonotonic {
        v.push(liu_layland(tasks, scope));
        v.push(hyperbolic(tasks, scope));
    }
    v.push(rta(tasks, order, scope));
    v
}
