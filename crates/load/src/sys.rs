//! The few kernel calls the load processes need, from `rtscope_sys`.

use crate::LoadPolicy;
use std::io;

pub use rtscope_model::cpus::parse_cpu_list;
pub(crate) use rtscope_sys::process::{
    die_with_parent, getpid, kill_tree, process_running, reset_signals,
};

pub(crate) fn online_cpus() -> Vec<u32> {
    rtscope_sys::affinity::online_cpus_or_all()
}

/// The kernel's cpu_set_t holds CPUs 0..1024.
const CPU_SETSIZE: u32 = 1024;

/// Pin the calling process to `cpus` (CPUs beyond CPU_SETSIZE are left out).
pub(crate) fn set_affinity(cpus: &[u32]) -> io::Result<()> {
    let ok: Vec<u32> = cpus.iter().copied().filter(|&c| c < CPU_SETSIZE).collect();
    rtscope_sys::affinity::set_affinity(0, &ok)
}

/// Sets the calling process's policy explicitly: a load forked from a SCHED_FIFO measurement
/// thread would otherwise inherit its real-time priority.
pub(crate) fn set_policy(p: LoadPolicy) -> io::Result<()> {
    use rtscope_sys::sched::Policy;
    let policy = match p {
        LoadPolicy::Other => Policy::OTHER,
        LoadPolicy::Fifo(prio) => Policy::fifo(prio as i32),
    };
    rtscope_sys::sched::set_scheduler(0, policy)
}

pub(crate) fn sleep_ms(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}
