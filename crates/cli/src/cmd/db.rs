//! Shared by the result verbs (runs, show, export, compare, report, campaign): the `--db` flag,
//! opening the store, and store errors mapped to exit codes (an unknown run id is bad input).

use crate::usage;
use rtscope_store::{Store, StoreError};

/// `--db PATH|postgres://…`; default `$XDG_DATA_HOME/rtscope/results.db`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct DbArgs {
    /// Results database: a SQLite file path or postgres://user@host/db
    /// [default: $XDG_DATA_HOME/rtscope/results.db]
    #[arg(long, value_parser = crate::cmd::common::db_url, value_name = "PATH|URL")]
    pub db: Option<String>,
}

/// Open for a verb that stores (creating the database if needed).
pub fn open(a: &DbArgs) -> anyhow::Result<Store> {
    Store::open(a.db.as_deref()).map_err(map_err)
}

/// Open for a verb that only reads: never creates or changes anything.
pub fn open_read(a: &DbArgs) -> anyhow::Result<Store> {
    Store::open_read_only(a.db.as_deref()).map_err(map_err)
}

/// Bad ids are bad input (exit 2); everything else is a failure (exit 1).
pub fn map_err(e: StoreError) -> anyhow::Error {
    match e {
        StoreError::UnknownRun(_)
        | StoreError::Ambiguous { .. }
        | StoreError::BadUrl(_)
        | StoreError::Missing(_)
        | StoreError::Empty(_) => usage!("{e}"),
        e => anyhow::Error::new(e),
    }
}

/// Load runs by id or unique prefix, in the order given.
pub fn load(store: &mut Store, ids: &[String]) -> anyhow::Result<Vec<rtscope_model::RunRecord>> {
    ids.iter()
        .map(|id| store.get_run(id).map_err(map_err))
        .collect()
}

/// `key=value`, for `--tag`.
pub fn parse_tag(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("'{s}' is not key=value")),
    }
}

/// ns → µs with one decimal, "-" when absent.
pub fn us(ns: Option<f64>) -> String {
    match ns {
        Some(v) => format!("{:.1}", v / 1000.0),
        None => "-".into(),
    }
}

/// A short label for a run: policy/scenario plus a tag that tells runs apart.
pub fn label(r: &rtscope_model::RunRecord) -> String {
    let s = rtscope_store::Summary::of(r);
    format!("{}/{}", s.policy, s.scenario)
}

/// Print to stdout; a closed pipe (`rtscope runs | head`) ends output quietly instead of panicking.
pub fn out(s: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    match o.write_all(s.as_bytes()).and_then(|_| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}
