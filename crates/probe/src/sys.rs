//! Thin syscall wrappers. Everything here is a direct kernel call with errno mapped to
//! `std::io::Error`; no policy lives here.

use std::io;

pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

pub fn errno_result(rc: libc::c_long) -> io::Result<libc::c_long> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `struct sched_attr` (include/uapi/linux/sched/types.h), SCHED_ATTR_SIZE_VER0 layout.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct SchedAttr {
    pub size: u32,
    pub sched_policy: u32,
    pub sched_flags: u64,
    pub sched_nice: i32,
    pub sched_priority: u32,
    pub sched_runtime: u64,
    pub sched_deadline: u64,
    pub sched_period: u64,
}

pub const SCHED_OTHER: u32 = 0;
pub const SCHED_FIFO: u32 = 1;
pub const SCHED_RR: u32 = 2;
pub const SCHED_DEADLINE: u32 = 6;
pub const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;
pub const SCHED_FLAG_DL_OVERRUN: u64 = 0x04;

pub fn sched_setattr(tid: i32, attr: &SchedAttr) -> io::Result<()> {
    let mut a = *attr;
    a.size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: `a` is a valid, properly sized sched_attr for the duration of the call.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &a as *const SchedAttr, 0u32) };
    errno_result(rc).map(|_| ())
}

pub fn sched_getattr(tid: i32) -> io::Result<SchedAttr> {
    let mut a = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: the kernel writes at most `size` bytes into `a`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut a as *mut SchedAttr,
            size,
            0u32,
        )
    };
    errno_result(rc).map(|_| a)
}

pub fn policy_name(p: u32) -> &'static str {
    match p {
        SCHED_OTHER => "other",
        SCHED_FIFO => "fifo",
        SCHED_RR => "rr",
        3 => "batch",
        5 => "idle",
        SCHED_DEADLINE => "deadline",
        _ => "unknown",
    }
}

pub fn set_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; zeroed is its empty state.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c as usize >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: index checked against CPU_SETSIZE above.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size given.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    errno_result(rc as libc::c_long).map(|_| ())
}

pub fn current_cpu() -> u32 {
    // SAFETY: no arguments; returns -1 only on ENOSYS.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as u32
}

pub fn clock_raw(clock: rtscope_model::ClockId) -> libc::clockid_t {
    match clock {
        rtscope_model::ClockId::Monotonic => libc::CLOCK_MONOTONIC,
        rtscope_model::ClockId::Realtime => libc::CLOCK_REALTIME,
    }
}

#[inline]
pub fn now_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; clock ids used here are always supported (vDSO).
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts_to_ns(&ts)
}

#[inline]
pub fn ts_to_ns(ts: &libc::timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[inline]
pub fn ns_to_ts(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Effective capability check from /proc/self/status (CapEff), so no libcap is needed.
pub fn has_capability(cap: u32) -> bool {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    s.lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .map(|bits| bits & (1u64 << cap) != 0)
        .unwrap_or(false)
}

pub const CAP_SYS_NICE: u32 = 23;

pub fn is_root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

pub fn online_cpus() -> io::Result<Vec<u32>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    parse_cpu_list(s.trim()).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Parse a kernel CPU list ("0-3,5,7-8"): the one parser, in `rtscope_model::cpus`.
pub use rtscope_model::cpus::parse_cpu_list;
