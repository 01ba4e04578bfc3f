//! The schema and its migrations. The same DDL text runs on SQLite and PostgreSQL (see
//! `backend.rs` for the type names). Documented in `docs/schema/store.md`.
//!
//! A database records its version in `rtscope_meta(schema_version)`. Opening a database at an
//! older version applies every later migration, in order, inside one transaction; a database
//! from a newer rtscope is refused untouched. Each migration is tested from every earlier
//! version (`tests/store_suite.rs`).

use crate::backend::{Conn, Ty, Val};
use crate::StoreError;

/// Marker stored in `rtscope_meta(application)`; anything else is a foreign database.
pub const APPLICATION: &str = "rtscope";
/// SQLite `PRAGMA application_id` ("rtsc").
pub const SQLITE_APPLICATION_ID: i32 = 0x7274_7363;
pub const CURRENT_VERSION: i64 = 5;

/// Data back-fill of a migration, run inside its transaction.
pub(crate) type Backfill = fn(&mut Conn) -> Result<(), StoreError>;

pub(crate) struct Migration {
    pub to_version: i64,
    pub sql: &'static str,
    /// Data back-fill computed from the stored RunRecord JSON, run after `sql`.
    pub backfill: Option<Backfill>,
}

pub(crate) const MIGRATIONS: &[Migration] = &[
    // v1: one row per run, the RunRecord kept whole as JSON (histograms sparse and exact), plus
    // the columns `runs` filters on.
    Migration {
        to_version: 1,
        sql: "CREATE TABLE rtscope_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
              CREATE TABLE runs (
                  id TEXT PRIMARY KEY,
                  started_at TEXT NOT NULL,
                  hostname TEXT NOT NULL,
                  kernel_release TEXT NOT NULL,
                  verb TEXT NOT NULL,
                  record_json TEXT NOT NULL);
              CREATE INDEX runs_started_at ON runs (started_at);",
        backfill: None,
    },
    // v2: tags become rows so `runs --tag k=v` and campaign resumption are indexed lookups.
    Migration {
        to_version: 2,
        sql: "CREATE TABLE run_tags (
                  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                  key TEXT NOT NULL,
                  value TEXT NOT NULL,
                  PRIMARY KEY (run_id, key));
              CREATE INDEX run_tags_key_value ON run_tags (key, value);",
        backfill: Some(backfill_tags),
    },
    // v3: summary columns, so listing 10 000 runs does not parse 10 000 JSON documents.
    Migration {
        to_version: 3,
        sql: "ALTER TABLE runs ADD COLUMN policy TEXT NOT NULL DEFAULT '';
              ALTER TABLE runs ADD COLUMN scenario TEXT NOT NULL DEFAULT '';
              ALTER TABLE runs ADD COLUMN samples BIGINT NOT NULL DEFAULT 0;
              ALTER TABLE runs ADD COLUMN min_ns BIGINT;
              ALTER TABLE runs ADD COLUMN max_ns BIGINT;
              ALTER TABLE runs ADD COLUMN avg_ns DOUBLE PRECISION;
              CREATE INDEX runs_hostname ON runs (hostname);",
        backfill: Some(backfill_summary),
    },
    // v4: how the run ended, so `runs` marks interim records (a run killed after its last
    // checkpoint) without parsing every record.
    Migration {
        to_version: 4,
        sql: "ALTER TABLE runs ADD COLUMN state TEXT NOT NULL DEFAULT '';",
        backfill: Some(backfill_state),
    },
    // v5: campaigns as work queues, so several machines drain one matrix (crate::queue).
    Migration {
        to_version: 5,
        sql: "CREATE TABLE campaigns (
                  name TEXT PRIMARY KEY,
                  file_sha256 TEXT NOT NULL,
                  created_at TEXT NOT NULL);
              CREATE TABLE campaign_cells (
                  campaign TEXT NOT NULL REFERENCES campaigns (name) ON DELETE CASCADE,
                  cell TEXT NOT NULL,
                  state TEXT NOT NULL,
                  worker TEXT,
                  lease_until_ms BIGINT,
                  attempts BIGINT NOT NULL DEFAULT 0,
                  PRIMARY KEY (campaign, cell));
              CREATE INDEX campaign_cells_state ON campaign_cells (campaign, state);",
        backfill: None,
    },
];

fn all_records(c: &mut Conn) -> Result<Vec<(String, rtscope_model::RunRecord)>, StoreError> {
    let rows = c.query(
        "SELECT id, record_json FROM runs",
        &[],
        &[Ty::Text, Ty::Text],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let id = r[0].as_text().unwrap_or_default().to_string();
        let rec = crate::decode_record(&id, r[1].as_text().unwrap_or_default())?;
        out.push((id, rec));
    }
    Ok(out)
}

fn backfill_tags(c: &mut Conn) -> Result<(), StoreError> {
    for (id, rec) in all_records(c)? {
        crate::insert_tags(c, &id, &rec)?;
    }
    Ok(())
}

fn backfill_summary(c: &mut Conn) -> Result<(), StoreError> {
    for (id, rec) in all_records(c)? {
        set_summary(c, &id, &rec)?;
    }
    Ok(())
}

