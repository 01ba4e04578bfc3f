//! A measurement request (`measure`, `run`, `monitor`, `cyclictest`, a campaign's cells)
//! resolved into a validated [`Plan`]: every value checked against its range and this machine
//! (CPUs online, the capture mechanism, privileges) before a thread starts or a kernel knob is
//! touched. The request is typed (the caller parsed its own syntax); each refusal is one
//! [`VerbError::Field`] naming the value and what it accepts.

use crate::input::{self, bad, field, Field, VerbError};
use crate::{Outputs, Plan, StorePlan, TraceFileMode};
use rtscope_model::{ClockId, DeadlineParams, Policy, RunConfig, TimerMode};
use rtscope_model::{WarningCode, Warnings};
use rtscope_probe::MeasureSpec;
use rtscope_trace::{Keep, Mechanism};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Whether a stored run writes interim records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkpoint {
    Off,
    Every(Duration),
}

/// A published set-up ([`crate::preset`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    Ospert13,
}

/// What a measurement is asked to be: typed values, every one given (the caller owns the
/// defaults). `None` where the resolution derives the value from others.
#[derive(Clone, Debug)]
pub struct MeasureRequest {
    /// `None`: every online CPU.
    pub cpus: Option<Vec<u32>>,
    pub interval_us: u64,
    pub distance_us: u64,
    pub aligned: bool,
    pub policy: Policy,
    /// `None`: 95 for fifo/rr.
    pub priority: Option<u32>,
    /// `None`: 0 for other.
    pub nice: Option<i32>,
    pub dl_runtime_us: Option<u64>,
    pub dl_deadline_us: Option<u64>,
    pub dl_period_us: Option<u64>,
    pub dl_no_reset_on_fork: bool,
    pub dl_overrun: bool,
    pub duration: Option<Duration>,
    pub loops: Option<u64>,
    pub timer: TimerMode,
    pub clock: ClockId,
    pub no_dma_latency: bool,
    pub break_above_us: Option<u64>,
    pub record_above_us: Option<u64>,
    pub worst: usize,
    pub linear_max_us: u32,
    pub json: Option<PathBuf>,
    pub histogram_file: Option<PathBuf>,
    pub cyclictest_json: Option<PathBuf>,
    pub raw: Option<PathBuf>,
    pub quiet: bool,
    pub allow_unprivileged: bool,
    pub db: Option<String>,
    pub no_store: bool,
    pub tags: BTreeMap<String, String>,
    pub load: Option<Vec<rtscope_load::LoadKind>>,
    pub load_cpus: Option<Vec<u32>>,
    /// `None`: the online CPUs not measured (all of them when every CPU is measured).
    pub housekeeping: Option<Vec<u32>>,
    pub load_exec: Vec<String>,
    pub force: bool,
    pub load_settings: rtscope_load::LoadSettings,
    pub trace: Mechanism,
    pub trace_file: Option<PathBuf>,
    pub trace_file_mode: TraceFileMode,
    /// `None`: 10 min when stored.
    pub checkpoint: Option<Checkpoint>,
    /// `None`: relevant, all under SCHED_OTHER.
    pub trace_keep: Option<Keep>,
    pub bound: bool,
    pub bound_points: u32,
    pub preset: Option<Preset>,
    /// The command line as it is stored with the run (passwords masked).
    pub cmdline: Vec<String>,
    /// How the caller names each field: the warnings of the plan refer to fields through it.
    pub field_names: fn(Field) -> &'static str,
    /// `--until-stable`: end the run when the tail model (and the bound, where measured)
    /// stopped moving (docs/tail.md).
    pub until_stable: Option<UntilStableRequest>,
}

impl From<rtscope_load::LoadError> for VerbError {
    fn from(e: rtscope_load::LoadError) -> VerbError {
        if e.is_bad_input() {
            VerbError::BadInput(e.to_string())
        } else {
            VerbError::failed(e)
        }
    }
}

/// `--until-stable` as given: `--stable-tolerance`, `--stable-window`, `--max-duration`.
#[derive(Clone, Debug, PartialEq)]
pub struct UntilStableRequest {
    /// `--until-stable` itself (false: only `--max-duration` was given, which is refused).
    pub enabled: bool,
    pub tolerance: f64,
    pub window: Duration,
    pub max_duration: Option<Duration>,
}

/// `--until-stable` resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UntilStable {
    pub tolerance: f64,
    pub window_s: f64,
}

