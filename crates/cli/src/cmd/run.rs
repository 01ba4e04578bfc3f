//! `rtscope run`: the default job. Measures every online CPU (FIFO 95, 1 ms, 60 s unless told
//! otherwise) with kernel tracing (`--trace auto`) so that every sample is explained, prints the summary, stores the run and writes its files into
//! `<out>/<run-id>/`: `run.json` (RunRecord), `histogram.txt` (cyclictest -h format),
//! `summary.txt`, `report.html` (self-contained, inline SVG) and `trace.rtt` when traced. A traced
//! run also carries the latency bound (as `measure --bound`).

use super::common;
use super::measure::{self, MeasureFlags};
use anyhow::Result;
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

/// Room a run directory needs: record and report (≈1 MB), flight-recorder trace (≈2 MB an
/// hour), with margin.
const RUN_DIR_BYTES: u64 = 16 << 20;

pub fn run(a: Args) -> Result<()> {
    let mut flags = a.flags.clone();
    // The default job explains its samples: tracing is on (auto) unless the user chose a mode.
    if !std::env::args().any(|x| x == "--trace" || x.starts_with("--trace=")) {
        flags.trace = "auto".into();
    }
    let mut plan = measure::resolve(&flags, "run", Some(DEFAULT_DURATION_S))?;
    let dir = a.out.join(&plan.id);
    // The run's files (record, report, histogram, flight-recorder trace) take a few MB; a run
    // must not go for its whole duration only to find the disk full.
    rtscope_files::check_output_dir(&dir, Some(RUN_DIR_BYTES))
        .map_err(|e| crate::usage!("--out {}: {e}", dir.display()))?;
    if plan.trace != rtscope_trace::Mechanism::Off {
        if plan.trace_file.is_none() {
            plan.trace_file = Some(dir.join("trace.rtt"));
        }
        // A traced default job also puts the latency bound next to the observed maximum.
        plan.bound_points.get_or_insert(flags.bound_points);
    }
    plan.outputs.run_dir = Some(dir);
    let total = plan
        .config
        .duration_s
        .map(std::time::Duration::from_secs_f64);
    let mut view = rtscope_session::live::default_view(a.flags.quiet, total);
    plan.warnings.extend(common::recover_leftovers());
    let outcome = rtscope_session::execute(&plan, view.as_mut())?;
    let json_stdout = flags.json.as_deref() == Some(std::path::Path::new("-"));
    measure::report_outcome(&outcome, !json_stdout)
}
