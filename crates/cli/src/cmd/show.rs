//! `rtscope show RUN`: one stored run, in full (text summary or JSON).

use super::db::DbArgs;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Run id (or a unique prefix of one)
    run: String,
    /// The whole RunRecord as JSON (FILE, or stdout with `-`)
    #[command(flatten)]
    json: super::common::JsonOut,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    Ok(rtscope_verbs::stored::show(
        a.db.db.as_deref(),
        &a.run,
        &a.json.dest(),
    )?)
}
