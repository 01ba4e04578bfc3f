//! `rtscope bound`: the ECRTS'20 latency bound (Theorem 8, six interrupt characterizations) from
//! one of three inputs — the documented JSON (`--input`), rtsl's SQLite databases (`--rtsl-db`),
//! or an rtscope trace (`--trace`) — by `rtscope_verbs::bound`. Text like rtsl's report, or
//! `--json` (docs/schema/bound.schema.json).

use super::common;
use rtscope_verbs::bound;
use std::path::PathBuf;
use std::time::Duration;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    let f = bound::BoundFlags {
        input: a.input,
        rtsl_db: a.rtsl_db,
        trace: a.trace,
        assume_thread: a.assume_thread,
        samples: a.samples,
        series: a.series,
        cap: a.cap,
        max_iterations: a.max_iterations,
    };
    Ok(bound::run(&f, &a.json.dest())?)
}

/// `--cap` in the one duration grammar within [`bound::CAP_RANGE`]. A bare number is refused,
/// not read as seconds: a command line written for a count of ns (`--cap 5000`) would otherwise
/// ask for a cap a million times larger than meant.
pub fn cap(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{s}' has no unit; a bare number meant ns here before and means seconds in the shared grammar: write {t}ns (or {t}s)"
        ));
    }
    let (lo, hi) = (bound::CAP_RANGE.start(), bound::CAP_RANGE.end());
    rtscope_model::duration::parse_secs_in(t, lo.as_secs_f64(), hi.as_secs_f64())
        .map(Duration::from_secs_f64)
}
