//! Processes: fork, exec, parent-death signals, process groups, reaping, killing, pipes.
//!
//! The functions a forked child of a multi-threaded process calls before it execs or exits
//! ([`exit_now`], [`die_with_parent`], [`set_own_group`], [`Gate::pass_in_child`], [`exec`],
//! [`reset_signals`]) are async-signal-safe: plain syscalls, no allocation.

use crate::Signal;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Which side of a fork we are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fork {
    Child,
    Parent(i32),
}

/// fork(2).
///
/// # Safety
/// In a multi-threaded process the child may only make async-signal-safe calls until it execs or
/// exits (glibc's malloc is reinitialised in the child, so allocation works in practice, but any
/// other lock another thread held stays held).
pub unsafe fn fork() -> io::Result<Fork> {
    // SAFETY: the caller upholds the contract above.
    match unsafe { nix::unistd::fork() }? {
        nix::unistd::ForkResult::Child => Ok(Fork::Child),
        nix::unistd::ForkResult::Parent { child } => Ok(Fork::Parent(child.as_raw())),
    }
}

/// _exit(2): leave now, without running destructors or atexit handlers (a forked child).
#[inline]
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions.
    unsafe { libc::_exit(code) }
}

pub fn getpid() -> i32 {
    nix::unistd::getpid().as_raw()
}

pub fn getppid() -> i32 {
    nix::unistd::getppid().as_raw()
}

/// Ask the kernel to send `sig` to the caller when its parent (thread) dies (PR_SET_PDEATHSIG).
pub fn set_parent_death_signal(sig: Signal) -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(sig).map_err(io::Error::from)
}

/// [`set_parent_death_signal`], then close the race where the parent died before the call: if we
/// were already re-parented, exit now.
pub fn die_with_parent(sig: Signal, expected_parent: i32) {
    let _ = set_parent_death_signal(sig);
    if getppid() != expected_parent {
        exit_now(0);
    }
}

/// setpgid(0, 0): the caller leads a new process group.
pub fn set_own_group() {
    let _ = nix::unistd::setpgid(nix::unistd::Pid::from_raw(0), nix::unistd::Pid::from_raw(0));
}

/// setpgid(pid, pid): put child `pid` in its own group (from the parent, closing the race with
/// the child's own call).
pub fn set_group_of(pid: i32) {
    let p = nix::unistd::Pid::from_raw(pid);
    let _ = nix::unistd::setpgid(p, p);
}

/// Send `sig` to `pid` (a negative pid is a process group, as kill(2)).
pub fn kill(pid: i32, sig: Signal) -> io::Result<()> {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).map_err(io::Error::from)
}

