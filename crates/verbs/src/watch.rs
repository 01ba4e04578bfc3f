//! `rtscope watch (--pid PID… | --comm NAME | -- CMD ARGS…)`: the latency of an unmodified
//! process's threads, measured from the kernel (`rtscope_trace::watch`, filtered on its TGID
//! in the kernel) and explained by the same attribution as `measure --trace`.
//!
//! Each activation of a watched thread (a wake-up, the run that follows, the sleep that ends it;
//! `rtscope_analysis::watch`) gives: the wake-up latency (sched_waking → switched in), the timer
//! lateness where an hrtimer woke it (the timer's soft expiry → switched in: cyclictest's latency
//! seen from outside), its run time, its period and jitter, and the preemptions it suffered.
//! The activation latency (timer lateness, else wake-up latency) is the measurement's sample:
//! it fills the threads' exact histograms, worst-N and `--threshold` lists, and is explained
//! from a capture of every CPU, so `show`, `compare` and `report` read a watch like a measure.
//!
//! [`Watcher`] is the engine alone, for other verbs (rt-app's jobs): started on a list of
//! thread groups, stepped, finished into each thread's activations.

use crate::input::{Field, VerbError};
use crate::outputs::RecordOutputs;
use crate::tool::Work;
use rtscope_analysis::watch::{Engine, ThreadSums};
use rtscope_model::watch::{Activation, WatchEvent, WatchKind, WatchResult};
use rtscope_model::{RawSample, RunRecord, Warning, WarningCode};
use rtscope_probe::recorder::Recorder;
use rtscope_session::stream::Explain;
use rtscope_session::tool::{run_tool, Flow, Tool};
use rtscope_trace::watch::{WatchCapture, WatchSpec};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What to watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Processes or threads by id (a thread id stands for its whole process).
    Pids(Vec<u32>),
    /// Every process of this name, those that start later included.
    Comm(String),
    /// A command started by the watch, and its children.
    Command(Vec<String>),
}

/// `watch`'s resolved flags.
#[derive(Clone, Debug)]
pub struct WatchPlan {
    pub target: Target,
    /// Until the target exits or a stop signal when absent.
    pub duration: Option<Duration>,
    /// The nominal period jitter is measured against (else each thread's median period).
    pub period_ns: Option<u64>,
    /// Every activation above this is kept with its explanation.
    pub threshold_us: Option<u64>,
    /// Worst activations kept per thread, with their timelines.
    pub worst_n: usize,
    /// Capture every CPU's events to explain the activations (off: the watched threads' own
    /// events only).
    pub explain: bool,
}

/// Largest samples list kept above `--threshold` per thread.
const ABOVE_CAP: usize = 100_000;
/// Linear histogram range (µs), as `measure`'s default.
const LINEAR_MAX_US: u32 = 10_000;
/// Between steps.
const STEP: Duration = Duration::from_millis(20);

/// One watched process found at the start.
fn tgid_of(pid: u32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A kernel thread (PF_KTHREAD in /proc/PID/stat's flags): it has no user code to watch.
fn is_kernel_thread(pid: u32) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The comm (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    let Some(rest) = s.rsplit_once(')').map(|(_, r)| r) else {
        return false;
    };
    // rest: " state ppid pgrp session tty_nr tpgid flags …" — flags is the 7th.
    rest.split_whitespace()
        .nth(6)
        .and_then(|f| f.parse::<u64>().ok())
        .is_some_and(|f| f & PF_KTHREAD != 0)
}

/// A process is gone once /proc has no entry or only its zombie.
fn alive(tgid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{tgid}/status")) {
        Ok(s) => !s
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
        Err(_) => false,
    }
}

/// The processes named `comm` now (exact match, as the kernel truncates names to 15 bytes).
fn processes_named(comm: &str) -> Vec<u32> {
    let me = std::process::id();
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if pid != me && rtscope_trace::sys::comm_of(pid).as_deref() == Some(comm) {
                v.push(pid);
            }
        }
    }
    v.sort_unstable();
    v
}

