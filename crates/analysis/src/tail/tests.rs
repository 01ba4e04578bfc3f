//! Known tails: GEV block maxima and GPD samples with known parameters, i.i.d. from fixed seeds,
//! and the data the checks exist for (dependent and drifting maxima).

use super::checks::{chi2_sf, gamma_q};
use super::gev::{self, Gev, Interest};
use super::*;
use crate::compare::special::normal_cdf;
use rand_distr::{Distribution, StandardNormal};
use rtscope_model::rng::Rng;
use rtscope_model::tail::TailCheckCode;

fn gev_maxima(g: &Gev, n: usize, seed: u64) -> Vec<u64> {
    let mut r = Rng::new(seed);
    (0..n)
        .map(|_| g.from_uniform(r.unit()).round() as u64)
        .collect()
}

fn input(maxima: &[u64], block_samples: u64) -> TailInput<'_> {
    TailInput {
        cpu: Some(0),
        maxima,
        block_samples,
        block_s: 1.0,
        observed_max_ns: maxima.iter().copied().max().unwrap_or(0),
        bound_ns: None,
    }
}

fn contains(iv: &Interval, v: f64) -> bool {
    iv.low.is_none_or(|l| l <= v) && iv.high.is_none_or(|h| v <= h)
}

const TRUE: Gev = Gev {
    mu: 20_000.0,
    sigma: 2_000.0,
    xi: 0.2,
};

#[test]
fn chi_square_tail_matches_tables() {
    assert!((chi2_sf(3.841_458_8, 1.0) - 0.05).abs() < 1e-6);
    assert!((chi2_sf(18.307_038, 10.0) - 0.05).abs() < 1e-6);
    assert!((chi2_sf(2.0, 2.0) - (-1.0f64).exp()).abs() < 1e-12);
    assert!((gamma_q(1.0, 0.5) - (-0.5f64).exp()).abs() < 1e-12);
}

#[test]
fn reservoir_keeps_block_maxima_in_constant_memory() {
    let mut r = BlockMaxima::new(10, 8);
    let mut r_ref = Vec::new();
    let mut rng = Rng::new(7);
    let xs: Vec<u64> = (0..1_000).map(|_| rng.range(1, 1_000_000)).collect();
    for &x in &xs {
        r.push(x);
        r_ref.push(x);
    }
    // 1000 samples: blocks of 10 fill 8 at 80, merge to 4 of 20; … the length ends at 160.
    assert_eq!(r.block_samples(), 160);
    assert!(r.maxima().len() <= 8 && r.maxima.capacity() == 8);
    let expect: Vec<u64> = xs
        .chunks(160)
        .filter(|c| c.len() == 160)
        .map(|c| *c.iter().max().unwrap())
        .collect();
    assert_eq!(r.maxima(), &expect[..]);
    assert_eq!(r.observed_max_ns(), *xs.iter().max().unwrap());
    assert_eq!(r.samples(), 1_000);
}

#[test]
fn fit_recovers_known_gev() {
    let m = gev_maxima(&TRUE, 400, 1);
    let f = fit(&input(&m, 1000));
    let p = f.gev.as_ref().expect("fitted");
    assert!(contains(&p.location_ci95_ns, TRUE.mu), "{p:?}");
    assert!(contains(&p.scale_ci95_ns, TRUE.sigma), "{p:?}");
    assert!(contains(&p.shape_ci95, TRUE.xi), "{p:?}");
    assert!((p.location_ns / TRUE.mu - 1.0).abs() < 0.03);
    assert!(f.reliable, "{:?}", f.checks);
    assert_eq!(f.levels.len(), 6);
    // The levels grow as the probability falls, and each interval holds its estimate.
    for w in f.levels.windows(2).filter(|w| w[0].per == w[1].per) {
        assert!(w[1].latency_ns > w[0].latency_ns);
    }
    for l in &f.levels {
        assert!(contains(&l.ci95_ns, l.latency_ns), "{l:?}");
        assert!(l.ci95_ns.low.is_some());
    }
    assert!(f.observed_max_return_period_s.is_some_and(|s| s > 10.0));
    assert!(warnings(&TailReport {
        method: String::new(),
        cpus: vec![f],
        run: None
    })
    .is_empty());
}

