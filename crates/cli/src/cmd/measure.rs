//! `rtscope measure`: the cyclictest-class latency probe. The flags are resolved into a typed
//! request, validated against the machine (`rtscope_session::resolve`: nothing has started yet;
//! every refusal names its flag and range, exit 2) and run by the session.

use super::common::{self, micros, micros32, CpuList, OutArgs};
use crate::fields;
use clap::ValueEnum;
use rtscope_model::{ClockId, Policy, TimerMode};
use rtscope_session::input::Field;
use rtscope_session::resolve::{self, Checkpoint, MeasureRequest, Preset, UntilStableRequest};
use rtscope_session::TraceFileMode;
use rtscope_trace::{Keep, Mechanism};
use std::path::PathBuf;
use std::time::Duration;

mod flags;
pub use flags::*;

impl TraceArg {
    pub fn mechanism(self) -> Mechanism {
        match self {
            TraceArg::Auto => Mechanism::Auto,
            TraceArg::Bpf => Mechanism::Bpf,
            TraceArg::Tracefs => Mechanism::Tracefs,
            TraceArg::Off => Mechanism::Off,
        }
    }
}

impl KeepArg {
    pub fn keep(self) -> Keep {
        match self {
            KeepArg::Relevant => Keep::Relevant,
            KeepArg::All => Keep::All,
        }
    }
}

/// `--checkpoint TIME|off` (1s ..= 7d).
fn checkpoint(s: &str) -> Result<Checkpoint, String> {
    if s.trim() == "off" {
        return Ok(Checkpoint::Off);
    }
    rtscope_model::duration::parse_secs_in(s, 1.0, 7.0 * 86400.0)
        .map(|v| Checkpoint::Every(Duration::from_secs_f64(v)))
}

impl MeasureFlags {
    /// The typed request (the library's input): every value given, `trace` as the verb
    /// decides when `--trace` was not given.
    pub fn request(&self, trace_default: TraceArg) -> MeasureRequest {
        let f = self.clone();
        let store = &f.out.store;
        MeasureRequest {
            cpus: f.cpus.map(|c| c.0),
            interval_us: f.interval,
            distance_us: f.distance,
            aligned: f.aligned,
            policy: match f.policy {
                PolicyArg::Fifo => Policy::Fifo,
                PolicyArg::Rr => Policy::Rr,
                PolicyArg::Other => Policy::Other,
                PolicyArg::Deadline => Policy::Deadline,
            },
            priority: f.priority,
            nice: f.nice,
            dl_runtime_us: f.dl_runtime,
            dl_deadline_us: f.dl_deadline,
            dl_period_us: f.dl_period,
            dl_no_reset_on_fork: f.dl_no_reset_on_fork,
            dl_overrun: f.dl_overrun,
            duration: f.duration,
            loops: f.loops,
            timer: match f.timer {
                TimerArg::Abs => TimerMode::AbsNanosleep,
                TimerArg::Rel => TimerMode::RelNanosleep,
                TimerArg::Timerfd => TimerMode::Timerfd,
                TimerArg::Posix => TimerMode::PosixTimer,
            },
            clock: match f.clock {
                ClockArg::Monotonic => ClockId::Monotonic,
                ClockArg::Realtime => ClockId::Realtime,
            },
            no_dma_latency: f.no_dma_latency,
            break_above_us: f.break_above,
            record_above_us: f.record_above,
            worst: f.worst,
            linear_max_us: f.linear_max,
            json: f.out.json.path.clone(),
            histogram_file: f.histogram_file,
            cyclictest_json: f.cyclictest_json,
            raw: f.raw,
            quiet: f.out.quiet,
            allow_unprivileged: f.allow_unprivileged,
            db: store.db.db.clone(),
            no_store: store.no_store,
            tags: store.tags.iter().cloned().collect(),
            load: f.load.map(|k| k.0),
            load_cpus: f.load_cpus.map(|c| c.0),
            housekeeping: f.housekeeping.map(|c| c.0),
            load_exec: f.load_exec,
            force: f.force,
            load_settings: f.load_flags.settings(),
            trace: f.trace.trace.unwrap_or(trace_default).mechanism(),
            trace_file: f.trace.trace_file,
            trace_file_mode: match f.trace.trace_file_mode {
                TraceFileModeArg::Flight => TraceFileMode::default(),
                TraceFileModeArg::All => TraceFileMode::All,
            },
            checkpoint: f.checkpoint,
            trace_keep: f.trace.trace_keep.map(KeepArg::keep),
            bound: f.bound,
            bound_points: f.bound_points,
            preset: f.preset.map(|PresetArg::Ospert13| Preset::Ospert13),
            cmdline: rtscope_session::record::cmdline(),
            field_names: fields::flag,
            until_stable: (f.until_stable || f.max_duration.is_some()).then_some(
                UntilStableRequest {
                    enabled: f.until_stable,
                    tolerance: f.stable_tolerance,
                    window: f.stable_window,
                    max_duration: f.max_duration,
                },
            ),
        }
    }
}

