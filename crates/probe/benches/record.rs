//! Per-sample recording cost: everything the measurement loop does for one sample after reading
//! the clock — recorder update (HDR + linear histogram, worst-N, threshold check) and, when the
//! run streams its samples, the push into the thread's ring (drained here every 1024 samples, as
//! the orchestrating thread would). `cargo bench -p rtscope-probe --bench record`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rtscope_model::RawSample;
use rtscope_probe::recorder::Recorder;
use rtscope_probe::SampleRing;

fn latencies() -> Vec<u64> {
    // Realistic latencies: mostly a few µs, an occasional long one (xorshift, no allocation).
    let mut lat = Vec::with_capacity(1 << 16);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..(1 << 16) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = 2_000 + (x % 8_000) + if x.is_multiple_of(1000) { 200_000 } else { 0 };
        lat.push(v);
    }
    lat
}

fn bench(c: &mut Criterion) {
    let lat = latencies();
    let mut rec = Recorder::new(0, 1, 10_000, 10, Some(150_000), 100_000);
    let mut i = 0usize;
    c.bench_function("record one sample", |b| {
        b.iter(|| {
            let l = lat[i & 0xffff];
            i += 1;
            rec.record(black_box(i as u64 * 1_000_000), black_box(l));
        })
    });
    let mut rec = Recorder::new(0, 1, 10_000, 10, Some(150_000), 100_000);
    let ring = SampleRing::new(4096);
    let mut out: Vec<RawSample> = Vec::with_capacity(4096);
    let mut i = 0usize;
    c.bench_function("record + stream one sample", |b| {
        b.iter(|| {
            let l = lat[i & 0xffff];
            i += 1;
            let cycle = rec.cycles;
            rec.record(black_box(i as u64 * 1_000_000), black_box(l));
            ring.push(RawSample {
                cpu: 0,
                tid: 1,
                cycle,
                expected_ns: i as u64 * 1_000_000,
                latency_ns: l,
            });
            if i.is_multiple_of(1024) {
                out.clear();
                ring.drain(&mut out);
            }
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
