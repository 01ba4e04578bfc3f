//! `rtscope compare RUN…`: side-by-side statistics and a verdict per pair against the baseline
//! (the first run, or `--baseline`; `rtscope_verbs::stored::compare`). With `--fail-above-pct PCT`,
//! exits 3 when a candidate regressed on `--metric` by more than PCT and the difference is
//! significant at 99 %: a CI gate.

use super::db::DbArgs;
use crate::exit::{ExitCode, REGRESSION};

mod flags;
pub use flags::*;

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