/// Resolve `f` for `verb`; without a duration or loops the run lasts `default_duration` (None:
/// until stopped).
pub fn measure(
    f: &MeasureRequest,
    verb: &str,
    default_duration: Option<Duration>,
) -> Result<Plan, VerbError> {
    let mut warnings = Vec::new();
    let preset = crate::preset::apply(f);
    let f = preset.as_ref().map_or(f, |p| &p.request);
    if let Some(p) = &preset {
        if !p.overridden.is_empty() {
            warnings.warn(
                WarningCode::Other,
                format!(
                    "preset {}: not the publication's set-up: {}",
                    p.name,
                    p.overridden.join(", ")
                ),
            );
        }
    }
    let cpus = input::online_cpus(Field::Cpus, f.cpus.as_deref())?;
    let (housekeeping_cpus, housekeeping_warning) =
        crate::housekeeping::resolve(f.housekeeping.as_deref(), &cpus)?;
    if let Some(w) = housekeeping_warning {
        warnings.warn(WarningCode::Other, w);
    }
    input::field_range(Field::Interval, f.interval_us, 10, 10_000_000, " us")?;
    input::field_range(Field::Distance, f.distance_us, 0, 1_000_000, " us")?;
    let policy = f.policy;
    let (priority, nice, deadline) = scheduling(f, &mut warnings)?;
    let (duration_s, until_stable) = ending(f, default_duration)?;
    kept(f)?;
    let mut tags = f.tags.clone();
    if let Some(p) = &preset {
        tags.entry("preset".into()).or_insert_with(|| p.name.into());
    }
    let loads = loads(f)?;
    let trace = capture(f, &mut warnings)?;
    if !f.no_store {
        input::db_writable(f.db.as_deref())?;
    }
    let checkpoint = checkpoint(f)?;
    if f.trace_keep.is_some() && trace == Mechanism::Off {
        return Err(field!(Field::TraceKeep, "needs {}", Field::Trace));
    }
    input::field_range(Field::BoundPoints, f.bound_points, 1, 1000, "")?;
    if f.bound && trace == Mechanism::Off {
        return Err(field!(
            Field::Bound,
            "needs a trace ({t}, {t}=bpf or {t}=tracefs): the bound is computed from the run's kernel events",
            t = Field::Trace
        ));
    }
    let (policy, privileged) = admitted(f, policy, &mut warnings)?;
    let config = run_config(
        f,
        (cpus, housekeeping_cpus),
        (policy, priority, nice, deadline),
        (duration_s, &loads, trace),
    );
    // Whether samples are streamed is the session's decision (trace, --raw, view, checkpoints).
    let mut spec = MeasureSpec::from_config(&config, false);
    if !privileged {
        // Unprivileged mlockall of a whole run's buffers usually exceeds RLIMIT_MEMLOCK.
        spec.mlock = false;
        warnings.warn(
            WarningCode::NotRealtime,
            "unprivileged: memory not locked (mlockall needs CAP_IPC_LOCK)",
        );
    }
    let trace_keep = trace_keep(f, policy)?;
    for w in &mut warnings {
        w.message = Field::render(&w.message, f.field_names);
    }
    Ok(Plan {
        field_names: f.field_names,
        id: crate::record::new_run_id(),
        verb: verb.to_string(),
        cmdline: f.cmdline.clone(),
        tags,
        trace,
        trace_file: f.trace_file.clone(),
        trace_file_mode: f.trace_file_mode,
        trace_keep,
        bound_points: f.bound.then_some(f.bound_points),
        loads,
        raw_csv: f.raw.clone(),
        store: (!f.no_store).then(|| StorePlan {
            db: f.db.clone(),
            checkpoint,
            fallback_dir: None,
        }),
        outputs: Outputs {
            json: f.json.clone(),
            histogram_file: f.histogram_file.clone(),
            cyclictest_json: f.cyclictest_json.clone(),
            run_dir: None,
        },
        config,
        spec,
        warnings,
        until_stable,
    })
}

