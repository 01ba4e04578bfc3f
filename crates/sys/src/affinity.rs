//! CPU affinity: the one `set_affinity`, and where a thread runs.

use std::io;

/// Pin thread/process `tid` (0 = the caller) to `cpus`. A CPU at or beyond CPU_SETSIZE is EINVAL
/// (nothing is changed).
pub fn set_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        set.set(c as usize).map_err(io::Error::from)?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(tid), &set).map_err(io::Error::from)
}

/// A CPU set built ahead of time (e.g. before a fork, so the child only makes the syscall).
#[derive(Clone, Copy)]
pub struct CpuMask(nix::sched::CpuSet);

impl CpuMask {
    /// EINVAL for a CPU at or beyond CPU_SETSIZE.
    pub fn of(cpus: &[u32]) -> io::Result<CpuMask> {
        let mut set = nix::sched::CpuSet::new();
        for &c in cpus {
            set.set(c as usize).map_err(io::Error::from)?;
        }
        Ok(CpuMask(set))
    }

    /// sched_setaffinity of `tid` (0 = the caller). Async-signal-safe.
    pub fn apply(&self, tid: i32) -> io::Result<()> {
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(tid), &self.0)
            .map_err(io::Error::from)
    }
}

/// The CPUs thread/process `tid` (0 = the caller) may run on.
pub fn affinity(tid: i32) -> io::Result<Vec<u32>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(tid))?;
    Ok((0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .map(|c| c as u32)
        .collect())
}

/// The CPU the caller runs on now (0 if the kernel cannot say).
#[inline]
pub fn current_cpu() -> u32 {
    nix::sched::sched_getcpu().map_or(0, |c| c as u32)
}

/// Online CPUs (/sys/devices/system/cpu/online).
pub fn online_cpus() -> io::Result<Vec<u32>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    rtscope_model::cpus::parse_cpu_list(s.trim())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Online CPUs, or 0..available_parallelism when the kernel list cannot be read.
pub fn online_cpus_or_all() -> Vec<u32> {
    online_cpus()
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n as u32).collect()
        })
}

/// CPUs configured (possible, online or not): sysconf(_SC_NPROCESSORS_CONF); None if unknown.
pub fn configured_cpus() -> Option<u32> {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    (n > 0).then_some(n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_roundtrip() {
        let before = affinity(0).unwrap();
        assert!(!before.is_empty());
        set_affinity(0, &before[..1]).unwrap();
        assert_eq!(affinity(0).unwrap(), before[..1]);
        set_affinity(0, &before).unwrap();
        assert!(set_affinity(0, &[1 << 20]).is_err());
        assert_eq!(affinity(0).unwrap(), before);
    }
}
