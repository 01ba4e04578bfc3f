//! Hand-built event sequences whose right attribution is known. Arithmetic in comments.

use super::*;
use rtscope_model::event::{Event, EventKind as K, NameTables, Vector};
use rtscope_model::record::RawSample;

const CPU: u32 = 0;
const TID: u32 = 42;

fn ev(ts: u64, kind: K) -> Event {
    Event {
        ts_ns: ts,
        cpu: CPU,
        kind,
    }
}

fn sw(ts: u64, prev: u32, prev_prio: i32, next: u32, next_prio: i32) -> Event {
    ev(
        ts,
        K::Switch {
            prev_pid: prev,
            prev_prio,
            prev_state: 0,
            next_pid: next,
            next_prio,
        },
    )
}

fn names() -> NameTables {
    let mut n = NameTables::default();
    n.comms.insert(TID, "rtscope-m0".into());
    n.comms.insert(300, "kworker/0:1".into());
    n.comms.insert(500, "stress".into());
    n.irqs.insert(11, "virtio0".into());
    n
}

fn sample(expected_ns: u64, latency_ns: u64) -> RawSample {
    RawSample {
        cpu: CPU,
        tid: TID,
        cycle: 0,
        expected_ns,
        latency_ns,
    }
}

fn one(events: &[Event], s: RawSample) -> SampleAttribution {
    let (v, _) = attribute_samples(
        events,
        &[s],
        &names(),
        &AttributionOptions::default(),
        &|_| true,
    );
    let a = v.into_iter().next().expect("one attribution");
    // The one-sweep path (samples without a timeline) explains it the same way.
    let (swept, _) = attribute_samples(
        events,
        &[s],
        &names(),
        &AttributionOptions::default(),
        &|_| false,
    );
    let mut plain = a.clone();
    plain.segments.clear();
    plain.events.clear();
    assert_eq!(swept, vec![plain], "one sweep against the window walk");
    a
}

fn part(a: &SampleAttribution, cause: &str) -> u64 {
    a.parts
        .iter()
        .find(|p| p.0 == cause)
        .map(|p| p.1)
        .unwrap_or(0)
}

fn sums(a: &SampleAttribution) {
    assert_eq!(
        a.parts.iter().map(|p| p.1).sum::<u64>(),
        a.latency_ns,
        "parts {:?}",
        a.parts
    );
    let seg: u64 = a.segments.iter().map(|s| s.end_ns - s.start_ns).sum();
    assert_eq!(seg, a.latency_ns, "segments {:?}", a.segments);
}

