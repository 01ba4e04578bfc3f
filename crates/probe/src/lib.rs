//! Measurement threads: admission backends, timer modes, hygiene (mlock, prefault,
//! cpu_dma_latency, timer slack), system capture, and the one measurement loop.
//! This crate measures; it never formats output.

pub mod admission;
pub mod hygiene;
pub mod measure;
pub mod recorder;
pub mod ring;
pub mod signals;
pub mod sys;
pub mod system;
pub mod timer;
pub mod tuning;

pub use measure::{LiveThread, MeasureOutcome, MeasureSpec, Measurement};
pub use ring::SampleRing;

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{what}: {source}")]
    Sched {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("SCHED_DEADLINE admission refused by the kernel's admission control (EBUSY): this thread asks for bandwidth {asked:.3} (runtime/period){}; the sum over all DEADLINE tasks of a root domain must stay within that limit × CPUs", limit_per_cpu.map(|l| format!(", the kernel admits at most {l:.3} per CPU (sched_rt_runtime_us/sched_rt_period_us)")).unwrap_or_default())]
    DeadlineAdmission {
        asked: f64,
        limit_per_cpu: Option<f64>,
    },
    #[error("pinning to CPU {cpu}: {source}")]
    Affinity {
        cpu: u32,
        #[source]
        source: std::io::Error,
    },
    #[error("timer ({what}): {source}")]
    Timer {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("mlockall: {0}")]
    Mlock(#[source] std::io::Error),
    #[error("/dev/cpu_dma_latency: {0}")]
    DmaLatency(#[source] std::io::Error),
    #[error("starting measurement thread: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("measurement thread {0} panicked")]
    ThreadPanic(u32),
}
