//! Per-sample cause attribution. Pure: events and samples in, explanations out.
//!
//! For a sample on CPU c with planned wake-up E and user-space resume R = E + latency, the window
//! [E, R) is cut into the phases of a timer wake-up (seed de-oliveira-2020 §3–4: the thread is
//! woken by the timer IRQ handler, the scheduler is called on the way out of the IRQ, then the
//! context switch and the return to user space):
//!
//! ```text
//!  E ──A: timer IRQ delay──▶ entry ──B: timer handler──▶ exit ──C: wakeup→switch──▶ switch-in ──D: return──▶ R
//!                                          (sched_waking tid inside B)
//! ```
//! A is "timer IRQ delay" (idle exit when the CPU was idle; otherwise IRQs off in whatever ran or
//! timer delivery latency),
//! B the handler that woke the thread, C the scheduling delay and the threads that ran meanwhile
//! (preempting: higher priority; blocking: lower priority in a non-preemptible section), D the
//! switch → return to user space. Laid over all phases: every other IRQ, softirq, vector and NMI
//! that ran inside the window is charged to itself by name (innermost context wins), and any
//! stretch inside the window with no guest event at all longer than `gap_threshold_ns` is charged
//! to "no guest activity" (hypervisor/hardware: the guest did not run, or ran with nothing
//! traceable — cross-checked against steal time).
//!
//! The window is partitioned between consecutive event timestamps, so the parts add up to the
//! latency exactly (tolerance 0 ns, checked for every sample); a sample whose anchor events are
//! missing (lost events, a wake-up not caused on this CPU) is "unattributed" as a whole and
//! counted separately.

mod online;
mod stream;
#[cfg(test)]
mod stream_tests;
mod summary;
mod sweep;
#[cfg(test)]
mod sweep_tests;
#[cfg(test)]
mod tests;

pub use online::{ONLINE_RELATIVE_RESOLUTION, OTHER_CAUSES};
pub use stream::{KeptWindow, StreamingAttribution, MAX_LOOKBACK_EVENTS};
pub use summary::summarize;

use rtscope_model::event::{softirq_name, Event, EventKind, NameTables, IDLE_EXIT};
use rtscope_model::record::RawSample;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Cause names (stable strings: they appear in JSON and in stored summaries). Interference causes
/// are built as `irq:<n>:<name>`, `softirq:<NAME>`, `vector:<name>`, `thread:<comm>`.
pub const TIMER_IRQ_DELAY_IDLE: &str = "timer_irq_delay_idle_exit";
/// The CPU was running something (not idle) and the timer IRQ had not arrived yet: IRQs disabled
/// in that code, or timer delivery latency (LAPIC timer emulation by the hypervisor on a VM).
/// Without preemptirq tracepoints the two cannot be told apart.
pub const TIMER_IRQ_DELAY: &str = "timer_irq_delay_busy";
pub const TIMER_HANDLER: &str = "timer_handler";
pub const SCHED_DELAY: &str = "wakeup_to_switch";
pub const RETURN_TO_USER: &str = "switch_to_user_return";
pub const NO_GUEST: &str = "no_guest_activity";
/// The thread was still running at its planned wake-up (it had not reached its sleep: a delay
/// after its previous sample), so there was no wake-up: its own time on the CPU.
pub const LATE_FOR_SLEEP: &str = "late_for_sleep";
pub const NMI: &str = "nmi";
pub const UNATTRIBUTED: &str = "unattributed";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AttributionOptions {
    /// An eventless stretch at least this long inside a window is "no guest activity": before
    /// the timer handler finished (the timer IRQ is pending, so silence means the vCPU did not
    /// run or IRQs were off), while idle, and on the return to user space.
    pub gap_threshold_ns: u64,
    /// The same while another thread holds the CPU after the wake-up: it may legitimately run in
    /// the kernel without any traced event, but the tick still fires every 1/HZ while two tasks
    /// are runnable, so only silence longer than ~1.5 ticks is the host's (6 ms at HZ=250).
    pub busy_gap_threshold_ns: u64,
    /// Also report the share of samples above this latency each cause explains.
    pub tail_threshold_ns: Option<u64>,
    /// Keep full timelines for this many worst samples.
    pub top_n: usize,
    /// Events lost per CPU during the capture (flags affected output).
    pub lost_per_cpu: Vec<(u32, u64)>,
    /// Steal time per CPU over the capture (ns), for the cross-check.
    pub steal_ns_per_cpu: Vec<(u32, u64)>,
}

