//! `rtscope trace record`: capture kernel events on some CPUs for a while into a `.rtt` file
//! (no samples: `rtscope measure --trace` adds those), stored as a run that points at the file.
//! Useful alone to look at what a machine's CPUs do, and to test the capture mechanisms.
//! `rtscope trace thread-vars`: ECRTS'20 Table 1's thread variables from the preemptirq events,
//! reduced in the kernel (eBPF) or streamed from tracefs (rtscope_verbs::thread_vars).

use std::path::PathBuf;
use std::time::Duration;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    match a.cmd {
        Sub::Record(r) => record(r),
        Sub::ThreadVars(t) => thread_vars(t),
    }
}

/// Where tracefs's missing preemptirq tracepoints are: a lab kernel built with them.
const LAB_HINT: &str = "a lab kernel has them: rtscope lab kernel build --preset trace, then \
                        rtscope lab run --kernel trace -- trace thread-vars --mechanism tracefs \
                        -D 10s";

fn thread_vars(a: ThreadVarsArgs) -> anyhow::Result<()> {
    let secs = super::common::parse_duration("--duration", &a.duration)?;
    let cpus = super::common::resolve_cpus("--cpus", a.cpus.as_deref())?;
    let mech: rtscope_verbs::thread_vars::Mechanism = a
        .mechanism
        .parse()
        .map_err(|e| crate::usage!("--mechanism: {e}"))?;
    Ok(rtscope_verbs::thread_vars::run(
        mech,
        &cpus,
        Duration::from_secs_f64(secs),
        &a.json.dest(),
        LAB_HINT,
    )?)
}

fn record(a: RecordArgs) -> anyhow::Result<()> {
    let r = rtscope_verbs::capture::Record {
        duration: a.duration,
        cpus: a.cpus,
        mechanism: a.mechanism,
        output: a.output,
        keep: a.trace_keep.map(|k| k.keep().name().to_string()),
        preemptirq: a.preemptirq,
    };
    Ok(rtscope_verbs::capture::record(&r, &a.out.lib())?)
}
