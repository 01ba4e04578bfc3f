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
    /// Every task in this cgroup-v2 directory, those moved into it later included.
    Cgroup(std::path::PathBuf),
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
    /// Run through `sh -c` when an activation exceeds `threshold_us` (rate-limited: see
    /// [`OnThreshold`]).
    pub on_threshold: Option<String>,
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

/// A cgroup-v2 directory's id (the kernel's `kn->id` is the directory's inode number), and the
/// processes in it now.
fn cgroup_target(path: &std::path::Path) -> Result<(u64, Vec<u32>), VerbError> {
    use std::os::unix::fs::MetadataExt;
    let bad = |m: String| refuse(Field::WatchCgroup, m);
    let md = std::fs::metadata(path)
        .map_err(|e| bad(format!("{}: {e} (a cgroup-v2 directory)", path.display())))?;
    // cgroup.controllers exists only in cgroup v2 directories.
    if !md.is_dir() || !path.join("cgroup.controllers").exists() {
        return Err(bad(format!(
            "{}: not a cgroup-v2 directory (e.g. /sys/fs/cgroup/…, or /sys/fs/cgroup/unified/… \
             on a hybrid hierarchy)",
            path.display()
        )));
    }
    let procs = std::fs::read_to_string(path.join("cgroup.procs"))
        .map_err(|e| bad(format!("{}/cgroup.procs: {e}", path.display())))?;
    let mut tg: Vec<u32> = procs
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    if tg.contains(&std::process::id()) {
        return Err(bad(format!(
            "{}: this rtscope process is in that cgroup: it would watch its own capture",
            path.display()
        )));
    }
    tg.sort_unstable();
    Ok((md.ino(), tg))
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
        Target::Cgroup(p) => cgroup_target(p).map(|(_, tg)| tg),
    }
}

/// Least time between two `--on-threshold` commands.
pub const ON_THRESHOLD_GAP: Duration = Duration::from_secs(1);

/// `--on-threshold CMD`: the command run when an activation exceeds the threshold, at most once
/// per [`ON_THRESHOLD_GAP`] and never while the previous one still runs; the activations above
/// the threshold skipped meanwhile are counted and handed to the next run. The command is
/// spawned and reaped later: the capture never waits for it.
///
/// Its environment: `RTSCOPE_LATENCY_US` (the activation's latency, µs with 3 decimals),
/// `RTSCOPE_LATENCY_NS`, `RTSCOPE_THRESHOLD_US`, `RTSCOPE_TID`, `RTSCOPE_COMM`, `RTSCOPE_CPU`,
/// `RTSCOPE_EXPECTED_NS` (CLOCK_MONOTONIC of its expected start), `RTSCOPE_SKIPPED`.
pub struct OnThreshold {
    cmd: String,
    threshold_ns: u64,
    last: Option<Instant>,
    running: Option<std::process::Child>,
    skipped: u64,
    /// Commands started, and activations above the threshold that started none.
    pub started: u64,
    pub skipped_total: u64,
}

impl OnThreshold {
    pub fn new(cmd: String, threshold_ns: u64) -> OnThreshold {
        OnThreshold {
            cmd,
            threshold_ns,
            last: None,
            running: None,
            skipped: 0,
            started: 0,
            skipped_total: 0,
        }
    }

    /// Reap a finished command; true when one may start at `now`.
    fn ready(&mut self, now: Instant) -> bool {
        if let Some(c) = self.running.as_mut() {
            match c.try_wait() {
                Ok(None) => return false,
                _ => self.running = None,
            }
        }
        self.last
            .is_none_or(|t| now.duration_since(t) >= ON_THRESHOLD_GAP)
    }

