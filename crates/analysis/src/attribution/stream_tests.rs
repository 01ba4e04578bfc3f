//! The streaming attribution against the batch oracle: the same events and samples, delivered in
//! random pieces with random watermarks that keep the caller's promise, must give every sample
//! the batch's attribution and the batch's exact figures; the bucketed ones must lie within the
//! resolution the summary states. Plus late input, the event cap, late thread names and the
//! memory bound.

use super::online::{bucket_high, bucket_of};
use super::*;
use proptest::prelude::*;
use rtscope_model::event::{Event, EventKind as K, NameTables, Vector};
use rtscope_model::record::RawSample;

use rtscope_model::rng::Rng;

const RT_HOG: u32 = 77;
const KWORKER: u32 = 300;
const STRESS: u32 = 500;

fn names() -> NameTables {
    let mut n = NameTables::default();
    for c in 0..8 {
        n.comms.insert(1000 + c, format!("rtscope-m{c}"));
    }
    n.comms.insert(KWORKER, "kworker/0:1".into());
    n.comms.insert(STRESS, "stress".into());
    n.comms.insert(RT_HOG, "rt-hog".into());
    n.irqs.insert(11, "virtio0".into());
    n
}

fn opts(top_n: usize) -> AttributionOptions {
    AttributionOptions {
        gap_threshold_ns: 20_000,
        busy_gap_threshold_ns: 50_000,
        tail_threshold_ns: Some(30_000),
        top_n,
        lost_per_cpu: vec![(1, 3)],
        steal_ns_per_cpu: vec![(0, 40_000)],
    }
}

fn sw(cpu: u32, ts: u64, prev: u32, prev_prio: i32, next: u32, next_prio: i32) -> Event {
    Event {
        ts_ns: ts,
        cpu,
        kind: K::Switch {
            prev_pid: prev,
            prev_prio,
            prev_state: 0,
            next_pid: next,
            next_prio,
        },
    }
}

fn at(cpu: u32, ts: u64, kind: K) -> Event {
    Event {
        ts_ns: ts,
        cpu,
        kind,
    }
}

fn prio_of(pid: u32) -> i32 {
    match pid {
        RT_HOG => -1,
        0 | KWORKER | STRESS => 120,
        _ => 0,
    }
}

