//! Durable long runs: an interim record goes to the results store every `--checkpoint`
//! interval, replacing the previous one under the run's id, so a run killed by SIGKILL, the OOM
//! killer or a power cut keeps everything up to its last checkpoint (`end_reason: checkpoint`).
//! A store that stops taking records does not stop the run: the failure is reported once and
//! the final record goes to the fallback file at the end.

use rtscope_model::RunRecord;
use rtscope_store::Store;
use std::time::{Duration, Instant};

pub struct Checkpointer {
    url: Option<String>,
    every: Duration,
    next: Duration,
    /// Checkpoints written.
    pub written: u32,
    /// The first failure (reported once), if any.
    pub failure: Option<String>,
    /// Time spent writing checkpoints (serialising + the store's transaction).
    pub total: Duration,
    pub longest: Duration,
}

impl Checkpointer {
    pub fn new(url: Option<String>, every: Duration) -> Checkpointer {
        Checkpointer {
            url,
            every,
            next: every,
            written: 0,
            failure: None,
            total: Duration::ZERO,
            longest: Duration::ZERO,
        }
    }

    pub fn every(&self) -> Duration {
        self.every
    }

    pub fn due(&self, elapsed: Duration) -> bool {
        elapsed >= self.next
    }

    /// Write `rec` (already marked as a checkpoint). Returns the error text of a failure that
    /// has not been reported yet.
    pub fn write(&mut self, rec: &RunRecord, elapsed: Duration) -> Option<String> {
        while self.next <= elapsed {
            self.next += self.every;
        }
        let t0 = Instant::now();
        // Opened for each checkpoint: a PostgreSQL connection that dropped, or a SQLite file
        // that was moved or replaced, is found again (or its loss noticed) every time; an open
        // costs milliseconds against minutes between checkpoints.
        let r = Store::open(self.url.as_deref()).and_then(|mut s| s.upsert_run(rec).map(|_| ()));
        let took = t0.elapsed();
        self.total += took;
        self.longest = self.longest.max(took);
        match r {
            Ok(()) => {
                self.written += 1;
                None
            }
            Err(e) => {
                let first = self.failure.is_none();
                let text = e.to_string();
                if first {
                    self.failure = Some(text.clone());
                    Some(text)
                } else {
                    None
                }
            }
        }
    }

    /// One line for the record's notes.
    pub fn note(&self) -> Option<String> {
        (self.written > 0).then(|| {
            format!(
                "{} checkpoints written every {:.0} s (mean {:.1} ms, longest {:.1} ms to serialise and store)",
                self.written,
                self.every.as_secs_f64(),
                self.total.as_secs_f64() * 1e3 / self.written.max(1) as f64,
                self.longest.as_secs_f64() * 1e3
            )
        })
    }
}
