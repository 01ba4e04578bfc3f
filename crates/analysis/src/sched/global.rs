//! Global EDF on m identical CPUs.

use super::{implicit, result, total_util};
use rtscope_model::taskset::{Task, TestResult, Verdict};

/// Goossens, Funk & Baruah 2003 (GFB): global EDF meets every implicit deadline if
/// U ≤ m − (m − 1)·u_max. For constrained deadlines the density form λ = Σ C/D ≤ m − (m − 1)·λ_max
/// is used (Bertogna, Cirinei & Lipari 2005). Sufficient only, except U > m which is infeasible.
pub fn gfb(tasks: &[Task], m: u32, scope: &str) -> TestResult {
    let m_f = m as f64;
    let u = total_util(tasks);
    if u > m_f + 1e-12 {
        return result(
            "gfb",
            scope,
            Verdict::NotSchedulable,
            true,
            format!("U = {u:.4} > m = {m}"),
        );
    }
    let (sym, sum, max) = if implicit(tasks) {
        (
            "U",
            u,
            tasks.iter().map(Task::utilisation).fold(0.0, f64::max),
        )
    } else {
        (
            "λ",
            tasks.iter().map(Task::density).sum(),
            tasks.iter().map(Task::density).fold(0.0, f64::max),
        )
    };
    let bound = m_f - (m_f - 1.0) * max;
    let (v, op) = if sum <= bound + 1e-12 {
        (Verdict::Schedulable, "≤")
    } else {
        (Verdict::Inconclusive, ">")
    };
    result(
        "gfb",
        scope,
        v,
        m == 1 && implicit(tasks),
        format!(
            "{sym} = {sum:.4} {op} m − (m − 1)·{sym}max = {m} − {}·{max:.4} = {bound:.4}",
            m - 1
        ),
    )
}
