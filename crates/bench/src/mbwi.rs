//! M-BWI on the real kernel (Lelli 2014 thesis §4.4.2–4.4.3): SCHED_DEADLINE threads that
//! share a `PTHREAD_PRIO_INHERIT` mutex (a PI futex: the kernel's rt_mutex boosts the holder) or
//! a plain one, each job timed with CLOCK_MONOTONIC; and the cost of lock/unlock with and without
//! PI under SCHED_DEADLINE.
//!
//! What mainline does with a boosted SCHED_DEADLINE holder (kernel/sched/core.c
//! `rt_mutex_setprio`, kernel/sched/deadline.c; read in torvalds/linux at 5.11–5.13 and the same
//! logic in v6.18): the holder is boosted only when its top waiter's deadline is earlier
//! (`dl_entity_preempt`); then `pi_se` points to the donor and the holder is re-enqueued with
//! ENQUEUE_REPLENISH. Its own absolute deadline is *not* replaced by the donor's
//! (`replenish_dl_entity` only sets `deadline = now + pi_of()->dl_deadline` for a non-DEADLINE
//! holder, `dl_deadline == 0`), so EDF still orders it by its own deadline. What changes is the
//! budget: `enqueue_task_dl` clears a throttle ("the boost overrides the throttle"),
//! `update_curr_dl` never throttles a boosted task (`is_dl_boosted(dl_se) || !start_dl_timer`
//! → enqueue with ENQUEUE_REPLENISH at once) and `replenish_dl_entity` refills it with
//! `pi_of(dl_se)->dl_runtime`, pushing its deadline by `pi_of(dl_se)->dl_period`;
//! `dl_task_timer` ignores boosted tasks. The simulator's `mainline` protocol models exactly this.
//!
//! One-CPU runs need a root domain of that one CPU: a SCHED_DEADLINE task's affinity must span
//! its root domain (sched-deadline.rst §5), so the threads are put in an exclusive cpuset
//! ([`crate::taskset::cpuset`]) instead of being pinned.

rtscope_model::request_fields! {
    /// The fields of an M-BWI request as its errors name them.
    pub enum Field in "mbwi" {
        Cpus = "cpus" => CPUS,
        Duration = "duration" => DURATION,
        Mutex = "mutex" => MUTEX,
        Scenario = "scenario" => SCENARIO,
        Tick = "tick" => TICK,
        Iterations = "iterations" => ITERATIONS,
        ContendedIterations = "contended_iterations" => CONTENDED_ITERATIONS,
        Example = "example" => EXAMPLE,
    }
}

use crate::common::reaper::Reaper;
use crate::common::sync::Sem;
use crate::common::tracefs::{parse_line, Instance};
use crate::common::{mono_ns, sleep_until, BenchError, Result};
use crate::taskset::cpuset::Cpusets;
use crate::taskset::work::thread_cpu_ns;
use rtscope_analysis::mbwi as sim;
use rtscope_model::bench::BenchHistogram;
use rtscope_model::event::Event;
use rtscope_model::mbwi::*;
use rtscope_model::{DeadlineParams, Histogram, Policy, Stats};
use rtscope_probe::{admission, sys};
use rtscope_sys::ipc::{MutexProtocol, PthreadMutex};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc;

/// Jobs per task kept in full in the result (the rest only in histograms).
pub const FIRST_JOBS: usize = 64;
/// Longest run one scenario may take.
pub const MAX_DURATION_NS: u64 = 600_000_000_000;
pub const MIN_DURATION_NS: u64 = 200_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutexKind {
    /// PTHREAD_PRIO_INHERIT: FUTEX_LOCK_PI / FUTEX_UNLOCK_PI, the kernel's rt_mutex.
    Pi,
    /// PTHREAD_PRIO_NONE: FUTEX_WAIT / FUTEX_WAKE, no inheritance.
    Plain,
}

impl MutexKind {
    pub fn name(self) -> &'static str {
        match self {
            MutexKind::Pi => "pi",
            MutexKind::Plain => "plain",
        }
    }
}

/// A pthread mutex with the protocol of `kind`.
struct PMutex(PthreadMutex);

impl PMutex {
    fn new(kind: MutexKind) -> Result<Box<PMutex>> {
        let proto = match kind {
            MutexKind::Pi => MutexProtocol::Inherit,
            MutexKind::Plain => MutexProtocol::None,
        };
        PthreadMutex::new(proto)
            .map(|m| Box::new(PMutex(m)))
            .map_err(|e| BenchError::io(format!("pthread_mutex_init({})", kind.name()), e))
    }
    /// True if the lock was free (taken without waiting).
    fn try_lock(&self) -> bool {
        self.0.try_lock()
    }
    fn lock(&self) {
        self.0.lock()
    }
    fn unlock(&self) {
        self.0.unlock()
    }
    /// glibc's futex word: for a PI mutex the owner's TID | FUTEX_WAITERS (bit 31) once a waiter
    /// is queued in the kernel; for a plain one 2 once a waiter sleeps.
    fn has_kernel_waiter(&self, kind: MutexKind) -> bool {
        let w = self.0.futex_word();
        match kind {
            MutexKind::Pi => (w as u32) & 0x8000_0000 != 0,
            MutexKind::Plain => w == 2,
        }
    }
}

