//! `rtscope analyze FILE.rtt`: re-run per-sample attribution on a recorded trace, offline
//! (`rtscope_verbs::analyze`), and print the run-level view and the worst samples' timelines
//! (text, or JSON with `--json`).

use std::path::PathBuf;

mod flags;
pub use flags::*;

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
