//! A SQLite file rtscope reads is outside input: its schema is the file's, not ours. A table we
//! expect can be a view (a recursive CTE that never ends, a cross join of a million rows), a
//! query can sort into a temporary file, and the page cache and sorter grow with what the file
//! asks. Every connection that reads such a file is therefore bounded here:
//! * the objects we read must be plain tables ([`plain_tables`]), not views or virtual tables;
//! * a progress handler stops any statement after [`READ_TIME_LIMIT`] from the open;
//! * SQLite's own heap is capped at [`HEAP_LIMIT_BYTES`] (it fails with "out of memory"
//!   instead of growing);
//! * temporary tables and sorters stay in memory (inside that cap): nothing spills to
//!   `/var/tmp`, which a large sort could fill.

use rusqlite::Connection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Default longest time one read-only connection may spend in SQLite (a 10 M-row rtsl database
/// reads in about 5 s).
pub const READ_TIME_LIMIT: Duration = Duration::from_secs(60);
/// Most memory SQLite itself may take in this process, bytes.
pub const HEAP_LIMIT_BYTES: i64 = 192 << 20;

static TIME_LIMIT_MS: AtomicU64 = AtomicU64::new(60_000);

/// Raise or lower [`READ_TIME_LIMIT`] for this process (a command-line flag).
pub fn set_read_time_limit(d: Duration) {
    TIME_LIMIT_MS.store(d.as_millis().max(1) as u64, Ordering::Relaxed);
}

/// The time limit in force.
pub fn read_time_limit() -> Duration {
    Duration::from_millis(TIME_LIMIT_MS.load(Ordering::Relaxed))
}

/// Bound a connection that reads a file from outside (module docs).
pub fn bound_reader(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("PRAGMA temp_store = MEMORY;")?;
    conn.query_row(
        &format!("PRAGMA hard_heap_limit = {HEAP_LIMIT_BYTES}"),
        [],
        |_| Ok(()),
    )?;
    let deadline = Instant::now() + read_time_limit();
    // Called every 10 000 virtual-machine steps (well under a millisecond).
    conn.progress_handler(10_000, Some(move || Instant::now() > deadline));
    Ok(())
}

/// Each of `names` that the file has must be a plain table: a view, or a virtual table, would
/// run the file's own query when we read it. Returns the first offender, named, with its kind.
pub fn plain_tables(conn: &Connection, names: &[&str]) -> rusqlite::Result<Result<(), String>> {
    let mut st = conn.prepare("SELECT type, name, sql FROM sqlite_master WHERE name = ?1")?;
    for n in names {
        let mut rows = st.query([n])?;
        while let Some(r) = rows.next()? {
            let ty: String = r.get(0)?;
            let sql: Option<String> = r.get(2)?;
            let is_virtual = sql.as_deref().is_some_and(|s| {
                s.trim_start()
                    .to_ascii_uppercase()
                    .starts_with("CREATE VIRTUAL")
            });
            if ty == "view" || (ty == "table" && is_virtual) {
                let kind = if is_virtual {
                    "a virtual table"
                } else {
                    "a view"
                };
                return Ok(Err(format!("{n} is {kind}, not a table")));
            }
        }
    }
    Ok(Ok(()))
}

/// The message for an error that the bounds above caused, if it is one.
pub fn explain(e: &rusqlite::Error) -> Option<String> {
    let rusqlite::Error::SqliteFailure(f, _) = e else {
        return None;
    };
    match f.code {
        rusqlite::ErrorCode::OperationInterrupted => Some(format!(
            "reading took longer than {} s and was stopped (a view or a query that does not end?)",
            read_time_limit().as_secs()
        )),
        rusqlite::ErrorCode::OutOfMemory => Some(format!(
            "reading needs more than the {} MiB SQLite may use, and was stopped",
            HEAP_LIMIT_BYTES >> 20
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_are_refused_and_an_endless_query_is_stopped() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE t (x INTEGER);
             CREATE VIEW runs AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r;",
        )
        .unwrap();
        assert_eq!(plain_tables(&c, &["t"]).unwrap(), Ok(()));
        assert_eq!(
            plain_tables(&c, &["t", "runs"]).unwrap(),
            Err("runs is a view, not a table".to_string())
        );
        set_read_time_limit(Duration::from_millis(200));
        bound_reader(&c).unwrap();
        let t0 = Instant::now();
        let e = c
            .query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0))
            .unwrap_err();
        set_read_time_limit(READ_TIME_LIMIT);
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert!(explain(&e).unwrap().contains("longer than"), "{e}");
    }
}
