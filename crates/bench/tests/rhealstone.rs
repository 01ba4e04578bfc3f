//! Real-kernel run of the Rhealstone suite, short: counts, the PI/no-PI inversion, the composite,
//! and the mechanism of each interval heursch-2001 §3.1 defines (the semaphore shuffle's request
//! blocks and switches to the holder; the preemption has no timer in its path).

use rtscope_bench::common::reaper::Reaper;
use rtscope_bench::rhealstone::{self, Config};
use rtscope_model::bench::RhealstoneMetric;

/// The real-kernel tests pin their threads to the same CPU: one at a time, or each would be
/// measuring the other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
        select_variants: vec![],
        irq_device: false,
    }
}

fn counter(m: &RhealstoneMetric, name: &str) -> u64 {
    *m.counters.get(name).unwrap_or_else(|| {
        panic!(
            "{}/{}: no counter {name}: {:?}",
            m.metric, m.variant, m.counters
        )
    })
}

#[test]
fn suite_counts_and_inversion() {
    if let Some(why) = can_run() {
        rtscope_testkit::skipped(format_args!("{why}"));
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
        "setparam",
        "futex_wake",
        "hrtimer_wake",
        "hrtimer_expire",
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
    for m in &r.metrics {
        // The device interrupt (the paper's quantity) exists only in the lab's guests.
        if m.variant == "parallel_port" {
            assert_eq!(m.quantity, "as_defined");
            if !std::path::Path::new(rtscope_bench::labdev::DEVICE).exists() {
                let why = m.unavailable.as_deref().unwrap_or_default();
                assert!(why.contains("/dev/rtscope_lab"), "{why}");
                assert!(!m.primary, "a missing device is not the summary's figure");
            }
            continue;
        }
        let nearest = m.variant == "hrtimer_expire";
        assert_eq!(m.is_nearest_measurable(), nearest, "{}", m.variant);
        let want = match (nearest, m.variant.as_str()) {
            (true, _) => "nearest_measurable",
            (false, "hrtimer_wake") => "contrast",
            _ => "as_defined",
        };
        assert_eq!(m.quantity, want, "{}", m.variant);
        if nearest && m.unavailable.is_none() {
            assert!(m.definition.starts_with("NEAREST MEASURABLE QUANTITY"));
        }
    }
    let comp = r.composite.expect("composite");
    assert!(comp.rhealstones_per_s > 0.0);
    assert!(comp.formula.contains("t_mean"));
}

/// The semaphore shuffle is heursch-2001 §3.1's interval: each round's request blocked and the
/// CPU went to the holder (the requester switched out voluntarily twice per round: on the held
/// semaphore and on the next round's signal), the holder's run is subtracted, and what remains
/// is request → holder + release → own, so it is never below the release → own interval of the
/// same rounds.
#[test]
fn semaphore_shuffle_includes_the_block_and_the_switch_to_the_holder() {
    if let Some(why) = can_run() {
        rtscope_testkit::skipped(format_args!("{why}"));
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let reaper = Reaper::start().unwrap();
    let mut c = cfg(3000);
    c.only = vec!["semaphore_shuffle".into()];
    let r = rhealstone::run(&c, &reaper, |_, _| {}).unwrap();
    assert_eq!(r.metrics.len(), 3);
    for m in &r.metrics {
        let part = |name: &str| {
            m.parts
                .iter()
                .find(|p| p.name == name)
                .unwrap_or_else(|| panic!("{}: no part {name}", m.variant))
        };
        let n = m.stats.samples;
        let (shuffle, rel_own, req_holder, holder, req_obtain) = (
            &m.histogram,
            &part("release_to_own").histogram,
            &part("request_to_holder").histogram,
            &part("holder_run").histogram,
            &part("request_to_obtain").histogram,
        );
        eprintln!(
            "{}: n={n} shuffle mean {:.0} median {:?}; release→own mean {:.0} median {:?}; request→holder mean {:.0}; holder run mean {:.0}; counters {:?}",
            m.variant,
            shuffle.mean_ns().unwrap(),
            shuffle.quantile_ns(0.5),
            rel_own.mean_ns().unwrap(),
            rel_own.quantile_ns(0.5),
            req_holder.mean_ns().unwrap(),
            holder.mean_ns().unwrap(),
            m.counters
        );
        assert!(n >= 2900, "{}: {n} samples", m.variant);
        assert_eq!(counter(m, "samples_out_of_order"), 0, "{}", m.variant);
        for h in [rel_own, req_holder, holder, req_obtain] {
            assert_eq!(h.count(), n);
        }
        // The mechanism: the requester blocked on the held semaphore in every round.
        assert!(
            counter(m, "high_voluntary_switches") >= 2 * n,
            "{}: requester switched out {} times in {n} rounds",
            m.variant,
            counter(m, "high_voluntary_switches")
        );
        // Sample by sample, shuffle = request → holder + release → own, and request → obtain
        // minus the holder's run: the sums are exact, so the means agree to rounding.
        let mean = |h: &rtscope_model::Histogram| h.mean_ns().unwrap();
        assert!((mean(shuffle) - mean(req_holder) - mean(rel_own)).abs() < 1.0);
        assert!((mean(shuffle) - (mean(req_obtain) - mean(holder))).abs() < 1.0);
        assert!(holder.min_ns().unwrap() >= rhealstone::SHUFFLE_HOLD_NS);
        // Every sample is at least its own release → own, so the distribution lies above.
        assert!(shuffle.min_ns() >= rel_own.min_ns());
        assert!(shuffle.quantile_ns(0.5) >= rel_own.quantile_ns(0.5));
        assert!(mean(shuffle) > mean(rel_own));
    }
}

/// Preemption without a timer: in `setparam` the preempting thread never blocks (it is only
/// raised above the running one), in `futex_wake` it is woken by the preempted thread's system
/// call; in both the preempted thread is switched out involuntarily once per sample, and the
/// CPU's local timer fired far fewer times than there are samples. The timer variant, for
/// contrast, takes one local timer interrupt per sample.
#[test]
fn preemption_has_no_timer_in_its_path() {
    if let Some(why) = can_run() {
        rtscope_testkit::skipped(format_args!("{why}"));
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let reaper = Reaper::start().unwrap();
    let mut c = cfg(3000);
    c.only = vec!["preemption".into()];
    let r = rhealstone::run(&c, &reaper, |_, _| {}).unwrap();
    let get = |v: &str| r.metrics.iter().find(|m| m.variant == v).unwrap();
    for m in &r.metrics {
        eprintln!(
            "{}: n={} mean {:.0} median {:?} counters {:?}",
            m.variant,
            m.stats.samples,
            m.stats.avg_ns.unwrap_or(0.0),
            m.stats.median_ns,
            m.counters
        );
    }
    let sp = get("setparam");
    assert!(sp.primary);
    let n = sp.stats.samples;
    assert!(n >= 2900, "setparam: {n} samples");
    assert_eq!(counter(sp, "samples_out_of_order"), 0);
    assert!(
        counter(sp, "high_voluntary_switches") < n / 10,
        "the preempting thread must not be woken"
    );
    assert!(counter(sp, "low_involuntary_switches") >= n);
    let fw = get("futex_wake");
    let nf = fw.stats.samples;
    assert!(nf >= 2900);
    assert!(counter(fw, "high_voluntary_switches") >= nf);
    assert!(counter(fw, "low_involuntary_switches") >= nf);
    for m in [sp, fw] {
        assert!(
            counter(m, "local_timer_interrupts") < m.stats.samples / 4,
            "{}: {} local timer interrupts for {} samples",
            m.variant,
            counter(m, "local_timer_interrupts"),
            m.stats.samples
        );
        assert!(m.definition.contains("no interrupt"));
    }
    let hw = get("hrtimer_wake");
    assert!(!hw.primary);
    assert!(counter(hw, "local_timer_interrupts") >= hw.stats.samples);
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
