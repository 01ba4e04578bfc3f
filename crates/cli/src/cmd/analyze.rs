//! `rtscope analyze FILE.rtt`: re-run per-sample attribution on a recorded trace, offline
//! (`rtscope_verbs::analyze`), and print the run-level view and the worst samples' timelines
//! (text, or JSON with `--json`).

use std::path::PathBuf;
use std::time::Duration;

mod flags;
pub use flags::*;

pub fn run(mut a: Args) -> anyhow::Result<()> {
    if let Some(p) = a.json_out.take() {
        a.json.path = Some(p);
    }
    let f = rtscope_verbs::analyze::AnalyzeFlags {
        file: a.file,
        top: a.worst,
        gap_threshold: a.gap_threshold,
        busy_gap_threshold: a.busy_gap_threshold,
        tail_threshold: a.tail_threshold,
        field_names: crate::fields_offline::analyze,
    };
    Ok(rtscope_verbs::analyze::file(&f, &a.json.dest())?)
}

/// `--gap-threshold` and `--busy-gap-threshold`: the analysis's own range.
fn gap_threshold() -> impl clap::builder::TypedValueParser<Value = Duration> {
    super::common::duration_within(rtscope_verbs::analyze::GAP_THRESHOLD_RANGE)
}
