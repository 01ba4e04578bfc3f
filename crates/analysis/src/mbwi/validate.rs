//! Checks on a task-set description before anything is simulated or started: every error names
//! the field (as a JSON path) and the accepted range.

use super::MbwiError;
use rtscope_model::mbwi::{MbwiTask, MbwiTaskSet, Segment};
use std::collections::{BTreeMap, BTreeSet};

pub const MAX_CPUS: u32 = 64;
pub const MAX_TASKS: usize = 64;
/// Ten minutes of simulated time.
pub const MAX_HORIZON_US: u64 = 600_000_000;
pub const MAX_TICK_US: u64 = 1_000_000;
pub const MAX_PERIOD_US: u64 = 60_000_000;
pub const MAX_STEPS: usize = 1000;
pub const MAX_NAME_CHARS: usize = 64;
/// Jobs over the whole horizon, all tasks together: the simulation keeps every job's record.
pub const MAX_TOTAL_JOBS: u64 = 200_000;

fn err(msg: String) -> MbwiError {
    MbwiError::Spec(msg)
}

fn check_name(what: &str, s: &str) -> Result<(), MbwiError> {
    let n = s.chars().count();
    if n == 0 || n > MAX_NAME_CHARS || s.chars().any(char::is_control) {
        return Err(err(format!(
            "{what}: '{}' must be 1..={MAX_NAME_CHARS} printable characters",
            s.escape_debug()
        )));
    }
    Ok(())
}

/// The set is well formed: ranges, balanced lock/unlock in every script, no lock-order cycle.
pub fn validate(set: &MbwiTaskSet) -> Result<(), MbwiError> {
    if !(1..=MAX_CPUS).contains(&set.cpus) {
        return Err(err(format!(
            "cpus: {} is out of range (1..={MAX_CPUS})",
            set.cpus
        )));
    }
    if !(1..=MAX_HORIZON_US).contains(&set.horizon_us) {
        return Err(err(format!(
            "horizon_us: {} is out of range (1..={MAX_HORIZON_US})",
            set.horizon_us
        )));
    }
    if set.tick_us > MAX_TICK_US {
        return Err(err(format!(
            "tick_us: {} is out of range (0..={MAX_TICK_US}; 0 = exact budget enforcement)",
            set.tick_us
        )));
    }
    if set.tasks.is_empty() || set.tasks.len() > MAX_TASKS {
        return Err(err(format!(
            "tasks: {} tasks, must be 1..={MAX_TASKS}",
            set.tasks.len()
        )));
    }
    let mut names = BTreeSet::new();
    let mut total_jobs = 0u64;
    // Lock-order graph: an edge a → b when some job locks b while holding a.
    let mut order: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (i, t) in set.tasks.iter().enumerate() {
        let at = format!("tasks[{i}]");
        check_name(&format!("{at}.name"), &t.name)?;
        if !names.insert(t.name.as_str()) {
            return Err(err(format!(
                "{at}.name: '{}' is used by two tasks (names must be unique)",
                t.name
            )));
        }
        let at = format!("tasks[{i}] ({})", t.name);
        check_task(&at, t, set)?;
        let fit = (set.horizon_us.saturating_sub(t.offset_us)) / t.period_us + 1;
        total_jobs += t.jobs.map_or(fit, |j| u64::from(j).min(fit));
        check_script(&format!("{at}.script"), &t.script, &mut order)?;
        let mut seen = BTreeSet::new();
        for (j, js) in t.job_scripts.iter().enumerate() {
            let jat = format!("{at}.job_scripts[{j}]");
            if !seen.insert(js.job) {
                return Err(err(format!("{jat}.job: job {} has two scripts", js.job)));
            }
            if let Some(n) = t.jobs {
                if js.job >= n {
                    return Err(err(format!(
                        "{jat}.job: {} is out of range (0..{n}, the task's jobs)",
                        js.job
                    )));
                }
            }
            check_script(&format!("{jat}.script"), &js.script, &mut order)?;
        }
    }
    if total_jobs > MAX_TOTAL_JOBS {
        return Err(err(format!(
            "horizon_us: {} gives {total_jobs} jobs over all tasks (at most {MAX_TOTAL_JOBS}); shorten the horizon or set jobs",
            set.horizon_us
        )));
    }
    if let Some(cycle) = find_cycle(&order) {
        return Err(err(format!(
            "scripts: the lock order {} forms a cycle and can deadlock; take nested mutexes in one global order",
            cycle.join(" → ")
        )));
    }
    Ok(())
}

