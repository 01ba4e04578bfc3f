//! `taskset sweep`: the thesis' load sweep (Lelli 2014 §2.3, Tables 2.1–2.2) in one process —
//! sets generated from a seed, every set × policy run, one record with the per-point table.
//! A lab guest boots once for the whole sweep instead of once per run.
//!
//! Partitioned (Table 2.1, "tasks statically bound to a CPU core … the load on each core
//! increased from 0.6 to 0.9"): every CPU gets its own set of `--tasks-per-cpu` tasks at
//! U = R, pinned in a one-CPU root domain; global (Table 2.2): one set of `--tasks-per-cpu` × m
//! tasks at total U on all m CPUs. The thesis does not give the number of tasks of §2.3; its
//! Ch. 3 uses N = 3m, the default here.
//!
//! The thesis' global loads (3.4–3.9 on 4 CPUs, up to 0.975 per CPU) exceed what Linux admits
//! by default: sched_rt_runtime_us/sched_rt_period_us = 0.95 per CPU, minus the fair server's
//! 50 ms/1 s on ≥ 6.12. The sweep's `rt_runtime` and `fair_server` change those for the sweep and
//! write the old values back when it ends (also on error, SIGINT/SIGTERM and panic; not on
//! SIGKILL); the record lists every setting with its before/during values.

use super::field::*;
use super::{gen, job, plan, PlacementKind, PolicyKind, RunOptions, TasksetError};
use crate::common::Values;
use rtscope_analysis::sched::KernelLimits;
use rtscope_model::taskset::{
    AdmissionInfo, KernelSetting, SweepConfig, SweepResult, SweepRun, TaskSet, TasksetResult,
    Verdict,
};
use rtscope_model::{WarningCode, Warnings};
use rtscope_sys::knob::{Knob, KnobError};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn bad(s: String) -> TasksetError {
    TasksetError::Invalid(s)
}

/// `taskset sweep`'s flags as given.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepFlags {
    /// partitioned | global
    pub placement: String,
    /// Per-CPU load R (partitioned) or total U (global), one point each.
    pub loads: Vec<f64>,
    pub sets: u32,
    pub tasks_per_cpu: u32,
    /// deadline | other | cfs | fifo
    pub policies: Vec<String>,
    /// Each run's length (0.5 s ..= 10 min).
    pub duration: Duration,
    pub seed: u64,
    pub margin: f64,
    /// SCHED_DEADLINE runtime allowance added after the margin (0 ..= 100 ms).
    pub margin_add: Duration,
    /// cputime | calibrated
    pub work: String,
    /// C_min rescaling (zero: off).
    pub cmin: Duration,
    pub tmin: Duration,
    pub tmax: Duration,
    pub wss_kb: u64,
    pub cpus: Option<String>,
    /// The RT bandwidth (/proc/sys/kernel/sched_rt_runtime_us) for the sweep.
    pub rt_runtime: Option<RtRuntime>,
    /// Every CPU's fair-server runtime per its period for the sweep.
    pub fair_server: Option<Duration>,
}

/// `sched_rt_runtime_us`: the RT tasks' runtime per `sched_rt_period_us`, or no limit (the
/// kernel's -1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtRuntime {
    Unlimited,
    /// Whole microseconds, 1 µs ..= the period.
    Limit(Duration),
}

/// A sweep resolved: nothing has run and no setting has changed.
#[derive(Clone, Debug)]
pub struct SweepJob {
    pub config: SweepConfig,
    policies: Vec<PolicyKind>,
    gen: gen::GenParams,
    settings: Vec<(PathBuf, String)>,
    margin_add: Duration,
}

const RT_RUNTIME_FILE: &str = "/proc/sys/kernel/sched_rt_runtime_us";
const RT_PERIOD_FILE: &str = "/proc/sys/kernel/sched_rt_period_us";
const FAIR_SERVER_DIR: &str = "/sys/kernel/debug/sched/fair_server";