impl Default for AttributionOptions {
    fn default() -> Self {
        AttributionOptions {
            gap_threshold_ns: 100_000,
            busy_gap_threshold_ns: 6_000_000,
            tail_threshold_ns: None,
            top_n: 10,
            lost_per_cpu: Vec::new(),
            steal_ns_per_cpu: Vec::new(),
        }
    }
}

pub use rtscope_model::attribution::{Segment, ThreadRan};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct Anchors {
    /// Absolute CLOCK_MONOTONIC ns; None when not seen.
    pub handler_entry_ns: Option<u64>,
    pub waking_ns: Option<u64>,
    pub handler_exit_ns: Option<u64>,
    pub switch_in_ns: Option<u64>,
    /// What woke the thread: `vector:local_timer`, `softirq:HRTIMER`, `thread`.
    pub handler: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SampleAttribution {
    pub cpu: u32,
    pub tid: u32,
    pub cycle: u64,
    pub expected_ns: u64,
    pub latency_ns: u64,
    /// Why the sample could not be attributed (then `parts` holds one "unattributed" part).
    pub unattributed_reason: Option<String>,
    /// (cause, ns), largest first; sums to `latency_ns`.
    pub parts: Vec<(String, u64)>,
    pub anchors: Anchors,
    pub threads: Vec<ThreadRan>,
    /// Only for the worst samples kept with a timeline (empty otherwise).
    pub segments: Vec<Segment>,
    /// Events on the CPU inside the window, for the timeline (worst samples only).
    pub events: Vec<Event>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SumCheck {
    pub tolerance_ns: u64,
    pub samples_checked: u64,
    pub max_abs_error_ns: u64,
    pub violations: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StealCheck {
    pub cpu: u32,
    /// Sum of eventless stretches ≥ the busy gap threshold while the CPU was not idle, over the
    /// whole capture, ns (a busy CPU gets a tick every 1/HZ, so longer silence is the host's).
    pub no_guest_activity_ns: u64,
    /// Steal time the guest kernel accounted over the capture, ns (USER_HZ resolution).
    pub steal_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AttributionResult {
    pub summary: rtscope_model::attribution::AttributionSummary,
    /// The `top_n` worst samples, worst first, with timelines.
    pub worst: Vec<SampleAttribution>,
    pub sum_check: SumCheck,
    pub steal_check: Vec<StealCheck>,
    pub gap_threshold_ns: u64,
    pub busy_gap_threshold_ns: u64,
    /// Samples on CPUs that lost events.
    pub samples_on_lossy_cpus: u64,
    pub warnings: Vec<String>,
}

// ---------- per-CPU state machine ----------

use crate::interrupts::{boundary, Context as Ctx, ContextStack, Frame};

#[derive(Clone, Debug, Default)]
struct CpuState {
    /// Open interrupt frames (the one matcher the bound uses too).
    stack: ContextStack,
    /// (pid, prio) of the thread on the CPU, once a switch was seen.
    current: Option<(u32, i32)>,
    /// Inside cpu_idle (entered, not exited).
    idle: bool,
    /// Inside a `Background` marker: the guest ran events the capture left out (no gap longer
    /// than the filter's split distance), so no stretch here is "no guest activity".
    background: bool,
}

/// Per-CPU event as the sweep sees it: NMIs become a start/end pair.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ev {
    K(EventKind),
    NmiStart,
    NmiEnd,
    /// End of a `Background` marker (its start is the marker itself, `Ev::K`).
    BackgroundEnd,
    /// A wake-up issued on CPU `from` for a task queued to this CPU (an unpinned thread, e.g.
    /// SCHED_DEADLINE, whose timer fired on another CPU): copied into this CPU's stream so the
    /// sample that resumes here finds its waking.
    RemoteWaking {
        pid: u32,
        prio: i32,
        from: u32,
    },
}

impl CpuState {
    fn apply(&mut self, ts: u64, ev: &Ev) {
        let k = match *ev {
            Ev::NmiStart => return self.stack.enter(Ctx::Nmi, ts),
            Ev::NmiEnd => {
                self.stack.exit(Ctx::Nmi);
                return;
            }
            Ev::BackgroundEnd => {
                self.background = false;
                return;
            }
            Ev::RemoteWaking { .. } => return,
            Ev::K(k) => k,
        };
        match boundary(&k) {
            Some((ctx, true)) => self.stack.enter(ctx, ts),
            Some((ctx, false)) => {
                self.stack.exit(ctx);
            }
            None => match k {
                EventKind::Switch {
                    next_pid,
                    next_prio,
                    ..
                } => {
                    // A context switch happens in thread context: any open frame was lost.
                    self.stack.clear();
                    self.current = Some((next_pid, next_prio));
                    // Switching to a real task means the idle loop was left, also when the
                    // capture records only idle entries (eBPF: the exit is implied).
                    if next_pid != 0 {
                        self.idle = false;
                    }
                }
                EventKind::CpuIdle { state } => self.idle = state != IDLE_EXIT,
                EventKind::Background { .. } => self.background = true,
                _ => {}
            },
        }
    }
    fn is_idle(&self) -> bool {
        self.idle || matches!(self.current, Some((0, _)))
    }
}

/// A cause while sweeping (turned into its stable string name once per sample).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Static(&'static str),
    Ctx(Ctx),
    Thread(u32),
}

impl Key {
    fn name(self, names: &NameTables) -> String {
        match self {
            Key::Static(s) => s.to_string(),
            Key::Ctx(c) => ctx_cause(c, names),
            Key::Thread(pid) => format!("thread:{}", names.comm(pid)),
        }
    }
}

fn ctx_cause(ctx: Ctx, names: &NameTables) -> String {
    match ctx {
        Ctx::Irq(n) => format!("irq:{n}:{}", names.irq(n)),
        Ctx::Softirq(v) => format!("softirq:{}", softirq_name(v)),
        Ctx::Vector(v) => format!("vector:{}", v.name()),
        Ctx::Nmi => NMI.to_string(),
    }
}

fn ctx_handler_name(ctx: Option<Ctx>) -> String {
    match ctx {
        Some(Ctx::Vector(v)) => format!("vector:{}", v.name()),
        Some(Ctx::Softirq(v)) => format!("softirq:{}", softirq_name(v)),
        Some(Ctx::Irq(n)) => format!("irq:{n}"),
        Some(Ctx::Nmi) => "nmi".into(),
        None => "thread".into(),
    }
}

/// Events of one CPU, time-sorted, with NMIs expanded.
struct CpuEvents {
    ts: Vec<u64>,
    ev: Vec<Ev>,
}

/// A borrowed view of one CPU's time-sorted events (the batch's whole capture or the streaming
/// buffer).
#[derive(Clone, Copy)]
struct CpuSlice<'a> {
    ts: &'a [u64],
    ev: &'a [Ev],
}

impl CpuEvents {
    fn slice(&self) -> CpuSlice<'_> {
        CpuSlice {
            ts: &self.ts,
            ev: &self.ev,
        }
    }
}

