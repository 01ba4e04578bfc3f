//! Uniprocessor tests: EDF (utilisation, density, processor demand) and fixed priority
//! (Liu–Layland, hyperbolic bound, exact response-time analysis).

use super::{implicit, result, total_util};
use rtscope_model::taskset::{Task, TestResult, Verdict};

/// Fixed-priority assignment rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorityOrder {
    /// Shorter period → higher priority (Liu & Layland 1973).
    RateMonotonic,
    /// Shorter relative deadline → higher priority (Leung & Whitehead 1982).
    DeadlineMonotonic,
    /// The slice order is the priority order, highest first (explicit priorities, e.g. rt-app).
    AsListed,
}

/// Indices of `tasks` from highest to lowest priority; ties broken by the other parameter, then
/// by id, so the order is total and reproducible.
pub fn fp_priorities(tasks: &[Task], order: PriorityOrder) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..tasks.len()).collect();
    idx.sort_by_key(|&i| {
        let t = &tasks[i];
        match order {
            PriorityOrder::RateMonotonic => (t.period_ns, t.deadline_ns, t.id),
            PriorityOrder::DeadlineMonotonic => (t.deadline_ns, t.period_ns, t.id),
            PriorityOrder::AsListed => (i as u64, 0, 0),
        }
    });
    idx
}

