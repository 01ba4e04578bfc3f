//! PRAcTISE in Rust: the user-space scheduler lab of the SCHED_DEADLINE thesis (lelli-2014,
//! §2.3.3–2.3.8). M emulated CPUs, each a thread with its own ready queue, run the cycle of
//! Fig. 2.21 — a random activation, early finish or nothing every cycle — and call the
//! scheduler's `on_activation`/`on_block` with a pre-schedule `pull()` and a post-schedule
//! `push()`. Behind push and pull sit the global structures of §2.3.7 ([`structures`]): the
//! kernel's `cpudl` and `cpupri`, the pull min-heap the thesis proposed, and our lock-free flat
//! array, so that they can be compared on the same workload.
//!
//! What it owns: the emulated CPUs, the structures and their checkers. What it must not do: format
//! output (`rtscope_report` does) or touch the kernel other than through `rtscope_sys` (the
//! kernel half's fentry probes are `rtscope_trace`'s).
//!
//! Modes (§2.3.3):
//! - **test**: threads float (M may exceed the real CPUs, up to [`MAX_TEST_CPUS`]); a checker
//!   thread locks every queue every `check_every_ns` and runs each structure's `data_check`
//!   (cpudl: heap property and heap/index consistency; cpupri: each CPU's level against its
//!   queue's highest task, per-level counts and masks; the overload flags against the queue
//!   lengths). Any failure stops the run: it is a bug, because structures change only inside
//!   run-queue critical sections, and the checker holds them all.
//! - **perf**: one thread pinned per CPU, memory locked (`mlockall`), no checker: per-operation
//!   durations (§2.3.8) as distributions.
//! - **replay** ([`replay`]): the queues driven by a recorded trace's scheduling events.
//!
//! The global EDF/FP invariant — the M highest-priority ready tasks are the running ones — is
//! measured, not enforced. At rest it holds (a push displaces the lowest-priority running task,
//! a pull on an emptied CPU takes the best waiting one), but it is false while a CPU is between
//! the steps of one event: `on_activation` enqueues, then pulls, then pushes, each in its own
//! critical section (Fig. 2.21, and the kernel's enqueue / pre- / post-schedule), so a checker
//! that takes the locks in between sees a new task waiting that should run elsewhere. That
//! window is nanoseconds unless the thread is preempted inside it — which happens when M
//! exceeds the real CPUs. It also stays false after a find whose answer another CPU made stale
//! before the locks were taken (`push_stale`/`pull_stale`): the move is dropped, and nothing
//! retries until the next event on either CPU (the kernel retries a push up to DL_MAX_TRIES
//! times and reschedules the target CPU by IPI; PRAcTISE, like the thesis', emulates no IPI).
//! `PractiseChecks` counts how often, which kind, and the longest stretch; docs/practise.md has
//! measured rates.

pub mod clock;
pub mod emulate;
pub mod machine;
pub mod modes;
pub mod queue;
pub mod replay;
pub mod spin;
pub mod stats;
pub mod structures;
pub mod task;

use clock::OpClock;
use queue::QueueKind;
use rtscope_model::event::Event;
use rtscope_model::practise::{PractiseMode, PractiseResult, PractiseViolation};
use rtscope_model::{Warning, WarningCode};
use structures::{Fault, StructureKind};

/// Testing mode's limit on emulated CPUs: the thesis' largest machine (48 cores, §2.3.9).
pub const MAX_TEST_CPUS: usize = 48;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Test,
    Perf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Edf,
    Fp,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Edf => "edf",
            Policy::Fp => "fp",
        }
    }
}

/// The policy asked for: `Auto` runs each structure under its own ([`StructureKind::natural_policy`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyChoice {
    Auto,
    Edf,
    Fp,
}

impl PolicyChoice {
    pub fn name(self) -> &'static str {
        match self {
            PolicyChoice::Auto => "auto",
            PolicyChoice::Edf => "edf",
            PolicyChoice::Fp => "fp",
        }
    }
    pub fn parse(s: &str) -> Option<PolicyChoice> {
        match s {
            "auto" => Some(PolicyChoice::Auto),
            "edf" => Some(PolicyChoice::Edf),
            "fp" => Some(PolicyChoice::Fp),
            _ => None,
        }
    }
    pub fn resolve(self, kind: StructureKind) -> Policy {
        match self {
            PolicyChoice::Auto => kind.natural_policy(),
            PolicyChoice::Edf => Policy::Edf,
            PolicyChoice::Fp => Policy::Fp,
        }
    }
}

/// Which probability a [`ConfigError::Probability`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prob {
    Arrival,
    Finish,
}

