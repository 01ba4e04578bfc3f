//! The kernel's SCHED_DEADLINE admission rule (kernel/sched/deadline.c, `__dl_overflow`):
//! a root domain of `cpus` CPUs admits a new task while
//!   Σ runtime_i/period_i ≤ (sched_rt_runtime_us / sched_rt_period_us) × cpus,
//! where the sum includes the fair servers' reservations (dl_server, Linux ≥ 6.12) and every
//! DEADLINE task already in the domain. Per task the kernel also requires
//! 1024 ns ≤ runtime ≤ deadline ≤ period (`__checkparam_dl`).

use super::result;
use rtscope_model::taskset::{TestResult, Verdict};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelLimits {
    /// sched_rt_runtime_us / sched_rt_period_us.
    pub limit_per_cpu: f64,
    /// Bandwidth per CPU the fair server holds against admission (0 when the kernel has none).
    pub fair_server_per_cpu: f64,
    /// Bandwidth other DEADLINE threads already hold in this root domain.
    pub other_bandwidth: f64,
}

/// `reservations` are (runtime, deadline, period) in ns of the tasks admitted to one root domain
/// of `cpus` CPUs.
pub fn kernel_admission(
    reservations: &[(u64, u64, u64)],
    cpus: u32,
    limits: KernelLimits,
    scope: &str,
) -> TestResult {
    for (i, &(q, d, p)) in reservations.iter().enumerate() {
        if q < 1024 || q > d || d > p {
            return result(
                "kernel-admission",
                scope,
                Verdict::NotSchedulable,
                true,
                format!("task {i}: needs 1024 ns ≤ runtime ({q}) ≤ deadline ({d}) ≤ period ({p})"),
            );
        }
    }
    let asked: f64 = reservations
        .iter()
        .map(|&(q, _, p)| q as f64 / p as f64)
        .sum();
    let cap =
        (limits.limit_per_cpu - limits.fair_server_per_cpu) * cpus as f64 - limits.other_bandwidth;
    let (v, op) = if asked <= cap + 1e-9 {
        (Verdict::Schedulable, "≤")
    } else {
        (Verdict::NotSchedulable, ">")
    };
    result(
        "kernel-admission",
        scope,
        v,
        true,
        format!(
            "Σ Q/P = {asked:.4} {op} ({:.3} − {:.3} fair server) × {cpus} CPU − {:.3} held by others = {cap:.4}",
            limits.limit_per_cpu, limits.fair_server_per_cpu, limits.other_bandwidth
        ),
    )
}
