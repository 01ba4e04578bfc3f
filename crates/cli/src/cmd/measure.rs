//! `rtscope measure`: the cyclictest-class latency probe.
//!
//! Flags are parsed into [`MeasureFlags`] and resolved into a validated `rtscope_session::Plan`
//! (nothing has started yet; every error names its flag and range, exit 2); the session crate
//! runs it (`rtscope_session::execute`) and this file prints what came out.

use super::common::{self, check_output, check_range, parse_duration};
use crate::usage;
use anyhow::Result;
use clap::ValueEnum;
use rtscope_model::{ClockId, DeadlineParams, Policy, RunConfig, TimerMode};
use rtscope_model::{WarningCode, Warnings};
use rtscope_probe::MeasureSpec;
use rtscope_session::{Outputs, Plan, StorePlan, TraceFileMode};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PolicyArg {
    Fifo,
    Rr,
    Other,
    Deadline,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TimerArg {
    /// clock_nanosleep(TIMER_ABSTIME)
    Abs,
    /// relative clock_nanosleep
    Rel,
    /// timerfd
    Timerfd,
    /// POSIX timer + sigwaitinfo
    Posix,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ClockArg {
    Monotonic,
    Realtime,
}

#[derive(clap::Args, Clone, Debug)]
pub struct MeasureFlags {
    /// CPUs to measure, e.g. 0,2-3 (default: all online CPUs, one pinned thread each)
    #[arg(short = 'c', long = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
    /// Wake-up interval in µs (10..=10000000)
    #[arg(short = 'i', long, default_value_t = 1000, value_name = "US")]
    pub interval: u64,
    /// Each further thread's interval is longer by this many µs (0..=1000000)
    #[arg(short = 'd', long, default_value_t = 0, value_name = "US")]
    pub distance: u64,
    /// Start every thread's timer at the same instant (default: thread i starts i/n of an
    /// interval later, so the threads' wake-ups never coincide)
    #[arg(long)]
    pub aligned: bool,
    /// Scheduling policy of the measurement threads
    #[arg(long, value_enum, default_value_t = PolicyArg::Fifo)]
    pub policy: PolicyArg,
    /// Priority for fifo/rr (1..=99, default 95)
    #[arg(short = 'p', long, value_name = "PRIO")]
    pub priority: Option<u32>,
    /// Nice value for --policy other (-20..=19)
    #[arg(long, allow_hyphen_values = true)]
    pub nice: Option<i32>,
    /// DEADLINE runtime in µs (default: 10 % of the interval, at least 50 µs)
    #[arg(long, value_name = "US")]
    pub dl_runtime: Option<u64>,
    /// DEADLINE relative deadline in µs (default: the interval)
    #[arg(long, value_name = "US")]
    pub dl_deadline: Option<u64>,
    /// DEADLINE period in µs (default: the interval)
    #[arg(long, value_name = "US")]
    pub dl_period: Option<u64>,
    /// Do not set SCHED_FLAG_RESET_ON_FORK on DEADLINE threads
    #[arg(long)]
    pub dl_no_reset_on_fork: bool,
    /// Set SCHED_FLAG_DL_OVERRUN (the kernel signals runtime overruns)
    #[arg(long)]
    pub dl_overrun: bool,
    /// Run time: 30s, 5m, 1h, 1d (default for measure: until Ctrl-C or --loops)
    #[arg(short = 'D', long, value_name = "TIME", allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Stop each thread after this many samples
    #[arg(short = 'l', long, value_name = "N")]
    pub loops: Option<u64>,
    /// Timer mode
    #[arg(long, value_enum, default_value_t = TimerArg::Abs)]
    pub timer: TimerArg,
    /// Clock
    #[arg(long, value_enum, default_value_t = ClockArg::Monotonic)]
    pub clock: ClockArg,
    /// Do not hold /dev/cpu_dma_latency at 0 during the run
    #[arg(long)]
    pub no_dma_latency: bool,
    /// Stop at the first sample above this many µs and say which thread/cycle
    #[arg(short = 'b', long, value_name = "US")]
    pub break_above: Option<u64>,
    /// Keep cycle number and time of every sample above this many µs
    #[arg(long, value_name = "US")]
    pub threshold: Option<u64>,
    /// How many worst samples to keep per thread (0..=10000)
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub worst: usize,
    /// Size of the linear 1 µs histogram (cyclictest -h view), µs (1..=1000000)
    #[arg(long, default_value_t = 10_000, value_name = "US")]
    pub linear_max: u32,
    /// The RunRecord (rtscope JSON schema) as JSON: FILE, or stdout with `-` (the summary is
    /// then not printed)
    #[arg(long, value_name = "FILE|-", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Write the histogram in cyclictest's -h text format here
    #[arg(long, value_name = "FILE")]
    pub histogram_file: Option<PathBuf>,
    /// Write rt-tests' JSON layout here
    #[arg(long, value_name = "FILE")]
    pub cyclictest_json: Option<PathBuf>,
    /// Write every sample as CSV (cpu,tid,cycle,expected_ns,latency_ns)
    #[arg(long, value_name = "FILE")]
    pub raw: Option<PathBuf>,
    /// Quiet: no live view, only the final summary
    #[arg(short, long)]
    pub quiet: bool,
    /// Without root/CAP_SYS_NICE: measure under SCHED_OTHER instead of failing
    #[arg(long)]
    pub allow_unprivileged: bool,
    /// Results database: a SQLite file path or postgres://user@host/db [default:
    /// $XDG_DATA_HOME/rtscope/results.db]
    #[arg(long, value_parser = crate::cmd::common::db_url, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Do not store the run in the results database
    #[arg(long)]
    pub no_store: bool,
    /// Free tags key=value (repeatable), stored with the run
    #[arg(long = "tag", value_name = "K=V")]
    pub tags: Vec<String>,
    /// Background load during the run: idle, cpu-cache, hackbench, disk, net, io, exec
    /// (comma-separated); its intensity figures are stored with the run
    #[arg(long, value_name = "KIND[,KIND…]")]
    pub load: Option<String>,
    /// CPUs the load may use [default: all online]
    #[arg(long, value_name = "LIST")]
    pub load_cpus: Option<String>,
    /// Command for `--load exec` (repeat for each argument: --load-exec stress-ng --load-exec --cpu …)
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub load_exec: Vec<String>,
    /// Confirm a real-time load policy (--load-policy fifo)
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub load_flags: super::load::LoadFlags,
    /// Capture kernel events on the measured CPUs and explain every sample: auto (eBPF, else
    /// tracefs, else untraced with a warning), bpf, tracefs, or off
    #[arg(long, value_name = "MODE", default_value = "off", num_args = 0..=1, default_missing_value = "auto", value_parser = ["auto", "bpf", "tracefs", "off"])]
    pub trace: String,
    /// Write the trace to this .rtt file for `rtscope analyze`: by default a flight recorder
    /// (the event windows of the worst samples and of the worst of each cause, plus 1 s of
    /// everything every 10 min), `--trace-file-mode all` for every event and sample
    #[arg(long, value_name = "FILE")]
    pub trace_file: Option<PathBuf>,
    /// What --trace-file keeps: `flight` (bounded: megabytes for any run length) or `all`
    /// (every event and every sample; grows with the run)
    #[arg(long, value_name = "flight|all", default_value = "flight", value_parser = ["flight", "all"])]
    pub trace_file_mode: String,
    /// Store an interim record every TIME (e.g. 10m, 1h; `off` for none) so that a run killed
    /// by SIGKILL, the OOM killer or a power cut keeps everything up to its last checkpoint
    /// [default: 10m when the run is stored]
    #[arg(long, value_name = "TIME|off")]
    pub checkpoint: Option<String>,
    /// With --trace: `relevant` leaves out what no sample's attribution needs (switches between
    /// two SCHED_OTHER tasks except the last before each recorded event, wake-ups of SCHED_OTHER
    /// tasks; docs/tracing.md) or `all` [default: relevant; all with --policy other]
    #[arg(long, value_name = "relevant|all")]
    pub trace_keep: Option<String>,
    /// With --trace: compute the ECRTS'20 latency bound (six interrupt characterizations) from
    /// the run's events beside the observed maximum, and how the sliding-window bound and the
    /// observed maximum evolved (time to bound). Without preemptirq tracepoints the thread terms
    /// are estimated and every output says ESTIMATE, NOT A SOUND BOUND.
    #[arg(long)]
    pub bound: bool,
    /// Instants in the time-to-bound series of --bound (1 ..= 1000)
    #[arg(long, value_name = "N", default_value_t = 60)]
    pub bound_points: u32,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub flags: MeasureFlags,
}

#[derive(clap::Parser)]
struct DefaultsOnly {
    #[command(flatten)]
    flags: MeasureFlags,
}

/// Every measure flag at its default (for verbs that build a measurement programmatically).
pub fn default_flags() -> MeasureFlags {
    use clap::Parser;
    // Parsing an empty command line with only defaults cannot fail.
    DefaultsOnly::try_parse_from(["rtscope"])
        .map(|d| d.flags)
        .expect("measure flags have defaults")
}

pub fn resolve(f: &MeasureFlags, verb: &str, default_duration: Option<f64>) -> Result<Plan> {
    let mut warnings = Vec::new();
    let cpus = common::resolve_cpus("--cpus", f.cpus.as_deref())?;
    check_range("--interval", f.interval, 10, 10_000_000, " us")?;
    check_range("--distance", f.distance, 0, 1_000_000, " us")?;
    let mut policy = match f.policy {
        PolicyArg::Fifo => Policy::Fifo,
        PolicyArg::Rr => Policy::Rr,
        PolicyArg::Other => Policy::Other,
        PolicyArg::Deadline => Policy::Deadline,
    };
    let priority = match (policy, f.priority) {
        (Policy::Fifo | Policy::Rr, p) => check_range("--priority", p.unwrap_or(95), 1, 99, "")?,
        (_, Some(_)) => {
            return Err(usage!(
                "--priority: only applies to --policy fifo or rr (got --policy {})",
                policy.name()
            ))
        }
        (_, None) => 0,
    };
    let nice = match (policy, f.nice) {
        (Policy::Other, n) => check_range("--nice", n.unwrap_or(0), -20, 19, "")?,
        (_, Some(_)) => return Err(usage!("--nice: only applies to --policy other")),
        (_, None) => 0,
    };
    let dl_given = f.dl_runtime.is_some() || f.dl_deadline.is_some() || f.dl_period.is_some();
    if dl_given && policy != Policy::Deadline {
        return Err(usage!(
            "--dl-runtime/--dl-deadline/--dl-period: only apply to --policy deadline"
        ));
    }
    let deadline = if policy == Policy::Deadline {
        let period = f.dl_period.unwrap_or(f.interval);
        let dl = f.dl_deadline.unwrap_or(period);
        let rt = f.dl_runtime.unwrap_or((f.interval / 10).max(50).min(dl));
        // Kernel limits: runtime ≥ 1024 ns, period ≥ sched_deadline_period_min_us (100 µs by
        // default) and ≤ sched_deadline_period_max_us (~4.2 s by default).
        check_range("--dl-period", period, 100, 4_000_000, " us")?;
        check_range(
            "--dl-deadline",
            dl,
            2,
            period,
            " us (must be ≤ --dl-period)",
        )?;
        check_range("--dl-runtime", rt, 2, dl, " us (must be ≤ --dl-deadline)")?;
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
        Some(d) => Some(parse_duration("--duration", d)?),
        None => None,
    };
    if duration_s.is_none() && f.loops.is_none() {
        duration_s = default_duration;
    }
    if let Some(l) = f.loops {
        check_range("--loops", l, 1, u64::MAX / 2, "")?;
    }
    if let Some(b) = f.break_above {
        check_range("--break-above", b, 1, 100_000_000, " us")?;
    }
    if let Some(t) = f.threshold {
        check_range("--threshold", t, 1, 100_000_000, " us")?;
    }
    check_range("--worst", f.worst, 0, 10_000, "")?;
    check_range("--linear-max", f.linear_max, 1, 1_000_000, " us")?;
    for (flag, p) in [
        ("--json", &f.json),
        ("--histogram-file", &f.histogram_file),
        ("--cyclictest-json", &f.cyclictest_json),
        ("--raw", &f.raw),
    ] {
        if let Some(p) = p.as_deref().filter(|p| *p != std::path::Path::new("-")) {
            check_output(flag, p)?;
        }
    }
    let tags = common::parse_tags("--tag", &f.tags)?;
    let loads = match &f.load {
        None => None,
        Some(spec) => {
            let kinds = rtscope_load::parse_kinds(spec).map_err(super::load::load_error)?;
            let lcpus = common::resolve_cpus("--load-cpus", f.load_cpus.as_deref())?;
            let opts = f.load_flags.options(lcpus, f.force, f.load_exec.clone())?;
            rtscope_load::validate(&kinds, &opts).map_err(super::load::load_error)?;
            Some((kinds, opts))
        }
    };
    let asked: rtscope_trace::Mechanism = f
        .trace
        .parse()
        .map_err(|e: String| usage!("--trace: {e}"))?;
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
        Err(e) => return Err(usage!("--trace={}: {e}", asked.name())),
    };
    if trace != rtscope_trace::Mechanism::Off && f.clock != ClockArg::Monotonic {
        return Err(usage!(
            "--clock realtime: tracing needs --clock monotonic (kernel event timestamps are CLOCK_MONOTONIC)"
        ));
    }
    if f.trace_file.is_some() && trace == rtscope_trace::Mechanism::Off {
        return Err(usage!("--trace-file: needs --trace"));
    }
    if let Some(p) = &f.trace_file {
        check_output("--trace-file", p)?;
    }
    let trace_file_mode = match f.trace_file_mode.as_str() {
        "flight" => TraceFileMode::default(),
        "all" => TraceFileMode::All,
        other => {
            return Err(usage!(
                "--trace-file-mode: must be flight or all; got '{other}'"
            ))
        }
    };
    if !f.no_store {
        common::check_db_writable(f.db.as_deref())?;
    }
    let checkpoint = match f.checkpoint.as_deref() {
        None if f.no_store => None,
        None => Some(rtscope_session::DEFAULT_CHECKPOINT),
        Some("off") => None,
        Some(t) => {
            if f.no_store {
                return Err(usage!(
                    "--checkpoint: checkpoints go to the results store; not with --no-store"
                ));
            }
            let secs = parse_duration("--checkpoint", t)?;
            if !(1.0..=7.0 * 86400.0).contains(&secs) {
                return Err(usage!(
                    "--checkpoint: {t} is out of range (1s ..= 7d, or off)"
                ));
            }
            Some(Duration::from_secs_f64(secs))
        }
    };
    let trace_keep_asked = match &f.trace_keep {
        Some(k) => {
            if trace == rtscope_trace::Mechanism::Off {
                return Err(usage!("--trace-keep: needs --trace"));
            }
            Some(
                k.parse::<rtscope_trace::Keep>()
                    .map_err(|e| usage!("--trace-keep: {e}"))?,
            )
        }
        None => None,
    };
    check_range("--bound-points", f.bound_points, 1, 1000, "")?;
    if f.bound && trace == rtscope_trace::Mechanism::Off {
        return Err(usage!(
            "--bound: needs a trace (--trace, --trace=bpf or --trace=tracefs): the bound is computed from the run's kernel events"
        ));
    }
    // Privileges: one rule for every verb (rtscope_session::privilege).
    let privs = rtscope_session::privilege::Privileges::current();
    let privileged = privs.sys_nice;
    if !privs.allows(policy) {
        if f.allow_unprivileged {
            warnings.warn(WarningCode::NotRealtime, format!(
                "not root and no CAP_SYS_NICE: measuring under SCHED_OTHER instead of {} (--allow-unprivileged); the figures are not real-time latencies",
                policy.name()
            ));
            policy = Policy::Other;
        } else {
            return Err(anyhow::Error::new(crate::exit::ExitCode(
                crate::exit::FAILURE,
                format!(
                    "error: {}",
                    rtscope_session::privilege::denied_message(policy)
                ),
            )));
        }
    }
    let timer = match f.timer {
        TimerArg::Abs => TimerMode::AbsNanosleep,
        TimerArg::Rel => TimerMode::RelNanosleep,
        TimerArg::Timerfd => TimerMode::Timerfd,
        TimerArg::Posix => TimerMode::PosixTimer,
    };
    let clock = match f.clock {
        ClockArg::Monotonic => ClockId::Monotonic,
        ClockArg::Realtime => ClockId::Realtime,
    };
    let config = RunConfig {
        verb: verb.to_string(),
        cmdline: super::common::cmdline(),
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
        timer,
        clock,
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
        tags: tags.clone(),
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
            return Err(usage!(
                "--trace-keep relevant: not with --policy other (the filter leaves out SCHED_OTHER switches and wake-ups, the measured threads' own); use --trace-keep all"
            ))
        }
        (Some(k), _) => k,
        (None, Policy::Other) => rtscope_trace::Keep::All,
        (None, _) => rtscope_trace::Keep::Relevant,
    };
    Ok(Plan {
        id: common::new_run_id(),
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

/// Print what a run produced: the summary, the files, where it was stored; a failed output
/// file is an error (exit 1) after everything else was done.
pub fn report_outcome(o: &rtscope_session::Outcome, summary: bool) -> Result<()> {
    if summary {
        print!("{}", rtscope_report::text::summary(&o.record));
    }
    // Status on stderr: stdout carries the result.
    for w in &o.written {
        eprintln!("wrote {w}");
    }
    super::print_saved(o.stored.as_ref());
    if !o.failed_outputs.is_empty() {
        let stored = match &o.stored {
            Some(rtscope_store::Saved::Stored { location, .. }) => {
                format!(" (the run itself is stored in {location})")
            }
            Some(rtscope_store::Saved::Fallback { path, .. }) => {
                format!(" (the run itself is kept in {})", path.display())
            }
            None => String::new(),
        };
        return Err(anyhow::anyhow!(
            "could not write {}{stored}",
            o.failed_outputs.join("; ")
        ));
    }
    Ok(())
}

pub fn run(a: Args) -> Result<()> {
    let mut plan = resolve(&a.flags, "measure", None)?;
    plan.warnings.extend(common::recover_leftovers());
    let total = plan.config.duration_s.map(Duration::from_secs_f64);
    let mut view = rtscope_session::live::default_view(a.flags.quiet, total);
    let outcome = rtscope_session::execute(&plan, view.as_mut())?;
    let json_stdout = a.flags.json.as_deref() == Some(std::path::Path::new("-"));
    report_outcome(&outcome, !json_stdout)
}