/// What the run keeps (thresholds, worst-N, histogram range) and its output files.
fn kept(f: &MeasureRequest) -> Result<(), VerbError> {
    if let Some(b) = f.break_above_us {
        input::field_range(Field::BreakAbove, b, 1, 100_000_000, " us")?;
    }
    if let Some(t) = f.record_above_us {
        input::field_range(Field::RecordAbove, t, 1, 100_000_000, " us")?;
    }
    input::field_range(Field::Worst, f.worst, 0, 10_000, "")?;
    input::field_range(Field::LinearMax, f.linear_max_us, 1, 1_000_000, " us")?;
    for (fld, p) in [
        (Field::Json, &f.json),
        (Field::HistogramFile, &f.histogram_file),
        (Field::CyclictestJson, &f.cyclictest_json),
        (Field::Raw, &f.raw),
    ] {
        if let Some(p) = p.as_deref().filter(|p| *p != std::path::Path::new("-")) {
            output(fld, p)?;
        }
    }
    Ok(())
}

/// The policy the caller may use (one rule for every verb: [`crate::privilege`]): the
/// requested one, or SCHED_OTHER with `allow_unprivileged`; and whether the caller is
/// privileged.
fn admitted(
    f: &MeasureRequest,
    mut policy: Policy,
    warnings: &mut Vec<rtscope_model::Warning>,
) -> Result<(Policy, bool), VerbError> {
    let privs = crate::privilege::Privileges::current();
    let privileged = privs.sys_nice;
    if !privs.allows(policy) {
        if f.allow_unprivileged {
            warnings.warn(WarningCode::NotRealtime, format!(
                "not root and no CAP_SYS_NICE: measuring under SCHED_OTHER instead of {} ({}); the figures are not real-time latencies",
                policy.name(),
                Field::AllowUnprivileged
            ));
            policy = Policy::Other;
        } else {
            return Err(VerbError::failed(crate::privilege::denied_message(policy)));
        }
    }
    Ok((policy, privileged))
}

/// What the capture keeps. SCHED_OTHER measurement threads: their own switches and wake-ups
/// are what the relevance filter leaves out, so everything is kept.
fn trace_keep(f: &MeasureRequest, policy: Policy) -> Result<Keep, VerbError> {
    Ok(match (f.trace_keep, policy) {
        (Some(Keep::Relevant), Policy::Other) => {
            return Err(bad!(
                "{k} relevant: not with {p} other (the filter leaves out SCHED_OTHER switches and wake-ups, the measured threads' own); use {k} all",
                p = Field::Policy,
                k = Field::TraceKeep
            ))
        }
        (Some(k), _) => k,
        (None, Policy::Other) => Keep::All,
        (None, _) => Keep::Relevant,
    })
}

/// The measurement threads' priority, nice value and DEADLINE parameters under the requested
/// policy, each within its range.
fn scheduling(
    f: &MeasureRequest,
    warnings: &mut Vec<rtscope_model::Warning>,
) -> Result<(u32, i32, Option<DeadlineParams>), VerbError> {
    let policy = f.policy;
    let priority = match (policy, f.priority) {
        (Policy::Fifo | Policy::Rr, p) => {
            input::field_range(Field::Priority, p.unwrap_or(95), 1, 99, "")?
        }
        (_, Some(_)) => {
            return Err(field!(
                Field::Priority,
                "only applies to {} fifo or rr (got {} {})",
                Field::Policy,
                Field::Policy,
                policy.name()
            ))
        }
        (_, None) => 0,
    };
    let nice = match (policy, f.nice) {
        (Policy::Other, n) => input::field_range(Field::Nice, n.unwrap_or(0), -20, 19, "")?,
        (_, Some(_)) => {
            return Err(field!(
                Field::Nice,
                "only applies to {} other",
                Field::Policy
            ))
        }
        (_, None) => 0,
    };
    let dl_given =
        f.dl_runtime_us.is_some() || f.dl_deadline_us.is_some() || f.dl_period_us.is_some();
    if dl_given && policy != Policy::Deadline {
        return Err(bad!(
            "{}/{}/{}: only apply to {} deadline",
            Field::DlRuntime,
            Field::DlDeadline,
            Field::DlPeriod,
            Field::Policy
        ));
    }
    let deadline = if policy == Policy::Deadline {
        let period = f.dl_period_us.unwrap_or(f.interval_us);
        let dl = f.dl_deadline_us.unwrap_or(period);
        let rt = f
            .dl_runtime_us
            .unwrap_or((f.interval_us / 10).max(50).min(dl));
        // Kernel limits: runtime ≥ 1024 ns, period ≥ sched_deadline_period_min_us (100 µs by
        // default) and ≤ sched_deadline_period_max_us (~4.2 s by default): refused here, as
        // sched_setattr would refuse them once the threads are up.
        let (kmin, kmax) = rtscope_bench::taskset::kernel::dl_period_limits_ns();
        let (lo, hi) = ((kmin / 1000).max(100), (kmax / 1000).min(4_000_000));
        input::field_range(Field::DlPeriod, period, lo, hi, " us")?;
        let within_period = format!(" us (must be ≤ {})", Field::DlPeriod);
        input::field_range(Field::DlDeadline, dl, 2, period, &within_period)?;
        let within_deadline = format!(" us (must be ≤ {})", Field::DlDeadline);
        input::field_range(Field::DlRuntime, rt, 2, dl, &within_deadline)?;
        if f.dl_period_us.is_some() && period != f.interval_us {
            warnings.warn(
                WarningCode::Other,
                format!(
                    "DEADLINE period {period} us differs from the interval {} us",
                    f.interval_us
                ),
            );
        }
        Some(DeadlineParams {
            runtime_ns: rt * 1000,
            deadline_ns: dl * 1000,
            period_ns: period * 1000,
            reset_on_fork: !f.dl_no_reset_on_fork,
            dl_overrun: f.dl_overrun,
        })
    } else {
        None
    };
    Ok((priority, nice, deadline))
}

