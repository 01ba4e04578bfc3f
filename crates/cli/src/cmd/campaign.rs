//! `rtscope campaign FILE.toml`: run a matrix of measurements, resumable
//! (`rtscope_verbs::campaign`; format: `rtscope_store::campaign`, docs/reports.md).

use super::db::DbArgs;
use std::path::PathBuf;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    // The cells' measure arguments are this binary's grammar: checked before any cell starts.
    let opts = rtscope_verbs::campaign::Options {
        db: a.db.db.as_deref(),
        dry_run: a.dry_run,
        lease: a.lease,
        resolve: &crate::resolver::measure_plan,
        check: &|c| crate::resolver::check_campaign(c, a.allow_exec),
    };
    Ok(rtscope_verbs::campaign::run(&a.file, &opts)?)
}