#[derive(Clone, Debug)]
pub struct KernelConfig {
    pub scenario: String,
    /// The task set (µs). Affinities must be empty: every thread runs on all of `cpus`.
    pub set: MbwiTaskSet,
    pub mutex: MutexKind,
    /// The CPUs of the threads' root domain.
    pub cpus: Vec<u32>,
    pub duration_ns: u64,
    /// Count sched_pi_setprio events per thread (a tracefs instance per CPU).
    pub count_pi_setprio: bool,
}

impl KernelConfig {
    pub fn validate(&self) -> Result<()> {
        sim::validate(&self.set).map_err(|e| BenchError::Invalid(e.to_string()))?;
        if self.set.tasks.iter().any(|t| !t.affinity.is_empty()) {
            return Err(BenchError::Invalid(
                format!("affinity: SCHED_DEADLINE threads run on their whole root domain; give the CPUs with {CPUS} instead"),
            ));
        }
        if !(MIN_DURATION_NS..=MAX_DURATION_NS).contains(&self.duration_ns) {
            return Err(BenchError::Invalid(format!(
                "{DURATION}: must be 200ms..=600s, got {} ms",
                self.duration_ns / 1_000_000
            )));
        }
        online(&self.cpus)?;
        // sched_setattr(2) refuses a period outside the kernel's sysctl limits (EINVAL, from
        // __checkparam_dl): refuse it here, before any thread starts.
        let (min_ns, max_ns) = crate::taskset::kernel::dl_period_limits_ns();
        let (min_us, max_us) = (min_ns / 1000, max_ns / 1000);
        for (i, t) in self.set.tasks.iter().enumerate() {
            if !(min_us..=max_us).contains(&t.period_us) {
                return Err(BenchError::Invalid(format!(
                    "tasks[{i}] ({}).period_us: {} is outside what this kernel's SCHED_DEADLINE admits ({min_us}..={max_us} us, kernel.sched_deadline_period_min_us/max_us)",
                    t.name, t.period_us
                )));
            }
            // __checkparam_dl: runtime ≥ 1 << DL_SCALE = 1024 ns.
            if t.runtime_us.saturating_mul(1000) < crate::taskset::plan::DL_MIN_RUNTIME_NS {
                return Err(BenchError::Invalid(format!(
                    "tasks[{i}] ({}).runtime_us: {} is under what SCHED_DEADLINE admits (at least 2 us: the kernel's 1024 ns)",
                    t.name, t.runtime_us
                )));
            }
        }
        // The kernel admits Σ Q/P ≤ (rt_runtime/rt_period − fair server 0.05) × m per root
        // domain (kernel/sched/deadline.c __dl_overflow); refuse a set it would refuse.
        let u: f64 = self
            .set
            .tasks
            .iter()
            .map(|t| t.runtime_us as f64 / t.period_us as f64)
            .sum();
        let cap = (admission_limit() - 0.05) * self.cpus.len() as f64;
        if u > cap {
            return Err(BenchError::Invalid(format!(
                "the task set asks Σ Q/P = {u:.3}, above what SCHED_DEADLINE admits on {} CPU(s) ({cap:.3})",
                self.cpus.len()
            )));
        }
        Ok(())
    }
}

/// `cpus` (at least one) are online.
fn online(cpus: &[u32]) -> Result<()> {
    let online = sys::online_cpus()
        .map_err(|e| BenchError::io("reading /sys/devices/system/cpu/online", e))?;
    if cpus.is_empty() || cpus.iter().any(|c| !online.contains(c)) {
        return Err(BenchError::Invalid(format!(
            "{CPUS}: {cpus:?} must be online CPUs ({online:?})"
        )));
    }
    Ok(())
}

fn admission_limit() -> f64 {
    rtscope_probe::admission::admission_limit().unwrap_or(0.95)
}

#[derive(Clone, Copy, Debug, Default)]
struct Job {
    k: u32,
    release: u64,
    start: u64,
    finish: u64,
    lock_req: Option<u64>,
    lock_acq: Option<u64>,
    unlock: Option<u64>,
    blocked: u64,
    contended: bool,
    cs_off: u64,
    held: bool,
}

struct ThreadOut {
    tid: i32,
    jobs: Vec<Job>,
    skipped: u64,
    error: Option<String>,
}

enum Step {
    Compute(u64),
    Lock(usize),
    Unlock(usize),
}

fn compile(t: &MbwiTask, k: u32, names: &[String]) -> Vec<Step> {
    let id = |m: &str| names.iter().position(|x| x == m).unwrap_or(0);
    t.script_of(k)
        .iter()
        .map(|s| match s {
            Segment::ComputeUs(us) => Step::Compute(us * 1000),
            Segment::Lock(m) => Step::Lock(id(m)),
            Segment::Unlock(m) => Step::Unlock(id(m)),
        })
        .collect()
}

/// Busy for `ns` of this thread's CPU time (preemption and throttling do not count).
fn compute(ns: u64) {
    let end = thread_cpu_ns() + ns;
    while thread_cpu_ns() < end {
        std::hint::spin_loop();
    }
}

/// The gate the task threads wait at until every one is admitted.
const GATE_CLOSED: u32 = 0;
const GATE_GO: u32 = 1;
const GATE_ABORT: u32 = 2;

fn wait_gate(gate: &AtomicU32) -> u32 {
    loop {
        let g = gate.load(Ordering::SeqCst);
        if g != GATE_CLOSED {
            return g;
        }
        sleep_until(mono_ns() + 1_000_000);
    }
}

