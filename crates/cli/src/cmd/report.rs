//! `rtscope report RUN…|--campaign NAME -o report.html [--figures DIR]`: one self-contained HTML
//! report (inline SVG, no network, prints well; `rtscope_verbs::stored::report`); optionally
//! every figure as SVG and PNG.

use super::db::DbArgs;
use std::path::PathBuf;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    let q = rtscope_verbs::stored::ReportQuery {
        runs: &a.runs,
        campaign: a.campaign.as_deref(),
        output: &a.output,
        figures: a.figures.as_deref(),
        title: a.title.as_deref(),
    };
    Ok(rtscope_verbs::stored::report(a.db.db.as_deref(), &q)?)
}