fn refuse(field: Field, msg: String) -> VerbError {
    VerbError::Field { field, msg }
}

/// The target checked and resolved into thread groups before anything starts.
pub fn resolve_target(t: &Target) -> Result<Vec<u32>, VerbError> {
    match t {
        Target::Pids(pids) => {
            let me = std::process::id();
            let mut tg = Vec::new();
            for &p in pids {
                let Some(g) = tgid_of(p) else {
                    return Err(refuse(Field::WatchPid, format!("no process or thread {p}")));
                };
                if g == me {
                    return Err(refuse(
                        Field::WatchPid,
                        format!("{p} is this rtscope process: it would watch its own capture"),
                    ));
                }
                if is_kernel_thread(p) {
                    return Err(refuse(
                        Field::WatchPid,
                        format!(
                            "{p} is a kernel thread: watch user processes (a kernel thread's \
                             work shows in the attribution of the threads it delays)"
                        ),
                    ));
                }
                tg.push(g);
            }
            tg.sort_unstable();
            tg.dedup();
            Ok(tg)
        }
        Target::Comm(c) => {
            if c.is_empty() || c.len() > 15 {
                return Err(refuse(
                    Field::WatchComm,
                    format!("{c:?}: a task name is 1..=15 bytes (the kernel's comm)"),
                ));
            }
            let v = processes_named(c);
            if v.is_empty() {
                return Err(refuse(Field::WatchComm, format!("no process named {c:?}")));
            }
            Ok(v)
        }
        Target::Command(cmd) => {
            if cmd.is_empty() {
                return Err(refuse(Field::WatchCommand, "no command given".into()));
            }
            Ok(Vec::new())
        }
    }
}

/// Per watched thread: the measurement's recorder and the watch's own sums.
struct PerThread {
    recorder: Recorder,
    sums: ThreadSums,
    comm: String,
}

/// The watch engine on its own: the capture, the activations, the per-thread sums.
pub struct Watcher {
    capture: WatchCapture,
    engine: Engine,
    threads: BTreeMap<u32, PerThread>,
    worst_n: usize,
    threshold_ns: Option<u64>,
    tgids: Vec<u32>,
    events: Vec<WatchEvent>,
    /// Finished activations not yet taken by [`Watcher::take_finished`].
    finished: Vec<Activation>,
    keep_finished: bool,
}

impl Watcher {
    /// Attach to the thread groups in `spec`. `keep_finished`: keep every finished activation
    /// for [`Watcher::take_finished`] (a caller that needs them one by one, e.g. rt-app's jobs).
    pub fn start(
        spec: &WatchSpec,
        worst_n: usize,
        threshold_ns: Option<u64>,
        keep_finished: bool,
    ) -> Result<Watcher, String> {
        let capture = WatchCapture::attach(spec)?;
        Ok(Watcher {
            capture,
            engine: Engine::new(),
            threads: BTreeMap::new(),
            worst_n,
            threshold_ns,
            tgids: spec.tgids.clone(),
            events: Vec::new(),
            finished: Vec::new(),
            keep_finished,
        })
    }

    /// Add a thread group (a command started after the watch attached).
    pub fn add_tgid(&mut self, tgid: u32) -> Result<(), String> {
        self.capture.add_tgid(tgid)?;
        self.tgids.push(tgid);
        Ok(())
    }

    fn thread(&mut self, tid: u32, cpu: u32) -> &mut PerThread {
        let (worst_n, thr) = (self.worst_n, self.threshold_ns);
        self.threads.entry(tid).or_insert_with(|| PerThread {
            recorder: Recorder::new(cpu, tid, LINEAR_MAX_US, worst_n, thr, ABOVE_CAP),
            sums: ThreadSums::default(),
            comm: rtscope_trace::sys::comm_of(tid).unwrap_or_else(|| format!("tid{tid}")),
        })
    }

