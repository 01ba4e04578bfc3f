//! Cost per event of the attribution (`analyze`, the batch path) with the trace's length, when
//! the samples' windows overlap: every sample's window spans a tenth of the trace, so a
//! per-window walk would cost samples × events / 10. The one sweep must stay flat per event
//! from 1 M to 100 M events. Not a criterion bench: one timed run per size is the figure, so
//! run it on an idle machine:
//!
//! ```sh
//! cargo bench -p rtscope-analysis --bench attribution_sweep                  # 1 M, 10 M, 100 M
//! RTSCOPE_BENCH_EVENTS=1000000,2000000 cargo bench -p rtscope-analysis --bench attribution_sweep
//! ```
//!
//! Memory: the events, their per-CPU copy and the sweep's index take about 250 bytes per event
//! (100 M events: ~25 GB); a size that does not fit in MemAvailable is skipped with a line
//! saying so.
//!
//! Synthetic trace: one CPU; per 10 µs a device IRQ entry/exit (4 sources), a softirq
//! entry/exit and a switch between two SCHED_OTHER threads; one sample per 1 000 events, each
//! with a window of a tenth of the trace and its waking at the window's end.

use rtscope_analysis::attribution::{attribute_samples, AttributionOptions};
use rtscope_model::event::{Event, EventKind, NameTables};
use rtscope_model::record::RawSample;
use std::time::Instant;

const TID: u32 = 1;

fn trace(n_events: u64) -> (Vec<Event>, Vec<RawSample>) {
    let mut ev = Vec::with_capacity(n_events as usize + n_events as usize / 500);
    let mut t = 1_000u64;
    let mut k = 0u64;
    // A tenth of the trace's length (5 events per 10 µs).
    let span = n_events / 5 * 1_000;
    let mut samples = Vec::new();
    let at = |ev: &mut Vec<Event>, ts_ns: u64, kind: EventKind| {
        ev.push(Event {
            ts_ns,
            cpu: 0,
            kind,
        })
    };
    while (ev.len() as u64) < n_events {
        let irq = (k % 4) as u32 + 30;
        at(&mut ev, t, EventKind::IrqEntry { irq });
        at(
            &mut ev,
            t + 1_000,
            EventKind::IrqExit { irq, handled: true },
        );
        at(&mut ev, t + 2_000, EventKind::SoftirqEntry { vec: 3 });
        at(&mut ev, t + 2_500, EventKind::SoftirqExit { vec: 3 });
        let (prev, next) = if k.is_multiple_of(2) {
            (100, 101)
        } else {
            (101, 100)
        };
        at(
            &mut ev,
            t + 3_000,
            EventKind::Switch {
                prev_pid: prev,
                prev_prio: 120,
                prev_state: 0,
                next_pid: next,
                next_prio: 120,
            },
        );
        if k.is_multiple_of(200) {
            // The waking at the window's end, inside the timer IRQ that ends it.
            let e = t + 4_000;
            at(
                &mut ev,
                e + span,
                EventKind::Waking {
                    pid: TID,
                    prio: 0,
                    target_cpu: 0,
                },
            );
            samples.push(RawSample {
                cpu: 0,
                tid: TID,
                cycle: k,
                expected_ns: e,
                latency_ns: span + 1_000,
            });
        }
        t += 10_000;
        k += 1;
    }
    ev.sort_by_key(|e| e.ts_ns);
    (ev, samples)
}

/// Memory per event, estimated (module docs).
const BYTES_PER_EVENT: u64 = 250;

/// MemAvailable, bytes.
fn mem_available() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = m
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

fn main() {
    let sizes: Vec<u64> = std::env::var("RTSCOPE_BENCH_EVENTS")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000_000, 10_000_000, 100_000_000]);
    let names = NameTables::default();
    let opts = AttributionOptions::default();
    println!("events\tsamples\tseconds\tns_per_event");
    for n in sizes {
        let need = n.saturating_mul(BYTES_PER_EVENT);
        if let Some(avail) = mem_available() {
            if need > avail {
                println!(
                    "{n}\tskipped: needs about {} GiB, {} GiB available",
                    need >> 30,
                    avail >> 30
                );
                continue;
            }
        }
        let (ev, samples) = trace(n);
        let t0 = Instant::now();
        let (all, _) = attribute_samples(&ev, &samples, &names, &opts, &|_| false);
        let s = t0.elapsed().as_secs_f64();
        let attributed = all
            .iter()
            .filter(|a| a.unattributed_reason.is_none())
            .count();
        println!(
            "{}\t{}\t{s:.3}\t{:.1}\t({attributed} attributed)",
            ev.len(),
            samples.len(),
            s * 1e9 / ev.len() as f64
        );
    }
}
