//! The `--db` argument group as clap declares it (help, default);
//! the parent module does the work.

/// `--db PATH|postgres://…`; default `$XDG_DATA_HOME/rtscope/results.db`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct DbArgs {
    /// Results database: a SQLite file path or postgres://user@host/db
    /// [default: $XDG_DATA_HOME/rtscope/results.db]
    #[arg(long, value_parser = crate::cmd::common::db_url, value_name = "PATH|URL")]
    pub db: Option<String>,
}
