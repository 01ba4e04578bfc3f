//! The measuring verbs' flags (`measure`, `run`, `cyclictest`) resolved into a validated
//! [`Plan`]: every value checked against its range and this machine (CPUs online, the capture
//! mechanism, privileges) before a thread starts or a kernel knob is touched. Each refusal is one
//! line naming the flag and what it accepts.

use crate::input::{self, bad, VerbError};
use crate::{Outputs, Plan, StorePlan, TraceFileMode};
use rtscope_model::{ClockId, DeadlineParams, Policy, RunConfig, TimerMode};
use rtscope_model::{WarningCode, Warnings};
use rtscope_probe::MeasureSpec;
use std::path::PathBuf;
use std::time::Duration;

/// The measurement flags as given (`rtscope measure --help`); [`Default`] is every flag at its
/// default.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasureFlags {
    pub cpus: Option<String>,
    pub interval: u64,
    pub distance: u64,
    pub aligned: bool,
    pub policy: Policy,
    pub priority: Option<u32>,
    pub nice: Option<i32>,
    pub dl_runtime: Option<u64>,
    pub dl_deadline: Option<u64>,
    pub dl_period: Option<u64>,
    pub dl_no_reset_on_fork: bool,
    pub dl_overrun: bool,
    pub duration: Option<String>,
    pub loops: Option<u64>,
    pub timer: TimerMode,
    pub clock: ClockId,
    pub no_dma_latency: bool,
    pub break_above: Option<u64>,
    pub threshold: Option<u64>,
    pub worst: usize,
    pub linear_max: u32,
    pub json: Option<PathBuf>,
    pub histogram_file: Option<PathBuf>,
    pub cyclictest_json: Option<PathBuf>,
    pub raw: Option<PathBuf>,
    pub quiet: bool,
    pub allow_unprivileged: bool,
    pub db: Option<String>,
    pub no_store: bool,
    pub tags: Vec<String>,
    pub load: Option<Vec<rtscope_load::LoadKind>>,
    pub load_cpus: Option<String>,
    pub load_exec: Vec<String>,
    pub force: bool,
    pub load_settings: rtscope_load::LoadSettings,
    /// auto, bpf, tracefs or off.
    pub trace: String,
    pub trace_file: Option<PathBuf>,
    /// flight or all.
    pub trace_file_mode: String,
    /// A duration or `off`.
    pub checkpoint: Option<String>,
    /// relevant or all.
    pub trace_keep: Option<String>,
    pub bound: bool,
    pub bound_points: u32,
    /// `--preset NAME` ([`crate::preset`]).
    pub preset: Option<String>,
}

