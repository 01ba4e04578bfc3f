//! Hand-checked schedules of the thesis' examples (1 time unit = 1 ms = 1000 µs), the isolation
//! property, invariants (proptest), validation, and the sched_switch → schedule conversion.

use super::*;
use proptest::prelude::*;
use rtscope_model::event::{Event, EventKind};
use rtscope_model::mbwi::*;

const MS: u64 = 1000;

/// (cpu, task, server, start ms, end ms, inherited from, spinning)
type Seg = (
    u32,
    &'static str,
    &'static str,
    u64,
    u64,
    Option<&'static str>,
    bool,
);

fn segs(r: &SimResult) -> Vec<Seg> {
    let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    r.segments
        .iter()
        .map(|s| {
            (
                s.cpu,
                leak(&s.task),
                leak(&s.server),
                s.start_us / MS,
                s.end_us / MS,
                s.inherited_from.as_deref().map(leak),
                s.spinning,
            )
        })
        .collect()
}

fn task<'a>(r: &'a SimResult, name: &str) -> &'a SimTaskResult {
    r.tasks.iter().find(|t| t.name == name).unwrap()
}

fn misses(r: &SimResult) -> Vec<(&str, u32)> {
    r.tasks
        .iter()
        .map(|t| (t.name.as_str(), t.misses))
        .collect()
}

