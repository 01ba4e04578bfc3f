//! Hand-worked task sets; the arithmetic is in the comments.

use super::*;
use rtscope_model::taskset::{Task, Verdict};

const MS: u64 = 1_000_000;

fn t(id: u32, c_ms: f64, t_ms: u64, d_ms: u64) -> Task {
    Task {
        id,
        wcet_ns: (c_ms * MS as f64).round() as u64,
        period_ns: t_ms * MS,
        deadline_ns: d_ms * MS,
        wss_bytes: None,
        name: None,
    }
}

#[test]
fn edf_utilisation_implicit() {
    // U = 1/4 + 2/6 + 3/12 = 0.25 + 0.3333 + 0.25 = 0.8333 ≤ 1 → schedulable, exact.
    let s = [t(1, 1.0, 4, 4), t(2, 2.0, 6, 6), t(3, 3.0, 12, 12)];
    let r = edf_utilisation(&s, "cpu0");
    assert_eq!(r.verdict, Verdict::Schedulable);
    assert!(r.exact);
    // Add C=2,T=10: U = 0.8333 + 0.2 = 1.0333 > 1 → not schedulable.
    let mut s2 = s.to_vec();
    s2.push(t(4, 2.0, 10, 10));
    assert_eq!(
        edf_utilisation(&s2, "cpu0").verdict,
        Verdict::NotSchedulable
    );
}

#[test]
fn edf_processor_demand_constrained() {
    // τ1 = (C=2, T=5, D=4), τ2 = (C=3, T=10, D=6). U = 0.4 + 0.3 = 0.7; density = 0.5 + 0.5 = 1.0
    // L = max(Dmax, Σ(T−D)U/(1−U)) = max(6, (1·0.4 + 4·0.3)/0.3) = max(6, 5.33) = 6 ms.
    // Deadlines ≤ 6: 4, 6. dbf(4) = 2 ≤ 4; dbf(6) = 2 + 3 = 5 ≤ 6 → schedulable.
    let ok = [t(1, 2.0, 5, 4), t(2, 3.0, 10, 6)];
    assert_eq!(edf_processor_demand(&ok, "x").verdict, Verdict::Schedulable);
    // τ1 = (2, 5, 3), τ2 = (2, 10, 3): dbf(3) = 2 + 2 = 4 > 3 → not schedulable, although
    // U = 0.4 + 0.2 = 0.6 ≤ 1.
    let bad = [t(1, 2.0, 5, 3), t(2, 2.0, 10, 3)];
    let r = edf_processor_demand(&bad, "x");
    assert_eq!(r.verdict, Verdict::NotSchedulable);
    assert!(
        r.detail.contains("dbf(3000000 ns) = 4000000 ns"),
        "{}",
        r.detail
    );
    // The density test alone is only sufficient: Σ C/D = 2/3 + 2/3 > 1 → inconclusive.
    assert_eq!(edf_utilisation(&bad, "x").verdict, Verdict::Inconclusive);
    // dbf itself: dbf(13 ms) for `ok` = (⌊(13−4)/5⌋+1)·2 + (⌊(13−6)/10⌋+1)·3 = 2·2 + 1·3 = 7 ms.
    assert_eq!(super::uni::dbf(&ok, 13 * MS), 7 * MS as u128);
}

#[test]
fn liu_layland_and_hyperbolic() {
    // n = 2: bound = 2(√2 − 1) = 0.8284. U = 0.5 + 0.3 = 0.8 ≤ 0.8284 → schedulable.
    let a = [t(1, 5.0, 10, 10), t(2, 6.0, 20, 20)];
    assert_eq!(liu_layland(&a, "x").verdict, Verdict::Schedulable);
    // Π(U+1) = 1.5 · 1.3 = 1.95 ≤ 2 → schedulable.
    assert_eq!(hyperbolic(&a, "x").verdict, Verdict::Schedulable);
    // U = 0.6 + 0.25 = 0.85 > 0.8284 (LL inconclusive); Π = 1.6 · 1.25 = 2.0 ≤ 2 (hyperbolic
    // schedulable): the hyperbolic bound is tighter.
    let b = [t(1, 6.0, 10, 10), t(2, 5.0, 20, 20)];
    assert_eq!(liu_layland(&b, "x").verdict, Verdict::Inconclusive);
    assert_eq!(hyperbolic(&b, "x").verdict, Verdict::Schedulable);
}

