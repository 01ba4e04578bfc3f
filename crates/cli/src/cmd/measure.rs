//! `rtscope measure`: the cyclictest-class latency probe.
//!
//! Flags are parsed into [`MeasureFlags`], resolved and validated into a [`Resolved`] (nothing
//! has started yet; every error names its flag and range, exit 2), then [`execute`] runs the
//! probe and builds the RunRecord, and [`write_outputs`] writes the files atomically.

use super::common::{self, check_output, check_range, parse_duration, write_atomic};
use crate::usage;
use anyhow::{Context, Result};
use clap::ValueEnum;
use rtscope_model::{
    ClockId, DeadlineParams, EndReason, Histogram, Policy, RunConfig, RunRecord, Stats,
    ThreadResult, TimerMode,
};
use rtscope_probe::{MeasureSpec, Measurement};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
    /// Write the RunRecord (rtscope JSON schema) here
    #[arg(long, value_name = "FILE")]
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
    /// Results database (SQLite path or postgres://…)
    #[arg(long, value_name = "URL")]
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
    #[arg(long, value_name = "MODE", default_value = "off", num_args = 0..=1, default_missing_value = "auto")]
    pub trace: String,
    /// Write the trace (events + every sample) to this .rtt file for `rtscope analyze`
    #[arg(long, value_name = "FILE")]
    pub trace_file: Option<PathBuf>,
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

/// A fully validated run: nothing has been started when this exists.
pub struct Resolved {
    pub id: String,
    /// Resolved capture mechanism (never Auto): Off when untraced.
    pub trace: rtscope_trace::Mechanism,
    pub trace_file: Option<PathBuf>,
    /// What the capture keeps (`--trace-keep`).
    pub trace_keep: rtscope_trace::Keep,
    /// `--bound`: the time-to-bound series length.
    pub bound_points: Option<u32>,
    pub loads: Option<(Vec<rtscope_load::LoadKind>, rtscope_load::LoadOptions)>,
    pub config: RunConfig,
    pub spec: MeasureSpec,
    pub warnings: Vec<String>,
}