/// Run one scenario with one kind of mutex. `on_started` is called once every thread is
/// admitted, before the epoch is fixed (the caller starts its schedule capture there).
/// SCHED_DEADLINE threads may only be confined to a root domain: on fewer than all online CPUs,
/// an exclusive cpuset makes `cpus` one (removed when the returned value drops). Its notes (e.g.
/// the root's sched_load_balance switched off for the run) go into `notes`.
fn root_domain_of(cpus: &[u32], notes: &mut Vec<String>) -> Result<Option<Cpusets>> {
    let online = sys::online_cpus()
        .map_err(|e| BenchError::io("reading /sys/devices/system/cpu/online", e))?;
    if cpus == online {
        return Ok(None);
    }
    let c =
        Cpusets::create(&[cpus.to_vec()]).map_err(|e| BenchError::Unavailable(e.to_string()))?;
    notes.extend(c.notes.iter().cloned());
    Ok(Some(c))
}

pub fn run(
    cfg: &KernelConfig,
    reaper: &Reaper,
    on_started: &mut dyn FnMut(),
) -> Result<MbwiKernelRun> {
    cfg.validate()?;
    crate::common::rt::lock_memory()?;
    let mut notes = Vec::new();
    let cpusets = root_domain_of(&cfg.cpus, &mut notes)?;
    let mut names: Vec<String> = Vec::new();
    for t in &cfg.set.tasks {
        for s in t
            .script
            .iter()
            .chain(t.job_scripts.iter().flat_map(|j| j.script.iter()))
        {
            if let Segment::Lock(m) = s {
                if !names.contains(m) {
                    names.push(m.clone());
                }
            }
        }
    }
    let mutexes = names
        .iter()
        .map(|_| PMutex::new(cfg.mutex))
        .collect::<Result<Vec<_>>>()?;
    let insts = if cfg.count_pi_setprio {
        cfg.cpus
            .iter()
            .map(|&c| {
                Instance::create(
                    reaper,
                    &format!("rtscope-bench-mbwi-{}-{c}", std::process::id()),
                    c,
                    1024,
                    &[("sched/sched_pi_setprio", None)],
                )
            })
            .collect::<Result<Vec<_>>>()?
    } else {
        Vec::new()
    };

    let n = cfg.set.tasks.len();
    let gate = AtomicU32::new(GATE_CLOSED);
    let epoch = AtomicU64::new(0);
    let end = AtomicU64::new(0);
    let (tx, rx) = mpsc::channel::<Option<String>>();
    let outs: Vec<ThreadOut> = std::thread::scope(|sc| {
        let mut hs = Vec::new();
        for t in &cfg.set.tasks {
            let (gate, epoch, end, cpusets, mutexes, names) =
                (&gate, &epoch, &end, &cpusets, &mutexes, &names);
            let tx = tx.clone();
            let h = std::thread::Builder::new()
                .name(format!("rtscope-{}", t.name))
                .stack_size(256 * 1024)
                .spawn_scoped(sc, move || {
                    let tid = sys::gettid();
                    let _ = rtscope_sys::sched::set_timer_slack(1);
                    let cap = (cfg.duration_ns / (t.period_us * 1000) + 2) as usize;
                    let mut out = ThreadOut {
                        tid,
                        jobs: Vec::with_capacity(cap),
                        skipped: 0,
                        error: None,
                    };
                    let setup: std::result::Result<(), String> = (|| {
                        if let Some(c) = cpusets {
                            c.attach(0, tid).map_err(|e| e.to_string())?;
                        }
                        let p = DeadlineParams {
                            runtime_ns: t.runtime_us * 1000,
                            deadline_ns: t.deadline() * 1000,
                            period_ns: t.period_us * 1000,
                            reset_on_fork: true,
                            dl_overrun: false,
                        };
                        admission::backend(Policy::Deadline, 0, 0, Some(&p))
                            .admit()
                            .map_err(|e| e.to_string())
                    })();
                    let _ = tx.send(setup.as_ref().err().cloned());
                    out.error = setup.err();
                    if wait_gate(gate) != GATE_GO || out.error.is_some() {
                        return out;
                    }
                    let (t0, t_end) = (epoch.load(Ordering::SeqCst), end.load(Ordering::SeqCst));
                    let p_ns = t.period_us * 1000;
                    let mut k: u32 = 0;
                    loop {
                        let release = t0 + t.offset_us * 1000 + u64::from(k) * p_ns;
                        if release >= t_end
                            || crate::common::stop_requested()
                            || out.jobs.len() == cap
                            || t.jobs.is_some_and(|m| k >= m)
                        {
                            break;
                        }
                        sleep_until(release);
                        let mut j = Job {
                            k,
                            release,
                            start: mono_ns(),
                            ..Job::default()
                        };
                        let mut cs_wall0 = 0;
                        let mut cs_cpu0 = 0;
                        for s in compile(t, k, names) {
                            match s {
                                Step::Compute(ns) => compute(ns),
                                Step::Lock(m) => {
                                    let req = mono_ns();
                                    let free = mutexes[m].try_lock();
                                    if !free {
                                        mutexes[m].lock();
                                    }
                                    let acq = mono_ns();
                                    j.lock_req.get_or_insert(req);
                                    j.lock_acq.get_or_insert(acq);
                                    j.blocked += acq - req;
                                    j.contended |= !free;
                                    j.held = true;
                                    cs_wall0 = acq;
                                    cs_cpu0 = thread_cpu_ns();
                                }
                                Step::Unlock(m) => {
                                    let now = mono_ns();
                                    let cpu = thread_cpu_ns() - cs_cpu0;
                                    j.cs_off += (now - cs_wall0).saturating_sub(cpu);
                                    j.unlock.get_or_insert(now);
                                    mutexes[m].unlock();
                                }
                            }
                        }
                        j.finish = mono_ns();
                        out.jobs.push(j);
                        // The next release; releases already past are skipped (the simulator's
                        // policy), so every job starts at a release instant.
                        k += 1;
                        loop {
                            let next = t0 + t.offset_us * 1000 + u64::from(k) * p_ns;
                            if next >= j.finish || next >= t_end || t.jobs.is_some_and(|m| k >= m) {
                                break;
                            }
                            out.skipped += 1;
                            k += 1;
                        }
                    }
                    out
                })
                .map_err(|e| BenchError::io("spawning a task thread", e));
            hs.push(h);
        }
        drop(tx);
        let mut errors = Vec::new();
        for _ in 0..n {
            if let Ok(Some(e)) = rx.recv() {
                errors.push(e);
            }
        }
        if !errors.is_empty() || hs.iter().any(|h| h.is_err()) {
            gate.store(GATE_ABORT, Ordering::SeqCst);
        } else {
            on_started();
            for i in &insts {
                let _ = i.on();
            }
            let t0 = mono_ns() + 20_000_000;
            epoch.store(t0, Ordering::SeqCst);
            end.store(t0 + cfg.duration_ns, Ordering::SeqCst);
            gate.store(GATE_GO, Ordering::SeqCst);
        }
        hs.into_iter()
            .filter_map(|h| h.ok())
            .map(|h| {
                h.join().unwrap_or(ThreadOut {
                    tid: 0,
                    jobs: Vec::new(),
                    skipped: 0,
                    error: Some("the thread panicked".into()),
                })
            })
            .collect()
    });
    for i in &insts {
        let _ = i.off();
    }
    let mut setprio: BTreeMap<u32, u64> = BTreeMap::new();
    let mut lost = 0;
    for i in insts {
        if let Ok((text, l)) = i.read() {
            lost += l;
            for line in text.lines().filter_map(parse_line) {
                if line.event == "sched_pi_setprio" {
                    if let Some(pid) = line.field_u64("pid") {
                        *setprio.entry(pid as u32).or_default() += 1;
                    }
                }
            }
        }
        i.remove(reaper);
    }
    drop(mutexes);
    drop(cpusets);
    if let Some(e) = outs.iter().find_map(|o| o.error.clone()) {
        return Err(BenchError::Unavailable(format!(
            "admitting the SCHED_DEADLINE threads: {e}"
        )));
    }
    if lost > 0 {
        notes.push(format!("{lost} sched_pi_setprio events were lost"));
    }
    let t0 = epoch.load(Ordering::SeqCst);
    let tasks = cfg
        .set
        .tasks
        .iter()
        .zip(&outs)
        .map(|(t, o)| {
            let mut r = summarize(t, o, t0);
            if cfg.count_pi_setprio {
                r.pi_setprio_events = Some(setprio.get(&(o.tid as u32)).copied().unwrap_or(0));
            }
            r
        })
        .collect();
    Ok(MbwiKernelRun {
        scenario: cfg.scenario.clone(),
        mutex: cfg.mutex.name().into(),
        cpus: cfg.cpus.clone(),
        epoch_ns: t0,
        duration_ns: cfg.duration_ns,
        taskset: cfg.set.clone(),
        tasks,
        schedule: Vec::new(),
        schedule_window_ns: 0,
        schedule_source: "none".into(),
        lost_events: 0,
        notes,
    })
}