/// Fixture 1: the timer IRQ is delayed by another device IRQ that was running at E.
#[test]
fn timer_irq_delayed_by_another_irq() {
    let evs = vec![
        sw(0, 0, 120, 500, 120),          // "stress" (prio 120) runs
        ev(900, K::IrqEntry { irq: 11 }), // virtio0 IRQ from before E...
        ev(
            1500,
            K::IrqExit {
                irq: 11,
                handled: true,
            },
        ), // ...until 1500
        ev(
            1520,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            1600,
            K::HrtimerEntry {
                timer: 1,
                function: 2,
                now_ns: 1600,
            },
        ),
        ev(
            1650,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        ev(1700, K::HrtimerExit { timer: 1 }),
        ev(
            1750,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        sw(1800, 500, 120, TID, 0),
    ];
    let a = one(&evs, sample(1000, 1000)); // R = 2000
    assert_eq!(a.unattributed_reason, None);
    sums(&a);
    // [1000,1500) virtio0 = 500
    assert_eq!(part(&a, "irq:11:virtio0"), 500);
    // [1500,1520) nothing running but stress with the timer pending = 20
    assert_eq!(part(&a, TIMER_IRQ_DELAY), 20);
    // [1520,1750) = 230
    assert_eq!(part(&a, TIMER_HANDLER), 230);
    // [1750,1800) stress still on the CPU = 50 (prio 120 > 0: blocking)
    assert_eq!(part(&a, "thread:stress"), 50);
    assert_eq!(
        a.threads,
        vec![ThreadRan {
            pid: 500,
            comm: "stress".into(),
            prio: 120,
            ran_ns: 50,
            relation: "blocking".into()
        }]
    );
    // [1800,2000) = 200
    assert_eq!(part(&a, RETURN_TO_USER), 200);
    assert_eq!(a.anchors.handler, "vector:local_timer");
    assert_eq!(a.anchors.handler_entry_ns, Some(1520));
    assert_eq!(a.anchors.switch_in_ns, Some(1800));
}

/// Fixture 2: a lower-priority kworker holds the CPU (non-preemptible kernel section) long after
/// the on-time timer IRQ woke the thread; a TIMER softirq runs on IRQ exit.
#[test]
fn lower_priority_thread_blocking() {
    let evs = vec![
        sw(0, 0, 120, 300, 120),
        ev(
            1010,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            1050,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        ev(
            1100,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        ev(1100, K::SoftirqEntry { vec: 1 }),
        ev(1200, K::SoftirqExit { vec: 1 }),
        sw(5000, 300, 120, TID, 0),
    ];
    let a = one(&evs, sample(1000, 4100)); // R = 5100
    sums(&a);
    assert_eq!(part(&a, TIMER_IRQ_DELAY), 10); // [1000,1010)
    assert_eq!(part(&a, TIMER_HANDLER), 90); // [1010,1100)
    assert_eq!(part(&a, "softirq:TIMER"), 100); // [1100,1200)
    assert_eq!(part(&a, "thread:kworker/0:1"), 3800); // [1200,5000)
    assert_eq!(part(&a, RETURN_TO_USER), 100); // [5000,5100)
    assert_eq!(a.parts[0], ("thread:kworker/0:1".to_string(), 3800));
    assert_eq!(a.threads[0].relation, "blocking");
}

/// A blocking thread silent for 3 ms (kernel work, no events) is still the thread; silent for
/// 8 ms (two missed 4 ms ticks) it is the host.
#[test]
fn long_silence_in_a_blocking_thread() {
    let mk = |silence: u64| {
        vec![
            sw(0, 0, 120, 300, 120),
            ev(
                1000,
                K::VectorEntry {
                    vector: Vector::LocalTimer,
                },
            ),
            ev(
                1050,
                K::Waking {
                    pid: TID,
                    prio: 0,
                    target_cpu: CPU,
                },
            ),
            ev(
                1100,
                K::VectorExit {
                    vector: Vector::LocalTimer,
                },
            ),
            sw(1100 + silence, 300, 120, TID, 0),
        ]
    };
    let a = one(&mk(3_000_000), sample(1000, 3_000_200)); // R = 3_001_200
    sums(&a);
    assert_eq!(part(&a, "thread:kworker/0:1"), 3_000_000); // [1100, 3_001_100)
    assert_eq!(part(&a, NO_GUEST), 0);
    let b = one(&mk(8_000_000), sample(1000, 8_000_200));
    sums(&b);
    assert_eq!(part(&b, NO_GUEST), 8_000_000); // ≥ 6 ms busy threshold
    assert_eq!(part(&b, "thread:kworker/0:1"), 0);
}

/// Fixture 2b: a higher-priority RT thread preempts: "preempting".
#[test]
fn higher_priority_thread_preempting() {
    let evs = vec![
        sw(0, 0, 120, TID, 0),
        sw(10, TID, 0, 0, 120), // measured thread sleeps, idle
        ev(
            1000,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            1010,
            K::Waking {
                pid: 77,
                prio: -1,
                target_cpu: CPU,
            },
        ), // a DEADLINE/prio -1 task
        ev(
            1020,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        ev(
            1030,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        sw(1040, 0, 120, 77, -1),
        sw(1540, 77, -1, TID, 0),
    ];
    let a = one(&evs, sample(1000, 600)); // R = 1600
    sums(&a);
    assert_eq!(part(&a, TIMER_HANDLER), 30); // [1000,1030)
    assert_eq!(part(&a, SCHED_DELAY), 10); // [1030,1040) idle → switch
    assert_eq!(part(&a, "thread:pid77"), 500); // [1040,1540)
    assert_eq!(a.threads[0].relation, "preempting");
    assert_eq!(part(&a, RETURN_TO_USER), 60); // [1540,1600)
}

/// Fixture 3: the CPU is idle and nothing at all happens for 2 ms after E (the host did not run
/// the vCPU); then the timer IRQ, idle exit, switch.
#[test]
fn gap_with_no_events_is_no_guest_activity() {
    let evs = vec![
        sw(0, TID, 0, 0, 120),
        ev(10, K::CpuIdle { state: 1 }),
        ev(
            2_010_000,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            2_010_050,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        ev(
            2_010_100,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        ev(2_010_120, K::CpuIdle { state: u32::MAX }),
        sw(2_010_200, 0, 120, TID, 0),
    ];
    let a = one(&evs, sample(10_000, 2_000_300)); // R = 2_010_300
    sums(&a);
    // [10_000, 2_010_000) = 2_000_000 ≥ 100 µs threshold
    assert_eq!(part(&a, NO_GUEST), 2_000_000);
    assert_eq!(part(&a, TIMER_HANDLER), 100);
    // [2_010_100, 2_010_200): idle exit + schedule = 100
    assert_eq!(part(&a, SCHED_DELAY), 100);
    assert_eq!(part(&a, RETURN_TO_USER), 100);
    assert_eq!(part(&a, TIMER_IRQ_DELAY_IDLE), 0);

    // Same, but the timer IRQ comes 30 µs late: below the threshold, so it is idle exit.
    let evs2: Vec<Event> = evs
        .iter()
        .map(|e| {
            if e.ts_ns > 1000 {
                Event {
                    ts_ns: e.ts_ns - 1_970_000,
                    ..*e
                }
            } else {
                *e
            }
        })
        .collect();
    let a2 = one(&evs2, sample(10_000, 30_300));
    sums(&a2);
    assert_eq!(part(&a2, TIMER_IRQ_DELAY_IDLE), 30_000); // [10_000, 40_000)
    assert_eq!(part(&a2, NO_GUEST), 0);
}

/// The relevance filter's `Background` marker: a SCHED_OTHER thread (pid 77) runs; the timer
/// IRQ is 150 µs late. Without a marker the 150 µs stretch has no event: no guest activity.
/// With a marker [5_000, 155_000] (left-out switches/wake-ups, none further apart than 10 µs),
/// the guest ran: the whole delay is timer IRQ delay (busy). A marker that ends at 50_000 leaves
/// [50_000, 160_000) = 110 µs eventless ≥ 100 µs: no guest activity again, exactly that piece.
#[test]
fn background_marker_is_guest_activity() {
    let base = |marker: Option<(u64, u64)>| {
        let mut v = vec![sw(0, TID, 0, 77, 120)];
        if let Some((t, len)) = marker {
            v.push(ev(
                t,
                K::Background {
                    len_ns: len,
                    events: 12,
                },
            ));
        }
        v.extend([
            ev(
                160_000,
                K::VectorEntry {
                    vector: Vector::LocalTimer,
                },
            ),
            ev(
                160_050,
                K::Waking {
                    pid: TID,
                    prio: 0,
                    target_cpu: CPU,
                },
            ),
            ev(
                160_100,
                K::VectorExit {
                    vector: Vector::LocalTimer,
                },
            ),
            sw(160_200, 77, 120, TID, 0),
        ]);
        v
    };
    // E = 10_000, R = 160_300.
    let a = one(&base(None), sample(10_000, 150_300));
    sums(&a);
    assert_eq!(part(&a, NO_GUEST), 150_000); // [10_000, 160_000)
    let b = one(&base(Some((5_000, 150_000))), sample(10_000, 150_300));
    sums(&b);
    assert_eq!(part(&b, NO_GUEST), 0);
    // [10_000, 155_000) inside the marker + [155_000, 160_000) = 5 µs after it.
    assert_eq!(part(&b, TIMER_IRQ_DELAY), 150_000);
    let c = one(&base(Some((5_000, 45_000))), sample(10_000, 150_300));
    sums(&c);
    assert_eq!(part(&c, TIMER_IRQ_DELAY), 40_000); // [10_000, 50_000)
    assert_eq!(part(&c, NO_GUEST), 110_000); // [50_000, 160_000)
}

/// Late for its own sleep: the thread (TID) is on the CPU from 0 and never switches out; its
/// planned wake-up E = 10_000 passes before it calls clock_nanosleep, which returns at once:
/// no waking. Window [10_000, 400_000): IRQ 11 runs 50_000–60_000, nothing happens from 60_000
/// to 360_000 (300 µs ≥ 100 µs: no guest activity), the rest is the thread's own time:
/// [10_000, 50_000) + [360_000, 400_000) = 80_000 late_for_sleep.
#[test]
fn late_for_its_own_sleep() {
    let evs = vec![
        sw(0, 0, 120, TID, 0),
        ev(50_000, K::IrqEntry { irq: 11 }),
        ev(
            60_000,
            K::IrqExit {
                irq: 11,
                handled: true,
            },
        ),
        ev(360_000, K::IrqEntry { irq: 11 }),
        ev(
            360_000,
            K::IrqExit {
                irq: 11,
                handled: true,
            },
        ),
    ];
    let a = one(&evs, sample(10_000, 390_000));
    sums(&a);
    assert_eq!(a.unattributed_reason, None);
    assert_eq!(part(&a, LATE_FOR_SLEEP), 80_000);
    assert_eq!(part(&a, "irq:11:virtio0"), 10_000);
    assert_eq!(part(&a, NO_GUEST), 300_000);
    assert_eq!(a.anchors.waking_ns, None);
    // The same window, but the thread had switched out before E (it slept) and no waking came:
    // still unattributed, never a guess.
    let mut evs2 = evs.clone();
    evs2.push(sw(5_000, TID, 0, 0, 120));
    evs2.sort_by_key(|e| e.ts_ns);
    let b = one(&evs2, sample(10_000, 390_000));
    assert!(b.unattributed_reason.is_some());
}

/// An NMI inside the return-to-user phase is carved out by its reported duration.
#[test]
fn nmi_is_carved_out() {
    let evs = vec![
        sw(0, 0, 120, 0, 120),
        ev(
            1000,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            1010,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        ev(
            1020,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        sw(1030, 0, 120, TID, 0),
        ev(1500, K::Nmi { delta_ns: 300 }), // ran [1200,1500)
    ];
    let a = one(&evs, sample(1000, 1000)); // R = 2000
    sums(&a);
    assert_eq!(part(&a, NMI), 300);
    // [1030,2000) minus the NMI: 970 - 300 = 670
    assert_eq!(part(&a, RETURN_TO_USER), 670);
}

#[test]
fn missing_wakeup_is_unattributed_not_guessed() {
    let evs = vec![sw(0, 0, 120, 500, 120), ev(1500, K::IrqEntry { irq: 11 })];
    let a = one(&evs, sample(1000, 1000));
    // The reason names who held the CPU at E (pid 500, "stress", from the switch at 0).
    assert_eq!(
        a.unattributed_reason.as_deref(),
        Some("no sched_waking of the thread on its CPU inside the window; on the CPU at E: stress:500 prio 120")
    );
    assert_eq!(a.parts, vec![(UNATTRIBUTED.to_string(), 1000)]);
}

/// Run-level numbers on three samples (fixtures 1, 2 and 3 on one CPU, spaced apart).
#[test]
fn summary_shares_and_p99() {
    let mut evs = Vec::new();
    // Sample A at E=1000 (fixture 1 shape, latency 1000).
    evs.extend([
        sw(0, 0, 120, 500, 120),
        ev(900, K::IrqEntry { irq: 11 }),
        ev(
            1500,
            K::IrqExit {
                irq: 11,
                handled: true,
            },
        ),
        ev(
            1520,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            1650,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        ev(
            1750,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        sw(1800, 500, 120, TID, 0),
        sw(2100, TID, 0, 0, 120),
    ]);
    // Sample B at E=1_000_000: on time, idle, latency 300 (timer 100, sched 100, return 100).
    evs.extend([
        ev(
            1_000_000,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            1_000_050,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        ev(
            1_000_100,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        sw(1_000_200, 0, 120, TID, 0),
        sw(1_000_400, TID, 0, 0, 120),
    ]);
    // Sample C at E=2_000_000: 500 µs with no events, then timer 100, sched 100, return 100.
    evs.extend([
        ev(
            2_500_000,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            2_500_050,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        ev(
            2_500_100,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        sw(2_500_200, 0, 120, TID, 0),
    ]);
    let samples = vec![
        sample(1000, 1000),
        sample(1_000_000, 300),
        sample(2_000_000, 500_300),
    ];
    let opts = AttributionOptions {
        tail_threshold_ns: Some(900),
        top_n: 2,
        ..Default::default()
    };
    let r = attribute(&evs, &samples, &names(), &opts);
    let s = &r.summary;
    // p99 of {300, 1000, 500_300}, nearest rank ceil(2.97)=3 → 500_300; tail = {C}.
    assert_eq!(s.p99_latency_ns, 500_300);
    assert_eq!(s.tail_p99_samples, 1);
    assert_eq!(s.tail_threshold_samples, 2); // A and C exceed 900
    assert_eq!(s.samples_attributed, 3);
    assert_eq!(r.sum_check.violations, 0);
    let c = |name: &str| {
        s.causes
            .iter()
            .find(|c| c.cause == name)
            .cloned()
            .expect(name)
    };
    let ng = c(NO_GUEST);
    assert_eq!(ng.samples_affected, 1);
    assert_eq!(ng.total_ns, 500_000);
    // 500_000 / 500_300
    assert!((ng.tail_p99_share - 500_000.0 / 500_300.0).abs() < 1e-12);
    // Threshold tail {A, C}: latency 501_300, no-guest 500_000.
    assert!((ng.tail_threshold_share.expect("thr") - 500_000.0 / 501_300.0).abs() < 1e-12);
    assert_eq!(s.causes[0].cause, NO_GUEST);
    let th = c(TIMER_HANDLER);
    // A: 230, B: 100, C: 100 → total 430, max 230, p99 (rank 3 of [100,100,230]) = 230
    assert_eq!(
        (
            th.samples_affected,
            th.total_ns,
            th.max_ns,
            th.p99_contribution_ns
        ),
        (3, 430, 230, 230)
    );
    let irq = c("irq:11:virtio0");
    // Only sample A: contributions [0, 0, 500] → p99 rank 3 = 500.
    assert_eq!(
        (
            irq.samples_affected,
            irq.p99_contribution_ns,
            irq.tail_p99_share
        ),
        (1, 500, 0.0)
    );
    assert_eq!(r.worst.len(), 2);
    assert_eq!(r.worst[0].latency_ns, 500_300);
    assert!(!r.worst[0].segments.is_empty());
    assert_eq!(s.per_cpu_tail.len(), 1);
    assert!(
        s.per_cpu_tail[0].1.contains("no_guest_activity 100%"),
        "{}",
        s.per_cpu_tail[0].1
    );
}

/// Throughput on a synthetic run shaped like a real 1 ms timer loop (about 11 events per sample, a
/// device IRQ every 10th cycle, a blocking thread every 7th). Run on demand:
/// `cargo test --release -p rtscope-analysis attribution::tests::throughput -- --ignored --nocapture`
#[test]
#[ignore]
fn throughput() {
    let n: u64 = 200_000;
    let mut evs = Vec::with_capacity(n as usize * 14);
    let mut samples = Vec::with_capacity(n as usize);
    for i in 0..n {
        let e = 1_000_000 + i * 1_000_000;
        evs.push(sw(e - 900_000, TID, 0, 0, 120));
        evs.push(ev(e - 899_000, K::CpuIdle { state: 1 }));
        if i % 10 == 0 {
            evs.push(ev(e - 500, K::IrqEntry { irq: 11 }));
            evs.push(ev(
                e + 3_000,
                K::IrqExit {
                    irq: 11,
                    handled: true,
                },
            ));
        }
        evs.push(ev(
            e + 4_000,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ));
        evs.push(ev(
            e + 5_000,
            K::HrtimerEntry {
                timer: 1,
                function: 2,
                now_ns: 0,
            },
        ));
        evs.push(ev(
            e + 6_000,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ));
        evs.push(ev(
            e + 6_500,
            K::Wakeup {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ));
        evs.push(ev(e + 7_000, K::HrtimerExit { timer: 1 }));
        evs.push(ev(
            e + 8_000,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ));
        evs.push(ev(e + 8_500, K::CpuIdle { state: u32::MAX }));
        if i % 7 == 0 {
            evs.push(sw(e + 8_800, 0, 120, 300, 120));
            evs.push(sw(e + 9_500, 300, 120, TID, 0));
        } else {
            evs.push(sw(e + 9_500, 0, 120, TID, 0));
        }
        evs.push(ev(e + 9_800, K::SoftirqRaise { vec: 1 }));
        samples.push(RawSample {
            cpu: CPU,
            tid: TID,
            cycle: i,
            expected_ns: e,
            latency_ns: 11_000,
        });
    }
    let opts = AttributionOptions::default();
    let t0 = std::time::Instant::now();
    let r = attribute(&evs, &samples, &names(), &opts);
    let s = t0.elapsed().as_secs_f64();
    println!(
        "attribution: {} events, {} samples in {:.3} s = {:.2} M events/s",
        evs.len(),
        samples.len(),
        s,
        evs.len() as f64 / s / 1e6
    );
    assert_eq!(r.sum_check.violations, 0);
    assert_eq!(r.summary.samples_unattributed, 0);
}

/// The timer fires while the thread is still on the CPU going to sleep: no switch-in, and the
/// time after the handler is its return to user space.
#[test]
fn woken_before_leaving_the_cpu() {
    let evs = vec![
        sw(0, 0, 120, TID, 0),
        ev(
            1000,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            1010,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        ev(
            1020,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
    ];
    let a = one(&evs, sample(1000, 100)); // R = 1100
    sums(&a);
    assert_eq!(a.anchors.switch_in_ns, None);
    assert_eq!(part(&a, TIMER_HANDLER), 20); // [1000,1020)
    assert_eq!(part(&a, RETURN_TO_USER), 80); // [1020,1100)
}

/// eBPF records idle *entries* only (the exit is implied). After an idle entry, a switch to a
/// real task (pid 500, prio 120) ends the idle state: a timer IRQ that arrives late while that
/// task runs is "timer IRQ delay" (IRQs off in what ran), not idle exit.
#[test]
fn idle_entry_without_exit_ends_at_switch() {
    let evs = vec![
        sw(0, TID, 0, 0, 120),
        ev(10, K::CpuIdle { state: 1 }), // entry; no exit record follows
        sw(500, 0, 120, 500, 120),       // the idle loop was left: stress runs
        ev(
            40_000,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            40_050,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        ev(
            40_100,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        sw(40_200, 500, 120, TID, 0),
    ];
    let a = one(&evs, sample(10_000, 30_300)); // R = 40_300
    sums(&a);
    // [10_000, 40_000): the timer IRQ is 30 µs late while stress (not idle) runs.
    assert_eq!(part(&a, TIMER_IRQ_DELAY), 30_000);
    assert_eq!(part(&a, TIMER_IRQ_DELAY_IDLE), 0);
    assert_eq!(part(&a, TIMER_HANDLER), 100); // [40_000, 40_100)
                                              // [40_100, 40_200): stress holds the CPU until the switch.
    assert_eq!(a.threads.len(), 1);
    assert_eq!(a.threads[0].pid, 500);
    assert_eq!(a.threads[0].ran_ns, 100);
    assert_eq!(part(&a, RETURN_TO_USER), 100); // [40_200, 40_300)

    // Without the switch the CPU is still idle: the same 30 µs are idle exit.
    let idle: Vec<Event> = evs
        .iter()
        .filter(|e| e.ts_ns != 500)
        .copied()
        .map(|e| match e.kind {
            K::Switch { next_pid: TID, .. } => sw(40_200, 0, 120, TID, 0),
            _ => e,
        })
        .collect();
    let b = one(&idle, sample(10_000, 30_300));
    sums(&b);
    assert_eq!(part(&b, TIMER_IRQ_DELAY_IDLE), 30_000);
    assert_eq!(part(&b, TIMER_IRQ_DELAY), 0);
}

/// An unpinned (SCHED_DEADLINE) thread whose timer fired on CPU 1 and that resumed on CPU 0: the
/// waking recorded on CPU 1 (target_cpu 0) is found for the sample on CPU 0.
#[test]
fn remote_waking_from_another_cpu() {
    let on1 = |ts: u64, kind: K| Event {
        ts_ns: ts,
        cpu: 1,
        kind,
    };
    let evs = vec![
        sw(0, TID, 0, 0, 120), // CPU 0 idle
        on1(
            1_020,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        on1(
            1_050,
            K::Waking {
                pid: TID,
                prio: 0,
                target_cpu: CPU,
            },
        ),
        on1(
            1_080,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            1_100,
            K::VectorEntry {
                vector: Vector::Reschedule,
            },
        ),
        ev(
            1_130,
            K::VectorExit {
                vector: Vector::Reschedule,
            },
        ),
        sw(1_200, 0, 120, TID, 0),
    ];
    let a = one(&evs, sample(1_000, 250)); // R = 1_250
    sums(&a);
    assert!(
        a.unattributed_reason.is_none(),
        "{:?}",
        a.unattributed_reason
    );
    assert_eq!(a.anchors.handler, "remote:cpu1");
    assert_eq!(a.anchors.waking_ns, Some(1_050));
    // [1_000, 1_050): before the (remote) waking, CPU 0 idle.
    assert_eq!(part(&a, TIMER_IRQ_DELAY_IDLE), 50);
    // [1_200, 1_250): after the switch.
    assert_eq!(part(&a, RETURN_TO_USER), 50);
    // The reschedule IPI on CPU 0 [1_100, 1_130) is carved out as interference.
    assert_eq!(part(&a, "vector:reschedule"), 30);
}

/// A sample 5 ms long crossed by 5000 device interrupts: 10 000 alternating segments. Its
/// timeline keeps the first and last halves of TIMELINE_CAP and one cut segment for the middle;
/// the parts still count every nanosecond.
#[test]
fn a_long_sample_keeps_a_capped_timeline() {
    let mut evs = vec![sw(0, 0, 120, 500, 120)];
    for k in 0..5000u64 {
        evs.push(ev(1100 + 1000 * k, K::IrqEntry { irq: 11 }));
        evs.push(ev(
            1600 + 1000 * k,
            K::IrqExit {
                irq: 11,
                handled: true,
            },
        ));
    }
    let t = 1100 + 5000 * 1000;
    evs.push(ev(
        t,
        K::VectorEntry {
            vector: Vector::LocalTimer,
        },
    ));
    evs.push(ev(
        t + 50,
        K::Waking {
            pid: TID,
            prio: 0,
            target_cpu: CPU,
        },
    ));
    evs.push(ev(
        t + 100,
        K::VectorExit {
            vector: Vector::LocalTimer,
        },
    ));
    evs.push(sw(t + 200, 500, 120, TID, 0));
    // E = 1000, R = t + 400.
    let a = one(&evs, sample(1000, t + 400 - 1000));
    sums(&a);
    assert_eq!(part(&a, "irq:11:virtio0"), 5000 * 500);
    assert_eq!(a.segments.len(), TIMELINE_CAP);
    let cuts: Vec<&Segment> = a
        .segments
        .iter()
        .filter(|s| s.cause == TIMELINE_CUT)
        .collect();
    assert_eq!(cuts.len(), 1);
    assert!(
        cuts[0].detail.contains("segments left out"),
        "{}",
        cuts[0].detail
    );
    assert!(a.events.len() <= TIMELINE_CAP, "{} events", a.events.len());
    // The ends are intact: the first segment is the first IRQ's delay, the last the return.
    assert_eq!(a.segments[0].start_ns, 0);
    assert_eq!(a.segments.last().map(|s| s.end_ns), Some(a.latency_ns));
}
