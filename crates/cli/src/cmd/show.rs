//! `rtscope show RUN`: one stored run, in full (text summary or JSON).

use super::db::DbArgs;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    Ok(rtscope_verbs::stored::show(
        a.db.db.as_deref(),
        &a.run,
        &a.json.dest(),
    )?)
}
