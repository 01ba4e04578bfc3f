//! `rtscope trace record`: capture kernel events on some CPUs for a while into a `.rtt` file
//! (no samples: `rtscope measure --trace` adds those), stored as a run that points at the file.
//! Useful alone to look at what a machine's CPUs do, and to test the capture mechanisms.
//! `rtscope trace thread-vars`: ECRTS'20 Table 1's thread variables from the preemptirq events,
//! reduced in the kernel (eBPF) or streamed from tracefs (rtscope_verbs::thread_vars).

use super::common;
use rtscope_verbs::thread_vars::Mechanism;
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
    let mech = match a.mechanism {
        MechanismArg::Auto => Mechanism::Auto,
        MechanismArg::Bpf => Mechanism::Bpf,
        MechanismArg::Tracefs => Mechanism::Tracefs,
    };
    let cpus = a.cpus.resolve()?;
    let json = a.json.dest();
    Ok(rtscope_verbs::thread_vars::run(
        mech, &cpus, a.duration, &json, LAB_HINT,
    )?)
}

impl MechanismArg {
    /// The capture's mechanism.
    fn lib(self) -> rtscope_trace::Mechanism {
        match self {
            MechanismArg::Auto => rtscope_trace::Mechanism::Auto,
            MechanismArg::Bpf => rtscope_trace::Mechanism::Bpf,
            MechanismArg::Tracefs => rtscope_trace::Mechanism::Tracefs,
        }
    }
}

fn record(a: RecordArgs) -> anyhow::Result<()> {
    let r = rtscope_verbs::capture::Record {
        duration: a.duration,
        cpus: a.cpus.resolve()?,
        mechanism: a.mechanism.lib(),
        output: a.output,
        keep: a.trace_keep.map(|k| k.keep()),
        preemptirq: a.preemptirq,
    };
    Ok(rtscope_verbs::capture::record(&r, &a.out.lib())?)
}
