//! The flags of `rtscope runs` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(super) db: DbArgs,
    /// Only runs carrying this tag (repeatable; all must match)
    #[arg(long, value_name = "K=V", value_parser = crate::cmd::common::parse_tag)]
    pub(super) tag: Vec<(String, String)>,
    /// Only runs of this campaign (same as --tag campaign=NAME)
    #[arg(long)]
    pub(super) campaign: Option<String>,
    /// Only runs taken on this host
    #[arg(long)]
    pub(super) host: Option<String>,
    /// Kernel release substring, or the value of a `kernel` tag
    #[arg(long)]
    pub(super) kernel: Option<String>,
    /// Scenario (the load, e.g. idle, cpu-cache, io)
    #[arg(long)]
    pub(super) scenario: Option<String>,
    /// Scheduling policy (fifo, rr, other, deadline)
    #[arg(long)]
    pub(super) policy: Option<String>,
    /// Runs started at or after this date/time (RFC 3339 prefix, e.g. 2026-11-01)
    #[arg(long)]
    pub(super) since: Option<String>,
    /// Runs started at or before this date/time (a bare date includes the whole day)
    #[arg(long)]
    pub(super) until: Option<String>,
    /// Only the N most recent matches
    #[arg(long, value_name = "N")]
    pub(super) limit: Option<u64>,
    /// The matching runs as a JSON array (FILE, or stdout with `-`) instead of a table
    #[command(flatten)]
    pub(super) json: crate::cmd::common::JsonOut,
}
