//! The flags of `rtscope measure` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    Fifo,
    Rr,
    Other,
    Deadline,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
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

/// `--trace`: how kernel events are captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TraceArg {
    /// eBPF, else tracefs, else untraced with a warning
    Auto,
    Bpf,
    Tracefs,
    Off,
}

/// `--trace-keep`: what a capture keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KeepArg {
    Relevant,
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TraceFileModeArg {
    Flight,
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PresetArg {
    Ospert13,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProbeArg {
    /// a pinned thread per CPU, cyclictest-class
    User,
    /// the kernel's timerlat tracer: per CPU the IRQ and the thread latency (docs/rtla.md)
    Timerlat,
}

/// The capture flags of the measuring verbs.
#[derive(clap::Args, Clone, Debug)]
pub struct TraceArgs {
    /// Capture kernel events on the measured CPUs and explain every sample: auto (eBPF, else
    /// tracefs, else untraced with a warning), bpf, tracefs, or off [default: off; `run`: auto]
    #[arg(long, value_name = "MODE", num_args = 0..=1, default_missing_value = "auto", value_enum)]
    pub trace: Option<TraceArg>,
    /// Write the trace to this .rtt file for `rtscope analyze`: by default a flight recorder
    /// (the event windows of the worst samples and of the worst of each cause, plus 1 s of
    /// everything every 10 min), `--trace-file-mode all` for every event and sample
    #[arg(long, value_name = "FILE")]
    pub trace_file: Option<PathBuf>,
    /// What --trace-file keeps: `flight` (bounded: megabytes for any run length) or `all`
    /// (every event and every sample; grows with the run)
    #[arg(long, value_enum, default_value_t = TraceFileModeArg::Flight)]
    pub trace_file_mode: TraceFileModeArg,
    /// With --trace: `relevant` leaves out what no sample's attribution needs (switches between
    /// two SCHED_OTHER tasks except the last before each recorded event, wake-ups of SCHED_OTHER
    /// tasks; docs/tracing.md) or `all` [default: relevant; all with --policy other]
    #[arg(long, value_enum)]
    pub trace_keep: Option<KeepArg>,
}

#[derive(clap::Args, Clone, Debug)]
pub struct MeasureFlags {
    /// CPUs to measure, e.g. 0,2-3 (default: all online CPUs, one pinned thread each)
    #[arg(short = 'c', long = "cpus", value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// Wake-up interval (10us..=10s; a bare number is µs)
    #[arg(short = 'i', long, default_value = "1000", value_name = "US", value_parser = micros)]
    pub interval: u64,
    /// Each further thread's interval is longer by this much (0..=1s; a bare number is µs)
    #[arg(short = 'd', long, default_value = "0", value_name = "US", value_parser = micros)]
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
    /// DEADLINE runtime (default: 10 % of the interval, at least 50 µs; a bare number is µs)
    #[arg(long, value_name = "US", value_parser = micros)]
    pub dl_runtime: Option<u64>,
    /// DEADLINE relative deadline (default: the interval; a bare number is µs)
    #[arg(long, value_name = "US", value_parser = micros)]
    pub dl_deadline: Option<u64>,
    /// DEADLINE period (default: the interval; a bare number is µs)
    #[arg(long, value_name = "US", value_parser = micros)]
    pub dl_period: Option<u64>,
    /// Do not set SCHED_FLAG_RESET_ON_FORK on DEADLINE threads
    #[arg(long)]
    pub dl_no_reset_on_fork: bool,
    /// Set SCHED_FLAG_DL_OVERRUN (the kernel signals runtime overruns)
    #[arg(long)]
    pub dl_overrun: bool,
    /// Run time: 30s, 5m, 1h, 1d (1ms..=30d; default for measure: until Ctrl-C or --loops)
    #[arg(short = 'D', long, value_name = "TIME", allow_hyphen_values = true, value_parser = common::run_time())]
    pub duration: Option<Duration>,
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
    /// Stop at the first sample above this latency and say which thread/cycle (a bare number
    /// is µs)
    #[arg(short = 'b', long, value_name = "US", value_parser = micros)]
    pub break_above: Option<u64>,
    /// Keep cycle number and time of every sample above this latency (a bare number is µs)
    #[arg(long, value_name = "US", value_parser = micros)]
    pub record_above: Option<u64>,
    /// How many worst samples to keep per thread (0..=10000)
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub worst: usize,
    /// Size of the linear 1 µs histogram (cyclictest -h view), 1us..=1s (a bare number is µs)
    #[arg(long, default_value = "10000", value_name = "US", value_parser = micros32)]
    pub linear_max: u32,
    /// Write the histogram in cyclictest's -h text format here
    #[arg(long, value_name = "FILE")]
    pub histogram_file: Option<PathBuf>,
    /// Write rt-tests' JSON layout here
    #[arg(long, value_name = "FILE")]
    pub cyclictest_json: Option<PathBuf>,
    /// Write every sample as CSV (cpu,tid,cycle,expected_ns,latency_ns)
    #[arg(long, value_name = "FILE")]
    pub raw: Option<PathBuf>,
    /// The RunRecord (rtscope JSON schema) as JSON; -q: no live view, only the final summary
    #[command(flatten)]
    pub out: OutArgs,
    /// Without root/CAP_SYS_NICE: measure under SCHED_OTHER instead of failing
    #[arg(long)]
    pub allow_unprivileged: bool,
    /// Background load during the run: idle, cpu-cache, hackbench, disk, net, io, exec
    /// (comma-separated); its intensity figures are stored with the run
    #[arg(long, value_name = "KIND[,KIND…]", value_parser = common::LoadKindsParser)]
    pub load: Option<common::LoadKinds>,
    /// CPUs the load may use [default: all online]
    #[arg(long, value_name = "LIST")]
    pub load_cpus: Option<CpuList>,
    /// CPUs for rtscope's own session and trace reader threads [default: the online CPUs not
    /// measured; when every CPU is measured, all of them, with a warning]
    #[arg(long, value_name = "LIST")]
    pub housekeeping: Option<CpuList>,
    /// Command for `--load exec` (repeat for each argument: --load-exec stress-ng --load-exec --cpu …)
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub load_exec: Vec<String>,
    /// Confirm a real-time load policy (--load-policy fifo)
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub load_flags: crate::cmd::load::LoadFlags,
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Store an interim record every TIME (1s..=7d, e.g. 10m, 1h; `off` for none) so that a run
    /// killed by SIGKILL, the OOM killer or a power cut keeps everything up to its last
    /// checkpoint [default: 10m when the run is stored]
    #[arg(long, value_name = "TIME|off", value_parser = checkpoint)]
    pub checkpoint: Option<Checkpoint>,
    /// With --trace: compute the ECRTS'20 latency bound (six interrupt characterizations) from
    /// the run's events beside the observed maximum, and how the sliding-window bound and the
    /// observed maximum evolved (time to bound). Without preemptirq tracepoints the thread terms
    /// are estimated and every output says ESTIMATE, NOT A SOUND BOUND.
    #[arg(long)]
    pub bound: bool,
    /// Instants in the time-to-bound series of --bound (1 ..= 1000)
    #[arg(long, value_name = "N", default_value_t = 60)]
    pub bound_points: u32,
    /// End the run when the tail model's 1e-9 estimate and its interval (and, with --bound, the
    /// time-to-bound series) stopped moving by more than --stable-tolerance over
    /// --stable-window (docs/tail.md); the record says which criterion ended it
    #[arg(long)]
    pub until_stable: bool,
    /// --until-stable: the relative change allowed over the window (0 < x < 1)
    #[arg(
        long,
        value_name = "FRACTION",
        default_value_t = 0.05,
        allow_hyphen_values = true
    )]
    pub stable_tolerance: f64,
    /// --until-stable: the window over which nothing may move more than the tolerance (1s..=7d)
    #[arg(long, value_name = "TIME", default_value = "10m", value_parser = common::run_time())]
    pub stable_window: Duration,
    /// --until-stable: end the run at this length even if it never became stable (needed
    /// without -D)
    #[arg(long, value_name = "TIME", value_parser = common::run_time())]
    pub max_duration: Option<Duration>,
    /// A published set-up: ospert13 = Cerqueira & Brandenburg (OSPERT'13 §2–3): SCHED_FIFO 99,
    /// one pinned thread per CPU, -i 1000 -d 500, 20 min, cpu-cache working set 20M per CPU,
    /// the disk load by bonnie++ when installed. Flags given explicitly win (and the record
    /// says the run is not the paper's set-up); the scenario is --load
    #[arg(long, value_name = "NAME", value_enum)]
    pub preset: Option<PresetArg>,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub flags: MeasureFlags,
    /// Who measures: `user` (a pinned thread per CPU, cyclictest-class) or `timerlat` (the
    /// kernel's timerlat tracer: per CPU the IRQ and the thread latency; docs/rtla.md)
    #[arg(long, value_enum, default_value_t = ProbeArg::User)]
    pub probe: ProbeArg,
}