/// The stated rate: over 200 seeds the 95 % profile intervals of μ, σ, ξ and of a level hold
/// the true value in 95 % of fits, within a tolerance for 200 draws (binomial sd 1.5 points)
/// and the profile likelihood's small-sample bias at 100 maxima.
#[test]
fn profile_intervals_cover_at_the_stated_rate() {
    let seeds = 200u64;
    let y = 1e-4; // a block level exceeded with probability ~1e-4
    let truth_level = TRUE.quantile_t(y);
    let mut hits = [0u32; 4];
    for seed in 0..seeds {
        let m = gev_maxima(&TRUE, 100, 1000 + seed);
        let x: Vec<f64> = m.iter().map(|&v| v as f64).collect();
        let a = x.iter().sum::<f64>() / x.len() as f64;
        let b = (x.iter().map(|v| (v - a).powi(2)).sum::<f64>() / (x.len() - 1) as f64).sqrt();
        let z: Vec<f64> = x.iter().map(|v| (v - a) / b).collect();
        let (g, nll) = gev::fit_standardized(&z).expect("fit");
        let truth = [
            (TRUE.mu - a) / b,
            (TRUE.sigma / b).ln(),
            TRUE.xi,
            (truth_level - a) / b,
        ];
        let what = [
            Interest::Location,
            Interest::LogScale,
            Interest::Shape,
            Interest::Level { y },
        ];
        for k in 0..4 {
            let [lo, hi] = gev::profile_interval(&z, &g, nll, what[k]);
            if lo.is_none_or(|l| l <= truth[k]) && hi.is_none_or(|h| truth[k] <= h) {
                hits[k] += 1;
            }
        }
    }
    for (k, h) in hits.iter().enumerate() {
        let cov = *h as f64 / seeds as f64;
        eprintln!("GEV, 100 maxima, 200 seeds: parameter {k} coverage {cov:.3} (nominal 0.95)");
        assert!(
            (0.90..=0.99).contains(&cov),
            "parameter {k}: coverage {cov}"
        );
    }
}

/// GPD samples (a Pareto-type tail, ξ = 0.25): block maxima of 200 samples are GEV with the
/// same ξ, and the per-sample level at 1e-6 is the GPD's own quantile.
#[test]
fn gpd_samples_give_their_shape_and_quantile() {
    let (sigma, xi) = (1_000.0f64, 0.25f64);
    let q = |p: f64| 5_000.0 + sigma / xi * (p.powf(-xi) - 1.0);
    let seeds = 60u64;
    let (mut shape_hits, mut level_hits) = (0, 0);
    for seed in 0..seeds {
        let mut r = Rng::new(50_000 + seed);
        let mut res = BlockMaxima::new(200, 512);
        for _ in 0..200 * 150 {
            res.push(q(r.unit()).round() as u64);
        }
        let f = fit(&input(res.maxima(), res.block_samples()));
        let p = f.gev.as_ref().expect("fitted");
        shape_hits += contains(&p.shape_ci95, xi) as u32;
        let l = f.level(1e-6, TailPer::Sample).expect("level");
        level_hits += contains(&l.ci95_ns, q(1e-6)) as u32;
    }
    let (cs, cl) = (
        shape_hits as f64 / seeds as f64,
        level_hits as f64 / seeds as f64,
    );
    eprintln!("GPD parent, 150 maxima of 200, 60 seeds: ξ {cs:.3}, 1e-6 level {cl:.3} (0.95)");
    assert!(cs >= 0.85, "shape coverage {cs}");
    assert!(cl >= 0.85, "1e-6 level coverage {cl}");
}

fn failed(f: &TailFit) -> Vec<TailCheckCode> {
    f.checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.code)
        .collect()
}

#[test]
fn checks_pass_on_iid_maxima() {
    let mut any = 0;
    for seed in 0..40 {
        let m = gev_maxima(&TRUE, 200, 300 + seed);
        let f = fit(&input(&m, 1000));
        if seed == 0 {
            assert!(failed(&f).is_empty(), "{:?}", f.checks);
        }
        any += (!f.reliable) as u32;
    }
    // Each check at 1 % (A² conservative): a few of 40 at most.
    assert!(any <= 3, "{any} of 40 i.i.d. fits flagged");
}

/// Maxima with AR(1) dependence (φ = 0.8) and GEV margins (a Gaussian copula).
fn ar1_maxima(n: usize, phi: f64, seed: u64) -> Vec<u64> {
    let mut r = Rng::new(seed);
    let mut e = 0.0f64;
    (0..n)
        .map(|_| {
            let w: f64 = StandardNormal.sample(&mut r);
            e = phi * e + (1.0 - phi * phi).sqrt() * w;
            TRUE.from_uniform(normal_cdf(e).clamp(1e-12, 1.0 - 1e-12))
                .round() as u64
        })
        .collect()
}

#[test]
fn independence_check_fires_on_dependent_maxima() {
    let mut fired = 0;
    for seed in 0..20 {
        let m = ar1_maxima(200, 0.8, 700 + seed);
        let f = fit(&input(&m, 1000));
        assert!(!f.reliable || seed > 0, "{:?}", f.checks);
        fired += failed(&f).contains(&TailCheckCode::Independence) as u32;
    }
    assert!(fired >= 19, "fired on {fired} of 20");
}

