//! `rtscope analyze FILE.rtt`: re-run per-sample attribution on a recorded trace, offline
//! (`rtscope_verbs::analyze`), and print the run-level view and the worst samples' timelines
//! (text, or JSON with `--json`).

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The trace file (.rtt) written by `measure --trace` or `trace record`.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// How many worst samples to show with their full timeline (0..=10000).
    #[arg(long = "worst", default_value_t = 10)]
    worst: usize,
    /// Eventless stretches at least this long (µs) count as "no guest activity" (1..=1000000).
    #[arg(long = "gap-threshold-us", default_value_t = 100)]
    gap_threshold_us: u64,
    /// The same while another thread holds the CPU after the wake-up (µs, 1..=1000000): it may
    /// run in the kernel without events, but a busy CPU gets a tick every 1/HZ (default: 1.5
    /// ticks at HZ=250).
    #[arg(long = "busy-gap-threshold-us", default_value_t = 6000)]
    busy_gap_threshold_us: u64,
    /// Also report the share of samples above this latency (µs) each cause explains.
    #[arg(long = "threshold-us")]
    threshold_us: Option<u64>,
    /// The analysis as JSON (schema: docs/trace-format.md, "analyze JSON") to FILE, or to stdout
    /// instead of the text with `-`
    #[command(flatten)]
    json: super::common::JsonOut,
    /// Old spelling of `--json FILE`.
    #[arg(long = "json-out", hide = true)]
    json_out: Option<PathBuf>,
}

pub fn run(mut a: Args) -> anyhow::Result<()> {
    if let Some(p) = a.json_out.take() {
        a.json.path = Some(p);
    }
    let f = rtscope_verbs::analyze::AnalyzeFlags {
        file: a.file,
        top: a.worst,
        gap_threshold_us: a.gap_threshold_us,
        busy_gap_threshold_us: a.busy_gap_threshold_us,
        threshold_us: a.threshold_us,
        field_names: crate::fields_offline::analyze,
    };
    Ok(rtscope_verbs::analyze::file(&f, &a.json.dest())?)
}