    /// Events up to `now_ns` − the capture's margin into activations. Returns the samples of
    /// the activations that started (for the explanation) and the earliest expected start an
    /// activation still to come may have.
    pub fn step(&mut self, now_ns: u64, samples: &mut Vec<RawSample>) -> u64 {
        let mut events = std::mem::take(&mut self.events);
        self.capture.poll(now_ns, &mut events);
        self.consume(&events, samples);
        events.clear();
        self.events = events;
        now_ns.saturating_sub(rtscope_trace::watch::MARGIN_NS)
    }

    fn consume(&mut self, events: &[WatchEvent], samples: &mut Vec<RawSample>) {
        let mut done = Vec::new();
        for e in events {
            let before = self.engine.started();
            self.engine.push(e, &mut done);
            if let WatchKind::SwitchIn { .. } = e.kind {
                if self.engine.started() > before {
                    if let Some(a) = self.engine.current(e.tid).cloned() {
                        let t = self.thread(e.tid, e.cpu);
                        t.recorder.cpu = e.cpu;
                        t.recorder.record(a.expected_ns(), a.latency_ns());
                        samples.push(RawSample {
                            cpu: a.cpu,
                            tid: a.tid,
                            cycle: a.index,
                            expected_ns: a.expected_ns(),
                            latency_ns: a.latency_ns(),
                        });
                    }
                }
            }
            if let WatchKind::Exit = e.kind {
                if let Some(t) = self.threads.get_mut(&e.tid) {
                    t.sums.exited = true;
                }
            }
        }
        for a in done {
            self.thread(a.tid, a.cpu).sums.add(&a);
            if self.keep_finished {
                self.finished.push(a);
            }
        }
    }

    /// The finished activations kept since the last call.
    pub fn take_finished(&mut self) -> Vec<Activation> {
        std::mem::take(&mut self.finished)
    }

    /// The thread groups watched now.
    pub fn tgids(&self) -> Vec<u32> {
        self.capture.tgids()
    }

    /// Detach-free end: every event read, activations still running handed on unfinished.
    pub fn finish(&mut self, end_ns: u64, samples: &mut Vec<RawSample>) {
        let mut events = Vec::new();
        self.capture.drain_all(&mut events);
        self.consume(&events, samples);
        let mut open = Vec::new();
        self.engine.finish(end_ns, &mut open);
        for a in open {
            self.thread(a.tid, a.cpu).sums.add(&a);
            if self.keep_finished {
                self.finished.push(a);
            }
        }
    }

    /// The per-thread result; `comm` names other tasks (preemptors).
    pub fn result(
        &self,
        target: &str,
        period_ns: Option<u64>,
        comm: &dyn Fn(u32) -> String,
    ) -> WatchResult {
        let threads = self
            .threads
            .iter()
            .map(|(&tid, t)| {
                let mut r = t.sums.result(tid, period_ns, comm);
                r.comm = t.comm.clone();
                r
            })
            .collect();
        let mut tgids = self.capture.tgids();
        tgids.extend(&self.tgids);
        tgids.sort_unstable();
        tgids.dedup();
        WatchResult {
            target_exited: !tgids.is_empty() && !tgids.iter().any(|&t| alive(t)),
            tgids,
            target: target.to_string(),
            threads,
            dropped_events: self.capture.dropped(),
        }
    }
}

/// `rtscope watch`: resolve the target (bad input exits 2 before anything starts), then watch
/// it through the one lifecycle.
pub fn run(p: &WatchPlan, out: &RecordOutputs) -> Result<(), VerbError> {
    let tgids = resolve_target(&p.target)?;
    let tags = out.validate()?;
    let cpus = rtscope_sys::affinity::online_cpus_or_all();
    let target = match &p.target {
        Target::Pids(v) => format!(
            "process {}",
            v.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        Target::Comm(c) => format!("processes named {c}"),
        Target::Command(c) => format!("command {}", c.join(" ")),
    };
    run_tool(WatchTool {
        plan: p,
        out,
        tags,
        tgids,
        cpus,
        target,
        watcher: None,
        child: None,
        capture: None,
        explain: None,
        started: None,
        stop: false,
        exited: false,
        end_ns: 0,
        warnings: Vec::new(),
    })
}

struct WatchTool<'a> {
    plan: &'a WatchPlan,
    out: &'a RecordOutputs,
    tags: BTreeMap<String, String>,
    tgids: Vec<u32>,
    cpus: Vec<u32>,
    target: String,
    watcher: Option<Watcher>,
    child: Option<std::process::Child>,
    capture: Option<rtscope_trace::TraceSession>,
    explain: Option<Explain>,
    started: Option<Instant>,
    stop: bool,
    exited: bool,
    end_ns: u64,
    warnings: Vec<Warning>,
}