/// How the run ends: its duration (None: by loops or a stop signal) and `--until-stable`.
fn ending(
    f: &MeasureRequest,
    default_duration: Option<Duration>,
) -> Result<(Option<f64>, Option<UntilStable>), VerbError> {
    let mut duration_s = f.duration.map(|d| d.as_secs_f64());
    if duration_s.is_none() && f.loops.is_none() {
        duration_s = default_duration.map(|d| d.as_secs_f64());
    }
    if let Some(l) = f.loops {
        input::field_range(Field::Loops, l, 1, u64::MAX / 2, "")?;
    }
    let until_stable = match &f.until_stable {
        Some(u) if !u.enabled => {
            return Err(bad!(
                "{}: only with {}",
                Field::MaxDuration,
                Field::UntilStable
            ))
        }
        Some(u) => {
            if !(u.tolerance > 0.0 && u.tolerance < 1.0) {
                return Err(VerbError::Field {
                    field: Field::StableTolerance,
                    msg: format!("{} is out of range (0 < x < 1, a fraction)", u.tolerance),
                });
            }
            let w = u.window.as_secs_f64();
            input::field_range(Field::StableWindow, w, 1.0, 7.0 * 86_400.0, " s")?;
            if let Some(m) = u.max_duration {
                let m = m.as_secs_f64();
                duration_s = Some(duration_s.map_or(m, |d| d.min(m)));
            }
            if duration_s.is_none() && f.loops.is_none() {
                return Err(bad!(
                    "{}: the run has no end without {} (or {})",
                    Field::UntilStable,
                    Field::MaxDuration,
                    Field::Duration
                ));
            }
            Some(UntilStable {
                tolerance: u.tolerance,
                window_s: w,
            })
        }
        None => None,
    };
    Ok((duration_s, until_stable))
}

/// The background loads and their options, checked before a process is forked.
type Loads = Option<(Vec<rtscope_load::LoadKind>, rtscope_load::LoadOptions)>;

fn loads(f: &MeasureRequest) -> Result<Loads, VerbError> {
    Ok(match &f.load {
        None => None,
        Some(kinds) => {
            rtscope_load::check_kinds(kinds)?;
            let lcpus = input::online_cpus(Field::LoadCpus, f.load_cpus.as_deref())?;
            let opts = f
                .load_settings
                .options(lcpus, f.force, f.load_exec.clone())?;
            rtscope_load::validate(kinds, &opts)?;
            Some((kinds.clone(), opts))
        }
    })
}

/// The capture mechanism (checked on this kernel; never Auto) and its trace file.
fn capture(
    f: &MeasureRequest,
    warnings: &mut Vec<rtscope_model::Warning>,
) -> Result<Mechanism, VerbError> {
    let asked = f.trace;
    let trace = match rtscope_trace::check(asked) {
        Ok(Mechanism::Off) if asked == Mechanism::Auto => {
            warnings.warn(
                WarningCode::Trace,
                format!(
                    "{}=auto: no capture mechanism works here ({}); the run is untraced",
                    Field::Trace,
                    rtscope_trace::unavailable_reasons().join("; ")
                ),
            );
            Mechanism::Off
        }
        Ok(m) => m,
        // A mechanism asked explicitly: fail fast with the reason, nothing started.
        Err(e) => return Err(bad!("{}={}: {e}", Field::Trace, asked.name())),
    };
    if trace != Mechanism::Off && f.clock != ClockId::Monotonic {
        return Err(bad!(
            "{c} realtime: tracing needs {c} monotonic (kernel event timestamps are CLOCK_MONOTONIC)",
            c = Field::Clock
        ));
    }
    if f.trace_file.is_some() && trace == Mechanism::Off {
        return Err(field!(Field::TraceFile, "needs {}", Field::Trace));
    }
    if let Some(p) = &f.trace_file {
        output(Field::TraceFile, p)?;
    }
    Ok(trace)
}

