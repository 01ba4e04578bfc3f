//! `rtscope compare RUN…`: side-by-side statistics and a verdict per pair against the baseline
//! (the first run, or `--baseline`; `rtscope_verbs::stored::compare`). With `--fail-above-pct PCT`,
//! exits 3 when a candidate regressed on `--metric` by more than PCT and the difference is
//! significant at 99 %: a CI gate.

use super::db::DbArgs;
use crate::exit::{ExitCode, REGRESSION};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Run ids (or unique prefixes); the first is the baseline unless --baseline is given
    #[arg(required = true, num_args = 1..)]
    runs: Vec<String>,
    /// Baseline run (default: the first RUN)
    #[arg(long)]
    baseline: Option<String>,
    /// Exit with code 3 when a run regressed on --metric by more than PCT percent (0..=10000)
    #[arg(long, value_name = "PCT")]
    fail_above_pct: Option<f64>,
    /// Metric --fail-above-pct applies to: avg, median, p99, p99.99, max
    #[arg(long, default_value = "p99", value_parser = ["avg", "mean", "median", "p50", "p99", "p99.99", "p9999", "max"])]
    metric: String,
    /// The comparison as JSON (FILE, or stdout with `-`); tables otherwise
    #[command(flatten)]
    json: super::common::JsonOut,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let q = rtscope_verbs::stored::CompareQuery {
        runs: &a.runs,
        baseline: a.baseline.as_deref(),
        threshold: a.fail_above_pct,
        metric: &a.metric,
    };
    match rtscope_verbs::stored::compare(a.db.db.as_deref(), &q, &a.json.dest())? {
        Some(regression) => Err(ExitCode(REGRESSION, regression).into()),
        None => Ok(()),
    }
}
