//! The flags of `rtscope monitor` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub flags: crate::cmd::measure::MeasureFlags,
    /// Serve OpenMetrics/Prometheus text at http://ADDRESS:PORT/metrics (read-only); bound to
    /// the loopback unless another address is given
    #[arg(long, value_name = "ADDRESS:PORT", default_value = "127.0.0.1:9464", value_parser = listen)]
    pub listen: SocketAddr,
    /// Window of the per-window gauges (max, p99, p99.9) and of the checkpointed record, e.g.
    /// 60s, 5m (1s..=1d)
    #[arg(long, value_name = "TIME", default_value = "60s",
          value_parser = common::duration_within(monitor::WINDOW_RANGE))]
    pub window: Duration,
    /// Show thread names in the tail-cause labels (hidden by default: whoever reaches the
    /// endpoint reads them)
    #[arg(long)]
    pub expose_names: bool,
    /// Trace in bursts instead of all the time: LENGTH every EVERY, e.g. 10s/5m (the first at
    /// the start; LENGTH 1s..=1h and shorter than EVERY, EVERY at most 1d). The samples inside
    /// a burst are explained; between bursts nothing is traced. Implies --trace auto unless
    /// --trace names a mechanism
    #[arg(long, value_name = "LENGTH/EVERY", value_parser = trace_burst)]
    pub trace_burst: Option<TraceBursts>,
}