/// A run shaped like `rtscope run` on `n_cpus` CPUs with a 200 µs period: per cycle the measured
/// thread sleeps (to idle or to a SCHED_OTHER thread), device IRQs, softirqs, NMIs, `Background`
/// markers and eventless stretches fall around E, the timer IRQ wakes it (sometimes from another
/// CPU, sometimes with the waking or the switch-in lost), a higher-priority thread may preempt, a
/// lower one may hold the CPU; now and then the thread is late for its own sleep. Some runs add
/// a CPU with events and no samples and a CPU with a sample and no events.
fn gen_run(rng: &mut Rng, n_cpus: u32, cycles: usize) -> (Vec<Event>, Vec<RawSample>) {
    let mut ev: Vec<Event> = Vec::new();
    let mut samples = Vec::new();
    for c in 0..n_cpus {
        let tid = 1000 + c;
        let mut t = rng.range(0, 5_000);
        ev.push(sw(c, t, 0, 120, tid, 0));
        let mut current = tid;
        let mut e = t + rng.range(20_000, 200_000);
        for cycle in 0..cycles as u64 {
            let late = cycle > 0 && rng.chance(0.06);
            if !late {
                t += rng.range(0, 3_000);
                if t + 1_000 >= e {
                    e = t + rng.range(1_000, 20_000);
                }
                let next = match rng.range(0, 20) {
                    0..=11 => 0,
                    12..=16 => STRESS,
                    _ => KWORKER,
                };
                ev.push(sw(c, t, current, prio_of(current), next, prio_of(next)));
                current = next;
                if next == 0 {
                    t += rng.range(0, 300);
                    ev.push(at(c, t, K::CpuIdle { state: 1 }));
                }
                if rng.chance(0.1) {
                    // A `Background` marker: the guest ran events the filter left out.
                    let s = rng.range(t, e + 1);
                    ev.push(at(
                        c,
                        s,
                        K::Background {
                            len_ns: rng.range(0, 120_000),
                            events: 3,
                        },
                    ));
                }
            }
            // Noise around E: a device IRQ that may straddle it, a softirq, an NMI.
            let mut a = t.max(e.saturating_sub(5_000));
            if rng.chance(0.2) {
                a += rng.range(0, 4_000);
                ev.push(at(c, a, K::IrqEntry { irq: 11 }));
                a += rng.range(0, 15_000);
                ev.push(at(
                    c,
                    a,
                    K::IrqExit {
                        irq: 11,
                        handled: true,
                    },
                ));
            }
            if rng.chance(0.1) {
                a += rng.range(0, 2_000);
                ev.push(at(c, a, K::SoftirqEntry { vec: 3 }));
                a += rng.range(0, 3_000);
                ev.push(at(c, a, K::SoftirqExit { vec: 3 }));
            }
            if rng.chance(0.08) {
                let d = rng.range(0, 3_000);
                a += d + rng.range(0, 1_000);
                ev.push(at(c, a, K::Nmi { delta_ns: d }));
            }
            t = a.max(e);
            let r;
            if late {
                // No sleep, no waking: the planned wake-up passed while it still ran.
                t += rng.range(0, 2_000);
                if rng.chance(0.5) {
                    ev.push(at(c, t, K::IrqEntry { irq: 11 }));
                    t += rng.range(0, 5_000);
                    ev.push(at(
                        c,
                        t,
                        K::IrqExit {
                            irq: 11,
                            handled: true,
                        },
                    ));
                }
                r = t + rng.range(1, 40_000);
            } else {
                // The timer IRQ: on time, a little late, or after a silence of the host.
                t += match rng.range(0, 10) {
                    0 => rng.range(20_000, 150_000),
                    1..=2 => rng.range(2_000, 10_000),
                    _ => rng.range(0, 1_500),
                };
                let remote = n_cpus > 1 && rng.chance(0.12);
                let lose_waking = rng.chance(0.04);
                if remote {
                    let o = (c + 1) % n_cpus;
                    t += rng.range(0, 500);
                    if !lose_waking {
                        ev.push(at(
                            o,
                            t,
                            K::Waking {
                                pid: tid,
                                prio: 0,
                                target_cpu: c,
                            },
                        ));
                    }
                    let v = Vector::Reschedule;
                    t += rng.range(0, 1_000);
                    ev.push(at(c, t, K::VectorEntry { vector: v }));
                    t += rng.range(0, 500);
                    ev.push(at(c, t, K::VectorExit { vector: v }));
                } else {
                    let v = Vector::LocalTimer;
                    ev.push(at(c, t, K::VectorEntry { vector: v }));
                    t += rng.range(0, 300);
                    ev.push(at(
                        c,
                        t,
                        K::HrtimerEntry {
                            timer: 1,
                            function: 2,
                            now_ns: 0,
                        },
                    ));
                    t += rng.range(0, 300);
                    if !lose_waking {
                        ev.push(at(
                            c,
                            t,
                            K::Waking {
                                pid: tid,
                                prio: 0,
                                target_cpu: c,
                            },
                        ));
                    }
                    t += rng.range(0, 200);
                    ev.push(at(c, t, K::HrtimerExit { timer: 1 }));
                    t += rng.range(0, 300);
                    ev.push(at(c, t, K::VectorExit { vector: v }));
                    if rng.chance(0.2) {
                        ev.push(at(c, t, K::SoftirqEntry { vec: 1 }));
                        t += rng.range(0, 4_000);
                        ev.push(at(c, t, K::SoftirqExit { vec: 1 }));
                    }
                }
                let preempt = rng.chance(0.1);
                if current == 0 {
                    if rng.chance(0.7) {
                        t += rng.range(0, 500);
                        ev.push(at(c, t, K::CpuIdle { state: u32::MAX }));
                    }
                } else if rng.chance(0.5) {
                    // The SCHED_OTHER thread holds the CPU, now and then silent for longer than
                    // the busy gap threshold.
                    t += if rng.chance(0.15) {
                        rng.range(50_000, 90_000)
                    } else {
                        rng.range(0, 20_000)
                    };
                }
                if preempt {
                    t += rng.range(0, 1_000);
                    ev.push(sw(c, t, current, prio_of(current), RT_HOG, -1));
                    current = RT_HOG;
                    t += rng.range(1_000, 10_000);
                }
                t += rng.range(100, 2_000);
                if !rng.chance(0.03) {
                    ev.push(sw(c, t, current, prio_of(current), tid, 0));
                }
                current = tid;
                let back = rng.range(300, 3_000);
                if rng.chance(0.08) {
                    let d = rng.range(0, back);
                    ev.push(at(c, t + back, K::Nmi { delta_ns: d }));
                }
                r = t + back;
            }
            samples.push(RawSample {
                cpu: c,
                tid,
                cycle,
                expected_ns: e,
                latency_ns: r - e,
            });
            t = r;
            e += 200_000;
            if e <= t + 2_000 {
                // Overran its period: the next planned wake-up may pass before it sleeps.
                e = t + rng.range(0, 3_000);
            }
        }
    }
    if rng.chance(0.3) {
        // A CPU with traffic and no measured thread.
        let c = n_cpus;
        let mut t = 0;
        for _ in 0..cycles * 3 {
            t += rng.range(0, 80_000);
            ev.push(sw(c, t, STRESS, 120, KWORKER, 120));
            t += rng.range(0, 80_000);
            ev.push(sw(c, t, KWORKER, 120, STRESS, 120));
        }
    }
    if rng.chance(0.2) {
        // A sample on a CPU without any event: unattributed, and no steal line.
        samples.push(RawSample {
            cpu: 7,
            tid: 1007,
            cycle: 0,
            expected_ns: rng.range(0, 100_000),
            latency_ns: rng.range(0, 10_000),
        });
    }
    (ev, samples)
}

/// What the streaming run produced.
struct Streamed {
    /// The events and samples in the order they were pushed: the batch's input.
    events: Vec<Event>,
    samples: Vec<RawSample>,
    /// Per sample (arrival index) its streaming attribution.
    each: Vec<Option<SampleAttribution>>,
    kept: Vec<KeptWindow>,
    result: AttributionResult,
    heap_max: usize,
}