/// The per-CPU items one recorded event stands for, in the order they are recorded (the order
/// both the batch sort and the streaming insert keep on equal timestamps): a waking for a task
/// queued on another CPU is also copied to that CPU; an NMI becomes its start and end (the
/// tracepoint fires after the handler, `delta_ns` later); a `Background` marker gets its end.
fn expand(e: &Event, mut push: impl FnMut(u32, u64, Ev)) {
    if let EventKind::Waking {
        pid,
        prio,
        target_cpu,
    } = e.kind
    {
        if target_cpu != e.cpu {
            push(
                target_cpu,
                e.ts_ns,
                Ev::RemoteWaking {
                    pid,
                    prio,
                    from: e.cpu,
                },
            );
        }
    }
    match e.kind {
        EventKind::Nmi { delta_ns } => {
            push(e.cpu, e.ts_ns.saturating_sub(delta_ns), Ev::NmiStart);
            push(e.cpu, e.ts_ns, Ev::NmiEnd);
        }
        EventKind::Background { len_ns, .. } => {
            push(e.cpu, e.ts_ns, Ev::K(e.kind));
            push(e.cpu, e.ts_ns.saturating_add(len_ns), Ev::BackgroundEnd);
        }
        k => push(e.cpu, e.ts_ns, Ev::K(k)),
    }
}

