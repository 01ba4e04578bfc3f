//! `rtscope monitor`: the measurement of `measure`, run until stopped, with its figures served
//! as Prometheus metrics and its record checkpointed every window (docs/fleet.md).

use rtscope_verbs::monitor::MonitorFlags;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> anyhow::Result<()> {
    let m = MonitorFlags {
        listen: a.listen,
        window: a.window,
        expose_names: a.expose_names,
        trace_burst: a.trace_burst,
        field_names: crate::fields_verbs::monitor,
    };
    let req = a.flags.request(super::measure::TraceArg::Off);
    rtscope_verbs::monitor::run(&req, &m).map_err(crate::fields::usage)
}
