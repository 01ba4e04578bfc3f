//! The flags of `rtscope noise` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// Run time: 30s, 5m, 1h (1ms ..= 30d)
    #[arg(short = 'D', long, default_value = "10s", value_name = "TIME", value_parser = common::run_time())]
    pub(super) duration: Duration,
    /// CPUs to sample, e.g. 0,2-3 [default: all online]
    #[command(flatten)]
    pub(super) cpus: CpuListArg,
    /// osnoise period_us: one summary entry per CPU per period (100us..=10s; a bare number is
    /// µs)
    #[arg(long, default_value = "1s", value_name = "TIME", value_parser = micros)]
    pub(super) period: u64,
    /// osnoise runtime_us: how long of each period the tracer's thread samples (100us..=the
    /// period; a bare number is µs)
    #[arg(short = 'r', long, value_name = "TIME", value_parser = micros)]
    pub(super) runtime: Option<u64>,
    /// tracing_thresh: the smallest gap counted as noise (a bare number is µs) [default: the
    /// kernel's, 1us]
    #[arg(short = 'T', long, value_name = "TIME", value_parser = micros)]
    pub(super) min_noise: Option<u64>,
    /// osnoise/stop_tracing_us: stop at the first single noise this long (a bare number is µs)
    #[arg(short = 's', long, value_name = "TIME", value_parser = micros)]
    pub(super) stop: Option<u64>,
    /// Sources shown per CPU (0..=1000)
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub(super) top: usize,
    #[command(flatten)]
    pub(super) out: OutArgs,
}
