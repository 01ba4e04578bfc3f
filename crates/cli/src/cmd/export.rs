//! `rtscope export RUN --format FORMAT`: a stored run for other tools
//! (`rtscope_verbs::stored::export`). The formats, and what each writes, are
//! `rtscope_report::export::exporters()`: `--help` lists them from there.
//!
//! CSV: one row per non-empty histogram bucket, `scope,cpu,latency_ns,count`; `scope` is `all`
//! for the run's merged histogram and `thread` for each measurement thread. Buckets are exact
//! below 2048 ns and ≤ 0.1 % wide above (the stored HDR histogram; see docs/reports.md).

use super::db::DbArgs;
use clap::builder::{PossibleValue, PossibleValuesParser};

/// `--format`'s values: the registry's names, each with its description.
fn formats() -> PossibleValuesParser {
    PossibleValuesParser::new(
        rtscope_report::export::exporters()
            .iter()
            .map(|e| PossibleValue::new(e.name()).help(crate::exit::libraries(e.description()))),
    )
}

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    Ok(rtscope_verbs::stored::export(
        a.db.db.as_deref(),
        &a.run,
        &a.format,
        a.output.as_deref(),
    )?)
}