/// Deliver `events` (any order; split per CPU and time-sorted, as per-CPU ring buffers hand them
/// over) and `samples` (per CPU in order of E, as each measurement thread delivers them) in
/// random pieces, each events batch shuffled, with watermarks chosen at random below every event
/// not yet delivered (an NMI counts from its start), and every sample with E below a watermark
/// delivered before it.
fn stream(
    events: &[Event],
    samples: &[RawSample],
    opts: &AttributionOptions,
    lookback: u64,
    rng: &mut Rng,
    max_batch: usize,
) -> Streamed {
    let names = names();
    let mut cpus: Vec<u32> = events
        .iter()
        .map(|e| e.cpu)
        .chain(samples.iter().map(|s| s.cpu))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut ev_q: Vec<Vec<Event>> = cpus
        .iter()
        .map(|&c| {
            let mut v: Vec<Event> = events.iter().filter(|e| e.cpu == c).copied().collect();
            v.sort_by_key(|e| e.ts_ns);
            v
        })
        .collect();
    // Earliest time each event affects (an NMI: its start), as suffix minima per CPU.
    let suffix_min: Vec<Vec<u64>> = ev_q
        .iter()
        .map(|v| {
            let mut m = vec![u64::MAX; v.len() + 1];
            for i in (0..v.len()).rev() {
                let eff = match v[i].kind {
                    K::Nmi { delta_ns } => v[i].ts_ns.saturating_sub(delta_ns),
                    _ => v[i].ts_ns,
                };
                m[i] = m[i + 1].min(eff);
            }
            m
        })
        .collect();
    let mut s_q: Vec<Vec<RawSample>> = cpus
        .iter()
        .map(|&c| {
            let mut v: Vec<RawSample> = samples.iter().filter(|s| s.cpu == c).copied().collect();
            v.sort_by_key(|s| s.expected_ns);
            v
        })
        .collect();
    for q in ev_q.iter_mut() {
        q.reverse();
    }
    for q in s_q.iter_mut() {
        q.reverse();
    }
    let mut out = Streamed {
        events: Vec::new(),
        samples: Vec::new(),
        each: vec![None; samples.len()],
        kept: Vec::new(),
        result: attribute(&[], &[], &names, opts),
        heap_max: 0,
    };
    let mut st = StreamingAttribution::new(opts.clone(), lookback);
    let mut w = 0u64;
    let mut each = |seq: u64, a: &SampleAttribution| {
        let mut a = a.clone();
        a.segments.clear();
        a.events.clear();
        assert!(
            out.each[seq as usize].replace(a).is_none(),
            "sample {seq} explained twice"
        );
    };
    let mut kept = Vec::new();
    loop {
        let left: Vec<usize> = (0..cpus.len()).filter(|&i| !ev_q[i].is_empty()).collect();
        if left.is_empty() {
            break;
        }
        let mut batch = Vec::new();
        for _ in 0..rng.range(1, 4) {
            let i = left[rng.range(0, left.len() as u64) as usize];
            for _ in 0..rng.range(1, max_batch as u64 + 1) {
                if let Some(e) = ev_q[i].pop() {
                    batch.push(e);
                }
            }
        }
        for i in (1..batch.len()).rev() {
            batch.swap(i, rng.range(0, i as u64 + 1) as usize);
        }
        st.push_events(&batch);
        out.events.extend_from_slice(&batch);
        let allowed = (0..cpus.len())
            .map(|i| suffix_min[i][suffix_min[i].len() - 1 - ev_q[i].len()])
            .min()
            .unwrap_or(u64::MAX);
        let next_w = if rng.chance(0.3) {
            w
        } else {
            rng.range(w, allowed.max(w).saturating_add(1))
                .min(allowed.max(w))
        };
        // Samples: every one with E below the new watermark, and a few more.
        for q in s_q.iter_mut() {
            let mut piece = Vec::new();
            while q
                .last()
                .is_some_and(|s| s.expected_ns < next_w || rng.chance(0.1))
            {
                piece.extend(q.pop());
            }
            st.push_samples(&piece);
            out.samples.extend_from_slice(&piece);
        }
        w = next_w;
        st.advance_observed(w, &names, &mut |k| kept.push(k), &mut each);
        out.heap_max = out.heap_max.max(st.heap_bytes());
        if rng.chance(0.05) {
            let snap = st.snapshot(&names);
            assert_eq!(
                snap.summary.samples_attributed + snap.summary.samples_unattributed,
                st.samples_explained()
            );
        }
    }
    for q in s_q.iter_mut() {
        let piece: Vec<RawSample> = q.drain(..).rev().collect();
        st.push_samples(&piece);
        out.samples.extend_from_slice(&piece);
    }
    assert_eq!(st.late_events(), 0);
    out.result = st.finish_observed(&names, &mut |k| kept.push(k), &mut each);
    out.kept = kept;
    out
}

