//! The tail model's cost: one CPU's end-of-run fit (MLE, three parameter intervals, six level
//! intervals, the checks) on a full reservoir, the quick 1e-9 level `--until-stable` and the
//! live metrics refit, and the reservoir's per-sample push. Targets (issue's performance
//! section): ≤ 50 ms per CPU at the end of a run, ≤ 10 ms per live refresh. Take figures on an
//! idle machine only: `cargo bench -p rtscope-analysis --bench tail_fit`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rtscope_analysis::tail::{self, gev::Gev, BlockMaxima, TailInput, RESERVOIR_CAPACITY};
use rtscope_model::rng::Rng;

fn maxima(n: usize) -> Vec<u64> {
    let g = Gev {
        mu: 20_000.0,
        sigma: 2_000.0,
        xi: 0.15,
    };
    let mut r = Rng::new(42);
    (0..n).map(|_| g.from_uniform(r.unit()) as u64).collect()
}

fn bench(c: &mut Criterion) {
    for n in [RESERVOIR_CAPACITY / 2, RESERVOIR_CAPACITY] {
        let m = maxima(n);
        let input = TailInput {
            cpu: Some(0),
            maxima: &m,
            block_samples: 1000,
            block_s: 1.0,
            observed_max_ns: m.iter().copied().max().unwrap_or(0),
            bound_ns: Some(200_000),
        };
        c.bench_function(&format!("end-of-run fit, {n} maxima"), |b| {
            b.iter(|| black_box(tail::fit(black_box(&input))))
        });
        c.bench_function(&format!("1e-9 level with interval, {n} maxima"), |b| {
            b.iter(|| black_box(tail::sample_level(black_box(&m), 1000, 1e-9)))
        });
    }
    let mut res = BlockMaxima::new(1000, RESERVOIR_CAPACITY);
    let mut x = 1u64;
    c.bench_function("reservoir push", |b| {
        b.iter(|| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            res.push(black_box(x >> 40));
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