/// EDF by utilisation/density. Implicit deadlines: U ≤ 1 is exact (Liu & Layland 1973).
/// Constrained: U > 1 is sufficient for failure, Σ C/D ≤ 1 sufficient for success.
pub fn edf_utilisation(tasks: &[Task], scope: &str) -> TestResult {
    let u = total_util(tasks);
    if u > 1.0 + 1e-12 {
        return result(
            "edf-utilisation",
            scope,
            Verdict::NotSchedulable,
            true,
            format!("U = {u:.4} > 1"),
        );
    }
    if implicit(tasks) {
        return result(
            "edf-utilisation",
            scope,
            Verdict::Schedulable,
            true,
            format!("U = {u:.4} ≤ 1 (implicit deadlines)"),
        );
    }
    let dens: f64 = tasks.iter().map(Task::density).sum();
    if dens <= 1.0 + 1e-12 {
        result(
            "edf-density",
            scope,
            Verdict::Schedulable,
            false,
            format!("Σ C/D = {dens:.4} ≤ 1"),
        )
    } else {
        result(
            "edf-density",
            scope,
            Verdict::Inconclusive,
            false,
            format!("Σ C/D = {dens:.4} > 1 (sufficient test only; see processor demand)"),
        )
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Hyperperiod, or None when it exceeds `cap`.
fn hyperperiod(tasks: &[Task], cap: u64) -> Option<u64> {
    let mut h: u64 = 1;
    for t in tasks {
        let g = gcd(h, t.period_ns);
        h = (h / g).checked_mul(t.period_ns)?;
        if h > cap {
            return None;
        }
    }
    Some(h)
}

/// Demand bound function dbf(t) = Σ max(0, ⌊(t − D_i)/T_i⌋ + 1)·C_i (Baruah, Rosier & Howell 1990).
pub fn dbf(tasks: &[Task], t: u64) -> u128 {
    tasks
        .iter()
        .filter(|k| t >= k.deadline_ns)
        .map(|k| ((t - k.deadline_ns) / k.period_ns + 1) as u128 * k.wcet_ns as u128)
        .sum()
}

/// Most absolute deadlines the processor-demand test will check before giving up.
const PDA_MAX_POINTS: usize = 2_000_000;

/// Exact EDF test for constrained deadlines: dbf(t) ≤ t at every absolute deadline t ≤ L, with
/// L = max(D_max, Σ(T_i − D_i)·U_i/(1 − U)) for U < 1 (Baruah et al. 1990), capped by the
/// hyperperiod.
pub fn edf_processor_demand(tasks: &[Task], scope: &str) -> TestResult {
    const NAME: &str = "edf-processor-demand";
    if tasks.is_empty() {
        return result(NAME, scope, Verdict::Schedulable, true, "no tasks".into());
    }
    let u = total_util(tasks);
    if u > 1.0 + 1e-12 {
        return result(
            NAME,
            scope,
            Verdict::NotSchedulable,
            true,
            format!("U = {u:.4} > 1"),
        );
    }
    let dmax = tasks.iter().map(|t| t.deadline_ns).max().unwrap_or(0);
    let h = hyperperiod(tasks, u64::MAX / 4);
    let la = if u < 1.0 - 1e-12 {
        let s: f64 = tasks
            .iter()
            .map(|t| (t.period_ns.saturating_sub(t.deadline_ns)) as f64 * t.utilisation())
            .sum();
        Some(((s / (1.0 - u)).ceil() as u64).max(dmax))
    } else {
        None
    };
    let bound = match (la, h) {
        (Some(a), Some(h)) => a.min(h + dmax),
        (Some(a), None) => a,
        (None, Some(h)) => h + dmax,
        (None, None) => {
            return result(
                NAME,
                scope,
                Verdict::Inconclusive,
                true,
                "U = 1 and the hyperperiod overflows: no finite interval to check".into(),
            )
        }
    };
    let mut points: Vec<u64> = Vec::new();
    for t in tasks {
        let mut d = t.deadline_ns;
        while d <= bound {
            points.push(d);
            if points.len() > PDA_MAX_POINTS {
                return result(
                    NAME,
                    scope,
                    Verdict::Inconclusive,
                    true,
                    format!(
                        "more than {PDA_MAX_POINTS} deadlines up to L = {bound} ns: not checked"
                    ),
                );
            }
            d += t.period_ns;
        }
    }
    points.sort_unstable();
    points.dedup();
    for &t in &points {
        let d = dbf(tasks, t);
        if d > t as u128 {
            return result(
                NAME,
                scope,
                Verdict::NotSchedulable,
                true,
                format!("dbf({t} ns) = {d} ns > {t} ns"),
            );
        }
    }
    result(
        NAME,
        scope,
        Verdict::Schedulable,
        true,
        format!(
            "dbf(t) ≤ t at all {} deadlines up to L = {bound} ns (U = {u:.4})",
            points.len()
        ),
    )
}

/// Liu & Layland 1973: U ≤ n(2^{1/n} − 1) is sufficient for RM with implicit deadlines.
pub fn liu_layland(tasks: &[Task], scope: &str) -> TestResult {
    let n = tasks.len().max(1) as f64;
    let bound = n * (2f64.powf(1.0 / n) - 1.0);
    let u = total_util(tasks);
    let (v, op) = if u <= bound + 1e-12 {
        (Verdict::Schedulable, "≤")
    } else {
        (Verdict::Inconclusive, ">")
    };
    result(
        "liu-layland",
        scope,
        v,
        false,
        format!("U = {u:.4} {op} n(2^(1/n) − 1) = {bound:.4}"),
    )
}

/// Bini, Buttazzo & Buttazzo 2003: Π(U_i + 1) ≤ 2 is sufficient for RM with implicit deadlines.
pub fn hyperbolic(tasks: &[Task], scope: &str) -> TestResult {
    let p: f64 = tasks.iter().map(|t| t.utilisation() + 1.0).product();
    let (v, op) = if p <= 2.0 + 1e-12 {
        (Verdict::Schedulable, "≤")
    } else {
        (Verdict::Inconclusive, ">")
    };
    result(
        "hyperbolic",
        scope,
        v,
        false,
        format!("Π(U_i + 1) = {p:.4} {op} 2"),
    )
}

/// Worst-case response times by exact RTA (Joseph & Pandya 1986; Audsley et al. 1993):
/// R_i = C_i + Σ_{j ∈ hp(i)} ⌈R_i / T_j⌉·C_j, iterated from R_i = Σ_{j ≤ i} C_j. Returns, for each
/// task in priority order, (index, Some(R)) or (index, None) when R exceeds D.
pub fn response_times(tasks: &[Task], order: PriorityOrder) -> Vec<(usize, Option<u64>)> {
    let prio = fp_priorities(tasks, order);
    let mut out = Vec::with_capacity(prio.len());
    for (rank, &i) in prio.iter().enumerate() {
        let hp = &prio[..rank];
        let c = tasks[i].wcet_ns as u128;
        let d = tasks[i].deadline_ns as u128;
        let mut r: u128 = c + hp.iter().map(|&j| tasks[j].wcet_ns as u128).sum::<u128>();
        let res = loop {
            if r > d {
                break None;
            }
            let next = c + hp
                .iter()
                .map(|&j| r.div_ceil(tasks[j].period_ns as u128) * tasks[j].wcet_ns as u128)
                .sum::<u128>();
            if next == r {
                break Some(r as u64);
            }
            r = next;
        };
        out.push((i, res));
    }
    out
}

/// Exact fixed-priority test for constrained deadlines (synchronous release is the critical
/// instant): schedulable iff every R_i ≤ D_i.
pub fn rta(tasks: &[Task], order: PriorityOrder, scope: &str) -> TestResult {
    let name = match order {
        PriorityOrder::RateMonotonic => "rta-rm",
        PriorityOrder::DeadlineMonotonic => "rta-dm",
        PriorityOrder::AsListed => "rta",
    };
    let rs = response_times(tasks, order);
    let mut parts = Vec::new();
    let mut ok = true;
    for (i, r) in &rs {
        let t = &tasks[*i];
        match r {
            Some(r) => parts.push(format!(
                "R{}={:.3}ms≤D={:.3}ms",
                t.id,
                ms(*r),
                ms(t.deadline_ns)
            )),
            None => {
                ok = false;
                parts.push(format!("R{}>D={:.3}ms", t.id, ms(t.deadline_ns)));
            }
        }
    }
    let v = if ok {
        Verdict::Schedulable
    } else {
        Verdict::NotSchedulable
    };
    result(name, scope, v, true, parts.join(", "))
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}