fn hist_stats(h: Histogram) -> (BenchHistogram, Stats) {
    let s = Stats::from_histogram(&h);
    (h.into(), s)
}

fn summarize(t: &MbwiTask, o: &ThreadOut, t0: u64) -> KernelTaskResult {
    let d = t.deadline() * 1000;
    let (mut blocked, mut response, mut off) =
        (Histogram::new(), Histogram::new(), Histogram::new());
    let mut misses = 0;
    let mut contended = 0;
    let mut first = Vec::new();
    for j in &o.jobs {
        let missed = j.finish > j.release + d;
        misses += u64::from(missed);
        response.record(j.finish - j.release);
        if j.contended {
            contended += 1;
            blocked.record(j.blocked);
        }
        if j.held {
            off.record(j.cs_off);
        }
        if first.len() < FIRST_JOBS {
            let rel = |x: u64| x.saturating_sub(t0);
            first.push(KernelJob {
                job: j.k,
                release_ns: rel(j.release),
                start_ns: rel(j.start),
                finish_ns: rel(j.finish),
                lock_request_ns: j.lock_req.map(rel),
                lock_acquire_ns: j.lock_acq.map(rel),
                unlock_ns: j.unlock.map(rel),
                blocked_ns: j.blocked,
                cs_off_cpu_ns: j.cs_off,
                missed,
            });
        }
    }
    let (blocked, blocked_stats) = hist_stats(blocked);
    let (response, response_stats) = hist_stats(response);
    let (cs_off_cpu, cs_off_cpu_stats) = hist_stats(off);
    KernelTaskResult {
        name: t.name.clone(),
        tid: o.tid,
        jobs: o.jobs.len() as u64,
        misses,
        skipped: o.skipped,
        contended_jobs: contended,
        blocked,
        blocked_stats,
        response,
        response_stats,
        cs_off_cpu,
        cs_off_cpu_stats,
        first_jobs: first,
        pi_setprio_events: None,
    }
}