/// Cycle range: 10 µs ..= 10 s.
pub const CYCLE_NS: (u64, u64) = (10_000, 10_000_000_000);
/// Check period range: 100 µs ..= 10 s.
pub const CHECK_EVERY_NS: (u64, u64) = (100_000, 10_000_000_000);
/// Duration of one run: 10 ms ..= 1 day.
pub const DURATION_NS: (u64, u64) = (10_000_000, 86_400_000_000_000);

/// A configuration the lab refuses. No flag names here: the command line adds them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("no number of emulated CPUs given")]
    NoCpus,
    #[error("{got} is out of range (1..={max}: {why})")]
    EmulatedCpus {
        got: usize,
        max: usize,
        why: &'static str,
    },
    #[error("{value} is not a probability (0..=1)")]
    Probability { which: Prob, value: f64 },
    #[error("{arrival} + {finish} = {} exceeds 1 (each 0..=1, their sum at most 1; the rest is 'nothing happens')", arrival + finish)]
    ProbabilitySum { arrival: f64, finish: f64 },
    #[error("{ns} ns is out of range (10 µs ..= 10 s)")]
    Cycle { ns: u64 },
    #[error("{ns} ns is out of range (10 ms ..= 1 day per run)")]
    Duration { ns: u64 },
    #[error("{ns} ns is out of range (100 µs ..= 10 s)")]
    CheckEvery { ns: u64 },
    #[error("cpupri tracks fixed priorities (kernel/sched/cpupri.c) and cannot run under EDF; use fp or auto")]
    CpupriUnderEdf,
    #[error("no structure given")]
    NoStructures,
}

#[derive(Debug, thiserror::Error)]
pub enum PractiseError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("pinning an emulated CPU to CPU {cpu}: {err}")]
    Pin { cpu: u32, err: std::io::Error },
    #[error("starting a thread: {0}")]
    Thread(std::io::Error),
    #[error("an emulated CPU's thread panicked")]
    Panicked,
    #[error("the trace holds no scheduling events (sched_switch, sched_waking/sched_wakeup, sched_migrate_task)")]
    NoSchedEvents,
    #[error("the trace names {cpus} CPUs; the lab emulates at most 64")]
    TooManyCpus { cpus: usize },
}

/// A random-events run (testing or performance mode).
#[derive(Clone, Debug)]
pub struct Config {
    pub mode: Mode,
    /// Each value is one set of runs (the M axis of Figs. 2.24–2.27).
    pub emulated_cpus: Vec<usize>,
    /// Each configuration runs for `duration_ns` at each M.
    pub structures: Vec<StructureKind>,
    pub queue: QueueKind,
    pub policy: PolicyChoice,
    /// §2.3.6 "the period of the thread cycle"; thesis §2.3.9: 10 ms.
    pub cycle_ns: u64,
    /// §2.3.9: 20 % new arrival, 10 % early finish, 70 % nothing.
    pub p_arrival: f64,
    pub p_finish: f64,
    pub duration_ns: u64,
    pub seed: u64,
    pub check_every_ns: u64,
    /// Performance mode: emulated CPU i runs pinned on `pin_cpus[i]` (the online CPUs).
    pub pin_cpus: Vec<u32>,
    pub fault: Option<Fault>,
}

impl Config {
    /// The thesis' parameters (§2.3.9).
    pub fn thesis_defaults(mode: Mode, emulated_cpus: Vec<usize>, pin_cpus: Vec<u32>) -> Config {
        Config {
            mode,
            emulated_cpus,
            structures: structures::ALL_STRUCTURES.to_vec(),
            queue: QueueKind::Heap,
            policy: PolicyChoice::Auto,
            cycle_ns: 10_000_000,
            p_arrival: 0.2,
            p_finish: 0.1,
            duration_ns: 5_000_000_000,
            seed: 1,
            check_every_ns: 1_000_000,
            pin_cpus,
            fault: None,
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.emulated_cpus.is_empty() {
            return Err(ConfigError::NoCpus);
        }
        let (max, why) = match self.mode {
            Mode::Test => (MAX_TEST_CPUS, "testing mode"),
            Mode::Perf => (
                self.pin_cpus.len(),
                "performance mode pins one emulated CPU per online CPU",
            ),
        };
        for &m in &self.emulated_cpus {
            if m == 0 || m > max {
                return Err(ConfigError::EmulatedCpus { got: m, max, why });
            }
        }
        for (which, value) in [
            (Prob::Arrival, self.p_arrival),
            (Prob::Finish, self.p_finish),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(ConfigError::Probability { which, value });
            }
        }
        if self.p_arrival + self.p_finish > 1.0 + 1e-12 {
            return Err(ConfigError::ProbabilitySum {
                arrival: self.p_arrival,
                finish: self.p_finish,
            });
        }
        let within = |v: u64, (lo, hi): (u64, u64)| (lo..=hi).contains(&v);
        if !within(self.cycle_ns, CYCLE_NS) {
            return Err(ConfigError::Cycle { ns: self.cycle_ns });
        }
        if !within(self.duration_ns, DURATION_NS) {
            return Err(ConfigError::Duration {
                ns: self.duration_ns,
            });
        }
        if self.mode == Mode::Test && !within(self.check_every_ns, CHECK_EVERY_NS) {
            return Err(ConfigError::CheckEvery {
                ns: self.check_every_ns,
            });
        }
        if self.structures.is_empty() {
            return Err(ConfigError::NoStructures);
        }
        if self.policy == PolicyChoice::Edf && self.structures.contains(&StructureKind::Cpupri) {
            return Err(ConfigError::CpupriUnderEdf);
        }
        Ok(())
    }
}

