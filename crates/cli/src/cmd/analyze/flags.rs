//! The flags of `rtscope analyze` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// The trace file (.rtt) written by `measure --trace` or `trace record`.
    #[arg(value_name = "FILE")]
    pub(super) file: Option<PathBuf>,
    /// How many worst samples to show with their full timeline (0..=10000).
    #[arg(long = "worst", default_value_t = 10)]
    pub(super) worst: usize,
    /// Eventless stretches at least this long (µs) count as "no guest activity" (1..=1000000).
    #[arg(long = "gap-threshold-us", default_value_t = 100)]
    pub(super) gap_threshold_us: u64,
    /// The same while another thread holds the CPU after the wake-up (µs, 1..=1000000): it may
    /// run in the kernel without events, but a busy CPU gets a tick every 1/HZ (default: 1.5
    /// ticks at HZ=250).
    #[arg(long = "busy-gap-threshold-us", default_value_t = 6000)]
    pub(super) busy_gap_threshold_us: u64,
    /// Also report the share of samples above this latency (µs) each cause explains.
    #[arg(long = "threshold-us")]
    pub(super) threshold_us: Option<u64>,
    /// The analysis as JSON (schema: docs/trace-format.md, "analyze JSON") to FILE, or to stdout
    /// instead of the text with `-`
    #[command(flatten)]
    pub(super) json: crate::cmd::common::JsonOut,
    /// Old spelling of `--json FILE`.
    #[arg(long = "json-out", hide = true)]
    pub(super) json_out: Option<PathBuf>,
}