// ---------------------------------------------------------------------------------------------
// The whole experiment: scenarios × mutex kinds, the schedule of each run, the simulator beside

/// A sched_switch capture around each kernel run, provided by the caller (the cli wires
/// rtscope-trace; this crate does not depend on it).
pub trait ScheduleCapture {
    /// Start capturing on `cpus`.
    fn start(&mut self, cpus: &[u32]) -> std::result::Result<(), String>;
    /// Stop: the events in time order, the source's label (`sched_switch (bpf)`), lost events.
    fn stop(&mut self) -> std::result::Result<(Vec<Event>, String, u64), String>;
}

/// No capture: runs carry no schedule.
pub struct NoCapture;

impl ScheduleCapture for NoCapture {
    fn start(&mut self, _: &[u32]) -> std::result::Result<(), String> {
        Ok(())
    }
    fn stop(&mut self) -> std::result::Result<(Vec<Event>, String, u64), String> {
        Ok((Vec::new(), "none".into(), 0))
    }
}

#[derive(Clone, Debug)]
pub struct ExperimentConfig {
    /// `one-cpu`, `one-cpu-overrun`, `two-cpus`.
    pub scenarios: Vec<String>,
    pub mutexes: Vec<MutexKind>,
    /// The CPU of the one-CPU scenarios.
    pub one_cpu: u32,
    /// The CPUs of the two-CPU scenario (the whole default root domain).
    pub two_cpus: Vec<u32>,
    pub duration_ns: u64,
    /// The kernel's budget enforcement granularity for the simulations (1/HZ without HRTICK_DL).
    pub tick_us: u64,
    /// How much of each run the schedule (and the simulated schedule) covers.
    pub window_ns: u64,
}

pub const SCENARIOS: [&str; 3] = ["one-cpu", "one-cpu-overrun", "two-cpus"];

impl ExperimentConfig {
    /// From the verb's flags: `scenario` one of [`SCENARIOS`] or `all`, `mutex` `pi`, `plain` or
    /// `both`; the one-CPU scenarios run on the last of `cpus`, the two-CPU one on the last two;
    /// each run lasts `duration` (200 ms ..= 10 min); the simulations enforce budgets at `tick`
    /// (whole µs, 0 ..= 1 s; 0: exactly). A 216 ms window (three periods of τ3) of each run is
    /// kept as a schedule.
    pub fn new(
        scenario: &str,
        mutex: &str,
        cpus: &[u32],
        duration: std::time::Duration,
        tick: std::time::Duration,
    ) -> Result<ExperimentConfig> {
        let human = |d: std::time::Duration| rtscope_model::duration::human(d.as_secs_f64());
        let duration_ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        if !(MIN_DURATION_NS..=MAX_DURATION_NS).contains(&duration_ns) {
            return Err(BenchError::Invalid(format!(
                "{DURATION}: {} is out of range (200ms ..= 10m)",
                human(duration)
            )));
        }
        if tick > std::time::Duration::from_secs(1) || !tick.subsec_nanos().is_multiple_of(1000) {
            return Err(BenchError::Invalid(format!(
                "{TICK}: must be whole µs in 0 ..= 1s, got {}",
                human(tick)
            )));
        }
        let tick_us = tick.as_micros() as u64;
        let cfg = ExperimentConfig {
            scenarios: match scenario {
                "all" => SCENARIOS.iter().map(|s| s.to_string()).collect(),
                s => vec![s.to_string()],
            },
            mutexes: match mutex {
                "pi" => vec![MutexKind::Pi],
                "plain" => vec![MutexKind::Plain],
                "both" => vec![MutexKind::Pi, MutexKind::Plain],
                m => {
                    return Err(BenchError::Invalid(format!(
                        "{MUTEX}: unknown '{m}' (pi, plain or both)"
                    )))
                }
            },
            one_cpu: cpus.last().copied().unwrap_or(0),
            two_cpus: cpus[cpus.len().saturating_sub(2)..].to_vec(),
            duration_ns,
            tick_us,
            window_ns: 216_000_000,
        };
        cfg.runs()?;
        Ok(cfg)
    }
}

fn scenario_set(name: &str, tick_us: u64, horizon_us: u64) -> Option<MbwiTaskSet> {
    match name {
        "one-cpu" => Some(sim::one_cpu(tick_us, horizon_us)),
        "one-cpu-overrun" => Some(sim::one_cpu_overrun(tick_us, horizon_us)),
        "two-cpus" => Some(sim::two_cpus(tick_us, horizon_us)),
        _ => None,
    }
}

impl ExperimentConfig {
    /// Every run's configuration, validated (nothing is started).
    pub fn runs(&self) -> Result<Vec<KernelConfig>> {
        let mut v = Vec::new();
        for s in &self.scenarios {
            let set = scenario_set(s, self.tick_us, self.duration_ns / 1000).ok_or_else(|| {
                BenchError::Invalid(format!(
                    "{SCENARIO}: unknown '{s}' (one of {})",
                    SCENARIOS.join(", ")
                ))
            })?;
            let cpus = if set.cpus == 1 {
                vec![self.one_cpu]
            } else {
                self.two_cpus.clone()
            };
            if cpus.len() != set.cpus as usize {
                return Err(BenchError::Invalid(format!(
                    "{CPUS}: scenario {s} needs {} CPUs, got {cpus:?}",
                    set.cpus
                )));
            }
            for &m in &self.mutexes {
                let c = KernelConfig {
                    scenario: s.clone(),
                    set: set.clone(),
                    mutex: m,
                    cpus: cpus.clone(),
                    duration_ns: self.duration_ns,
                    count_pi_setprio: true,
                };
                c.validate()?;
                v.push(c);
            }
        }
        Ok(v)
    }
}