/// Interim records of a stored run (None: none).
fn checkpoint(f: &MeasureRequest) -> Result<Option<Duration>, VerbError> {
    Ok(match f.checkpoint {
        None if f.no_store => None,
        None => Some(crate::DEFAULT_CHECKPOINT),
        Some(Checkpoint::Off) => None,
        Some(Checkpoint::Every(_)) if f.no_store => {
            return Err(field!(
                Field::Checkpoint,
                "checkpoints go to the results store; not with {}",
                Field::NoStore
            ))
        }
        Some(Checkpoint::Every(d)) => {
            let secs = d.as_secs_f64();
            if !(1.0..=7.0 * 86400.0).contains(&secs) {
                return Err(field!(
                    Field::Checkpoint,
                    "{} is out of range (1s ..= 7d, or off)",
                    rtscope_model::duration::human(secs)
                ));
            }
            Some(d)
        }
    })
}

/// The run's configuration as recorded.
fn run_config(
    f: &MeasureRequest,
    (cpus, housekeeping_cpus): (Vec<u32>, Vec<u32>),
    (policy, priority, nice, deadline): (Policy, u32, i32, Option<DeadlineParams>),
    (duration_s, loads, trace): (Option<f64>, &Loads, Mechanism),
) -> RunConfig {
    RunConfig {
        cpus,
        policy,
        priority: if policy == Policy::Other { 0 } else { priority },
        nice,
        deadline: if policy == Policy::Deadline {
            deadline
        } else {
            None
        },
        interval_us: f.interval_us,
        distance_us: f.distance_us,
        aligned: f.aligned,
        duration_s,
        loops: f.loops,
        timer: f.timer,
        clock: f.clock,
        hold_cpu_dma_latency: !f.no_dma_latency,
        break_above_us: f.break_above_us,
        threshold_us: f.record_above_us,
        worst_n: f.worst,
        linear_max_us: f.linear_max_us,
        loads: loads
            .as_ref()
            .map(|(k, _)| k.iter().map(|x| x.to_string()).collect())
            .unwrap_or_default(),
        trace: trace.name().into(),
        trace_bursts: None,
        housekeeping_cpus,
    }
}

/// An output file of the run can be written.
fn output(fld: Field, p: &std::path::Path) -> Result<(), VerbError> {
    rtscope_files::check_output(p, Some(input::OUTPUT_FILE_BYTES))
        .map_err(|e| bad!("{fld} {}: {e}", p.display()))
}

/// `rtscope run`: the default job. Its plan is `measure`'s, lasting `duration` unless told
/// otherwise; its files go into `out/<run-id>/` (record, histogram, summary, report, and the
/// trace when traced, which also carries the latency bound).
pub fn default_job(
    f: &MeasureRequest,
    duration: Duration,
    out: &std::path::Path,
) -> Result<Plan, VerbError> {
    let mut plan = measure(f, "run", Some(duration))?;
    let dir = out.join(&plan.id);
    // The run's files (record, report, histogram, flight-recorder trace) take a few MB; a run
    // must not go for its whole duration only to find the disk full.
    rtscope_files::check_output_dir(&dir, Some(RUN_DIR_BYTES))
        .map_err(|e| bad!("{} {}: {e}", Field::OutDir, dir.display()))?;
    if plan.trace != Mechanism::Off {
        if plan.trace_file.is_none() {
            plan.trace_file = Some(dir.join("trace.rtt"));
        }
        plan.bound_points.get_or_insert(f.bound_points);
    }
    plan.outputs.run_dir = Some(dir);
    Ok(plan)
}

/// Room a run directory needs: record and report (≈1 MB), flight-recorder trace (≈2 MB an
/// hour), with margin.
const RUN_DIR_BYTES: u64 = 16 << 20;