pub fn resolve(f: &MeasureFlags, verb: &str, default_duration: Option<f64>) -> Result<Resolved> {
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
            warnings.push(format!(
                "DEADLINE period {period} us differs from the interval {} us",
                f.interval
            ));
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
        if let Some(p) = p {
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
            warnings.push(format!(
                "--trace=auto: no capture mechanism works here ({}); the run is untraced",
                rtscope_trace::unavailable_reasons().join("; ")
            ));
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
    // Privileges: RT and DEADLINE policies need root or CAP_SYS_NICE.
    let privileged = rtscope_probe::sys::is_root()
        || rtscope_probe::sys::has_capability(rtscope_probe::sys::CAP_SYS_NICE);
    if !privileged && policy != Policy::Other {
        if f.allow_unprivileged {
            warnings.push(format!(
                "not root and no CAP_SYS_NICE: measuring under SCHED_OTHER instead of {} (--allow-unprivileged); the figures are not real-time latencies",
                policy.name()
            ));
            policy = Policy::Other;
        } else {
            return Err(anyhow::Error::new(crate::exit::ExitCode(
                crate::exit::FAILURE,
                format!(
                    "error: --policy {} needs root or CAP_SYS_NICE (run with sudo, or `setcap cap_sys_nice,cap_ipc_lock+ep $(command -v rtscope)`, or pass --allow-unprivileged to measure under SCHED_OTHER)",
                    policy.name()
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
        cmdline: std::env::args().collect(),
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
    let tracing = trace != rtscope_trace::Mechanism::Off;
    let mut spec = MeasureSpec::from_config(&config, f.raw.is_some() || tracing);
    if !privileged {
        // Unprivileged mlockall of a whole run's buffers usually exceeds RLIMIT_MEMLOCK.
        spec.mlock = false;
        warnings.push("unprivileged: memory not locked (mlockall needs CAP_IPC_LOCK)".into());
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
    Ok(Resolved {
        id: common::new_run_id(),
        trace,
        trace_file: f.trace_file.clone(),
        trace_keep,
        bound_points: f.bound.then_some(f.bound_points),
        loads,
        config,
        spec,
        warnings,
    })
}

/// How progress is shown while the threads run.
pub trait Display {
    fn tick(&mut self, m: &Measurement, elapsed: Duration, total: Option<Duration>);
    fn finish(&mut self) {}
}

pub struct NoDisplay;
impl Display for NoDisplay {
    fn tick(&mut self, _: &Measurement, _: Duration, _: Option<Duration>) {}
}

/// rtscope's live view on a TTY: per-thread cur/min/avg/max and a progress bar with ETA.
pub struct LiveView {
    lines: usize,
    cpus: Vec<u32>,
}

impl LiveView {
    pub fn new(cpus: &[u32]) -> Self {
        LiveView {
            lines: 0,
            cpus: cpus.to_vec(),
        }
    }
}

impl Display for LiveView {
    fn tick(&mut self, m: &Measurement, elapsed: Duration, total: Option<Duration>) {
        use std::sync::atomic::Ordering::Relaxed;
        let mut out = String::new();
        if self.lines > 0 {
            out.push_str(&format!("\x1b[{}A", self.lines));
        }
        let mut n = 0;
        for (i, l) in m.live.iter().enumerate() {
            let c = l.cycles.load(Relaxed);
            let min = l.min_ns.load(Relaxed);
            let avg = l.sum_ns.load(Relaxed).checked_div(c).unwrap_or(0);
            out.push_str(&format!(
                "\x1b[2KCPU {:>3} tid {:>7}  samples {:>10}  cur {:>8.1}  min {:>8.1}  avg {:>8.1}  max {:>9.1} us\n",
                self.cpus.get(i).copied().unwrap_or(0),
                l.tid.load(Relaxed),
                c,
                l.cur_ns.load(Relaxed) as f64 / 1e3,
                if min == u64::MAX { 0.0 } else { min as f64 / 1e3 },
                avg as f64 / 1e3,
                l.max_ns.load(Relaxed) as f64 / 1e3
            ));
            n += 1;
        }
        let el = elapsed.as_secs_f64();
        match total {
            Some(t) => {
                let frac = (el / t.as_secs_f64()).clamp(0.0, 1.0);
                let w = 40;
                let filled = (frac * w as f64) as usize;
                out.push_str(&format!(
                    "\x1b[2K[{}{}] {:>3.0}%  {:.0}/{:.0} s  ETA {:.0} s\n",
                    "#".repeat(filled),
                    "-".repeat(w - filled),
                    frac * 100.0,
                    el,
                    t.as_secs_f64(),
                    (t.as_secs_f64() - el).max(0.0)
                ));
            }
            None => out.push_str(&format!("\x1b[2K{el:.0} s elapsed (Ctrl-C to stop)\n")),
        }
        n += 1;
        self.lines = n;
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(out.as_bytes());
        let _ = e.flush();
    }
}

pub fn default_display(quiet: bool, cpus: &[u32]) -> Box<dyn Display> {
    if quiet || !std::io::stderr().is_terminal() {
        Box::new(NoDisplay)
    } else {
        Box::new(LiveView::new(cpus))
    }
}

/// Run the probe for a resolved configuration; SIGINT/SIGTERM end it early (results kept,
/// marked interrupted). Hooks let `run`/loads/trace wrap the measurement.
pub fn execute(
    r: &Resolved,
    display: &mut dyn Display,
) -> Result<(RunRecord, Vec<rtscope_model::RawSample>)> {
    common::install_signal_handlers();
    let started_wall = std::time::SystemTime::now();
    let mut system = rtscope_probe::system::capture(&r.config.cpus);
    let steal_before = rtscope_probe::system::steal_ns();
    // Loads start first (from this long-lived thread: their death signal is tied to it) and get
    // a moment to reach full intensity before the first sample.
    let running_loads = match &r.loads {
        Some((kinds, opts)) => {
            let l = rtscope_load::start(kinds, opts).map_err(super::load::load_error)?;
            std::thread::sleep(Duration::from_millis(500));
            Some(l)
        }
        None => None,
    };
    let session = if r.trace != rtscope_trace::Mechanism::Off {
        Some(
            rtscope_trace::TraceSession::start_with(&r.config.cpus, r.trace, r.trace_keep)
                .map_err(|e| anyhow::anyhow!("starting the {} capture: {e}", r.trace.name()))?,
        )
    } else {
        None
    };
    let t0 = Instant::now();
    let m = Measurement::start(&r.spec).map_err(|e| anyhow::anyhow!(e))?;
    let total = r.config.duration_s.map(Duration::from_secs_f64);
    let mut interrupted = false;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if common::stop_requested() && !interrupted {
            interrupted = true;
            m.request_stop();
        }
        if m.all_done() {
            break;
        }
        display.tick(&m, t0.elapsed(), total);
    }
    display.tick(&m, t0.elapsed(), total);
    display.finish();
    let out = m.join().map_err(|e| anyhow::anyhow!(e));
    let wall = t0.elapsed().as_secs_f64();
    let capture = session.map(|s| s.stop());
    let load_reports = running_loads.map(|l| l.stop()).unwrap_or_default();
    let out = out?;
    let steal_after = rtscope_probe::system::steal_ns();
    rtscope_probe::system::set_steal(&mut system, &steal_before, &steal_after, &r.config.cpus);
    let mut hygiene = out.hygiene;
    hygiene.peak_rss_kib = peak_rss_kib();
    let mut rec = build_record(
        r,
        out.threads,
        out.break_sample,
        hygiene,
        system,
        started_wall,
        wall,
        interrupted,
    );
    rec.id = r.id.clone();
    for l in &load_reports {
        for w in &l.warnings {
            rec.warnings.push(format!("load {}: {w}", l.kind));
        }
    }
    rec.loads = load_reports;
    if let Some(capture) = capture {
        let capture = capture.map_err(|e| anyhow::anyhow!("trace capture: {e}"))?;
        explain(r, &mut rec, capture, &out.raw)?;
    }
    Ok((rec, out.raw))
}

/// Per-sample attribution of a traced run: the summary goes into the record, the trace (events
/// and every sample) into the .rtt file when asked.
fn explain(
    r: &Resolved,
    rec: &mut RunRecord,
    capture: rtscope_trace::Capture,
    raw: &[rtscope_model::RawSample],
) -> Result<()> {
    use rtscope_analysis::attribution::{attribute, AttributionOptions};
    let lost = capture.lost_total();
    if lost > 0 {
        rec.warnings.push(format!(
            "TRACE LOST EVENTS: {lost} kernel events lost ({:?} per CPU): attribution on those CPUs is incomplete",
            capture.lost_per_cpu
        ));
    }
    let mut tids: Vec<u32> = raw.iter().map(|s| s.tid).collect();
    tids.sort_unstable();
    tids.dedup();
    let names = capture.names(&tids);
    let opts = AttributionOptions {
        tail_threshold_ns: r.config.threshold_us.map(|u| u * 1000),
        top_n: r.config.worst_n.max(1),
        lost_per_cpu: capture.lost_per_cpu.iter().map(|(&c, &n)| (c, n)).collect(),
        steal_ns_per_cpu: capture
            .steal_ns_per_cpu
            .iter()
            .map(|(&c, &n)| (c, n))
            .collect(),
        ..Default::default()
    };
    let result = attribute(&capture.events, raw, &names, &opts);
    rec.warnings.extend(result.warnings.iter().cloned());
    rec.attribution = Some(result.summary);
    if let Some(points) = r.bound_points {
        use rtscope_analysis::bound;
        let bopts = bound::Options::default();
        match bound::events::traced_run_input(
            &capture.events,
            raw,
            (capture.start_ns, capture.end_ns),
            &capture.lost_per_cpu,
            None,
            Some(points),
            &bopts,
        ) {
            Ok((input, series)) => {
                let mut report = bound::analyze(&input, &bopts, "trace");
                report.series = series;
                rec.bound = Some(report);
            }
            Err(e) => rec
                .warnings
                .push(format!("--bound: no bound computed: {e}")),
        }
    }
    if let Some(path) = &r.trace_file {
        let file = capture.into_rtt_named(raw.to_vec(), names);
        rtscope_trace::write_rtt(path, &file)
            .map_err(|e| anyhow::anyhow!("--trace-file {}: {e}", path.display()))?;
        rec.trace_file = Some(path.display().to_string());
    }
    Ok(())
}

fn peak_rss_kib() -> Option<u64> {
    // SAFETY: rusage is plain data filled by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    (unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0).then_some(ru.ru_maxrss as u64)
}

#[allow(clippy::too_many_arguments)]
fn build_record(
    r: &Resolved,
    threads: Vec<rtscope_probe::measure::ThreadOutcome>,
    break_sample: Option<rtscope_model::SampleRef>,
    hygiene: rtscope_model::Hygiene,
    system: rtscope_model::SystemInfo,
    started: std::time::SystemTime,
    wall_s: f64,
    interrupted: bool,
) -> RunRecord {
    let mut warnings = r.warnings.clone();
    let mut merged = Histogram::new();
    let mut overruns = 0;
    let mut results = Vec::new();
    for t in threads {
        merged.merge(&t.recorder.hist);
        overruns += t.recorder.overruns;
        let expected_policy = r.config.policy.name();
        if t.observed.policy != expected_policy {
            warnings.push(format!(
                "thread on CPU {} ran under {} although {} was requested",
                t.cpu, t.observed.policy, expected_policy
            ));
        }
        if let Some(e) = &t.error {
            warnings.push(format!("thread on CPU {} stopped early: {e}", t.cpu));
        }
        let stats = Stats::from_histogram(&t.recorder.hist);
        results.push(ThreadResult {
            index: t.index,
            cpu: if r.config.policy == Policy::Deadline {
                t.last_cpu
            } else {
                t.cpu
            },
            tid: t.recorder.tid,
            observed_policy: t.observed.policy.clone(),
            observed_priority: t.observed.priority,
            cycles: t.recorder.cycles,
            overruns: t.recorder.overruns,
            stats,
            worst: t.recorder.worst(),
            above_threshold: t.recorder.above.clone(),
            above_threshold_dropped: t.recorder.above_dropped,
            linear: t.recorder.linear.clone(),
            histogram: t.recorder.hist,
        });
    }
    let stats = Stats::from_histogram(&merged);
    if overruns > 0 {
        warnings.push(format!(
            "{overruns} periods were missed entirely (overruns); they are counted here, not folded into latency"
        ));
    }
    if merged.clamped() > 0 {
        warnings.push(format!(
            "{} samples above 100 s were clamped in the histogram (max is exact)",
            merged.clamped()
        ));
    }
    if let Some(h) = &system.hypervisor {
        let steal_ms = system.steal_during_run_ns.unwrap_or(0) as f64 / 1e6;
        warnings.push(format!(
            "running under a hypervisor ({h}): host preemption appears as latency with no guest cause; steal time on the measured CPUs during the run: {steal_ms:.1} ms"
        ));
    }
    if stats
        .percentiles
        .iter()
        .any(|p| !p.reliable && p.percent <= 99.99)
    {
        warnings.push(format!(
            "only {} samples: percentiles marked * have fewer than 10 samples above them",
            stats.samples
        ));
    }
    if interrupted {
        let sig = match common::stop_signal() {
            libc::SIGINT => "SIGINT",
            libc::SIGTERM => "SIGTERM",
            libc::SIGHUP => "SIGHUP",
            _ => "a signal",
        };
        warnings.push(format!("interrupted by {sig}: partial results"));
    }
    let end_reason = if break_sample.is_some() {
        EndReason::BreakAbove
    } else if interrupted {
        EndReason::Interrupted
    } else {
        EndReason::Completed
    };
    RunRecord {
        schema_version: rtscope_model::SCHEMA_VERSION,
        id: String::new(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: common::rfc3339(started),
        wall_duration_s: wall_s,
        end_reason,
        interrupted,
        break_sample,
        config: r.config.clone(),
        system,
        hygiene,
        threads: results,
        histogram: merged,
        stats,
        overruns,
        loads: Vec::new(),
        attribution: None,
        bound: None,
        trace_file: None,
        warnings,
        tags: r.config.tags.clone(),
        bench: None,
    }
}

/// Write every requested file (atomically) and return the list of what was written.
pub fn write_outputs(
    f: &MeasureFlags,
    rec: &RunRecord,
    raw: &[rtscope_model::RawSample],
) -> Result<Vec<String>> {
    let mut written = Vec::new();
    if let Some(p) = &f.json {
        write_atomic(p, rtscope_report::json::run_record(rec).as_bytes())?;
        written.push(format!("run record JSON: {}", p.display()));
    }
    if let Some(p) = &f.histogram_file {
        let ct = rtscope_report::cyclictest::from_record(rec, rec.config.linear_max_us);
        write_atomic(
            p,
            rtscope_report::cyclictest::write_histogram(&ct).as_bytes(),
        )?;
        written.push(format!("cyclictest histogram: {}", p.display()));
    }
    if let Some(p) = &f.cyclictest_json {
        let ct = rtscope_report::cyclictest::from_record(rec, rec.config.linear_max_us);
        write_atomic(p, rtscope_report::cyclictest::write_json(&ct).as_bytes())?;
        written.push(format!("cyclictest JSON: {}", p.display()));
    }
    if let Some(p) = &f.raw {
        write_atomic(p, rtscope_report::json::raw_samples_csv(raw).as_bytes())
            .with_context(|| format!("--raw {}", p.display()))?;
        written.push(format!("raw samples CSV: {}", p.display()));
    }
    Ok(written)
}

pub fn run(a: Args) -> Result<()> {
    let r = resolve(&a.flags, "measure", None)?;
    let mut display = default_display(a.flags.quiet, &r.config.cpus);
    let (rec, raw) = execute(&r, display.as_mut())?;
    let written = write_outputs(&a.flags, &rec, &raw)?;
    print!("{}", rtscope_report::text::summary(&rec));
    for w in written {
        println!("wrote {w}");
    }
    if !a.flags.no_store {
        super::store_record(a.flags.db.as_deref(), &rec)?;
    }
    Ok(())
}
