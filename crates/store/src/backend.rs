//! The two database backends behind one tiny row interface, so every query, migration and
//! transaction in this crate is written once and runs unchanged on SQLite and PostgreSQL.
//!
//! SQL is written with `?N` placeholders (SQLite's form) and rewritten to `$N` for PostgreSQL.
//! Column types are spelled `TEXT`, `BIGINT`, `DOUBLE PRECISION`: PostgreSQL's names, which SQLite
//! maps to TEXT/INTEGER/REAL affinity, so the DDL text is identical on both.

use crate::StoreError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A parameter or a column value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<String>),
}

impl Val {
    pub fn text(s: impl Into<String>) -> Val {
        Val::Text(Some(s.into()))
    }
    pub fn int(i: i64) -> Val {
        Val::Int(Some(i))
    }
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Val::Text(Some(s)) => Some(s),
            _ => None,
        }
    }
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Val::Int(i) => *i,
            _ => None,
        }
    }
    pub fn as_real(&self) -> Option<f64> {
        match self {
            Val::Real(r) => *r,
            _ => None,
        }
    }
}

/// Expected column type of a query result.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ty {
    Int,
    Real,
    Text,
}

pub(crate) enum Conn {
    Sqlite(rusqlite::Connection),
    Pg(Box<postgres::Client>),
}

/// How long a writer waits for another rtscope holding the SQLite file before failing.
static LOCK_WAIT_MS: AtomicU64 = AtomicU64::new(30_000);
const LOCK_POLL_MS: u64 = 50;

pub(crate) fn lock_wait_ms() -> u64 {
    LOCK_WAIT_MS.load(Ordering::Relaxed)
}

pub(crate) fn set_lock_wait(d: Duration) {
    LOCK_WAIT_MS.store(d.as_millis() as u64, Ordering::Relaxed);
}

/// SQLite calls this while another connection holds the write lock. `n` counts calls for the
/// current statement; we say once that we are waiting, then poll until the wait budget is spent.
fn busy_handler(n: i32) -> bool {
    let waited_ms = n as u64 * LOCK_POLL_MS;
    let budget_ms = LOCK_WAIT_MS.load(Ordering::Relaxed);
    if n == 0 {
        eprintln!(
            "rtscope: results database is locked by another process; waiting up to {} s",
            budget_ms.div_ceil(1000)
        );
    }
    if waited_ms >= budget_ms {
        return false;
    }
    std::thread::sleep(Duration::from_millis(LOCK_POLL_MS));
    true
}

pub(crate) fn install_busy_handler(c: &rusqlite::Connection) -> rusqlite::Result<()> {
    c.busy_handler(Some(busy_handler))
}

fn pg_sql(sql: &str) -> String {
    // `?N` → `$N`. Our SQL never contains a literal '?' inside a string.
    sql.replace('?', "$")
}

impl Conn {
    pub fn is_pg(&self) -> bool {
        matches!(self, Conn::Pg(_))
    }

    pub fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        match self {
            Conn::Sqlite(c) => c.execute_batch(sql).map_err(StoreError::from_sqlite),
            Conn::Pg(c) => c.batch_execute(sql).map_err(StoreError::from_pg),
        }
    }

    pub fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let p: Vec<&dyn rusqlite::ToSql> = params.iter().map(sqlite_param).collect();
                c.execute(sql, p.as_slice())
                    .map(|n| n as u64)
                    .map_err(StoreError::from_sqlite)
            }
            Conn::Pg(c) => {
                let p: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    params.iter().map(pg_param).collect();
                c.execute(pg_sql(sql).as_str(), &p)
                    .map_err(StoreError::from_pg)
            }
        }
    }

    pub fn query(
        &mut self,
        sql: &str,
        params: &[Val],
        cols: &[Ty],
    ) -> Result<Vec<Vec<Val>>, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let p: Vec<&dyn rusqlite::ToSql> = params.iter().map(sqlite_param).collect();
                let mut st = c.prepare(sql).map_err(StoreError::from_sqlite)?;
                let rows = st
                    .query_map(p.as_slice(), |r| {
                        let mut out = Vec::with_capacity(cols.len());
                        for (i, t) in cols.iter().enumerate() {
                            out.push(match t {
                                Ty::Int => Val::Int(r.get(i)?),
                                Ty::Real => Val::Real(r.get(i)?),
                                Ty::Text => Val::Text(r.get(i)?),
                            });
                        }
                        Ok(out)
                    })
                    .map_err(StoreError::from_sqlite)?;
                rows.collect::<Result<Vec<_>, _>>()
                    .map_err(StoreError::from_sqlite)
            }
            Conn::Pg(c) => {
                let p: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    params.iter().map(pg_param).collect();
                let rows = c
                    .query(pg_sql(sql).as_str(), &p)
                    .map_err(StoreError::from_pg)?;
                let mut out = Vec::with_capacity(rows.len());
                for r in rows {
                    let mut v = Vec::with_capacity(cols.len());
                    for (i, t) in cols.iter().enumerate() {
                        v.push(match t {
                            Ty::Int => Val::Int(r.try_get(i).map_err(StoreError::from_pg)?),
                            Ty::Real => Val::Real(r.try_get(i).map_err(StoreError::from_pg)?),
                            Ty::Text => Val::Text(r.try_get(i).map_err(StoreError::from_pg)?),
                        });
                    }
                    out.push(v);
                }
                Ok(out)
            }
        }
    }

    /// Start a write transaction. SQLite takes the write lock now (IMMEDIATE) so two writers never
    /// deadlock on a lock upgrade; the busy handler does the waiting.
    pub fn begin(&mut self) -> Result<(), StoreError> {
        match self {
            Conn::Sqlite(_) => self.batch("BEGIN IMMEDIATE"),
            Conn::Pg(_) => self.batch("BEGIN"),
        }
    }

    pub fn commit(&mut self) -> Result<(), StoreError> {
        self.batch("COMMIT")
    }

    pub fn rollback(&mut self) {
        // Best effort: after a failed statement the transaction may already be gone.
        let _ = self.batch("ROLLBACK");
    }

    /// Run `f` inside one transaction: all of it is stored, or none of it.
    pub fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.begin()?;
        match f(self) {
            Ok(v) => match self.commit() {
                Ok(()) => Ok(v),
                Err(e) => {
                    self.rollback();
                    Err(e)
                }
            },
            Err(e) => {
                self.rollback();
                Err(e)
            }
        }
    }
}

fn sqlite_param(v: &Val) -> &dyn rusqlite::ToSql {
    match v {
        Val::Int(i) => i,
        Val::Real(r) => r,
        Val::Text(t) => t,
    }
}

fn pg_param(v: &Val) -> &(dyn postgres::types::ToSql + Sync) {
    match v {
        Val::Int(i) => i,
        Val::Real(r) => r,
        Val::Text(t) => t,
    }
}