#[test]
fn response_time_analysis() {
    // Classic: τ1 = (C=1, T=4), τ2 = (C=2, T=6), τ3 = (C=3, T=12), RM order τ1 > τ2 > τ3.
    // R1 = 1. R2: 3 → 2 + ⌈3/4⌉·1 = 3 → R2 = 3.
    // R3: start 6 → 3 + ⌈6/4⌉·1 + ⌈6/6⌉·2 = 3 + 2 + 2 = 7
    //     → 3 + ⌈7/4⌉·1 + ⌈7/6⌉·2 = 3 + 2 + 4 = 9 → 3 + 3 + 4 = 10 → 3 + 3 + 4 = 10. R3 = 10 ≤ 12.
    let s = [t(1, 1.0, 4, 4), t(2, 2.0, 6, 6), t(3, 3.0, 12, 12)];
    let rs = super::uni::response_times(&s, PriorityOrder::RateMonotonic);
    assert_eq!(
        rs,
        vec![(0, Some(MS)), (1, Some(3 * MS)), (2, Some(10 * MS))]
    );
    assert_eq!(
        rta(&s, PriorityOrder::RateMonotonic, "x").verdict,
        Verdict::Schedulable
    );
    // U = 0.8333 > LL bound for n=3 (0.7798): LL is inconclusive where RTA is exact.
    assert_eq!(liu_layland(&s, "x").verdict, Verdict::Inconclusive);
    // τ3 with C = 4.5: R3 from 7.5 → 4.5 + 2 + 4 = 10.5 → 4.5 + 3 + 4 = 11.5 → 4.5 + 3 + 4 = 11.5
    // ≤ 12 (schedulable); with C = 5: 8 → 5 + 2 + 4 = 11 → 5 + 3 + 4 = 12 → 5 + 3 + 4 = 12 ≤ 12 OK;
    // with C = 5.5: 8.5 → 5.5 + 3 + 4 = 12.5 > 12 → miss.
    let s2 = [t(1, 1.0, 4, 4), t(2, 2.0, 6, 6), t(3, 5.0, 12, 12)];
    assert_eq!(
        rta(&s2, PriorityOrder::RateMonotonic, "x").verdict,
        Verdict::Schedulable
    );
    let s3 = [t(1, 1.0, 4, 4), t(2, 2.0, 6, 6), t(3, 5.5, 12, 12)];
    assert_eq!(
        rta(&s3, PriorityOrder::RateMonotonic, "x").verdict,
        Verdict::NotSchedulable
    );
}

#[test]
fn dm_beats_rm_on_constrained_deadlines() {
    // τ1 = (C=2, T=10, D=10), τ2 = (C=2, T=20, D=3).
    // RM: τ1 first: R2 = 2 + ⌈4/10⌉·2 = 4 > D2 = 3 → miss.
    // DM: τ2 first: R2 = 2 ≤ 3; R1 = 2 + ⌈4/20⌉·2 = 4 ≤ 10 → schedulable.
    let s = [t(1, 2.0, 10, 10), t(2, 2.0, 20, 3)];
    assert_eq!(
        rta(&s, PriorityOrder::RateMonotonic, "x").verdict,
        Verdict::NotSchedulable
    );
    assert_eq!(
        rta(&s, PriorityOrder::DeadlineMonotonic, "x").verdict,
        Verdict::Schedulable
    );
    assert_eq!(
        fp_priorities(&s, PriorityOrder::DeadlineMonotonic),
        vec![1, 0]
    );
}

#[test]
fn gfb_bound() {
    // m = 2, U_i = 0.5, 0.5, 0.4: U = 1.4, u_max = 0.5: bound = 2 − 1·0.5 = 1.5 ≥ 1.4 → schedulable.
    let a = [t(1, 5.0, 10, 10), t(2, 10.0, 20, 20), t(3, 4.0, 10, 10)];
    assert_eq!(gfb(&a, 2, "all").verdict, Verdict::Schedulable);
    // U_i = 0.9, 0.6: U = 1.5, bound = 2 − 0.9 = 1.1 < 1.5 → inconclusive (Dhall-like heavy task).
    let b = [t(1, 9.0, 10, 10), t(2, 6.0, 10, 10)];
    assert_eq!(gfb(&b, 2, "all").verdict, Verdict::Inconclusive);
    // U = 0.9·3 = 2.7 > m = 2 → infeasible.
    let c = [t(1, 9.0, 10, 10), t(2, 9.0, 10, 10), t(3, 9.0, 10, 10)];
    assert_eq!(gfb(&c, 2, "all").verdict, Verdict::NotSchedulable);
}