fn events_of(r: &SimResult, kind: SimEventKind) -> Vec<(u64, &str)> {
    r.events
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| (e.t_us / MS, e.task.as_str()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Fig. 4.2

/// Derivation (2 CPUs, global EDF; deadlines dA = 2+34 = 36, dB = 3+30 = 33, dC = 0+60 = 60):
/// * 0: τC alone → CPU0; computes 0–1, locks M1 at 1.
/// * 2: τA (36) takes the free CPU1.
/// * 3: τB (33) preempts the latest deadline, τC (60) on CPU0: τC is the lock owner, not
///   executing, at 5 — as the thesis says.
/// * 6: τB (3 ms of compute done) locks M1 → blocks; τC is not executing, so τB's server runs
///   τC (inherits budget and deadline 33) on CPU0.
/// * 9: τA (7 ms done) locks M1; the owner τC executes on CPU0 → τA's server busy-waits on CPU1.
/// * 14: τC's critical section ends (2 ms before 3 + 8 ms from 6); FIFO wakes τB, which runs in
///   its own server; τA keeps spinning, now on τB.
/// * 18: τB unlocks (4 ms); τA acquires and runs its critical section 18–20; τC gets CPU0 back
///   and finishes its last 1 ms at 19.
///
/// Budgets: SB pays 3 + 8 + 4 = 15 ≤ 16, SA 7 + 9 (spin) + 2 = 18 ≤ 20: nobody is throttled.
#[test]
fn fig4_2_mbwi_schedule() {
    let r = simulate(&fig4_2(), MbwiProtocol::Mbwi).unwrap();
    assert_eq!(
        segs(&r),
        vec![
            (0, "tauC", "tauC", 0, 3, None, false),
            (0, "tauB", "tauB", 3, 6, None, false),
            (0, "tauC", "tauB", 6, 14, Some("tauB"), false),
            (0, "tauB", "tauB", 14, 18, None, false),
            (0, "tauC", "tauC", 18, 19, None, false),
            (1, "tauA", "tauA", 2, 9, None, false),
            (1, "tauA", "tauA", 9, 18, None, true),
            (1, "tauA", "tauA", 18, 20, None, false),
        ]
    );
    assert_eq!(
        events_of(&r, SimEventKind::LockAcquire),
        vec![(1, "tauC"), (14, "tauB"), (18, "tauA")]
    );
    assert_eq!(
        events_of(&r, SimEventKind::LockRequest),
        vec![(1, "tauC"), (6, "tauB"), (9, "tauA")]
    );
    assert_eq!(task(&r, "tauB").jobs[0].blocked_us, 8 * MS);
    assert_eq!(task(&r, "tauA").jobs[0].blocked_us, 9 * MS);
    assert_eq!(task(&r, "tauA").jobs[0].spin_us, 9 * MS);
    assert_eq!(task(&r, "tauC").jobs[0].finish_us, Some(19 * MS));
    assert!(r.tasks.iter().all(|t| t.misses == 0));
    assert!(events_of(&r, SimEventKind::Throttle).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Fig. 4.3

/// Derivation (τ1, τ3 on CPU0, τ2 on CPU1; d1 = 24, d2 = 10, d3 = 3 + 8 = 11):
/// * 0: τ1 locks M on CPU0; τ2 computes on CPU1.
/// * 2: τ2 locks M → blocks; the thesis' implementation lends τ1 τ2's server (deadline 10,
///   budget 9 − 2 = 7) but τ1 keeps its own affinity, CPU0.
/// * 3: τ3 arrives (11): it cannot preempt τ1 (10) — d2 < d3 < d1 — and CPU1 idles.
/// * 6: τ1 unlocks (6 ms of critical section) and ends; τ2 runs 6–7 on CPU1.
/// * 6–12: τ3 runs its 6 ms and misses its deadline at 11 (finishes at 12).
#[test]
fn fig4_3_impl_misses_at_11() {
    let r = simulate(&fig4_3(), MbwiProtocol::MbwiImpl).unwrap();
    assert_eq!(
        segs(&r),
        vec![
            (0, "tau1", "tau1", 0, 2, None, false),
            (0, "tau1", "tau2", 2, 6, Some("tau2"), false),
            (0, "tau3", "tau3", 6, 12, None, false),
            (1, "tau2", "tau2", 0, 2, None, false),
            (1, "tau2", "tau2", 6, 7, None, false),
        ]
    );
    assert_eq!(misses(&r), vec![("tau1", 0), ("tau2", 0), ("tau3", 1)]);
    assert_eq!(events_of(&r, SimEventKind::Miss), vec![(11, "tau3")]);
    assert!(!task(&r, "tau3").interacts, "τ3 is independent");
}

/// Full M-BWI on the same set: at 2 the owner τ1 is executing (in its own server on CPU0), so
/// τ2's server busy-waits on CPU1 (§4.2.5). At 3 τ3 (11) takes CPU0 from τ1's server (24); τ1
/// is no longer executing, so τ2's spinning server runs it — on CPU1, the server's CPU — for the
/// remaining 3 ms of its critical section. τ2 then runs 6–7; τ3 runs 3–9: nobody misses.
#[test]
fn fig4_3_mbwi_isolates_tau3() {
    let r = simulate(&fig4_3(), MbwiProtocol::Mbwi).unwrap();
    assert_eq!(
        segs(&r),
        vec![
            (0, "tau1", "tau1", 0, 3, None, false),
            (0, "tau3", "tau3", 3, 9, None, false),
            (1, "tau2", "tau2", 0, 2, None, false),
            (1, "tau2", "tau2", 2, 3, None, true),
            (1, "tau1", "tau2", 3, 6, Some("tau2"), false),
            (1, "tau2", "tau2", 6, 7, None, false),
        ]
    );
    assert!(r.tasks.iter().all(|t| t.misses == 0));
    assert_eq!(task(&r, "tau2").jobs[0].blocked_us, 4 * MS);
    assert_eq!(task(&r, "tau2").jobs[0].spin_us, MS);
}

/// Mainline on Fig. 4.3's set: τ1 is boosted at 2 (pi_se → τ2) but keeps its own absolute
/// deadline (24), so τ3 (11) preempts it at 3 — deadline inheritance the kernel does not do —
/// and τ2 waits until τ1's critical section ends at 12: τ2 misses, τ3 does not.
#[test]
fn fig4_3_mainline_keeps_holder_deadline() {
    let r = simulate(&fig4_3(), MbwiProtocol::Mainline).unwrap();
    assert_eq!(events_of(&r, SimEventKind::Boost), vec![(2, "tau1")]);
    let boost = r
        .events
        .iter()
        .find(|e| e.kind == SimEventKind::Boost)
        .unwrap();
    assert_eq!(boost.server.as_deref(), Some("tau2"));
    assert_eq!(
        segs(&r),
        vec![
            (0, "tau1", "tau1", 0, 2, None, false),
            (0, "tau1", "tau1", 2, 3, Some("tau2"), false),
            (0, "tau3", "tau3", 3, 9, None, false),
            (0, "tau1", "tau1", 9, 12, Some("tau2"), false),
            (1, "tau2", "tau2", 0, 2, None, false),
            (1, "tau2", "tau2", 12, 13, None, false),
        ]
    );
    assert_eq!(misses(&r), vec![("tau1", 0), ("tau2", 1), ("tau3", 0)]);
}

// ---------------------------------------------------------------------------------------------
// Fig. 4.4

/// Derivation (τ1 on CPU0; τ2, τ3 on CPU1; d2 = 10, d3 = 3 + 6 = 9):
/// * 2: τ2 blocks; the holder τ1 inherits τ2's server *and affinity* and moves to CPU1
///   (2 ms of its critical section done on CPU0).
/// * 3: τ3 (9 < 10) preempts τ1 on CPU1; CPU0 idles, yet τ1 may not run there: 3–7.
/// * 7–10: τ1 finishes its critical section (3 ms) in τ2's server, which is then empty.
/// * 10: τ2 gets the lock; its server's replenishment instant (10 − 10 + 10) is now, so it runs
///   10–11 and misses its deadline 10.
#[test]
fn fig4_4_impl_affinity_misses() {
    let r = simulate(&fig4_4(), MbwiProtocol::MbwiImplAffinity).unwrap();
    assert_eq!(
        segs(&r),
        vec![
            (0, "tau1", "tau1", 0, 2, None, false),
            (1, "tau2", "tau2", 0, 2, None, false),
            (1, "tau1", "tau2", 2, 3, Some("tau2"), false),
            (1, "tau3", "tau3", 3, 7, None, false),
            (1, "tau1", "tau2", 7, 10, Some("tau2"), false),
            (1, "tau2", "tau2", 10, 11, None, false),
        ]
    );
    assert_eq!(misses(&r), vec![("tau1", 0), ("tau2", 1), ("tau3", 0)]);
    assert_eq!(task(&r, "tau2").jobs[0].blocked_us, 8 * MS);
    assert!(r.segments.iter().all(|s| s.cpu != 0 || s.end_us <= 2 * MS));
}

/// Full M-BWI: τ1 keeps executing on CPU0 in its own server (τ2 spins 2–3, then τ3 preempts the
/// spinning server); τ1 unlocks at 6 and τ2 runs 7–8 after τ3: no miss.
#[test]
fn fig4_4_mbwi_no_miss() {
    let r = simulate(&fig4_4(), MbwiProtocol::Mbwi).unwrap();
    assert_eq!(
        segs(&r),
        vec![
            (0, "tau1", "tau1", 0, 6, None, false),
            (1, "tau2", "tau2", 0, 2, None, false),
            (1, "tau2", "tau2", 2, 3, None, true),
            (1, "tau3", "tau3", 3, 7, None, false),
            (1, "tau2", "tau2", 7, 8, None, false),
        ]
    );
    assert!(r.tasks.iter().all(|t| t.misses == 0));
}

/// The inherit-bandwidth-not-affinity variant also fails on Fig. 4.4's set (τ1 empties τ2's
/// server on CPU0 by 6, τ2 waits for the replenishment at 10), and the inherit-affinity variant
/// does not fail on Fig. 4.3's: each example breaks exactly the variant the thesis names.
#[test]
fn each_variant_fails_its_figure() {
    let m = |ex: &str, p| {
        misses(&simulate(&example(ex).unwrap(), p).unwrap())
            .iter()
            .map(|x| x.1)
            .sum::<u32>()
    };
    assert_eq!(m("fig4.3", MbwiProtocol::MbwiImpl), 1);
    assert_eq!(m("fig4.3", MbwiProtocol::MbwiImplAffinity), 0);
    assert_eq!(m("fig4.4", MbwiProtocol::MbwiImplAffinity), 1);
    assert_eq!(m("fig4.4", MbwiProtocol::MbwiImpl), 1);
    for ex in ["fig4.2", "fig4.3", "fig4.4"] {
        assert_eq!(m(ex, MbwiProtocol::Mbwi), 0, "{ex}");
    }
}

// ---------------------------------------------------------------------------------------------
// The kernel experiment's set, τ3 overrunning inside its critical section (tick 0)

/// τ3 (Q 8, P 72) locks A at 1; τ1 (d 26) arrives at 2 and blocks; τ2 (d 28) preempts τ3 at 4
/// and runs 4–9; τ3 has used 4 ms by 4 and 4 more in 9–13: its budget is gone at 13 with 5 ms
/// of critical section left.
/// * none: τ3 is throttled until 72, runs 72–76, τ2 (released 76) 76–81, τ3 81–82 unlocks:
///   τ1 blocked 2–82 = 80 ms, misses.
/// * mainline: τ3 is boosted at 2 (τ1's deadline is earlier); at 13 it is refilled with τ1's
///   runtime and its deadline pushed by τ1's period (72 + 24), unthrottled; it unlocks at 18:
///   τ1 blocked 16 ms, runs 18–23, meets 26.
/// * M-BWI: τ3 runs in τ1's server from 2; τ2 cannot preempt it (26 < 28) until τ1's server is
///   empty at 8 (throttled to 26); τ2 8–13; τ3 in its own server 13–18 unlocks: τ1 blocked
///   16 ms but its budget went to τ3 — it runs 26–31 and misses.
///
/// τ2, which shares nothing, never misses under any of the three.
#[test]
fn overrun_holder_first_hyperperiod() {
    let set = one_cpu_overrun(0, 72 * MS);
    let job0 = |p| {
        let r = simulate(&set, p).unwrap();
        let j = task(&r, "tau1").jobs[0].clone();
        (j.blocked_us / MS, j.finish_us.map(|f| f / MS), j.missed)
    };
    assert_eq!(job0(MbwiProtocol::Mainline), (16, Some(23), false));
    assert_eq!(job0(MbwiProtocol::Mbwi), (16, Some(31), true));
    let set = one_cpu_overrun(0, 100 * MS);
    let r = simulate(&set, MbwiProtocol::None).unwrap();
    let j = &task(&r, "tau1").jobs[0];
    assert_eq!(
        (j.blocked_us / MS, j.finish_us.map(|f| f / MS), j.missed),
        (80, Some(87), true)
    );
    let r = simulate(&set, MbwiProtocol::Mainline).unwrap();
    assert_eq!(
        events_of(&r, SimEventKind::Replenish).first(),
        Some(&(13, "tau3")),
        "the boosted holder is refilled at exhaustion, not throttled"
    );
    assert!(!events_of(&r, SimEventKind::Throttle).contains(&(13, "tau3")));
}

/// Isolation (§4.2.4): over 2 s of the overrun set, with the kernel's 4 ms tick, the independent
/// τ2 never misses under none, mainline or M-BWI, while the interacting τ3 does.
#[test]
fn independent_task_isolated_while_holder_overruns() {
    for tick in [0, 4000] {
        let set = one_cpu_overrun(tick, 2_000 * MS);
        for p in [
            MbwiProtocol::None,
            MbwiProtocol::Mainline,
            MbwiProtocol::Mbwi,
        ] {
            let r = simulate(&set, p).unwrap();
            assert_eq!(task(&r, "tau2").misses, 0, "{} tick {tick}", p.name());
            assert!(task(&r, "tau2").jobs.len() >= 80);
            assert!(task(&r, "tau3").misses > 0, "{} tick {tick}", p.name());
        }
    }
}

/// A holder that overruns its WCET in one job only (job_scripts): M-BWI confines the damage to
/// the interacting pair; the independent task on the same CPU keeps every deadline.
#[test]
fn one_overrunning_job() {
    let mut set = one_cpu(0, 720 * MS);
    set.tasks[2].job_scripts = vec![JobScript {
        job: 3,
        script: vec![
            Segment::ComputeUs(MS),
            Segment::Lock("A".into()),
            Segment::ComputeUs(40 * MS),
            Segment::Unlock("A".into()),
        ],
    }];
    for p in [
        MbwiProtocol::None,
        MbwiProtocol::Mainline,
        MbwiProtocol::Mbwi,
    ] {
        let r = simulate(&set, p).unwrap();
        assert_eq!(task(&r, "tau2").misses, 0, "{}", p.name());
        assert!(
            task(&r, "tau1").misses + task(&r, "tau3").misses > 0,
            "{}",
            p.name()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Validation

fn bad(f: impl FnOnce(&mut MbwiTaskSet)) -> String {
    let mut s = fig4_2();
    f(&mut s);
    match simulate(&s, MbwiProtocol::Mbwi) {
        Err(MbwiError::Spec(m)) => m,
        other => panic!("expected a spec error, got {other:?}"),
    }
}

#[test]
fn validation_names_field_and_range() {
    assert!(bad(|s| s.tasks[0].runtime_us = 40 * MS).contains("tasks[0] (tauA).runtime_us"));
    assert!(bad(|s| s.tasks[0].runtime_us = 40 * MS).contains("1..=period_us"));
    assert!(bad(|s| s.tasks[1].deadline_us = Some(31 * MS)).contains("deadline_us"));
    assert!(bad(|s| s.tasks[1].period_us = 0).contains("period_us: 0 is out of range"));
    assert!(bad(|s| s.cpus = 0).starts_with("cpus: 0"));
    assert!(bad(|s| s.tasks[2].affinity = vec![2]).contains("affinity: CPU 2"));
    let m = bad(|s| s.tasks[0].script = vec![Segment::Unlock("M1".into())]);
    assert!(
        m.contains("tasks[0] (tauA).script[0].unlock") && m.contains("not held"),
        "{m}"
    );
    let m = bad(|s| s.tasks[0].script = vec![Segment::Lock("M1".into())]);
    assert!(m.contains("still held"), "{m}");
    let m = bad(|s| {
        s.tasks[0].script = vec![
            Segment::Lock("A".into()),
            Segment::Lock("B".into()),
            Segment::Unlock("B".into()),
            Segment::Unlock("A".into()),
        ];
        s.tasks[1].script = vec![
            Segment::Lock("B".into()),
            Segment::Lock("A".into()),
            Segment::Unlock("A".into()),
            Segment::Unlock("B".into()),
        ];
    });
    assert!(m.contains("A → B → A") || m.contains("B → A → B"), "{m}");
    assert!(bad(|s| s.tasks[1].name = "tauA".into()).contains("unique"));
    assert!(bad(|s| s.tasks[0].script = vec![Segment::ComputeUs(0)]).contains("compute_us: 0"));
}

#[test]
fn spec_parses_from_json() {
    let j = r#"{"cpus": 1, "horizon_us": 100000, "tasks": [
        {"name": "a", "runtime_us": 1000, "period_us": 10000,
         "script": [{"compute_us": 500}, {"lock": "m"}, {"compute_us": 200}, {"unlock": "m"}]}]}"#;
    let s: MbwiTaskSet = serde_json::from_str(j).unwrap();
    assert_eq!(s.tasks[0].script[1], Segment::Lock("m".into()));
    let r = simulate(&s, MbwiProtocol::Mbwi).unwrap();
    assert_eq!(task(&r, "a").jobs.len(), 10);
    assert!(serde_json::from_str::<MbwiTaskSet>(&j.replace("runtime_us", "runtime")).is_err());
}

// ---------------------------------------------------------------------------------------------
// sched_switch → schedule

fn sw(ts: u64, cpu: u32, prev: u32, next: u32) -> Event {
    Event {
        ts_ns: ts,
        cpu,
        kind: EventKind::Switch {
            prev_pid: prev,
            prev_prio: -1,
            prev_state: 0,
            next_pid: next,
            next_prio: -1,
        },
    }
}

#[test]
fn switches_to_segments() {
    let tids = [(10u32, "tau1".to_string()), (11, "tau2".to_string())]
        .into_iter()
        .collect();
    let ev = vec![
        sw(1000, 0, 0, 10),
        sw(1500, 1, 0, 99),
        sw(2000, 0, 10, 11),
        sw(2500, 1, 99, 0),
        sw(3000, 0, 11, 10),
        sw(4000, 0, 10, 10), // a switch to itself does not split the stretch
        sw(9000, 0, 10, 0),
    ];
    let s = schedule_from_switches(&ev, &tids, 1200, 8000, 1000);
    let got: Vec<(u32, &str, u64, u64)> = s
        .iter()
        .map(|x| (x.cpu, x.task.as_str(), x.start_ns, x.end_ns))
        .collect();
    assert_eq!(
        got,
        vec![
            (0, "tau1", 200, 1000),
            (0, "tau2", 1000, 2000),
            (0, "tau1", 2000, 7000),
            (1, "other", 500, 1500),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Invariants

fn arb_set() -> impl Strategy<Value = (MbwiTaskSet, MbwiProtocol)> {
    let task = (
        1u64..=6,                                        // Q ms
        4u64..=20,                                       // P ms (≥ Q after clamping)
        0u64..=5,                                        // offset ms
        prop::collection::vec((0u8..3, 1u64..=6), 1..5), // steps: 0 compute, 1 cs on A, 2 cs on B
        0u32..4,                                         // affinity pattern
    );
    (
        1u32..=3,
        prop::collection::vec(task, 1..5),
        prop::sample::select(MbwiProtocol::ALL.to_vec()),
        prop::sample::select(vec![0u64, 1000, 4000]),
    )
        .prop_map(|(cpus, ts, proto, tick)| {
            let tasks = ts
                .into_iter()
                .enumerate()
                .map(|(i, (q, p, off, steps, aff))| {
                    let mut script = Vec::new();
                    for (kind, ms) in steps {
                        match kind {
                            0 => script.push(Segment::ComputeUs(ms * MS)),
                            k => {
                                let m = if k == 1 { "A" } else { "B" };
                                script.push(Segment::Lock(m.into()));
                                script.push(Segment::ComputeUs(ms * MS));
                                script.push(Segment::Unlock(m.into()));
                            }
                        }
                    }
                    let affinity = match aff {
                        0 => vec![],
                        1 => vec![0],
                        2 => vec![(i as u32) % cpus],
                        _ => (0..cpus).filter(|c| c % 2 == 0).collect(),
                    };
                    MbwiTask {
                        name: format!("t{i}"),
                        runtime_us: q.min(p) * MS,
                        period_us: p * MS,
                        deadline_us: None,
                        affinity,
                        offset_us: off * MS,
                        jobs: None,
                        script,
                        job_scripts: vec![],
                    }
                })
                .collect();
            (
                MbwiTaskSet {
                    cpus,
                    horizon_us: 120 * MS,
                    tick_us: tick,
                    tasks,
                },
                proto,
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn schedule_invariants((set, proto) in arb_set()) {
        let (r, min_budget) = simulate_min_budget(&set, proto).unwrap();
        // Budgets never go below zero by a tick or more.
        if set.tick_us == 0 {
            prop_assert!(min_budget >= 0, "budget {min_budget}");
        } else {
            prop_assert!(min_budget > -(set.tick_us as i64), "budget {min_budget}");
        }
        for s in &r.segments {
            prop_assert!(s.start_us < s.end_us && s.end_us <= set.horizon_us);
        }
        // One thing per CPU at a time.
        for w in r.segments.windows(2) {
            if w[0].cpu == w[1].cpu {
                prop_assert!(w[0].end_us <= w[1].start_us, "{:?} overlaps {:?}", w[0], w[1]);
            }
        }
        // A task executes on one CPU at a time; a server pays for one CPU at a time.
        for a in 0..r.segments.len() {
            for b in a + 1..r.segments.len() {
                let (x, y) = (&r.segments[a], &r.segments[b]);
                let overlap = x.start_us < y.end_us && y.start_us < x.end_us;
                if overlap {
                    prop_assert!(x.server != y.server, "{x:?} and {y:?} share a server");
                    prop_assert!(x.spinning || y.spinning || x.task != y.task, "{x:?} {y:?}");
                }
            }
        }
        // Mutual exclusion: acquisitions and unlocks of a mutex alternate, by the same task.
        let mut owner: std::collections::BTreeMap<String, String> = Default::default();
        for e in &r.events {
            match e.kind {
                SimEventKind::LockAcquire => {
                    let m = e.mutex.clone().unwrap();
                    prop_assert!(!owner.contains_key(&m), "{m} acquired twice at {}", e.t_us);
                    owner.insert(m, e.task.clone());
                }
                SimEventKind::Unlock => {
                    let m = e.mutex.clone().unwrap();
                    prop_assert_eq!(owner.remove(&m), Some(e.task.clone()));
                }
                _ => {}
            }
        }
        // A finished job executed exactly its script's compute time.
        for (i, t) in r.tasks.iter().enumerate() {
            let spec = &set.tasks[i];
            for j in t.jobs.iter().filter(|j| j.finish_us.is_some()) {
                let want: u64 = spec.script_of(j.job).iter().map(|s| match s {
                    Segment::ComputeUs(c) => *c,
                    _ => 0,
                }).sum();
                let f = j.finish_us.unwrap();
                let ran: u64 = r.segments.iter()
                    .filter(|s| s.task == t.name && !s.spinning)
                    .map(|s| s.end_us.min(f).saturating_sub(s.start_us.max(j.release_us)))
                    .sum();
                prop_assert_eq!(ran, want, "{} job {}", t.name, j.job);
                prop_assert_eq!(j.missed, f > j.deadline_us);
            }
        }
    }

    /// Temporal isolation on one CPU (thesis §4.2.4): with Σ Q/P ≤ 1, a task that shares no
    /// mutex and stays within its budget never misses, however the interacting tasks overrun.
    #[test]
    fn isolation_one_cpu(
        indep in prop::collection::vec((1u64..=4, 10u64..=30), 1..3),
        inter in prop::collection::vec((1u64..=4, 10u64..=40, 1u64..=30, 0u64..=3), 2..4),
        proto in prop::sample::select(vec![MbwiProtocol::None, MbwiProtocol::Mbwi, MbwiProtocol::MbwiImpl]),
    ) {
        let mut tasks = Vec::new();
        let mut u = 0.0;
        for (i, (q, p)) in indep.iter().enumerate() {
            u += *q as f64 / *p as f64;
            tasks.push(MbwiTask {
                name: format!("i{i}"), runtime_us: q * MS, period_us: p * MS, deadline_us: None,
                affinity: vec![], offset_us: i as u64 * MS, jobs: None,
                script: vec![Segment::ComputeUs(q * MS)], job_scripts: vec![],
            });
        }
        for (i, (q, p, cs, pre)) in inter.iter().enumerate() {
            u += *q as f64 / *p as f64;
            // The critical section may be far longer than the budget: a misbehaving task.
            let mut script = vec![];
            if *pre > 0 { script.push(Segment::ComputeUs(pre * MS)); }
            script.extend([Segment::Lock("A".into()), Segment::ComputeUs(cs * MS), Segment::Unlock("A".into())]);
            tasks.push(MbwiTask {
                name: format!("x{i}"), runtime_us: q * MS, period_us: p * MS, deadline_us: None,
                affinity: vec![], offset_us: (i as u64 * 3) * MS, jobs: None,
                script, job_scripts: vec![],
            });
        }
        prop_assume!(u <= 1.0);
        let set = MbwiTaskSet { cpus: 1, horizon_us: 400 * MS, tick_us: 0, tasks };
        let r = simulate(&set, proto).unwrap();
        for t in r.tasks.iter().filter(|t| t.name.starts_with('i')) {
            prop_assert_eq!(t.misses, 0, "{} under {}", t.name, proto.name());
        }
    }
}