fn split_by_cpu(events: &[Event]) -> HashMap<u32, CpuEvents> {
    let mut raw: HashMap<u32, Vec<(u64, Ev)>> = HashMap::new();
    for e in events {
        expand(e, |cpu, ts, ev| raw.entry(cpu).or_default().push((ts, ev)));
    }
    raw.into_iter()
        .map(|(cpu, mut v)| {
            // Stable: keeps recorded order on equal timestamps (entry before exit).
            v.sort_by_key(|x| x.0);
            let (ts, ev) = v.into_iter().unzip();
            (cpu, CpuEvents { ts, ev })
        })
        .collect()
}

/// The part of an eventless stretch of `len_ns` (between two consecutive events of a CPU whose
/// state before the later one is `st`) that counts for the whole-capture steal cross-check:
/// all of it when at least the busy gap threshold long while a task (not idle, not inside a
/// `Background` marker) held the CPU — a busy CPU gets a tick every 1/HZ — else nothing.
fn busy_silence_ns(st: &CpuState, len_ns: u64, opts: &AttributionOptions) -> u64 {
    if len_ns >= opts.busy_gap_threshold_ns
        && !st.is_idle()
        && !st.background
        && st.current.is_some()
    {
        len_ns
    } else {
        0
    }
}

impl SampleAttribution {
    /// `s` with nothing explained yet: no parts, anchors, threads or timeline.
    fn unexplained(s: &RawSample) -> SampleAttribution {
        SampleAttribution {
            cpu: s.cpu,
            tid: s.tid,
            cycle: s.cycle,
            expected_ns: s.expected_ns,
            latency_ns: s.latency_ns,
            unattributed_reason: None,
            parts: Vec::new(),
            anchors: Anchors::default(),
            threads: Vec::new(),
            segments: Vec::new(),
            events: Vec::new(),
        }
    }
}

/// Why `s` has no waking to start from. It says who held the CPU at the planned wake-up
/// (`current`: pid and prio, pid 0 idle), a clue when the kernel reported no events
/// (docs/tracing.md, "Unattributed samples").
fn no_waking_reason(s: &RawSample, current: Option<(u32, i32)>, names: &NameTables) -> String {
    if s.latency_ns == 0 {
        return "zero latency".to_string();
    }
    let holder = match current {
        Some((0, _)) => "; on the CPU at E: idle".to_string(),
        Some((pid, prio)) => format!("; on the CPU at E: {}:{pid} prio {prio}", names.comm(pid)),
        None => String::new(),
    };
    format!("no sched_waking of the thread on its CPU inside the window{holder}")
}

