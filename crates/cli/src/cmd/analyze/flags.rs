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
    /// Eventless stretches at least this long count as "no guest activity", e.g. 100us, 0.5ms
    /// (1us..=1s)
    #[arg(long, default_value = "100us", value_name = "TIME", value_parser = gap_threshold())]
    pub(super) gap_threshold: Duration,
    /// The same while another thread holds the CPU after the wake-up (1us..=1s): it may run in
    /// the kernel without events, but a busy CPU gets a tick every 1/HZ (default: 1.5 ticks at
    /// HZ=250)
    #[arg(long, default_value = "6ms", value_name = "TIME", value_parser = gap_threshold())]
    pub(super) busy_gap_threshold: Duration,
    /// Also report the share of samples above this latency each cause explains, e.g. 100us
    /// (0..=1h)
    #[arg(long, value_name = "TIME", value_parser = crate::cmd::common::duration(0.0, 3600.0))]
    pub(super) tail_threshold: Option<Duration>,
    /// The analysis as JSON (schema: docs/trace-format.md, "analyze JSON") to FILE, or to stdout
    /// instead of the text with `-`
    #[command(flatten)]
    pub(super) json: crate::cmd::common::JsonOut,
    /// Old spelling of `--json FILE`.
    #[arg(long = "json-out", hide = true)]
    pub(super) json_out: Option<PathBuf>,
}
