//! Persistence of [`RunRecord`]s: a SQLite file by default, PostgreSQL for labs that collect from
//! many machines. Both backends run the same SQL and the same schema (`schema.rs`,
//! `docs/schema/store.md`).
//!
//! Every run is written in one transaction: a crash or Ctrl-C leaves either the whole run or
//! nothing. SQLite runs in WAL mode, so `rtscope runs` can read while a campaign writes.
//! A database this crate did not create is never written to: a foreign or corrupt file is
//! refused with an error naming it.

mod backend;
pub mod campaign;
pub mod fallback;
pub mod fixture;
pub mod guard;
pub mod queue;
pub mod rtsl;
pub mod schema;

use backend::{Conn, Ty, Val};
use rtscope_model::RunRecord;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use fallback::{replace_or_fallback, save_or_fallback, save_or_fallback_in, Saved};

rtscope_model::request_fields! {
    /// The inputs a store error names; the caller renders each token
    /// ([`rtscope_model::field::render`]).
    pub enum Field in "store" {
        /// The results database (a path or a PostgreSQL URL).
        Db = "db" => DB,
        /// rtsl's SQLite databases read by the bound.
        RtslDb = "rtsl_db" => RTSL_DB,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{location} is not an rtscope results database ({detail}); it was left untouched — pass another {}", DB)]
    Foreign { location: String, detail: String },
    #[error("{location} is corrupt or not a database ({detail}); it was left untouched — pass another {}", DB)]
    Corrupt { location: String, detail: String },
    #[error("{location} has schema version {found}, newer than this rtscope supports ({supported}); upgrade rtscope")]
    TooNew {
        location: String,
        found: i64,
        supported: i64,
    },
    #[error("{db}: {0}", db = DB)]
    BadUrl(String),
    #[error("no results database at {0} (nothing stored there yet; pass another {db})", db = DB)]
    Missing(String),
    /// The file exists but holds no tables yet (empty, or being created by a writer).
    #[error("{0} holds no stored runs yet (an empty database)")]
    Empty(String),
    #[error("results database is locked by another process (gave up after waiting {0} s)")]
    Locked(u64),
    #[error("cannot reach PostgreSQL{}: {detail}", at(.location))]
    Unreachable { location: String, detail: String },
    #[error("no run with id '{0}' in the results database (list them with `rtscope runs`)")]
    UnknownRun(String),
    #[error("run id prefix '{prefix}' is ambiguous: matches {}", matches.join(", "))]
    Ambiguous {
        prefix: String,
        matches: Vec<String>,
    },
    #[error("a run with id '{0}' is already stored")]
    Duplicate(String),
    #[error("stored run '{id}' cannot be decoded: {detail}")]
    BadRecord { id: String, detail: String },
    #[error("cannot create {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("SQLite: {0}")]
    Sqlite(rusqlite::Error),
    #[error("PostgreSQL: {0}")]
    Pg(String),
    #[error("{0}")]
    Other(String),
}

/// " at LOCATION", or nothing when the location is not known where the error arose.
fn at(location: &str) -> String {
    if location.is_empty() {
        String::new()
    } else {
        format!(" at {location}")
    }
}

impl StoreError {
    /// The database may answer if asked again later (unreachable, locked), as opposed to an
    /// answer that will not change (a refused statement, a bad record).
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Unreachable { .. } | StoreError::Locked(_))
    }

    pub(crate) fn from_sqlite(e: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode;
        if let Some(m) = guard::explain(&e) {
            return StoreError::Other(m);
        }
        if let rusqlite::Error::SqliteFailure(f, _) = &e {
            match f.code {
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                    return StoreError::Locked(backend::lock_wait_ms().div_ceil(1000));
                }
                ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => {
                    return StoreError::Corrupt {
                        location: String::new(),
                        detail: e.to_string(),
                    }
                }
                ErrorCode::ConstraintViolation => {
                    return StoreError::Duplicate(String::new());
                }
                _ => {}
            }
        }
        StoreError::Sqlite(e)
    }
    pub(crate) fn from_pg(e: postgres::Error) -> StoreError {
        use std::error::Error;
        // A connection lost mid-session is the server being unreachable, as at connect time.
        if e.is_closed()
            || e.source()
                .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
        {
            return StoreError::Unreachable {
                location: String::new(),
                detail: e.to_string(),
            };
        }
        if let Some(db) = e.as_db_error() {
            if db.code() == &postgres::error::SqlState::UNIQUE_VIOLATION {
                return StoreError::Duplicate(String::new());
            }
            return StoreError::Pg(format!("{}: {}", db.code().code(), db.message()));
        }
        StoreError::Pg(e.to_string())
    }
    fn with_location(self, location: &str) -> StoreError {
        match self {
            StoreError::Corrupt {
                location: l,
                detail,
            } if l.is_empty() => StoreError::Corrupt {
                location: location.to_string(),
                detail,
            },
            e => e,
        }
    }
}