fn check_task(at: &str, t: &MbwiTask, set: &MbwiTaskSet) -> Result<(), MbwiError> {
    if !(1..=MAX_PERIOD_US).contains(&t.period_us) {
        return Err(err(format!(
            "{at}.period_us: {} is out of range (1..={MAX_PERIOD_US})",
            t.period_us
        )));
    }
    if !(1..=t.period_us).contains(&t.runtime_us) {
        return Err(err(format!(
            "{at}.runtime_us: {} is out of range (1..=period_us = {})",
            t.runtime_us, t.period_us
        )));
    }
    if let Some(d) = t.deadline_us {
        // sched_setattr's own rule (kernel/sched/deadline.c __checkparam_dl): runtime ≤ deadline ≤ period.
        if !(t.runtime_us..=t.period_us).contains(&d) {
            return Err(err(format!(
                "{at}.deadline_us: {d} is out of range (runtime_us..=period_us = {}..={})",
                t.runtime_us, t.period_us
            )));
        }
    }
    if let Some(&c) = t.affinity.iter().find(|&&c| c >= set.cpus) {
        return Err(err(format!(
            "{at}.affinity: CPU {c} is out of range (0..{} — the set's cpus)",
            set.cpus
        )));
    }
    if t.offset_us > set.horizon_us {
        return Err(err(format!(
            "{at}.offset_us: {} is out of range (0..=horizon_us = {})",
            t.offset_us, set.horizon_us
        )));
    }
    if t.jobs == Some(0) {
        return Err(err(format!(
            "{at}.jobs: 0 is out of range (1..; leave it out for as many as fit the horizon)"
        )));
    }
    Ok(())
}

fn check_script(
    at: &str,
    script: &[Segment],
    order: &mut BTreeMap<String, BTreeSet<String>>,
) -> Result<(), MbwiError> {
    if script.is_empty() || script.len() > MAX_STEPS {
        return Err(err(format!(
            "{at}: {} steps, must be 1..={MAX_STEPS}",
            script.len()
        )));
    }
    let mut held: Vec<&str> = Vec::new();
    for (k, s) in script.iter().enumerate() {
        match s {
            Segment::ComputeUs(us) => {
                if !(1..=MAX_PERIOD_US).contains(us) {
                    return Err(err(format!(
                        "{at}[{k}].compute_us: {us} is out of range (1..={MAX_PERIOD_US})"
                    )));
                }
            }
            Segment::Lock(m) => {
                check_name(&format!("{at}[{k}].lock"), m)?;
                if held.contains(&m.as_str()) {
                    return Err(err(format!(
                        "{at}[{k}].lock: '{m}' is already held by this job (mutexes are not recursive)"
                    )));
                }
                for h in &held {
                    order.entry(h.to_string()).or_default().insert(m.clone());
                }
                held.push(m);
            }
            Segment::Unlock(m) => {
                check_name(&format!("{at}[{k}].unlock"), m)?;
                match held.iter().position(|h| *h == m.as_str()) {
                    Some(p) => {
                        held.remove(p);
                    }
                    None => {
                        return Err(err(format!(
                            "{at}[{k}].unlock: '{m}' is not held at this point (unlock only a mutex the job locked)"
                        )))
                    }
                }
            }
        }
    }
    if let Some(m) = held.first() {
        return Err(err(format!(
            "{at}: '{m}' is still held when the job ends (every lock needs its unlock)"
        )));
    }
    Ok(())
}

/// A cycle in the lock-order graph, as the mutexes along it (first repeated at the end).
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn dfs<'a>(
        n: &'a str,
        g: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        state.insert(n, 1);
        path.push(n);
        if let Some(next) = g.get(n) {
            for m in next {
                match state.get(m.as_str()).copied().unwrap_or(0) {
                    1 => {
                        let from = path.iter().position(|p| *p == m.as_str()).unwrap_or(0);
                        let mut c: Vec<String> =
                            path[from..].iter().map(|s| s.to_string()).collect();
                        c.push(m.clone());
                        return Some(c);
                    }
                    0 => {
                        if let Some(c) = dfs(m, g, state, path) {
                            return Some(c);
                        }
                    }
                    _ => {}
                }
            }
        }
        path.pop();
        state.insert(n, 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            let mut path = Vec::new();
            if let Some(c) = dfs(n, g, &mut state, &mut path) {
                return Some(c);
            }
        }
    }
    None
}
