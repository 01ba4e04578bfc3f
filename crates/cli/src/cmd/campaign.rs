//! `rtscope campaign FILE.toml`: run a matrix of measurements, resumable
//! (`rtscope_session::campaign`; format: `rtscope_store::campaign`, docs/reports.md).

use super::db::DbArgs;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Campaign file (TOML)
    file: PathBuf,
    /// Print the cells and what would run, run nothing
    #[arg(long)]
    dry_run: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    Ok(rtscope_session::campaign::run(
        &a.file,
        a.db.db.as_deref(),
        a.dry_run,
    )?)
}