/// Run every scenario with every mutex kind, capture each run's schedule, simulate the same
/// sets under mainline and M-BWI, and put them side by side.
pub fn experiment(
    cfg: &ExperimentConfig,
    reaper: &Reaper,
    capture: &mut dyn ScheduleCapture,
    progress: &dyn Fn(&str),
) -> Result<MbwiResult> {
    let runs_cfg = cfg.runs()?;
    let mut res = MbwiResult {
        kernel_release: kernel_release(),
        load_avg: load_avg(),
        ..MbwiResult::default()
    };
    for rc in &runs_cfg {
        if crate::common::stop_requested() {
            break;
        }
        progress(&format!(
            "  {} with a {} mutex on CPU(s) {:?} for {} ms …",
            rc.scenario,
            rc.mutex.name(),
            rc.cpus,
            rc.duration_ns / 1_000_000
        ));
        let mut cap_err = None;
        let mut started = false;
        let mut on_started = || match capture.start(&rc.cpus) {
            Ok(()) => started = true,
            Err(e) => cap_err = Some(e),
        };
        let mut run = run(rc, reaper, &mut on_started)?;
        if started {
            match capture.stop() {
                Ok((events, source, lost)) => {
                    let tids = run
                        .tasks
                        .iter()
                        .map(|t| (t.tid as u32, t.name.clone()))
                        .collect();
                    let window = cfg.window_ns.min(run.duration_ns);
                    run.schedule = sim::schedule_from_switches(
                        &events,
                        &tids,
                        run.epoch_ns,
                        run.epoch_ns + window,
                        run.epoch_ns,
                    );
                    run.schedule_window_ns = window;
                    run.schedule_source = source;
                    run.lost_events = lost;
                }
                Err(e) => run.notes.push(format!("schedule capture failed: {e}")),
            }
        }
        if let Some(e) = cap_err {
            run.notes.push(format!("schedule not captured: {e}"));
        }
        res.runs.push(run);
    }
    for s in &cfg.scenarios {
        let Some(full) = scenario_set(s, cfg.tick_us, cfg.duration_ns / 1000) else {
            continue;
        };
        let simulate = |set: &MbwiTaskSet, p| {
            sim::simulate(set, p).map_err(|e| BenchError::Invalid(e.to_string()))
        };
        let ml = simulate(&full, MbwiProtocol::Mainline)?;
        let mb = simulate(&full, MbwiProtocol::Mbwi)?;
        let find = |m: MutexKind| {
            res.runs
                .iter()
                .find(|r| &r.scenario == s && r.mutex == m.name())
        };
        res.comparison.extend(sim::compare(
            s,
            find(MutexKind::Pi),
            find(MutexKind::Plain),
            &ml,
            &mb,
        ));
        // The stored schedules cover the window only (what the Gantt charts draw).
        let mut win = full.clone();
        win.horizon_us = (cfg.window_ns / 1000).min(full.horizon_us).max(1);
        let protos = [
            MbwiProtocol::None,
            MbwiProtocol::Mainline,
            MbwiProtocol::Mbwi,
        ];
        let sims = sim::simulate_all(s, &win, &protos);
        res.simulations
            .extend(sims.map_err(|e| BenchError::Invalid(e.to_string()))?);
    }
    res.notes.push(if cfg.tick_us == 0 {
        "simulations enforce budgets exactly: the threads read their CPU clock while computing, and each read runs update_curr (task_sched_runtime), so the kernel notices an exhausted budget at once instead of at the next tick".to_string()
    } else {
        format!("simulations notice an exhausted budget at the next {} µs tick", cfg.tick_us)
    });
    Ok(res)
}

pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// /proc/loadavg's three averages.
pub fn load_avg() -> Option<[f64; 3]> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    let v: Vec<f64> = s
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

// ---------------------------------------------------------------------------------------------
// Overheads (§4.4.3)

#[derive(Clone, Debug)]
pub struct OverheadConfig {
    /// The threads' root domain (all online CPUs, or a cpuset of these).
    pub cpus: Vec<u32>,
    /// Lock/unlock pairs timed without contention, per mutex kind.
    pub iterations: u32,
    /// Hand-overs timed with a waiter blocked in the kernel, per mutex kind.
    pub contended_iterations: u32,
}

impl OverheadConfig {
    pub fn validate(&self) -> Result<()> {
        if !(1000..=10_000_000).contains(&self.iterations) {
            return Err(BenchError::Invalid(format!(
                "{ITERATIONS}: must be 1000..=10000000, got {}",
                self.iterations
            )));
        }
        if !(10..=1_000_000).contains(&self.contended_iterations) {
            return Err(BenchError::Invalid(format!(
                "{CONTENDED_ITERATIONS}: must be 10..=1000000, got {}",
                self.contended_iterations
            )));
        }
        online(&self.cpus)?;
        Ok(())
    }
}

fn become_dl(runtime_ns: u64, period_ns: u64) -> std::result::Result<(), String> {
    let p = DeadlineParams {
        runtime_ns,
        deadline_ns: period_ns,
        period_ns,
        reset_on_fork: true,
        dl_overrun: false,
    };
    admission::backend(Policy::Deadline, 0, 0, Some(&p))
        .admit()
        .map_err(|e| e.to_string())
}

