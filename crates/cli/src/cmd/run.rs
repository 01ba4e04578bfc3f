//! `rtscope run`: the default job (`rtscope_session::resolve::default_job`). Measures every online
//! CPU (FIFO 95, 1 ms, 60 s unless told otherwise) with kernel tracing (`--trace auto`) so that
//! every sample is explained, prints the summary, stores the run and writes its files into
//! `<out>/<run-id>/`: `run.json` (RunRecord), `histogram.txt` (cyclictest -h format),
//! `summary.txt`, `report.html` (self-contained, inline SVG) and `trace.rtt` when traced. A traced
//! run also carries the latency bound (as `measure --bound`).

use super::measure::{MeasureFlags, TraceArg};
use rtscope_session::resolve;
use std::path::PathBuf;
use std::time::Duration;

pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    let req = a.flags.request(TraceArg::Auto);
    let plan =
        resolve::default_job(&req, DEFAULT_DURATION, &a.out).map_err(crate::fields::usage)?;
    Ok(rtscope_session::measure::run_plan(plan, a.flags.out.quiet)?)
}
