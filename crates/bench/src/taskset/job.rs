//! The task-set jobs from their flags to their results: generate sets and write them (`gen`),
//! read a set, plan it and predict (`check`), read a set or an rt-app workload and plan its run
//! (`run`). Everything is resolved and checked before a thread or a cpuset exists; bad input is
//! [`TasksetError::Invalid`], one line naming the flag. The values every verb shares (CPU lists,
//! durations, input and output files, privileges) are resolved by the caller's one rule for each
//! ([`crate::common::Values`]).

use super::field::*;
use super::{
    gen, rtapp, rtapp_engine, work::Access, PlacementKind, PolicyKind, RunOptions, RunPlan,
};
use super::{read_set, write_set, TasksetError, ThreadPolicy};
pub use crate::common::Values;
use rtscope_analysis::sched::{Fit, KernelLimits, PriorityOrder};
use rtscope_model::taskset::{AdmissionInfo, TaskSet, TasksetResult, TestResult};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn bad(s: String) -> TasksetError {
    TasksetError::Invalid(s)
}

/// `taskset gen`'s flags as given.
#[derive(Clone, Debug, PartialEq)]
pub struct GenFlags {
    pub n: u32,
    pub utilisation: f64,
    /// randfixedsum | uunifast-discard | uunifast
    pub method: String,
    /// Periods are log-uniform in [tmin, tmax] …
    pub tmin: Duration,
    pub tmax: Duration,
    /// … or drawn from this list when it is not empty.
    pub periods: Vec<Duration>,
    /// Periods are rounded to this (≥ 1 µs).
    pub period_gran: Duration,
    /// C_min rescaling: every C at least this.
    pub cmin: Option<Duration>,
    pub umax: f64,
    /// implicit | constrained
    pub deadlines: String,
    pub dmin_frac: f64,
    pub seed: u64,
    pub count: u32,
    /// The CPUs the set is meant for (default: the online CPUs).
    pub cpu_count: Option<u32>,
    pub output: Option<PathBuf>,
    /// json | toml
    pub format: String,
}

/// Where generated sets went.
#[derive(Debug, PartialEq)]
pub enum Generated {
    /// One set, for stdout.
    Text(String),
    /// Written to files; the line saying so when there were several.
    Written(Option<String>),
}

/// Generate the sets (all of them before writing anything: nothing half-written on error).
pub fn generate<V: Values>(g: &GenFlags, v: &V) -> Result<Generated, V::Error>
where
    V::Error: From<TasksetError>,
{
    let base = gen_params(g)?;
    let sets = (0..g.count)
        .map(|i| {
            gen::generate(&gen::GenParams {
                index: i,
                ..base.clone()
            })
        })
        .collect::<Result<Vec<TaskSet>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    let toml_format = g.format == "toml";
    let ext = if toml_format { "toml" } else { "json" };
    match (&g.output, g.count) {
        (None, 1) => Ok(Generated::Text(write_set(&sets[0], toml_format)?)),
        (None, _) => Err(bad(format!("{COUNT} > 1 needs {OUTPUT} DIR")).into()),
        (Some(p), 1) if !p.is_dir() && !p.to_string_lossy().ends_with('/') => {
            v.write(p, write_set(&sets[0], toml_format)?.as_bytes())?;
            Ok(Generated::Written(None))
        }
        (Some(dir), _) => {
            v.output_dir(&OUTPUT.to_string(), dir)?;
            for (i, s) in sets.iter().enumerate() {
                let p = dir.join(format!("set-{i:03}.{ext}"));
                v.write(&p, write_set(s, toml_format)?.as_bytes())?;
            }
            Ok(Generated::Written(Some(format!(
                "wrote {} sets to {}",
                sets.len(),
                dir.display()
            ))))
        }
    }
}

/// The generator's parameters, checked.
pub fn gen_params(g: &GenFlags) -> Result<gen::GenParams, TasksetError> {
    let method = match g.method.as_str() {
        "randfixedsum" => gen::Method::RandFixedSum,
        "uunifast-discard" | "uunifast" => gen::Method::UUniFastDiscard,
        m => {
            return Err(bad(format!(
                "{METHOD}: randfixedsum or uunifast-discard, got '{m}'"
            )))
        }
    };
    let constrained = match g.deadlines.as_str() {
        "implicit" => false,
        "constrained" => true,
        d => {
            return Err(bad(format!(
                "{DEADLINES}: implicit or constrained, got '{d}'"
            )))
        }
    };
    if !["json", "toml"].contains(&g.format.as_str()) {
        return Err(bad(format!("{FORMAT}: json or toml, got '{}'", g.format)));
    }
    let period = |d: Duration, name: &str| -> Result<u64, TasksetError> {
        if d.is_zero() || d > MAX_PERIOD {
            return Err(bad(format!("{name}: must be in (0, 1h], got {}", human(d))));
        }
        Ok(d.as_nanos() as u64)
    };
    let tmin = period(g.tmin, &TMIN.to_string())?;
    let tmax = period(g.tmax, &TMAX.to_string())?;
    let period_set = g
        .periods
        .iter()
        .map(|&p| period(p, &PERIODS.to_string()))
        .collect::<Result<Vec<u64>, _>>()?;
    let cpus = match g.cpu_count {
        Some(c) => c,
        None => rtscope_probe::sys::online_cpus()
            .map(|v| v.len() as u32)
            .unwrap_or(1),
    };
    if g.utilisation > cpus as f64 {
        return Err(bad(format!(
            "{UTILISATION}: U = {} exceeds the {cpus} CPUs the set is for ({CPU_COUNT}): infeasible on any scheduler",
            g.utilisation
        )));
    }
    if g.count < 1 || g.count > 100_000 {
        return Err(bad(format!("{COUNT}: must be 1..=100000, got {}", g.count)));
    }
    if g.period_gran < Duration::from_micros(1) || g.period_gran > MAX_PERIOD {
        return Err(bad(format!(
            "{PERIOD_GRAN}: must be in 1us ..= 1h, got {}",
            human(g.period_gran)
        )));
    }
    let p = gen::GenParams {
        n: g.n,
        utilisation: g.utilisation,
        method,
        tmin_ns: tmin,
        tmax_ns: tmax,
        period_set_ns: period_set,
        granularity_ns: g.period_gran.as_nanos() as u64,
        cmin_ns: g.cmin.map(|c| c.as_nanos() as u64),
        umax: g.umax,
        constrained,
        dmin_frac: g.dmin_frac,
        seed: g.seed,
        index: 0,
    };
    gen::validate(&p).map_err(|e| bad(e.to_string()))?;
    Ok(p)
}