/// Check every flag; exit-2 errors name the flag and the accepted range.
pub fn prepare<V: Values>(f: &SweepFlags, v: &V) -> Result<SweepJob, V::Error>
where
    V::Error: From<TasksetError>,
{
    let cpus = v.cpus(&CPUS.to_string(), f.cpus.as_deref())?;
    let m = cpus.len();
    let global = match f.placement.as_str() {
        "global" => true,
        "partitioned" => false,
        p => {
            return Err(bad(format!("{PLACEMENT}: partitioned or global, got '{p}'")).into());
        }
    };
    check_loads(&f.loads, global, m)?;
    if !(1..=1000).contains(&f.sets) {
        return Err(bad(format!("{SETS}: must be 1..=1000, got {}", f.sets)).into());
    }
    let max_tpc = (super::runner::MAX_TASKS / m.max(1)).min(64) as u32;
    if !(1..=max_tpc).contains(&f.tasks_per_cpu) {
        return Err(bad(format!(
            "{TASKS_PER_CPU}: must be 1..={max_tpc} on {m} CPUs, got {}",
            f.tasks_per_cpu
        ))
        .into());
    }
    let policies = parse_policies(&f.policies)?;
    if policies.iter().any(|p| matches!(p, PolicyKind::Fifo(_)))
        && (f.tasks_per_cpu as usize * m) > plan::FIFO_TOP as usize
    {
        return Err(bad(format!(
            "{TASKS_PER_CPU}: fifo needs a distinct priority per task, at most {} tasks; {} × {m} CPUs is more",
            plan::FIFO_TOP,
            f.tasks_per_cpu
        ))
        .into());
    }
    if global && policies.contains(&PolicyKind::Deadline) {
        let online = v.cpus(&CPUS.to_string(), None)?;
        if cpus != online {
            return Err(bad(format!(
                "{CPUS}: global SCHED_DEADLINE runs on its whole root domain (CPUs {online:?}); the kernel refuses narrower affinities"
            ))
            .into());
        }
    }
    // The reservation flags, checked by the one rule `taskset run` uses.
    job::PlanFlags {
        policy: "deadline".into(),
        priorities: "rm".into(),
        placement: "global".into(),
        fit: "worst".into(),
        bin_test: "policy".into(),
        cluster_size: 1,
        cluster_by: None,
        margin: f.margin,
        margin_add: f.margin_add,
        inflate: Duration::ZERO,
        cpus: None,
        no_probe: true,
    }
    .resolve()?;
    if !["cputime", "calibrated"].contains(&f.work.as_str()) {
        return Err(bad(format!("{WORK}: cputime or calibrated, got '{}'", f.work)).into());
    }
    if !(1..=1024 * 1024).contains(&f.wss_kb) {
        return Err(bad(format!("{WSS_KB}: must be 1..=1048576, got {}", f.wss_kb)).into());
    }
    let duration = job::run_length(f.duration)?;
    // The generator's own rules (periods, C_min against the load) via `taskset gen`'s checks,
    // on the heaviest point.
    let top = f.loads.iter().copied().fold(0.0, f64::max);
    let g = job::GenFlags {
        n: if global {
            f.tasks_per_cpu * m as u32
        } else {
            f.tasks_per_cpu
        },
        utilisation: top,
        method: "randfixedsum".into(),
        tmin: f.tmin,
        tmax: f.tmax,
        periods: Vec::new(),
        period_gran: Duration::from_micros(100),
        cmin: (!f.cmin.is_zero()).then_some(f.cmin),
        umax: if global { 1.0 } else { top },
        deadlines: "implicit".into(),
        dmin_frac: 0.5,
        seed: f.seed,
        count: 1,
        cpu_count: Some(if global { m as u32 } else { 1 }),
        output: None,
        format: "json".into(),
    };
    let gen = job::gen_params(&g)?;
    if f.cmin >= f.tmin {
        return Err(bad(format!(
            "{CMIN}: must be below {TMIN} ({}), got {}",
            job::human(f.tmin),
            job::human(f.cmin)
        ))
        .into());
    }
    let settings = kernel_settings(f.rt_runtime, f.fair_server, &cpus, Path::new("/"))?;
    if policies.iter().any(|p| !matches!(p, PolicyKind::Other)) || !settings.is_empty() {
        v.require_realtime(
            "taskset sweep",
            "SCHED_DEADLINE/SCHED_FIFO threads or kernel settings",
        )?;
    }
    Ok(SweepJob {
        config: SweepConfig {
            placement: f.placement.clone(),
            loads: f.loads.clone(),
            sets: f.sets,
            tasks_per_cpu: f.tasks_per_cpu,
            cpus,
            policies: policies.iter().map(|p| policy_name(*p).into()).collect(),
            seed: f.seed,
            duration_s: duration,
            work: f.work.clone(),
            margin: f.margin,
            margin_us: f.margin_add.as_micros() as u64,
            cmin_us: f.cmin.as_micros() as u64,
            tmin_ms: f.tmin.as_secs_f64() * 1e3,
            tmax_ms: f.tmax.as_secs_f64() * 1e3,
            wss_bytes: f.wss_kb * 1024,
        },
        policies,
        gen,
        settings,
        margin_add: f.margin_add,
    })
}

