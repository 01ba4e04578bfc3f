//! The one signal module of every verb that runs work (measurement sessions, benchmarks, task
//! sets, loads). Signals of a run: SIGINT, SIGTERM and SIGHUP end it cleanly (partial results written and
//! marked, every knob restored); SIGUSR2 asks for a snapshot of the summary without stopping (as
//! cyclictest prints its status on SIGUSR2). The handlers only store to atomics, which is
//! async-signal-safe; the orchestrating thread polls them. Measurement threads block every
//! asynchronous signal, so delivery never lands on a measured CPU's thread.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static SNAPSHOT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_snapshot(_: libc::c_int) {
    SNAPSHOT.store(true, Ordering::SeqCst);
}

fn install(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: the handlers only store to atomics (async-signal-safe); sigaction with a zeroed,
    // then filled, struct is the documented way to install them.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// Install the stop handlers (SIGINT, SIGTERM, SIGHUP) and the snapshot handler (SIGUSR2).
pub fn install_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        install(sig, on_stop);
    }
    install(libc::SIGUSR2, on_snapshot);
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
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl Guard {
    pub fn install(extra: &[(libc::c_int, extern "C" fn(libc::c_int))]) -> Guard {
        let mut old = Vec::new();
        let stops = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
            .map(|s| (s, on_stop as extern "C" fn(libc::c_int)));
        for &(sig, h) in stops.iter().chain(extra) {
            // SAFETY: as in `install`; the previous disposition is saved to be restored.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = h as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut prev) == 0 {
                    old.push((sig, prev));
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