/// Lock/unlock cost with and without PI, under SCHED_DEADLINE, as distributions (ns,
/// CLOCK_MONOTONIC read before and after each call; the `clock_read` row is the cost of one
/// such pair of reads with nothing between).
pub fn overhead(cfg: &OverheadConfig) -> Result<MbwiOverhead> {
    cfg.validate()?;
    crate::common::rt::lock_memory()?;
    let mut notes = vec![
        "each figure is (clock read after) − (clock read before) around one call, CLOCK_MONOTONIC via the vDSO; subtract the clock_read row for the call alone".to_string(),
        "threads are SCHED_DEADLINE (runtime 2 ms, period 10 ms; the waiter 20 ms) and rest between bursts so that no budget runs out inside a timed call".to_string(),
    ];
    let cpusets = root_domain_of(&cfg.cpus, &mut notes)?;
    let attach = |tid: i32| -> std::result::Result<(), String> {
        match &cpusets {
            Some(c) => c.attach(0, tid).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    };
    let mut rows = Vec::new();
    // Uncontended: one thread.
    let unc = std::thread::scope(|sc| {
        sc.spawn(
            || -> std::result::Result<Vec<(String, String, Histogram)>, String> {
                attach(sys::gettid())?;
                become_dl(2_000_000, 10_000_000)?;
                let mut out = Vec::new();
                let mut clock = Histogram::new();
                for kind in [MutexKind::Plain, MutexKind::Pi] {
                    let m = PMutex::new(kind).map_err(|e| e.to_string())?;
                    let (mut lh, mut uh) = (Histogram::new(), Histogram::new());
                    for i in 0..cfg.iterations {
                        if i % 1000 == 0 {
                            // A stop ends the run here, between bursts (a burst of 1000 calls
                            // and its rest take a few ms): the figures so far are kept.
                            if crate::common::stop_requested() {
                                break;
                            }
                            // A rest: the next burst starts with a full budget.
                            sleep_until(mono_ns() + 5_000_000);
                        }
                        let a = mono_ns();
                        m.lock();
                        let b = mono_ns();
                        m.unlock();
                        let c = mono_ns();
                        let d = mono_ns();
                        lh.record(b - a);
                        uh.record(c - b);
                        clock.record(d - c);
                    }
                    out.push((kind.name().to_string(), "lock_uncontended".to_string(), lh));
                    out.push((
                        kind.name().to_string(),
                        "unlock_uncontended".to_string(),
                        uh,
                    ));
                }
                out.push(("none".into(), "clock_read".into(), clock));
                Ok(out)
            },
        )
        .join()
        .unwrap_or_else(|_| Err("the overhead thread panicked".into()))
    })
    .map_err(BenchError::Unavailable)?;
    rows.extend(unc);
    // Contended: the holder H times its unlock while the waiter W sleeps in the kernel; W
    // times the hand-over (H's unlock call → W returns from lock).
    let (mut dropped, mut same_cpu, mut handed) = (0u64, 0u64, 0u64);
    for kind in [MutexKind::Plain, MutexKind::Pi] {
        let m = PMutex::new(kind)?;
        let (go, done) = (Sem::new(0), Sem::new(0));
        // The waiter's acquisition time and CPU, read by the holder after `done`.
        let (t_acq, cpu_w) = (AtomicU64::new(0), AtomicU32::new(0));
        let quit = AtomicBool::new(false);
        let w_gone = AtomicBool::new(false);
        let (r_h, r_w) = std::thread::scope(|sc| {
            let w = sc.spawn(|| -> std::result::Result<(), String> {
                let r = (|| {
                    attach(sys::gettid())?;
                    become_dl(2_000_000, 20_000_000)?;
                    while go.wait(|| quit.load(Ordering::Relaxed)) && !quit.load(Ordering::Relaxed)
                    {
                        m.lock();
                        t_acq.store(mono_ns(), Ordering::Release);
                        cpu_w.store(sys::current_cpu(), Ordering::Release);
                        m.unlock();
                        done.post();
                    }
                    Ok(())
                })();
                w_gone.store(true, Ordering::SeqCst);
                r
            });
            type Out = (Histogram, Histogram, u64, u64, u64);
            let hres = (|| -> std::result::Result<Out, String> {
                attach(sys::gettid())?;
                become_dl(2_000_000, 10_000_000)?;
                let (mut hu, mut hh) = (Histogram::new(), Histogram::new());
                let (mut dropped, mut same, mut n) = (0, 0, 0);
                for _ in 0..cfg.contended_iterations {
                    if crate::common::stop_requested() || w_gone.load(Ordering::SeqCst) {
                        break;
                    }
                    m.lock();
                    go.post();
                    let give_up = mono_ns() + 5_000_000;
                    while !m.has_kernel_waiter(kind) && mono_ns() < give_up {
                        std::hint::spin_loop();
                    }
                    let seen = m.has_kernel_waiter(kind);
                    // Let the waiter reach schedule() after queueing itself.
                    crate::common::spin_for(20_000);
                    let cpu_h = sys::current_cpu();
                    let a = mono_ns();
                    m.unlock();
                    let b = mono_ns();
                    if !done.wait(|| w_gone.load(Ordering::SeqCst)) {
                        break;
                    }
                    if seen {
                        hu.record(b - a);
                        hh.record(t_acq.load(Ordering::Acquire).saturating_sub(a));
                        n += 1;
                        same += u64::from(cpu_w.load(Ordering::Acquire) == cpu_h);
                    } else {
                        dropped += 1;
                    }
                    sleep_until(mono_ns() + 200_000);
                }
                Ok((hu, hh, dropped, same, n))
            })();
            quit.store(true, Ordering::Relaxed);
            go.post();
            let w = w
                .join()
                .unwrap_or_else(|_| Err("the waiter thread panicked".into()));
            (hres, w)
        });
        let (hu, hh, d, same, n) = r_h.map_err(BenchError::Unavailable)?;
        r_w.map_err(BenchError::Unavailable)?;
        dropped += d;
        same_cpu += same;
        handed += n;
        rows.push((kind.name().to_string(), "unlock_contended".to_string(), hu));
        rows.push((kind.name().to_string(), "handoff".to_string(), hh));
    }
    if dropped > 0 {
        notes.push(format!(
            "{dropped} contended iterations dropped: the waiter was not seen queued in the kernel within 5 ms"
        ));
    }
    notes.push(format!(
        "{same_cpu} of {handed} hand-overs woke the waiter on the holder's CPU (SCHED_DEADLINE threads cannot be pinned inside a root domain): those include waiting for the holder to block"
    ));
    drop(cpusets);
    Ok(MbwiOverhead {
        cpus: cfg.cpus.clone(),
        rows: rows
            .into_iter()
            .map(|(mutex, op, h)| {
                let (histogram, stats) = hist_stats(h);
                OverheadRow {
                    mutex,
                    op,
                    histogram,
                    stats,
                }
            })
            .collect(),
        notes,
    })
}

/// A task-set file, JSON (starts with `{`) or TOML, parsed and validated; the error is one
/// line naming the field and its range.
pub fn parse_set(text: &str) -> std::result::Result<MbwiTaskSet, String> {
    let set: MbwiTaskSet = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| format!("not a task set (JSON): {e}"))?
    } else {
        toml::from_str(text).map_err(|e| {
            format!(
                "not a task set (TOML): {}",
                crate::taskset::toml_one_line(&e, text)
            )
        })?
    };
    sim::validate(&set).map_err(|e| e.to_string())?;
    Ok(set)
}