/// Stream the run and hold every figure against the batch on the same input.
fn check_against_batch(
    events: &[Event],
    samples: &[RawSample],
    opts: &AttributionOptions,
    lookback: u64,
    rng: &mut Rng,
    max_batch: usize,
) {
    let names = names();
    let s = stream(events, samples, opts, lookback, rng, max_batch);
    assert_eq!(s.samples.len(), samples.len());
    let batch = attribute(&s.events, &s.samples, &names, opts);
    let (plain, _) = attribute_samples(&s.events, &s.samples, &names, opts, &|_| false);
    let (timed, _) = attribute_samples(&s.events, &s.samples, &names, opts, &|_| true);
    let r = &s.result;

    // Every sample: the batch's attribution.
    for (i, b) in plain.iter().enumerate() {
        assert_eq!(s.each[i].as_ref(), Some(b), "sample {i}");
    }
    // Exact figures.
    let (bs, ss) = (&batch.summary, &r.summary);
    assert_eq!(ss.samples_attributed, bs.samples_attributed);
    assert_eq!(ss.samples_unattributed, bs.samples_unattributed);
    assert_eq!(ss.tail_threshold_samples, bs.tail_threshold_samples);
    assert_eq!(ss.lost_events, bs.lost_events);
    assert_eq!(r.sum_check, batch.sum_check);
    assert_eq!(r.steal_check, batch.steal_check);
    assert_eq!(r.samples_on_lossy_cpus, batch.samples_on_lossy_cpus);
    assert_eq!(r.worst, batch.worst, "worst samples with their timelines");
    assert_eq!(ss.worst, bs.worst);
    assert_eq!(ss.causes.len(), bs.causes.len());
    assert_eq!(ss.p99_relative_resolution, Some(ONLINE_RELATIVE_RESOLUTION));
    assert_eq!(bs.p99_relative_resolution, None);

    // p99: the HDR histogram's of the same samples (the record's engine): in
    // [exact, exact · (1 + 1/1024)], and in the exact p99's tail bucket.
    let p99 = bs.p99_latency_ns;
    let b99 = bucket_of(p99);
    let mut hdr = rtscope_model::Histogram::new();
    for x in &s.samples {
        hdr.record(x.latency_ns);
    }
    assert_eq!(ss.p99_latency_ns, hdr.quantile_ns(0.99).unwrap_or(0));
    assert!(ss.p99_latency_ns >= p99);
    assert!((ss.p99_latency_ns - p99) as f64 <= p99 as f64 / 1024.0);
    assert_eq!(bucket_of(ss.p99_latency_ns), b99);
    // The tail: the exact tail T plus the samples X of the p99's bucket below the p99.
    let in_x = |lat: u64| bucket_of(lat) == b99 && lat < p99;
    let x_n = s.samples.iter().filter(|x| in_x(x.latency_ns)).count() as u64;
    let x_lat: u64 = s
        .samples
        .iter()
        .filter(|x| in_x(x.latency_ns))
        .map(|x| x.latency_ns)
        .sum();
    let t_lat: u64 = s
        .samples
        .iter()
        .filter(|x| x.latency_ns >= p99)
        .map(|x| x.latency_ns)
        .sum();
    if !s.samples.is_empty() {
        assert_eq!(ss.tail_p99_samples, bs.tail_p99_samples + x_n);
    }
    // A cause's share of T ∪ X differs from its share of T by at most
    // latency(X) / latency(T ∪ X): its contribution to X lies in [0, latency(X)].
    let tol = if x_lat > 0 {
        x_lat as f64 / (t_lat + x_lat) as f64
    } else {
        0.0
    } + 1e-12;
    for bc in &bs.causes {
        let sc = ss
            .causes
            .iter()
            .find(|c| c.cause == bc.cause)
            .unwrap_or_else(|| panic!("cause {} missing", bc.cause));
        assert_eq!(
            (sc.samples_affected, sc.total_ns, sc.max_ns),
            (bc.samples_affected, bc.total_ns, bc.max_ns),
            "{}",
            bc.cause
        );
        assert_eq!(
            sc.tail_threshold_share, bc.tail_threshold_share,
            "{}",
            bc.cause
        );
        let want = if bc.p99_contribution_ns == 0 {
            0
        } else {
            bucket_high(bucket_of(bc.p99_contribution_ns)).min(bc.max_ns)
        };
        assert_eq!(sc.p99_contribution_ns, want, "{}", bc.cause);
        assert!(
            (sc.tail_p99_share - bc.tail_p99_share).abs() <= tol,
            "{}: {} vs {} (tolerance {tol})",
            bc.cause,
            sc.tail_p99_share,
            bc.tail_p99_share
        );
    }

    // Kept windows: each the batch's timeline and the CPU's events from E − lookback to R.
    let by_cpu = split_by_cpu(&s.events);
    for k in &s.kept {
        let i = s
            .samples
            .iter()
            .position(|x| *x == k.sample)
            .expect("kept sample was pushed");
        assert_eq!(k.attribution, timed[i], "kept sample {i}");
        assert!(!k.reasons.is_empty());
        assert_eq!(k.from_ns, k.sample.expected_ns.saturating_sub(lookback));
        assert_eq!(k.to_ns, k.sample.expected_ns + k.sample.latency_ns);
        let want: Vec<Event> = by_cpu
            .get(&k.sample.cpu)
            .map(|ce| {
                (0..ce.ts.len())
                    .filter(|&j| ce.ts[j] >= k.from_ns && ce.ts[j] <= k.to_ns)
                    .filter_map(|j| ev_out(ce.slice(), j, k.sample.cpu))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(k.events, want, "kept sample {i} events");
    }
    // Every final worst sample was kept as such, and every cause's largest contribution too.
    for w in &batch.worst {
        assert!(
            s.kept
                .iter()
                .any(|k| k.attribution == *w && k.reasons.iter().any(|r| r == "worst-n")),
            "worst sample at {} not kept",
            w.expected_ns
        );
    }
    for bc in &bs.causes {
        let reason = format!("worst-of:{}", bc.cause);
        assert!(
            s.kept.iter().any(|k| k.reasons.contains(&reason)
                && k.attribution
                    .parts
                    .iter()
                    .any(|p| p.0 == bc.cause && p.1 == bc.max_ns)),
            "no kept window holds the largest {}",
            bc.cause
        );
    }
}

/// The fixtures of `tests.rs` (fixtures 1–3 of `summary_shares_and_p99`, the NMI, the
/// `Background` marker, late for its own sleep, the remote waking), as one two-CPU run.
fn fixtures() -> (Vec<Event>, Vec<RawSample>) {
    let (c0, c1) = (0u32, 1u32);
    let tid = 1000;
    let v = |vector| K::VectorEntry { vector };
    let x = |vector| K::VectorExit { vector };
    let wk = |target_cpu| K::Waking {
        pid: tid,
        prio: 0,
        target_cpu,
    };
    let lt = Vector::LocalTimer;
    let ev = vec![
        // A: timer IRQ delayed by virtio0, stress blocking (latency 1000).
        sw(c0, 0, 0, 120, STRESS, 120),
        at(c0, 900, K::IrqEntry { irq: 11 }),
        at(
            c0,
            1500,
            K::IrqExit {
                irq: 11,
                handled: true,
            },
        ),
        at(c0, 1520, v(lt)),
        at(c0, 1650, wk(c0)),
        at(c0, 1750, x(lt)),
        sw(c0, 1800, STRESS, 120, tid, 0),
        sw(c0, 2100, tid, 0, 0, 120),
        // B: on time from idle (300).
        at(c0, 1_000_000, v(lt)),
        at(c0, 1_000_050, wk(c0)),
        at(c0, 1_000_100, x(lt)),
        sw(c0, 1_000_200, 0, 120, tid, 0),
        sw(c0, 1_000_400, tid, 0, 0, 120),
        // C: 500 µs without events (500_300).
        at(c0, 2_500_000, v(lt)),
        at(c0, 2_500_050, wk(c0)),
        at(c0, 2_500_100, x(lt)),
        sw(c0, 2_500_200, 0, 120, tid, 0),
        // An NMI [3_001_200, 3_001_500) on the return to user space (1000).
        sw(c0, 3_000_000, tid, 0, 0, 120),
        at(c0, 3_001_000, v(lt)),
        at(c0, 3_001_010, wk(c0)),
        at(c0, 3_001_020, x(lt)),
        sw(c0, 3_001_030, 0, 120, tid, 0),
        at(c0, 3_001_500, K::Nmi { delta_ns: 300 }),
        // Late for its own sleep (390_000) with virtio0 inside.
        at(c0, 4_050_000, K::IrqEntry { irq: 11 }),
        at(
            c0,
            4_060_000,
            K::IrqExit {
                irq: 11,
                handled: true,
            },
        ),
        // The timer IRQ 150 µs late while stress runs inside a `Background` marker.
        sw(c0, 5_000_000, tid, 0, STRESS, 120),
        at(
            c0,
            5_005_000,
            K::Background {
                len_ns: 150_000,
                events: 12,
            },
        ),
        at(c0, 5_160_000, v(lt)),
        at(c0, 5_160_050, wk(c0)),
        at(c0, 5_160_100, x(lt)),
        sw(c0, 5_160_200, STRESS, 120, tid, 0),
        // Remote waking: the thread on CPU 1 resumes after a waking issued on CPU 0.
        sw(c1, 0, 1001, 0, 0, 120),
        at(
            c0,
            6_001_050,
            K::Waking {
                pid: 1001,
                prio: 0,
                target_cpu: c1,
            },
        ),
        at(c1, 6_001_100, v(Vector::Reschedule)),
        at(c1, 6_001_130, x(Vector::Reschedule)),
        sw(c1, 6_001_200, 0, 120, 1001, 0),
    ];
    let s = |cpu, tid, e, lat| RawSample {
        cpu,
        tid,
        cycle: 0,
        expected_ns: e,
        latency_ns: lat,
    };
    let samples = vec![
        s(c0, tid, 1000, 1000),
        s(c0, tid, 1_000_000, 300),
        s(c0, tid, 2_000_000, 500_300),
        s(c0, tid, 3_001_000, 1000),
        s(c0, tid, 4_010_000, 390_000),
        s(c0, tid, 5_010_000, 150_300),
        s(c1, 1001, 6_001_000, 250),
    ];
    (ev, samples)
}

#[test]
fn fixtures_match_batch() {
    let (ev, samples) = fixtures();
    for seed in 0..40 {
        let mut rng = Rng::new(seed);
        let lookback = [0, 2_000, 1_000_000][seed as usize % 3];
        let top_n = [0, 2, 10][(seed as usize / 3) % 3];
        let o = AttributionOptions {
            tail_threshold_ns: Some(900),
            top_n,
            ..Default::default()
        };
        check_against_batch(&ev, &samples, &o, lookback, &mut rng, 1 + seed as usize % 5);
    }
}

#[test]
fn random_runs_match_batch() {
    for seed in 0..24u64 {
        let mut rng = Rng::new(seed);
        let n_cpus = 1 + (seed % 3) as u32;
        let (ev, samples) = gen_run(&mut rng, n_cpus, 150);
        let lookback = [0, 10_000, 300_000][seed as usize % 3];
        check_against_batch(
            &ev,
            &samples,
            &opts(5),
            lookback,
            &mut rng,
            1 + seed as usize % 40,
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn small_streams_match_batch(
        seed in any::<u64>(),
        n_cpus in 1u32..=3,
        cycles in 1usize..14,
        lookback in prop::sample::select(vec![0u64, 5_000, 100_000, 10_000_000]),
        top_n in 0usize..5,
        max_batch in 1usize..10,
    ) {
        let mut rng = Rng::new(seed);
        let (ev, samples) = gen_run(&mut rng, n_cpus, cycles);
        check_against_batch(&ev, &samples, &opts(top_n), lookback, &mut rng, max_batch);
    }
}

/// An event below the watermark is counted and dropped; the rest goes on.
#[test]
fn late_events_are_counted_and_dropped() {
    let names = names();
    let mut st = StreamingAttribution::new(opts(3), 10_000);
    let tid = 1000;
    st.push_events(&[sw(0, 0, 0, 120, tid, 0), sw(0, 10, tid, 0, 0, 120)]);
    st.push_samples(&[RawSample {
        cpu: 0,
        tid,
        cycle: 0,
        expected_ns: 1_000,
        latency_ns: 500,
    }]);
    assert_eq!(st.advance(1_000, &names, &mut |_| {}), 0);
    assert_eq!(st.pending_samples(), 1);
    // Below the watermark 1_000: too late (the waking at 999 and a remote one at 500).
    st.push_events(&[
        at(
            0,
            999,
            K::Waking {
                pid: tid,
                prio: 0,
                target_cpu: 0,
            },
        ),
        at(
            1,
            500,
            K::Waking {
                pid: tid,
                prio: 0,
                target_cpu: 0,
            },
        ),
    ]);
    assert_eq!(st.late_events(), 2);
    // In time: the rest of the wake-up.
    st.push_events(&[
        at(
            0,
            1_100,
            K::Waking {
                pid: tid,
                prio: 0,
                target_cpu: 0,
            },
        ),
        sw(0, 1_200, 0, 120, tid, 0),
    ]);
    let mut kept = Vec::new();
    assert_eq!(st.advance(2_000, &names, &mut |k| kept.push(k)), 1);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].attribution.anchors.waking_ns, Some(1_100));
    // Events before the watermark 2_000 − lookback are gone; the late one left no trace.
    let r = st.finish(&names, &mut |_| {});
    assert_eq!(r.summary.samples_attributed, 1);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.starts_with("2 kernel events arrived below")));
    // An NMI whose start lies below the watermark is counted and placed at its start.
    let mut st = StreamingAttribution::new(opts(3), 0);
    st.advance(5_000, &names, &mut |_| {});
    st.push_events(&[at(0, 5_100, K::Nmi { delta_ns: 400 })]);
    assert_eq!(st.buffered_events(), 2);
    let r = st.snapshot(&names);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("NMIs began below the watermark")));
}

