//! The soundness experiment as ECRTS'20 frames its practical claim (§6, "time to bound"): a
//! bound computed from a run of length T_c covers what later, independent runs observe.
//!
//! *Calibration* boots compute the bound; *validation* boots — new boots of the same kernel,
//! never used to compute it — only contribute their latencies. Both kinds run the same
//! configuration (traced, with the bound), as the paper ran cyclictest beside its tracer: the
//! probe effect is then in the validation latencies too, and a violation can be explained from
//! the validation boot's own trace.
//!
//! Per cell (kernel × preemption model × load × vCPUs) and CPU this joins:
//! * the bound of each calibration boot at each prefix T_c, read from its time-to-bound series
//!   (the sliding-window characterization, the only one the series keeps), and the six
//!   characterizations at the run's end;
//! * every validation sample of the same CPU: the largest, and how many lie above each converged
//!   bound (the target is 0; every one is a finding);
//! * the time to bound of each calibration boot: when its bound first covered the largest
//!   validation latency, and when it reached its own final value — as a distribution over the
//!   boots (median and max), not one number.
//!
//! Pure: records in, numbers out; rendering is `rtscope_report::soundness`.

use rtscope_model::{Histogram, RunRecord};
use serde::Serialize;
use std::collections::BTreeMap;

/// The tag every run of the experiment carries (campaign files set it in `[tags]`).
pub const EXPERIMENT_TAG: (&str, &str) = ("experiment", "calibrate-validate");

/// The characterizations in the paper's order (§5), as `Bounds::named` lists them.
pub const CHARACTERIZATIONS: [&str; 6] = [
    "no_interrupts",
    "worst_single",
    "single_of_each",
    "sporadic",
    "sliding_window",
    "sliding_window_owcet",
];

/// A prefix T_c is reached by a run whose series goes on to at least T_c less this fraction of
/// T_c, and its bound is the one at the last instant up to T_c plus this fraction: the series'
/// instants are evenly spaced from the run's first event, not placed on T_c.
pub const PREFIX_TOLERANCE: f64 = 0.02;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Calibration,
    Validation,
}

/// What a cell of the experiment is: the kernel (its preset), the preemption model it was booted
/// with, the load and the vCPUs (`host` values for runs outside the lab).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CellKey {
    pub kernel: String,
    pub preempt: String,
    pub load: String,
    pub smp: String,
}

/// One CPU of a calibration boot.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationCpu {
    pub cpu: u32,
    /// The bound at the run's end per characterization ([`CHARACTERIZATIONS`] order; None: not
    /// converged).
    pub final_ns: [Option<u64>; 6],
    /// The time-to-bound series: (seconds since the run's first event, sliding-window bound;
    /// None: not converged at that instant), in time order.
    pub series: Vec<(f64, Option<u64>)>,
    /// The largest latency the calibration boot itself observed on the CPU.
    pub observed_max_ns: Option<u64>,
}

/// A boot that computes the bound.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    pub run_id: String,
    /// Emulated (guest) seconds measured.
    pub duration_s: f64,
    /// Why the boot's bound is not sound (lost events, estimated thread terms); empty: sound.
    pub not_sound_because: Vec<String>,
    pub cpus: Vec<CalibrationCpu>,
}

/// One measurement thread's latencies.
#[derive(Clone, Debug, PartialEq)]
pub struct Latencies {
    pub histogram: Histogram,
    /// The thread's largest samples (its worst-N), any order.
    pub worst_ns: Vec<u64>,
}

/// A boot that only observes.
#[derive(Clone, Debug, PartialEq)]
pub struct Validation {
    pub run_id: String,
    pub duration_s: f64,
    /// Per CPU, its measurement threads.
    pub cpus: BTreeMap<u32, Vec<Latencies>>,
}

/// A number of samples, exact or at the histogram's resolution (≤ 0.1 % of the value).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    pub n: u64,
    pub exact: bool,
}

impl Count {
    fn add(self, o: Count) -> Count {
        Count {
            n: self.n + o.n,
            exact: self.exact && o.exact,
        }
    }
}