/// `mbwi sim`'s task set: a file (JSON or TOML, read by the caller's rule) or one of the built-in
/// examples (`rtscope_analysis::mbwi::EXAMPLES`), and the name its results carry (the example's,
/// or the file's stem).
pub fn sim_set<V: crate::common::Values>(
    file: Option<&std::path::Path>,
    example: Option<&str>,
    v: &V,
) -> std::result::Result<(MbwiTaskSet, String), V::Error> {
    let set = match file {
        Some(f) => parse_set(&v.read("FILE", f)?)
            .map_err(|e| BenchError::Invalid(format!("{}: {e}", f.display())))?,
        None => example
            .and_then(rtscope_analysis::mbwi::example)
            .ok_or_else(|| BenchError::Invalid(EXAMPLE.to_string()))?,
    };
    let name = match (example, file.and_then(|f| f.file_stem())) {
        (Some(e), _) => e.to_string(),
        (None, s) => s.map_or(String::new(), |s| s.to_string_lossy().into_owned()),
    };
    Ok((set, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_sets_parse_from_json_and_toml() {
        let toml = r#"
cpus = 1
horizon_us = 48000
[[tasks]]
name = "a"
runtime_us = 6000
period_us = 24000
script = [{lock = "A"}, {compute_us = 5000}, {unlock = "A"}]
"#;
        let s = parse_set(toml).unwrap();
        assert_eq!(s.tasks[0].script[0], Segment::Lock("A".into()));
        assert_eq!(s.tasks[0].deadline(), 24000);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(parse_set(&json).unwrap(), s);
        let e = parse_set(&toml.replace("runtime_us = 6000", "runtime_us = 60000")).unwrap_err();
        assert!(e.contains("tasks[0] (a).runtime_us: 60000"), "{e}");
        assert!(parse_set("cpus = [")
            .unwrap_err()
            .starts_with("not a task set (TOML)"));
    }

    #[test]
    fn experiment_config_from_flags() {
        if sys::online_cpus().map_or(0, |c| c.len()) < 2
            || !sys::online_cpus().unwrap().contains(&1)
        {
            rtscope_testkit::skipped("needs CPUs 0 and 1 online");
            return;
        }
        use std::time::Duration as D;
        let (s1, no_tick) = (D::from_secs(1), D::ZERO);
        let c = ExperimentConfig::new("all", "both", &[0, 1], s1, no_tick).unwrap();
        assert_eq!((c.one_cpu, c.two_cpus.clone()), (1, vec![0, 1]));
        assert_eq!(c.runs().unwrap().len(), 6);
        let e = ExperimentConfig::new("two-cpus", "pi", &[1], s1, no_tick).unwrap_err();
        assert!(e.to_string().contains("needs 2 CPUs"), "{e}");
        assert!(ExperimentConfig::new("one-cpu", "futex", &[1], s1, no_tick).is_err());
        assert!(
            ExperimentConfig::new("one-cpu", "pi", &[1], D::from_millis(100), no_tick).is_err()
        );
        let tick = |t| ExperimentConfig::new("one-cpu", "pi", &[1], s1, t).map(|c| c.tick_us);
        assert_eq!(tick(D::from_millis(4)).unwrap(), 4000);
        assert_eq!(
            tick(D::from_nanos(1500)).unwrap_err().to_string(),
            "⟨mbwi.tick⟩: must be whole µs in 0 ..= 1s, got 1.5us"
        );
        assert!(tick(D::from_secs(2)).is_err());
    }
}