#[test]
fn kernel_admission_rule() {
    let lim = KernelLimits {
        limit_per_cpu: 0.95,
        fair_server_per_cpu: 0.05,
        other_bandwidth: 0.0,
    };
    // 2 CPUs: cap = (0.95 − 0.05)·2 = 1.8. Reservations 0.9 + 0.8 = 1.7 ≤ 1.8 → admitted.
    let ok = [(9 * MS, 10 * MS, 10 * MS), (16 * MS, 20 * MS, 20 * MS)];
    assert_eq!(
        kernel_admission(&ok, 2, lim, "rd").verdict,
        Verdict::Schedulable
    );
    // + 0.15 = 1.85 > 1.8 → refused (EBUSY) although < 1.9 without the fair server.
    let mut more = ok.to_vec();
    more.push((3 * MS, 20 * MS, 20 * MS));
    assert_eq!(
        kernel_admission(&more, 2, lim, "rd").verdict,
        Verdict::NotSchedulable
    );
    let nofs = KernelLimits {
        fair_server_per_cpu: 0.0,
        ..lim
    };
    assert_eq!(
        kernel_admission(&more, 2, nofs, "rd").verdict,
        Verdict::Schedulable
    );
    // runtime > deadline is refused by __checkparam_dl regardless of bandwidth.
    let bad = [(5 * MS, 4 * MS, 10 * MS)];
    assert_eq!(
        kernel_admission(&bad, 2, nofs, "rd").verdict,
        Verdict::NotSchedulable
    );
}

#[test]
fn partition_heuristics() {
    // Utilisations 0.6, 0.5, 0.4, 0.3, 0.2 (sum 2.0) on 3 CPUs with EDF capacity 1.0.
    let s = [
        t(1, 6.0, 10, 10),
        t(2, 5.0, 10, 10),
        t(3, 4.0, 10, 10),
        t(4, 3.0, 10, 10),
        t(5, 2.0, 10, 10),
    ];
    let edf = PartitionTest::Edf { capacity: 1.0 };
    // FFD: 0.6→b0; 0.5→b1 (b0 would be 1.1); 0.4→b0 (1.0); 0.3→b1 (0.8); 0.2→b1 (1.0).
    assert_eq!(
        partition(&s, 3, Fit::FirstFit, edf).unwrap(),
        vec![0, 1, 0, 1, 1]
    );
    // BFD: 0.6→b0; 0.5→b1; 0.4→b0 (fullest that fits: b0=0.6 → 1.0); 0.3→b1 (0.5 → 0.8);
    // 0.2→b1 (0.8 → 1.0).
    assert_eq!(
        partition(&s, 3, Fit::BestFit, edf).unwrap(),
        vec![0, 1, 0, 1, 1]
    );
    // WFD: 0.6→b0; 0.5→b1; 0.4→b2; 0.3→b2 (emptiest: b2=0.4 → 0.7); 0.2→b1 (0.5 → 0.7).
    assert_eq!(
        partition(&s, 3, Fit::WorstFit, edf).unwrap(),
        vec![0, 1, 2, 2, 1]
    );
    // Two CPUs at capacity 0.95: FFD 0.6→b0, 0.5→b1, 0.4→? b0 1.0 > .95, b1 0.9 → b1;
    // 0.3→b0 (0.9); 0.2→ b0 1.1, b1 1.1 → fails on task 5.
    let e = partition(&s, 2, Fit::FirstFit, PartitionTest::Edf { capacity: 0.95 }).unwrap_err();
    assert_eq!(e.task_id, 5);
    // Fixed priority with RTA as the bin test: RM on one CPU with (1,4),(2,6),(3,12) fits (R3=10).
    let fp = PartitionTest::FixedPriority {
        order: PriorityOrder::RateMonotonic,
        capacity: 1.0,
    };
    let r = [t(1, 1.0, 4, 4), t(2, 2.0, 6, 6), t(3, 3.0, 12, 12)];
    assert_eq!(partition(&r, 1, Fit::FirstFit, fp).unwrap(), vec![0, 0, 0]);
}

#[test]
fn inflation_adds_overhead() {
    // C = 1 ms + 0.5 ms inflation: U = 1.5/4 + 2.5/6 + 3.5/12 = 0.375 + 0.4167 + 0.2917 = 1.083 > 1.
    let s = [t(1, 1.0, 4, 4), t(2, 2.0, 6, 6), t(3, 3.0, 12, 12)];
    let inf = inflate(&s, MS / 2);
    assert_eq!(edf_utilisation(&inf, "x").verdict, Verdict::NotSchedulable);
}
