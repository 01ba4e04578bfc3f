//! Run-level view of the per-sample attributions: per cause, how many samples it touched, its
//! total/max, its p99 contribution and the share of the tail it explains; one line per CPU.

use super::{AttributionOptions, AttributionResult, SampleAttribution, StealCheck, SumCheck};
use rtscope_model::attribution::{
    AttributionSummary, CauseSummary, WorstSample, ATTRIBUTION_SCHEMA_VERSION,
};
use rtscope_model::record::RawSample;
use std::collections::{BTreeMap, HashMap};

/// Nearest-rank percentile of sorted values (p in 0..=100); 0 for no values.
fn nearest_rank(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[derive(Default)]
struct Agg {
    affected: u64,
    total: u64,
    max: u64,
    nonzero: Vec<u64>,
    tail_p99: u64,
    tail_thr: u64,
}

/// Build the result from per-sample attributions (`all` in the order of `samples`), the indices
/// of the worst samples (worst first), and per-CPU eventless totals.
pub fn summarize(
    samples: &[RawSample],
    all: Vec<SampleAttribution>,
    worst_idx: &[usize],
    gaps: Vec<(u32, u64)>,
    opts: &AttributionOptions,
) -> AttributionResult {
    let n = all.len();
    let mut lats: Vec<u64> = all.iter().map(|a| a.latency_ns).collect();
    lats.sort_unstable();
    let p99 = nearest_rank(&lats, 99.0);
    let thr = opts.tail_threshold_ns;
    let mut aggs: HashMap<String, Agg> = HashMap::new();
    let mut tail_p99_lat = 0u64;
    let mut tail_thr_lat = 0u64;
    let (mut tail_p99_n, mut tail_thr_n) = (0u64, 0u64);
    let mut sum_check = SumCheck {
        tolerance_ns: 0,
        samples_checked: 0,
        max_abs_error_ns: 0,
        violations: 0,
    };
    let mut unattributed = 0u64;
    // Per CPU: tail latency and per-cause tail ns.
    let mut cpu_tail: BTreeMap<u32, (u64, u64, HashMap<String, u64>)> = BTreeMap::new();
    for a in &all {
        let in_p99 = a.latency_ns >= p99 && n > 0;
        let in_thr = thr.is_some_and(|t| a.latency_ns > t);
        if a.unattributed_reason.is_some() {
            unattributed += 1;
        }
        let sum: u64 = a.parts.iter().fold(0u64, |t, p| t.saturating_add(p.1));
        let err = sum.abs_diff(a.latency_ns);
        sum_check.samples_checked += 1;
        sum_check.max_abs_error_ns = sum_check.max_abs_error_ns.max(err);
        if err > sum_check.tolerance_ns {
            sum_check.violations += 1;
        }
        if in_p99 {
            tail_p99_lat = tail_p99_lat.saturating_add(a.latency_ns);
            tail_p99_n += 1;
            let c = cpu_tail.entry(a.cpu).or_default();
            c.0 += 1;
            c.1 = c.1.saturating_add(a.latency_ns);
            for (cause, ns) in &a.parts {
                let t = c.2.entry(cause.clone()).or_default();
                *t = t.saturating_add(*ns);
            }
        }
        if in_thr {
            tail_thr_lat = tail_thr_lat.saturating_add(a.latency_ns);
            tail_thr_n += 1;
        }
        for (cause, ns) in &a.parts {
            if *ns == 0 {
                continue;
            }
            // get_mut first: no String clone for causes already seen (the common case).
            let g = match aggs.get_mut(cause) {
                Some(g) => g,
                None => aggs.entry(cause.clone()).or_default(),
            };
            g.affected += 1;
            g.total = g.total.saturating_add(*ns);
            g.max = g.max.max(*ns);
            g.nonzero.push(*ns);
            if in_p99 {
                g.tail_p99 = g.tail_p99.saturating_add(*ns);
            }
            if in_thr {
                g.tail_thr = g.tail_thr.saturating_add(*ns);
            }
        }
    }
    let mut causes: Vec<CauseSummary> = aggs
        .into_iter()
        .map(|(cause, mut g)| {
            g.nonzero.sort_unstable();
            // p99 over all n samples, the (n - nonzero) zeros sorting first.
            let rank = ((0.99 * n as f64).ceil() as usize).clamp(1, n.max(1));
            let zeros = n - g.nonzero.len();
            let p99c = if rank <= zeros {
                0
            } else {
                g.nonzero[rank - zeros - 1]
            };
            CauseSummary {
                cause,
                samples_affected: g.affected,
                total_ns: g.total,
                max_ns: g.max,
                p99_contribution_ns: p99c,
                tail_p99_share: if tail_p99_lat > 0 {
                    g.tail_p99 as f64 / tail_p99_lat as f64
                } else {
                    0.0
                },
                tail_threshold_share: (thr.is_some() && tail_thr_lat > 0)
                    .then(|| g.tail_thr as f64 / tail_thr_lat as f64),
            }
        })
        .collect();
    sort_causes(&mut causes);
    let lost: BTreeMap<u32, u64> = opts.lost_per_cpu.iter().copied().collect();
    let per_cpu_tail = cpu_tail
        .into_iter()
        .map(|(cpu, (cnt, lat, per))| {
            let line = per_cpu_tail_line(cnt, lat, p99, per.into_iter().collect(), &lost, cpu);
            (cpu, line)
        })
        .collect();
    let samples_on_lossy_cpus = samples
        .iter()
        .filter(|s| lost.get(&s.cpu).is_some_and(|&l| l > 0))
        .count() as u64;
    let lost_events: u64 = lost.values().fold(0u64, |t, &l| t.saturating_add(l));
    let warnings = run_warnings(
        lost_events,
        samples_on_lossy_cpus,
        unattributed,
        n as u64,
        sum_check.violations,
    );
    let mut warnings = warnings;
    // Latencies come from the file: sums of crafted values can pass 2^64 ns (585 years).
    if tail_p99_lat == u64::MAX
        || tail_thr_lat == u64::MAX
        || causes.iter().any(|c| c.total_ns == u64::MAX)
    {
        warnings.push(
            "total_ns: the sum of the samples' latencies exceeds 2^64-1 ns and was clamped there (the file's latencies cannot be real)".to_string(),
        );
    }
    let steal_check = steal_checks(&gaps, opts);
    let worst: Vec<SampleAttribution> = worst_idx
        .iter()
        .filter_map(|&i| all.get(i).cloned())
        .collect();
    AttributionResult {
        summary: AttributionSummary {
            schema_version: ATTRIBUTION_SCHEMA_VERSION,
            causes,
            per_cpu_tail,
            lost_events,
            samples_attributed: n as u64 - unattributed,
            samples_unattributed: unattributed,
            p99_latency_ns: p99,
            tail_p99_samples: tail_p99_n,
            tail_threshold_ns: thr,
            tail_threshold_samples: tail_thr_n,
            gap_threshold_ns: opts.gap_threshold_ns,
            sum_tolerance_ns: sum_check.tolerance_ns,
            worst: worst.iter().map(worst_sample).collect(),
            p99_relative_resolution: None,
        },
        worst,
        sum_check,
        steal_check,
        gap_threshold_ns: opts.gap_threshold_ns,
        busy_gap_threshold_ns: opts.busy_gap_threshold_ns,
        samples_on_lossy_cpus,
        warnings,
    }
}

/// Largest p99-tail share first, then largest total, then by name (a stable order for output).
pub(super) fn sort_causes(causes: &mut [CauseSummary]) {
    causes.sort_by(|a, b| {
        b.tail_p99_share
            .partial_cmp(&a.tail_p99_share)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(b.total_ns.cmp(&a.total_ns))
            .then(a.cause.cmp(&b.cause))
    });
}

/// One CPU's line: how many samples its p99 tail holds and the three causes explaining most of
/// that tail's latency (`per`: cause → ns inside the tail; `lat`: the tail's latency sum).
pub(super) fn per_cpu_tail_line(
    cnt: u64,
    lat: u64,
    p99: u64,
    mut per: Vec<(String, u64)>,
    lost: &BTreeMap<u32, u64>,
    cpu: u32,
) -> String {
    per.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let pct = |ns: u64| {
        if lat > 0 {
            100.0 * ns as f64 / lat as f64
        } else {
            0.0
        }
    };
    let mut line = format!(
        "p99 tail ({cnt} samples >= {:.1} us): ",
        p99 as f64 / 1000.0
    );
    let top: Vec<String> = per
        .iter()
        .take(3)
        .map(|(c, ns)| format!("{c} {:.0}%", pct(*ns)))
        .collect();
    line.push_str(&top.join(", "));
    if let Some(&l) = lost.get(&cpu).filter(|&&l| l > 0) {
        line.push_str(&format!(" [{l} events lost on this CPU]"));
    }
    line
}

/// What the reader must be told about a run's attribution: lost events, unattributed samples,
/// parts that do not add up.
pub(super) fn run_warnings(
    lost_events: u64,
    samples_on_lossy_cpus: u64,
    unattributed: u64,
    n: u64,
    sum_violations: u64,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if lost_events > 0 {
        warnings.push(format!(
            "{lost_events} kernel events were lost during the capture; {samples_on_lossy_cpus} samples ran on CPUs with loss and may be misattributed"
        ));
    }
    if unattributed > 0 {
        warnings.push(format!(
            "{unattributed} of {n} samples could not be attributed (see unattributed_reason)"
        ));
    }
    if sum_violations > 0 {
        warnings.push(format!(
            "{sum_violations} samples' parts do not sum to their latency"
        ));
    }
    warnings
}

/// Eventless busy stretches per CPU beside the steal time the guest kernel accounted.
pub(super) fn steal_checks(gaps: &[(u32, u64)], opts: &AttributionOptions) -> Vec<StealCheck> {
    let steal: BTreeMap<u32, u64> = opts.steal_ns_per_cpu.iter().copied().collect();
    gaps.iter()
        .map(|&(cpu, g)| StealCheck {
            cpu,
            no_guest_activity_ns: g,
            steal_ns: steal.get(&cpu).copied().unwrap_or(0),
        })
        .collect()
}

/// The record's copy of a worst sample (its timeline, without the raw events).
pub(super) fn worst_sample(w: &SampleAttribution) -> WorstSample {
    WorstSample {
        cpu: w.cpu,
        tid: w.tid,
        cycle: w.cycle,
        expected_ns: w.expected_ns,
        latency_ns: w.latency_ns,
        handler: w.anchors.handler.clone(),
        parts: w.parts.clone(),
        segments: w.segments.clone(),
        threads: w.threads.clone(),
    }
}
