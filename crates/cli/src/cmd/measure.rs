//! `rtscope measure`: the cyclictest-class latency probe. The flags are resolved into a
//! validated plan (`rtscope_session::resolve`: nothing has started yet; every error names its
//! flag and range, exit 2) and run by the session.

use clap::ValueEnum;
use rtscope_model::{ClockId, Policy, TimerMode};
use rtscope_session::resolve;
use std::path::PathBuf;

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
    #[arg(long, value_parser = super::common::db_url, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Do not store the run in the results database
    #[arg(long)]
    pub no_store: bool,
    /// Free tags key=value (repeatable), stored with the run
    #[arg(long = "tag", value_name = "K=V")]
    pub tags: Vec<String>,
    /// Background load during the run: idle, cpu-cache, hackbench, disk, net, io, exec
    /// (comma-separated); its intensity figures are stored with the run
    #[arg(long, value_name = "KIND[,KIND…]", value_parser = super::common::LoadKindsParser)]
    pub load: Option<super::common::LoadKinds>,
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
    /// A published set-up: ospert13 = Cerqueira & Brandenburg (OSPERT'13 §2–3): SCHED_FIFO 99,
    /// one pinned thread per CPU, -i 1000 -d 500, 20 min, cpu-cache working set 20M per CPU,
    /// the disk load by bonnie++ when installed. Flags given explicitly win (and the record
    /// says the run is not the paper's set-up); the scenario is --load
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub flags: MeasureFlags,
    /// Who measures: `user` (a pinned thread per CPU, cyclictest-class) or `timerlat` (the
    /// kernel's timerlat tracer: per CPU the IRQ and the thread latency; docs/rtla.md)
    #[arg(long, default_value = "user", value_parser = ["user", "timerlat"])]
    pub probe: String,
}

impl MeasureFlags {
    pub fn lib(&self) -> resolve::MeasureFlags {
        let f = self.clone();
        resolve::MeasureFlags {
            cpus: f.cpus,
            interval: f.interval,
            distance: f.distance,
            aligned: f.aligned,
            policy: match f.policy {
                PolicyArg::Fifo => Policy::Fifo,
                PolicyArg::Rr => Policy::Rr,
                PolicyArg::Other => Policy::Other,
                PolicyArg::Deadline => Policy::Deadline,
            },
            priority: f.priority,
            nice: f.nice,
            dl_runtime: f.dl_runtime,
            dl_deadline: f.dl_deadline,
            dl_period: f.dl_period,
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
            break_above: f.break_above,
            threshold: f.threshold,
            worst: f.worst,
            linear_max: f.linear_max,
            json: f.json,
            histogram_file: f.histogram_file,
            cyclictest_json: f.cyclictest_json,
            raw: f.raw,
            quiet: f.quiet,
            allow_unprivileged: f.allow_unprivileged,
            db: f.db,
            no_store: f.no_store,
            tags: f.tags,
            load: f.load.map(|k| k.0),
            load_cpus: f.load_cpus,
            load_exec: f.load_exec,
            force: f.force,
            load_settings: f.load_flags.settings(),
            trace: f.trace,
            trace_file: f.trace_file,
            trace_file_mode: f.trace_file_mode,
            checkpoint: f.checkpoint,
            trace_keep: f.trace_keep,
            bound: f.bound,
            bound_points: f.bound_points,
            preset: f.preset,
        }
    }
}

pub fn run(a: Args) -> anyhow::Result<()> {
    if a.probe == "timerlat" {
        return timerlat(&a.flags);
    }
    let plan = resolve::measure(&a.flags.lib(), "measure", None)?;
    Ok(rtscope_session::measure::run_plan(plan, a.flags.quiet)?)
}

/// The flags `--probe timerlat` has no use for: the kernel's threads are SCHED_FIFO, wake on
/// an absolute hrtimer, and are read through the tracer, not through samples of ours.
fn timerlat_refusals(f: &MeasureFlags) -> Option<&'static str> {
    let d = resolve::MeasureFlags::default();
    let l = f.lib();
    [
        (l.distance != d.distance, "--distance"),
        (l.aligned, "--aligned"),
        (l.policy != d.policy, "--policy"),
        (l.nice.is_some(), "--nice"),
        (
            l.dl_runtime.is_some() || l.dl_deadline.is_some() || l.dl_period.is_some(),
            "--dl-*",
        ),
        (l.loops.is_some(), "--loops"),
        (l.timer != d.timer, "--timer"),
        (l.clock != d.clock, "--clock"),
        (l.break_above.is_some(), "--break-above"),
        (l.threshold.is_some(), "--threshold"),
        (l.histogram_file.is_some(), "--histogram-file"),
        (l.cyclictest_json.is_some(), "--cyclictest-json"),
        (l.raw.is_some(), "--raw"),
        (l.load.is_some(), "--load"),
        (l.trace != d.trace, "--trace"),
        (l.trace_file.is_some(), "--trace-file"),
        (l.bound, "--bound"),
        (l.checkpoint.is_some(), "--checkpoint"),
        (l.allow_unprivileged, "--allow-unprivileged"),
        (l.worst != d.worst, "--worst"),
    ]
    .into_iter()
    .find_map(|(set, flag)| set.then_some(flag))
}

fn timerlat(f: &MeasureFlags) -> anyhow::Result<()> {
    if let Some(flag) = timerlat_refusals(f) {
        return Err(crate::usage!(
            "{flag}: not with --probe timerlat (the kernel's timerlat threads are measured; accepted: --cpus, --interval, --priority, -D, --linear-max, the output flags)"
        ));
    }
    let plan = rtscope_verbs::osnoise::TimerlatPlan {
        cpus: super::common::resolve_cpus("--cpus", f.cpus.as_deref())?,
        period_us: f.interval,
        duration_s: f
            .duration
            .as_deref()
            .map(|d| super::common::parse_duration("--duration", d))
            .transpose()?,
        priority: f.priority,
        linear_max_us: f.linear_max,
        lab_hint: super::noise::lab_hint(),
    };
    let out = rtscope_session::outputs::RecordOutputs {
        json: rtscope_session::outputs::JsonDest(f.json.clone()),
        db: f.db.clone(),
        no_store: f.no_store,
        tags: f.tags.clone(),
        quiet: f.quiet,
    };
    Ok(rtscope_verbs::osnoise::timerlat(&plan, &out)?)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[derive(Parser)]
    struct Defaults {
        #[command(flatten)]
        flags: super::MeasureFlags,
    }

    /// The library's defaults are the flags' defaults.
    #[test]
    fn defaults_agree() {
        let d = Defaults::try_parse_from(["rtscope"]).map(|d| d.flags.lib());
        assert_eq!(
            d.ok(),
            Some(rtscope_session::resolve::MeasureFlags::default())
        );
    }
}
