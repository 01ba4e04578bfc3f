//! The lab on real threads: testing mode finds nothing wrong with the correct structures, finds
//! the deliberately broken cpudl, and performance mode measures every operation.

use rtscope_practise::structures::{Fault, StructureKind, ALL_STRUCTURES};
use rtscope_practise::{Config, Mode};

fn online() -> Vec<u32> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    rtscope_model::cpus::parse_cpu_list(s.trim()).unwrap()
}

fn never() -> bool {
    false
}

/// Every configuration for 250 ms at M = 4 (and cpudl at M = 16, more threads than CPUs), a
/// 1 ms cycle and a 1 ms check: no checker may fire, and the run must have done real work.
#[test]
fn testing_mode_finds_no_violation() {
    let mut cfg = Config::thesis_defaults(Mode::Test, vec![4], vec![]);
    cfg.cycle_ns = 1_000_000;
    cfg.duration_ns = 250_000_000;
    cfg.seed = 7;
    let n = online().len() as u32;
    let mut res = rtscope_practise::run(&cfg, n, &never, &mut |_| {}).unwrap();
    cfg.emulated_cpus = vec![16];
    cfg.structures = vec![StructureKind::Cpudl];
    let more = rtscope_practise::run(&cfg, n, &never, &mut |_| {}).unwrap();
    assert!(more.violation.is_none(), "{:?}", more.violation);
    assert!(!more.notes.is_empty(), "M > N is said");
    res.runs.extend(more.runs);
    assert!(res.violation.is_none(), "{:?}", res.violation);
    assert_eq!(res.runs.len(), ALL_STRUCTURES.len() + 1);
    for r in &res.runs {
        let c = r.checks.as_ref().unwrap();
        assert!(c.checks >= 20, "{}: {} checks", r.structure, c.checks);
        assert!(r.counts.activations > 20, "{}: {:?}", r.structure, r.counts);
        assert!(
            r.counts.pushes + r.counts.pulls > 0,
            "{}: {:?}",
            r.structure,
            r.counts
        );
        assert!(c.global_false <= c.checks);
        assert_eq!(
            c.global_false,
            c.idle_while_waiting + c.waiting_beats_running
        );
        let pol = if r.structure == "cpupri" { "fp" } else { "edf" };
        assert_eq!(r.policy, pol);
    }
}

/// The broken cpudl (heapify-down ignores the right child) must be caught, and the report must
/// name the heap property and show the heap.
#[test]
fn testing_mode_catches_the_broken_cpudl() {
    let mut cfg = Config::thesis_defaults(Mode::Test, vec![8], vec![]);
    cfg.structures = vec![StructureKind::Cpudl];
    cfg.fault = Some(Fault::CpudlLeftOnly);
    cfg.cycle_ns = 200_000;
    cfg.p_arrival = 0.5;
    cfg.p_finish = 0.2;
    cfg.check_every_ns = 200_000;
    cfg.duration_ns = 5_000_000_000;
    let t0 = std::time::Instant::now();
    let res = rtscope_practise::run(&cfg, online().len() as u32, &never, &mut |_| {}).unwrap();
    let v = res
        .violation
        .expect("the checker must fire on the broken cpudl");
    assert!(
        v.invariant.starts_with("cpudl heap property") || v.invariant.starts_with("cpudl content"),
        "{v:?}"
    );
    assert!(v.state.contains("heap (size"), "{}", v.state);
    assert_eq!(res.fault.as_deref(), Some("cpudl-left-only"));
    // It stops at the first violation, well before the 5 s.
    assert!(t0.elapsed().as_secs_f64() < 4.0, "{:?}", t0.elapsed());
}

/// Performance mode on every online CPU: each operation measured, quantiles in order, threads
/// pinned and memory locked.
#[test]
fn performance_mode_measures_every_operation() {
    let cpus = online();
    let m = cpus.len().min(2);
    let mut cfg = Config::thesis_defaults(Mode::Perf, vec![m], cpus.clone());
    cfg.cycle_ns = 200_000;
    cfg.duration_ns = 150_000_000;
    let res = rtscope_practise::run(&cfg, cpus.len() as u32, &never, &mut |_| {}).unwrap();
    assert!(res.violation.is_none());
    assert!(res.pinned);
    let root = rtscope_sys::system::is_root();
    if root {
        assert!(res.memory_locked, "{:?}", res.notes);
    }
    assert!(res.clock.source == "tsc" || res.clock.source == "clock_monotonic");
    for r in &res.runs {
        assert!(r.checks.is_none(), "no checker in performance mode");
        let mut need = vec![
            "enqueue",
            "dequeue",
            "push",
            "pull",
            "push_find",
            "pull_find",
            "push_modify",
        ];
        if m >= 2 {
            need.push("pull_modify");
        }
        for op in need {
            let o = r
                .ops
                .iter()
                .find(|o| o.op == op)
                .unwrap_or_else(|| panic!("{}: no {op}", r.structure));
            assert!(o.count > 0);
            assert!(
                o.min_ns <= o.q1_ns
                    && o.q1_ns <= o.median_ns
                    && o.median_ns <= o.q3_ns
                    && o.q3_ns <= o.p99_ns
                    && o.p99_ns <= o.max_ns,
                "{}: {o:?}",
                r.structure
            );
            assert!(o.mean_ns >= o.min_ns as f64 && o.mean_ns <= o.max_ns as f64);
        }
    }
}
