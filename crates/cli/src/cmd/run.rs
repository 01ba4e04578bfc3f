//! `rtscope run`: the default job. Measures every online CPU (FIFO 95, 1 ms, 60 s unless told
//! otherwise) with kernel tracing (`--trace auto`) so that every sample is explained, prints the summary, stores the run and writes its files into
//! `<out>/<run-id>/`: `run.json` (RunRecord), `histogram.txt` (cyclictest -h format),
//! `summary.txt`, `report.html` (self-contained, inline SVG) and `trace.rtt` when traced. A traced
//! run also carries the latency bound (as `measure --bound`).

use super::common;
use super::measure::{self, MeasureFlags};
use anyhow::{Context, Result};
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

pub fn run(a: Args) -> Result<()> {
    let mut flags = a.flags.clone();
    // The default job explains its samples: tracing is on (auto) unless the user chose a mode.
    if !std::env::args().any(|x| x == "--trace" || x.starts_with("--trace=")) {
        flags.trace = "auto".into();
    }
    let mut r = measure::resolve(&flags, "run", Some(DEFAULT_DURATION_S))?;
    let dir = a.out.join(&r.id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| crate::usage!("--out: cannot create {}: {e}", dir.display()))?;
    if r.trace != rtscope_trace::Mechanism::Off {
        if r.trace_file.is_none() {
            r.trace_file = Some(dir.join("trace.rtt"));
        }
        // A traced default job also puts the latency bound next to the observed maximum.
        r.bound_points.get_or_insert(flags.bound_points);
    }
    common::check_output("--out", &dir.join("run.json"))?;
    let mut display = measure::default_display(a.flags.quiet, &r.config.cpus);
    let (rec, raw) = measure::execute(&r, display.as_mut())?;
    flags.json = Some(dir.join("run.json"));
    flags.histogram_file = Some(dir.join("histogram.txt"));
    let mut written = measure::write_outputs(&flags, &rec, &raw)?;
    let summary = rtscope_report::text::summary(&rec);
    common::write_atomic(&dir.join("summary.txt"), summary.as_bytes())?;
    written.push(format!("summary: {}", dir.join("summary.txt").display()));
    let report = rtscope_report::html::build(
        std::slice::from_ref(&rec),
        &rtscope_report::html::ReportOptions {
            title: format!("rtscope run {}", rec.id),
            generated_at: common::rfc3339(std::time::SystemTime::now()),
            command: rec.config.cmdline.join(" "),
        },
    );
    common::write_atomic(&dir.join("report.html"), report.html.as_bytes())
        .context("writing report.html")?;
    written.push(format!(
        "HTML report: {}",
        dir.join("report.html").display()
    ));
    print!("{summary}");
    for w in written {
        println!("wrote {w}");
    }
    if !a.flags.no_store {
        super::store_record(a.flags.db.as_deref(), &rec)?;
    }
    Ok(())
}
