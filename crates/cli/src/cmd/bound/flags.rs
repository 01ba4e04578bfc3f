//! The flags of `rtscope bound` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The documented interchange JSON (docs/bound.md).
    #[arg(long, value_name = "FILE.json", conflicts_with_all = ["rtsl_db", "trace"])]
    pub(super) input: Option<PathBuf>,
    /// rtsl's per-CPU SQLite databases (tables poid, paie, psd, dst, irq, nmi).
    #[arg(long = "rtsl-db", value_name = "PATH", num_args = 1.., conflicts_with = "trace")]
    pub(super) rtsl_db: Vec<PathBuf>,
    /// An rtscope trace file (.rtt): interrupts from its events, thread terms from preemptirq
    /// events or, where the kernel has none, the estimate fallback.
    #[arg(long, value_name = "FILE.rtt")]
    pub(super) trace: Option<PathBuf>,
    /// With --trace: the thread term to assume on CPUs that have neither preemptirq events nor
    /// samples in the trace, e.g. 20us (1ns..=1s). The result is labelled an estimate, not a
    /// sound bound.
    #[arg(long, value_name = "TIME", requires = "trace",
          value_parser = common::duration_within(bound::ASSUME_THREAD_RANGE))]
    pub(super) assume_thread: Option<Duration>,
    /// With --trace: latency samples recorded beside the trace (`rtscope measure --raw FILE`
    /// CSV: cpu,tid,cycle,expected_ns,latency_ns on CLOCK_MONOTONIC, like the trace), added to
    /// any samples stored in the .rtt.
    #[arg(long, value_name = "FILE.csv", requires = "trace")]
    pub(super) samples: Option<PathBuf>,
    /// With --trace: also compute the time-to-bound series at N evenly spaced instants
    /// (1 ..= 1000): the sliding-window bound from the data seen so far vs the observed maximum.
    #[arg(long, value_name = "N", requires = "trace")]
    pub(super) series: Option<u32>,
    /// The bound report as JSON (docs/schema/bound.schema.json): FILE, or stdout instead of the
    /// text with `-`
    #[command(flatten)]
    pub(super) json: common::JsonOut,
    /// Stop a fixed point (not converged) once L exceeds this: 1us ..= 1h, with a unit (ns, us,
    /// ms, s, m, h)
    #[arg(long, default_value = "1s", value_name = "TIME", value_parser = cap)]
    pub(super) cap: Duration,
    /// Stop a fixed point (not converged) after this many iterations (1 ..= 10000000).
    #[arg(long, default_value_t = rtscope_analysis::bound::DEFAULT_MAX_ITERATIONS)]
    pub(super) max_iterations: u64,
}
