//! What the monitor's endpoint tests share: metrics holding a series of every family.

use rtscope_session::live::{LiveSnapshot, ThreadLive, View};
use rtscope_verbs::monitor::{Field, Metrics, MonitorOptions, MonitorView};
use std::sync::Arc;
use std::time::Duration;

/// The monitor's metrics with a series in each family: a sample, a snapshot, and a window's
/// interim record with attribution, bound and steal (a family without series is not encoded).
pub fn metrics_of_every_kind() -> Arc<Metrics> {
    let m = Arc::new(Metrics::new(Field::key));
    let mut v = MonitorView::new(
        m.clone(),
        MonitorOptions {
            window: Duration::from_secs(1),
            expose_names: false,
        },
        Box::new(rtscope_session::live::NoView),
    );
    v.samples(&[rtscope_model::RawSample {
        cpu: 0,
        latency_ns: 5_000,
        ..Default::default()
    }]);
    v.update(&LiveSnapshot {
        threads: vec![ThreadLive {
            cpu: 0,
            samples: 1,
            overruns: 1,
            max_ns: 5_000,
            ..Default::default()
        }],
        ..Default::default()
    });
    let mut spec = rtscope_store::fixture::Spec::new("run-1", 1);
    spec.with_analysis = true;
    let mut rec = rtscope_store::fixture::record(&spec);
    rec.system.steal_per_cpu_ns = vec![(0, 1_000_000)];
    v.interim(&rec, Duration::from_secs(1));
    m
}