/// Summary columns of a run, derived from its record (what `runs` lists and filters on).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub policy: String,
    /// Loads as run (`idle` when none), joined with `+`; a `scenario` tag overrides.
    pub scenario: String,
    pub samples: i64,
    pub min_ns: Option<i64>,
    pub max_ns: Option<i64>,
    pub avg_ns: Option<f64>,
    /// How the run ended: `completed`, `interrupted`, `break-above`, `error`, or
    /// `checkpoint <RFC 3339>` for an interim record (see [`run_state`]).
    pub state: String,
}

/// The stored `state` of a record.
pub fn stored_state(rec: &RunRecord) -> String {
    use rtscope_model::EndReason::*;
    match rec.end_reason {
        Completed => "completed".into(),
        Interrupted => "interrupted".into(),
        BreakAbove => "break-above".into(),
        Error => "error".into(),
        Checkpoint => format!(
            "checkpoint {}",
            rec.checkpoint
                .as_ref()
                .map(|c| c.written_at.as_str())
                .unwrap_or("")
        )
        .trim_end()
        .to_string(),
    }
}

/// What `runs` and `show` say of a stored state. An interim record whose writer is a live
/// rtscope process on this host is a run still going; otherwise the run died after its last
/// checkpoint (SIGKILL, the OOM killer, a power cut).
pub fn run_state(state: &str, rec_host_pid: Option<(&str, u32)>) -> String {
    let Some(at) = state.strip_prefix("checkpoint") else {
        return state.to_string();
    };
    let at = at.trim();
    let alive = rec_host_pid.is_some_and(|(host, pid)| {
        let here = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default();
        host == here
            && std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "rtscope")
    });
    if alive {
        format!("running (last checkpoint {at})")
    } else {
        format!("interrupted (last checkpoint {at})")
    }
}

impl Summary {
    pub fn of(rec: &RunRecord) -> Summary {
        let loads = rec.load_names();
        let scenario = if let Some(s) = rec.tags.get("scenario") {
            s.clone()
        } else if loads.is_empty() {
            "idle".to_string()
        } else {
            loads.join("+")
        };
        let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let stats = rec.stats();
        Summary {
            policy: rec.policy_name(),
            scenario,
            samples: clamp(stats.samples),
            min_ns: stats.min_ns.map(clamp),
            max_ns: stats.max_ns.map(clamp),
            avg_ns: stats.avg_ns,
            state: stored_state(rec),
        }
    }

    /// The summary columns `policy, scenario, samples, min_ns, max_ns, avg_ns` in that order,
    /// as both a new row and the migration's back-fill of an old one write them.
    pub(crate) fn columns(&self) -> [Val; 6] {
        [
            Val::text(&self.policy),
            Val::text(&self.scenario),
            Val::int(self.samples),
            Val::Int(self.min_ns),
            Val::Int(self.max_ns),
            Val::Real(self.avg_ns),
        ]
    }
}

/// One row of `rtscope runs`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunSummary {
    pub id: String,
    pub started_at: String,
    pub hostname: String,
    pub kernel_release: String,
    pub verb: String,
    pub policy: String,
    pub scenario: String,
    pub samples: i64,
    pub min_ns: Option<i64>,
    pub max_ns: Option<i64>,
    pub avg_ns: Option<f64>,
    /// See [`Summary::state`].
    pub state: String,
    pub tags: BTreeMap<String, String>,
}