impl WatchTool<'_> {
    fn tick(&mut self, last: bool) -> Result<(), VerbError> {
        let now = rtscope_sys::clock::monotonic_ns();
        let mut samples = Vec::new();
        let Some(w) = self.watcher.as_mut() else {
            return Ok(());
        };
        let floor = if last {
            w.finish(now, &mut samples);
            u64::MAX
        } else {
            w.step(now, &mut samples)
        };
        if let (Some(x), Some(c)) = (self.explain.as_mut(), self.capture.as_mut()) {
            let mut events = Vec::new();
            c.poll(&mut events)
                .map_err(|e| VerbError::context("the explaining capture", e))?;
            let wm = c.watermark_ns().min(floor);
            x.set_sample_floor(floor.min(now));
            x.tick(&samples, &events, wm, c)
                .map_err(|e| VerbError::context("explaining the activations", e))?;
        }
        Ok(())
    }
}

impl Tool for WatchTool<'_> {
    type Output = ();

    fn begin(&self) -> crate::tool::Begin {
        crate::tool::Begin::live(
            "watch",
            crate::privilege::Need::Root,
            "it attaches eBPF programs to the scheduler's tracepoints",
        )
    }

    fn start(&mut self, _w: &Work) -> Result<(), VerbError> {
        let spec = WatchSpec {
            tgids: self.tgids.clone(),
            comm: match &self.plan.target {
                Target::Comm(c) => Some(c.clone()),
                _ => None,
            },
            follow_children: matches!(self.plan.target, Target::Command(_)),
        };
        // The explaining capture first: a window's context must be there when its activation is.
        if self.plan.explain {
            let c = rtscope_trace::TraceSession::start_with(
                &self.cpus,
                rtscope_trace::Mechanism::Bpf,
                rtscope_trace::Keep::All,
            )
            .map_err(|e| VerbError::context("starting the explaining capture", e))?;
            self.explain = Some(Explain::offline(
                &self.cpus,
                self.plan.worst_n,
                self.plan.threshold_us.map(|u| u * 1000),
                None,
                self.plan.duration.map(|d| d.as_secs_f64()),
            ));
            self.capture = Some(c);
        }
        let mut w = Watcher::start(
            &spec,
            self.plan.worst_n,
            self.plan.threshold_us.map(|u| u * 1000),
            false,
        )
        .map_err(VerbError::failed)?;
        if let Target::Command(cmd) = &self.plan.target {
            // Started once the programs are attached: its threads are watched from their first
            // wake-up (a new thread's first run, which no wake-up precedes, is not an activation).
            let child = std::process::Command::new(&cmd[0])
                .args(&cmd[1..])
                .spawn()
                .map_err(|e| {
                    refuse(
                        Field::WatchCommand,
                        format!("cannot start {:?}: {e}", cmd[0]),
                    )
                })?;
            w.add_tgid(child.id()).map_err(VerbError::failed)?;
            self.tgids.push(child.id());
            self.child = Some(child);
        }
        self.watcher = Some(w);
        self.started = Some(Instant::now());
        if !self.out.quiet {
            match self.plan.duration {
                Some(d) => eprintln!("rtscope: watching {} for {d:?} (Ctrl-C stops)", self.target),
                None => eprintln!("rtscope: watching {} until it exits or Ctrl-C", self.target),
            }
        }
        Ok(())
    }

    fn step(&mut self, _w: &Work) -> Result<Flow, VerbError> {
        let up = self.started.map(|t| t.elapsed()).unwrap_or_default();
        if self.stop || self.plan.duration.is_some_and(|d| up >= d) {
            return Ok(Flow::Done);
        }
        let gone = match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(Some(_))),
            None => !self.tgids.iter().any(|&t| alive(t)),
        };
        // With --comm a process of that name may still start: only the ones watched count.
        let gone = gone
            && self
                .watcher
                .as_ref()
                .is_none_or(|w| !w.tgids().iter().any(|&t| alive(t)));
        if gone {
            self.exited = true;
            return Ok(Flow::Done);
        }
        self.tick(false)?;
        if let Some(w) = self.watcher.as_ref() {
            w.capture.wait(STEP);
        }
        Ok(Flow::Continue)
    }

    fn request_stop(&mut self) {
        self.stop = true;
    }

    fn stop(&mut self, _w: &Work) -> Result<(), VerbError> {
        self.end_ns = rtscope_sys::clock::monotonic_ns();
        self.tick(true)?;
        if let Some(mut c) = self.child.take() {
            // The command watched is the user's: on a stop before it ended it gets SIGTERM's
            // equivalent from std (kill), and is reaped.
            if !self.exited {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
        if self.exited {
            self.warnings.push(Warning::new(
                WarningCode::ThreadStopped,
                format!(
                    "target exited: {} ended during the watch; everything up to its end is kept",
                    self.target
                ),
            ));
        }
        Ok(())
    }

    fn record(&mut self, work: &Work) -> Result<Option<RunRecord>, VerbError> {
        let Some(w) = self.watcher.as_ref() else {
            return Ok(None);
        };
        let comms = self.capture.as_mut().map(|c| c.comms()).unwrap_or_default();
        let name = |t: u32| {
            comms
                .get(&t)
                .cloned()
                .or_else(|| rtscope_trace::sys::comm_of(t))
                .unwrap_or_else(|| format!("pid{t}"))
        };
        let mut watch = w.result(&self.target, self.plan.period_ns, &name);
        watch.target_exited |= self.exited;
        let mut threads_in = Vec::new();
        for (i, (tid, t)) in w.threads.iter().enumerate() {
            let (policy, prio) = match rtscope_sys::sched::get_scheduler(*tid as i32) {
                Ok(p) => (
                    rtscope_sys::sched::policy_name(p.policy).to_string(),
                    p.priority,
                ),
                Err(_) => ("exited".to_string(), 0),
            };
            threads_in.push(crate::record::ThreadIn {
                index: i as u32,
                cpu: t.recorder.cpu,
                recorder: &t.recorder,
                observed_policy: policy,
                observed_priority: prio,
                error: None,
            });
        }
        // The measurement's policy is the watched threads' most common one.
        let policy = {
            let mut n: BTreeMap<&str, usize> = BTreeMap::new();
            for t in &threads_in {
                *n.entry(t.observed_policy.as_str()).or_default() += 1;
            }
            match n.into_iter().max_by_key(|(_, c)| *c).map(|(p, _)| p) {
                Some("fifo") => rtscope_model::Policy::Fifo,
                Some("rr") => rtscope_model::Policy::Rr,
                Some("deadline") => rtscope_model::Policy::Deadline,
                _ => rtscope_model::Policy::Other,
            }
        };
        // Threads that ran under another policy are the target's, not a failed request.
        for t in threads_in.iter_mut() {
            if t.observed_policy == "exited" {
                t.observed_policy = policy.name().into();
            }
        }
        let config = rtscope_model::RunConfig {
            cpus: self.cpus.clone(),
            policy,
            priority: threads_in
                .iter()
                .map(|t| t.observed_priority.max(0) as u32)
                .max()
                .unwrap_or(0),
            nice: 0,
            deadline: None,
            interval_us: self.plan.period_ns.map_or(0, |p| p / 1000),
            distance_us: 0,
            aligned: false,
            duration_s: self.plan.duration.map(|d| d.as_secs_f64()),
            loops: None,
            timer: rtscope_model::TimerMode::AbsNanosleep,
            clock: rtscope_model::ClockId::Monotonic,
            hold_cpu_dma_latency: false,
            break_above_us: None,
            threshold_us: self.plan.threshold_us,
            worst_n: self.plan.worst_n,
            linear_max_us: LINEAR_MAX_US,
            loads: Vec::new(),
            trace: if self.plan.explain { "bpf" } else { "off" }.into(),
            trace_bursts: None,
            // watch runs no threads of its own to keep off the target's CPUs.
            housekeeping_cpus: Vec::new(),
        };
        let mut warnings = self.warnings.clone();
        warnings.extend(work.leftovers().iter().cloned());
        if watch.dropped_events > 0 {
            warnings.push(Warning::new(
                WarningCode::LostEvents,
                format!(
                    "{} scheduling events of the watched threads were dropped: activations are missing",
                    watch.dropped_events
                ),
            ));
        }
        let id = crate::record::new_run_id();
        let cmdline = crate::record::cmdline();
        let interrupted = self.stop;
        let mut rec = crate::record::build(
            crate::record::RecordIn {
                id: &id,
                verb: "watch",
                cmdline: &cmdline,
                tags: &self.tags,
                config: &config,
                warnings: &warnings,
                system: rtscope_probe::system::capture(&self.cpus),
                hygiene: rtscope_model::Hygiene {
                    notes: vec![format!(
                        "watched from the kernel (eBPF, filtered on the thread group): {}; the threads' policies are their own",
                        self.target
                    )],
                    ..Default::default()
                },
                started_at: crate::record::rfc3339(work.started),
                wall_s: work.wall_s(),
                end_reason: if interrupted {
                    rtscope_model::EndReason::Interrupted
                } else {
                    rtscope_model::EndReason::Completed
                },
                break_sample: None,
                stop_signal: interrupted.then_some("a stop signal"),
            },
            &threads_in,
        );
        if let (Some(x), Some(c)) = (self.explain.take(), self.capture.take()) {
            let cap = c
                .finish()
                .map_err(|e| VerbError::context("ending the explaining capture", e))?;
            x.finish(Some(cap), &mut rec)
                .map_err(|e| VerbError::context("explaining the activations", e))?;
        }
        if let Some(m) = rec.measurement_mut() {
            m.watch = Some(watch);
        }
        Ok(Some(rec))
    }

    fn outputs(self, _w: &Work, rec: Option<RunRecord>) -> Result<(), VerbError> {
        let Some(rec) = rec else {
            return Ok(());
        };
        if self.out.text() {
            print!("{}", rtscope_report::text::summary(&rec));
        }
        self.out.emit(&rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_targets_are_refused_before_anything_starts() {
        let me = std::process::id();
        let e = resolve_target(&Target::Pids(vec![me])).expect_err("self");
        assert!(e.to_string().contains("this rtscope process"), "{e}");
        // pid 2 is kthreadd on every Linux.
        let e = resolve_target(&Target::Pids(vec![2])).expect_err("kthread");
        assert!(e.to_string().contains("kernel thread"), "{e}");
        let e = resolve_target(&Target::Pids(vec![u32::MAX - 1])).expect_err("none");
        assert!(e.to_string().contains("no process or thread"), "{e}");
        let e = resolve_target(&Target::Comm("no-such-name-x".into())).expect_err("none");
        assert!(e.to_string().contains("no process named"), "{e}");
        let e = resolve_target(&Target::Comm("a-name-longer-than-15".into())).expect_err("long");
        assert!(e.to_string().contains("1..=15"), "{e}");
        assert!(matches!(
            resolve_target(&Target::Command(vec![])),
            Err(VerbError::Field {
                field: Field::WatchCommand,
                ..
            })
        ));
        // pid 1 is a user process (init).
        assert_eq!(resolve_target(&Target::Pids(vec![1])).ok(), Some(vec![1]));
    }
}
