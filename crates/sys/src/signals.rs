//! The one signal module of every verb that runs work (measurement sessions, benchmarks, task
//! sets, loads). Signals of a run: SIGINT, SIGTERM and SIGHUP end it cleanly (partial results
//! written and marked, every knob restored); SIGUSR2 asks for a snapshot of the summary without
//! stopping (as cyclictest prints its status on SIGUSR2). The handlers only store to atomics,
//! which is async-signal-safe; the orchestrating thread polls them. Measurement threads block
//! every asynchronous signal, so delivery never lands on a measured CPU's thread.
//!
//! Also: signal masks ([`SignalMask`]) and synchronous waits on them, and default/ignored
//! dispositions.

use crate::Signal;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static SNAPSHOT: AtomicBool = AtomicBool::new(false);

/// A signal handler: it may only touch atomics (async-signal-safe).
pub type Handler = extern "C" fn(i32);

extern "C" fn on_stop(sig: i32) {
    SIGNAL.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_snapshot(_: i32) {
    SNAPSHOT.store(true, Ordering::SeqCst);
}

fn action(handler: Handler) -> libc::sigaction {
    // SAFETY: sigaction is plain data; zeroed, then filled, is the documented way to build it.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        sa
    }
}

/// Install `handler` for `sig` (SA_RESTART), for the rest of the process.
pub fn install(sig: Signal, handler: Handler) {
    let sa = action(handler);
    // SAFETY: a valid sigaction; the handler only touches atomics.
    unsafe { libc::sigaction(sig as i32, &sa, std::ptr::null_mut()) };
}

/// Install the stop handlers (SIGINT, SIGTERM, SIGHUP) and the snapshot handler (SIGUSR2).
pub fn install_handlers() {
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        install(sig, on_stop);
    }
    install(Signal::SIGUSR2, on_snapshot);
}

/// The default disposition for `sig` (SIG_DFL).
pub fn set_default(sig: Signal) {
    // SAFETY: SIG_DFL is always a valid disposition.
    unsafe { libc::signal(sig as i32, libc::SIG_DFL) };
}

/// Ignore `sig` (SIG_IGN).
pub fn ignore(sig: Signal) {
    // SAFETY: SIG_IGN is always a valid disposition.
    unsafe { libc::signal(sig as i32, libc::SIG_IGN) };
}

/// Ask the running work to stop, as a signal would (e.g. a benchmark's own deadline).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Forget an earlier stop request: a library caller running work twice in one process.
pub fn clear_stop() {
    STOP.store(false, Ordering::SeqCst);
    SIGNAL.store(0, Ordering::SeqCst);
}

/// Handlers installed for the life of one piece of work, the previous dispositions restored on
/// drop (a library must not leave its handlers in its caller's process). `extra` adds
/// work-specific handlers, e.g. SIGXCPU for SCHED_DEADLINE overruns; they must only touch
/// atomics.
pub struct Guard {
    old: Vec<(i32, libc::sigaction)>,
}

impl Guard {
    pub fn install(extra: &[(Signal, Handler)]) -> Guard {
        let mut old = Vec::new();
        let stops =
            [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP].map(|s| (s, on_stop as Handler));
        for &(sig, h) in stops.iter().chain(extra) {
            let sa = action(h);
            // SAFETY: as in `install`; the previous disposition is saved to be restored.
            unsafe {
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig as i32, &sa, &mut prev) == 0 {
                    old.push((sig as i32, prev));
                }
            }
        }
        Guard { old }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restoring the disposition saved by `install`.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
    }
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The signal that asked to stop (0 if none).
pub fn stop_signal() -> i32 {
    SIGNAL.load(Ordering::SeqCst)
}

pub fn stop_signal_name() -> &'static str {
    match stop_signal() {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// True once per SIGUSR2 received (clears the request).
pub fn take_snapshot_request() -> bool {
    SNAPSHOT.swap(false, Ordering::SeqCst)
}

/// A set of signals (sigset_t).
#[derive(Clone, Copy)]
pub struct SignalMask(libc::sigset_t);

impl SignalMask {
    pub fn empty() -> SignalMask {
        // SAFETY: sigemptyset initialises the set.
        unsafe {
            let mut s: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut s);
            SignalMask(s)
        }
    }

    pub fn of(sigs: &[Signal]) -> SignalMask {
        let mut m = SignalMask::empty();
        for &s in sigs {
            // SAFETY: a valid signal number into an initialised set.
            unsafe { libc::sigaddset(&mut m.0, s as i32) };
        }
        m
    }

    /// Every signal but `except` (the synchronous ones a thread must still receive).
    pub fn all_except(except: &[Signal]) -> SignalMask {
        // SAFETY: sigfillset initialises the set; sigdelset removes valid numbers.
        unsafe {
            let mut s: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut s);
            for &e in except {
                libc::sigdelset(&mut s, e as i32);
            }
            SignalMask(s)
        }
    }

    /// The real-time signal SIGRTMIN + `n` alone.
    pub fn realtime(n: i32) -> (SignalMask, i32) {
        let signo = libc::SIGRTMIN() + n;
        let mut m = SignalMask::empty();
        // SAFETY: a valid signal number into an initialised set.
        unsafe { libc::sigaddset(&mut m.0, signo) };
        (m, signo)
    }

    /// Block these signals in the calling thread; returns the previous mask.
    pub fn block(&self) -> SignalMask {
        let mut old = SignalMask::empty();
        // SAFETY: valid sets; changes only the calling thread's mask.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &self.0, &mut old.0) };
        old
    }

    /// Make this the calling thread's whole mask.
    pub fn set_thread_mask(&self) {
        // SAFETY: a valid set; changes only the calling thread's mask.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }

    /// Wait up to `timeout` for one of these (blocked) signals: its number, or None on timeout
    /// or interruption.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<i32> {
        let ts = crate::clock::ns_to_ts(timeout.as_nanos() as u64);
        // SAFETY: valid pointers to locals.
        let sig = unsafe { libc::sigtimedwait(&self.0, std::ptr::null_mut(), &ts) };
        (sig > 0).then_some(sig)
    }

    /// sigwaitinfo: wait for one of these (blocked) signals. Err carries the errno (EINTR too).
    #[inline]
    pub fn wait(&self) -> std::io::Result<i32> {
        // SAFETY: a valid set; the info pointer may be null.
        let rc = unsafe { libc::sigwaitinfo(&self.0, std::ptr::null_mut()) };
        crate::check(rc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_signal_is_waited_for() {
        let m = SignalMask::of(&[Signal::SIGUSR1]);
        let old = m.block();
        nix::sys::signal::raise(Signal::SIGUSR1).unwrap();
        assert_eq!(
            m.wait_timeout(Duration::from_millis(100)),
            Some(Signal::SIGUSR1 as i32)
        );
        assert_eq!(m.wait_timeout(Duration::from_millis(1)), None);
        old.set_thread_mask();
    }
}
