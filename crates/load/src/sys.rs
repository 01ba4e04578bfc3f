//! Thin wrappers over the few syscalls the load processes need.

use crate::LoadPolicy;
use std::io;

pub use rtscope_model::cpus::parse_cpu_list;

pub(crate) fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(&s).ok())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n as u32).collect()
        })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub(crate) fn set_affinity(cpus: &[u32]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds are checked against CPU_SETSIZE below.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if (c as usize) < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(c as usize, &mut set);
            }
        }
        check(libc::sched_setaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        ))
    }
}

/// Sets the calling process's policy explicitly: a load forked from a SCHED_FIFO measurement
/// thread would otherwise inherit its real-time priority.
pub(crate) fn set_policy(p: LoadPolicy) -> io::Result<()> {
    let (policy, prio) = match p {
        LoadPolicy::Other => (libc::SCHED_OTHER, 0),
        LoadPolicy::Fifo(prio) => (libc::SCHED_FIFO, prio as libc::c_int),
    };
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: plain syscall on the calling process with a valid pointer.
    check(unsafe { libc::sched_setscheduler(0, policy, &param) })
}

/// Asks the kernel to send `sig` when the parent (thread) dies, then closes the race where the
/// parent died before the call: if we were already re-parented, exit now.
pub(crate) fn die_with_parent(sig: libc::c_int, expected_parent: libc::pid_t) {
    // SAFETY: prctl/getppid/_exit have no memory-safety preconditions.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0);
        if libc::getppid() != expected_parent {
            libc::_exit(0);
        }
    }
}

/// Unblocks every signal and restores default dispositions for the ones the parent may have
/// changed (Rust ignores SIGPIPE; the supervisor blocks SIGTERM/SIGINT/SIGCHLD).
pub(crate) fn reset_signals() {
    // SAFETY: single-threaded child after fork; these calls only change this process's state.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        for s in [
            libc::SIGPIPE,
            libc::SIGTERM,
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGCHLD,
        ] {
            libc::signal(s, libc::SIG_DFL);
        }
    }
}

pub(crate) fn getpid() -> libc::pid_t {
    // SAFETY: no preconditions.
    unsafe { libc::getpid() }
}

/// SIGKILLs a worker's whole process group and the worker itself.
pub(crate) fn kill_tree(pid: libc::pid_t) {
    if pid <= 1 {
        return;
    }
    // SAFETY: signalling a pid we forked (or its group); ESRCH is harmless.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
    }
}

/// True if `pid` exists and is not a zombie (a zombie holds no CPU, file or port).
pub(crate) fn process_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S …`: the state follows the last ')'.
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X"),
        Err(_) => false,
    }
}

pub(crate) fn sleep_ms(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}