/// A sample arriving after its CPU's events before E were folded is still explained (from the
/// state at the oldest buffered event), and counted.
#[test]
fn late_sample_is_explained_and_counted() {
    let names = names();
    let mut st = StreamingAttribution::new(opts(3), 0);
    let tid = 1000;
    st.push_events(&[sw(0, 0, 0, 120, tid, 0), sw(0, 10, tid, 0, 0, 120)]);
    st.push_events(&[at(
        0,
        20_000,
        K::Waking {
            pid: tid,
            prio: 0,
            target_cpu: 0,
        },
    )]);
    st.advance(30_000, &names, &mut |_| {});
    assert_eq!(st.buffered_events(), 0);
    st.push_samples(&[RawSample {
        cpu: 0,
        tid,
        cycle: 0,
        expected_ns: 15_000,
        latency_ns: 6_000,
    }]);
    assert_eq!(st.advance(40_000, &names, &mut |_| {}), 1);
    let r = st.finish(&names, &mut |_| {});
    assert_eq!(r.sum_check.samples_checked, 1);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("1 samples arrived after")));
}

/// A thread that runs late delivers its sample after the watermark passed its window: with the
/// caller's floor (no sample still to come has E below it) the events stay, and the sample is
/// explained exactly, not late; the floor holds events back at most `MAX_SAMPLE_WAIT_NS`.
#[test]
fn sample_floor_keeps_events_for_a_late_thread() {
    let names = names();
    let tid = 1000;
    let evs = [
        sw(0, 0, 0, 120, tid, 0),
        sw(0, 10, tid, 0, 0, 120),
        at(
            0,
            20_000,
            K::Waking {
                pid: tid,
                prio: 0,
                target_cpu: 0,
            },
        ),
        sw(0, 21_000, 0, 120, tid, 0),
    ];
    let sample = RawSample {
        cpu: 0,
        tid,
        cycle: 0,
        expected_ns: 15_000,
        latency_ns: 6_500,
    };
    let mut st = StreamingAttribution::new(opts(3), 0);
    st.set_sample_floor(15_000);
    st.push_events(&evs);
    st.advance(30_000, &names, &mut |_| {});
    assert_eq!(st.buffered_events(), 2, "events from the floor on stay");
    st.push_samples(&[sample]);
    assert_eq!(st.advance(40_000, &names, &mut |_| {}), 1);
    let r = st.finish(&names, &mut |_| {});
    assert!(
        !r.warnings
            .iter()
            .any(|w| w.contains("samples arrived after")),
        "{:?}",
        r.warnings
    );
    // The same sample explained by the batch over the same events: identical parts.
    let mut batch = StreamingAttribution::new(opts(3), 0);
    batch.push_events(&evs);
    batch.push_samples(&[sample]);
    let b = batch.finish(&names, &mut |_| {});
    assert_eq!(r.summary.causes, b.summary.causes);

    // A floor far behind the watermark (a thread that stopped) keeps at most the wait.
    let mut st = StreamingAttribution::new(opts(3), 0);
    st.set_sample_floor(0);
    let w = 3 * stream::MAX_SAMPLE_WAIT_NS;
    st.push_events(&[
        at(0, 10, K::IrqEntry { irq: 11 }),
        at(
            0,
            20,
            K::IrqExit {
                irq: 11,
                handled: true,
            },
        ),
        at(0, w - 10, K::IrqEntry { irq: 11 }),
        at(
            0,
            w - 5,
            K::IrqExit {
                irq: 11,
                handled: true,
            },
        ),
    ]);
    st.advance(w, &names, &mut |_| {});
    assert_eq!(st.buffered_events(), 2);
}

