//! `rtscope report RUN…|--campaign NAME -o report.html [--figures DIR]`: one self-contained HTML
//! report (inline SVG, no network, prints well; `rtscope_verbs::stored::report`); optionally
//! every figure as SVG and PNG.

use super::db::DbArgs;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Run ids (or unique prefixes); the first is the comparison baseline [default: the latest
    /// stored run]
    runs: Vec<String>,
    /// Every run of this campaign (in the order they were taken)
    #[arg(long, value_name = "NAME")]
    campaign: Option<String>,
    /// Output HTML file
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    output: PathBuf,
    /// Also write each figure as SVG and PNG into DIR
    #[arg(long, value_name = "DIR")]
    figures: Option<PathBuf>,
    /// Report title
    #[arg(long)]
    title: Option<String>,
}

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
