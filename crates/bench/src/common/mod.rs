//! What the three benchmarks share: the error type, the stop flag (SIGINT/SIGTERM), real-time
//! thread set-up, the pacer that keeps RT bursts short, futex primitives, the cleanup reaper
//! (removes IPC objects, scratch files and tracefs instances even after SIGKILL) and a minimal
//! tracefs instance.

pub mod reaper;
pub mod rt;
pub mod sync;
pub mod tracefs;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Probe(#[from] rtscope_probe::ProbeError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("a benchmark thread panicked ({0})")]
    Panic(&'static str),
}

impl BenchError {
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        BenchError::Io {
            what: what.into(),
            source,
        }
    }
    /// `what` failed with the current errno.
    pub fn last_os(what: impl Into<String>) -> Self {
        Self::io(what, std::io::Error::last_os_error())
    }
}

pub type Result<T> = std::result::Result<T, BenchError>;

/// `stop_requested` is set by SIGINT/SIGTERM/SIGHUP (after [`install_stop_handlers`]) or by
/// [`request_stop`]: every loop checks it and winds down, so cleanup always runs on the normal
/// path.
pub use rtscope_probe::signals::{clear_stop, request_stop, stop_requested};

/// SIGINT, SIGTERM and SIGHUP set the stop flag instead of killing the process (the one signal
/// module, `rtscope_probe::signals`).
pub fn install_stop_handlers() -> Result<()> {
    rtscope_probe::signals::install_handlers();
    Ok(())
}

/// CLOCK_MONOTONIC in ns (the clock trace events' hrtimer fields use).
#[inline]
pub fn mono_ns() -> u64 {
    rtscope_probe::sys::now_ns(libc::CLOCK_MONOTONIC)
}

/// Sleep until an absolute CLOCK_MONOTONIC time (retries on EINTR).
pub fn sleep_until(t_ns: u64) {
    let ts = rtscope_probe::sys::ns_to_ts(t_ns);
    loop {
        // SAFETY: ts is a valid timespec; no remaining-time pointer with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
        if stop_requested() {
            return;
        }
    }
}

/// Busy-wait in user space for `ns`, bounded by construction (the only spinning any RT thread
/// does is through this or a loop with an explicit deadline).
#[inline]
pub fn spin_for(ns: u64) {
    let end = mono_ns() + ns;
    while mono_ns() < end {
        std::hint::spin_loop();
    }
}

/// Validate a CPU number against the online CPUs.
pub fn check_cpu(cpu: u32) -> Result<()> {
    let online = rtscope_probe::sys::online_cpus()
        .map_err(|e| BenchError::io("reading /sys/devices/system/cpu/online", e))?;
    if !online.contains(&cpu) {
        return Err(BenchError::Invalid(format!(
            "--cpu: CPU {cpu} is not online (online: {online:?})"
        )));
    }
    Ok(())
}

/// The last online CPU: CPU 0 usually carries more housekeeping.
pub fn default_cpu() -> u32 {
    rtscope_probe::sys::online_cpus()
        .ok()
        .and_then(|v| v.last().copied())
        .unwrap_or(0)
}
