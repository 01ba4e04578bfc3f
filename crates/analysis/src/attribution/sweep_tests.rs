//! The one-sweep attribution against the per-window walk ([`super::attribute_one`], the naive
//! reference the timelines use): on random small captures with heavily overlapping windows,
//! nested and lost interrupt frames, equal timestamps, remote wake-ups and idle, every sample
//! must get the same parts, anchors, threads and reason.

use super::*;
use rtscope_model::event::{Event, EventKind as K, NameTables, Vector, IDLE_EXIT};
use rtscope_model::record::RawSample;
use rtscope_model::rng::Rng;

const PIDS: [u32; 5] = [0, 10, 11, 12, 13];

fn names() -> NameTables {
    let mut n = NameTables::default();
    n.comms.insert(10, "rtscope-m0".into());
    n.comms.insert(11, "rtscope-m1".into());
    // Two threads with one name: two parts of one name.
    n.comms.insert(12, "stress".into());
    n.comms.insert(13, "stress".into());
    n.irqs.insert(1, "virtio0".into());
    n
}

fn kind(rng: &mut Rng, n_cpus: u32) -> K {
    let pid = PIDS[rng.index(PIDS.len())];
    let prio = [-1, 0, 50, 120][rng.index(4)];
    let vector = [Vector::LocalTimer, Vector::Reschedule][rng.index(2)];
    let irq = rng.range(1, 4) as u32;
    match rng.below(16) {
        0 | 1 => K::Switch {
            prev_pid: PIDS[rng.index(PIDS.len())],
            prev_prio: prio,
            prev_state: 0,
            next_pid: pid,
            next_prio: [-1, 0, 50, 120][rng.index(4)],
        },
        2 | 3 => K::Waking {
            pid,
            prio,
            target_cpu: rng.below(n_cpus as u64) as u32,
        },
        4 => K::IrqEntry { irq },
        5 => K::IrqExit { irq, handled: true },
        6 => K::SoftirqEntry { vec: irq },
        7 => K::SoftirqExit { vec: irq },
        8 | 9 => K::VectorEntry { vector },
        10 | 11 => K::VectorExit { vector },
        12 => K::Nmi {
            delta_ns: rng.range(0, 300),
        },
        13 => K::CpuIdle {
            state: [0, 1, IDLE_EXIT][rng.index(3)],
        },
        14 => K::Background {
            len_ns: rng.range(0, 2_000),
            events: 2,
        },
        _ => K::HrtimerExit { timer: 1 },
    }
}

/// Random events (many at equal timestamps, some long silences) and samples whose windows
/// overlap each other and the whole capture.
fn gen(rng: &mut Rng) -> (Vec<Event>, Vec<RawSample>, AttributionOptions) {
    let n_cpus = rng.range(1, 3) as u32;
    let n_events = rng.range(0, 120) as usize;
    let mut ev = Vec::with_capacity(n_events);
    let mut t = 0u64;
    for _ in 0..n_events {
        t += match rng.below(10) {
            0..=2 => 0,
            3..=7 => rng.range(1, 200),
            _ => rng.range(200, 5_000),
        };
        ev.push(Event {
            ts_ns: t,
            cpu: rng.below(n_cpus as u64) as u32,
            kind: kind(rng, n_cpus),
        });
    }
    let n_samples = rng.range(1, 30) as usize;
    let samples = (0..n_samples)
        .map(|c| RawSample {
            cpu: rng.below(n_cpus as u64 + 1) as u32,
            tid: PIDS[rng.range(1, PIDS.len() as u64) as usize],
            cycle: c as u64,
            expected_ns: rng.range(0, t + 100),
            latency_ns: match rng.below(5) {
                0 => 0,
                1 => t + 1_000,
                _ => rng.range(1, 4_000),
            },
        })
        .collect();
    let opts = AttributionOptions {
        gap_threshold_ns: rng.range(50, 2_000),
        busy_gap_threshold_ns: rng.range(0, 4_000),
        top_n: 0,
        ..Default::default()
    };
    (ev, samples, opts)
}

fn without_timeline(mut a: SampleAttribution) -> SampleAttribution {
    a.segments.clear();
    a.events.clear();
    a
}

#[test]
fn one_sweep_matches_the_walk_on_random_captures() {
    let names = names();
    let mut rng = Rng::new(0x5eed_2926);
    let mut attributed = 0;
    for case in 0..3_000 {
        let (ev, samples, opts) = gen(&mut rng);
        let (swept, gaps_a) = attribute_samples(&ev, &samples, &names, &opts, &|_| false);
        let (walked, gaps_b) = attribute_samples(&ev, &samples, &names, &opts, &|_| true);
        assert_eq!(gaps_a, gaps_b);
        assert_eq!(swept.len(), samples.len());
        for (i, (a, b)) in swept.into_iter().zip(walked).enumerate() {
            attributed += usize::from(a.unattributed_reason.is_none());
            assert_eq!(
                a,
                without_timeline(b),
                "case {case} sample {i}: {:?}\nevents {ev:?}",
                samples[i]
            );
        }
    }
    // The generator reaches the attributed paths, not only "no waking".
    assert!(attributed > 1_000, "{attributed} samples attributed");
}

/// Every window spans every event: each sample is still attributed (no walk limit), each the
/// same as the first.
#[test]
fn windows_over_the_whole_capture_are_all_attributed() {
    let names = names();
    let mut ev = vec![Event {
        ts_ns: 0,
        cpu: 0,
        kind: K::Switch {
            prev_pid: 10,
            prev_prio: 0,
            prev_state: 1,
            next_pid: 0,
            next_prio: 120,
        },
    }];
    for k in 0..20_000u64 {
        ev.push(Event {
            ts_ns: 100 + k * 10,
            cpu: 0,
            kind: if k % 2 == 0 {
                K::IrqEntry { irq: 1 }
            } else {
                K::IrqExit {
                    irq: 1,
                    handled: true,
                }
            },
        });
    }
    ev.push(Event {
        ts_ns: 300_000,
        cpu: 0,
        kind: K::Waking {
            pid: 10,
            prio: 0,
            target_cpu: 0,
        },
    });
    let samples: Vec<RawSample> = (0..5_000)
        .map(|c| RawSample {
            cpu: 0,
            tid: 10,
            cycle: c,
            expected_ns: 50 + c % 7,
            latency_ns: 400_000,
        })
        .collect();
    let opts = AttributionOptions::default();
    let (all, _) = attribute_samples(&ev, &samples, &names, &opts, &|_| false);
    assert_eq!(all.len(), samples.len());
    for a in &all {
        assert_eq!(a.unattributed_reason, None);
        assert_eq!(a.parts.iter().map(|p| p.1).sum::<u64>(), a.latency_ns);
        assert!(a
            .parts
            .iter()
            .any(|p| p.0 == "irq:1:virtio0" && p.1 == 100_000));
    }
}