/// How many of `l`'s samples lie strictly above `bound_ns`. Exact when the maximum is at or
/// below it, or when the worst-N list holds every sample above it (it has one at or below the
/// bound, or it holds the whole run); else counted on the histogram's buckets (a bucket that
/// straddles the bound counts whole: never fewer than there are).
pub fn samples_above(l: &Latencies, bound_ns: u64) -> Count {
    let total = l.histogram.count();
    match l.histogram.max_ns() {
        None => return Count { n: 0, exact: true },
        Some(m) if m <= bound_ns => return Count { n: 0, exact: true },
        Some(_) => {}
    }
    let in_worst = l.worst_ns.iter().filter(|&&v| v > bound_ns).count() as u64;
    if in_worst < l.worst_ns.len() as u64 || l.worst_ns.len() as u64 >= total {
        return Count {
            n: in_worst,
            exact: true,
        };
    }
    Count {
        n: l.histogram
            .count_at_or_above(bound_ns.saturating_add(1))
            .max(in_worst),
        exact: false,
    }
}

/// The bound at prefix `t_c_s` of one series: `Ok(Some)` converged, `Ok(None)` not converged,
/// `Err(())` the run did not reach the prefix.
#[allow(clippy::result_unit_err)]
pub fn bound_at(series: &[(f64, Option<u64>)], t_c_s: f64) -> Result<Option<u64>, ()> {
    let tol = t_c_s * PREFIX_TOLERANCE;
    let reached = series.last().is_some_and(|&(t, _)| t >= t_c_s - tol);
    if !reached {
        return Err(());
    }
    series
        .iter()
        .take_while(|&&(t, _)| t <= t_c_s + tol)
        .last()
        .map(|&(_, b)| b)
        .ok_or(())
}

/// Median (mean of the two middle values for an even count) and maximum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    pub min: Option<f64>,
    pub median: Option<f64>,
    pub max: Option<f64>,
}

pub fn spread(values: &[f64]) -> Spread {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return Spread::default();
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Spread {
        min: Some(v[0]),
        median: Some(median),
        max: Some(v[n - 1]),
    }
}

/// One bound checked against the validation samples: a characterization at the run's end, or the
/// sliding window at a prefix T_c.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoundCheck {
    pub characterization: &'static str,
    /// The prefix T_c (s); None: the calibration boots' whole runs.
    pub prefix_s: Option<f64>,
    /// Per calibration boot (in the order given): the bound, None when it did not converge or the
    /// boot did not reach the prefix.
    pub bounds_ns: Vec<Option<u64>>,
    pub not_converged: usize,
    /// Calibration boots shorter than the prefix.
    pub too_short: usize,
    /// Over the converged bounds, ns.
    pub spread_ns: Spread,
    /// Validation samples above the lowest converged bound, i.e. above at least one calibration
    /// boot's bound (0 when none converged).
    pub samples_above: Count,
    /// Calibration boots whose converged bound some validation sample exceeded.
    pub boots_exceeded: usize,
    /// (validation run, its largest latency on the CPU) for every validation boot above the lowest
    /// converged bound.
    pub exceeded_by: Vec<(String, u64)>,
}

/// The experiment's answer for one cell and CPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellResult {
    pub key: CellKey,
    pub cpu: u32,
    pub calibration_runs: Vec<String>,
    pub validation_runs: Vec<String>,
    /// Emulated seconds each role got in this cell.
    pub calibration_s: f64,
    pub validation_s: f64,
    /// The calibration boots' own largest latency.
    pub calibration_observed_max_ns: Option<u64>,
    pub validation_samples: u64,
    pub validation_max_ns: Option<u64>,
    /// The sliding-window bound at each prefix T_c.
    pub prefixes: Vec<BoundCheck>,
    /// The six characterizations at the calibration runs' end.
    pub finals: Vec<BoundCheck>,
    /// Per calibration boot, when its sliding-window bound first reached the largest validation
    /// latency (s since its first event); the spread over the boots that did, and how many never
    /// did.
    pub time_to_cover_s: Spread,
    pub never_covered: usize,
    /// Per calibration boot, when its sliding-window bound reached its final value.
    pub time_to_settle_s: Spread,
    /// `run: reason` for every calibration boot whose bound is labelled not sound.
    pub not_sound: Vec<String>,
    /// What the cell lacks (fewer than 3 boots of a role, a CPU missing from a boot).
    pub notes: Vec<String>,
}

