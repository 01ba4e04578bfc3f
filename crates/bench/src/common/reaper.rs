//! The cleanup reaper (a forked process that frees what a killed run leaves), from
//! `rtscope_sys::reaper`, with the benchmarks' error type.

use super::{BenchError, Result};
pub use rtscope_sys::reaper::Resource;

pub struct Reaper(rtscope_sys::reaper::Reaper);

impl Reaper {
    /// Fork the reaper. Call early, from the thread that will live for the whole run.
    pub fn start() -> Result<Reaper> {
        rtscope_sys::reaper::Reaper::start()
            .map(Reaper)
            .map_err(|source| BenchError::Io {
                what: "fork (cleanup reaper)".into(),
                source,
            })
    }

    pub fn pid(&self) -> i32 {
        self.0.pid()
    }

    pub fn register(&self, r: &Resource) {
        self.0.register(r)
    }

    /// Free the resource now and withdraw it from the reaper.
    pub fn release(&self, r: &Resource) {
        self.0.release(r)
    }
}
