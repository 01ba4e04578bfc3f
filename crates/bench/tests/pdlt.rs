//! Real-kernel PDLT scans, short: point counts, monotone offsets, scratch files removed.

use rtscope_bench::common::reaper::Reaper;
use rtscope_bench::pdlt::{self, Config, Syscall};

fn cfg(sys: Syscall, size: u64) -> Config {
    Config {
        cpu: rtscope_bench::common::default_cpu(),
        producer_priority: 80,
        consumer_priority: 70,
        syscall: sys,
        size,
        step_ns: 5_000,
        range_ns: None,
        repeats: 1,
        scratch_dir: std::env::temp_dir(),
        compare_preempt: false,
        max_duration_ns: 10_000_000_000,
        points: 0,
    }
}

#[test]
fn scans_every_syscall() {
    if !rtscope_probe::sys::is_root() {
        rtscope_testkit::skipped("needs root (SCHED_FIFO, mlockall)");
        return;
    }
    let reaper = Reaper::start().unwrap();
    for (sys, size) in [
        (Syscall::Read, 4 << 20),
        (Syscall::Munmap, 8 << 20),
        (Syscall::Getdents, 5000),
        (Syscall::MmapPopulate, 8 << 20),
    ] {
        let c = cfg(sys, size);
        let r = pdlt::run(&c, &reaper, |m| eprintln!("scan under {m}")).unwrap();
        assert_eq!(r.scans.len(), 1);
        let sc = &r.scans[0];
        let dur = sc.syscall_calibration.median_ns.unwrap() as i64;
        // Default sweep: −2 µs … 1.25 × duration + 2 µs in 5 µs steps.
        let expect = ((dur + dur / 4 + 2_000 + 2_000) / 5_000 + 1) as usize;
        assert_eq!(sc.points.len(), expect, "{sys:?}");
        assert!(
            sc.points
                .windows(2)
                .all(|w| w[0].requested_offset_ns <= w[1].requested_offset_ns),
            "requested offsets are monotone"
        );
        let base = sc.baseline_pdlt_ns.unwrap();
        eprintln!(
            "{:?}: call {} µs, {} points, baseline {} µs, max {} µs, triangles {:?}",
            sys,
            dur / 1000,
            sc.points.len(),
            base / 1000,
            sc.max_pdlt_ns.unwrap() / 1000,
            sc.triangles
                .iter()
                .map(|t| (
                    t.start_offset_ns / 1000,
                    t.end_offset_ns / 1000,
                    t.peak_pdlt_ns / 1000
                ))
                .collect::<Vec<_>>()
        );
        let csv = rtscope_report::bench::pdlt_csv(&r);
        assert_eq!(csv.lines().count(), sc.points.len() + 1);
        assert!(rtscope_report::bench::pdlt_svg(&r).contains("<svg"));
    }
    let dir = std::env::temp_dir().join(format!("rtscope-pdlt-{}", std::process::id()));
    assert!(!dir.exists(), "scratch directory removed");
}

#[test]
fn compare_preempt_is_refused_clearly_when_not_switchable() {
    match pdlt::check_compare_preempt() {
        Ok((cur, all)) => println!("preemption model switchable here: {cur} of {all:?}"),
        Err(e) => {
            let m = e.to_string();
            assert!(
                m.contains(&pdlt::Field::ComparePreempt.to_string())
                    && m.contains("no scan was run"),
                "{m}"
            );
        }
    }
}