/// The longest period (and period granularity) a generated set may have.
const MAX_PERIOD: Duration = Duration::from_secs(3600);

/// The longest per-job allowance `margin_add` and overhead bound `inflate` (100 ms).
pub const MAX_ALLOWANCE: Duration = Duration::from_millis(100);

/// A duration in the grammar's words (`1.5ms`), for a refusal.
pub fn human(d: Duration) -> String {
    rtscope_model::duration::human(d.as_secs_f64())
}

/// How a set is placed and reserved (`taskset check` and `taskset run`), as given.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanFlags {
    /// deadline | fifo | other | cfs
    pub policy: String,
    /// rm | dm
    pub priorities: String,
    /// global | partitioned | clustered
    pub placement: String,
    /// first | best | worst (or with `-fit`)
    pub fit: String,
    /// policy | deadline
    pub bin_test: String,
    pub cluster_size: u32,
    /// `--cluster-by l2|l3|llc|numa`: clusters from the topology instead of `cluster_size`.
    pub cluster_by: Option<String>,
    pub margin: f64,
    /// SCHED_DEADLINE runtime allowance added after the margin (0 ..= 100 ms).
    pub margin_add: Duration,
    /// A measured overhead bound added to every C in the predictions (0 ..= 100 ms).
    pub inflate: Duration,
    pub cpus: Option<String>,
    pub no_probe: bool,
}

impl PlanFlags {
    /// The policy and placement, checked with the reservation options.
    pub fn resolve(&self) -> Result<(PolicyKind, PlacementKind), TasksetError> {
        let order = match self.priorities.as_str() {
            "rm" => PriorityOrder::RateMonotonic,
            "dm" => PriorityOrder::DeadlineMonotonic,
            o => return Err(bad(format!("{PRIORITIES}: rm or dm, got '{o}'"))),
        };
        let policy = match self.policy.as_str() {
            "deadline" => PolicyKind::Deadline,
            "fifo" => PolicyKind::Fifo(order),
            "other" | "cfs" => PolicyKind::Other,
            o => return Err(bad(format!("{POLICY}: deadline, fifo or other, got '{o}'"))),
        };
        let fit = match self.fit.as_str() {
            "first" | "first-fit" => Fit::FirstFit,
            "best" | "best-fit" => Fit::BestFit,
            "worst" | "worst-fit" => Fit::WorstFit,
            f => return Err(bad(format!("{FIT}: first, best or worst, got '{f}'"))),
        };
        let placement = match self.placement.as_str() {
            "global" => PlacementKind::Global,
            "partitioned" => PlacementKind::Partitioned(fit),
            "clustered" => PlacementKind::Clustered {
                size: self.cluster_size,
                fit,
            },
            o => {
                return Err(bad(format!(
                    "{PLACEMENT}: global, partitioned or clustered, got '{o}'"
                )))
            }
        };
        if !["policy", "deadline"].contains(&self.bin_test.as_str()) {
            return Err(bad(format!(
                "{BIN_TEST}: policy or deadline, got '{}'",
                self.bin_test
            )));
        }
        if self.margin_add > MAX_ALLOWANCE {
            return Err(bad(format!(
                "{MARGIN_ADD}: must be in 0 ..= 100ms, got {}",
                human(self.margin_add)
            )));
        }
        if !(1.0..=2.0).contains(&self.margin) {
            return Err(bad(format!(
                "{MARGIN}: must be in [1, 2], got {}",
                self.margin
            )));
        }
        if self.inflate > MAX_ALLOWANCE {
            return Err(bad(format!(
                "{INFLATE}: must be in 0 ..= 100ms, got {}",
                human(self.inflate)
            )));
        }
        Ok((policy, placement))
    }

    pub fn options(&self) -> super::plan::PlanOptions {
        super::plan::PlanOptions {
            margin: self.margin,
            extra_runtime_ns: self.margin_add.as_nanos() as u64,
            same_bins: self.bin_test == "deadline",
        }
    }

