//! `rtscope campaign FILE.toml`: run a matrix of measurements, resumable
//! (`rtscope_verbs::campaign`; format: `rtscope_store::campaign`, docs/reports.md).

use super::db::DbArgs;
use std::path::PathBuf;

mod flags;
pub use flags::*;

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