/// Filters of `rtscope runs`; every set field must match.
#[derive(Clone, Debug, Default)]
pub struct RunFilter {
    /// `key=value` pairs; all must be present.
    pub tags: Vec<(String, String)>,
    /// The runs of this campaign (its `campaign` tag), as one more tag to match.
    pub campaign: Option<String>,
    pub host: Option<String>,
    /// Substring of the kernel release, or the exact value of a `kernel` tag.
    pub kernel: Option<String>,
    pub scenario: Option<String>,
    pub policy: Option<String>,
    /// RFC 3339 prefix (`2026-11-01` or a full timestamp): runs started at or after.
    pub since: Option<String>,
    /// RFC 3339 prefix: runs started at or before (a bare date includes that whole day).
    pub until: Option<String>,
    pub limit: Option<u64>,
}

pub(crate) fn decode_record(id: &str, json: &str) -> Result<RunRecord, StoreError> {
    decode_record_within(id, json, &mut rtscope_model::limits::Budget::for_text(0))
}

/// Decode a stored record into a budget shared with the records read with it (widened by this
/// record's size): what they build together is charged together.
pub(crate) fn decode_record_within(
    id: &str,
    json: &str,
    budget: &mut rtscope_model::limits::Budget,
) -> Result<RunRecord, StoreError> {
    let bad = |detail: String| StoreError::BadRecord {
        id: id.to_string(),
        detail,
    };
    budget.widen_for_text(json.len() as u64);
    rtscope_model::limits::check_run_record_json(json, budget).map_err(bad)?;
    rtscope_model::decode_run_record(json).map_err(|e| StoreError::BadRecord {
        id: id.to_string(),
        detail: e.to_string(),
    })
}

pub(crate) fn insert_tags(c: &mut Conn, id: &str, rec: &RunRecord) -> Result<(), StoreError> {
    for (k, v) in &rec.tags {
        c.exec(
            "INSERT INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)",
            &[Val::text(id), Val::text(k), Val::text(v)],
        )?;
    }
    Ok(())
}

/// Default SQLite location: `$XDG_DATA_HOME/rtscope/results.db`, else
/// `~/.local/share/rtscope/results.db`.
pub fn default_db_path() -> PathBuf {
    data_dir().join("results.db")
}

pub(crate) fn data_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("rtscope");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".local/share/rtscope")
}

/// A `--db` value this crate can open: a SQLite path (or `sqlite://PATH`) or a PostgreSQL URL.
/// Empty values and other schemes (`mysql://…`, which would otherwise become a SQLite file
/// named `mysql:/…`) are refused before anything runs.
pub fn check_db_url(s: &str) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err("empty value; give a SQLite file path or postgres://user@host/db".into());
    }
    if let Some((scheme, _)) = s.split_once("://") {
        if !matches!(scheme, "postgres" | "postgresql" | "sqlite") {
            return Err(format!(
                "unknown scheme '{scheme}://' in '{}'; accepted: a SQLite file path, sqlite://PATH, postgres://user@host/db",
                redact_url(s)
            ));
        }
        if scheme == "sqlite" && s["sqlite://".len()..].is_empty() {
            return Err("sqlite:// needs a path".into());
        }
    }
    if s.contains('\0') {
        return Err("a NUL byte in the path".into());
    }
    Ok(())
}

pub fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// A URL for messages: the password, if any, replaced by `***`.
pub fn redact_url(url: &str) -> String {
    rtscope_model::secrets::redact(url)
}