fn check_loads(loads: &[f64], global: bool, m: usize) -> Result<(), TasksetError> {
    if loads.is_empty() || loads.len() > 64 {
        return Err(bad(format!(
            "{LOADS}: give 1..=64 loads, got {}",
            loads.len()
        )));
    }
    let hi = if global { m as f64 } else { 1.0 };
    for &l in loads {
        if !(l > 0.0 && l <= hi) {
            return Err(bad(if global {
                format!("{LOADS}: a global load is the total U, in (0, {m}] on {m} CPUs, got {l}")
            } else {
                format!("{LOADS}: a partitioned load is the per-CPU load R, in (0, 1], got {l}")
            }));
        }
    }
    Ok(())
}

fn parse_policies(ps: &[String]) -> Result<Vec<PolicyKind>, TasksetError> {
    if ps.is_empty() {
        return Err(bad(format!(
            "{POLICIES}: give one or more of deadline, other, fifo"
        )));
    }
    let mut out = Vec::new();
    for p in ps {
        let k = match p.as_str() {
            "deadline" => PolicyKind::Deadline,
            "other" | "cfs" => PolicyKind::Other,
            "fifo" => PolicyKind::Fifo(rtscope_analysis::sched::PriorityOrder::RateMonotonic),
            o => {
                return Err(bad(format!(
                    "{POLICIES}: deadline, other or fifo (comma separated), got '{o}'"
                )))
            }
        };
        if out.contains(&k) {
            return Err(bad(format!("{POLICIES}: '{p}' given twice")));
        }
        out.push(k);
    }
    Ok(out)
}

fn policy_name(p: PolicyKind) -> &'static str {
    match p {
        PolicyKind::Deadline => "deadline",
        PolicyKind::Fifo(_) => "fifo",
        PolicyKind::Other => "other",
    }
}

/// The files and values the sweep's `rt_runtime`/`fair_server` ask for, checked against the
/// kernel's rules (`root` is `/` except in tests): sched_rt_runtime_us is -1 (no limit) or
/// whole µs up to sched_rt_period_us; a fair server's runtime is at most its period.
fn kernel_settings(
    rt_runtime: Option<RtRuntime>,
    fair_server: Option<Duration>,
    cpus: &[u32],
    root: &Path,
) -> Result<Vec<(PathBuf, String)>, TasksetError> {
    let at = |p: &str| root.join(p.trim_start_matches('/'));
    let mut out = Vec::new();
    if let Some(rt) = rt_runtime {
        let period: u64 = std::fs::read_to_string(at(RT_PERIOD_FILE))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| {
                bad(format!(
                    "{RT_RUNTIME}: {RT_PERIOD_FILE} unreadable: this kernel has no RT bandwidth sysctls"
                ))
            })?;
        let value = match rt {
            RtRuntime::Unlimited => "-1".to_string(),
            RtRuntime::Limit(d) => {
                let us = d.as_micros() as u64;
                if !d.subsec_nanos().is_multiple_of(1000) || !(1..=period).contains(&us) {
                    return Err(bad(format!(
                        "{RT_RUNTIME}: must be -1 (no limit) or whole µs in 1us ..= {} (sched_rt_period_us), got {}",
                        job::human(Duration::from_micros(period)),
                        job::human(d)
                    )));
                }
                us.to_string()
            }
        };
        out.push((at(RT_RUNTIME_FILE), value));
    }
    if let Some(runtime) = fair_server {
        let dir = at(FAIR_SERVER_DIR);
        if !dir.is_dir() {
            return Err(bad(format!(
                "{FAIR_SERVER}: {} not found: the kernel has no fair server (Linux < 6.12) or debugfs is not mounted/readable",
                dir.display()
            )));
        }
        for &c in cpus {
            let d = dir.join(format!("cpu{c}"));
            let period: u64 = std::fs::read_to_string(d.join("period"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| {
                    bad(format!(
                        "{FAIR_SERVER}: {} unreadable",
                        d.join("period").display()
                    ))
                })?;
            let ns = runtime.as_nanos() as u64;
            if ns > period {
                return Err(bad(format!(
                    "{FAIR_SERVER}: must be in 0 ..= {} (the fair server's period on cpu{c}), got {}",
                    job::human(Duration::from_nanos(period)),
                    job::human(runtime)
                )));
            }
            out.push((d.join("runtime"), ns.to_string()));
        }
    }
    Ok(out)
}

