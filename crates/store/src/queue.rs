//! A campaign's cells as a work queue in the results database, so that several machines drain
//! one matrix: each worker claims a cell with a lease, keeps the lease alive while the cell runs,
//! and marks the cell done once its run is stored complete. A worker that dies stops renewing;
//! when its lease runs out the cell is claimed again. Times are the database's clock, so workers
//! on machines whose clocks disagree still agree on when a lease ran out.
//!
//! PostgreSQL claims with `SELECT … FOR UPDATE SKIP LOCKED`: concurrent workers skip a row
//! another is claiming instead of waiting for it. SQLite serializes writers on the file lock
//! (`BEGIN IMMEDIATE`), which gives the same one-claimant guarantee for processes of one machine.

use crate::backend::{Conn, Ty, Val};
use crate::{Store, StoreError};
use std::collections::BTreeSet;
use std::time::Duration;

/// Attempts of a cell before it is given up (`failed`): a cell whose measurement fails every time
/// must not keep the fleet busy.
pub const MAX_ATTEMPTS: i64 = 3;

/// A cell this worker holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    pub cell: String,
    /// 1 for the first claim of the cell.
    pub attempt: i64,
}

/// How far a campaign's queue is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueStatus {
    pub todo: i64,
    /// Claimed, lease still running.
    pub running: i64,
    /// Claimed, lease run out: the worker died or lost the database; claimable again.
    pub expired: i64,
    pub done: i64,
    pub failed: i64,
}

impl QueueStatus {
    /// Nothing left that a worker could claim now or later.
    pub fn drained(&self) -> bool {
        self.todo == 0 && self.running == 0 && self.expired == 0
    }
}

/// The database's clock in ms since the epoch, as SQL.
fn now_ms(c: &Conn) -> &'static str {
    if c.is_pg() {
        "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"
    } else {
        "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
    }
}