/// Run every configuration at every M, one after the other; stop at the first checker failure
/// (then `violation` is set and the failing run is the last one) or when `should_stop` says so.
pub fn run(
    cfg: &Config,
    online_cpus: u32,
    should_stop: &(dyn Fn() -> bool + Sync),
    progress: &mut dyn FnMut(&str),
) -> Result<PractiseResult, PractiseError> {
    cfg.validate()?;
    let (clock, clock_info) = OpClock::detect();
    let mut notes = Vec::new();
    let locked = cfg.mode == Mode::Perf && lock_memory();
    if cfg.mode == Mode::Perf && !locked {
        notes.push(format!(
            "mlockall failed ({}): page faults may enter the durations",
            std::io::Error::last_os_error()
        ));
    }
    if cfg.mode == Mode::Test && cfg.emulated_cpus.iter().any(|&m| m > online_cpus as usize) {
        notes.push(format!(
            "more emulated CPUs than the {online_cpus} online ones: threads share CPUs, so durations include the time a preempted lock holder keeps others waiting (§2.3.3: realistic performance needs M ≤ N)"
        ));
    }
    let mut runs = Vec::new();
    let mut violation: Option<PractiseViolation> = None;
    'all: for &m in &cfg.emulated_cpus {
        for &kind in &cfg.structures {
            if should_stop() {
                notes.push("interrupted: the runs listed are the ones that finished".into());
                break 'all;
            }
            let policy = cfg.policy.resolve(kind);
            progress(&format!(
                "practise {}: {} (push {}, pull {}), {}, M = {m}, {:.1} s",
                if cfg.mode == Mode::Test {
                    "test"
                } else {
                    "perf"
                },
                kind.name(),
                kind.push_name(),
                kind.pull_name(),
                policy.name(),
                cfg.duration_ns as f64 / 1e9
            ));
            let r = emulate::run_one(cfg, kind, m, policy, clock, should_stop);
            let (run, v) = match r {
                Ok(x) => x,
                Err(e) => {
                    if locked {
                        unlock_memory();
                    }
                    return Err(e);
                }
            };
            runs.push(run);
            if v.is_some() {
                violation = v;
                break 'all;
            }
        }
    }
    if locked {
        unlock_memory();
    }
    Ok(PractiseResult {
        mode: match cfg.mode {
            Mode::Test => PractiseMode::Test,
            Mode::Perf => PractiseMode::Perf,
        },
        policy: cfg.policy.name().into(),
        queue: cfg.queue.name().into(),
        cycle_ns: cfg.cycle_ns,
        p_arrival: cfg.p_arrival,
        p_finish: cfg.p_finish,
        duration_per_run_ns: cfg.duration_ns,
        check_every_ns: (cfg.mode == Mode::Test).then_some(cfg.check_every_ns),
        seed: cfg.seed,
        clock: clock_info,
        pinned: cfg.mode == Mode::Perf,
        memory_locked: locked,
        online_cpus,
        fault: cfg.fault.map(|f| f.name().into()),
        trace_file: None,
        runs,
        violation,
        notes,
    })
}

