//! `rtscope run`: the default job (`rtscope_session::resolve::default_job`). Measures every online
//! CPU (FIFO 95, 1 ms, 60 s unless told otherwise) with kernel tracing (`--trace auto`) so that
//! every sample is explained, prints the summary, stores the run and writes its files into
//! `<out>/<run-id>/`: `run.json` (RunRecord), `histogram.txt` (cyclictest -h format),
//! `summary.txt`, `report.html` (self-contained, inline SVG) and `trace.rtt` when traced. A traced
//! run also carries the latency bound (as `measure --bound`).

use super::measure::MeasureFlags;
use rtscope_session::resolve;
use std::path::PathBuf;

pub const DEFAULT_DURATION_S: f64 = 60.0;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    flags: MeasureFlags,
    /// Directory for the run's files (a sub-directory per run is created)
    #[arg(
        short = 'o',
        long,
        default_value = "rtscope-results",
        value_name = "DIR"
    )]
    out: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let asked = std::env::args().any(|x| x == "--trace" || x.starts_with("--trace="));
    let plan = resolve::default_job(&a.flags.lib(), asked, DEFAULT_DURATION_S, &a.out)?;
    Ok(rtscope_session::measure::run_plan(plan, a.flags.quiet)?)
}