/// Kernel settings changed for the sweep, each a [`Knob`] (journalled, so a killed sweep's
/// settings are written back by the next run); written back by [`Applied::restore`], or on drop
/// (an error or a panic between apply and restore).
struct Applied {
    done: Vec<(Knob, KernelSetting)>,
    restored: bool,
}

impl Applied {
    fn apply(want: &[(PathBuf, String)]) -> Result<Applied, TasksetError> {
        let mut a = Applied {
            done: Vec::new(),
            restored: false,
        };
        for (p, val) in want {
            // On error `a` drops here and writes back what was already changed.
            let k = Knob::set(p, val).map_err(|e| match e {
                KnobError::Read { source, .. } => TasksetError::Sys {
                    what: format!("read {}", p.display()),
                    source,
                },
                KnobError::Write { source, .. } => TasksetError::Sys {
                    what: format!("write {val} to {}", p.display()),
                    source,
                },
                other => TasksetError::Sys {
                    what: format!("write {val} to {}", p.display()),
                    source: std::io::Error::other(other.to_string()),
                },
            })?;
            let s = KernelSetting {
                path: p.display().to_string(),
                before: k.original().to_string(),
                during: val.clone(),
                restored: false,
            };
            a.done.push((k, s));
        }
        Ok(a)
    }

    /// Write the old values back, last changed first; errors go to `warnings`.
    fn restore(&mut self, warnings: &mut Vec<rtscope_model::Warning>) -> Vec<KernelSetting> {
        self.restored = true;
        for (k, s) in self.done.iter_mut().rev() {
            match k.restore() {
                Ok(()) => s.restored = true,
                Err(e) => warnings.warn(WarningCode::System, e.to_string()),
            }
        }
        self.done.iter().map(|(_, s)| s.clone()).collect()
    }
}

impl Drop for Applied {
    fn drop(&mut self) {
        if !self.restored {
            let mut w = Vec::new();
            self.restore(&mut w);
            for w in w {
                eprintln!("rtscope: {}", w.message);
            }
        }
    }
}

impl SweepJob {
    /// The set `index` of the point `load`, and where each task runs (an index into the CPUs).
    pub fn set(&self, load: f64, index: u32) -> Result<(TaskSet, Vec<usize>), TasksetError> {
        let m = self.config.cpus.len();
        if self.config.placement == "global" {
            let s = gen::generate(&gen::GenParams {
                n: self.config.tasks_per_cpu * m as u32,
                utilisation: load,
                umax: 1.0,
                index,
                ..self.gen.clone()
            })
            .map_err(|e| bad(format!("{LOADS} {load}: {e}")))?;
            let n = s.tasks.len();
            return Ok((s, vec![0; n]));
        }
        let mut tasks = Vec::new();
        let mut assign = Vec::new();
        for k in 0..m {
            let s = gen::generate(&gen::GenParams {
                n: self.config.tasks_per_cpu,
                utilisation: load,
                umax: load,
                // One stream per (set, CPU): the CPUs' sets are independent draws.
                index: index * m as u32 + k as u32,
                ..self.gen.clone()
            })
            .map_err(|e| bad(format!("{LOADS} {load}: {e}")))?;
            for mut t in s.tasks {
                t.id = tasks.len() as u32;
                tasks.push(t);
                assign.push(k);
            }
        }
        Ok((
            TaskSet {
                schema_version: rtscope_model::SCHEMA_VERSION,
                tasks,
                generated: None,
            },
            assign,
        ))
    }