    fn inflate_ns(&self) -> u64 {
        self.inflate.as_nanos() as u64
    }
}

/// A set planned, with the admission facts and the predictions (`taskset check`).
pub struct Checked {
    pub set: TaskSet,
    pub plan: RunPlan,
    pub admission: AdmissionInfo,
    pub predictions: Vec<TestResult>,
}

impl Checked {
    /// The predictions as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "schema_version": rtscope_model::SCHEMA_VERSION,
            "utilisation": self.set.utilisation(),
            "placement": self.plan.placement,
            "admission": self.admission,
            "predictions": self.predictions,
        })
    }

    /// Each planned task: its CPUs, id and utilisation.
    pub fn groups(&self) -> Vec<(Vec<u32>, u32, f64)> {
        self.plan
            .specs
            .iter()
            .map(|s| (s.cpus.clone(), s.task.id, s.task.utilisation()))
            .collect()
    }
}

/// `--cluster-by`: the run's CPUs in the order of the topology's clusters, the clustered
/// placement of their size, and what was found (for the run's notes). Without it, as given.
fn topology_clusters(
    p: &PlanFlags,
    cpus: Vec<u32>,
    placement: PlacementKind,
) -> Result<(Vec<u32>, PlacementKind, Option<String>), TasksetError> {
    let Some(by) = &p.cluster_by else {
        return Ok((cpus, placement, None));
    };
    let PlacementKind::Clustered { fit, .. } = placement else {
        return Err(bad(format!(
            "{CLUSTER_BY}: only with {PLACEMENT} clustered"
        )));
    };
    if p.cluster_size != 1 {
        return Err(bad(format!(
            "{CLUSTER_BY}: give it or {CLUSTER_SIZE}, not both"
        )));
    }
    let share: super::topology::Share = by.parse()?;
    let sharing = super::topology::read_sharing(share, &cpus);
    let (groups, size) = super::topology::clusters(&cpus, &sharing, by)?;
    let note = format!("clusters from the {by} topology (sysfs): {groups:?}");
    Ok((
        groups.concat(),
        PlacementKind::Clustered { size, fit },
        Some(note),
    ))
}

/// Read the set at `path`, plan it under `p` and predict; nothing runs.
pub fn check<V: Values>(path: &Path, p: &PlanFlags, v: &V) -> Result<Checked, V::Error>
where
    V::Error: From<TasksetError>,
{
    let set = read_set(path)?;
    let (policy, placement) = p.resolve()?;
    let cpus = v.cpus(&CPUS.to_string(), p.cpus.as_deref())?;
    let (cpus, placement, _) = topology_clusters(p, cpus, placement)?;
    let (admission, lim) = super::runner::admission_info(
        cpus.len() as u32,
        !p.no_probe && policy == PolicyKind::Deadline,
    );
    let plan = super::plan::plan_with(&set, policy, placement, &cpus, lim, &p.options())?;
    let predictions = super::predict(&plan, lim, p.inflate_ns());
    Ok(Checked {
        set,
        plan,
        admission,
        predictions,
    })
}

/// `taskset run`'s flags as given.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFlags {
    /// A task-set file (JSON, or TOML by extension) …
    pub set: Option<PathBuf>,
    /// … or an rt-app JSON workload.
    pub rt_app: Option<PathBuf>,
    pub plan: PlanFlags,
    /// 0.5 s ..= 10 min; rt-app files default to their global.duration, else 3 s.
    pub duration: Option<Duration>,
    pub wss_kb: u64,
    /// seq | sequential | random
    pub access: String,
    pub seed: u64,
    /// calibrated | cputime
    pub work: String,
    pub no_overrun_signal: bool,
    /// rt-app files: `rt-app` (the installed rt-app runs the file) or `native` (rtscope's own
    /// engine); None: rt-app when it is installed.
    pub engine: Option<String>,
}

/// A run resolved and planned: nothing has started.
pub struct Prepared {
    pub set: TaskSet,
    pub plan: RunPlan,
    pub options: RunOptions,
    /// What the rt-app reader could not carry over, to be said before the run.
    pub notes: Vec<String>,
    /// The file is run by the real rt-app (`--engine rt-app`); `plan` and `set` are then the
    /// native reading of it for the predictions, empty when the native engine refuses it.
    pub rt_app: Option<rtapp_engine::RtAppJob>,
}

impl Prepared {
    pub fn run(&self) -> Result<TasksetResult, TasksetError> {
        self.run_watched(&mut rtapp_engine::Unobserved)
    }

    /// [`Prepared::run`], telling `obs` of rt-app's pid and its threads' (tid, name)
    /// once they exist (the kernel's view of each job attaches there); task sets run by
    /// rtscope's own threads never call it.
    pub fn run_watched(
        &self,
        obs: &mut dyn rtapp_engine::Observer,
    ) -> Result<TasksetResult, TasksetError> {
        match &self.rt_app {
            None => super::run(&self.plan, &self.options, &self.set),
            Some(job) => {
                rtscope_probe::signals::clear_stop();
                // SIGINT/SIGTERM/SIGHUP stop the run (rt-app is then stopped and its logs read).
                let _sig = rtscope_probe::signals::Guard::install(&[]);
                let out = rtapp_engine::run(job, obs)?;
                Ok(rt_app_result(self, job, out))
            }
        }
    }
}

