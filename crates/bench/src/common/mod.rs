//! What the three benchmarks share: the error type, the stop flag (SIGINT/SIGTERM), real-time
//! thread set-up, the pacer that keeps RT bursts short, futex primitives, the cleanup reaper
//! (removes IPC objects, scratch files and tracefs instances even after SIGKILL) and a minimal
//! tracefs instance.

pub mod reaper;
pub mod rt;
pub mod sync;
pub mod tracefs;

rtscope_model::request_fields! {
    /// The fields every benchmark request shares, as its errors name them (the caller renders
    /// each token, [`rtscope_model::field::render`]).
    pub enum Field in "bench" { Cpu = "cpu" => CPU }
}

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
    rtscope_sys::clock::monotonic_ns()
}

/// Sleep until an absolute CLOCK_MONOTONIC time (retries on EINTR).
pub fn sleep_until(t_ns: u64) {
    use rtscope_sys::clock::{sleep_until_once, Clock};
    loop {
        match sleep_until_once(Clock::MONOTONIC, t_ns) {
            Err(e) if rtscope_sys::is_eintr(&e) && !stop_requested() => continue,
            _ => return,
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
            "{CPU}: CPU {cpu} is not online (online: {online:?})"
        )));
    }
    Ok(())
}

/// How the values every verb shares are resolved (the caller's one rule for each): the jobs of
/// this crate take them from their caller, whose bad input stays bad input.
pub trait Values {
    type Error: From<BenchError>;
    /// A CPU list against the online CPUs (all of them when absent).
    fn cpus(&self, flag: &str, spec: Option<&str>) -> std::result::Result<Vec<u32>, Self::Error>;
    /// An input file read whole as text.
    fn read(&self, flag: &str, p: &std::path::Path) -> std::result::Result<String, Self::Error>;
    /// A directory the job fills can take its files.
    fn output_dir(&self, flag: &str, p: &std::path::Path) -> std::result::Result<(), Self::Error>;
    /// A file written whole or not at all.
    fn write(&self, p: &std::path::Path, data: &[u8]) -> std::result::Result<(), Self::Error>;
    /// Real-time threads may be created: root or CAP_SYS_NICE.
    fn require_realtime(&self, verb: &str, why: &str) -> std::result::Result<(), Self::Error>;
}

/// The one CPU a benchmark pins every thread to: `--cpu`, an online CPU, or
/// [`default_cpu`].
pub fn one_cpu<V: Values>(v: &V, spec: Option<&str>) -> std::result::Result<u32, V::Error> {
    match spec {
        None => Ok(default_cpu()),
        Some(s) => match v.cpus(&CPU.to_string(), Some(s))?.as_slice() {
            [c] => Ok(*c),
            many => Err(BenchError::Invalid(format!(
                "{CPU}: this benchmark runs on one CPU, got {} ({s}); give one, e.g. {CPU} {}",
                many.len(),
                many[many.len() - 1]
            ))
            .into()),
        },
    }
}

/// The last online CPU: CPU 0 usually carries more housekeeping.
pub fn default_cpu() -> u32 {
    rtscope_probe::sys::online_cpus()
        .ok()
        .and_then(|v| v.last().copied())
        .unwrap_or(0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Values without the machine: a CPU list is taken as given (a single number is one CPU,
    /// `A-B` two), files and privileges are refused.
    pub struct NoMachine;

    impl Values for NoMachine {
        type Error = BenchError;
        fn cpus(&self, _: &str, spec: Option<&str>) -> Result<Vec<u32>> {
            Ok(match spec.and_then(|s| s.split_once('-')) {
                Some((a, b)) => vec![a.parse().unwrap_or(0), b.parse().unwrap_or(1)],
                None => vec![spec.and_then(|s| s.parse().ok()).unwrap_or(0)],
            })
        }
        fn read(&self, flag: &str, _: &std::path::Path) -> Result<String> {
            Err(BenchError::Invalid(format!("{flag}: no files here")))
        }
        fn output_dir(&self, flag: &str, _: &std::path::Path) -> Result<()> {
            Err(BenchError::Invalid(format!("{flag}: no files here")))
        }
        fn write(&self, p: &std::path::Path, _: &[u8]) -> Result<()> {
            Err(BenchError::Invalid(format!(
                "{}: no files here",
                p.display()
            )))
        }
        fn require_realtime(&self, verb: &str, _: &str) -> Result<()> {
            Err(BenchError::Unavailable(format!(
                "{verb}: no privileges here"
            )))
        }
    }

    #[test]
    fn one_cpu_takes_exactly_one() {
        assert_eq!(one_cpu(&NoMachine, Some("1")).unwrap(), 1);
        assert_eq!(one_cpu(&NoMachine, None).unwrap(), default_cpu());
        assert_eq!(
            one_cpu(&NoMachine, Some("0-1")).unwrap_err().to_string(),
            "⟨bench.cpu⟩: this benchmark runs on one CPU, got 2 (0-1); give one, e.g. ⟨bench.cpu⟩ 1"
        );
    }
}