impl CellResult {
    /// Validation samples above any converged bound of this cell (prefixes and finals).
    pub fn violations(&self) -> u64 {
        self.prefixes
            .iter()
            .chain(&self.finals)
            .map(|c| c.samples_above.n)
            .max()
            .unwrap_or(0)
    }
}

/// The validation latencies of one CPU, over every validation boot: (run, its threads on the CPU).
fn validation_cpu(val: &[Validation], cpu: u32) -> Vec<(&str, &[Latencies])> {
    val.iter()
        .filter_map(|v| v.cpus.get(&cpu).map(|l| (v.run_id.as_str(), l.as_slice())))
        .collect()
}

fn check(
    characterization: &'static str,
    prefix_s: Option<f64>,
    per_boot: Vec<Result<Option<u64>, ()>>,
    val: &[(&str, &[Latencies])],
) -> BoundCheck {
    let bounds_ns: Vec<Option<u64>> = per_boot.iter().map(|b| b.ok().flatten()).collect();
    let converged: Vec<u64> = bounds_ns.iter().flatten().copied().collect();
    let lowest = converged.iter().copied().min();
    let mut above = Count { n: 0, exact: true };
    let mut exceeded_by = Vec::new();
    if let Some(b) = lowest {
        for (run, threads) in val {
            let mut c = Count { n: 0, exact: true };
            for l in *threads {
                c = c.add(samples_above(l, b));
            }
            if c.n > 0 {
                let max = threads
                    .iter()
                    .filter_map(|l| l.histogram.max_ns())
                    .max()
                    .unwrap_or(0);
                exceeded_by.push((run.to_string(), max));
            }
            above = above.add(c);
        }
    }
    let val_max = exceeded_by.iter().map(|e| e.1).max();
    BoundCheck {
        characterization,
        prefix_s,
        not_converged: per_boot.iter().filter(|b| matches!(b, Ok(None))).count(),
        too_short: per_boot.iter().filter(|b| b.is_err()).count(),
        spread_ns: spread(&converged.iter().map(|&v| v as f64).collect::<Vec<_>>()),
        samples_above: above,
        boots_exceeded: converged
            .iter()
            .filter(|&&b| val_max.is_some_and(|m| m > b))
            .count(),
        exceeded_by,
        bounds_ns,
    }
}

/// When a series first reached `at_least` (None: never).
fn first_reaching(series: &[(f64, Option<u64>)], at_least: u64) -> Option<f64> {
    series
        .iter()
        .find(|(_, b)| b.is_some_and(|b| b >= at_least))
        .map(|&(t, _)| t)
}

/// The least number of boots of each role a cell needs (the experiment's design).
pub const MIN_BOOTS: usize = 3;