/// rt-app's run as a task-set result: one task per rt-app thread log (a loop of its phase is a
/// job; slack < 0 is a miss; response = c_period − slack; the start delay is rt-app's wake-up
/// latency), rt-app's own view beside, and the predictions of the native reading when there is
/// one.
fn rt_app_result(
    p: &Prepared,
    job: &rtapp_engine::RtAppJob,
    out: rtapp_engine::RtAppOutcome,
) -> TasksetResult {
    use rtscope_model::taskset::{TaskOutcome, TasksetRunConfig};
    use rtscope_model::{WarningCode, Warnings};
    let us = |x: i64| x.max(0) as u64 * 1000;
    let secs = out.window_ns as f64 / 1e9;
    let tasks: Vec<TaskOutcome> = out
        .view
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let period = us(t.c_period_us as i64);
            // "SCHED_OTHER priority : 0"
            let policy = t.policy.split_whitespace().next().unwrap_or_default();
            let priority = t
                .policy
                .rsplit(':')
                .next()
                .and_then(|p| p.trim().parse().ok())
                .unwrap_or(0);
            TaskOutcome {
                id: i as u32,
                tid: 0,
                cpus: Vec::new(),
                policy: policy.to_string(),
                priority,
                wcet_ns: us(t.c_duration_us as i64),
                period_ns: period,
                deadline_ns: period,
                jobs: t.jobs,
                misses: t.negative_slack_jobs,
                miss_pct: rtscope_model::taskset::miss_pct(t.negative_slack_jobs, t.jobs),
                max_response_ns: us(t.c_period_us as i64 - t.min_slack_us),
                avg_response_ns: (t.c_period_us as f64 - t.mean_slack_us).max(0.0) * 1000.0,
                max_lateness_ns: -t.min_slack_us * 1000,
                avg_norm_laxity: 0.0,
                min_norm_laxity: if period > 0 {
                    t.min_slack_us as f64 * 1000.0 / period as f64
                } else {
                    0.0
                },
                max_start_delay_ns: us(t.max_wu_lat_us),
                avg_start_delay_ns: t.mean_wu_lat_us.max(0.0) * 1000.0,
                max_exec_ns: 0,
                avg_exec_ns: t.mean_run_us * 1000.0,
                measured_utilisation: t.mean_run_us * t.jobs as f64 / 1e6 / secs.max(1e-9),
                migrations: None,
                voluntary_switches: None,
                involuntary_switches: None,
                dl_overruns: 0,
                misses_after_overrun: 0,
            }
        })
        .collect();
    let mut warnings = Vec::new();
    for w in &out.warnings {
        warnings.warn(WarningCode::System, w.clone());
    }
    let lim = p.options.admission.as_ref().map(|a| a.1);
    let predictions = match lim {
        Some(lim) if !p.plan.specs.is_empty() => super::predict(&p.plan, lim, 0),
        _ => Vec::new(),
    };
    let admission = p
        .options
        .admission
        .as_ref()
        .map(|a| a.0.clone())
        .unwrap_or_else(|| super::runner::admission_info(p.options.cpus.len() as u32, false).0);
    let total_jobs: u64 = tasks.iter().map(|t| t.jobs).sum();
    let total_misses: u64 = tasks.iter().map(|t| t.misses).sum();
    TasksetResult {
        config: TasksetRunConfig {
            policy: "rt-app".into(),
            priorities: None,
            placement: p.plan.placement.clone(),
            runtime_margin: 1.0,
            duration_s: secs,
            wss_bytes: 0,
            access: String::new(),
            inflate_ns: 0,
            source: format!("rt-app:{}", job.source.display()),
            work: "rt-app".into(),
        },
        set: p.set.clone(),
        calibration: Vec::new(),
        admission,
        predictions,
        measured_utilisation: tasks.iter().map(|t| t.measured_utilisation).sum(),
        tasks,
        total_jobs,
        total_misses,
        miss_pct: rtscope_model::taskset::miss_pct(total_misses, total_jobs),
        total_dl_overruns: 0,
        migrations_per_s: None,
        context_switches_per_s: None,
        any_miss: total_misses > 0,
        interrupted: out.interrupted,
        warnings,
        rt_app: Some(out.view),
    }
}

/// One run's length in seconds: 0.5 s ..= 10 min (`taskset run` and `sweep`).
pub fn run_length(d: Duration) -> Result<f64, TasksetError> {
    if d < Duration::from_millis(500) || d > Duration::from_secs(600) {
        return Err(bad(format!(
            "{DURATION}: {} is out of range (500ms ..= 10m)",
            human(d)
        )));
    }
    Ok(d.as_secs_f64())
}

