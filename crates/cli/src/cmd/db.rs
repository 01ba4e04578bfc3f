//! The `--db` flag of the result verbs (runs, show, export, compare, report, campaign) and of every verb that stores; what they
//! do with the store is `rtscope_verbs::stored`.

/// `--db PATH|postgres://…`; default `$XDG_DATA_HOME/rtscope/results.db`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct DbArgs {
    /// Results database: a SQLite file path or postgres://user@host/db
    /// [default: $XDG_DATA_HOME/rtscope/results.db]
    #[arg(long, value_parser = super::common::db_url, value_name = "PATH|URL")]
    pub db: Option<String>,
}