/// A SQLite file shorter than its header says (cut by a full disk, a bad copy) is refused before
/// SQLite opens it: opening would switch its journal mode and write to it, and a later query
/// would find the damage. The header (sqlite.org/fileformat.html §1.3): magic at 0, page size
/// at 16 (u16 BE, 1 = 65536), page count at 28 (u32 BE, valid when the change counter at 24
/// equals the version-valid-for number at 92). With a WAL file present the header may lag: not
/// checked then.
fn check_sqlite_size(path: &Path, location: &str) -> Result<(), StoreError> {
    use std::io::Read;
    let Ok(mut f) = std::fs::File::open(path) else {
        return Ok(());
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len == 0 || Path::new(&format!("{location}-wal")).exists() {
        return Ok(());
    }
    let mut h = [0u8; 100];
    if len < 100 || f.read_exact(&mut h).is_err() {
        return Err(StoreError::Corrupt {
            location: location.to_string(),
            detail: format!("{len} bytes, shorter than a SQLite header"),
        });
    }
    if &h[..16] != b"SQLite format 3\0" {
        // Not SQLite at all: SQLite itself says so (and nothing is written).
        return Ok(());
    }
    let page = match u16::from_be_bytes([h[16], h[17]]) {
        1 => 65536u64,
        p => p as u64,
    };
    let change = u32::from_be_bytes([h[24], h[25], h[26], h[27]]);
    let pages = u32::from_be_bytes([h[28], h[29], h[30], h[31]]) as u64;
    let valid_for = u32::from_be_bytes([h[92], h[93], h[94], h[95]]);
    if change == valid_for && pages > 0 && len < page * pages {
        return Err(StoreError::Corrupt {
            location: location.to_string(),
            detail: format!(
                "{len} bytes, but its header says {pages} pages of {page} bytes ({} bytes): the file was cut",
                page * pages
            ),
        });
    }
    Ok(())
}

pub struct Store {
    conn: Conn,
    location: String,
}

impl Store {
    /// Open (creating if needed) the results database. `None` → the default SQLite file;
    /// `postgres://…` → PostgreSQL; `sqlite://PATH` or anything else → a SQLite file path.
    pub fn open(url: Option<&str>) -> Result<Store, StoreError> {
        if let Some(u) = url {
            check_db_url(u).map_err(StoreError::BadUrl)?;
        }
        match url {
            Some(u) if is_postgres_url(u) => Self::open_postgres(u, None),
            Some(p) => Self::open_sqlite(Path::new(p.strip_prefix("sqlite://").unwrap_or(p))),
            None => Self::open_sqlite(&default_db_path()),
        }
    }

    /// Open an existing database for reading only (`runs`, `show`, `export`, `report`,
    /// `compare`): nothing is created (no file, directory, WAL or `-shm`), the file is not
    /// changed (no journal-mode switch, no migration unless the schema is older and the file
    /// may be written), and a read-only mount or a 0444 file reads.
    pub fn open_read_only(url: Option<&str>) -> Result<Store, StoreError> {
        if let Some(u) = url {
            check_db_url(u).map_err(StoreError::BadUrl)?;
        }
        match url {
            Some(u) if is_postgres_url(u) => Self::open_postgres(u, None),
            Some(p) => {
                Self::open_sqlite_read_only(Path::new(p.strip_prefix("sqlite://").unwrap_or(p)))
            }
            None => Self::open_sqlite_read_only(&default_db_path()),
        }
    }

    pub fn open_sqlite_read_only(path: &Path) -> Result<Store, StoreError> {
        use rusqlite::OpenFlags;
        let location = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                StoreError::Missing(location.clone())
            } else {
                StoreError::Io {
                    path: location.clone(),
                    source: e,
                }
            }
        })?;
        if !meta.is_file() {
            return Err(StoreError::Other(format!(
                "{location} is not a file; pass a results database with {DB}"
            )));
        }
        check_sqlite_size(path, &location)?;
        // A WAL file exists while a writer has the database open (or after a crash): then the
        // newest runs are in it and SQLite must read it through the shared-memory index, which
        // needs the directory writable. Without a WAL every committed run is in the main file
        // and `immutable=1` reads it with no lock file and no -shm at all.
        let wal = PathBuf::from(format!("{location}-wal"));
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let live_wal =
            wal.exists() && rtscope_files::may_write(dir) && rtscope_files::may_write(path);
        let mut uri = String::from("file:");
        for &b in path.as_os_str().as_encoded_bytes() {
            match b {
                b'%' | b'?' | b'#' => uri.push_str(&format!("%{b:02X}")),
                _ => uri.push(b as char),
            }
        }
        uri.push_str(if live_wal {
            "?mode=ro"
        } else {
            "?mode=ro&immutable=1"
        });
        // Non-ASCII bytes: fall back to the plain path (no URI parameters then, so read-only
        // through the flags alone).
        let c = if path.as_os_str().as_encoded_bytes().is_ascii() {
            rusqlite::Connection::open_with_flags(
                &uri,
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_URI
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        } else {
            rusqlite::Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        }
        .map_err(|e| StoreError::from_sqlite(e).with_location(&location))?;
        backend::install_busy_handler(&c)
            .and_then(|()| guard::bound_reader(&c))
            .map_err(|e| StoreError::from_sqlite(e).with_location(&location))?;
        let mut conn = Conn::Sqlite(c);
        let version =
            schema::read_version(&mut conn, &location).map_err(|e| e.with_location(&location))?;
        if version == 0 {
            // An empty file: nothing stored yet, or a writer creating it right now.
            return Err(StoreError::Empty(location));
        }
        if version > schema::CURRENT_VERSION {
            return Err(StoreError::TooNew {
                location,
                found: version,
                supported: schema::CURRENT_VERSION,
            });
        }
        if version < schema::CURRENT_VERSION {
            // Reading an older schema needs its migration, which is a write.
            drop(conn);
            if !rtscope_files::may_write(path) {
                return Err(StoreError::Other(format!(
                    "{location} has schema version {version}, older than this rtscope's {}; it cannot be migrated here (read-only) — read it with the rtscope that wrote it or copy it somewhere writable",
                    schema::CURRENT_VERSION
                )));
            }
            return Self::open_sqlite(path);
        }
        Ok(Store { conn, location })
    }

    /// How long to wait for another process holding the SQLite write lock (default 30 s).
    pub fn set_lock_wait(d: Duration) {
        backend::set_lock_wait(d);
    }

    pub fn location(&self) -> &str {
        &self.location
    }

    pub fn open_sqlite(path: &Path) -> Result<Store, StoreError> {
        Self::open_sqlite_at(path, schema::CURRENT_VERSION)
    }

    /// Open and migrate only up to `version` — for building old-version databases in tests.
    #[doc(hidden)]
    pub fn open_sqlite_at(path: &Path, version: i64) -> Result<Store, StoreError> {
        let location = path.display().to_string();
        // The database holds command lines and host details: its directory is created 0700 and
        // the file 0600 (SQLite gives its -wal and -shm files the database file's mode).
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            rtscope_files::create_private_dir(dir).map_err(|source| StoreError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
        check_sqlite_size(path, &location)?;
        rtscope_files::precreate(path, rtscope_files::PRIVATE_FILE).map_err(|source| {
            StoreError::Io {
                path: location.clone(),
                source,
            }
        })?;
        let c = rusqlite::Connection::open(path)
            .map_err(|e| StoreError::from_sqlite(e).with_location(&location))?;
        backend::install_busy_handler(&c)
            .map_err(|e| StoreError::from_sqlite(e).with_location(&location))?;
        let mut conn = Conn::Sqlite(c);
        // Read before any write: a foreign or corrupt file must be left exactly as it was.
        schema::read_version(&mut conn, &location).map_err(|e| e.with_location(&location))?;
        conn.batch(
            "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;",
        )
        .map_err(|e| e.with_location(&location))?;
        schema::migrate_to(&mut conn, &location, version)
            .map_err(|e| e.with_location(&location))?;
        Ok(Store { conn, location })
    }

    /// PostgreSQL. `schema` (tests) puts the tables in their own schema, created if missing.
    pub fn open_postgres(url: &str, schema: Option<&str>) -> Result<Store, StoreError> {
        Self::open_postgres_at(url, schema, schema::CURRENT_VERSION)
    }

    #[doc(hidden)]
    pub fn open_postgres_at(
        url: &str,
        schema: Option<&str>,
        version: i64,
    ) -> Result<Store, StoreError> {
        let location = redact_url(url);
        let mut cfg: postgres::Config =
            url.parse()
                .map_err(|e: postgres::Error| StoreError::Unreachable {
                    location: location.clone(),
                    detail: format!("bad URL: {e}"),
                })?;
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(Duration::from_secs(5));
        }
        let client = cfg
            .connect(postgres::NoTls)
            .map_err(|e| StoreError::Unreachable {
                location: location.clone(),
                detail: e.to_string(),
            })?;
        let mut conn = Conn::Pg(Box::new(client));
        if let Some(s) = schema {
            if !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(StoreError::Other(format!("bad schema name '{s}'")));
            }
            conn.batch(&format!(
                "CREATE SCHEMA IF NOT EXISTS {s}; SET search_path TO {s};"
            ))?;
        }
        schema::migrate_to(&mut conn, &location, version)?;
        Ok(Store { conn, location })
    }

    pub fn schema_version(&mut self) -> Result<i64, StoreError> {
        let loc = self.location.clone();
        schema::read_version(&mut self.conn, &loc)
    }

    /// Store a run in one transaction; returns its id.
    pub fn insert_run(&mut self, rec: &RunRecord) -> Result<String, StoreError> {
        self.write_run(rec, false)
    }

    /// Store a run, replacing a stored record with the same id in the same transaction (a run's
    /// checkpoints, then its final record): a reader sees the old record or the new, never none.
    pub fn upsert_run(&mut self, rec: &RunRecord) -> Result<String, StoreError> {
        self.write_run(rec, true)
    }

    fn write_run(&mut self, rec: &RunRecord, replace: bool) -> Result<String, StoreError> {
        if rec.id.is_empty() {
            return Err(StoreError::Other("run record has an empty id".into()));
        }
        // A record built by an older rtscope (or imported) may carry a password in its command
        // line: it is masked before anything is written.
        let masked;
        let rec = {
            let red = rtscope_model::secrets::redact_argv(&rec.cmdline);
            if red == rec.cmdline {
                rec
            } else {
                let mut r = rec.clone();
                r.cmdline = red;
                masked = r;
                &masked
            }
        };
        let json = serde_json::to_string(rec).map_err(|e| StoreError::BadRecord {
            id: rec.id.clone(),
            detail: e.to_string(),
        })?;
        let s = Summary::of(rec);
        let id = rec.id.clone();
        self.conn
            .transaction(|c| {
                if replace {
                    c.exec(
                        "DELETE FROM run_tags WHERE run_id = ?1",
                        &[Val::text(&rec.id)],
                    )?;
                    c.exec("DELETE FROM runs WHERE id = ?1", &[Val::text(&rec.id)])?;
                }
                c.exec(
                    "INSERT INTO runs (id, started_at, hostname, kernel_release, verb, record_json,
                         policy, scenario, samples, min_ns, max_ns, avg_ns, state)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                    &[
                        Val::text(&rec.id),
                        Val::text(&rec.started_at),
                        Val::text(&rec.system.hostname),
                        Val::text(&rec.system.kernel_release),
                        Val::text(&rec.verb),
                        Val::text(json),
                    ]
                    .into_iter()
                    .chain(s.columns())
                    .chain([Val::text(&s.state)])
                    .collect::<Vec<_>>(),
                )?;
                insert_tags(c, &rec.id, rec)
            })
            .map_err(|e| match e {
                StoreError::Duplicate(_) => StoreError::Duplicate(id.clone()),
                e => e.with_location(&self.location),
            })?;
        Ok(id)
    }

    /// Resolve a full id or a unique prefix of one.
    pub fn resolve_id(&mut self, id_or_prefix: &str) -> Result<String, StoreError> {
        // A corrupt page met by this query is named with the database, as at the open.
        self.resolve_id_here(id_or_prefix)
            .map_err(|e| e.with_location(&self.location))
    }

    fn resolve_id_here(&mut self, id_or_prefix: &str) -> Result<String, StoreError> {
        let exact = self.conn.query(
            "SELECT id FROM runs WHERE id = ?1",
            &[Val::text(id_or_prefix)],
            &[Ty::Text],
        )?;
        if !exact.is_empty() {
            return Ok(id_or_prefix.to_string());
        }
        let rows = self.conn.query(
            "SELECT id FROM runs WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT 6",
            &[Val::text(id_or_prefix)],
            &[Ty::Text],
        )?;
        let ids: Vec<String> = rows
            .into_iter()
            .filter_map(|r| r[0].as_text().map(str::to_string))
            .collect();
        match ids.len() {
            0 => Err(StoreError::UnknownRun(id_or_prefix.to_string())),
            1 => Ok(ids.into_iter().next().unwrap_or_default()),
            _ => Err(StoreError::Ambiguous {
                prefix: id_or_prefix.to_string(),
                matches: ids,
            }),
        }
    }

    /// The whole record of a run (id or unique prefix).
    pub fn get_run(&mut self, id_or_prefix: &str) -> Result<RunRecord, StoreError> {
        // A corrupt page met by this query is named with the database, as at the open.
        self.get_run_here(id_or_prefix)
            .map_err(|e| e.with_location(&self.location))
    }

    /// The whole records of several runs (ids or unique prefixes), in the order given, decoded
    /// into one budget: many records read together are bounded together.
    pub fn get_runs(&mut self, ids: &[&str]) -> Result<Vec<RunRecord>, StoreError> {
        let mut budget = rtscope_model::limits::Budget::for_text(0);
        ids.iter()
            .map(|id| {
                self.get_run_within(id, &mut budget)
                    .map_err(|e| e.with_location(&self.location))
            })
            .collect()
    }

    fn get_run_here(&mut self, id_or_prefix: &str) -> Result<RunRecord, StoreError> {
        self.get_run_within(
            id_or_prefix,
            &mut rtscope_model::limits::Budget::for_text(0),
        )
    }

    fn get_run_within(
        &mut self,
        id_or_prefix: &str,
        budget: &mut rtscope_model::limits::Budget,
    ) -> Result<RunRecord, StoreError> {
        let id = self.resolve_id(id_or_prefix)?;
        let rows = self.conn.query(
            "SELECT record_json FROM runs WHERE id = ?1",
            &[Val::text(&id)],
            &[Ty::Text],
        )?;
        let json = rows
            .first()
            .and_then(|r| r[0].as_text())
            .ok_or_else(|| StoreError::UnknownRun(id.clone()))?;
        decode_record_within(&id, json, budget)
    }

    /// Runs matching `f`, oldest first (the last `limit` when a limit is given).
    pub fn list_runs(&mut self, f: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        // A corrupt page met by this query is named with the database, as at the open.
        self.list_runs_here(f)
            .map_err(|e| e.with_location(&self.location))
    }

    fn list_runs_here(&mut self, f: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let mut sql = String::from(
            "SELECT id, started_at, hostname, kernel_release, verb, policy, scenario, samples, state,
                    min_ns, max_ns, avg_ns FROM runs WHERE 1 = 1",
        );
        let mut p: Vec<Val> = Vec::new();
        fn arg(p: &mut Vec<Val>, sql: &mut String, clause: &str, v: Val) {
            p.push(v);
            sql.push_str(&clause.replace("?N", &format!("?{}", p.len())));
        }
        let campaign = f.campaign.as_ref().map(|c| ("campaign", c.as_str()));
        let tags = f.tags.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        for (k, v) in tags.chain(campaign) {
            p.push(Val::text(k));
            p.push(Val::text(v));
            let (a, b) = (p.len() - 1, p.len());
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = runs.id AND t.key = ?{a} AND t.value = ?{b})"
            ));
        }
        if let Some(h) = &f.host {
            arg(&mut p, &mut sql, " AND hostname = ?N", Val::text(h));
        }
        if let Some(k) = &f.kernel {
            p.push(Val::text(k));
            let n = p.len();
            sql.push_str(&format!(
                " AND (instr(kernel_release, ?{n}) > 0 OR EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = runs.id AND t.key = 'kernel' AND t.value = ?{n}))"
            ));
        }
        if let Some(s) = &f.scenario {
            arg(&mut p, &mut sql, " AND scenario = ?N", Val::text(s));
        }
        if let Some(s) = &f.policy {
            arg(&mut p, &mut sql, " AND policy = ?N", Val::text(s));
        }
        if let Some(s) = &f.since {
            arg(&mut p, &mut sql, " AND started_at >= ?N", Val::text(s));
        }
        if let Some(s) = &f.until {
            // '~' sorts after every character of an RFC 3339 timestamp: a bare date includes
            // its whole day.
            arg(
                &mut p,
                &mut sql,
                " AND started_at <= ?N",
                Val::text(format!("{s}~")),
            );
        }
        if self.conn.is_pg() {
            sql = sql.replace("instr(kernel_release, ", "strpos(kernel_release, ");
        }
        sql.push_str(" ORDER BY started_at DESC, id DESC");
        if let Some(l) = f.limit {
            sql.push_str(&format!(" LIMIT {l}"));
        }
        let rows = self.conn.query(
            &sql,
            &p,
            &[
                Ty::Text,
                Ty::Text,
                Ty::Text,
                Ty::Text,
                Ty::Text,
                Ty::Text,
                Ty::Text,
                Ty::Int,
                Ty::Text,
                Ty::Int,
                Ty::Int,
                Ty::Real,
            ],
        )?;
        let mut out: Vec<RunSummary> = rows
            .into_iter()
            .map(|r| RunSummary {
                id: r[0].as_text().unwrap_or_default().to_string(),
                started_at: r[1].as_text().unwrap_or_default().to_string(),
                hostname: r[2].as_text().unwrap_or_default().to_string(),
                kernel_release: r[3].as_text().unwrap_or_default().to_string(),
                verb: r[4].as_text().unwrap_or_default().to_string(),
                policy: r[5].as_text().unwrap_or_default().to_string(),
                scenario: r[6].as_text().unwrap_or_default().to_string(),
                samples: r[7].as_int().unwrap_or(0),
                state: r[8].as_text().unwrap_or_default().to_string(),
                min_ns: r[9].as_int(),
                max_ns: r[10].as_int(),
                avg_ns: r[11].as_real(),
                tags: BTreeMap::new(),
            })
            .collect();
        out.reverse();
        self.fill_tags(&mut out)?;
        Ok(out)
    }

    fn fill_tags(&mut self, runs: &mut [RunSummary]) -> Result<(), StoreError> {
        for chunk in runs.chunks_mut(200) {
            let ph: Vec<String> = (1..=chunk.len()).map(|i| format!("?{i}")).collect();
            let sql = format!(
                "SELECT run_id, key, value FROM run_tags WHERE run_id IN ({})",
                ph.join(", ")
            );
            let p: Vec<Val> = chunk.iter().map(|r| Val::text(&r.id)).collect();
            let rows = self.conn.query(&sql, &p, &[Ty::Text, Ty::Text, Ty::Text])?;
            let mut by_id: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
            for r in rows {
                by_id
                    .entry(r[0].as_text().unwrap_or_default().to_string())
                    .or_default()
                    .insert(
                        r[1].as_text().unwrap_or_default().to_string(),
                        r[2].as_text().unwrap_or_default().to_string(),
                    );
            }
            for r in chunk.iter_mut() {
                r.tags = by_id.remove(&r.id).unwrap_or_default();
            }
        }
        Ok(())
    }

    /// Full records of every run matching `f` (oldest first).
    pub fn load_runs(&mut self, f: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        let ids: Vec<String> = self.list_runs(f)?.into_iter().map(|r| r.id).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        self.get_runs(&ids)
    }

    pub fn count_runs(&mut self) -> Result<i64, StoreError> {
        let r = self
            .conn
            .query("SELECT COUNT(*) FROM runs", &[], &[Ty::Int])?;
        Ok(r.first().and_then(|r| r[0].as_int()).unwrap_or(0))
    }

    /// Insert a v1-shaped row directly (tests of migrations from version 1 only).
    #[doc(hidden)]
    pub fn insert_raw_v1(&mut self, rec: &RunRecord) -> Result<(), StoreError> {
        let json = serde_json::to_string(rec).map_err(|e| StoreError::Other(e.to_string()))?;
        self.conn.exec(
            "INSERT INTO runs (id, started_at, hostname, kernel_release, verb, record_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                Val::text(&rec.id),
                Val::text(&rec.started_at),
                Val::text(&rec.system.hostname),
                Val::text(&rec.system.kernel_release),
                Val::text(&rec.verb),
                Val::text(json),
            ],
        )?;
        Ok(())
    }

    /// Insert a v2-shaped row (runs + tags, no summary columns): migration tests only.
    #[doc(hidden)]
    pub fn insert_raw_v2(&mut self, rec: &RunRecord) -> Result<(), StoreError> {
        self.insert_raw_v1(rec)?;
        insert_tags(&mut self.conn, &rec.id, rec)
    }

    /// Insert a v3-shaped row (summary columns, no state): migration tests only.
    #[doc(hidden)]
    pub fn insert_raw_v3(&mut self, rec: &RunRecord) -> Result<(), StoreError> {
        self.insert_raw_v2(rec)?;
        schema::set_summary(&mut self.conn, &rec.id, rec)
    }

    /// Drop the tables of this store (tests on a shared PostgreSQL schema).
    #[doc(hidden)]
    pub fn drop_all(&mut self) -> Result<(), StoreError> {
        self.conn
            .batch("DROP TABLE IF EXISTS campaign_cells; DROP TABLE IF EXISTS campaigns; DROP TABLE IF EXISTS run_tags; DROP TABLE IF EXISTS runs; DROP TABLE IF EXISTS rtscope_meta;")
    }
}
