//! `rtscope monitor`: the measurement of `measure`, run until stopped, with its figures served
//! as Prometheus metrics and its record checkpointed every window (docs/fleet.md).

use super::common;
use rtscope_model::TraceBursts;
use rtscope_verbs::monitor::{self, MonitorFlags};
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::time::Duration;

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

/// `--listen`: an IP address and a port (a name would be resolved, and could bind elsewhere
/// than the user read).
fn listen(s: &str) -> Result<SocketAddr, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("'{s}' is not ADDRESS:PORT (e.g. 127.0.0.1:9464, [::1]:9464)"))
}

/// `--trace-burst LENGTH/EVERY`, each a duration; their ranges are the monitor's.
fn trace_burst(s: &str) -> Result<TraceBursts, String> {
    let (l, e) = s.split_once('/').ok_or_else(|| {
        "expected LENGTH/EVERY, e.g. 10s/5m (LENGTH 1s..=1h, shorter than EVERY, EVERY at most 1d)"
            .to_string()
    })?;
    let secs = |what: &str, v: &str, r: RangeInclusive<Duration>| {
        let (lo, hi) = (r.start().as_secs_f64(), r.end().as_secs_f64());
        rtscope_model::duration::parse_secs_in(v, lo, hi)
            .map(Duration::from_secs_f64)
            .map_err(|e| format!("{what} {e}"))
    };
    monitor::trace_bursts(
        secs("LENGTH", l, monitor::BURST_LENGTH_RANGE)?,
        secs("EVERY", e, monitor::BURST_EVERY_RANGE)?,
    )
}