/// The summary columns of run `id` from its record (the v3 columns `runs` and `show` list by).
pub(crate) fn set_summary(
    c: &mut Conn,
    id: &str,
    rec: &rtscope_model::RunRecord,
) -> Result<(), StoreError> {
    let s = crate::Summary::of(rec);
    c.exec(
        "UPDATE runs SET policy = ?1, scenario = ?2, samples = ?3, min_ns = ?4, max_ns = ?5,
         avg_ns = ?6 WHERE id = ?7",
        &s.columns()
            .into_iter()
            .chain([Val::text(id)])
            .collect::<Vec<_>>(),
    )?;
    Ok(())
}

fn backfill_state(c: &mut Conn) -> Result<(), StoreError> {
    for (id, rec) in all_records(c)? {
        c.exec(
            "UPDATE runs SET state = ?1 WHERE id = ?2",
            &[Val::text(crate::Summary::of(&rec).state), Val::text(id)],
        )?;
    }
    Ok(())
}

/// The tables an rtscope database holds (each must be a plain table when read).
const OWN_TABLES: &[&str] = &[
    "rtscope_meta",
    "runs",
    "run_tags",
    "campaigns",
    "campaign_cells",
];

/// Read the version of an rtscope database (0 = empty database, nothing created yet).
/// A database holding other tables but no rtscope marker is foreign.
pub(crate) fn read_version(c: &mut Conn, location: &str) -> Result<i64, StoreError> {
    let tables: Vec<String> = if c.is_pg() {
        c.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
            &[],
            &[Ty::Text],
        )?
    } else {
        c.query(
            "SELECT name FROM sqlite_master WHERE type = 'table'",
            &[],
            &[Ty::Text],
        )?
    }
    .into_iter()
    .filter_map(|r| r[0].as_text().map(str::to_string))
    .collect();
    if let Conn::Sqlite(s) = c {
        // Reading a view runs the file's own query (which may never end).
        if let Err(detail) =
            crate::guard::plain_tables(s, OWN_TABLES).map_err(StoreError::from_sqlite)?
        {
            return Err(StoreError::Foreign {
                location: location.to_string(),
                detail,
            });
        }
    }
    if !tables.iter().any(|t| t == "rtscope_meta") {
        // PostgreSQL databases are shared: only our own table names make it foreign there.
        let foreign = if c.is_pg() {
            tables.iter().any(|t| t == "runs" || t == "run_tags")
        } else {
            !tables.is_empty()
        };
        if foreign {
            return Err(StoreError::Foreign {
                location: location.to_string(),
                detail: format!(
                    "it holds tables ({}) but no rtscope_meta table",
                    tables.join(", ")
                ),
            });
        }
        return Ok(0);
    }
    let rows = c.query(
        "SELECT key, value FROM rtscope_meta",
        &[],
        &[Ty::Text, Ty::Text],
    )?;
    let get = |k: &str| {
        rows.iter()
            .find(|r| r[0].as_text() == Some(k))
            .and_then(|r| r[1].as_text().map(str::to_string))
    };
    if get("application").as_deref() != Some(APPLICATION) {
        return Err(StoreError::Foreign {
            location: location.to_string(),
            detail: "rtscope_meta has no application=rtscope marker".into(),
        });
    }
    let v = get("schema_version")
        .and_then(|v| v.parse::<i64>().ok())
        .ok_or_else(|| StoreError::Corrupt {
            location: location.to_string(),
            detail: "rtscope_meta.schema_version missing or not a number".into(),
        })?;
    Ok(v)
}

/// Bring the database to `target` (CURRENT_VERSION in production; tests stop earlier to build
/// old-version databases). One transaction: a failed migration leaves the old version intact.
pub(crate) fn migrate_to(c: &mut Conn, location: &str, target: i64) -> Result<i64, StoreError> {
    c.transaction(|c| {
        if c.is_pg() {
            // Two machines opening a fresh PostgreSQL database at once: one migrates, the other
            // waits here and then sees the new version.
            c.query("SELECT pg_advisory_xact_lock(7274736301)", &[], &[])?;
        }
        let from = read_version(c, location)?;
        if from > CURRENT_VERSION {
            return Err(StoreError::TooNew {
                location: location.to_string(),
                found: from,
                supported: CURRENT_VERSION,
            });
        }
        for m in MIGRATIONS
            .iter()
            .filter(|m| m.to_version > from && m.to_version <= target)
        {
            c.batch(m.sql)?;
            if m.to_version == 1 {
                c.exec(
                    "INSERT INTO rtscope_meta (key, value) VALUES ('application', ?1)",
                    &[Val::text(APPLICATION)],
                )?;
                c.exec(
                    "INSERT INTO rtscope_meta (key, value) VALUES ('schema_version', '1')",
                    &[],
                )?;
            }
            if let Some(b) = m.backfill {
                b(c)?;
            }
            c.exec(
                "UPDATE rtscope_meta SET value = ?1 WHERE key = 'schema_version'",
                &[Val::text(m.to_version.to_string())],
            )?;
        }
        let now = read_version(c, location)?;
        if !c.is_pg() && now > 0 {
            c.batch(&format!(
                "PRAGMA application_id = {SQLITE_APPLICATION_ID}; PRAGMA user_version = {now};"
            ))?;
        }
        Ok(now)
    })
}
