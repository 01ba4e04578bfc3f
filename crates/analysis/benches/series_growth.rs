//! Growth of the time-to-bound series (`bound --trace --series 1000`) with the trace's length:
//! the cost per event must stay flat from 1 M to 100 M events. Not a criterion bench: one timed
//! run per size is the figure (100 M events take minutes and ~5 GB), so run it on an idle machine:
//!
//! ```sh
//! cargo bench -p rtscope-analysis --bench series_growth                     # 1 M, 10 M, 100 M
//! RTSCOPE_BENCH_EVENTS=1000000,2000000 cargo bench -p rtscope-analysis --bench series_growth
//! RTSCOPE_BENCH_GROWING=1 cargo bench -p rtscope-analysis --bench series_growth  # worst case
//! ```
//!
//! Synthetic trace: one CPU, IRQ entry/exit pairs from 4 sources every 10 µs (2 events each),
//! one sample per 1 000 events; 1 000 series points.

use rtscope_analysis::bound::{events, Options};
use rtscope_model::event::{Event, EventKind};
use rtscope_model::record::RawSample;
use std::collections::BTreeMap;
use std::time::Instant;

/// `growing`: every instance lasts a little longer than the one before, so the bound grows at
/// every series instant (the fixed point asks new window lengths each time): the worst case of
/// the series' memo, next to the usual one where the bound settles early.
fn trace(n_events: u64, growing: bool) -> (Vec<Event>, Vec<RawSample>) {
    let mut ev = Vec::with_capacity(n_events as usize);
    let mut samples = Vec::new();
    let mut t = 1_000u64;
    let mut k = 0u64;
    while (ev.len() as u64) < n_events {
        let irq = (k % 4) as u32 + 30;
        ev.push(Event {
            ts_ns: t,
            cpu: 0,
            kind: EventKind::IrqEntry { irq },
        });
        ev.push(Event {
            ts_ns: t
                + 1_000
                + if growing {
                    k * 4_000 / (n_events / 2)
                } else {
                    (k * 7919) % 2_000
                },
            cpu: 0,
            kind: EventKind::IrqExit { irq, handled: true },
        });
        if k.is_multiple_of(500) {
            samples.push(RawSample {
                cpu: 0,
                tid: 1,
                cycle: k,
                expected_ns: t + 5_000,
                latency_ns: 2_000 + (k * 31) % 3_000,
            });
        }
        t += 10_000;
        k += 1;
    }
    (ev, samples)
}

fn main() {
    let sizes: Vec<u64> = std::env::var("RTSCOPE_BENCH_EVENTS")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000_000, 10_000_000, 100_000_000]);
    let growing = std::env::var_os("RTSCOPE_BENCH_GROWING").is_some();
    println!("events\tseconds\tns_per_event");
    for n in sizes {
        let (ev, samples) = trace(n, growing);
        let end = ev.last().map_or(0, |e| e.ts_ns);
        let t0 = Instant::now();
        let r = events::traced_run_input(
            &ev,
            &samples,
            (0, end),
            &BTreeMap::new(),
            None,
            Some(1000),
            &Options::default(),
        );
        let s = t0.elapsed().as_secs_f64();
        let points = r.map(|(_, p)| p.len()).unwrap_or(0);
        println!(
            "{n}\t{s:.3}\t{:.1}\t({points} series points)",
            s * 1e9 / n as f64
        );
    }
}