/// Attribute one sample. `ce` holds the CPU's events (time-sorted, recorded order on equal
/// timestamps) at least up to the window end; `state` is the CPU state just before
/// `s.expected_ns`; `first` is the index in `ce` of the first event at or after E. The batch and
/// the streaming path both call this, so a sample is explained the same way by either.
fn attribute_one(
    s: &RawSample,
    ce: CpuSlice<'_>,
    first: usize,
    state: &CpuState,
    names: &NameTables,
    opts: &AttributionOptions,
    keep_timeline: bool,
) -> SampleAttribution {
    let e0 = s.expected_ns;
    let r = s.expected_ns.saturating_add(s.latency_ns);
    let mut out = SampleAttribution::unexplained(s);
    let end = first + ce.ts[first..].partition_point(|&t| t < r);
    let win = first..end;

    // Anchors: the waking of tid, the context it happened in, that context's exit, the switch-in.
    let mut st = state.clone();
    let mut waking: Option<(usize, i32)> = None;
    let mut handler: Option<Frame> = None;
    let mut remote_from: Option<u32> = None;
    for i in win.clone() {
        match ce.ev[i] {
            Ev::K(EventKind::Waking { pid, prio, .. }) if pid == s.tid => {
                waking = Some((i, prio));
                handler = st.stack.top().copied();
                break;
            }
            Ev::RemoteWaking { pid, prio, from } if pid == s.tid => {
                waking = Some((i, prio));
                remote_from = Some(from);
                break;
            }
            _ => {}
        }
        st.apply(ce.ts[i], &ce.ev[i]);
    }
    // Late for its own sleep: no waking, the thread was the CPU's current task at E and never
    // switched out inside the window. It had not yet called clock_nanosleep when its planned
    // wake-up passed (a delay after its previous sample: an interrupt, a host stall), so the
    // sleep returned at once. Its whole window is then the thread's own time on the CPU.
    let late = waking.is_none()
        && s.latency_ns > 0
        && matches!(state.current, Some((pid, _)) if pid == s.tid)
        && !win.clone().any(
            |i| matches!(ce.ev[i], Ev::K(EventKind::Switch { prev_pid, .. }) if prev_pid == s.tid),
        );
    let waking = match waking {
        None if late => None,
        Some(w) => Some(w),
        None => {
            out.unattributed_reason = Some(no_waking_reason(s, state.current, names));
            out.parts = vec![(UNATTRIBUTED.to_string(), s.latency_ns)];
            if keep_timeline {
                out.segments = vec![Segment {
                    start_ns: 0,
                    end_ns: s.latency_ns,
                    cause: UNATTRIBUTED.into(),
                    detail: String::new(),
                }];
                out.events = timeline_events(ce, win.clone(), s.cpu);
            }
            return out;
        }
    };
    let tid_prio = match waking {
        Some((_, p)) => p,
        None => state.current.map(|c| c.1).unwrap_or(0),
    };
    let mut handler_exit: Option<usize> = None;
    if let (Some(h), Some((wi, _))) = (handler, waking) {
        // Replay from the waking to find where that frame is popped.
        let mut st2 = st.clone();
        for i in wi..end {
            st2.apply(ce.ts[i], &ce.ev[i]);
            if !st2.stack.contains(&h) {
                handler_exit = Some(i);
                break;
            }
        }
    }
    let switch_in = waking.and_then(|(wi, _)| {
        let after = handler_exit.unwrap_or(wi);
        (after..end).find(
            |&i| matches!(ce.ev[i], Ev::K(EventKind::Switch { next_pid, .. }) if next_pid == s.tid),
        )
    });
    out.anchors = Anchors {
        handler_entry_ns: handler.map(|h| h.start_ns),
        waking_ns: waking.map(|(wi, _)| ce.ts[wi]),
        handler_exit_ns: handler_exit.map(|i| ce.ts[i]),
        switch_in_ns: switch_in.map(|i| ce.ts[i]),
        handler: match remote_from {
            _ if late => "none: late for its own sleep".into(),
            Some(c) => format!("remote:cpu{c}"),
            None => ctx_handler_name(handler.map(|h| h.ctx)),
        },
    };
    // Phase of a time t (boundaries are event timestamps, so no interval straddles one).
    // Late: the whole window is phase D (the thread's own time), charged to LATE_FOR_SLEEP.
    let wake_ts = waking.map(|(wi, _)| ce.ts[wi]).unwrap_or(e0);
    let b_start = handler.map(|h| h.start_ns.max(e0)).unwrap_or(wake_ts);
    let c_start = handler_exit
        .map(|i| ce.ts[i])
        .unwrap_or(if handler.is_some() { r } else { wake_ts });
    // No switch-in: if the thread was still the CPU's current task when it was woken (the timer
    // fired while it was going to sleep), it never left, and everything after the handler is
    // its way back to user space.
    let never_left = switch_in.is_none() && matches!(st.current, Some((pid, _)) if pid == s.tid);
    let d_start = match switch_in {
        Some(i) => ce.ts[i],
        None if late => e0,
        None if never_left => c_start,
        None => r,
    };
    #[derive(PartialEq)]
    enum Phase {
        A,
        B,
        C,
        D,
    }
    let phase = |t: u64| {
        if t >= d_start {
            Phase::D
        } else if t >= c_start {
            Phase::C
        } else if t >= b_start {
            Phase::B
        } else {
            Phase::A
        }
    };

    // The sweep.
    let mut parts: Vec<(Key, u64)> = Vec::with_capacity(8);
    let mut threads: Vec<ThreadRan> = Vec::new();
    let mut segs: Vec<Segment> = Vec::new();
    let mut st = state.clone();
    let mut t = e0;
    let mut idx = first;
    loop {
        let next_t = if idx < end { ce.ts[idx].min(r) } else { r };
        if next_t > t {
            let len = next_t - t;
            let other_thread_runs = phase(t) == Phase::C
                && st.stack.is_empty()
                && !st.idle
                && matches!(st.current, Some((pid, _)) if pid != 0 && pid != s.tid);
            let gap_thr = if other_thread_runs {
                opts.gap_threshold_ns.max(opts.busy_gap_threshold_ns)
            } else {
                opts.gap_threshold_ns
            };
            // A compact key per piece; strings are built once per distinct cause (and details
            // only for kept timelines), which keeps the sweep allocation-free per event.
            let key = if len >= gap_thr && !st.background {
                Key::Static(NO_GUEST)
            } else if let Some(f) = st.stack.top() {
                if Some(*f) == handler {
                    Key::Static(TIMER_HANDLER)
                } else {
                    Key::Ctx(f.ctx)
                }
            } else {
                match phase(t) {
                    Phase::A if st.is_idle() => Key::Static(TIMER_IRQ_DELAY_IDLE),
                    Phase::A => Key::Static(TIMER_IRQ_DELAY),
                    Phase::B => Key::Static(TIMER_HANDLER),
                    Phase::C => match st.current {
                        Some((pid, prio)) if pid != 0 && pid != s.tid && !st.idle => {
                            match threads.iter_mut().find(|x| x.pid == pid) {
                                Some(x) => x.ran_ns += len,
                                None => threads.push(ThreadRan {
                                    pid,
                                    comm: names.comm(pid),
                                    prio,
                                    ran_ns: len,
                                    relation: if prio < tid_prio {
                                        "preempting"
                                    } else {
                                        "blocking"
                                    }
                                    .into(),
                                }),
                            }
                            Key::Thread(pid)
                        }
                        _ => Key::Static(SCHED_DELAY),
                    },
                    Phase::D if late => Key::Static(LATE_FOR_SLEEP),
                    Phase::D => Key::Static(RETURN_TO_USER),
                }
            };
            match parts.iter_mut().find(|p| p.0 == key) {
                Some(p) => p.1 += len,
                None => parts.push((key, len)),
            }
            if keep_timeline {
                let cause = key.name(names);
                let detail = match key {
                    Key::Static(NO_GUEST) => format!("no guest event for {len} ns"),
                    Key::Static(TIMER_HANDLER) => ctx_handler_name(handler.map(|h| h.ctx)),
                    Key::Static(TIMER_IRQ_DELAY_IDLE) => "idle".into(),
                    Key::Static(TIMER_IRQ_DELAY) => st
                        .current
                        .map(|(p, _)| names.comm(p))
                        .unwrap_or_else(|| "?".into()),
                    Key::Static(SCHED_DELAY) if st.is_idle() => "from idle".into(),
                    Key::Thread(pid) => {
                        let prio = st.current.map(|c| c.1).unwrap_or(0);
                        let rel = if prio < tid_prio {
                            "preempting"
                        } else {
                            "blocking"
                        };
                        format!("pid {pid} prio {prio} {rel}")
                    }
                    _ => String::new(),
                };
                match segs.last_mut() {
                    Some(l) if l.cause == cause && l.detail == detail && l.end_ns == t - e0 => {
                        l.end_ns = next_t - e0
                    }
                    _ => segs.push(Segment {
                        start_ns: t - e0,
                        end_ns: next_t - e0,
                        cause,
                        detail,
                    }),
                }
            }
            t = next_t;
        }
        if idx >= end {
            break;
        }
        st.apply(ce.ts[idx], &ce.ev[idx]);
        idx += 1;
    }
    let mut parts: Vec<(String, u64)> = parts
        .into_iter()
        .map(|(k, ns)| (k.name(names), ns))
        .collect();
    parts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out.parts = parts;
    out.threads = threads;
    if keep_timeline {
        cap_segments(&mut segs);
        out.segments = segs;
        out.events = timeline_events(ce, win, s.cpu);
    }
    out
}