/// With a lookback far longer than the traffic, the context kept before the oldest pending
/// sample stops at `MAX_LOOKBACK_EVENTS`, and a kept window says where its events begin.
#[test]
fn lookback_is_capped_by_count() {
    let names = names();
    let mut st = StreamingAttribution::new(opts(3), u64::MAX / 2);
    let n = stream::MAX_LOOKBACK_EVENTS as u64 * 3;
    let noise: Vec<Event> = (0..n)
        .flat_map(|i| {
            [
                at(0, i * 100, K::IrqEntry { irq: 11 }),
                at(
                    0,
                    i * 100 + 50,
                    K::IrqExit {
                        irq: 11,
                        handled: true,
                    },
                ),
            ]
        })
        .collect();
    st.push_events(&noise);
    st.advance(n * 100, &names, &mut |_| {});
    assert_eq!(st.buffered_events(), stream::MAX_LOOKBACK_EVENTS);
    let e = n * 100 + 1_000;
    st.push_events(&[
        at(
            0,
            e + 10,
            K::Waking {
                pid: 1000,
                prio: 0,
                target_cpu: 0,
            },
        ),
        sw(0, e + 20, 0, 120, 1000, 0),
    ]);
    st.push_samples(&[RawSample {
        cpu: 0,
        tid: 1000,
        cycle: 0,
        expected_ns: e,
        latency_ns: 30,
    }]);
    let mut kept = Vec::new();
    st.advance(e + 100, &names, &mut |k| kept.push(k));
    assert_eq!(kept.len(), 1);
    let k = &kept[0];
    assert!(k.from_ns > 0 && k.from_ns <= k.events[0].ts_ns);
    assert_eq!(k.events.len(), stream::MAX_LOOKBACK_EVENTS + 2);
}

