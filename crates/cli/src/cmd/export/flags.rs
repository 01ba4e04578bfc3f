//! The flags of `rtscope export` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(super) db: DbArgs,
    /// Run id (or a unique prefix of one)
    pub(super) run: String,
    /// Output format
    #[arg(long, value_parser = formats(), default_value = "json")]
    pub(super) format: String,
    /// Write to FILE instead of stdout
    #[arg(short, long, value_name = "FILE")]
    pub(super) output: Option<std::path::PathBuf>,
}
