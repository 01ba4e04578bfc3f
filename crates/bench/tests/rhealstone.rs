//! Real-kernel run of the Rhealstone suite, short: counts, the PI/no-PI inversion, the composite.

use rtscope_bench::common::reaper::Reaper;
use rtscope_bench::rhealstone::{self, Config};

fn can_run() -> Option<&'static str> {
    if !rtscope_probe::sys::is_root() {
        return Some("needs root (SCHED_FIFO, mlockall, tracefs)");
    }
    None
}

fn cfg(iterations: u64) -> Config {
    Config {
        cpu: rtscope_bench::common::default_cpu(),
        priority_high: 80,
        iterations,
        max_duration_ns: 5_000_000_000,
        timer_interval_ns: 50_000,
        irq_iterations: 500,
        medium_burst_ns: 100_000,
        only: vec![],
        variants: true,
    }
}

#[test]
fn suite_counts_and_inversion() {
    if let Some(why) = can_run() {
        println!("SKIPPED: {why}");
        return;
    }
    let reaper = Reaper::start().unwrap();
    let c = cfg(2000);
    let r = rhealstone::run(&c, &reaper, |m, v| eprintln!("running {m}/{v}")).unwrap();
    for m in &r.metrics {
        eprintln!(
            "{:20} {:14} n={:6} mean={:>9.0} min={:?} max={:?} {:?} {:?}",
            m.metric,
            m.variant,
            m.stats.samples,
            m.stats.avg_ns.unwrap_or(0.0),
            m.stats.min_ns,
            m.stats.max_ns,
            m.unavailable,
            m.notes
        );
        if m.unavailable.is_some() {
            assert_eq!(
                m.metric, "interrupt_response",
                "only the trace-based metric may be unavailable"
            );
            continue;
        }
        let want = if m.metric == "interrupt_response" {
            500
        } else {
            2000
        };
        if m.stopped_early.is_none() {
            // Task switch counts samples from both threads and may overshoot by one.
            assert!(
                m.stats.samples >= want && m.stats.samples <= want + 1,
                "{} {}: {} samples",
                m.metric,
                m.variant,
                m.stats.samples
            );
        }
        assert!(m.stats.min_ns.unwrap() <= m.stats.median_ns.unwrap());
        assert!(m.stats.median_ns.unwrap() <= m.stats.max_ns.unwrap());
    }
    let variants: Vec<(&str, &str)> = r
        .metrics
        .iter()
        .map(|m| (m.metric.as_str(), m.variant.as_str()))
        .collect();
    for v in [
        "sysv_msg",
        "posix_mq",
        "pipe",
        "sysv_sem",
        "posix_sem",
        "futex",
        "pi_mutex",
        "no_pi_mutex",
        "sched_yield",
        "user_spin",
    ] {
        assert!(variants.iter().any(|(_, x)| *x == v), "variant {v} missing");
    }
    let med = |v: &str| {
        r.metrics
            .iter()
            .find(|m| m.variant == v)
            .unwrap()
            .stats
            .median_ns
            .unwrap()
    };
    // Without PI the 100 µs medium burst runs before the holder can release.
    assert!(
        med("no_pi_mutex") >= 100_000,
        "no-PI median {} must include the burst",
        med("no_pi_mutex")
    );
    assert!(
        med("pi_mutex") < med("no_pi_mutex"),
        "PI must beat no-PI under inversion"
    );
    let comp = r.composite.expect("composite");
    assert!(comp.rhealstones_per_s > 0.0);
    assert!(comp.formula.contains("t_mean"));
}

#[test]
fn bad_config_is_rejected_before_anything_runs() {
    let mut c = cfg(10);
    c.priority_high = 10;
    assert!(c.validate().is_err());
    let mut c = cfg(0);
    c.priority_high = 80;
    assert!(c.validate().is_err());
    let mut c = cfg(10);
    c.only = vec!["nope".into()];
    assert!(c.validate().is_err());
    let mut c = cfg(10);
    c.cpu = 4000;
    assert!(c.validate().is_err());
}
