//! `rtscope noise`: per-CPU OS noise and its sources from the kernel's osnoise tracer, as
//! `rtla osnoise top` (rtscope_verbs::osnoise; docs/rtla.md).

use super::common::{self, micros, CpuListArg, OutArgs};
use anyhow::Result;
use rtscope_verbs::osnoise::{self, NoisePlan};
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Run time: 30s, 5m, 1h (1ms ..= 30d)
    #[arg(short = 'D', long, default_value = "10s", value_name = "TIME", value_parser = common::run_time())]
    duration: Duration,
    /// CPUs to sample, e.g. 0,2-3 [default: all online]
    #[command(flatten)]
    cpus: CpuListArg,
    /// osnoise period_us: one summary entry per CPU per period (100us..=10s; a bare number is
    /// µs)
    #[arg(long, default_value = "1s", value_name = "TIME", value_parser = micros)]
    period: u64,
    /// osnoise runtime_us: how long of each period the tracer's thread samples (100us..=the
    /// period; a bare number is µs)
    #[arg(short = 'r', long, value_name = "TIME", value_parser = micros)]
    runtime: Option<u64>,
    /// tracing_thresh: the smallest gap counted as noise (a bare number is µs) [default: the
    /// kernel's, 1us]
    #[arg(short = 'T', long, value_name = "TIME", value_parser = micros)]
    min_noise: Option<u64>,
    /// osnoise/stop_tracing_us: stop at the first single noise this long (a bare number is µs)
    #[arg(short = 's', long, value_name = "TIME", value_parser = micros)]
    stop: Option<u64>,
    /// Sources shown per CPU (0..=1000)
    #[arg(long, default_value_t = 8, value_name = "N")]
    top: usize,
    #[command(flatten)]
    out: OutArgs,
}

pub fn run(a: Args) -> Result<()> {
    let plan = NoisePlan {
        cpus: a.cpus.resolve()?,
        duration_s: a.duration.as_secs_f64(),
        period_us: a.period,
        runtime_us: a.runtime.unwrap_or(a.period),
        threshold_us: a.min_noise,
        stop_us: a.stop,
        top: a.top,
        lab_hint: lab_hint(),
    };
    Ok(osnoise::noise(&plan, &a.out.lib())?)
}

/// The lab command that runs this command line in the trace kernel.
pub fn lab_hint() -> String {
    let argv = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    format!("rtscope lab run --kernel trace -- {argv}")
}
