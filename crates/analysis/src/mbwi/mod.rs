//! M-BWI, the multiprocessor bandwidth inheritance protocol (Lelli 2014 thesis Ch. 4, [FLC12]):
//! a simulator of hard CBS reservations sharing mutexes under no inheritance, mainline
//! SCHED_DEADLINE's PI, full M-BWI and the thesis' Linux implementation (§4.3.2–4.3.3); the
//! conversion of a sched_switch capture into a per-CPU schedule; and the side-by-side table of
//! what the kernel did against what the simulator says.
//!
//! Pure: no clocks, no syscalls. Tested on the thesis' examples with hand-checked schedules
//! (`tests.rs`).

mod examples;
mod sim;
mod validate;

#[cfg(test)]
mod tests;

pub use examples::*;
pub use validate::validate;

use rtscope_model::event::{Event, EventKind};
use rtscope_model::mbwi::{
    KernelSegment, MbwiComparisonRow, MbwiKernelRun, MbwiProtocol, MbwiTaskSet, SimResult,
};
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MbwiError {
    /// The task set is malformed; the message names the field and its range.
    #[error("{0}")]
    Spec(String),
    /// A guard against a simulation that does not advance (a bug, not an input error).
    #[error("simulation stopped: {0}")]
    Runaway(String),
}

/// Simulate `set` under `protocol` up to its horizon.
pub fn simulate(set: &MbwiTaskSet, protocol: MbwiProtocol) -> Result<SimResult, MbwiError> {
    validate(set)?;
    let mut s = sim::Sim::new(set, protocol);
    s.run()?;
    Ok(s.finish_result())
}

/// [`simulate`] under each of `protocols`, the results named `name`.
pub fn simulate_all(
    name: &str,
    set: &MbwiTaskSet,
    protocols: &[MbwiProtocol],
) -> Result<Vec<SimResult>, MbwiError> {
    protocols
        .iter()
        .map(|&p| {
            simulate(set, p).map(|mut r| {
                r.name = name.to_string();
                r
            })
        })
        .collect()
}

/// Like [`simulate`], also returning the lowest budget any server reached (µs; ≥ −tick_us).
#[cfg(test)]
pub(crate) fn simulate_min_budget(
    set: &MbwiTaskSet,
    protocol: MbwiProtocol,
) -> Result<(SimResult, i64), MbwiError> {
    validate(set)?;
    let mut s = sim::Sim::new(set, protocol);
    s.run()?;
    let m = s.min_budget;
    Ok((s.finish_result(), m))
}

/// What each CPU ran in `[from_ns, to_ns)` (absolute CLOCK_MONOTONIC), from sched_switch
/// events: a segment per stretch, named after the task set's thread (`tids`), `other` for any
/// other task, nothing for idle. Times in the result are relative to `epoch_ns`. A CPU's first
/// stretch starts at its first switch inside the window (what ran before is unknown).
pub fn schedule_from_switches(
    events: &[Event],
    tids: &BTreeMap<u32, String>,
    from_ns: u64,
    to_ns: u64,
    epoch_ns: u64,
) -> Vec<KernelSegment> {
    let mut cur: BTreeMap<u32, (u32, u64)> = BTreeMap::new();
    let mut out: Vec<KernelSegment> = Vec::new();
    let name = |pid: u32| -> Option<String> {
        if pid == 0 {
            None
        } else {
            Some(tids.get(&pid).cloned().unwrap_or_else(|| "other".into()))
        }
    };
    let push = |out: &mut Vec<KernelSegment>, cpu: u32, pid: u32, a: u64, b: u64| {
        let (a, b) = (a.max(from_ns), b.min(to_ns));
        if b <= a {
            return;
        }
        let Some(task) = name(pid) else { return };
        let (s, e) = (a - epoch_ns.min(a), b - epoch_ns.min(b));
        if let Some(last) = out
            .iter_mut()
            .rev()
            .find(|x| x.cpu == cpu)
            .filter(|x| x.task == task && x.end_ns == s)
        {
            last.end_ns = e;
            return;
        }
        out.push(KernelSegment {
            cpu,
            task,
            start_ns: s,
            end_ns: e,
        });
    };
    for ev in events {
        if ev.ts_ns >= to_ns {
            break;
        }
        if let EventKind::Switch {
            prev_pid, next_pid, ..
        } = ev.kind
        {
            if let Some(&(pid, since)) = cur.get(&ev.cpu) {
                if pid == prev_pid {
                    push(&mut out, ev.cpu, pid, since, ev.ts_ns);
                }
            }
            cur.insert(ev.cpu, (next_pid, ev.ts_ns));
        }
    }
    for (&cpu, &(pid, since)) in &cur {
        push(&mut out, cpu, pid, since, to_ns);
    }
    out.sort_by_key(|s| (s.cpu, s.start_ns));
    out
}

/// One row per task of a scenario: the kernel's PI and plain runs beside the simulator's
/// mainline and M-BWI schedules of the same set.
pub fn compare(
    scenario: &str,
    pi: Option<&MbwiKernelRun>,
    plain: Option<&MbwiKernelRun>,
    sim_mainline: &SimResult,
    sim_mbwi: &SimResult,
) -> Vec<MbwiComparisonRow> {
    sim_mbwi
        .tasks
        .iter()
        .map(|t| {
            let k = |r: Option<&MbwiKernelRun>| {
                r.and_then(|r| r.tasks.iter().find(|x| x.name == t.name))
                    .map(|x| (x.misses, x.jobs, x.blocked.quantile_ns(0.5)))
                    .unwrap_or((0, 0, None))
            };
            let (pm, pj, pb) = k(pi);
            let (nm, nj, nb) = k(plain);
            let ml = sim_mainline.tasks.iter().find(|x| x.name == t.name);
            MbwiComparisonRow {
                scenario: scenario.into(),
                task: t.name.clone(),
                interacts: t.interacts,
                kernel_pi_misses: pm,
                kernel_pi_jobs: pj,
                kernel_pi_blocked_median_ns: pb,
                kernel_plain_misses: nm,
                kernel_plain_jobs: nj,
                kernel_plain_blocked_median_ns: nb,
                sim_mainline_misses: ml.map_or(0, |x| x.misses),
                sim_mainline_jobs: ml.map_or(0, |x| x.jobs.len() as u32),
                sim_mainline_max_blocked_us: ml.map_or(0, |x| x.max_blocked_us),
                sim_mbwi_misses: t.misses,
                sim_mbwi_jobs: t.jobs.len() as u32,
                sim_mbwi_max_blocked_us: t.max_blocked_us,
            }
        })
        .collect()
}