/// Causes named before the thread's name was known are renamed (and merged) at the end.
#[test]
fn thread_named_after_the_fact() {
    let tid = 1000;
    let mut early = names();
    early.comms.remove(&STRESS);
    let evs = vec![
        sw(0, 0, 0, 120, STRESS, 120),
        at(
            0,
            1_010,
            K::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        at(
            0,
            1_050,
            K::Waking {
                pid: tid,
                prio: 0,
                target_cpu: 0,
            },
        ),
        at(
            0,
            1_100,
            K::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        sw(0, 5_000, STRESS, 120, tid, 0),
    ];
    let sample = RawSample {
        cpu: 0,
        tid,
        cycle: 0,
        expected_ns: 1_000,
        latency_ns: 4_100,
    };
    let mut st = StreamingAttribution::new(opts(3), 0);
    st.push_events(&evs);
    st.push_samples(&[sample]);
    let mut kept = Vec::new();
    st.advance(10_000, &early, &mut |k| kept.push(k));
    assert!(kept[0]
        .reasons
        .contains(&"worst-of:thread:pid500".to_string()));
    assert_eq!(
        st.dominant_tail_cause(),
        Some(("thread:pid500".to_string(), 3_900.0 / 4_100.0))
    );
    let r = st.finish(&names(), &mut |_| {});
    let batch = attribute(&evs, &[sample], &names(), &opts(3));
    assert_eq!(r.summary.causes[0].cause, "thread:stress");
    assert_eq!(r.worst, batch.worst);
    assert_eq!(r.summary.worst, batch.summary.worst);
}

/// Memory does not grow with the run: the state after 100 k samples and after the whole run
/// (2 M samples on 2 CPUs in release; 1 M in a debug build, where 2 M take ~15 s alone) differs
/// by less than 2 %.
#[test]
fn memory_is_independent_of_run_length() {
    let names = names();
    let total: u64 = if cfg!(debug_assertions) {
        1_000_000
    } else {
        2_000_000
    };
    let mut st = StreamingAttribution::new(opts(10), 2_000_000);
    let mut rng = Rng::new(7);
    let mut evs = Vec::with_capacity(64);
    let mut samples = Vec::with_capacity(2);
    let mut at_100k = 0usize;
    let period = 1_000_000u64;
    let mut explained = 0u64;
    for i in 0..total / 2 {
        evs.clear();
        samples.clear();
        for cpu in 0..2u32 {
            let tid = 1000 + cpu;
            let e = (i + 2) * period + u64::from(cpu) * 300_000;
            evs.push(sw(cpu, e - 300_000, tid, 0, 0, 120));
            evs.push(at(cpu, e - 299_000, K::CpuIdle { state: 1 }));
            let mut t = e;
            if rng.chance(0.1) {
                evs.push(at(cpu, e - 500, K::IrqEntry { irq: 11 }));
                t += 1u64 << rng.range(8, 16);
                evs.push(at(
                    cpu,
                    t,
                    K::IrqExit {
                        irq: 11,
                        handled: true,
                    },
                ));
            }
            t += 1u64 << rng.range(8, 14);
            evs.push(at(
                cpu,
                t,
                K::VectorEntry {
                    vector: Vector::LocalTimer,
                },
            ));
            t += rng.range(100, 2_000);
            evs.push(at(
                cpu,
                t,
                K::Waking {
                    pid: tid,
                    prio: 0,
                    target_cpu: cpu,
                },
            ));
            t += rng.range(100, 2_000);
            evs.push(at(
                cpu,
                t,
                K::VectorExit {
                    vector: Vector::LocalTimer,
                },
            ));
            if rng.chance(1.0 / 7.0) {
                t += 500;
                evs.push(sw(cpu, t, 0, 120, KWORKER, 120));
                t += 1u64 << rng.range(10, 18);
                evs.push(sw(cpu, t, KWORKER, 120, tid, 0));
            } else {
                t += rng.range(200, 3_000);
                evs.push(sw(cpu, t, 0, 120, tid, 0));
            }
            let r = t + rng.range(300, 3_000);
            samples.push(RawSample {
                cpu,
                tid,
                cycle: i,
                expected_ns: e,
                latency_ns: r - e,
            });
        }
        st.push_events(&evs);
        st.push_samples(&samples);
        // Every event below the next cycle's first one has been delivered.
        explained += st.advance((i + 3) * period - 300_000, &names, &mut |_| {});
        if explained >= 100_000 && at_100k == 0 {
            at_100k = st.heap_bytes();
        }
    }
    let at_end = st.heap_bytes();
    assert!(st.buffered_events() < 100, "{}", st.buffered_events());
    assert!(st.pending_samples() <= 2);
    let r = st.finish(&names, &mut |_| {});
    assert_eq!(
        r.summary.samples_attributed + r.summary.samples_unattributed,
        total
    );
    assert_eq!(r.sum_check.violations, 0);
    let growth = at_end as f64 / at_100k as f64 - 1.0;
    println!(
        "heap bytes: {at_100k} after 100 k samples, {at_end} after {total} ({:+.2} %)",
        growth * 100.0
    );
    assert!(growth.abs() < 0.02, "{at_100k} → {at_end}");
}

/// Tracing in bursts: two stretches with a gap between them are explained exactly as two
/// separate runs (each sample gets the batch's attribution on its own stretch's events), so
/// nothing seen before the gap (the task switched in, an open interrupt) leaks past it.
#[test]
fn stretches_are_explained_as_separate_runs() {
    for seed in 0..16u64 {
        let mut rng = Rng::new(seed);
        let n_cpus = 1 + (seed % 3) as u32;
        let (ea, sa) = gen_run(&mut rng, n_cpus, 60);
        let (mut eb, mut sb) = gen_run(&mut rng, n_cpus, 60);
        // A burst starts in the middle of things: without each CPU's first switch, what runs
        // at its start is unknown, and must not be taken from before the gap.
        for c in 0..n_cpus {
            if let Some(i) = eb.iter().position(|e| e.cpu == c) {
                eb.remove(i);
            }
        }
        let end_a = ea
            .iter()
            .map(|e| e.ts_ns)
            .chain(sa.iter().map(|s| s.expected_ns + s.latency_ns))
            .max()
            .unwrap()
            + 1;
        // The next burst starts well after the first ended.
        let off = end_a + 50_000_000;
        for e in eb.iter_mut() {
            e.ts_ns += off;
        }
        for s in sb.iter_mut() {
            s.expected_ns += off;
        }
        let o = AttributionOptions {
            tail_threshold_ns: Some(30_000),
            top_n: 5,
            ..Default::default()
        };
        let names = names();
        let strip = |a: &SampleAttribution| {
            let mut a = a.clone();
            a.segments.clear();
            a.events.clear();
            a
        };
        let mut st = StreamingAttribution::new(o.clone(), [0, 10_000, 300_000][seed as usize % 3]);
        let mut got: Vec<Option<SampleAttribution>> = vec![None; sa.len() + sb.len()];
        let mut each = |seq: u64, a: &SampleAttribution| {
            assert!(got[seq as usize].replace(strip(a)).is_none());
        };
        st.push_events(&ea);
        st.push_samples(&sa);
        st.advance_observed(end_a / 2, &names, &mut |_| {}, &mut each);
        st.end_stretch(end_a, &names, &mut |_| {}, &mut each);
        assert_eq!(st.pending_samples(), 0, "seed {seed}");
        assert_eq!(st.buffered_events(), 0, "seed {seed}");
        st.push_events(&eb);
        st.push_samples(&sb);
        assert_eq!(st.late_events(), 0, "seed {seed}");
        let r = st.finish_observed(&names, &mut |_| {}, &mut each);
        let (pa, _) = attribute_samples(&ea, &sa, &names, &o, &|_| false);
        let (pb, _) = attribute_samples(&eb, &sb, &names, &o, &|_| false);
        for (i, b) in pa.iter().chain(pb.iter()).enumerate() {
            assert_eq!(got[i].as_ref(), Some(&strip(b)), "seed {seed} sample {i}");
        }
        let ba = attribute(&ea, &sa, &names, &o).summary;
        let bb = attribute(&eb, &sb, &names, &o).summary;
        assert_eq!(
            r.summary.samples_attributed,
            ba.samples_attributed + bb.samples_attributed
        );
        assert_eq!(
            r.summary.samples_unattributed,
            ba.samples_unattributed + bb.samples_unattributed
        );
    }
}

/// The gap is forgotten: a burst that ended with a real-time hog running and an interrupt open
/// does not blame either for a sample of the next burst that saw neither.
#[test]
fn a_stretch_forgets_the_state_before_the_gap() {
    let names = names();
    let o = AttributionOptions {
        tail_threshold_ns: Some(1_000),
        top_n: 2,
        ..Default::default()
    };
    let s = |e: u64, lat: u64| RawSample {
        cpu: 0,
        tid: 1000,
        cycle: 0,
        expected_ns: e,
        latency_ns: lat,
    };
    let ea = vec![
        sw(0, 1_000, 1000, 0, RT_HOG, 10),
        at(0, 5_000, K::IrqEntry { irq: 11 }),
    ];
    let sa = vec![s(2_000, 1_000)];
    let eb = vec![sw(0, 1_030_000, 0, 120, 1000, 0)];
    let sb = vec![s(1_000_000, 30_000)];
    let run = |reset: bool| {
        let mut st = StreamingAttribution::new(o.clone(), 10_000);
        let mut got = Vec::new();
        let mut each = |_: u64, a: &SampleAttribution| got.push(a.clone());
        st.push_events(&ea);
        st.push_samples(&sa);
        if reset {
            st.end_stretch(10_000, &names, &mut |_| {}, &mut each);
        } else {
            st.advance_observed(10_000, &names, &mut |_| {}, &mut each);
        }
        st.push_events(&eb);
        st.push_samples(&sb);
        st.finish_observed(&names, &mut |_| {}, &mut each);
        got
    };
    let (alone, _) = attribute_samples(&eb, &sb, &names, &o, &|_| false);
    let mut b = run(true).pop().unwrap();
    b.segments.clear();
    b.events.clear();
    assert_eq!(b, alone[0]);
    // Without the reset the hog and the open interrupt would be blamed: the case matters.
    let mut carried = run(false).pop().unwrap();
    carried.segments.clear();
    carried.events.clear();
    assert_ne!(carried, alone[0]);
}