/// Resolve `r` into a planned run: the set (or rt-app workload) read, the placement computed, the
/// duration and the privileges checked.
pub fn prepare<V: Values>(r: &RunFlags, v: &V) -> Result<Prepared, V::Error>
where
    V::Error: From<TasksetError>,
{
    let cpus = v.cpus(&CPUS.to_string(), r.plan.cpus.as_deref())?;
    let access = match r.access.as_str() {
        "seq" | "sequential" => Access::Sequential,
        "random" => Access::Random,
        a => return Err(bad(format!("{ACCESS}: seq or random, got '{a}'")).into()),
    };
    let work_by_cputime = match r.work.as_str() {
        "calibrated" => false,
        "cputime" => true,
        w => return Err(bad(format!("{WORK}: calibrated or cputime, got '{w}'")).into()),
    };
    if !(1..=1024 * 1024).contains(&r.wss_kb) {
        return Err(bad(format!("{WSS_KB}: must be 1..=1048576, got {}", r.wss_kb)).into());
    }
    let (policy, placement) = r.plan.resolve()?;
    let (cpus, placement, topology_note) = topology_clusters(&r.plan, cpus, placement)?;
    let online = v.cpus(&CPUS.to_string(), None)?;
    if policy == PolicyKind::Deadline && placement == PlacementKind::Global && cpus != online {
        return Err(bad(format!(
            "{CPUS}: global SCHED_DEADLINE runs on its whole root domain (CPUs {online:?}); the kernel refuses narrower affinities — use {PLACEMENT} partitioned or clustered"
        ))
        .into());
    }
    let mut admission = None;
    let mut rt_app_job = None;
    let (plan, set, source, file_duration, mut notes) = match (&r.set, &r.rt_app) {
        (Some(path), None) => {
            let set = read_set(path)?;
            // Probe only for DEADLINE (the only policy with kernel admission): the bin test of
            // partitioned DEADLINE needs the capacity the kernel really offers per CPU.
            let probe = !r.plan.no_probe && policy == PolicyKind::Deadline;
            let (info, lim) = super::runner::admission_info(cpus.len() as u32, probe);
            let plan =
                super::plan::plan_with(&set, policy, placement, &cpus, lim, &r.plan.options())?;
            admission = Some((info, lim));
            (plan, set, path.display().to_string(), None, Vec::new())
        }
        (None, Some(path)) => {
            let text = v.read(&RT_APP.to_string(), path)?;
            let binary = match r.engine.as_deref() {
                Some("native") => None,
                Some("rt-app") => Some(rtapp_engine::find_binary().ok_or_else(|| {
                    bad(format!("{ENGINE} rt-app: rt-app is not installed (no executable 'rt-app' on PATH); install it or give {ENGINE} native"))
                })?),
                None => rtapp_engine::find_binary(),
                Some(e) => return Err(bad(format!("{ENGINE}: rt-app or native, got '{e}'")).into()),
            };
            match binary {
                None => {
                    let (plan, set, duration_s, notes) = rt_app_plan(&text, path, &cpus)?;
                    (
                        plan,
                        set,
                        format!("rt-app:{}", path.display()),
                        duration_s,
                        notes,
                    )
                }
                Some(binary) => {
                    let d = r.duration.map(run_length).transpose()?;
                    let (job, mut notes) = rtapp_engine::prepare(&text, path, binary, d)
                        .map_err(|e| bad(format!("{RT_APP} {}: {e}", path.display())))?;
                    // The native reading of a periodic file gives the predictions beside
                    // rt-app's observation; other files run without them.
                    let (plan, set) = match rt_app_plan(&text, path, &cpus) {
                        Ok((plan, set, _, _)) => (plan, set),
                        Err(e) => {
                            notes.push(format!("no schedulability prediction: the file is not a periodic task set rtscope models ({e})"));
                            (
                                empty_plan(&cpus),
                                TaskSet {
                                    schema_version: rtscope_model::SCHEMA_VERSION,
                                    tasks: Vec::new(),
                                    generated: None,
                                },
                            )
                        }
                    };
                    admission = Some(super::runner::admission_info(cpus.len() as u32, false));
                    let limit_s = job.limit_ns as f64 / 1e9;
                    rt_app_job = Some(job);
                    (
                        plan,
                        set,
                        format!("rt-app:{}", path.display()),
                        Some(limit_s.min(600.0)),
                        notes,
                    )
                }
            }
        }
        _ => {
            return Err(bad(format!(
                "taskset run: give a task-set FILE or {RT_APP} FILE"
            ))
            .into())
        }
    };
    notes.extend(topology_note);
    let duration = r
        .duration
        .map(run_length)
        .transpose()?
        .or(file_duration)
        .unwrap_or(3.0);
    if !(0.5..=600.0).contains(&duration) {
        return Err(bad(format!("{DURATION}: must be 0.5..=600 s, got {duration}")).into());
    }
    // Parameters sched_setattr would refuse once the threads are up: refused here instead.
    super::plan::dl_periods_admitted(&plan.specs, super::kernel::dl_period_limits_ns())
        .map_err(bad)?;
    // CFS at nice ≥ 0 needs nothing; any real-time policy or negative nice needs CAP_SYS_NICE.
    if plan
        .specs
        .iter()
        .any(|s| !matches!(s.policy, ThreadPolicy::Other(n) if n >= 0))
    {
        v.require_realtime(
            "taskset run",
            "SCHED_DEADLINE/SCHED_FIFO threads or negative nice",
        )?;
    }
    let is_dl = plan
        .specs
        .iter()
        .any(|s| matches!(s.policy, ThreadPolicy::Deadline { .. }));
    let options = RunOptions {
        duration_ns: (duration * 1e9) as u64,
        wss_bytes: r.wss_kb * 1024,
        access,
        seed: r.seed,
        inflate_ns: r.plan.inflate_ns(),
        probe_admission: !r.plan.no_probe && is_dl,
        cpus,
        source,
        dl_overrun_signal: !r.no_overrun_signal,
        admission,
        work_by_cputime,
    };
    Ok(Prepared {
        set,
        plan,
        options,
        notes,
        rt_app: rt_app_job,
    })
}

