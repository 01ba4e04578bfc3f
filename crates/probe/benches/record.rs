//! Per-sample recording cost (issue 2 target: ≤ 25 ns): everything the measurement loop does
//! for one sample after reading the clock — recorder update (HDR + linear histogram, worst-N,
//! threshold check) and the live-view stores. `cargo bench -p rtscope-probe --bench record`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rtscope_probe::measure::LiveThread;
use rtscope_probe::recorder::Recorder;
use std::sync::atomic::Ordering::Relaxed;

fn bench(c: &mut Criterion) {
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
    let live = LiveThread::default();
    let mut rec = Recorder::new(0, 1, 10_000, 10, Some(150_000), 100_000, false);
    let mut i = 0usize;
    let (mut min, mut max, mut sum) = (u64::MAX, 0u64, 0u64);
    c.bench_function("record one sample", |b| {
        b.iter(|| {
            let l = lat[i & 0xffff];
            i += 1;
            rec.record(black_box(i as u64 * 1_000_000), black_box(l));
            min = min.min(l);
            max = max.max(l);
            sum = sum.wrapping_add(l);
            live.cur_ns.store(l, Relaxed);
            live.min_ns.store(min, Relaxed);
            live.max_ns.store(max, Relaxed);
            live.sum_ns.store(sum, Relaxed);
            live.cycles.store(rec.cycles, Relaxed);
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
