//! The runner: one thread per task, released periodically on absolute CLOCK_MONOTONIC times
//! (synchronous release at t0, the critical instant), each job doing its calibrated work; per job
//! release/start/finish and CPU time are kept in preallocated memory and summarised at the end.
//!
//! Exit paths: every thread returns to SCHED_OTHER before it exits. SIGINT/SIGTERM set a stop
//! flag, and the run's end (`-D`) is a deadline: each thread checks both between jobs, every
//! [`SLICE_NS`] of a sleep and about every [`CHECK_NS`] of a job's work, so a stop or the end
//! cuts even an hour-long job within [`stop_grace_ns`]; the coordinator then removes the cpusets
//! (Drop). Durations are bounded by the caller; RT throttling is never touched.

use super::cpuset::{self, Cpusets};
use super::field::*;
use super::kernel::{self, SchedCounters};
use super::plan::{Release, RunPlan, Segment, ThreadPolicy};
use super::work::{self, Access, WorkingSet};
use super::TasksetError;
use rtscope_analysis::sched::KernelLimits;
use rtscope_model::taskset::{
    AdmissionInfo, Calibration, TaskOutcome, TaskSet, TasksetResult, TasksetRunConfig,
};
use rtscope_model::{WarningCode, Warnings};
use rtscope_probe::signals;
use rtscope_probe::sys;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{mpsc, Barrier};

/// Most tasks a run may have (the SIGXCPU table is bounded; 256 tasks is far more than a
/// schedulable set on a few CPUs holds).
pub const MAX_TASKS: usize = 256;

static SLOT_TID: [AtomicI32; MAX_TASKS] = [const { AtomicI32::new(0) }; MAX_TASKS];
static SLOT_XCPU: [AtomicU64; MAX_TASKS] = [const { AtomicU64::new(0) }; MAX_TASKS];
static XCPU_UNMATCHED: AtomicU64 = AtomicU64::new(0);