impl Default for MeasureFlags {
    fn default() -> Self {
        MeasureFlags {
            cpus: None,
            interval: 1000,
            distance: 0,
            aligned: false,
            policy: Policy::Fifo,
            priority: None,
            nice: None,
            dl_runtime: None,
            dl_deadline: None,
            dl_period: None,
            dl_no_reset_on_fork: false,
            dl_overrun: false,
            duration: None,
            loops: None,
            timer: TimerMode::AbsNanosleep,
            clock: ClockId::Monotonic,
            no_dma_latency: false,
            break_above: None,
            threshold: None,
            worst: 10,
            linear_max: 10_000,
            json: None,
            histogram_file: None,
            cyclictest_json: None,
            raw: None,
            quiet: false,
            allow_unprivileged: false,
            db: None,
            no_store: false,
            tags: Vec::new(),
            load: None,
            load_cpus: None,
            load_exec: Vec::new(),
            force: false,
            load_settings: rtscope_load::LoadSettings::default(),
            trace: "off".into(),
            trace_file: None,
            trace_file_mode: "flight".into(),
            checkpoint: None,
            trace_keep: None,
            bound: false,
            bound_points: 60,
            preset: None,
        }
    }
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

/// Resolve `f` for `verb`; without `-D` or `-l` the run lasts `default_duration` seconds (None:
/// until stopped).
pub fn measure(
    f: &MeasureFlags,
    verb: &str,
    default_duration: Option<f64>,
) -> Result<Plan, VerbError> {
    let mut warnings = Vec::new();
    let preset = crate::preset::apply(f)?;
    let f = preset.as_ref().map_or(f, |p| &p.flags);
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
    let cpus = input::cpus("--cpus", f.cpus.as_deref())?;
    input::range("--interval", f.interval, 10, 10_000_000, " us")?;
    input::range("--distance", f.distance, 0, 1_000_000, " us")?;
    let mut policy = f.policy;
    let priority = match (policy, f.priority) {
        (Policy::Fifo | Policy::Rr, p) => input::range("--priority", p.unwrap_or(95), 1, 99, "")?,
        (_, Some(_)) => {
            return Err(bad!(
                "--priority: only applies to --policy fifo or rr (got --policy {})",
                policy.name()
            ))
        }
        (_, None) => 0,
    };
    let nice = match (policy, f.nice) {
        (Policy::Other, n) => input::range("--nice", n.unwrap_or(0), -20, 19, "")?,
        (_, Some(_)) => return Err(bad!("--nice: only applies to --policy other")),
        (_, None) => 0,
    };
    let dl_given = f.dl_runtime.is_some() || f.dl_deadline.is_some() || f.dl_period.is_some();
    if dl_given && policy != Policy::Deadline {
        return Err(bad!(
            "--dl-runtime/--dl-deadline/--dl-period: only apply to --policy deadline"
        ));
    }
    let deadline = if policy == Policy::Deadline {
        let period = f.dl_period.unwrap_or(f.interval);
        let dl = f.dl_deadline.unwrap_or(period);
        let rt = f.dl_runtime.unwrap_or((f.interval / 10).max(50).min(dl));
        // Kernel limits: runtime ≥ 1024 ns, period ≥ sched_deadline_period_min_us (100 µs by
        // default) and ≤ sched_deadline_period_max_us (~4.2 s by default).
        input::range("--dl-period", period, 100, 4_000_000, " us")?;
        input::range(
            "--dl-deadline",
            dl,
            2,
            period,
            " us (must be ≤ --dl-period)",
        )?;
        input::range("--dl-runtime", rt, 2, dl, " us (must be ≤ --dl-deadline)")?;
        if f.dl_period.is_some() && period != f.interval {
            warnings.warn(
                WarningCode::Other,
                format!(
                    "DEADLINE period {period} us differs from the interval {} us",
                    f.interval
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
    let mut duration_s = match &f.duration {
        Some(d) => Some(input::duration("--duration", d)?),
        None => None,
    };
    if duration_s.is_none() && f.loops.is_none() {
        duration_s = default_duration;
    }
    if let Some(l) = f.loops {
        input::range("--loops", l, 1, u64::MAX / 2, "")?;
    }
    if let Some(b) = f.break_above {
        input::range("--break-above", b, 1, 100_000_000, " us")?;
    }
    if let Some(t) = f.threshold {
        input::range("--threshold", t, 1, 100_000_000, " us")?;
    }
    input::range("--worst", f.worst, 0, 10_000, "")?;
    input::range("--linear-max", f.linear_max, 1, 1_000_000, " us")?;
    for (flag, p) in [
        ("--json", &f.json),
        ("--histogram-file", &f.histogram_file),
        ("--cyclictest-json", &f.cyclictest_json),
        ("--raw", &f.raw),
    ] {
        if let Some(p) = p.as_deref().filter(|p| *p != std::path::Path::new("-")) {
            input::output(flag, p)?;
        }
    }
    let mut tags = input::tags("--tag", &f.tags)?;
    if let Some(p) = &preset {
        tags.entry("preset".into()).or_insert_with(|| p.name.into());
    }
    let loads = match &f.load {
        None => None,
        Some(kinds) => {
            rtscope_load::check_kinds(kinds)?;
            let lcpus = input::cpus("--load-cpus", f.load_cpus.as_deref())?;
            let opts = f
                .load_settings
                .options(lcpus, f.force, f.load_exec.clone())?;
            rtscope_load::validate(kinds, &opts)?;
            Some((kinds.clone(), opts))
        }
    };
    let asked: rtscope_trace::Mechanism =
        f.trace.parse().map_err(|e: String| bad!("--trace: {e}"))?;
    let trace = match rtscope_trace::check(asked) {
        Ok(rtscope_trace::Mechanism::Off) if asked == rtscope_trace::Mechanism::Auto => {
            warnings.warn(
                WarningCode::Trace,
                format!(
                    "--trace=auto: no capture mechanism works here ({}); the run is untraced",
                    rtscope_trace::unavailable_reasons().join("; ")
                ),
            );
            rtscope_trace::Mechanism::Off
        }
        Ok(m) => m,
        // --trace=bpf|tracefs asked explicitly: fail fast with the reason, nothing started.
        Err(e) => return Err(bad!("--trace={}: {e}", asked.name())),
    };
    if trace != rtscope_trace::Mechanism::Off && f.clock != ClockId::Monotonic {
        return Err(bad!(
            "--clock realtime: tracing needs --clock monotonic (kernel event timestamps are CLOCK_MONOTONIC)"
        ));
    }
    if f.trace_file.is_some() && trace == rtscope_trace::Mechanism::Off {
        return Err(bad!("--trace-file: needs --trace"));
    }
    if let Some(p) = &f.trace_file {
        input::output("--trace-file", p)?;
    }
    let trace_file_mode = match f.trace_file_mode.as_str() {
        "flight" => TraceFileMode::default(),
        "all" => TraceFileMode::All,
        other => {
            return Err(bad!(
                "--trace-file-mode: must be flight or all; got '{other}'"
            ))
        }
    };
    if !f.no_store {
        input::db_writable(f.db.as_deref())?;
    }
    let checkpoint = match f.checkpoint.as_deref() {
        None if f.no_store => None,
        None => Some(crate::DEFAULT_CHECKPOINT),
        Some("off") => None,
        Some(t) => {
            if f.no_store {
                return Err(bad!(
                    "--checkpoint: checkpoints go to the results store; not with --no-store"
                ));
            }
            let secs = input::duration("--checkpoint", t)?;
            if !(1.0..=7.0 * 86400.0).contains(&secs) {
                return Err(bad!(
                    "--checkpoint: {t} is out of range (1s ..= 7d, or off)"
                ));
            }
            Some(Duration::from_secs_f64(secs))
        }
    };
    let trace_keep_asked = match &f.trace_keep {
        Some(k) => {
            if trace == rtscope_trace::Mechanism::Off {
                return Err(bad!("--trace-keep: needs --trace"));
            }
            Some(
                k.parse::<rtscope_trace::Keep>()
                    .map_err(|e| bad!("--trace-keep: {e}"))?,
            )
        }
        None => None,
    };
    input::range("--bound-points", f.bound_points, 1, 1000, "")?;
    if f.bound && trace == rtscope_trace::Mechanism::Off {
        return Err(bad!(
            "--bound: needs a trace (--trace, --trace=bpf or --trace=tracefs): the bound is computed from the run's kernel events"
        ));
    }
    // Privileges: one rule for every verb (crate::privilege).
    let privs = crate::privilege::Privileges::current();
    let privileged = privs.sys_nice;
    if !privs.allows(policy) {
        if f.allow_unprivileged {
            warnings.warn(WarningCode::NotRealtime, format!(
                "not root and no CAP_SYS_NICE: measuring under SCHED_OTHER instead of {} (--allow-unprivileged); the figures are not real-time latencies",
                policy.name()
            ));
            policy = Policy::Other;
        } else {
            return Err(VerbError::failed(crate::privilege::denied_message(policy)));
        }
    }
    let config = RunConfig {
        cpus,
        policy,
        priority: if policy == Policy::Other { 0 } else { priority },
        nice,
        deadline: if policy == Policy::Deadline {
            deadline
        } else {
            None
        },
        interval_us: f.interval,
        distance_us: f.distance,
        aligned: f.aligned,
        duration_s,
        loops: f.loops,
        timer: f.timer,
        clock: f.clock,
        hold_cpu_dma_latency: !f.no_dma_latency,
        break_above_us: f.break_above,
        threshold_us: f.threshold,
        worst_n: f.worst,
        linear_max_us: f.linear_max,
        loads: loads
            .as_ref()
            .map(|(k, _)| k.iter().map(|x| x.to_string()).collect())
            .unwrap_or_default(),
        trace: trace.name().into(),
        trace_bursts: None,
    };
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
    // SCHED_OTHER measurement threads: their own switches and wake-ups are what the filter
    // leaves out, so keep everything.
    let trace_keep = match (trace_keep_asked, policy) {
        (Some(rtscope_trace::Keep::Relevant), Policy::Other) => {
            return Err(bad!(
                "--trace-keep relevant: not with --policy other (the filter leaves out SCHED_OTHER switches and wake-ups, the measured threads' own); use --trace-keep all"
            ))
        }
        (Some(k), _) => k,
        (None, Policy::Other) => rtscope_trace::Keep::All,
        (None, _) => rtscope_trace::Keep::Relevant,
    };
    Ok(Plan {
        id: crate::record::new_run_id(),
        verb: verb.to_string(),
        cmdline: crate::record::cmdline(),
        tags,
        trace,
        trace_file: f.trace_file.clone(),
        trace_file_mode,
        trace_keep,
        bound_points: f.bound.then_some(f.bound_points),
        loads,
        raw_csv: f.raw.clone(),
        store: (!f.no_store).then(|| StorePlan {
            db: f.db.clone(),
            checkpoint,
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
    })
}

/// `rtscope run`: the default job. Its plan is `measure`'s, traced (`--trace auto` unless
/// `trace_asked`) and lasting `duration_s` unless told otherwise; its files go into
/// `out/<run-id>/` (record, histogram, summary, report, and the trace when traced, which also
/// carries the latency bound).
pub fn default_job(
    f: &MeasureFlags,
    trace_asked: bool,
    duration_s: f64,
    out: &std::path::Path,
) -> Result<Plan, VerbError> {
    let mut flags = f.clone();
    if !trace_asked {
        flags.trace = "auto".into();
    }
    let mut plan = measure(&flags, "run", Some(duration_s))?;
    let dir = out.join(&plan.id);
    // The run's files (record, report, histogram, flight-recorder trace) take a few MB; a run
    // must not go for its whole duration only to find the disk full.
    rtscope_files::check_output_dir(&dir, Some(RUN_DIR_BYTES))
        .map_err(|e| bad!("--out {}: {e}", dir.display()))?;
    if plan.trace != rtscope_trace::Mechanism::Off {
        if plan.trace_file.is_none() {
            plan.trace_file = Some(dir.join("trace.rtt"));
        }
        plan.bound_points.get_or_insert(flags.bound_points);
    }
    plan.outputs.run_dir = Some(dir);
    Ok(plan)
}

/// Room a run directory needs: record and report (≈1 MB), flight-recorder trace (≈2 MB an
/// hour), with margin.
const RUN_DIR_BYTES: u64 = 16 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(f: &MeasureFlags) -> String {
        match measure(f, "measure", None) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted: {f:?}"),
        }
    }

    fn other() -> MeasureFlags {
        MeasureFlags {
            policy: Policy::Other,
            no_store: true,
            ..MeasureFlags::default()
        }
    }

    /// Flag combinations refused before anything starts, with the exact line.
    #[test]
    fn refusals_name_the_flag_and_the_range() {
        let rows: Vec<(MeasureFlags, &str)> = vec![
            (
                MeasureFlags { interval: 5, ..other() },
                "--interval: 5 is out of range (10..=10000000 us)",
            ),
            (
                MeasureFlags { distance: 2_000_000, ..other() },
                "--distance: 2000000 is out of range (0..=1000000 us)",
            ),
            (
                MeasureFlags { policy: Policy::Fifo, priority: Some(100), ..other() },
                "--priority: 100 is out of range (1..=99)",
            ),
            (
                MeasureFlags { priority: Some(50), ..other() },
                "--priority: only applies to --policy fifo or rr (got --policy other)",
            ),
            (
                MeasureFlags { policy: Policy::Fifo, nice: Some(5), ..other() },
                "--nice: only applies to --policy other",
            ),
            (
                MeasureFlags { nice: Some(30), ..other() },
                "--nice: 30 is out of range (-20..=19)",
            ),
            (
                MeasureFlags { dl_period: Some(1000), ..other() },
                "--dl-runtime/--dl-deadline/--dl-period: only apply to --policy deadline",
            ),
            (
                MeasureFlags {
                    policy: Policy::Deadline,
                    dl_runtime: Some(900),
                    dl_period: Some(500),
                    ..other()
                },
                "--dl-runtime: 900 is out of range (2..=500 us (must be ≤ --dl-deadline))",
            ),
            (
                MeasureFlags { policy: Policy::Deadline, dl_period: Some(50), ..other() },
                "--dl-period: 50 is out of range (100..=4000000 us)",
            ),
            (
                MeasureFlags { duration: Some("31d".into()), ..other() },
                "--duration: 31d is out of range (1ms ..= 30d)",
            ),
            (
                MeasureFlags { loops: Some(0), ..other() },
                "--loops: 0 is out of range (1..=9223372036854775807)",
            ),
            (
                MeasureFlags { worst: 20_000, ..other() },
                "--worst: 20000 is out of range (0..=10000)",
            ),
            (
                MeasureFlags { linear_max: 0, ..other() },
                "--linear-max: 0 is out of range (1..=1000000 us)",
            ),
            (
                MeasureFlags { tags: vec!["nokv".into()], ..other() },
                "--tag: 'nokv' is not key=value",
            ),
            (
                MeasureFlags {
                    load: Some(vec![rtscope_load::LoadKind::Io, rtscope_load::LoadKind::Disk]),
                    ..other()
                },
                "--load: 'disk' overlaps 'io' in 'io,disk' (io = hackbench+disk+net)",
            ),
            (
                MeasureFlags { trace: "sometimes".into(), ..other() },
                "--trace: must be one of auto, bpf, tracefs, off; got 'sometimes'",
            ),
            (
                MeasureFlags { trace_file: Some("x.rtt".into()), ..other() },
                "--trace-file: needs --trace",
            ),
            (
                MeasureFlags { trace_file_mode: "most".into(), ..other() },
                "--trace-file-mode: must be flight or all; got 'most'",
            ),
            (
                MeasureFlags { checkpoint: Some("5m".into()), ..other() },
                "--checkpoint: checkpoints go to the results store; not with --no-store",
            ),
            (
                MeasureFlags { trace_keep: Some("all".into()), ..other() },
                "--trace-keep: needs --trace",
            ),
            (
                MeasureFlags { bound_points: 0, ..other() },
                "--bound-points: 0 is out of range (1..=1000)",
            ),
            (
                MeasureFlags { bound: true, ..other() },
                "--bound: needs a trace (--trace, --trace=bpf or --trace=tracefs): the bound is computed from the run's kernel events",
            ),
        ];
        for (flags, want) in rows {
            match measure(&flags, "measure", None) {
                Err(VerbError::BadInput(got)) => assert_eq!(got, want),
                Err(e) => panic!("{want}: not bad input: {e}"),
                Ok(_) => panic!("{want}: accepted"),
            }
        }
    }

    #[test]
    fn checkpoints_need_the_store_and_a_sane_period() {
        let stored = |c: &str| MeasureFlags {
            checkpoint: Some(c.into()),
            no_store: false,
            db: Some("/proc/rtscope/r.db".into()),
            ..other()
        };
        // The database's directory is checked first: a refusal names --db.
        let e = refused(&stored("5m"));
        assert!(e.starts_with("--db /proc/rtscope/r.db: "), "{e}");
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("r.db").display().to_string();
        for (c, want) in [
            ("0s", "--checkpoint: 0s is out of range (1ms ..= 30d)"),
            ("9d", "--checkpoint: 9d is out of range (1s ..= 7d, or off)"),
        ] {
            let f = MeasureFlags {
                db: Some(db.clone()),
                ..stored(c)
            };
            assert_eq!(refused(&f), want);
        }
        let f = MeasureFlags {
            db: Some(db.clone()),
            ..stored("off")
        };
        let p = measure(&f, "measure", None).unwrap();
        assert_eq!(p.store.map(|s| s.checkpoint), Some(None));
        let f = MeasureFlags {
            checkpoint: None,
            db: Some(db),
            ..stored("")
        };
        let p = measure(&f, "measure", None).unwrap();
        assert_eq!(
            p.store.and_then(|s| s.checkpoint),
            Some(crate::DEFAULT_CHECKPOINT)
        );
    }

    /// Accepted combinations and the configuration they resolve to.
    #[test]
    fn accepted_flags_resolve_to_the_config() {
        let online = match rtscope_probe::sys::online_cpus() {
            Ok(o) => o,
            Err(e) => {
                rtscope_testkit::skipped(format_args!("no online CPU list ({e})"));
                return;
            }
        };
        let f = MeasureFlags {
            cpus: Some(online[0].to_string()),
            interval: 500,
            distance: 100,
            nice: Some(-5),
            duration: Some("2m".into()),
            timer: TimerMode::Timerfd,
            tags: vec!["k=v".into()],
            ..other()
        };
        let p = measure(&f, "measure", Some(60.0)).unwrap();
        let c = &p.config;
        assert_eq!(
            (
                c.cpus.clone(),
                c.interval_us,
                c.distance_us,
                c.nice,
                c.priority
            ),
            (vec![online[0]], 500, 100, -5, 0)
        );
        assert_eq!(
            (c.duration_s, c.timer, c.policy),
            (Some(120.0), TimerMode::Timerfd, Policy::Other)
        );
        assert_eq!(p.tags.get("k").map(String::as_str), Some("v"));
        assert_eq!(
            (c.trace.as_str(), p.trace_keep),
            ("off", rtscope_trace::Keep::All)
        );
        assert!(p.store.is_none() && p.loads.is_none() && p.bound_points.is_none());
        // No -D and no -l: the verb's default duration; -l alone runs by count.
        let p = measure(&other(), "run", Some(60.0)).unwrap();
        assert_eq!((p.verb.as_str(), p.config.duration_s), ("run", Some(60.0)));
        let p = measure(
            &MeasureFlags {
                loops: Some(10),
                ..other()
            },
            "run",
            Some(60.0),
        )
        .unwrap();
        assert_eq!((p.config.duration_s, p.config.loops), (None, Some(10)));
        if crate::privilege::Privileges::current().sys_nice {
            let f = MeasureFlags {
                policy: Policy::Deadline,
                interval: 1000,
                ..other()
            };
            let d = measure(&f, "measure", None)
                .unwrap()
                .config
                .deadline
                .unwrap();
            // Runtime: 10 % of the interval, at least 50 µs; deadline and period: the interval.
            assert_eq!(
                (d.runtime_ns, d.deadline_ns, d.period_ns, d.reset_on_fork),
                (100_000, 1_000_000, 1_000_000, true)
            );
            let p = measure(
                &MeasureFlags {
                    policy: Policy::Fifo,
                    ..other()
                },
                "m",
                None,
            )
            .unwrap();
            assert_eq!(
                (p.config.priority, p.trace_keep),
                (95, rtscope_trace::Keep::Relevant)
            );
        } else {
            rtscope_testkit::skipped("DEADLINE/FIFO resolution needs CAP_SYS_NICE");
        }
    }
}