    /// The activations of one step: the worst one above the threshold starts the command when
    /// the rate limit allows, the others are counted as skipped.
    pub fn offer(&mut self, now: Instant, samples: &[RawSample], comm: &dyn Fn(u32) -> String) {
        let above: Vec<&RawSample> = samples
            .iter()
            .filter(|s| s.latency_ns > self.threshold_ns)
            .collect();
        let Some(worst) = above.iter().max_by_key(|s| s.latency_ns) else {
            return;
        };
        if !self.ready(now) {
            self.skipped += above.len() as u64;
            self.skipped_total += above.len() as u64;
            return;
        }
        let skipped = self.skipped + above.len() as u64 - 1;
        let spawned = std::process::Command::new("sh")
            .arg("-c")
            .arg(&self.cmd)
            .stdin(std::process::Stdio::null())
            .env(
                "RTSCOPE_LATENCY_US",
                format!("{:.3}", worst.latency_ns as f64 / 1000.0),
            )
            .env("RTSCOPE_LATENCY_NS", worst.latency_ns.to_string())
            .env(
                "RTSCOPE_THRESHOLD_US",
                format!("{:.3}", self.threshold_ns as f64 / 1000.0),
            )
            .env("RTSCOPE_TID", worst.tid.to_string())
            .env("RTSCOPE_COMM", comm(worst.tid))
            .env("RTSCOPE_CPU", worst.cpu.to_string())
            .env("RTSCOPE_EXPECTED_NS", worst.expected_ns.to_string())
            .env("RTSCOPE_SKIPPED", skipped.to_string())
            .spawn();
        self.last = Some(now);
        match spawned {
            Ok(c) => {
                self.running = Some(c);
                self.started += 1;
                self.skipped = 0;
                self.skipped_total += above.len() as u64 - 1;
            }
            Err(e) => {
                eprintln!("rtscope: the threshold command: cannot start sh: {e}");
                self.skipped += above.len() as u64;
                self.skipped_total += above.len() as u64;
            }
        }
    }

