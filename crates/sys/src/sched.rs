//! Scheduling: `sched_setattr` (SCHED_DEADLINE, which nix lacks), `sched_setscheduler`,
//! priorities, yielding, timer slack, thread ids.

use std::io;

/// The calling thread's id.
#[inline]
pub fn gettid() -> i32 {
    nix::unistd::gettid().as_raw()
}

fn errno_result(rc: libc::c_long) -> io::Result<libc::c_long> {
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
pub const SCHED_BATCH: u32 = 3;
pub const SCHED_IDLE: u32 = 5;
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
        SCHED_BATCH => "batch",
        SCHED_IDLE => "idle",
        SCHED_DEADLINE => "deadline",
        _ => "unknown",
    }
}

/// A POSIX policy and its static priority (0 for SCHED_OTHER/BATCH/IDLE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub policy: u32,
    pub priority: i32,
}

impl Policy {
    pub const OTHER: Policy = Policy {
        policy: SCHED_OTHER,
        priority: 0,
    };
    pub fn fifo(priority: i32) -> Policy {
        Policy {
            policy: SCHED_FIFO,
            priority,
        }
    }
    pub fn rr(priority: i32) -> Policy {
        Policy {
            policy: SCHED_RR,
            priority,
        }
    }
}

/// sched_setscheduler(pid, policy, priority); pid 0 = the caller.
pub fn set_scheduler(pid: i32, p: Policy) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: p.priority,
    };
    // SAFETY: plain syscall with a valid pointer.
    crate::check(unsafe { libc::sched_setscheduler(pid, p.policy as libc::c_int, &param) })
        .map(|_| ())
}

/// sched_getscheduler + sched_getparam of `pid` (0 = the caller).
pub fn get_scheduler(pid: i32) -> io::Result<Policy> {
    // SAFETY: plain syscalls with a valid pointer.
    let policy = crate::check(unsafe { libc::sched_getscheduler(pid) })?;
    Ok(Policy {
        policy: policy as u32,
        priority: get_priority(pid)?,
    })
}

/// The static priority of `pid` (sched_getparam).
pub fn get_priority(pid: i32) -> io::Result<i32> {
    let mut sp = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain syscall with a valid pointer.
    crate::check(unsafe { libc::sched_getparam(pid, &mut sp) })?;
    Ok(sp.sched_priority)
}

/// sched_setparam: change the priority of `pid` within its policy.
pub fn set_priority(pid: i32, priority: i32) -> io::Result<()> {
    let sp = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: plain syscall with a valid pointer.
    crate::check(unsafe { libc::sched_setparam(pid, &sp) }).map(|_| ())
}

/// Give up the CPU (sched_yield).
#[inline]
pub fn yield_now() {
    let _ = nix::sched::sched_yield();
}

/// The calling thread's timer slack, in ns (PR_SET_TIMERSLACK; 0 resets to the default).
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    nix::sys::prctl::set_timerslack(ns as libc::c_ulong).map_err(io::Error::from)
}

/// The caller's policy saved, then changed to SCHED_FIFO `priority`; the saved one is put back on
/// drop. `None` from [`FifoGuard::enter`] when the change was refused (unprivileged).
pub struct FifoGuard {
    saved: Policy,
}

impl FifoGuard {
    pub fn enter(priority: i32) -> Option<FifoGuard> {
        let saved = get_scheduler(0).ok()?;
        set_scheduler(0, Policy::fifo(priority)).ok()?;
        Some(FifoGuard { saved })
    }
}

impl Drop for FifoGuard {
    fn drop(&mut self) {
        let _ = set_scheduler(0, self.saved);
    }
}
