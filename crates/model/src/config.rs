//! Resolved, validated configuration of a measurement run (what `measure` was asked to do).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Fifo,
    Rr,
    Other,
    Deadline,
}

impl Policy {
    pub const ALL: [Policy; 4] = [Policy::Fifo, Policy::Rr, Policy::Other, Policy::Deadline];
    /// The names of [`Policy::ALL`], as a command line and a record spell them.
    pub const NAMES: [&'static str; 4] = ["fifo", "rr", "other", "deadline"];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Other => "other",
            Policy::Deadline => "deadline",
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TimerMode {
    /// clock_nanosleep(TIMER_ABSTIME): cyclictest's default and ours.
    AbsNanosleep,
    /// clock_nanosleep relative: drifts by each wake-up's latency, kept for comparisons.
    RelNanosleep,
    Timerfd,
    /// POSIX timer (timer_create, SIGEV_THREAD_ID) + sigwait.
    PosixTimer,
}

impl TimerMode {
    pub fn name(self) -> &'static str {
        match self {
            TimerMode::AbsNanosleep => "abs_nanosleep",
            TimerMode::RelNanosleep => "rel_nanosleep",
            TimerMode::Timerfd => "timerfd",
            TimerMode::PosixTimer => "posix_timer",
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ClockId {
    Monotonic,
    Realtime,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct DeadlineParams {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
    pub reset_on_fork: bool,
    /// SCHED_FLAG_DL_OVERRUN: the kernel sends SIGXCPU on a runtime overrun.
    pub dl_overrun: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunConfig {
    pub cpus: Vec<u32>,
    pub policy: Policy,
    pub priority: u32,
    pub nice: i32,
    pub deadline: Option<DeadlineParams>,
    pub interval_us: u64,
    pub distance_us: u64,
    /// Every thread's first wake-up at the same instant (`--aligned`). Otherwise thread i starts
    /// i/n of an interval later, so the threads' timers never expire together (on a VM, timer
    /// expiries of several vCPUs at one instant queue behind each other in the host).
    #[serde(default)]
    pub aligned: bool,
    pub duration_s: Option<f64>,
    pub loops: Option<u64>,
    pub timer: TimerMode,
    pub clock: ClockId,
    pub hold_cpu_dma_latency: bool,
    pub break_above_us: Option<u64>,
    pub threshold_us: Option<u64>,
    pub worst_n: usize,
    pub linear_max_us: u32,
    pub loads: Vec<String>,
    pub trace: String,
    /// Traced in bursts (`monitor --trace-burst`) rather than from start to end: only samples
    /// inside a burst are explained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_bursts: Option<TraceBursts>,
    /// CPUs of rtscope's own session and trace reader threads (`--housekeeping`); empty in
    /// records that predate the choice or of verbs without those threads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub housekeeping_cpus: Vec<u32>,
}

/// The configuration of a record that no `measure` request resolved (an import, a replay, a
/// tracer's or `watch`'s run), for its maker to set what it knows: SCHED_FIFO 95 every 1000 µs on
/// no CPU yet, cyclictest's timer (absolute `clock_nanosleep` on `CLOCK_MONOTONIC`), the 10 worst
/// samples, the linear histogram to 10 ms; no deadline, distance, alignment, duration, loop
/// count, limit, load or housekeeping CPU, `/dev/cpu_dma_latency` not held, nothing traced.
impl Default for RunConfig {
    fn default() -> RunConfig {
        RunConfig {
            cpus: Vec::new(),
            policy: Policy::Fifo,
            priority: 95,
            nice: 0,
            deadline: None,
            interval_us: 1000,
            distance_us: 0,
            aligned: false,
            duration_s: None,
            loops: None,
            timer: TimerMode::AbsNanosleep,
            clock: ClockId::Monotonic,
            hold_cpu_dma_latency: false,
            break_above_us: None,
            threshold_us: None,
            worst_n: 10,
            linear_max_us: 10_000,
            loads: Vec::new(),
            trace: "off".into(),
            trace_bursts: None,
            housekeeping_cpus: Vec::new(),
        }
    }
}

/// Tracing for `length_s` every `every_s`, the first burst at the start.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct TraceBursts {
    pub length_s: f64,
    pub every_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_are_the_policies_names() {
        for (p, n) in Policy::ALL.iter().zip(Policy::NAMES) {
            assert_eq!(p.name(), n);
        }
    }
}
