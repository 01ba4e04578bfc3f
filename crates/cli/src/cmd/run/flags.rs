//! The flags of `rtscope run` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(super) flags: MeasureFlags,
    /// Directory for the run's files (a sub-directory per run is created)
    #[arg(
        short = 'o',
        long,
        default_value = "rtscope-results",
        value_name = "DIR"
    )]
    pub(super) out: PathBuf,
}