/// Most segments (and events) one sample's timeline keeps. A sample seconds long (a VM paused
/// for migration, a debugger stop) would otherwise keep every event and segment of its window in
/// memory and in the record: the first and last halves are kept, the middle is one
/// [`TIMELINE_CUT`] segment saying how many were left out (their time stays in `parts`).
pub const TIMELINE_CAP: usize = 4096;
/// Cause of the segment that stands for the middle of a capped timeline.
pub const TIMELINE_CUT: &str = "timeline_cut";

fn cap_segments(segs: &mut Vec<Segment>) {
    if segs.len() <= TIMELINE_CAP {
        return;
    }
    let head = TIMELINE_CAP / 2;
    let tail_from = segs.len() - (TIMELINE_CAP / 2 - 1);
    let cut = Segment {
        start_ns: segs[head].start_ns,
        end_ns: segs[tail_from - 1].end_ns,
        cause: TIMELINE_CUT.into(),
        detail: format!(
            "{} segments left out of the timeline (their time is in the parts)",
            tail_from - head
        ),
    };
    segs.drain(head..tail_from);
    segs.insert(head, cut);
    segs.shrink_to_fit();
}

/// The events of a window for a timeline, at most [`TIMELINE_CAP`]: the first and last halves
/// of a longer window, taken without building the middle (a window can span a whole file).
fn timeline_events(ce: CpuSlice<'_>, win: std::ops::Range<usize>, cpu: u32) -> Vec<Event> {
    let half = TIMELINE_CAP / 2;
    let mut head: Vec<Event> = win
        .clone()
        .filter_map(|i| ev_out(ce, i, cpu))
        .take(TIMELINE_CAP + 1)
        .collect();
    if head.len() <= TIMELINE_CAP {
        return head;
    }
    head.truncate(half);
    let mut tail: Vec<Event> = win
        .rev()
        .filter_map(|i| ev_out(ce, i, cpu))
        .take(half)
        .collect();
    tail.reverse();
    head.extend(tail);
    head
}