/// No task of rtscope's own: the run is rt-app's.
fn empty_plan(cpus: &[u32]) -> RunPlan {
    RunPlan {
        placement: rtscope_model::taskset::Placement {
            kind: "rt-app".into(),
            heuristic: "rt-app cpus".into(),
            cpus: Vec::new(),
        },
        specs: Vec::new(),
        groups: Vec::new(),
        scopes: vec![("all".to_string(), cpus.to_vec(), Vec::new())],
        policy: "rt-app".into(),
        priorities: None,
        margin: 1.0,
    }
}

/// An rt-app workload as a plan: its threads where its `cpus` put them (pinned threads: one
/// scope per CPU), its set for the predictions, its duration and what could not be carried over.
#[allow(clippy::type_complexity)]
fn rt_app_plan(
    text: &str,
    path: &Path,
    cpus: &[u32],
) -> Result<(RunPlan, TaskSet, Option<f64>, Vec<String>), TasksetError> {
    let w =
        rtapp::parse(text, cpus).map_err(|e| bad(format!("{RT_APP} {}: {e}", path.display())))?;
    let set = TaskSet {
        schema_version: rtscope_model::SCHEMA_VERSION,
        tasks: w.specs.iter().map(|s| s.task.clone()).collect(),
        generated: None,
    };
    let u = set.utilisation();
    if u > cpus.len() as f64 {
        return Err(bad(format!(
            "{RT_APP}: U = {u:.4} > {} CPUs: infeasible",
            cpus.len()
        )));
    }
    let pinned = w.specs.iter().all(|s| s.cpus.len() == 1);
    let scopes = if pinned {
        cpus.iter()
            .map(|&c| {
                let idx = (0..w.specs.len())
                    .filter(|&i| w.specs[i].cpus == [c])
                    .collect();
                (format!("cpu{c}"), vec![c], idx)
            })
            .collect()
    } else {
        vec![(
            "all".to_string(),
            cpus.to_vec(),
            (0..w.specs.len()).collect(),
        )]
    };
    if pinned
        && w.specs
            .iter()
            .any(|s| matches!(s.policy, ThreadPolicy::Deadline { .. }))
    {
        return Err(bad(format!("{RT_APP}: SCHED_DEADLINE threads cannot be pinned to one CPU through 'cpus' (the kernel refuses affinities narrower than the root domain); drop 'cpus' or use a task-set file with {PLACEMENT} partitioned")));
    }
    let plan = RunPlan {
        placement: rtscope_model::taskset::Placement {
            kind: if pinned { "partitioned" } else { "global" }.into(),
            heuristic: "rt-app cpus".into(),
            cpus: w
                .specs
                .iter()
                .map(|s| {
                    if s.cpus.is_empty() {
                        cpus.to_vec()
                    } else {
                        s.cpus.clone()
                    }
                })
                .collect(),
        },
        specs: w.specs,
        groups: Vec::new(),
        scopes,
        policy: "rt-app".into(),
        priorities: None,
        margin: 1.0,
    };
    Ok((plan, set, w.duration_s, w.notes))
}

