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
    /// The settings `rtscope doctor` judges, beyond the fields above (None: not read, as for a
    /// measurement, which does not pay for reading every IRQ and kernel thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuning: Option<Tuning>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct CpuTopology {
    pub cpu: u32,
    pub core_id: Option<u32>,
    pub package_id: Option<u32>,
}

/// What the machine's real-time tuning was, read from /proc and /sys (each field names its file;
/// None: the file was absent or unreadable, which the checks treat as "not known", never as a
/// finding of its own unless the file's absence is the finding).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct Tuning {
    /// /proc/interrupts and /proc/irq/N/{smp_affinity_list,effective_affinity_list}.
    pub irqs: Vec<IrqInfo>,
    /// /proc/irq/default_smp_affinity, as a CPU list.
    pub default_irq_affinity: Option<Vec<u32>>,
    /// Kernel threads (PF_KTHREAD in /proc/PID/stat) with their allowed CPUs
    /// (/proc/PID/status Cpus_allowed_list).
    pub kthreads: Vec<TaskInfo>,
    /// User processes among the daemons that matter here (irqbalance, stalld, tuned).
    pub daemons: Vec<TaskInfo>,
    /// /sys/devices/virtual/workqueue/cpumask (the unbound workqueues' default) as a CPU list.
    pub workqueue_cpumask: Option<Vec<u32>>,
    /// /sys/devices/virtual/workqueue/*/cpumask of each workqueue that exposes one.
    pub workqueues: Vec<(String, Vec<u32>)>,
    /// /proc/sys/kernel/timer_migration.
    pub timer_migration: Option<u32>,
    /// /sys/devices/system/cpu/cpuN/cpuidle/stateK.
    pub idle_states: Vec<IdleState>,
    /// /dev/cpu_dma_latency: the PM QoS limit in force, µs (2000000000 when nobody holds one).
    pub cpu_dma_latency_us: Option<u32>,
    /// /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor.
    pub governors: Vec<(u32, String)>,
    /// cpufreq/boost ("1" on) or intel_pstate/no_turbo inverted: Some(true) when turbo is on.
    pub boost: Option<bool>,
    /// /sys/devices/system/cpu/cpuN/topology/thread_siblings_list.
    pub smt_siblings: Vec<(u32, Vec<u32>)>,
    /// /sys/kernel/mm/transparent_hugepage/enabled and defrag, the bracketed choice.
    pub thp_enabled: Option<String>,
    pub thp_defrag: Option<String>,
    /// /sys/kernel/mm/transparent_hugepage/khugepaged/defrag.
    pub khugepaged_defrag: Option<u32>,
    /// /sys/kernel/mm/ksm/run.
    pub ksm_run: Option<u32>,
    /// /proc/swaps: the active swap areas.
    pub swaps: Vec<String>,
    /// /proc/sys/kernel/numa_balancing.
    pub numa_balancing: Option<u32>,
    /// /sys/kernel/debug/sched/fair_server/cpuN/runtime, ns (kernels 6.12+, debugfs mounted).
    pub fair_server_runtime_ns: Vec<(u32, u64)>,
    /// /proc/sys/kernel/watchdog, nmi_watchdog and watchdog_cpumask.
    pub watchdog: Option<u32>,
    pub nmi_watchdog: Option<u32>,
    pub watchdog_cpumask: Option<Vec<u32>>,
    /// /sys/devices/system/clocksource/clocksource0/available_clocksource.
    pub available_clocksources: Vec<String>,
    /// /sys/devices/system/machinecheck/machinecheck0/check_interval, s (0: no polling).
    pub mce_check_interval_s: Option<u64>,
    /// /sys/kernel/security/lockdown, the bracketed choice.
    pub lockdown: Option<String>,
    /// /sys/kernel/btf/vmlinux exists.
    pub btf: bool,
    /// tracefs events/preemptirq exists (CONFIG_PREEMPTIRQ_TRACEPOINTS, needs a mounted tracefs).
    pub preemptirq_events: Option<bool>,
    /// /proc/stat per CPU since boot: (cpu, all ticks, steal ticks).
    pub cpu_ticks: Vec<(u32, u64, u64)>,
}

/// One interrupt line.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct IrqInfo {
    pub irq: u32,
    /// The handlers' names, as the last column of /proc/interrupts (`virtio3-rx`).
    pub name: String,
    /// The chip column (`PCI-MSIX-0000:00:04.0`).
    pub chip: String,
    /// Interrupts handled per CPU since boot, in online-CPU order: (cpu, count).
    pub counts: Vec<(u32, u64)>,
    pub affinity: Option<Vec<u32>>,
    pub effective_affinity: Option<Vec<u32>>,
}

/// A task and the CPUs it may run on.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct TaskInfo {
    pub pid: u32,
    pub comm: String,
    pub cpus_allowed: Vec<u32>,
}

/// One idle state of one CPU.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct IdleState {
    pub cpu: u32,
    pub state: u32,
    pub name: String,
    /// Exit latency, µs (stateK/latency).
    pub exit_latency_us: u32,
    /// stateK/disable.
    pub disabled: bool,
}
