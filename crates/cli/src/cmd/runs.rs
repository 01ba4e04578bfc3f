//! `rtscope runs`: list stored runs, filtered, as a table or JSON (`rtscope_verbs::stored`).

use super::db::DbArgs;

mod flags;
pub use flags::*;

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
