//! `rtscope campaign FILE.toml`: run a matrix of measurements, resumable
//! (`rtscope_verbs::campaign`; format: `rtscope_store::campaign`, docs/reports.md).

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
    /// With a PostgreSQL --db, the campaign is a queue that any number of workers (this
    /// command on several machines) drain: how long a claimed cell stays this worker's without
    /// a renewal (5s..=1h; a worker that dies loses its cell after this) [default: 60s]
    #[arg(long, value_name = "TIME")]
    lease: Option<String>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    // The cells' measure arguments are this binary's grammar: checked before any cell starts.
    let text = rtscope_session::input::read("campaign file", &a.file)?;
    let c = rtscope_store::campaign::Campaign::parse(&a.file.display().to_string(), &text)
        .map_err(|e| crate::usage!("{e}"))?;
    crate::resolver::check_campaign(&c)?;
    Ok(rtscope_verbs::campaign::run(
        &a.file,
        a.db.db.as_deref(),
        a.dry_run,
        a.lease.as_deref(),
    )?)
}
