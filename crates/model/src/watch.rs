//! `rtscope watch`: the scheduling events of a watched process's threads as the kernel reports
//! them, the activations they make up, and the per-thread result stored in a measurement.

use crate::Histogram;
use serde::{Deserialize, Serialize};

/// One scheduling event of a watched thread (the eBPF program filters on its thread group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    /// CLOCK_MONOTONIC, ns.
    pub ts_ns: u64,
    /// The CPU the event happened on.
    pub cpu: u32,
    /// The watched thread.
    pub tid: u32,
    pub tgid: u32,
    pub kind: WatchKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchKind {
    /// sched_waking of the thread by `waker`; `timer_soft_ns` is the soft expiry of the hrtimer
    /// whose callback woke it (0: not woken by an hrtimer).
    Waking { waker: u32, timer_soft_ns: u64 },
    /// sched_switch onto a CPU, replacing `prev`.
    SwitchIn { prev: u32 },
    /// sched_switch off its CPU, in favour of `next` (kernel prio `next_prio`). `preempted`: it
    /// stays runnable (the switch's `preempt` argument, or a `prev_state` of 0, as after a
    /// yield); otherwise it went to sleep and its activation ended.
    SwitchOut {
        next: u32,
        next_prio: i32,
        preempted: bool,
    },
    /// A thread (or process) of the watched group was created by `parent`.
    NewTask { parent: u32 },
    /// The thread exited.
    Exit,
}

/// A preemption suffered while running: by whom, for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preemption {
    pub by_tid: u32,
    /// Kernel priority of the preempting task (< 100: real-time).
    pub by_prio: i32,
    pub start_ns: u64,
    pub duration_ns: u64,
}

/// One activation of a watched thread: woken, ran (possibly preempted), went back to sleep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activation {
    pub tid: u32,
    /// 0-based activation number of the thread.
    pub index: u64,
    /// The CPU it first ran on after the wake-up.
    pub cpu: u32,
    /// sched_waking.
    pub waking_ns: u64,
    /// The hrtimer's soft expiry when an hrtimer woke it.
    pub timer_soft_ns: Option<u64>,
    /// sched_switch onto the CPU after the wake-up.
    pub running_ns: u64,
    /// sched_switch off the CPU into a sleep (None: still running when the watch ended).
    pub end_ns: Option<u64>,
    /// Time on a CPU between running_ns and end_ns.
    pub run_ns: u64,
    pub preemptions: Vec<Preemption>,
    /// The waker's tid.
    pub waker: u32,
}

impl Activation {
    /// sched_waking → running.
    pub fn wakeup_latency_ns(&self) -> u64 {
        self.running_ns.saturating_sub(self.waking_ns)
    }

    /// The timer's soft expiry → running (cyclictest's latency seen from the kernel).
    pub fn timer_lateness_ns(&self) -> Option<u64> {
        self.timer_soft_ns
            .map(|s| self.running_ns.saturating_sub(s))
    }

    /// The instant the activation should have started: the timer's soft expiry, else the
    /// wake-up. Periods are measured between these.
    pub fn expected_ns(&self) -> u64 {
        self.timer_soft_ns.unwrap_or(self.waking_ns)
    }

    /// The latency the activation is explained and ranked by: timer lateness where a timer
    /// woke it, else the wake-up latency.
    pub fn latency_ns(&self) -> u64 {
        self.timer_lateness_ns()
            .unwrap_or_else(|| self.wakeup_latency_ns())
    }
}

/// Who preempted a thread, summed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preemptor {
    pub tid: u32,
    pub comm: String,
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

/// One watched thread's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WatchThread {
    pub tid: u32,
    pub comm: String,
    pub activations: u64,
    /// Activations counted but not measured: the thread was seen asleep and then on a CPU
    /// with no wake-up (or no switch-in) reported between (see docs/watch.md).
    #[serde(default)]
    pub unseen_activations: u64,
    /// Activations an hrtimer woke (those in `timer_lateness`).
    pub timer_activations: u64,
    /// sched_waking → running, every activation.
    pub wakeup_latency: Histogram,
    /// hrtimer soft expiry → running, activations an hrtimer woke.
    pub timer_lateness: Histogram,
    /// CPU time per activation.
    pub run_time: Histogram,
    /// Between consecutive activations' expected starts.
    pub period: Histogram,
    /// The period jitter is measured against: `--period`, else the median of `period`.
    pub nominal_period_ns: Option<u64>,
    /// The largest |period − nominal| seen.
    pub jitter_max_ns: Option<u64>,
    pub preemptions: u64,
    pub preempted_ns: u64,
    /// The tasks that preempted it, most time first (at most 10).
    pub preempted_by: Vec<Preemptor>,
    /// The thread exited during the watch.
    pub exited: bool,
}

/// What `rtscope watch` adds to its measurement: the watched threads' own figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchResult {
    /// The watched processes (thread group ids) and how they were named.
    pub tgids: Vec<u32>,
    pub target: String,
    pub threads: Vec<WatchThread>,
    /// Every watched process exited before the end.
    pub target_exited: bool,
    /// Events the kernel's ring buffer had no room for.
    pub dropped_events: u64,
}