/// Join one cell's calibration and validation boots, per CPU of the calibration boots.
/// `prefixes_s`: the T_c to read from each calibration boot's series.
pub fn evaluate(
    key: &CellKey,
    cal: &[Calibration],
    val: &[Validation],
    prefixes_s: &[f64],
) -> Vec<CellResult> {
    let mut cpus: Vec<u32> = cal
        .iter()
        .flat_map(|c| c.cpus.iter().map(|x| x.cpu))
        .chain(val.iter().flat_map(|v| v.cpus.keys().copied()))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut out = Vec::new();
    for cpu in cpus {
        let mut notes = Vec::new();
        for (role, n) in [("calibration", cal.len()), ("validation", val.len())] {
            if n < MIN_BOOTS {
                notes.push(format!(
                    "{n} {role} boots (the design asks for {MIN_BOOTS})"
                ));
            }
        }
        let boot_cpu: Vec<Option<&CalibrationCpu>> = cal
            .iter()
            .map(|c| c.cpus.iter().find(|x| x.cpu == cpu))
            .collect();
        for (c, b) in cal.iter().zip(&boot_cpu) {
            if b.is_none() {
                notes.push(format!(
                    "calibration run {} has no bound for CPU {cpu}",
                    c.run_id
                ));
            }
        }
        for v in val {
            if !v.cpus.contains_key(&cpu) {
                notes.push(format!(
                    "validation run {} has no samples on CPU {cpu}",
                    v.run_id
                ));
            }
        }
        let vcpu = validation_cpu(val, cpu);
        let all: Vec<&Latencies> = vcpu.iter().flat_map(|(_, l)| l.iter()).collect();
        let validation_samples = all.iter().map(|l| l.histogram.count()).sum();
        let validation_max_ns = all.iter().filter_map(|l| l.histogram.max_ns()).max();
        let prefixes = prefixes_s
            .iter()
            .map(|&t| {
                let per_boot = boot_cpu
                    .iter()
                    .map(|b| b.map_or(Err(()), |b| bound_at(&b.series, t)))
                    .collect();
                check("sliding_window", Some(t), per_boot, &vcpu)
            })
            .collect();
        let finals = CHARACTERIZATIONS
            .iter()
            .enumerate()
            .map(|(i, &name)| {
                let per_boot = boot_cpu
                    .iter()
                    .map(|b| b.map_or(Err(()), |b| Ok(b.final_ns[i])))
                    .collect();
                check(name, None, per_boot, &vcpu)
            })
            .collect();
        let present: Vec<&CalibrationCpu> = boot_cpu.iter().flatten().copied().collect();
        let (mut cover, mut never) = (Vec::new(), 0);
        if let Some(vmax) = validation_max_ns {
            for b in &present {
                match first_reaching(&b.series, vmax) {
                    Some(t) => cover.push(t),
                    None => never += 1,
                }
            }
        }
        let settle: Vec<f64> = present
            .iter()
            .filter_map(|b| {
                let last = b.series.last()?.1?;
                first_reaching(&b.series, last)
            })
            .collect();
        out.push(CellResult {
            key: key.clone(),
            cpu,
            calibration_runs: cal.iter().map(|c| c.run_id.clone()).collect(),
            validation_runs: val.iter().map(|v| v.run_id.clone()).collect(),
            calibration_s: cal.iter().map(|c| c.duration_s).sum(),
            validation_s: val.iter().map(|v| v.duration_s).sum(),
            calibration_observed_max_ns: present.iter().filter_map(|b| b.observed_max_ns).max(),
            validation_samples,
            validation_max_ns,
            prefixes,
            finals,
            time_to_cover_s: spread(&cover),
            never_covered: never,
            time_to_settle_s: spread(&settle),
            not_sound: cal
                .iter()
                .flat_map(|c| {
                    c.not_sound_because
                        .iter()
                        .map(move |w| format!("{}: {w}", c.run_id))
                })
                .collect(),
            notes,
        });
    }
    out
}

// ---------- from stored records ----------

/// A record's role in the experiment: its `role` tag (`calibration`, `validation`), else its
/// campaign cell's repetition (`…-rN`): odd calibrates, even validates, so that every pair of
/// repetitions adds one boot of each role to every cell. None: not a run of the experiment.
pub fn role_of(r: &RunRecord) -> Option<Role> {
    role_from_tags(&r.tags)
}

/// [`role_of`] on a record's tags.
pub fn role_from_tags(tags: &BTreeMap<String, String>) -> Option<Role> {
    if tags.get(EXPERIMENT_TAG.0).map(String::as_str) != Some(EXPERIMENT_TAG.1) {
        return None;
    }
    match tags.get("role").map(String::as_str) {
        Some("calibration") => return Some(Role::Calibration),
        Some("validation") => return Some(Role::Validation),
        Some(_) => return None,
        None => {}
    }
    let rep: u64 = tags.get("cell")?.rsplit_once("-r")?.1.parse().ok()?;
    Some(if rep % 2 == 1 {
        Role::Calibration
    } else {
        Role::Validation
    })
}

/// The cell a record belongs to, from the lab's tags and the measurement's loads.
pub fn key_of(r: &RunRecord) -> CellKey {
    let tag = |k: &str| r.tags.get(k).cloned().unwrap_or_else(|| "host".into());
    let loads = r.load_names();
    CellKey {
        kernel: r
            .tags
            .get("kernel_preset")
            .cloned()
            .unwrap_or_else(|| r.system.kernel_release.clone()),
        preempt: tag("preempt"),
        load: if loads.is_empty() {
            "idle".into()
        } else {
            loads.join("+")
        },
        smp: tag("lab_smp"),
    }
}

