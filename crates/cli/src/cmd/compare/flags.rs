//! The flags of `rtscope compare` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(super) db: DbArgs,
    /// Run ids (or unique prefixes); the first is the baseline unless --baseline is given
    #[arg(required = true, num_args = 1..)]
    pub(super) runs: Vec<String>,
    /// Baseline run (default: the first RUN)
    #[arg(long)]
    pub(super) baseline: Option<String>,
    /// Exit with code 3 when a run regressed on --metric by more than PCT percent (0..=10000)
    #[arg(long, value_name = "PCT")]
    pub(super) fail_above_pct: Option<f64>,
    /// Metric --fail-above-pct applies to: avg, median, p99, p99.99, max
    #[arg(long, default_value = "p99", value_parser = ["avg", "mean", "median", "p50", "p99", "p99.99", "p9999", "max"])]
    pub(super) metric: String,
    /// The comparison as JSON (FILE, or stdout with `-`); tables otherwise
    #[command(flatten)]
    pub(super) json: crate::cmd::common::JsonOut,
}