/// True if a process `pid` exists (kill(pid, 0); a zombie counts).
pub fn exists(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// SIGKILL a worker's whole process group and the worker itself.
pub fn kill_tree(pid: i32) {
    if pid <= 1 {
        return;
    }
    let _ = kill(-pid, Signal::SIGKILL);
    let _ = kill(pid, Signal::SIGKILL);
}

/// True if `pid` exists and is not a zombie (a zombie holds no CPU, file or port).
pub fn process_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S …`: the state follows the last ')'.
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X"),
        Err(_) => false,
    }
}

/// waitpid(pid, 0): block until child `pid` (-1 = any child) ends; (pid, raw wait status).
/// Decode the status with `std::process::ExitStatus::from_raw`.
pub fn wait(pid: i32) -> io::Result<(i32, i32)> {
    let mut st = 0;
    // SAFETY: waitpid writes the status into a local.
    let r = crate::check(unsafe { libc::waitpid(pid, &mut st, 0) })?;
    Ok((r, st))
}

/// wait4(pid, 0): block until child `pid` ends; (raw wait status, the child's peak RSS in KiB).
pub fn wait_with_max_rss(pid: i32) -> io::Result<(i32, u64)> {
    let mut st = 0;
    // SAFETY: a zeroed rusage is a valid value; wait4 fills it and the status.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to locals that outlive the call.
    crate::check(unsafe { libc::wait4(pid, &mut st, 0, &mut ru) })?;
    Ok((st, ru.ru_maxrss.max(0) as u64))
}

/// waitpid(pid, WNOHANG): a child that has ended, if any; (pid, raw wait status).
pub fn try_wait(pid: i32) -> io::Result<Option<(i32, i32)>> {
    let mut st = 0;
    // SAFETY: waitpid writes the status into a local.
    let r = crate::check(unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) })?;
    Ok((r > 0).then_some((r, st)))
}

/// The exit code of a raw wait status, if the child exited normally.
pub fn exit_code(raw_status: i32) -> Option<i32> {
    libc::WIFEXITED(raw_status).then(|| libc::WEXITSTATUS(raw_status))
}

/// The signal that ended a child, from a raw wait status.
pub fn term_signal(raw_status: i32) -> Option<i32> {
    libc::WIFSIGNALED(raw_status).then(|| libc::WTERMSIG(raw_status))
}

/// The C strings of `execv`: built before a fork, so the child only calls [`exec`].
pub struct Argv {
    path: CString,
    _args: Vec<CString>,
    ptrs: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into the CStrings this value owns.
unsafe impl Send for Argv {}
unsafe impl Sync for Argv {}

impl Argv {
    /// None if a word holds a NUL byte.
    pub fn new(path: &str, args: &[String]) -> Option<Argv> {
        let path = CString::new(path).ok()?;
        let args = args
            .iter()
            .map(|a| CString::new(a.as_str()).ok())
            .collect::<Option<Vec<_>>>()?;
        let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        Some(Argv {
            path,
            _args: args,
            ptrs,
        })
    }

    pub fn path(&self) -> &CStr {
        &self.path
    }
}

/// execv; if it fails, _exit(127) as a shell does.
pub fn exec(argv: &Argv) -> ! {
    // SAFETY: path and the NULL-terminated argv point into `argv`, alive for the call.
    unsafe {
        libc::execv(argv.path.as_ptr(), argv.ptrs.as_ptr());
    }
    exit_now(127)
}

/// execv of C strings built before the fork; if it fails, _exit(127) as a shell does.
pub fn exec_c(path: &CStr, argv: &[CString]) -> ! {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: NUL-terminated strings and a NULL-terminated pointer array that outlive the call.
    unsafe {
        libc::execv(path.as_ptr(), ptrs.as_ptr());
    }
    exit_now(127)
}

/// Drop to group `gid` then user `uid` (setgid, setuid): a child that must run unprivileged.
pub fn become_user(uid: u32, gid: u32) -> io::Result<()> {
    nix::unistd::setgid(nix::unistd::Gid::from_raw(gid))?;
    nix::unistd::setuid(nix::unistd::Uid::from_raw(uid)).map_err(io::Error::from)
}

/// A pipe, both ends close-on-exec: (read, write).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)
}

/// dup2(from, to), in a child before exec.
pub fn dup_onto(from: RawFd, to: RawFd) -> io::Result<()> {
    // SAFETY: dup2 on descriptors; no memory is touched.
    crate::check(unsafe { libc::dup2(from, to) }).map(|_| ())
}

/// Point stdout at /dev/null (a child whose output nobody reads).
pub fn stdout_to_devnull() {
    // SAFETY: open/dup2/close on descriptors; the path is a static C string.
    unsafe {
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if fd >= 0 {
            libc::dup2(fd, 1);
            libc::close(fd);
        }
    }
}

/// close_range(from, ~0): close every descriptor from `from` up (a child that must hold nothing
/// of its parent's).
pub fn close_from(from: u32) {
    // SAFETY: closes descriptors only.
    unsafe {
        libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32);
    }
}

/// read(2) of one fd into `buf`, retrying on EINTR; 0 = end of file. Async-signal-safe.
pub fn read_retry(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if !crate::is_eintr(&e) {
            return Err(e);
        }
    }
}

/// One read(2) (no retry: EINTR is the caller's to handle). Async-signal-safe.
#[inline]
pub fn read_once(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// One write(2) (no retry). Async-signal-safe.
#[inline]
pub fn write_once(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// close(2) of a raw descriptor this process owns and nothing else will close.
pub fn close(fd: RawFd) {
    // SAFETY: closing a descriptor; the caller owns it.
    unsafe {
        libc::close(fd);
    }
}

/// Unblock every signal and restore default dispositions for the ones a parent may have changed
/// (Rust ignores SIGPIPE; supervisors block SIGTERM/SIGINT/SIGCHLD). In a forked child.
pub fn reset_signals() {
    crate::signals::SignalMask::empty().set_thread_mask();
    for s in [
        Signal::SIGPIPE,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGCHLD,
    ] {
        crate::signals::set_default(s);
    }
}

/// A start barrier for forked processes: a pipe whose write end only the parent keeps. Every
/// child closes its copy of the write end; a gated child then blocks in `read` until the parent
/// closes its own ([`Gate::open`]), which every waiting child sees as end of file. A child killed
/// while it waits just dies: nothing else to undo.
pub struct Gate {
    r: RawFd,
    w: RawFd,
}

impl Gate {
    pub fn new() -> io::Result<Gate> {
        // O_CLOEXEC: an exec'd child never holds it.
        let (r, w) = pipe()?;
        Ok(Gate {
            r: into_raw(r),
            w: into_raw(w),
        })
    }

    /// In a forked child: drop the write end, then (`wait`) block until the gate opens.
    /// Only async-signal-safe calls, as after a fork of a multi-threaded process.
    pub fn pass_in_child(&self, wait: bool) {
        close(self.w);
        if wait {
            let mut b = [0u8; 1];
            // 0 = end of file (the gate is open); EINTR = a signal: wait again.
            let _ = read_retry(self.r, &mut b);
        }
        close(self.r);
    }

    /// In the parent, once: let every gated child go.
    pub fn open(&self) {
        close(self.w);
        close(self.r);
    }
}

fn into_raw(fd: OwnedFd) -> RawFd {
    use std::os::fd::IntoRawFd;
    fd.into_raw_fd()
}

/// Take ownership of a raw descriptor (e.g. one end of [`socket_pair`](crate::net::socket_pair)).
///
/// # Safety
/// `fd` must be open and owned by nothing else.
pub unsafe fn owned(fd: RawFd) -> OwnedFd {
    // SAFETY: the caller's contract.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// The raw number of a descriptor.
pub fn raw(fd: &impl AsRawFd) -> RawFd {
    fd.as_raw_fd()
}

/// An exclusive advisory lock on an open file (flock LOCK_EX): `Ok(true)` when taken at once,
/// `Ok(false)` when another process holds it and `wait` is false.
pub fn lock_exclusive(f: &std::fs::File, wait: bool) -> io::Result<bool> {
    let op = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    // SAFETY: flock on an open descriptor.
    if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_wait_and_exit_code() {
        // SAFETY: the child only calls exit_now.
        match unsafe { fork() }.unwrap() {
            Fork::Child => exit_now(7),
            Fork::Parent(pid) => {
                let (p, st) = wait(pid).unwrap();
                assert_eq!(p, pid);
                assert_eq!(exit_code(st), Some(7));
                assert_eq!(term_signal(st), None);
            }
        }
        assert!(exists(getpid()));
        assert!(process_running(getpid()));
    }
}