/// The record's warnings, each raised from the condition it names: memory not locked in
/// performance mode, more emulated CPUs than real ones, cycles started late.
pub fn warnings(res: &PractiseResult) -> Vec<Warning> {
    let mut w = Vec::new();
    if res.mode == PractiseMode::Perf && !res.memory_locked {
        w.push(Warning::new(
            WarningCode::NotRealtime,
            "memory not locked (mlockall failed): page faults may enter the durations",
        ));
    }
    if res.mode == PractiseMode::Test && res.runs.iter().any(|r| r.emulated_cpus > res.online_cpus)
    {
        w.push(Warning::new(
            WarningCode::Other,
            format!(
                "more emulated CPUs than the {} online ones: durations include preempted lock holders; not performance figures (§2.3.3)",
                res.online_cpus
            ),
        ));
    }
    let (missed, cycles) = res.runs.iter().fold((0, 0), |(m, c), r| {
        (
            m + r.counts.missed_cycles,
            c + r.counts.cycles + r.counts.missed_cycles,
        )
    });
    if missed > 0 {
        w.push(Warning::new(
            WarningCode::Overruns,
            format!("{missed} of {cycles} emulated-CPU cycles started late and were skipped (a thread woke after the next cycle's start)"),
        ));
    }
    w
}

/// §2.3.3: "the memory is locked to avoid spurious page faults".
fn lock_memory() -> bool {
    rtscope_sys::mem::lock_all().is_ok()
}

fn unlock_memory() {
    rtscope_sys::mem::unlock_all();
}

/// A replay's configuration.
#[derive(Clone, Debug)]
pub struct ReplayConfig {
    pub structures: Vec<StructureKind>,
    pub queue: QueueKind,
    pub fault: Option<Fault>,
    /// Shown in the result.
    pub trace_file: Option<String>,
}

/// Replay a trace's scheduling events on each configuration (see [`replay`](mod@replay)).
pub fn replay(events: &[Event], cfg: &ReplayConfig) -> Result<PractiseResult, PractiseError> {
    if cfg.structures.is_empty() {
        return Err(ConfigError::NoStructures.into());
    }
    let (evs, m) = replay::sched_events(events);
    if evs.is_empty() {
        return Err(PractiseError::NoSchedEvents);
    }
    let clock = OpClock::detect();
    let mut runs = Vec::new();
    let mut violation = None;
    for &kind in &cfg.structures {
        let (run, v) = replay::replay_one(&evs, m, kind, cfg.queue, cfg.fault, clock.0)?;
        runs.push(run);
        if v.is_some() {
            violation = v;
            break;
        }
    }
    Ok(PractiseResult {
        mode: PractiseMode::Replay,
        policy: "fp".into(),
        queue: cfg.queue.name().into(),
        cycle_ns: 0,
        p_arrival: 0.0,
        p_finish: 0.0,
        duration_per_run_ns: 0,
        check_every_ns: None,
        seed: 0,
        clock: clock.1,
        pinned: false,
        memory_locked: false,
        online_cpus: 0,
        fault: cfg.fault.map(|f| f.name().into()),
        trace_file: cfg.trace_file.clone(),
        runs,
        violation,
        notes: vec![
            "replay: keys are the trace's prio + 1 (fixed-priority order); every structure is checked after every event; queues follow the trace, no push or pull runs".into(),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_what_is_wrong() {
        let ok = Config::thesis_defaults(Mode::Test, vec![4], vec![]);
        assert_eq!(ok.validate(), Ok(()));
        let with = |f: &dyn Fn(&mut Config)| {
            let mut c = ok.clone();
            f(&mut c);
            c.validate().unwrap_err()
        };
        assert!(matches!(
            with(&|c| c.emulated_cpus = vec![0]),
            ConfigError::EmulatedCpus {
                got: 0,
                max: 48,
                ..
            }
        ));
        assert!(matches!(
            with(&|c| c.emulated_cpus = vec![49]),
            ConfigError::EmulatedCpus { got: 49, .. }
        ));
        assert!(matches!(
            with(&|c| {
                c.mode = Mode::Perf;
                c.pin_cpus = vec![0, 1];
                c.emulated_cpus = vec![3];
            }),
            ConfigError::EmulatedCpus { got: 3, max: 2, .. }
        ));
        assert!(matches!(
            with(&|c| c.p_arrival = 1.5),
            ConfigError::Probability {
                which: Prob::Arrival,
                ..
            }
        ));
        assert!(matches!(
            with(&|c| {
                c.p_arrival = 0.6;
                c.p_finish = 0.5
            }),
            ConfigError::ProbabilitySum { .. }
        ));
        assert!(matches!(
            with(&|c| c.cycle_ns = 0),
            ConfigError::Cycle { ns: 0 }
        ));
        assert!(matches!(
            with(&|c| c.policy = PolicyChoice::Edf),
            ConfigError::CpupriUnderEdf
        ));
        let mut c = ok.clone();
        c.p_arrival = 0.9;
        c.p_finish = 0.1;
        assert_eq!(c.validate(), Ok(()), "a sum of exactly 1 is allowed");
    }
}