    /// The end of the watch: the command still running is waited for (it was started by the
    /// watch and is reaped by it).
    pub fn finish(&mut self) {
        if let Some(mut c) = self.running.take() {
            let _ = c.wait();
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
            // An activation starts at a switch-in, or at a wake-up of a thread still on its CPU.
            if self.engine.started() > before {
                if let Some(a) = self.engine.current(e.tid).cloned() {
                    let t = self.thread(e.tid, a.cpu);
                    t.recorder.cpu = a.cpu;
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
            if let WatchKind::Exit = e.kind {
                if let Some(t) = self.threads.get_mut(&e.tid) {
                    t.sums.exited = true;
                }
            }
        }
        for tid in self.engine.take_unseen() {
            let cpu = self.threads.get(&tid).map_or(0, |t| t.recorder.cpu);
            self.thread(tid, cpu).sums.unseen += 1;
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
    let cgroup_id = match &p.target {
        Target::Cgroup(path) => Some(cgroup_target(path)?.0),
        _ => None,
    };
    if let Some(c) = &p.on_threshold {
        if c.trim().is_empty() {
            return Err(refuse(
                Field::WatchOnThreshold,
                "an empty command (a shell command line, run with sh -c)".into(),
            ));
        }
        if p.threshold_us.is_none() {
            return Err(refuse(
                Field::WatchOnThreshold,
                "needs a threshold: the latency above which the command runs".into(),
            ));
        }
    }
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
        Target::Cgroup(path) => format!("cgroup {}", path.display()),
    };
    let on_threshold = p
        .on_threshold
        .clone()
        .zip(p.threshold_us)
        .map(|(c, t)| OnThreshold::new(c, t.saturating_mul(1000)));
    run_tool(WatchTool {
        plan: p,
        cgroup_id,
        on_threshold,
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
    cgroup_id: Option<u64>,
    on_threshold: Option<OnThreshold>,
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
        if let Some(o) = self.on_threshold.as_mut() {
            let comm = |t: u32| rtscope_trace::sys::comm_of(t).unwrap_or_else(|| format!("tid{t}"));
            o.offer(Instant::now(), &samples, &comm);
        }
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
            cgroup_id: self.cgroup_id,
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
            // A cgroup may be empty now and filled later: it ends with -D or a signal.
            None if self.cgroup_id.is_some() => false,
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
        if let Some(o) = self.on_threshold.as_mut() {
            o.finish();
            if o.skipped_total > 0 {
                self.warnings.push(Warning::new(
                    WarningCode::Other,
                    format!(
                        "the threshold command ran {} time(s); {} activation(s) above the threshold \
                         came within {ON_THRESHOLD_GAP:?} of a run (or while it ran) and ran \
                         nothing",
                        o.started, o.skipped_total
                    ),
                ));
            }
        }
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
            interval_us: self.plan.period_ns.map_or(0, |p| p / 1000),
            duration_s: self.plan.duration.map(|d| d.as_secs_f64()),
            threshold_us: self.plan.threshold_us,
            worst_n: self.plan.worst_n,
            linear_max_us: LINEAR_MAX_US,
            trace: if self.plan.explain { "bpf" } else { "off" }.into(),
            // No housekeeping CPUs: watch runs no threads of its own to keep off the target's
            // CPUs.
            ..Default::default()
        };
        let mut warnings = self.warnings.clone();
        warnings.extend(work.leftovers().iter().cloned());
        let unseen: u64 = watch.threads.iter().map(|t| t.unseen_activations).sum();
        if unseen > 0 {
            warnings.push(Warning::new(
                WarningCode::Trace,
                format!(
                    "{unseen} activation(s) of the watched threads were counted but not measured: \
                     the kernel reported no wake-up or switch-in for them (docs/watch.md)"
                ),
            ));
        }
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

    fn sample(tid: u32, latency_ns: u64) -> RawSample {
        RawSample {
            cpu: 1,
            tid,
            cycle: 0,
            expected_ns: 5_000,
            latency_ns,
        }
    }

    #[test]
    fn on_threshold_runs_the_worst_activation_rate_limited_and_counts_the_skipped() {
        let dir = std::env::temp_dir().join(format!("rtscope-onthr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let log = dir.join("log");
        let cmd = format!(
            "echo \"$RTSCOPE_LATENCY_US $RTSCOPE_LATENCY_NS $RTSCOPE_TID $RTSCOPE_COMM \
             $RTSCOPE_CPU $RTSCOPE_THRESHOLD_US $RTSCOPE_SKIPPED\" >> {}",
            log.display()
        );
        let mut o = OnThreshold::new(cmd, 50_000);
        let comm = |t: u32| format!("t{t}");
        let t0 = Instant::now();
        // Below the threshold: nothing.
        o.offer(t0, &[sample(7, 50_000)], &comm);
        assert_eq!(o.started, 0);
        // Two above: the worst runs, the other is skipped.
        o.offer(t0, &[sample(7, 60_000), sample(8, 75_500)], &comm);
        assert_eq!((o.started, o.skipped_total), (1, 1));
        // Within the gap: skipped, whatever the value.
        o.offer(t0 + Duration::from_millis(10), &[sample(7, 900_000)], &comm);
        assert_eq!((o.started, o.skipped_total), (1, 2));
        o.finish();
        // After the gap: runs again, told of the one skipped since.
        o.offer(t0 + ON_THRESHOLD_GAP, &[sample(9, 51_000)], &comm);
        o.finish();
        assert_eq!((o.started, o.skipped_total), (2, 2));
        let text = std::fs::read_to_string(&log).expect("the command ran");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "75.500 75500 8 t8 1 50.000 1",
                "51.000 51000 9 t9 1 50.000 1"
            ],
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn on_threshold_waits_for_the_previous_command_however_long_ago_it_started() {
        let mut o = OnThreshold::new("sleep 0.3".into(), 1);
        let comm = |t: u32| format!("t{t}");
        let t0 = Instant::now();
        o.offer(t0, &[sample(1, 10)], &comm);
        // The gap has passed but the first command still runs: skipped.
        o.offer(t0 + ON_THRESHOLD_GAP * 2, &[sample(1, 10)], &comm);
        assert_eq!((o.started, o.skipped_total), (1, 1));
        o.finish();
        o.offer(t0 + ON_THRESHOLD_GAP * 3, &[sample(1, 10)], &comm);
        o.finish();
        assert_eq!(o.started, 2);
    }

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
        let e = resolve_target(&Target::Cgroup("/tmp".into())).expect_err("not a cgroup");
        assert!(e.to_string().contains("not a cgroup-v2 directory"), "{e}");
        let e = resolve_target(&Target::Cgroup("/no/such/cgroup".into())).expect_err("none");
        assert!(matches!(
            e,
            VerbError::Field {
                field: Field::WatchCgroup,
                ..
            }
        ));
        // pid 1 is a user process (init).
        assert_eq!(resolve_target(&Target::Pids(vec![1])).ok(), Some(vec![1]));
    }
}
