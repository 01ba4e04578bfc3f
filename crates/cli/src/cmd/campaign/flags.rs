//! The flags of `rtscope campaign` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(super) db: DbArgs,
    /// Campaign file (TOML)
    pub(super) file: PathBuf,
    /// Print the cells and what would run, run nothing
    #[arg(long)]
    pub(super) dry_run: bool,
    /// With a PostgreSQL --db, the campaign is a queue that any number of workers (this
    /// command on several machines) drain: how long a claimed cell stays this worker's without
    /// a renewal (5s..=1h; a worker that dies loses its cell after this) [default: 60s]
    #[arg(long, value_name = "TIME", value_parser = crate::cmd::common::duration(5.0, 3600.0))]
    pub(super) lease: Option<std::time::Duration>,
    /// Let the campaign file's `extra_args` run a command (`--load-exec`): refused without
    #[arg(long)]
    pub(super) allow_exec: bool,
}
