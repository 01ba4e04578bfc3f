//! `rtscope noise`: per-CPU OS noise and its sources from the kernel's osnoise tracer, as
//! `rtla osnoise top` (rtscope_verbs::osnoise; docs/rtla.md).

use super::common::{self, OutArgs};
use anyhow::Result;
use rtscope_verbs::osnoise::{self, NoisePlan};

#[derive(clap::Args)]
pub struct Args {
    /// Run time: 30s, 5m, 1h (1 ms ..= 30 days)
    #[arg(short = 'D', long, default_value = "10s", value_name = "TIME")]
    duration: String,
    /// CPUs to sample, e.g. 0,2-3 [default: all online]
    #[arg(short = 'c', long, value_name = "LIST")]
    cpus: Option<String>,
    /// osnoise period_us: one summary entry per CPU per period (100..=10000000)
    #[arg(short = 'p', long, default_value_t = 1_000_000, value_name = "US")]
    period: u64,
    /// osnoise runtime_us: how long of each period the tracer's thread samples (100..=period)
    #[arg(short = 'r', long, value_name = "US")]
    runtime: Option<u64>,
    /// tracing_thresh: the smallest gap counted as noise, µs [default: the kernel's, 1 µs]
    #[arg(short = 'T', long, value_name = "US")]
    threshold: Option<u64>,
    /// osnoise/stop_tracing_us: stop at the first single noise of this many µs
    #[arg(short = 's', long, value_name = "US")]
    stop: Option<u64>,
    /// Sources shown per CPU (0..=1000)
    #[arg(long, default_value_t = 8, value_name = "N")]
    top: usize,
    #[command(flatten)]
    out: OutArgs,
}

pub fn run(a: Args) -> Result<()> {
    let plan = NoisePlan {
        cpus: common::resolve_cpus("--cpus", a.cpus.as_deref())?,
        duration_s: common::parse_duration("--duration", &a.duration)?,
        period_us: a.period,
        runtime_us: a.runtime.unwrap_or(a.period),
        threshold_us: a.threshold,
        stop_us: a.stop,
        top: a.top,
        lab_hint: lab_hint(),
    };
    Ok(osnoise::noise(&plan, &a.out.lib())?)
}

/// This command line as it would follow `rtscope lab run … --`.
pub fn lab_hint() -> String {
    std::env::args().skip(1).collect::<Vec<_>>().join(" ")
}