#[test]
fn stationarity_check_fires_on_drift() {
    let mut fired = 0;
    for seed in 0..20 {
        let mut m = gev_maxima(&TRUE, 200, 900 + seed);
        // The location drifts by two scales over the run.
        for (i, v) in m.iter_mut().enumerate() {
            *v += (4_000.0 * i as f64 / 200.0) as u64;
        }
        let f = fit(&input(&m, 1000));
        fired += failed(&f).contains(&TailCheckCode::Stationarity) as u32;
        if seed == 0 {
            let w = warnings(&TailReport {
                method: String::new(),
                cpus: vec![f],
                run: None,
            });
            assert_eq!(w.len(), 1);
            assert_eq!(w[0].code, WarningCode::TailUnreliable);
            assert!(w[0].message.contains("halves"), "{}", w[0].message);
        }
    }
    assert!(fired >= 18, "fired on {fired} of 20");
}

#[test]
fn goodness_of_fit_fires_on_a_mixture() {
    // Two causes: most blocks' maxima near 10 µs, a fifth from host stalls near 300 µs.
    let mut r = Rng::new(5);
    let m: Vec<u64> = (0..300)
        .map(|_| {
            let g = if r.chance(0.2) {
                Gev {
                    mu: 300_000.0,
                    sigma: 1_000.0,
                    xi: -0.2,
                }
            } else {
                Gev {
                    mu: 10_000.0,
                    sigma: 300.0,
                    xi: -0.2,
                }
            };
            g.from_uniform(r.unit()).round() as u64
        })
        .collect();
    let f = fit(&input(&m, 1000));
    assert!(
        failed(&f).contains(&TailCheckCode::GoodnessOfFit),
        "{:?}",
        f.checks
    );
}

#[test]
fn too_few_maxima_give_no_numbers_and_say_how_many() {
    let m = gev_maxima(&TRUE, 12, 3);
    let f = fit(&input(&m, 1000));
    assert!(f.gev.is_none() && f.levels.is_empty() && !f.reliable);
    assert_eq!(f.needed_blocks, Some(MIN_BLOCKS as u64));
    let w = warnings(&TailReport {
        method: String::new(),
        cpus: vec![f],
        run: None,
    });
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].code, WarningCode::TailFewMaxima);
    assert!(
        w[0].message.contains("12 block maxima") && w[0].message.contains("needs 40"),
        "{}",
        w[0].message
    );
    assert!(sample_level(&m, 1000, 1e-9).is_none());
}

#[test]
fn bound_and_run_fit() {
    let a = gev_maxima(&TRUE, 120, 11);
    let b = gev_maxima(&TRUE, 100, 12);
    let inputs = [
        TailInput {
            bound_ns: Some(200_000),
            ..input(&a, 1000)
        },
        TailInput {
            cpu: Some(1),
            bound_ns: Some(150_000),
            ..input(&b, 1000)
        },
    ];
    let r = report(&inputs);
    let run = r.run.as_ref().expect("run fit");
    assert_eq!((run.blocks, run.block_samples), (100, 2000));
    assert_eq!(run.bound.as_ref().map(|b| b.bound_ns), Some(200_000));
    let cb = r.cpus[0].bound.as_ref().expect("bound");
    assert!(cb.exceedance_per_sample > 0.0 && cb.exceedance_per_sample < 1e-6);
    assert!(cb.return_period_s.is_some_and(|s| s > 1e3));
}

#[test]
fn compare_tells_noise_from_a_shift() {
    let a = gev_maxima(&TRUE, 200, 21);
    let b = gev_maxima(&TRUE, 200, 22);
    let fa = fit(&input(&a, 1000));
    let fb = fit(&input(&b, 1000));
    let c = compare_maxima(&fa, 200_000, &fb, 200_000).expect("both fitted");
    assert!(!c.beyond, "{c:?}");
    let shifted = Gev {
        mu: 60_000.0,
        ..TRUE
    };
    let s = gev_maxima(&shifted, 200, 23);
    let fs = fit(&input(&s, 1000));
    let c = compare_maxima(&fa, 200_000, &fs, 200_000).expect("both fitted");
    assert!(c.beyond, "{c:?}");
}

#[test]
fn stable_tracker_needs_a_quiet_full_window() {
    let mut t = StableTracker::new(0.05, 10.0);
    for i in 0..30 {
        let s = i as f64;
        t.push(s, Some(vec![100.0 + (30 - i) as f64, 200.0]));
    }
    // Still moving by ~1 % a second: within 5 % only over the last few seconds.
    assert!(!t.stable(29.0));
    for i in 30..45 {
        t.push(i as f64, Some(vec![100.0, 200.0]));
    }
    assert!(t.stable(44.0));
    t.push(45.0, None);
    assert!(!t.stable(45.0));
}