fn duration_s(r: &RunRecord) -> f64 {
    r.measurement()
        .and_then(|m| m.config.duration_s)
        .unwrap_or(r.wall_duration_s)
}

/// A record as a calibration boot: None when it has no bound.
pub fn calibration_of(r: &RunRecord) -> Option<Calibration> {
    let m = r.measurement()?;
    let b = m.bound.as_ref()?;
    let mut not_sound_because = b.not_sound_because.clone();
    if !b.sound && not_sound_because.is_empty() {
        not_sound_because.push("the bound is not labelled sound".into());
    }
    let cpus = b
        .cpus
        .iter()
        .map(|c| {
            let named = c.bounds.named();
            let mut final_ns = [None; 6];
            for (i, (_, cb)) in named.iter().enumerate() {
                final_ns[i] = cb.latency_ns.filter(|_| cb.converged);
            }
            let observed = c.observed_max_latency_ns.or_else(|| {
                m.threads
                    .iter()
                    .filter(|t| t.cpu == c.cpu)
                    .filter_map(|t| t.histogram.max_ns())
                    .max()
            });
            CalibrationCpu {
                cpu: c.cpu,
                final_ns,
                series: b
                    .series
                    .iter()
                    .filter(|p| p.cpu == c.cpu)
                    .map(|p| (p.t_s, p.sliding_window_ns))
                    .collect(),
                observed_max_ns: observed,
            }
        })
        .collect();
    Some(Calibration {
        run_id: r.id.clone(),
        duration_s: duration_s(r),
        not_sound_because,
        cpus,
    })
}

/// A record as a validation boot: its measurement threads' latencies per CPU.
pub fn validation_of(r: &RunRecord) -> Option<Validation> {
    let m = r.measurement()?;
    let mut cpus: BTreeMap<u32, Vec<Latencies>> = BTreeMap::new();
    for t in &m.threads {
        cpus.entry(t.cpu).or_default().push(Latencies {
            histogram: t.histogram.clone(),
            worst_ns: t.worst.iter().map(|s| s.latency_ns).collect(),
        });
    }
    Some(Validation {
        run_id: r.id.clone(),
        duration_s: duration_s(r),
        cpus,
    })
}

/// The experiment's boots among `runs`, by cell, in the order given.
#[derive(Clone, Debug, Default)]
pub struct Boots {
    pub calibration: Vec<Calibration>,
    pub validation: Vec<Validation>,
}

pub fn group(runs: &[RunRecord]) -> BTreeMap<CellKey, Boots> {
    let mut cells: BTreeMap<CellKey, Boots> = BTreeMap::new();
    for r in runs {
        let Some(role) = role_of(r) else { continue };
        let cell = cells.entry(key_of(r)).or_default();
        match role {
            Role::Calibration => cell.calibration.extend(calibration_of(r)),
            Role::Validation => cell.validation.extend(validation_of(r)),
        }
    }
    cells
}

/// The prefixes T_c when the runs name none.
pub const DEFAULT_PREFIXES_S: [f64; 2] = [60.0, 300.0];

/// The prefixes T_c the experiment reads (s): the `prefixes_s` tag of its runs (`"10,30,60"`,
/// campaign files set it in `[tags]`; the first run that has one), else
/// [`DEFAULT_PREFIXES_S`]. Values that are not positive numbers are left out.
pub fn prefixes_of(runs: &[RunRecord]) -> Vec<f64> {
    let tagged = runs
        .iter()
        .filter(|r| role_of(r).is_some())
        .find_map(|r| r.tags.get("prefixes_s"));
    let mut v: Vec<f64> = match tagged {
        Some(t) => t
            .split(',')
            .filter_map(|x| x.trim().parse::<f64>().ok())
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect(),
        None => Vec::new(),
    };
    if v.is_empty() {
        v = DEFAULT_PREFIXES_S.to_vec();
    }
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// The whole experiment over stored runs: every cell, every CPU.
pub fn analyze(runs: &[RunRecord], prefixes_s: &[f64]) -> Vec<CellResult> {
    group(runs)
        .iter()
        .flat_map(|(k, b)| evaluate(k, &b.calibration, &b.validation, prefixes_s))
        .collect()
}

#[cfg(test)]
mod tests;