fn ev_out(ce: CpuSlice<'_>, i: usize, cpu: u32) -> Option<Event> {
    match ce.ev[i] {
        Ev::K(k) => Some(Event {
            ts_ns: ce.ts[i],
            cpu,
            kind: k,
        }),
        Ev::NmiEnd => Some(Event {
            ts_ns: ce.ts[i],
            cpu,
            kind: EventKind::Nmi { delta_ns: 0 },
        }),
        Ev::NmiStart | Ev::BackgroundEnd => None,
        Ev::RemoteWaking { pid, prio, from } => Some(Event {
            ts_ns: ce.ts[i],
            cpu: from,
            kind: EventKind::Waking {
                pid,
                prio,
                target_cpu: cpu,
            },
        }),
    }
}

/// Per-sample attributions for all samples (timelines only where `keep` says so), in the order
/// of `samples`, plus the whole-run eventless-stretch totals per CPU.
pub fn attribute_samples(
    events: &[Event],
    samples: &[RawSample],
    names: &NameTables,
    opts: &AttributionOptions,
    keep: &dyn Fn(usize) -> bool,
) -> (Vec<SampleAttribution>, Vec<(u32, u64)>) {
    let by_cpu = split_by_cpu(events);
    let empty = CpuEvents {
        ts: Vec::new(),
        ev: Vec::new(),
    };
    let mut out: Vec<Option<SampleAttribution>> = vec![None; samples.len()];
    let mut order: Vec<usize> = (0..samples.len()).collect();
    order.sort_by_key(|&i| (samples[i].cpu, samples[i].expected_ns));
    let mut gaps: Vec<(u32, u64)> = Vec::new();
    // A sample kept with a timeline walks its window (at most `top_n` of them); every other
    // sample is read off one sweep of its CPU's events (`sweep::Index`), so overlapping windows
    // cost range sums, not walks.
    let mut i = 0;
    while i < order.len() {
        let cpu = samples[order[i]].cpu;
        let ce = by_cpu.get(&cpu).unwrap_or(&empty);
        let mut index: Option<sweep::Index> = None;
        let mut st = CpuState::default();
        let mut cursor = 0usize;
        while i < order.len() && samples[order[i]].cpu == cpu {
            let k = order[i];
            let s = &samples[k];
            if keep(k) {
                while cursor < ce.ts.len() && ce.ts[cursor] < s.expected_ns {
                    st.apply(ce.ts[cursor], &ce.ev[cursor]);
                    cursor += 1;
                }
                out[k] = Some(attribute_one(s, ce.slice(), cursor, &st, names, opts, true));
            } else {
                let first = ce.ts.partition_point(|&t| t < s.expected_ns);
                let ix = index.get_or_insert_with(|| sweep::Index::build(ce.slice(), opts));
                out[k] = Some(ix.attribute(s, &ce.ts, &ce.ev, first, names, opts));
            }
            i += 1;
        }
    }
    // Whole-capture eventless stretches while not idle, per CPU (the steal cross-check).
    let mut cpus: Vec<&u32> = by_cpu.keys().collect();
    cpus.sort();
    for &cpu in cpus {
        let ce = &by_cpu[&cpu];
        let mut st = CpuState::default();
        let mut total = 0u64;
        for w in 0..ce.ts.len() {
            if w > 0 {
                total += busy_silence_ns(&st, ce.ts[w] - ce.ts[w - 1], opts);
            }
            st.apply(ce.ts[w], &ce.ev[w]);
        }
        gaps.push((cpu, total));
    }
    (out.into_iter().flatten().collect(), gaps)
}

/// The `top_n` worst samples by latency (ties: earlier first), in that order, and the same
/// indices as a set: decided before the sweep, so that only they carry timelines.
pub fn worst_samples(
    samples: &[RawSample],
    top_n: usize,
) -> (Vec<usize>, std::collections::HashSet<usize>) {
    let mut worst = rtscope_model::worst::WorstN::new(top_n);
    for (i, s) in samples.iter().enumerate() {
        worst.push(s.latency_ns, i as u64, i);
    }
    let idx = worst.into_vec();
    let keep = idx.iter().copied().collect();
    (idx, keep)
}

/// Attribute every sample and summarise the run.
pub fn attribute(
    events: &[Event],
    samples: &[RawSample],
    names: &NameTables,
    opts: &AttributionOptions,
) -> AttributionResult {
    let (idx, keep) = worst_samples(samples, opts.top_n);
    let (all, gaps) = attribute_samples(events, samples, names, opts, &|k| keep.contains(&k));
    summarize(samples, all, &idx, gaps, opts)
}