/// SIGXCPU from SCHED_FLAG_DL_OVERRUN: the kernel sends it to the thread group, normally handled
/// by the overrunning thread itself; attribute it by gettid (async-signal-safe), else count it
/// as unattributed.
extern "C" fn on_xcpu(_: i32) {
    let tid = sys::gettid();
    for i in 0..MAX_TASKS {
        if SLOT_TID[i].load(Ordering::Relaxed) == tid {
            SLOT_XCPU[i].fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    XCPU_UNMATCHED.fetch_add(1, Ordering::Relaxed);
}

/// Whether a stop was requested (SIGINT/SIGTERM) during the last run.
pub fn stop_requested() -> bool {
    signals::stop_requested()
}

#[derive(Clone, Debug, PartialEq)]
pub struct RunOptions {
    pub duration_ns: u64,
    pub wss_bytes: u64,
    pub access: Access,
    pub seed: u64,
    pub inflate_ns: u64,
    /// Bisect the kernel's free DEADLINE bandwidth before the run (fair-server detection).
    pub probe_admission: bool,
    /// CPUs of the run (all online by default).
    pub cpus: Vec<u32>,
    pub source: String,
    /// Ask the kernel for SIGXCPU on DEADLINE runtime overruns.
    pub dl_overrun_signal: bool,
    /// Job work by calibrated element count (Lelli 2014, the default) or until the thread has
    /// used C of CPU time (immune to calibration drift; hides cache effects on execution time).
    pub work_by_cputime: bool,
    /// Admission facts already gathered (e.g. for planning); probed again when None.
    pub admission: Option<(AdmissionInfo, KernelLimits)>,
}

#[derive(Clone, Copy, Default)]
struct Job {
    release: u64,
    start: u64,
    finish: u64,
    exec: u64,
    /// SIGXCPU count of this task when the job finished: a miss at or after the first overrun
    /// follows a throttled reservation (see `after_overrun`).
    overruns: u64,
    /// The job was cut by a stop or the end of the run (`finish` is the cut).
    cut: Option<Cut>,
}

struct ThreadOut {
    tid: i32,
    jobs: Vec<Job>,
    c0: SchedCounters,
    c1: SchedCounters,
    error: Option<String>,
    ebusy: bool,
    observed_policy: String,
    observed_priority: i32,
    /// Jobs released in the window but never started because the thread was still behind
    /// when the overtime allowance ran out (counted as misses).
    dropped: u64,
}

/// Admission facts for predictions and the report. `detect` = look for the fair server
/// (debugfs when readable, else the kernel version: dl_server exists from Linux 6.12 with a
/// default reservation of 50 ms every 1 s per CPU); otherwise assume none.
pub fn admission_info(cpus: u32, detect: bool) -> (AdmissionInfo, KernelLimits) {
    let limit = rtscope_probe::admission::admission_limit().unwrap_or(0.95);
    let other = kernel::other_dl_bandwidth();
    let (fs, method) = if !detect {
        (
            None,
            "fair server not looked for (not a DEADLINE run, or the admission probe was off): assumed 0"
                .to_string(),
        )
    } else if let Some(fs) = kernel::fair_server_debugfs() {
        (
            Some(fs),
            format!("fair server {fs:.3}/CPU read from /sys/kernel/debug/sched/fair_server/cpu0"),
        )
    } else {
        match kernel::kernel_version() {
            Some((maj, min)) if (maj, min) >= (6, 12) => (
                Some(kernel::FAIR_SERVER_DEFAULT),
                format!(
                    "fair server not in debugfs (lockdown, or no CONFIG_SCHED_DEBUG); Linux {maj}.{min} ≥ 6.12 has the fair server (dl_server): assumed at its default 50 ms / 1 s = {:.3}/CPU",
                    kernel::FAIR_SERVER_DEFAULT
                ),
            ),
            Some((maj, min)) => (Some(0.0), format!("Linux {maj}.{min} < 6.12: no fair server")),
            None => (None, "kernel version unreadable: fair server unknown, assumed 0".into()),
        }
    };
    let info = AdmissionInfo {
        limit_per_cpu: limit,
        cpus,
        fair_server_per_cpu: fs,
        other_dl_bandwidth: other,
        probed_free_bandwidth: None,
        unaccounted_bandwidth: 0.0,
        method,
    };
    let lim = KernelLimits {
        limit_per_cpu: limit,
        fair_server_per_cpu: fs.unwrap_or(0.0),
        other_bandwidth: other,
    };
    (info, lim)
}

fn admit(p: &ThreadPolicy, overrun: bool) -> std::io::Result<()> {
    let attr = match *p {
        ThreadPolicy::Deadline {
            runtime_ns,
            deadline_ns,
            period_ns,
        } => sys::SchedAttr {
            sched_policy: sys::SCHED_DEADLINE,
            sched_flags: sys::SCHED_FLAG_RESET_ON_FORK
                | if overrun {
                    sys::SCHED_FLAG_DL_OVERRUN
                } else {
                    0
                },
            sched_runtime: runtime_ns,
            sched_deadline: deadline_ns,
            sched_period: period_ns,
            ..Default::default()
        },
        ThreadPolicy::Fifo(prio) | ThreadPolicy::Rr(prio) => sys::SchedAttr {
            sched_policy: if matches!(p, ThreadPolicy::Fifo(_)) {
                sys::SCHED_FIFO
            } else {
                sys::SCHED_RR
            },
            sched_flags: sys::SCHED_FLAG_RESET_ON_FORK,
            sched_priority: prio,
            ..Default::default()
        },
        ThreadPolicy::Other(nice) => sys::SchedAttr {
            sched_policy: sys::SCHED_OTHER,
            sched_nice: nice,
            ..Default::default()
        },
    };
    sys::sched_setattr(0, &attr)
}

fn to_other() {
    let _ = sys::sched_setattr(
        0,
        &sys::SchedAttr {
            sched_policy: sys::SCHED_OTHER,
            ..Default::default()
        },
    );
}

/// Absolute sleep on CLOCK_MONOTONIC, restarted on EINTR unless a stop is requested.
fn sleep_until(t: u64) {
    crate::common::sleep_until(t)
}

fn now() -> u64 {
    sys::monotonic_ns()
}

/// Longest a task thread sleeps without looking at the stop flag: a release or a sleep segment
/// further away is slept in slices (absolute times, so the release itself is not moved).
pub const SLICE_NS: u64 = 20_000_000;
/// Work done between two looks at the stop flag and the clock, about (ns of CPU).
pub const CHECK_NS: u64 = 1_000_000;

/// How long after the end of the run a job still in progress may go on: one period, at most
/// 20 ms (the rule for every run is "within one period and at most 100 ms"; the rest is left
/// for the threads' exit, the record and the store). A stop cuts at once. Of a task whose
/// response times stay within its period or 20 ms, no job is cut at the end of a normal run;
/// a job cut before its deadline was pending when the run ended and is not counted.
pub fn stop_grace_ns(period_ns: u64) -> u64 {
    period_ns.min(20_000_000)
}

/// One timer's next expiry (rt-app's timer event), shared by the tasks that name it.
struct Timer(AtomicU64);

impl Timer {
    /// After a job that ended at `now`: move the timer one period on and return the next
    /// release. Relative timers that are already past restart from now.
    fn next(&self, period: u64, relative: bool, now: u64) -> u64 {
        let next = self.0.fetch_add(period, Ordering::SeqCst) + period;
        if relative && now >= next {
            self.0.store(now, Ordering::SeqCst);
            return now;
        }
        next
    }
}

/// The timers of a run: one per shared group (index = its number), then one per task.
fn timers(plan: &RunPlan) -> (Vec<Timer>, Vec<usize>) {
    let groups = plan
        .specs
        .iter()
        .filter_map(|s| s.release.shared)
        .max()
        .map_or(0, |m| m as usize + 1);
    let mut idx = Vec::with_capacity(plan.specs.len());
    for (i, s) in plan.specs.iter().enumerate() {
        idx.push(match s.release {
            Release {
                shared: Some(g), ..
            } => g as usize,
            _ => groups + i,
        });
    }
    let all = (0..groups + plan.specs.len())
        .map(|_| Timer(AtomicU64::new(0)))
        .collect();
    (all, idx)
}

/// Why a job's work stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cut {
    /// SIGINT/SIGTERM.
    Stop,
    /// The end of the run plus the grace passed.
    End,
}

/// The stop or the hard end, whichever applies now.
fn cut_now(hard_end: u64) -> Option<Cut> {
    if signals::stop_requested() {
        Some(Cut::Stop)
    } else if now() >= hard_end {
        Some(Cut::End)
    } else {
        None
    }
}

/// Sleep until `t` (absolute, CLOCK_MONOTONIC) in slices of at most [`SLICE_NS`], giving up at a
/// stop or at `hard_end`.
fn sleep_until_or_cut(t: u64, hard_end: u64) -> Option<Cut> {
    loop {
        if let Some(c) = cut_now(hard_end) {
            return Some(c);
        }
        let n = now();
        if n >= t {
            return None;
        }
        let target = t.min(n + SLICE_NS).min(hard_end);
        sleep_until(target);
    }
}

/// Run the plan. Validation of user input happens before this is called; errors here are
/// kernel refusals or I/O.
pub fn run(
    plan: &RunPlan,
    opts: &RunOptions,
    set: &TaskSet,
) -> Result<TasksetResult, TasksetError> {
    if plan.specs.len() > MAX_TASKS {
        return Err(TasksetError::Invalid(format!(
            "task set: at most {MAX_TASKS} tasks, got {}",
            plan.specs.len()
        )));
    }
    signals::clear_stop();
    let mut warnings = Vec::new();
    for s in cpuset::remove_stale() {
        warnings.warn(WarningCode::System, s);
    }
    let has_dl = plan
        .specs
        .iter()
        .any(|s| matches!(s.policy, ThreadPolicy::Deadline { .. }));
    let has_rt = plan
        .specs
        .iter()
        .any(|s| matches!(s.policy, ThreadPolicy::Fifo(_) | ThreadPolicy::Rr(_)));
    if (has_dl || has_rt) && !kernel::rt_throttling_on() {
        warnings.warn(WarningCode::System, "RT throttling is off (sched_rt_runtime_us = -1): a FIFO overload can starve the machine until the run ends");
    }
    let (admission, limits) = match &opts.admission {
        Some(a) => a.clone(),
        None => admission_info(opts.cpus.len() as u32, opts.probe_admission && has_dl),
    };
    let predictions = super::plan::predict(plan, limits, opts.inflate_ns);
    let _sig = signals::Guard::install(&[(rtscope_sys::Signal::SIGXCPU, on_xcpu)]);
    let hyg = rtscope_probe::hygiene::mlockall();
    if let Err(e) = &hyg {
        warnings.warn(
            WarningCode::NotRealtime,
            format!("{e}: page faults may disturb the jobs"),
        );
    }
    for (i, s) in SLOT_TID.iter().enumerate() {
        s.store(0, Ordering::Relaxed);
        SLOT_XCPU[i].store(0, Ordering::Relaxed);
    }
    XCPU_UNMATCHED.store(0, Ordering::Relaxed);

    // Calibration per distinct working-set size, in the coordinator's own CPU time.
    let mut cal: BTreeMap<u64, f64> = BTreeMap::new();
    let wss_of = |s: &super::plan::TaskSpec| s.task.wss_bytes.unwrap_or(opts.wss_bytes);
    for s in &plan.specs {
        let w = wss_of(s);
        if let std::collections::btree_map::Entry::Vacant(e) = cal.entry(w) {
            let mut ws = WorkingSet::new(w, opts.access, opts.seed);
            e.insert(work::calibrate(&mut ws, 1_000_000, 15));
        }
    }

    let cpusets = if plan.groups.is_empty() {
        None
    } else {
        Some(Cpusets::create(&plan.groups)?)
    };
    if let Some(c) = &cpusets {
        for n in &c.notes {
            warnings.warn(WarningCode::System, n.clone());
        }
    }

    let n = plan.specs.len();
    let barrier = Barrier::new(n + 1);
    let abort = AtomicBool::new(false);
    let t0 = AtomicU64::new(0);
    let end = AtomicU64::new(0);
    let (ready_tx, ready_rx) = mpsc::channel::<(usize, Option<String>)>();
    let overrun = opts.dl_overrun_signal;

    let (timer_list, timer_of) = timers(plan);
    let outs: Vec<ThreadOut> = std::thread::scope(|sc| {
        let mut handles = Vec::with_capacity(n);
        for (i, spec) in plan.specs.iter().enumerate() {
            let (barrier, abort, t0, end, cpusets, cal) =
                (&barrier, &abort, &t0, &end, &cpusets, &cal);
            let timer = &timer_list[timer_of[i]];
            let tx = ready_tx.clone();
            let w = wss_of(spec);
            let h = std::thread::Builder::new()
                .name(format!("rtscope-task{}", spec.task.id))
                .stack_size(256 * 1024)
                .spawn_scoped(sc, move || {
                    let tid = sys::gettid();
                    SLOT_TID[i].store(tid, Ordering::SeqCst);
                    // 1 ns slack so SCHED_OTHER wake-ups are not deferred by the default 50 µs
                    // (same treatment for every policy).
                    let _ = rtscope_sys::sched::set_timer_slack(1);
                    let ns_per = cal.get(&w).copied().unwrap_or(1.0);
                    let mut ws = WorkingSet::new(w, opts.access, opts.seed.wrapping_add(i as u64));
                    ws.warm();
                    let period = spec.task.period_ns;
                    let cap = (opts.duration_ns / period + 2) as usize;
                    let mut jobs: Vec<Job> = Vec::with_capacity(cap);
                    jobs.resize(cap, Job::default());
                    jobs.clear();
                    let mut ebusy = false;
                    let setup: Result<(), String> = (|| {
                        let is_dl = matches!(spec.policy, ThreadPolicy::Deadline { .. });
                        if let (Some(g), Some(c)) = (spec.group, cpusets.as_ref()) {
                            c.attach(g, tid).map_err(|e| e.to_string())?;
                        } else if !spec.cpus.is_empty() && !is_dl {
                            sys::set_affinity(tid, &spec.cpus)
                                .map_err(|e| format!("pinning to CPUs {:?}: {e}", spec.cpus))?;
                        }
                        admit(&spec.policy, overrun).map_err(|e| {
                            ebusy = rtscope_sys::is_ebusy(&e);
                            format!("sched_setattr({}): {e}", spec.policy.name())
                        })
                    })();
                    let _ = tx.send((i, setup.as_ref().err().cloned()));
                    barrier.wait();
                    let observed = rtscope_probe::admission::observe(tid).ok();
                    let mut out = ThreadOut {
                        tid,
                        jobs: Vec::new(),
                        c0: SchedCounters::default(),
                        c1: SchedCounters::default(),
                        error: setup.err(),
                        ebusy,
                        observed_policy: observed
                            .as_ref()
                            .map(|o| o.policy.clone())
                            .unwrap_or_default(),
                        observed_priority: observed.as_ref().map(|o| o.priority).unwrap_or(0),
                        dropped: 0,
                    };
                    if out.error.is_some() || abort.load(Ordering::SeqCst) {
                        to_other();
                        return out;
                    }
                    let start_t = t0.load(Ordering::SeqCst);
                    let end_t = end.load(Ordering::SeqCst);
                    out.c0 = kernel::sched_counters(tid);
                    // A job still running this long after the end is cut (a stop cuts at once);
                    // one whose current piece of work cannot end by then is cut at the end.
                    let grace = stop_grace_ns(period);
                    let hard_end = end_t + grace;
                    let cut_early = |left_ns: u64| {
                        let n = now();
                        if signals::stop_requested() {
                            Some(Cut::Stop)
                        } else if n >= hard_end || (n >= end_t && left_ns > grace) {
                            Some(Cut::End)
                        } else {
                            None
                        }
                    };
                    // Elements visited between two looks at the flag and the clock.
                    let chunk = ((CHECK_NS as f64 / ns_per) as u64).max(64);
                    let mut k: u64 = 0;
                    // The first job at t0 + offset; the next ones from the timer (shared timers:
                    // the first of their tasks to start sets it, as rt-app's first use does).
                    let mut release = start_t + spec.offset_ns;
                    let _ =
                        timer
                            .0
                            .compare_exchange(0, release, Ordering::SeqCst, Ordering::SeqCst);
                    loop {
                        if k > 0 {
                            release = timer.next(period, spec.release.relative, now());
                        }
                        if release >= end_t
                            || signals::stop_requested()
                            || jobs.len() == cap
                            || spec.max_jobs.is_some_and(|m| k >= m)
                        {
                            break;
                        }
                        // Bounded duration: a thread that fell behind (CFS under load, an
                        // overrunning reservation) stops at the hard end; the jobs it never
                        // started whose deadline has passed are counted as missed (the others
                        // were still pending when the run ended).
                        let n = now();
                        if n >= hard_end {
                            let due = (end_t - release).div_ceil(period);
                            let missed = (0..due)
                                .filter(|j| release + j * period + spec.task.deadline_ns <= n)
                                .count() as u64;
                            out.dropped = missed;
                            break;
                        }
                        if sleep_until_or_cut(release, hard_end).is_some() {
                            break;
                        }
                        let start = now();
                        let c0 = work::thread_cpu_ns();
                        let mut cut = None;
                        for seg in &spec.segments {
                            match *seg {
                                Segment::Run(ns) if opts.work_by_cputime => {
                                    let c_start = work::thread_cpu_ns();
                                    loop {
                                        let used = work::thread_cpu_ns().saturating_sub(c_start);
                                        if used >= ns {
                                            break;
                                        }
                                        ws.visit(256);
                                        cut = cut_early(ns - used);
                                        if cut.is_some() {
                                            break;
                                        }
                                    }
                                }
                                Segment::Run(ns) => {
                                    let mut left = (ns as f64 / ns_per).round() as u64;
                                    while left > 0 {
                                        let c = left.min(chunk);
                                        ws.visit(c);
                                        left -= c;
                                        if left > 0 {
                                            cut = cut_early((left as f64 * ns_per) as u64);
                                            if cut.is_some() {
                                                break;
                                            }
                                        }
                                    }
                                }
                                Segment::Busy(ns) => {
                                    let until = now() + ns;
                                    while now() < until {
                                        ws.visit(64);
                                        cut = cut_early(until.saturating_sub(now()));
                                        if cut.is_some() {
                                            break;
                                        }
                                    }
                                }
                                Segment::Sleep(ns) => {
                                    cut = sleep_until_or_cut(now() + ns, hard_end)
                                }
                            }
                            if cut.is_some() {
                                break;
                            }
                        }
                        let finish = now();
                        let exec = work::thread_cpu_ns().saturating_sub(c0);
                        jobs.push(Job {
                            release,
                            start,
                            finish,
                            exec,
                            overruns: SLOT_XCPU[i].load(Ordering::Relaxed),
                            cut,
                        });
                        k += 1;
                        if cut.is_some() {
                            break;
                        }
                    }
                    out.c1 = kernel::sched_counters(tid);
                    to_other();
                    out.jobs = jobs;
                    out
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Threads already started wait at the barrier: release them with abort set.
                    abort.store(true, Ordering::SeqCst);
                    let _ = ready_tx.send((usize::MAX, Some(format!("spawning thread: {e}"))));
                    break;
                }
            }
        }
        drop(ready_tx);
        let mut errors = Vec::new();
        for _ in 0..handles.len() {
            match ready_rx.recv() {
                Ok((_, Some(e))) => {
                    errors.push(e);
                    abort.store(true, Ordering::SeqCst);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if let Ok((_, Some(e))) = ready_rx.try_recv() {
            errors.push(e);
            abort.store(true, Ordering::SeqCst);
        }
        if handles.len() < n {
            abort.store(true, Ordering::SeqCst);
            // The barrier expects n + 1 parties: stand in for the threads never started.
            let missing = n - handles.len();
            for _ in 0..missing {
                let b = &barrier;
                sc.spawn(move || {
                    b.wait();
                });
            }
        }
        // Every thread is set up and waits at the barrier: 20 ms lets them all reach their
        // first sleep before t0.
        let start = now() + 20_000_000;
        t0.store(start, Ordering::SeqCst);
        end.store(start + opts.duration_ns, Ordering::SeqCst);
        barrier.wait();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });

    let interrupted = signals::stop_requested();
    // The measured window: the requested duration, or up to the stop when interrupted.
    let window_ns = now()
        .saturating_sub(t0.load(Ordering::SeqCst))
        .clamp(1, opts.duration_ns.max(1));
    // Recalibrate: drift shows whether the work loop still costs what it did (frequency, cache,
    // interference from other tenants of the machine). Not after a stop: the user asked for the
    // run to end, and the drift of a partial run says little.
    let calibration: Vec<Calibration> = cal
        .iter()
        .map(|(&w, &c0)| {
            let c1 = (!interrupted).then(|| {
                let mut ws = WorkingSet::new(w, opts.access, opts.seed);
                work::calibrate(&mut ws, 1_000_000, 15)
            });
            Calibration {
                wss_bytes: w,
                access: opts.access.name().into(),
                ns_per_element_start: c0,
                ns_per_element_end: c1,
                drift_pct: c1.map(|c1| (c1 - c0) / c0 * 100.0),
            }
        })
        .collect();
    drop(cpusets);
    if hyg.is_ok() {
        rtscope_probe::hygiene::munlockall();
    }

    let errs: Vec<&ThreadOut> = outs.iter().filter(|o| o.error.is_some()).collect();
    if !errs.is_empty() {
        if let Some(o) = errs.iter().find(|o| o.ebusy) {
            let i = outs.iter().position(|x| std::ptr::eq(x, *o)).unwrap_or(0);
            return Err(TasksetError::Admission(explain_ebusy(
                plan, i, &admission, limits,
            )));
        }
        let msgs: Vec<String> = errs
            .iter()
            .filter_map(|o| o.error.as_ref().map(|e| format!("tid {}: {e}", o.tid)))
            .collect();
        return Err(TasksetError::Sys {
            what: format!("setting up task threads ({} failed)", msgs.len()),
            source: std::io::Error::other(msgs.join("; ")),
        });
    }

    let dur = window_ns as f64;
    let mut tasks = Vec::with_capacity(n);
    let mut overrun_notes = Vec::new();
    for (i, (spec, o)) in plan.specs.iter().zip(&outs).enumerate() {
        let t = &spec.task;
        let (cut, jobs): (Vec<&Job>, Vec<&Job>) = o.jobs.iter().partition(|j| j.cut.is_some());
        // A cut job past its deadline is a miss (its response is at least the cut); one cut
        // before its deadline was pending when the run ended and is not counted.
        let cut_missed = cut
            .iter()
            .filter(|j| j.finish > j.release + t.deadline_ns)
            .count() as u64;
        if let Some(j) = cut.first() {
            let why = match j.cut {
                Some(Cut::Stop) => "the stop (SIGINT/SIGTERM)",
                _ => "the end of the run",
            };
            warnings.warn(
                WarningCode::Overruns,
                format!(
                    "task {}: a job released {:.1} ms before {why} was cut after {:.1} ms of CPU ({}counted as a miss)",
                    t.id,
                    j.finish.saturating_sub(j.release) as f64 / 1e6,
                    j.exec as f64 / 1e6,
                    if cut_missed > 0 { "" } else { "not " }
                ),
            );
        }
        let nj = jobs.len() as u64 + o.dropped + cut_missed;
        let mut misses = o.dropped + cut_missed;
        let mut after_overrun = 0u64;
        let mut max_r = 0u64;
        let mut sum_r = 0f64;
        let mut max_late = i64::MIN;
        let mut sum_lax = 0f64;
        let mut min_lax = f64::INFINITY;
        let mut max_sd = 0u64;
        let mut sum_sd = 0f64;
        let mut max_e = 0u64;
        let mut sum_e = 0f64;
        for j in &jobs {
            let r = j.finish.saturating_sub(j.release);
            let late = j.finish as i64 - (j.release + t.deadline_ns) as i64;
            if late > 0 {
                misses += 1;
                if j.overruns > 0 {
                    after_overrun += 1;
                }
            }
            max_r = max_r.max(r);
            sum_r += r as f64;
            max_late = max_late.max(late);
            let lax = (t.deadline_ns as f64 - r as f64) / t.period_ns as f64;
            sum_lax += lax;
            min_lax = min_lax.min(lax);
            let sd = j.start.saturating_sub(j.release);
            max_sd = max_sd.max(sd);
            sum_sd += sd as f64;
            max_e = max_e.max(j.exec);
            sum_e += j.exec as f64;
        }
        if after_overrun > 0 {
            // SCHED_DEADLINE charges everything between pick and switch-out to the runtime,
            // including a hypervisor stall of the vCPU; CBS then postpones the deadline by a
            // period per Q overdrawn and throttles, so one stall can cost many later jobs.
            overrun_notes.warn(WarningCode::DeadlineOverrun, format!(
                "task {}: {after_overrun} of {misses} misses came at or after a runtime overrun (SIGXCPU): the reservation was charged beyond Q (a host stall while it ran, or jobs longer than C) and throttled until a later deadline",
                t.id
            ));
        }
        let d = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| b.saturating_sub(a));
        let ran = jobs.len();
        let avg = |s: f64| if ran > 0 { s / ran as f64 } else { 0.0 };
        tasks.push(TaskOutcome {
            id: t.id,
            tid: o.tid.max(0) as u32,
            cpus: spec.cpus.clone(),
            policy: o.observed_policy.clone(),
            priority: o.observed_priority,
            wcet_ns: t.wcet_ns,
            period_ns: t.period_ns,
            deadline_ns: t.deadline_ns,
            jobs: nj,
            misses,
            miss_pct: rtscope_model::taskset::miss_pct(misses, nj),
            max_response_ns: max_r,
            avg_response_ns: avg(sum_r),
            max_lateness_ns: if ran > 0 { max_late } else { 0 },
            avg_norm_laxity: avg(sum_lax),
            min_norm_laxity: if ran > 0 { min_lax } else { 0.0 },
            max_start_delay_ns: max_sd,
            avg_start_delay_ns: avg(sum_sd),
            max_exec_ns: max_e,
            avg_exec_ns: avg(sum_e),
            measured_utilisation: sum_e / dur,
            migrations: d(o.c0.migrations, o.c1.migrations),
            voluntary_switches: d(o.c0.voluntary, o.c1.voluntary),
            involuntary_switches: d(o.c0.involuntary, o.c1.involuntary),
            dl_overruns: SLOT_XCPU[i].load(Ordering::Relaxed),
            misses_after_overrun: after_overrun,
        });
    }
    for (o, t) in outs.iter().zip(&tasks) {
        if o.dropped > 0 {
            warnings.warn(WarningCode::Overruns, format!(
                "task {}: {} jobs never started (thread still behind 1 s after the end): counted as misses",
                t.id, o.dropped
            ));
        }
    }
    warnings.append(&mut overrun_notes);
    let total_jobs: u64 = tasks.iter().map(|t| t.jobs).sum();
    let total_misses: u64 = tasks.iter().map(|t| t.misses).sum();
    let unmatched = XCPU_UNMATCHED.load(Ordering::Relaxed);
    if unmatched > 0 {
        warnings.warn(WarningCode::DeadlineOverrun, format!("{unmatched} SIGXCPU were delivered to a thread other than the overrunning one (counted in the total only)"));
    }
    for c in &calibration {
        if let Some(dp) = c.drift_pct {
            if dp.abs() > 10.0 {
                warnings.warn(WarningCode::Calibration, format!("calibration drifted {dp:+.1} % during the run (WSS {} B): job lengths differ from C", c.wss_bytes));
            }
        }
    }
    for t in &tasks {
        if t.jobs > 0 && t.avg_exec_ns > t.wcet_ns as f64 * 1.1 {
            warnings.warn(WarningCode::Calibration, format!(
                "task {}: jobs took {:.0} µs CPU on average for C = {:.0} µs (cold caches after preemption/migration, or interference)",
                t.id,
                t.avg_exec_ns / 1e3,
                t.wcet_ns as f64 / 1e3
            ));
        }
    }
    if let (Some(h), _) = rtscope_probe::system::hypervisor() {
        warnings.warn(WarningCode::Hypervisor, format!("running under a hypervisor ({h}): host stalls (vCPU preemption) show up as misses no scheduler can prevent"));
    }
    let total_ovr: u64 = tasks.iter().map(|t| t.dl_overruns).sum::<u64>() + unmatched;
    let mu: f64 = tasks.iter().map(|t| t.measured_utilisation).sum();
    let secs = opts.duration_ns as f64 / 1e9;
    let migrations_per_s =
        rtscope_model::taskset::set_rate(tasks.iter().map(|t| t.migrations), secs);
    let context_switches_per_s = rtscope_model::taskset::set_rate(
        tasks.iter().map(|t| {
            t.voluntary_switches
                .zip(t.involuntary_switches)
                .map(|(a, b)| a + b)
        }),
        secs,
    );
    Ok(TasksetResult {
        config: TasksetRunConfig {
            policy: plan.policy.clone(),
            priorities: plan.priorities.clone(),
            placement: plan.placement.clone(),
            runtime_margin: plan.margin,
            duration_s: opts.duration_ns as f64 / 1e9,
            wss_bytes: opts.wss_bytes,
            access: opts.access.name().into(),
            inflate_ns: opts.inflate_ns,
            source: opts.source.clone(),
            work: if opts.work_by_cputime {
                "cputime"
            } else {
                "calibrated"
            }
            .into(),
        },
        set: set.clone(),
        calibration,
        admission,
        predictions,
        tasks,
        total_jobs,
        total_misses,
        miss_pct: rtscope_model::taskset::miss_pct(total_misses, total_jobs),
        total_dl_overruns: total_ovr,
        measured_utilisation: mu,
        migrations_per_s,
        context_switches_per_s,
        any_miss: total_misses > 0,
        interrupted,
        warnings,
        rt_app: None,
    })
}

/// EBUSY from sched_setattr(SCHED_DEADLINE), explained with the bandwidth arithmetic of the root
/// domain the task was going into.
pub fn explain_ebusy(plan: &RunPlan, i: usize, adm: &AdmissionInfo, lim: KernelLimits) -> String {
    let spec = &plan.specs[i];
    let (q, p) = match spec.policy {
        ThreadPolicy::Deadline {
            runtime_ns,
            period_ns,
            ..
        } => (runtime_ns, period_ns),
        _ => (0, 1),
    };
    let scope = plan.scopes.iter().find(|(_, _, idx)| idx.contains(&i));
    let (name, m, asked) = match scope {
        Some((name, cpus, idx)) => {
            let asked: f64 = idx
                .iter()
                .filter_map(|&j| match plan.specs[j].policy {
                    ThreadPolicy::Deadline {
                        runtime_ns,
                        period_ns,
                        ..
                    } => Some(runtime_ns as f64 / period_ns as f64),
                    _ => None,
                })
                .sum();
            (name.clone(), cpus.len() as u32, asked)
        }
        None => ("all".into(), adm.cpus, 0.0),
    };
    let others = if plan.groups.is_empty() {
        lim.other_bandwidth
    } else {
        0.0
    };
    let cap = (lim.limit_per_cpu - lim.fair_server_per_cpu) * m as f64 - others;
    format!(
        "SCHED_DEADLINE admission refused (EBUSY) for task {} (runtime {:.3} ms / period {:.3} ms = {:.4}) in root domain {name}: this run asks Σ Q/P = {asked:.4} there; the kernel admits ({:.3} sched_rt_runtime/period − {:.3} fair server) × {m} CPU − {others:.4} held by other DEADLINE threads or unaccounted = {cap:.4}. Lower {MARGIN}, the utilisation, or raise /proc/sys/kernel/sched_rt_runtime_us",
        spec.task.id,
        q as f64 / 1e6,
        p as f64 / 1e6,
        q as f64 / p as f64,
        lim.limit_per_cpu,
        lim.fair_server_per_cpu,
    )
}
