//! The flags of `rtscope report` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(super) db: DbArgs,
    /// Run ids (or unique prefixes); the first is the comparison baseline [default: the latest
    /// stored run]
    pub(super) runs: Vec<String>,
    /// Every run of this campaign (in the order they were taken)
    #[arg(long, value_name = "NAME")]
    pub(super) campaign: Option<String>,
    /// Output HTML file
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub(super) output: PathBuf,
    /// Also write each figure as SVG and PNG into DIR
    #[arg(long, value_name = "DIR")]
    pub(super) figures: Option<PathBuf>,
    /// Report title
    #[arg(long)]
    pub(super) title: Option<String>,
}