/// Why a worker may not join a campaign.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("campaign '{name}' in the database was started from another file (sha256 {stored}…, this file {given}…): use that file, or give this one another name")]
    OtherFile {
        name: String,
        stored: String,
        given: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Store {
    /// Register the campaign `name` (the digest of its file) and its cells, or join it if it is
    /// registered with the same digest; cells in `done` (their runs stored complete) are marked
    /// done. A different digest under the same name is refused: workers of one campaign must
    /// measure the same matrix.
    pub fn queue_campaign(
        &mut self,
        name: &str,
        sha256: &str,
        cells: &[String],
        done: &BTreeSet<String>,
        created_at: &str,
    ) -> Result<(), QueueError> {
        // Workers that start together may all find the campaign missing; the database lets one
        // insert it (the others' inserts fail on its unique name, after waiting for that
        // worker's commit) and those join it in a second pass.
        let mut tries = 0;
        let stored = loop {
            tries += 1;
            match self.register_campaign(name, sha256, cells, created_at) {
                Err(StoreError::Duplicate(_)) if tries < 3 => continue,
                r => break r?,
            }
        };
        if let Some(s) = stored.filter(|s| s != sha256) {
            return Err(QueueError::OtherFile {
                name: name.into(),
                stored: s.chars().take(12).collect(),
                given: sha256.chars().take(12).collect(),
            });
        }
        for cell in done {
            self.conn.exec(
                "UPDATE campaign_cells SET state = 'done' WHERE campaign = ?1 AND cell = ?2",
                &[Val::text(name), Val::text(cell)],
            )?;
        }
        Ok(())
    }

    /// The stored digest of campaign `name`, or `None` after registering it with its cells.
    fn register_campaign(
        &mut self,
        name: &str,
        sha256: &str,
        cells: &[String],
        created_at: &str,
    ) -> Result<Option<String>, StoreError> {
        self.conn.transaction(|c| {
            let rows = c.query(
                "SELECT file_sha256 FROM campaigns WHERE name = ?1",
                &[Val::text(name)],
                &[Ty::Text],
            )?;
            if let Some(r) = rows.first() {
                return Ok(r[0].as_text().map(String::from));
            }
            c.exec(
                "INSERT INTO campaigns (name, file_sha256, created_at) VALUES (?1, ?2, ?3)",
                &[Val::text(name), Val::text(sha256), Val::text(created_at)],
            )?;
            for cell in cells {
                c.exec(
                    "INSERT INTO campaign_cells (campaign, cell, state, attempts) VALUES (?1, ?2, 'todo', 0)",
                    &[Val::text(name), Val::text(cell)],
                )?;
            }
            Ok(None)
        })
    }

    /// Claim the next cell of `name` for `worker`: the first (by id) not started, or whose
    /// lease ran out. `None` when no cell can be claimed now.
    pub fn claim_cell(
        &mut self,
        name: &str,
        worker: &str,
        lease: Duration,
    ) -> Result<Option<Claim>, StoreError> {
        let now = now_ms(&self.conn);
        let lease_ms = Val::int(lease.as_millis() as i64);
        let claimable = format!(
            "campaign = ?1 AND (state = 'todo' OR (state = 'running' AND lease_until_ms < {now}))"
        );
        if self.conn.is_pg() {
            let rows = self.conn.query(
                &format!(
                    "UPDATE campaign_cells SET state = 'running', worker = ?2, \
                     lease_until_ms = {now} + ?3, attempts = attempts + 1 \
                     WHERE campaign = ?1 AND cell = (SELECT cell FROM campaign_cells WHERE {claimable} \
                     ORDER BY cell LIMIT 1 FOR UPDATE SKIP LOCKED) \
                     RETURNING cell, attempts"
                ),
                &[Val::text(name), Val::text(worker), lease_ms],
                &[Ty::Text, Ty::Int],
            )?;
            return Ok(rows.first().map(|r| Claim {
                cell: r[0].as_text().unwrap_or_default().to_string(),
                attempt: r[1].as_int().unwrap_or(0),
            }));
        }
        self.conn.transaction(|c| {
            let rows = c.query(
                &format!(
                    "SELECT cell, attempts FROM campaign_cells WHERE {claimable} ORDER BY cell LIMIT 1"
                ),
                &[Val::text(name)],
                &[Ty::Text, Ty::Int],
            )?;
            let Some(r) = rows.first() else {
                return Ok(None);
            };
            let cell = r[0].as_text().unwrap_or_default().to_string();
            c.exec(
                &format!(
                    "UPDATE campaign_cells SET state = 'running', worker = ?2, \
                     lease_until_ms = {now} + ?3, attempts = attempts + 1 \
                     WHERE campaign = ?1 AND cell = ?4"
                ),
                &[Val::text(name), Val::text(worker), lease_ms, Val::text(&cell)],
            )?;
            Ok(Some(Claim {
                cell,
                attempt: r[1].as_int().unwrap_or(0) + 1,
            }))
        })
    }

    /// Extend `worker`'s lease on `cell`; `false` when the worker no longer holds it (the lease
    /// ran out and another worker claimed the cell).
    pub fn renew_lease(
        &mut self,
        name: &str,
        cell: &str,
        worker: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let now = now_ms(&self.conn);
        let n = self.conn.exec(
            &format!(
                "UPDATE campaign_cells SET lease_until_ms = {now} + ?4 \
                 WHERE campaign = ?1 AND cell = ?2 AND worker = ?3 AND state = 'running'"
            ),
            &[
                Val::text(name),
                Val::text(cell),
                Val::text(worker),
                Val::int(lease.as_millis() as i64),
            ],
        )?;
        Ok(n == 1)
    }

    /// The end of `worker`'s run of `cell`: `done` when its run is stored complete; otherwise
    /// the cell goes back to the queue, or is given up after [`MAX_ATTEMPTS`]. `false` when the
    /// worker no longer held the cell.
    pub fn finish_cell(
        &mut self,
        name: &str,
        cell: &str,
        worker: &str,
        done: bool,
    ) -> Result<bool, StoreError> {
        let state = if done {
            "'done'"
        } else {
            "CASE WHEN attempts >= ?4 THEN 'failed' ELSE 'todo' END"
        };
        let mut params = vec![Val::text(name), Val::text(cell), Val::text(worker)];
        if !done {
            params.push(Val::int(MAX_ATTEMPTS));
        }
        let n = self.conn.exec(
            &format!(
                "UPDATE campaign_cells SET state = {state}, lease_until_ms = NULL \
                 WHERE campaign = ?1 AND cell = ?2 AND worker = ?3 AND state = 'running'"
            ),
            &params,
        )?;
        Ok(n == 1)
    }

    /// Cells per state; `running` split by whether the lease still runs.
    pub fn queue_status(&mut self, name: &str) -> Result<QueueStatus, StoreError> {
        let now = now_ms(&self.conn);
        let rows = self.conn.query(
            &format!(
                "SELECT CASE WHEN state = 'running' AND lease_until_ms < {now} THEN 'expired' \
                 ELSE state END AS s, COUNT(*) FROM campaign_cells WHERE campaign = ?1 GROUP BY s"
            ),
            &[Val::text(name)],
            &[Ty::Text, Ty::Int],
        )?;
        let mut q = QueueStatus::default();
        for r in rows {
            let n = r[1].as_int().unwrap_or(0);
            match r[0].as_text().unwrap_or("") {
                "todo" => q.todo = n,
                "running" => q.running = n,
                "expired" => q.expired = n,
                "done" => q.done = n,
                "failed" => q.failed = n,
                _ => {}
            }
        }
        Ok(q)
    }
}