/// `rtscope measure` with every flag at its default: the base of the cyclictest drop-in (what
/// cyclictest has no flag for).
pub fn defaults() -> MeasureRequest {
    use clap::{Args as _, FromArgMatches};
    let m = MeasureFlags::augment_args(clap::Command::new("measure"))
        .try_get_matches_from(["measure"])
        .and_then(|m| MeasureFlags::from_arg_matches(&m));
    match m {
        Ok(f) => f.request(TraceArg::Off),
        // The defaults are constants of this file: a failure is a bug caught by the tests.
        Err(e) => panic!("measure's defaults do not parse: {e}"),
    }
}

pub fn run(a: Args) -> anyhow::Result<()> {
    if a.probe == ProbeArg::Timerlat {
        return timerlat(&a.flags);
    }
    let plan = resolve::measure(&a.flags.request(TraceArg::Off), "measure", None)
        .map_err(fields::usage)?;
    Ok(rtscope_session::measure::run_plan(plan, a.flags.out.quiet)?)
}

/// The flags `--probe timerlat` has no use for: the kernel's threads are SCHED_FIFO, wake on
/// an absolute hrtimer, and are read through the tracer, not through samples of ours.
fn timerlat_refusals(f: &MeasureFlags) -> Option<&'static str> {
    let d = defaults();
    let l = f.request(TraceArg::Off);
    [
        (l.distance_us != d.distance_us, Field::Distance),
        (l.aligned, Field::Aligned),
        (l.policy != d.policy, Field::Policy),
        (l.nice.is_some(), Field::Nice),
        (
            l.dl_runtime_us.is_some() || l.dl_deadline_us.is_some() || l.dl_period_us.is_some(),
            Field::DlRuntime,
        ),
        (l.loops.is_some(), Field::Loops),
        (l.timer != d.timer, Field::Timer),
        (l.clock != d.clock, Field::Clock),
        (l.break_above_us.is_some(), Field::BreakAbove),
        (l.record_above_us.is_some(), Field::RecordAbove),
        (l.histogram_file.is_some(), Field::HistogramFile),
        (l.cyclictest_json.is_some(), Field::CyclictestJson),
        (l.raw.is_some(), Field::Raw),
        (l.load.is_some(), Field::Load),
        (l.trace != d.trace, Field::Trace),
        (l.trace_file.is_some(), Field::TraceFile),
        (l.bound, Field::Bound),
        (l.checkpoint.is_some(), Field::Checkpoint),
        (l.allow_unprivileged, Field::AllowUnprivileged),
        (l.worst != d.worst, Field::Worst),
    ]
    .into_iter()
    .find_map(|(set, field)| set.then_some(fields::flag(field)))
}

fn timerlat(f: &MeasureFlags) -> anyhow::Result<()> {
    if let Some(flag) = timerlat_refusals(f) {
        let flag = if flag == "--dl-runtime" {
            "--dl-*"
        } else {
            flag
        };
        return Err(crate::usage!(
            "{flag}: not with --probe timerlat (the kernel's timerlat threads are measured; accepted: --cpus, --interval, --priority, -D, --linear-max, the output flags)"
        ));
    }
    let plan = rtscope_verbs::osnoise::TimerlatPlan {
        cpus: common::resolve_cpus(
            "--cpus",
            f.cpus.as_ref().map(ToString::to_string).as_deref(),
        )?,
        period_us: f.interval,
        duration_s: f.duration.map(|d| d.as_secs_f64()),
        priority: f.priority,
        linear_max_us: f.linear_max,
        lab_hint: super::noise::lab_hint(),
        field_names: crate::fields_verbs::osnoise,
    };
    Ok(rtscope_verbs::osnoise::timerlat(&plan, &f.out.lib())?)
}
