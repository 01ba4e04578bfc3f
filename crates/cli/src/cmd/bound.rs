//! `rtscope bound`: the ECRTS'20 latency bound (Theorem 8, six interrupt characterizations) from
//! one of three inputs — the documented JSON (`--input`), rtsl's SQLite databases (`--rtsl-db`),
//! or an rtscope trace (`--trace`) — by `rtscope_verbs::bound`. Text like rtsl's report, or
//! `--json` (docs/schema/bound.schema.json).

use std::path::PathBuf;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    let f = rtscope_verbs::bound::BoundFlags {
        input: a.input,
        rtsl_db: a.rtsl_db,
        trace: a.trace,
        assume_thread_ns: a.assume_thread_ns,
        samples: a.samples,
        series: a.series,
        cap: a.cap,
        max_iterations: a.max_iterations,
    };
    Ok(rtscope_verbs::bound::run(&f, &a.json.dest())?)
}