/// A small global task set (U = 0.31, periods 10–50 ms, as the thesis' kernel sets of §2.3.9)
/// run under `policy` on `cpus` for `duration_ns`: it blocks, wakes, throttles and preempts, so
/// the kernel keeps calling its push/pull structures (cpudl_* under DEADLINE, cpupri_* under
/// FIFO). Returns the run's warnings.
pub fn background(
    policy: PolicyKind,
    cpus: &[u32],
    duration_ns: u64,
) -> Result<Vec<String>, TasksetError> {
    use rtscope_model::taskset::Task;
    let t = |id, c_ms: u64, t_ms: u64| Task {
        id,
        wcet_ns: c_ms * 1_000_000,
        period_ns: t_ms * 1_000_000,
        deadline_ns: t_ms * 1_000_000,
        wss_bytes: None,
        name: None,
    };
    let set = TaskSet {
        schema_version: 1,
        tasks: vec![t(0, 1, 10), t(1, 2, 20), t(2, 3, 50), t(3, 2, 40)],
        generated: None,
    };
    let lim: KernelLimits = super::runner::admission_info(cpus.len() as u32, false).1;
    let plan = super::plan(&set, policy, PlacementKind::Global, 1.2, cpus, lim)?;
    let opts = RunOptions {
        duration_ns,
        wss_bytes: 16 * 1024,
        access: Access::Sequential,
        seed: 1,
        inflate_ns: 0,
        probe_admission: false,
        cpus: cpus.to_vec(),
        source: "practise kernel".into(),
        dl_overrun_signal: false,
        work_by_cputime: true,
        admission: None,
    };
    let r = super::run(&plan, &opts, &set)?;
    Ok(r.warnings.iter().map(|w| w.message.clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values resolved without the machine: every CPU list is CPUs 0 and 1.
    struct Fixed;
    #[derive(Debug)]
    struct E(TasksetError);
    impl From<TasksetError> for E {
        fn from(e: TasksetError) -> E {
            E(e)
        }
    }
    impl From<crate::common::BenchError> for E {
        fn from(e: crate::common::BenchError) -> E {
            E(TasksetError::Invalid(e.to_string()))
        }
    }
    impl Values for Fixed {
        type Error = E;
        fn cpus(&self, _: &str, _: Option<&str>) -> Result<Vec<u32>, E> {
            Ok(vec![0, 1])
        }
        fn read(&self, _: &str, p: &Path) -> Result<String, E> {
            std::fs::read_to_string(p).map_err(|e| E(bad(e.to_string())))
        }
        fn output_dir(&self, _: &str, _: &Path) -> Result<(), E> {
            Ok(())
        }
        fn write(&self, p: &Path, data: &[u8]) -> Result<(), E> {
            std::fs::write(p, data).map_err(|e| E(bad(e.to_string())))
        }
        fn require_realtime(&self, _: &str, _: &str) -> Result<(), E> {
            Ok(())
        }
    }

    fn gen_flags() -> GenFlags {
        GenFlags {
            n: 5,
            utilisation: 1.2,
            method: "randfixedsum".into(),
            tmin: Duration::from_millis(10),
            tmax: Duration::from_millis(100),
            periods: Vec::new(),
            period_gran: Duration::from_micros(100),
            cmin: None,
            umax: 1.0,
            deadlines: "implicit".into(),
            dmin_frac: 0.5,
            seed: 3,
            count: 1,
            cpu_count: Some(2),
            output: None,
            format: "json".into(),
        }
    }

    fn plan_flags() -> PlanFlags {
        PlanFlags {
            policy: "deadline".into(),
            priorities: "rm".into(),
            placement: "global".into(),
            fit: "worst".into(),
            bin_test: "policy".into(),
            cluster_size: 1,
            cluster_by: None,
            margin: 1.1,
            margin_add: Duration::from_micros(50),
            inflate: Duration::ZERO,
            cpus: None,
            no_probe: true,
        }
    }

    fn invalid<T>(r: Result<T, impl Into<E>>) -> String {
        match r.map_err(Into::into) {
            Err(E(TasksetError::Invalid(m))) => m,
            Err(E(e)) => panic!("not bad input: {e}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn gen_flags_resolve_or_name_the_flag() {
        let p = gen_params(&gen_flags()).unwrap();
        assert_eq!(
            (p.n, p.tmin_ns, p.tmax_ns, p.granularity_ns, p.method),
            (
                5,
                10_000_000,
                100_000_000,
                100_000,
                gen::Method::RandFixedSum
            )
        );
        let f = GenFlags {
            method: "uunifast".into(),
            deadlines: "constrained".into(),
            periods: vec![Duration::from_millis(10), Duration::from_millis(20)],
            cmin: Some(Duration::from_micros(50)),
            ..gen_flags()
        };
        let p = gen_params(&f).unwrap();
        assert_eq!(p.method, gen::Method::UUniFastDiscard);
        assert!(p.constrained && p.cmin_ns == Some(50_000));
        assert_eq!(p.period_set_ns, vec![10_000_000, 20_000_000]);
        let rows: Vec<(GenFlags, &str)> = vec![
            (
                GenFlags { utilisation: 3.0, ..gen_flags() },
                "⟨taskset.utilisation⟩: U = 3 exceeds the 2 CPUs the set is for (⟨taskset.cpu_count⟩): infeasible on any scheduler",
            ),
            (
                GenFlags { tmin: Duration::ZERO, ..gen_flags() },
                "⟨taskset.tmin⟩: must be in (0, 1h], got 0ns",
            ),
            (
                GenFlags { periods: vec![Duration::from_secs(7200)], ..gen_flags() },
                "⟨taskset.periods⟩: must be in (0, 1h], got 2h",
            ),
            (GenFlags { count: 0, ..gen_flags() }, "⟨taskset.count⟩: must be 1..=100000, got 0"),
            (
                GenFlags { period_gran: Duration::from_nanos(500), ..gen_flags() },
                "⟨taskset.period_gran⟩: must be in 1us ..= 1h, got 500ns",
            ),
            (
                GenFlags { method: "x".into(), ..gen_flags() },
                "⟨taskset.method⟩: randfixedsum or uunifast-discard, got 'x'",
            ),
        ];
        for (f, want) in rows {
            assert_eq!(invalid(gen_params(&f)), want);
        }
        assert_eq!(
            invalid(generate(
                &GenFlags {
                    count: 2,
                    ..gen_flags()
                },
                &Fixed
            )),
            "⟨taskset.count⟩ > 1 needs ⟨taskset.output⟩ DIR"
        );
    }

    #[test]
    fn generated_sets_are_printed_or_written() {
        let Generated::Text(t) = generate(&gen_flags(), &Fixed).unwrap() else {
            panic!("one set without -o goes to stdout");
        };
        let set = super::super::parse_set(&t, false).unwrap();
        assert_eq!(set.tasks.len(), 5);
        assert!((set.utilisation() - 1.2).abs() < 1e-3);
        let d = tempfile_dir();
        let f = GenFlags {
            count: 3,
            output: Some(d.clone()),
            format: "toml".into(),
            ..gen_flags()
        };
        let out = generate(&f, &Fixed).unwrap();
        assert_eq!(
            out,
            Generated::Written(Some(format!("wrote 3 sets to {}", d.display())))
        );
        assert!(d.join("set-002.toml").is_file());
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "rtscope-job-test-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn plan_flags_resolve_or_name_the_flag() {
        let rows: Vec<(PlanFlags, (PolicyKind, PlacementKind))> = vec![
            (plan_flags(), (PolicyKind::Deadline, PlacementKind::Global)),
            (
                PlanFlags {
                    policy: "fifo".into(),
                    priorities: "dm".into(),
                    placement: "partitioned".into(),
                    fit: "best-fit".into(),
                    ..plan_flags()
                },
                (
                    PolicyKind::Fifo(PriorityOrder::DeadlineMonotonic),
                    PlacementKind::Partitioned(Fit::BestFit),
                ),
            ),
            (
                PlanFlags {
                    policy: "cfs".into(),
                    placement: "clustered".into(),
                    cluster_size: 2,
                    fit: "first".into(),
                    ..plan_flags()
                },
                (
                    PolicyKind::Other,
                    PlacementKind::Clustered {
                        size: 2,
                        fit: Fit::FirstFit,
                    },
                ),
            ),
        ];
        for (f, want) in rows {
            assert_eq!(f.resolve().unwrap(), want, "{f:?}");
        }
        let o = PlanFlags {
            bin_test: "deadline".into(),
            ..plan_flags()
        }
        .options();
        assert_eq!(
            (o.margin, o.extra_runtime_ns, o.same_bins),
            (1.1, 50_000, true)
        );
        let bad_rows: Vec<(PlanFlags, &str)> = vec![
            (
                PlanFlags {
                    margin: 3.0,
                    ..plan_flags()
                },
                "⟨taskset.margin⟩: must be in [1, 2], got 3",
            ),
            (
                PlanFlags {
                    margin_add: Duration::from_millis(200),
                    ..plan_flags()
                },
                "⟨taskset.margin_add⟩: must be in 0 ..= 100ms, got 200ms",
            ),
            (
                PlanFlags {
                    inflate: Duration::from_millis(150),
                    ..plan_flags()
                },
                "⟨taskset.inflate⟩: must be in 0 ..= 100ms, got 150ms",
            ),
            (
                PlanFlags {
                    bin_test: "x".into(),
                    ..plan_flags()
                },
                "⟨taskset.bin_test⟩: policy or deadline, got 'x'",
            ),
        ];
        for (f, want) in bad_rows {
            assert_eq!(invalid(f.resolve()), want);
        }
    }

    #[test]
    fn run_flags_are_checked_before_anything_starts() {
        let d = tempfile_dir();
        let set = d.join("set.json");
        let Generated::Text(t) = generate(&gen_flags(), &Fixed).unwrap() else {
            panic!("text");
        };
        std::fs::write(&set, t).unwrap();
        let run = |f: RunFlags| prepare(&f, &Fixed).map(|p| (p.options, p.notes));
        let base = RunFlags {
            set: Some(set.clone()),
            rt_app: None,
            plan: PlanFlags {
                policy: "other".into(),
                ..plan_flags()
            },
            duration: None,
            wss_kb: 16,
            access: "seq".into(),
            seed: 1,
            work: "calibrated".into(),
            no_overrun_signal: false,
            engine: None,
        };
        let (o, notes) = run(base.clone()).unwrap();
        assert_eq!(
            (o.duration_ns, o.wss_bytes, o.cpus.clone()),
            (3_000_000_000, 16 << 10, vec![0, 1])
        );
        assert!(notes.is_empty() && !o.probe_admission && o.dl_overrun_signal);
        let (o, _) = run(RunFlags {
            duration: Some(Duration::from_secs(120)),
            ..base.clone()
        })
        .unwrap();
        assert_eq!(o.duration_ns, 120_000_000_000);
        let rows: Vec<(RunFlags, String)> = vec![
            (
                RunFlags {
                    wss_kb: 0,
                    ..base.clone()
                },
                "⟨taskset.wss_kb⟩: must be 1..=1048576, got 0".into(),
            ),
            (
                RunFlags {
                    access: "x".into(),
                    ..base.clone()
                },
                "⟨taskset.access⟩: seq or random, got 'x'".into(),
            ),
            (
                RunFlags {
                    set: None,
                    ..base.clone()
                },
                "taskset run: give a task-set FILE or ⟨taskset.rt_app⟩ FILE".into(),
            ),
            (
                RunFlags {
                    duration: Some(Duration::from_secs(660)),
                    ..base.clone()
                },
                "⟨taskset.duration⟩: 11m is out of range (500ms ..= 10m)".into(),
            ),
            (
                RunFlags {
                    set: Some(d.join("none.json")),
                    ..base.clone()
                },
                format!("{}: ", d.join("none.json").display()),
            ),
        ];
        for (f, want) in rows {
            let got = invalid(run(f));
            assert!(got.starts_with(&want), "{got} / {want}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
