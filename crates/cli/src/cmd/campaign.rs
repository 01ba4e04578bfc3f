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
    #[arg(long, value_name = "TIME", value_parser = super::common::duration(5.0, 3600.0))]
    lease: Option<std::time::Duration>,
    /// Let the campaign file's `extra_args` run a command (`--load-exec`): refused without
    #[arg(long)]
    allow_exec: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    // The cells' measure arguments are this binary's grammar: checked before any cell starts.
    let text = rtscope_verbs::input::read("campaign file", &a.file)?;
    let c = rtscope_store::campaign::Campaign::parse(&a.file.display().to_string(), &text)
        .map_err(|e| crate::usage!("{e}"))?;
    crate::resolver::check_campaign(&c, a.allow_exec)?;
    let opts = rtscope_verbs::campaign::Options {
        db: a.db.db.as_deref(),
        dry_run: a.dry_run,
        lease: a.lease,
        resolve: &crate::resolver::measure_plan,
    };
    Ok(rtscope_verbs::campaign::run(&a.file, &opts)?)
}
