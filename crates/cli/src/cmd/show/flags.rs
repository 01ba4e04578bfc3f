//! The flags of `rtscope show` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(super) db: DbArgs,
    /// Run id (or a unique prefix of one)
    pub(super) run: String,
    /// The whole RunRecord as JSON (FILE, or stdout with `-`)
    #[command(flatten)]
    pub(super) json: crate::cmd::common::JsonOut,
}
