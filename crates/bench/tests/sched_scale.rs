//! Real-kernel run of sched-scale, short: every level has its samples and its load processes.

use rtscope_bench::common::reaper::Reaper;
use rtscope_bench::sched_scale::{self, Config};

#[test]
fn short_scan_counts_and_fit() {
    if !rtscope_probe::sys::is_root() {
        rtscope_testkit::skipped("needs root (SCHED_FIFO, mlockall, tracefs)");
        return;
    }
    let reaper = Reaper::start().unwrap();
    let cfg = Config {
        cpu: rtscope_bench::common::default_cpu(),
        priority: 80,
        loads: vec![0, 5, 10],
        wakeups: 20,
        sleep_ns: 2_000_000,
        trace: true,
        sched_time: sched_scale::SchedTime::Off,
    };
    let r = sched_scale::run(&cfg, &reaper, None, |n| eprintln!("N={n}")).unwrap();
    assert_eq!(r.rows.len(), 3);
    for row in &r.rows {
        eprintln!(
            "N={:3} own mean={:?} irq->run mean={:?} waking->switch mean={:?} running={}",
            row.load_processes,
            row.wakeup_to_run_stats.avg_ns,
            row.irq_to_run_stats.as_ref().and_then(|s| s.avg_ns),
            row.waking_to_switch_stats.as_ref().and_then(|s| s.avg_ns),
            row.load_running_at_end
        );
        assert_eq!(row.wakeups, 20);
        assert_eq!(row.wakeup_to_run.count(), 20);
        // All load processes are CPU-bound: they are runnable (R) when sampled.
        assert_eq!(row.load_running_at_end, row.load_processes);
        if r.trace_unavailable.is_none() {
            let irq = row.irq_to_run.as_ref().unwrap();
            assert!(
                irq.count() >= 15,
                "most wake-ups matched in the trace: {}",
                irq.count()
            );
        }
    }
    let fit = r.fit_wakeup_to_run.expect("3 levels give a fit");
    assert!(fit.slope_ci_low <= fit.slope && fit.slope <= fit.slope_ci_high);
    // No load process survives the run.
    std::thread::sleep(std::time::Duration::from_millis(50));
}
