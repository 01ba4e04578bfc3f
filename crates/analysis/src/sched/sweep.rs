//! The per-point table of a task-set sweep (`taskset sweep`; Lelli 2014 thesis Tables 2.1–2.2):
//! for each load and policy, the mean over the sets of each set's missed-job percentage with the
//! 95 % confidence interval of that mean (Student t over sets), the worst set and the pooled
//! counts. Pure: runs in, table out.

use crate::benchstats::student_t_quantile;
use rtscope_model::taskset::{SweepPoint, SweepRun};

/// One point per (load, policy) in the order they first appear in `runs`. Only runs with status
/// "ok" enter the mean; refused and failed runs are counted apart.
pub fn summarise(runs: &[SweepRun]) -> Vec<SweepPoint> {
    let mut keys: Vec<(f64, &str)> = Vec::new();
    for r in runs {
        if !keys
            .iter()
            .any(|&(l, p)| l.to_bits() == r.load.to_bits() && p == r.policy)
        {
            keys.push((r.load, &r.policy));
        }
    }
    keys.into_iter()
        .map(|(load, policy)| {
            let here: Vec<&SweepRun> = runs
                .iter()
                .filter(|r| r.load.to_bits() == load.to_bits() && r.policy == policy)
                .collect();
            let ok: Vec<&SweepRun> = here.iter().copied().filter(|r| r.status == "ok").collect();
            let pct: Vec<f64> = ok.iter().map(|r| r.miss_pct).collect();
            let (mean, ci) = mean_ci95(&pct);
            let jobs: u64 = ok.iter().map(|r| r.jobs).sum();
            let misses: u64 = ok.iter().map(|r| r.misses).sum();
            SweepPoint {
                load,
                policy: policy.to_string(),
                sets: ok.len() as u32,
                refused: here.iter().filter(|r| r.status == "refused").count() as u32,
                failed: here.iter().filter(|r| r.status == "failed").count() as u32,
                mean_miss_pct: mean,
                ci95_half_pct: ci,
                max_miss_pct: pct.iter().copied().fold(0.0, f64::max),
                sets_with_misses: ok.iter().filter(|r| r.misses > 0).count() as u32,
                jobs,
                misses,
                pooled_miss_pct: rtscope_model::taskset::miss_pct(misses, jobs),
                dl_overruns: ok.iter().map(|r| r.dl_overruns).sum(),
                misses_after_overrun: ok.iter().map(|r| r.misses_after_overrun).sum(),
            }
        })
        .collect()
}

/// Mean of `xs` and the half-width of its 95 % confidence interval, t(0.975, n − 1) · s / √n
/// with the sample standard deviation s; (0, None) for no value, (x, None) for one.
pub fn mean_ci95(xs: &[f64]) -> (f64, Option<f64>) {
    let n = xs.len();
    if n == 0 {
        return (0.0, None);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, None);
    }
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
    let t = student_t_quantile(0.975, (n - 1) as f64);
    (mean, t.map(|t| t * var.sqrt() / (n as f64).sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(load: f64, set: u32, policy: &str, status: &str, jobs: u64, misses: u64) -> SweepRun {
        SweepRun {
            load,
            set,
            policy: policy.into(),
            utilisation: load,
            status: status.into(),
            error: None,
            jobs,
            misses,
            miss_pct: if jobs > 0 {
                100.0 * misses as f64 / jobs as f64
            } else {
                0.0
            },
            dl_overruns: misses / 2,
            misses_after_overrun: misses / 4,
            max_exec_over_c: 1.0,
            migrations_per_s: None,
            context_switches_per_s: None,
            predicted_schedulable: None,
        }
    }

    #[test]
    fn mean_and_ci_hand_checked() {
        // 1, 2, 3, 4: mean 2.5, s² = (2.25 + 0.25 + 0.25 + 2.25)/3 = 5/3, s = 1.290994,
        // t(0.975, 3) = 3.182446, half = 3.182446 · 1.290994 / 2 = 2.054269.
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        assert!((h.unwrap() - 2.054269).abs() < 1e-5, "{h:?}");
        // Equal values: no spread, half-width 0.
        assert_eq!(mean_ci95(&[0.0, 0.0, 0.0]), (0.0, Some(0.0)));
        assert_eq!(mean_ci95(&[7.0]), (7.0, None));
        assert_eq!(mean_ci95(&[]), (0.0, None));
    }

    #[test]
    fn points_by_load_and_policy_only_ok_runs_in_the_mean() {
        let runs = vec![
            // load 0.6, deadline: 0/100, 2/100 (2 %), refused → mean 1 %, s = √2, t(0.975,1)
            // = 12.706205, half = 12.706205 · 1.414214 / 1.414214 = 12.706205.
            run(0.6, 0, "deadline", "ok", 100, 0),
            run(0.6, 0, "other", "ok", 200, 10),
            run(0.6, 1, "deadline", "ok", 100, 2),
            run(0.6, 1, "other", "ok", 300, 0),
            run(0.6, 2, "deadline", "refused", 0, 0),
            run(0.7, 0, "deadline", "failed", 0, 0),
        ];
        let p = summarise(&runs);
        assert_eq!(
            p.iter()
                .map(|p| (p.load, p.policy.as_str()))
                .collect::<Vec<_>>(),
            vec![(0.6, "deadline"), (0.6, "other"), (0.7, "deadline")]
        );
        let dl = &p[0];
        assert_eq!((dl.sets, dl.refused, dl.failed), (2, 1, 0));
        assert_eq!(dl.mean_miss_pct, 1.0);
        assert!((dl.ci95_half_pct.unwrap() - 12.706205).abs() < 1e-5);
        assert_eq!((dl.max_miss_pct, dl.sets_with_misses), (2.0, 1));
        assert_eq!((dl.jobs, dl.misses, dl.pooled_miss_pct), (200, 2, 1.0));
        assert_eq!((dl.dl_overruns, dl.misses_after_overrun), (1, 0));
        // other: 10/200 = 5 %, 0/300 = 0 % → mean 2.5 %; pooled 10/500 = 2 %.
        let cfs = &p[1];
        assert_eq!((cfs.mean_miss_pct, cfs.pooled_miss_pct), (2.5, 2.0));
        assert_eq!((cfs.max_miss_pct, cfs.sets_with_misses), (5.0, 1));
        // A point whose only run failed: no set, nothing to average.
        let f = &p[2];
        assert_eq!(
            (f.sets, f.failed, f.mean_miss_pct, f.ci95_half_pct),
            (0, 1, 0.0, None)
        );
    }
}