    /// How many runs the sweep makes.
    pub fn runs(&self) -> usize {
        self.config.loads.len() * self.config.sets as usize * self.policies.len()
    }

    /// Apply the kernel settings, run every set × policy (`each` sees every run as it ends),
    /// restore the settings, summarise. A stop (SIGINT/SIGTERM) ends the sweep after the run in
    /// progress, with the runs so far.
    pub fn run(&self, mut each: impl FnMut(&SweepRun)) -> Result<SweepResult, TasksetError> {
        let t0 = std::time::Instant::now();
        rtscope_probe::signals::clear_stop();
        let _sig = rtscope_probe::signals::Guard::install(&[]);
        let mut warnings = Vec::new();
        let mut applied = Applied::apply(&self.settings)?;
        let m = self.config.cpus.len() as u32;
        let has_dl = self.policies.contains(&PolicyKind::Deadline);
        let (admission, limits) = super::runner::admission_info(m, has_dl);
        let mut runs = Vec::new();
        let mut interrupted = false;
        'sweep: for &load in &self.config.loads {
            for i in 0..self.config.sets {
                let (set, assign) = self.set(load, i)?;
                for &p in &self.policies {
                    if rtscope_probe::signals::stop_requested() {
                        interrupted = true;
                        break 'sweep;
                    }
                    let r = self.one(load, i, &set, &assign, p, &admission, limits);
                    each(&r);
                    let stop = r.status == "interrupted";
                    if !stop {
                        runs.push(r);
                    }
                    if stop || rtscope_probe::signals::stop_requested() {
                        interrupted = true;
                        break 'sweep;
                    }
                }
            }
        }
        let kernel_settings = applied.restore(&mut warnings);
        let points = rtscope_analysis::sched::sweep::summarise(&runs);
        if interrupted {
            warnings.warn(
                WarningCode::Interrupted,
                format!(
                    "stopped by {}: {} of {} runs done",
                    rtscope_probe::signals::stop_signal_name(),
                    runs.len(),
                    self.runs()
                ),
            );
        }
        let refused = runs.iter().filter(|r| r.status != "ok").count();
        if refused > 0 {
            warnings.warn(
                WarningCode::System,
                format!(
                    "{refused} runs were refused or failed (not in the means): see runs[].error"
                ),
            );
        }
        Ok(SweepResult {
            config: self.config.clone(),
            admission,
            kernel_settings,
            points,
            runs,
            elapsed_s: t0.elapsed().as_secs_f64(),
            interrupted,
            warnings,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn one(
        &self,
        load: f64,
        index: u32,
        set: &TaskSet,
        assign: &[usize],
        policy: PolicyKind,
        admission: &AdmissionInfo,
        limits: KernelLimits,
    ) -> SweepRun {
        let c = &self.config;
        let o = plan::PlanOptions {
            margin: c.margin,
            extra_runtime_ns: self.margin_add.as_nanos() as u64,
            same_bins: true,
        };
        let planned = if c.placement == "global" {
            plan::plan_with(set, policy, PlacementKind::Global, &c.cpus, limits, &o)
        } else {
            plan::plan_assigned(set, policy, &c.cpus, assign, limits, &o)
        };
        let opts = RunOptions {
            duration_ns: (c.duration_s * 1e9) as u64,
            wss_bytes: c.wss_bytes,
            access: super::work::Access::Sequential,
            seed: c.seed,
            inflate_ns: 0,
            probe_admission: false,
            cpus: c.cpus.clone(),
            source: format!("sweep {} load {load} set {index}", c.placement),
            dl_overrun_signal: true,
            work_by_cputime: c.work == "cputime",
            admission: Some((admission.clone(), limits)),
        };
        let outcome = planned.and_then(|p| super::run(&p, &opts, set));
        sweep_run(load, index, policy_name(policy), set.utilisation(), outcome)
    }
}

/// One run's row from its outcome: a plan or admission refusal is "refused", another error
/// "failed", a run stopped by a signal "interrupted" (dropped from the sweep).
pub fn sweep_run(
    load: f64,
    set: u32,
    policy: &str,
    utilisation: f64,
    outcome: Result<TasksetResult, TasksetError>,
) -> SweepRun {
    let mut row = SweepRun {
        load,
        set,
        policy: policy.into(),
        utilisation,
        status: "ok".into(),
        error: None,
        jobs: 0,
        misses: 0,
        miss_pct: 0.0,
        dl_overruns: 0,
        misses_after_overrun: 0,
        max_exec_over_c: 0.0,
        migrations_per_s: None,
        context_switches_per_s: None,
        predicted_schedulable: None,
    };
    let r = match outcome {
        Ok(r) => r,
        Err(e) => {
            row.status = match e {
                TasksetError::Invalid(_) | TasksetError::Admission(_) => "refused",
                _ => "failed",
            }
            .into();
            row.error = Some(e.to_string());
            return row;
        }
    };
    if r.interrupted {
        row.status = "interrupted".into();
    }
    row.jobs = r.total_jobs;
    row.misses = r.total_misses;
    row.miss_pct = r.miss_pct;
    row.dl_overruns = r.total_dl_overruns;
    row.misses_after_overrun = r.tasks.iter().map(|t| t.misses_after_overrun).sum();
    row.max_exec_over_c = r
        .tasks
        .iter()
        .filter(|t| t.wcet_ns > 0)
        .map(|t| t.avg_exec_ns / t.wcet_ns as f64)
        .fold(0.0, f64::max);
    row.migrations_per_s = r.migrations_per_s;
    row.context_switches_per_s = r.context_switches_per_s;
    row.predicted_schedulable = (policy != "other").then(|| {
        let timing: Vec<_> = r
            .predictions
            .iter()
            .filter(|p| p.test != "kernel-admission")
            .collect();
        let scopes: std::collections::BTreeSet<&str> =
            timing.iter().map(|p| p.scope.as_str()).collect();
        !timing.is_empty()
            && !timing.iter().any(|p| p.verdict == Verdict::NotSchedulable)
            && scopes.iter().all(|s| {
                timing
                    .iter()
                    .any(|p| p.scope == *s && p.verdict == Verdict::Schedulable)
            })
    });
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Vec<u32>);
    impl Values for Fixed {
        type Error = TasksetError;
        fn cpus(&self, _: &str, _: Option<&str>) -> Result<Vec<u32>, TasksetError> {
            Ok(self.0.clone())
        }
        fn read(&self, _: &str, _: &Path) -> Result<String, TasksetError> {
            Ok(String::new())
        }
        fn output_dir(&self, _: &str, _: &Path) -> Result<(), TasksetError> {
            Ok(())
        }
        fn write(&self, _: &Path, _: &[u8]) -> Result<(), TasksetError> {
            Ok(())
        }
        fn require_realtime(&self, _: &str, _: &str) -> Result<(), TasksetError> {
            Ok(())
        }
    }
    impl From<crate::common::BenchError> for TasksetError {
        fn from(e: crate::common::BenchError) -> TasksetError {
            TasksetError::Invalid(e.to_string())
        }
    }

    fn flags() -> SweepFlags {
        SweepFlags {
            placement: "partitioned".into(),
            loads: vec![0.6, 0.9],
            sets: 3,
            tasks_per_cpu: 3,
            policies: vec!["deadline".into(), "other".into()],
            duration: Duration::from_secs(1),
            seed: 1,
            margin: 1.0,
            margin_add: Duration::from_micros(50),
            work: "cputime".into(),
            cmin: Duration::from_micros(50),
            tmin: Duration::from_millis(10),
            tmax: Duration::from_millis(100),
            wss_kb: 16,
            cpus: None,
            rt_runtime: None,
            fair_server: None,
        }
    }

    fn err(f: SweepFlags) -> String {
        match prepare(&f, &Fixed(vec![0, 1, 2, 3])) {
            Err(TasksetError::Invalid(m)) => m,
            Err(e) => panic!("not bad input: {e}"),
            Ok(_) => panic!("accepted {f:?}"),
        }
    }

    #[test]
    fn bad_flags_name_the_flag_and_the_range() {
        let rows: Vec<(SweepFlags, &str)> = vec![
            (
                SweepFlags {
                    placement: "x".into(),
                    ..flags()
                },
                "⟨taskset.placement⟩: partitioned or global, got 'x'",
            ),
            (
                SweepFlags {
                    loads: vec![1.2],
                    ..flags()
                },
                "⟨taskset.loads⟩: a partitioned load is the per-CPU load R, in (0, 1], got 1.2",
            ),
            (
                SweepFlags {
                    placement: "global".into(),
                    loads: vec![4.5],
                    ..flags()
                },
                "⟨taskset.loads⟩: a global load is the total U, in (0, 4] on 4 CPUs, got 4.5",
            ),
            (
                SweepFlags {
                    loads: vec![],
                    ..flags()
                },
                "⟨taskset.loads⟩: give 1..=64 loads, got 0",
            ),
            (
                SweepFlags { sets: 0, ..flags() },
                "⟨taskset.sets⟩: must be 1..=1000, got 0",
            ),
            (
                SweepFlags {
                    tasks_per_cpu: 0,
                    ..flags()
                },
                "⟨taskset.tasks_per_cpu⟩: must be 1..=64 on 4 CPUs, got 0",
            ),
            (
                SweepFlags {
                    policies: vec!["rr".into()],
                    ..flags()
                },
                "⟨taskset.policies⟩: deadline, other or fifo (comma separated), got 'rr'",
            ),
            (
                SweepFlags {
                    policies: vec!["other".into(), "cfs".into()],
                    ..flags()
                },
                "⟨taskset.policies⟩: 'cfs' given twice",
            ),
            (
                SweepFlags {
                    margin: 0.5,
                    ..flags()
                },
                "⟨taskset.margin⟩: must be in [1, 2], got 0.5",
            ),
            (
                SweepFlags {
                    work: "x".into(),
                    ..flags()
                },
                "⟨taskset.work⟩: cputime or calibrated, got 'x'",
            ),
            (
                SweepFlags {
                    duration: Duration::from_secs(660),
                    ..flags()
                },
                "⟨taskset.duration⟩: 11m is out of range",
            ),
            (
                SweepFlags {
                    tasks_per_cpu: 30,
                    policies: vec!["fifo".into()],
                    ..flags()
                },
                "⟨taskset.tasks_per_cpu⟩: fifo needs a distinct priority per task, at most 90 tasks",
            ),
        ];
        for (f, want) in rows {
            let got = err(f);
            assert!(got.starts_with(want), "{got} / {want}");
        }
    }

    #[test]
    fn partitioned_sets_load_every_cpu_at_r_and_are_reproducible() {
        let j = prepare(&flags(), &Fixed(vec![0, 1, 2, 3])).unwrap();
        assert_eq!(j.runs(), 2 * 3 * 2);
        let (s, assign) = j.set(0.9, 2).unwrap();
        assert_eq!(s.tasks.len(), 12);
        assert_eq!(assign, vec![0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]);
        for k in 0..4 {
            let u: f64 = s
                .tasks
                .iter()
                .zip(&assign)
                .filter(|(_, &a)| a == k)
                .map(|(t, _)| t.utilisation())
                .sum();
            assert!((u - 0.9).abs() < 1e-6, "cpu {k}: {u}");
        }
        assert!(s.tasks.iter().all(|t| t.wcet_ns >= 50_000));
        assert_eq!(j.set(0.9, 2).unwrap().0, s, "same seed, same set");
        assert_ne!(j.set(0.9, 1).unwrap().0, s, "another index, another set");
        // Global: one set of 3 × 4 tasks at the total load, every task on every CPU.
        let g = prepare(
            &SweepFlags {
                placement: "global".into(),
                loads: vec![3.9],
                ..flags()
            },
            &Fixed(vec![0, 1, 2, 3]),
        )
        .unwrap();
        let (s, assign) = g.set(3.9, 0).unwrap();
        assert_eq!((s.tasks.len(), assign), (12, vec![0; 12]));
        assert!((s.utilisation() - 3.9).abs() < 1e-6);
    }

    #[test]
    fn kernel_settings_checked_against_the_kernels_rules() {
        let d = std::env::temp_dir().join(format!("rtscope-sweep-{}", std::process::id()));
        let fs = d.join("sys/kernel/debug/sched/fair_server");
        std::fs::create_dir_all(d.join("proc/sys/kernel")).unwrap();
        std::fs::write(d.join("proc/sys/kernel/sched_rt_period_us"), "1000000\n").unwrap();
        let lim = |us| Some(RtRuntime::Limit(Duration::from_micros(us)));
        let s = kernel_settings(lim(1_000_000), None, &[0], &d).unwrap();
        assert_eq!(
            s,
            vec![(
                d.join("proc/sys/kernel/sched_rt_runtime_us"),
                "1000000".into()
            )]
        );
        assert_eq!(
            kernel_settings(Some(RtRuntime::Unlimited), None, &[0], &d).unwrap()[0].1,
            "-1"
        );
        let e = kernel_settings(lim(1_000_001), None, &[0], &d).unwrap_err();
        assert_eq!(
            e.to_string(),
            "⟨taskset.rt_runtime⟩: must be -1 (no limit) or whole µs in 1us ..= 1s (sched_rt_period_us), got 1.000001s"
        );
        let half_us = Some(RtRuntime::Limit(Duration::from_nanos(1500)));
        let e = kernel_settings(half_us, None, &[0], &d).unwrap_err();
        assert!(e.to_string().ends_with("got 1.5us"), "{e}");
        let fair = |us| Some(Duration::from_micros(us));
        let e = kernel_settings(None, fair(10_000), &[0], &d).unwrap_err();
        assert!(e.to_string().starts_with("⟨taskset.fair_server⟩: "), "{e}");
        for c in 0..2 {
            std::fs::create_dir_all(fs.join(format!("cpu{c}"))).unwrap();
            std::fs::write(fs.join(format!("cpu{c}/period")), "1000000000\n").unwrap();
            std::fs::write(fs.join(format!("cpu{c}/runtime")), "50000000\n").unwrap();
        }
        let s = kernel_settings(None, fair(10_000), &[0, 1], &d).unwrap();
        assert_eq!(s[1], (fs.join("cpu1/runtime"), "10000000".into()));
        let e = kernel_settings(None, fair(2_000_000), &[0], &d).unwrap_err();
        assert_eq!(
            e.to_string(),
            "⟨taskset.fair_server⟩: must be in 0 ..= 1s (the fair server's period on cpu0), got 2s"
        );
        // Applied, then restored: the files read as before, the record says what was set.
        let mut a = Applied::apply(&s).unwrap();
        assert_eq!(
            std::fs::read_to_string(fs.join("cpu0/runtime")).unwrap(),
            "10000000"
        );
        let mut w = Vec::new();
        let done = a.restore(&mut w);
        assert!(w.is_empty());
        assert_eq!(
            (
                done[0].before.as_str(),
                done[0].during.as_str(),
                done[0].restored
            ),
            ("50000000", "10000000", true)
        );
        assert_eq!(
            std::fs::read_to_string(fs.join("cpu0/runtime")).unwrap(),
            "50000000"
        );
        // Dropped without restore (an error path): written back too.
        drop(Applied::apply(&s).unwrap());
        assert_eq!(
            std::fs::read_to_string(fs.join("cpu1/runtime")).unwrap(),
            "50000000"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_refused_run_is_counted_apart() {
        let r = sweep_run(
            0.9,
            4,
            "deadline",
            3.6,
            Err(TasksetError::Admission("EBUSY …".into())),
        );
        assert_eq!(
            (r.status.as_str(), r.error.as_deref()),
            ("refused", Some("EBUSY …"))
        );
        let r = sweep_run(
            0.9,
            4,
            "deadline",
            3.6,
            Err(TasksetError::Sys {
                what: "cpuset".into(),
                source: std::io::Error::other("x"),
            }),
        );
        assert_eq!(r.status, "failed");
    }
}
