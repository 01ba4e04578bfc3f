//! `rtscope runs`: list stored runs, filtered, as a table or JSON (`rtscope_verbs::stored`).

use super::db::DbArgs;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Only runs carrying this tag (repeatable; all must match)
    #[arg(long, value_name = "K=V", value_parser = super::common::parse_tag)]
    tag: Vec<(String, String)>,
    /// Only runs of this campaign (same as --tag campaign=NAME)
    #[arg(long)]
    campaign: Option<String>,
    /// Only runs taken on this host
    #[arg(long)]
    host: Option<String>,
    /// Kernel release substring, or the value of a `kernel` tag
    #[arg(long)]
    kernel: Option<String>,
    /// Scenario (the load, e.g. idle, cpu-cache, io)
    #[arg(long)]
    scenario: Option<String>,
    /// Scheduling policy (fifo, rr, other, deadline)
    #[arg(long)]
    policy: Option<String>,
    /// Runs started at or after this date/time (RFC 3339 prefix, e.g. 2026-11-01)
    #[arg(long)]
    since: Option<String>,
    /// Runs started at or before this date/time (a bare date includes the whole day)
    #[arg(long)]
    until: Option<String>,
    /// Only the N most recent matches
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
    /// The matching runs as a JSON array (FILE, or stdout with `-`) instead of a table
    #[command(flatten)]
    json: super::common::JsonOut,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let q = rtscope_verbs::stored::RunsQuery {
        tags: a.tag,
        campaign: a.campaign,
        host: a.host,
        kernel: a.kernel,
        scenario: a.scenario,
        policy: a.policy,
        since: a.since,
        until: a.until,
        limit: a.limit,
    };
    Ok(rtscope_verbs::stored::runs(
        a.db.db.as_deref(),
        q,
        &a.json.dest(),
    )?)
}
