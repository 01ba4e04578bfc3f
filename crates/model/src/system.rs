//! What the machine was when a run was taken. Each field says where it came from when the
//! source matters (the preemption model can be read several ways, with varying trust).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct SystemInfo {
    pub hostname: String,
    pub kernel_release: String,
    pub kernel_version: String,
    pub kernel_cmdline: String,
    /// "none", "voluntary", "full", "lazy", "rt", or "unknown".
    pub preempt_model: String,
    /// Where `preempt_model` was read: e.g. "/sys/kernel/debug/sched/preempt", "uname -v".
    pub preempt_model_source: String,
    pub clocksource: String,
    pub cpu_model: String,
    pub online_cpus: Vec<u32>,
    /// (cpu, core id, package id)
    pub topology: Vec<CpuTopology>,
    pub cpuidle_driver: Option<String>,
    pub cpuidle_governor: Option<String>,
    pub isolcpus: Option<String>,
    pub nohz_full: Option<String>,
    pub sched_rt_runtime_us: Option<i64>,
    pub sched_rt_period_us: Option<u64>,
    /// e.g. "kvm (Firecracker)", or None on bare metal as far as we can tell.
    pub hypervisor: Option<String>,
    pub hypervisor_source: Option<String>,
    pub hz: Option<u32>,
    /// Steal time accumulated on the measured CPUs during the run, ns (from /proc/stat).
    pub steal_during_run_ns: Option<u64>,
    pub steal_per_cpu_ns: Vec<(u32, u64)>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct CpuTopology {
    pub cpu: u32,
    pub core_id: Option<u32>,
    pub package_id: Option<u32>,
}
