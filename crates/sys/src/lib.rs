//! rtscope's only door to the kernel.
//!
//! Owns every direct kernel call rtscope makes outside the eBPF glue: clocks and `sleep_until`,
//! timers, affinity, scheduling policies (`sched_setattr`/`sched_setscheduler`, timer slack),
//! memory locking and shared mappings, fork/exec/reap/kill of children, signal handlers, mounts,
//! SysV/POSIX IPC and PI mutexes for the benchmarks, and the one [`knob::Knob`] that saves a
//! kernel setting, writes a new value, restores it, and survives SIGKILL through a journal the
//! next run repairs.
//!
//! It must not: hold policy (which CPU, which priority, when to stop: the callers decide), format
//! output for a person, allocate or lock in the calls the per-sample loop makes (`clock`,
//! `timer` waits are `#[inline]` and make exactly one syscall), or hand out raw libc types and
//! functions under another name: every function is typed (only `process::fork` stays `unsafe`).
//! `nix` is used where it has the call; libc only for what nix lacks.

pub mod affinity;
pub mod clock;
pub mod fs;
pub mod ipc;
pub mod knob;
pub mod mem;
pub mod net;
pub mod process;
pub mod pty;
pub mod reaper;
pub mod sched;
pub mod signals;
pub mod system;
pub mod timer;

pub use nix::sys::signal::Signal;

use std::io;

/// `rc < 0` → the errno as an `io::Error`.
#[inline]
pub(crate) fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// True if `e` is EINTR (a signal interrupted a blocking call).
#[inline]
pub fn is_eintr(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINTR)
}

/// True if `e` is EBUSY (e.g. SCHED_DEADLINE admission refused).
#[inline]
pub fn is_ebusy(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EBUSY)
}

/// True if `e` is EINVAL (e.g. O_DIRECT refused by a file system).
#[inline]
pub fn is_einval(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINVAL)
}

/// The errno EINVAL as an `io::Error` (an argument the kernel would refuse).
pub fn einval() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
}

/// The errno EIO, the code a child reports when it cannot say better.
pub const EIO: i32 = libc::EIO;
