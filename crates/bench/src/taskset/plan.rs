//! From a task set, a policy and a placement to one thread specification per task, plus the
//! predictions of the schedulability tests for exactly that configuration.

use super::field::*;
use super::TasksetError;
use rtscope_analysis::sched::{self, Fit, KernelLimits, PartitionTest, PriorityOrder};
use rtscope_model::taskset::{Placement, Task, TaskSet, TestResult, Verdict};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    Deadline,
    Fifo(PriorityOrder),
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacementKind {
    Global,
    Partitioned(Fit),
    /// Clusters of `size` consecutive CPUs, global scheduling inside each.
    Clustered {
        size: u32,
        fit: Fit,
    },
}

/// One piece of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Calibrated work worth this many ns (rt-app "run").
    Run(u64),
    /// Busy for this much wall-clock time (rt-app "runtime").
    Busy(u64),
    /// Relative sleep (rt-app "sleep").
    Sleep(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadPolicy {
    Deadline {
        runtime_ns: u64,
        deadline_ns: u64,
        period_ns: u64,
    },
    Fifo(u32),
    Rr(u32),
    Other(i32),
}

impl ThreadPolicy {
    pub fn name(&self) -> &'static str {
        match self {
            ThreadPolicy::Deadline { .. } => "deadline",
            ThreadPolicy::Fifo(_) => "fifo",
            ThreadPolicy::Rr(_) => "rr",
            ThreadPolicy::Other(_) => "other",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TaskSpec {
    pub task: Task,
    pub policy: ThreadPolicy,
    /// Affinity; empty = every CPU of the run.
    pub cpus: Vec<u32>,
    /// Cpuset group (root domain) index for partitioned/clustered SCHED_DEADLINE.
    pub group: Option<usize>,
    pub segments: Vec<Segment>,
    /// First release at t0 + offset (rt-app "delay").
    pub offset_ns: u64,
    /// Stop after this many jobs (rt-app "loop"); None = until the run ends.
    pub max_jobs: Option<u64>,
    /// How the next release follows a job (rt-app's timer event at the end of the job).
    pub release: Release,
}

/// The timer that releases a task's jobs, as rt-app's timer event: after each job the timer's
/// next expiry moves one period on; the thread sleeps until it unless it is already past.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Release {
    /// rt-app's "relative" mode (its default): a job that ends after the next expiry moves the
    /// timer to now, so the lateness is not carried over. Absolute: the expiries stay on the
    /// grid t0 + k·T and a late task releases its pending jobs at once (a task set's tasks).
    pub relative: bool,
    /// Tasks with the same number share one timer (rt-app threads naming the same timer `ref`):
    /// each of their jobs moves the one timer a period on, so n threads sharing it are released
    /// in turn, each every n periods on average.
    pub shared: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RunPlan {
    pub specs: Vec<TaskSpec>,
    /// CPU groups needing their own root domain (exclusive cpusets); empty = none.
    pub groups: Vec<Vec<u32>>,
    pub placement: Placement,
    /// The scopes predictions are made for: (name, CPUs, task indices).
    pub scopes: Vec<(String, Vec<u32>, Vec<usize>)>,
    pub policy: String,
    pub priorities: Option<String>,
    pub margin: f64,
}

fn scope_name(cpus: &[u32]) -> String {
    match cpus {
        [c] => format!("cpu{c}"),
        [a, .., b] => format!("cpus{a}-{b}"),
        [] => "none".into(),
    }
}

/// Highest SCHED_FIFO priority rtscope gives a task (leaves 99 to the kernel's watchdogs and
/// measurement threads).
pub const FIFO_TOP: u32 = 90;

/// Build the plan. `limits` gives the DEADLINE capacity a CPU offers (for the bin test).
pub fn plan(
    set: &TaskSet,
    policy: PolicyKind,
    placement: PlacementKind,
    margin: f64,
    cpus: &[u32],
    limits: KernelLimits,
) -> Result<RunPlan, TasksetError> {
    let o = PlanOptions {
        margin,
        ..PlanOptions::default()
    };
    plan_with(set, policy, placement, cpus, limits, &o)
}

/// Reservation and packing options of a plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanOptions {
    /// SCHED_DEADLINE runtime = C × margin + extra_runtime_ns.
    pub margin: f64,
    pub extra_runtime_ns: u64,
    /// Pack every policy with the SCHED_DEADLINE utilisation test (capacity
    /// (limit − fair server)/margin), so that deadline, fifo and other runs of one set use the
    /// same placement (the thesis compares policies on one partition); otherwise each policy
    /// packs with its own test (EDF utilisation/demand, or RTA for fixed priorities).
    pub same_bins: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            margin: 1.1,
            extra_runtime_ns: 0,
            same_bins: false,
        }
    }
}

/// Build the plan with explicit options.
pub fn plan_with(
    set: &TaskSet,
    policy: PolicyKind,
    placement: PlacementKind,
    cpus: &[u32],
    limits: KernelLimits,
    o: &PlanOptions,
) -> Result<RunPlan, TasksetError> {
    let (margin, same_bins) = (o.margin, o.same_bins);
    let tasks = &set.tasks;
    let m = cpus.len();
    if m == 0 {
        return Err(TasksetError::Invalid(format!("{CPUS}: no CPU to run on")));
    }
    let u = set.utilisation();
    if u > m as f64 + 1e-9 {
        return Err(TasksetError::Invalid(format!(
            "task set: U = {u:.4} > {m} CPUs: infeasible on any scheduler"
        )));
    }
    let dl_cap = ((limits.limit_per_cpu - limits.fair_server_per_cpu) / margin).min(1.0);
    let cap = if policy == PolicyKind::Deadline {
        dl_cap
    } else {
        1.0
    };
    // Bin capacity with the rounding slack of `bin_tolerance` (a set that fills a CPU exactly must
    // fit); for SCHED_DEADLINE the kernel's integer arithmetic is checked after placement.
    let tol = bin_tolerance(tasks, cap);
    let (groups_cpus, assign, heuristic): (Vec<Vec<u32>>, Vec<usize>, &str) = match placement {
        PlacementKind::Global => (vec![cpus.to_vec()], vec![0; tasks.len()], "none"),
        PlacementKind::Partitioned(fit) => {
            let test = match policy {
                PolicyKind::Fifo(order) if !same_bins => PartitionTest::FixedPriority {
                    order,
                    capacity: cap + tol,
                },
                _ => PartitionTest::Edf {
                    capacity: cap + tol,
                },
            };
            let a = sched::partition(tasks, m, fit, test)
                .map_err(|e| TasksetError::Invalid(format!("{PLACEMENT} partitioned: {e}")))?;
            (cpus.iter().map(|&c| vec![c]).collect(), a, fit.name())
        }
        PlacementKind::Clustered { size, fit } => {
            if size == 0 || (m / size as usize) * size as usize != m {
                return Err(TasksetError::Invalid(format!(
                    "{CLUSTER_SIZE}: {size} does not divide the {m} CPUs of the run"
                )));
            }
            let clusters: Vec<Vec<u32>> = cpus.chunks(size as usize).map(|c| c.to_vec()).collect();
            let a = sched::partition(
                tasks,
                clusters.len(),
                fit,
                PartitionTest::ClusterGfb {
                    cpus: size,
                    capacity: cap + tol / size as f64,
                },
            )
            .map_err(|e| TasksetError::Invalid(format!("{PLACEMENT} clustered: {e}")))?;
            (clusters, a, fit.name())
        }
    };
    build(
        set,
        policy,
        placement,
        &groups_cpus,
        &assign,
        heuristic,
        limits,
        o,
    )
}

/// A partitioned plan with the placement given: task i on `cpus[assign[i]]`, each CPU its own
/// root domain for SCHED_DEADLINE (e.g. a set generated per CPU at that CPU's load, as the
/// thesis' partitioned experiment). The kernel's admission arithmetic is checked as for a packed
/// plan.
pub fn plan_assigned(
    set: &TaskSet,
    policy: PolicyKind,
    cpus: &[u32],
    assign: &[usize],
    limits: KernelLimits,
    o: &PlanOptions,
) -> Result<RunPlan, TasksetError> {
    if assign.len() != set.tasks.len() || assign.iter().any(|&a| a >= cpus.len()) {
        return Err(TasksetError::Invalid(format!(
            "placement: {} assignments for {} tasks on {} CPUs",
            assign.len(),
            set.tasks.len(),
            cpus.len()
        )));
    }
    let groups: Vec<Vec<u32>> = cpus.iter().map(|&c| vec![c]).collect();
    build(
        set,
        policy,
        PlacementKind::Partitioned(Fit::WorstFit),
        &groups,
        assign,
        "given",
        limits,
        o,
    )
}

#[allow(clippy::too_many_arguments)]
fn build(
    set: &TaskSet,
    policy: PolicyKind,
    placement: PlacementKind,
    groups_cpus: &[Vec<u32>],
    assign: &[usize],
    heuristic: &str,
    limits: KernelLimits,
    o: &PlanOptions,
) -> Result<RunPlan, TasksetError> {
    let (margin, extra_runtime_ns) = (o.margin, o.extra_runtime_ns);
    let tasks = &set.tasks;
    let prio_of: Vec<u32> = match policy {
        PolicyKind::Fifo(order) => {
            if tasks.len() > FIFO_TOP as usize {
                return Err(TasksetError::Invalid(format!(
                    "{POLICY} fifo: {} tasks need distinct priorities, at most {FIFO_TOP}",
                    tasks.len()
                )));
            }
            let ranks = sched::fp_priorities(tasks, order);
            let mut p = vec![0; tasks.len()];
            for (rank, &i) in ranks.iter().enumerate() {
                p[i] = FIFO_TOP - rank as u32;
            }
            p
        }
        _ => vec![0; tasks.len()],
    };
    let needs_rd = policy == PolicyKind::Deadline && placement != PlacementKind::Global;
    let mut specs = Vec::with_capacity(tasks.len());
    for (i, t) in tasks.iter().enumerate() {
        let pol = match policy {
            PolicyKind::Deadline => ThreadPolicy::Deadline {
                // Q = C × margin + a fixed allowance for the per-job overhead the reservation also
                // pays (wake-up, clock reads, the sleep syscall): a 10 % margin on a 50 µs job is
                // 5 µs, less than that overhead, and a CBS that overruns is postponed for good.
                runtime_ns: ((t.wcet_ns as f64 * margin).ceil() as u64 + extra_runtime_ns)
                    .min(t.deadline_ns),
                deadline_ns: t.deadline_ns,
                period_ns: t.period_ns,
            },
            PolicyKind::Fifo(_) => ThreadPolicy::Fifo(prio_of[i]),
            PolicyKind::Other => ThreadPolicy::Other(0),
        };
        specs.push(TaskSpec {
            task: t.clone(),
            policy: pol,
            cpus: groups_cpus[assign[i]].clone(),
            group: needs_rd.then_some(assign[i]),
            segments: vec![Segment::Run(t.wcet_ns)],
            offset_ns: 0,
            max_jobs: None,
            release: Release::default(),
        });
    }
    if needs_rd {
        kernel_admits_groups(&specs, assign, groups_cpus, limits).map_err(|e| {
            TasksetError::Invalid(format!("{PLACEMENT} {}: {e}", placement_name(placement)))
        })?;
    }
    let scopes = groups_cpus
        .iter()
        .enumerate()
        .map(|(g, c)| {
            let idx: Vec<usize> = (0..tasks.len()).filter(|&i| assign[i] == g).collect();
            (
                if matches!(placement, PlacementKind::Global) {
                    "all".to_string()
                } else {
                    scope_name(c)
                },
                c.clone(),
                idx,
            )
        })
        .collect();
    let kind = placement_name(placement);
    Ok(RunPlan {
        specs,
        groups: if needs_rd {
            groups_cpus.to_vec()
        } else {
            Vec::new()
        },
        placement: Placement {
            kind: kind.into(),
            heuristic: heuristic.into(),
            cpus: (0..tasks.len())
                .map(|i| groups_cpus[assign[i]].clone())
                .collect(),
        },
        scopes,
        policy: match policy {
            PolicyKind::Deadline => "deadline",
            PolicyKind::Fifo(_) => "fifo",
            PolicyKind::Other => "other",
        }
        .into(),
        priorities: match policy {
            PolicyKind::Fifo(PriorityOrder::RateMonotonic) => Some("rm".into()),
            PolicyKind::Fifo(PriorityOrder::DeadlineMonotonic) => Some("dm".into()),
            PolicyKind::Fifo(PriorityOrder::AsListed) => Some("given".into()),
            _ => None,
        },
        margin,
    })
}

fn placement_name(p: PlacementKind) -> &'static str {
    match p {
        PlacementKind::Global => "global",
        PlacementKind::Partitioned(_) => "partitioned",
        PlacementKind::Clustered { .. } => "clustered",
    }
}

/// Slack of the bin test (utilisation, absolute): Σᵢ 0.5 ns / Tᵢ over the whole set — the most
/// that rounding every C to whole nanoseconds (as `taskset gen` and any ns-based file do) can add
/// to the utilisation sum of any bin — plus 1e-9 × capacity for binary floating point (the
/// capacity (0.95 − 0.05)/1.0 is 0.8999999999999999 in binary). Without it a set generated to
/// fill a CPU exactly (R = 0.9 at capacity 0.90) is refused about half the time: its exact U
/// exceeds 0.9 by 6e-9 … 8e-8 (10 sets of `taskset gen -n 4 -u 0.9 --seed 1`, checked with
/// rationals). 4 tasks with T ≥ 10 ms give a slack ≤ 2e-7; the kernel's own resolution is
/// 2⁻²⁰ ≈ 9.5e-7 per reservation (see `kernel_admits_groups`).
pub fn bin_tolerance(tasks: &[Task], capacity: f64) -> f64 {
    let rounding: f64 = tasks
        .iter()
        .filter(|t| t.period_ns > 0)
        .map(|t| 0.5 / t.period_ns as f64)
        .sum();
    rounding + 1e-9 * capacity
}

/// kernel/sched: bandwidths are fixed point with BW_SHIFT = 20 (BW_UNIT = 2²⁰ = 1.0).
const BW_SHIFT: u32 = 20;

/// The kernel's `to_ratio(period, runtime)`: (runtime << BW_SHIFT) / period, rounded down.
pub fn to_ratio(period_ns: u64, runtime_ns: u64) -> u64 {
    if period_ns == 0 {
        return 0;
    }
    (((runtime_ns as u128) << BW_SHIFT) / period_ns as u128) as u64
}

/// A fraction known to come from integer ratios (sched_rt_runtime_us/sched_rt_period_us, fair
/// server runtime/period) back in BW_SHIFT fixed point, rounded down like `to_ratio` (the 1e-6
/// guards a product that is an exact integer in decimal but just below it in binary).
fn bw_of(fraction: f64) -> u64 {
    (fraction * (1u64 << BW_SHIFT) as f64 + 1e-6)
        .floor()
        .max(0.0) as u64
}

/// sched_setattr(2) refuses DEADLINE parameters outside what `__checkparam_dl` accepts (EINVAL):
/// a runtime under 2^DL_SCALE = 1024 ns, runtime ≤ deadline ≤ period broken, or a period outside
/// the sysctl bounds. Refuse such a task before any thread starts. `limits_ns`: (min, max).
pub fn dl_periods_admitted(specs: &[TaskSpec], limits_ns: (u64, u64)) -> Result<(), String> {
    let (min, max) = limits_ns;
    for s in specs {
        if let ThreadPolicy::Deadline {
            runtime_ns,
            deadline_ns,
            period_ns,
        } = s.policy
        {
            if !(min..=max).contains(&period_ns) {
                return Err(format!(
                    "task {}: period {} us is outside what this kernel's SCHED_DEADLINE admits ({}..={} us, kernel.sched_deadline_period_min_us/_max_us)",
                    s.task.id,
                    period_ns / 1000,
                    min / 1000,
                    max / 1000
                ));
            }
            if !(DL_MIN_RUNTIME_NS..=deadline_ns).contains(&runtime_ns) || deadline_ns > period_ns {
                return Err(format!(
                    "task {}: SCHED_DEADLINE runtime {runtime_ns} ns, deadline {deadline_ns} ns, period {period_ns} ns: the kernel admits {DL_MIN_RUNTIME_NS} ns <= runtime <= deadline <= period",
                    s.task.id
                ));
            }
        }
    }
    Ok(())
}

/// The shortest SCHED_DEADLINE runtime the kernel accepts (1 << DL_SCALE ns).
pub const DL_MIN_RUNTIME_NS: u64 = 1 << 10;

/// SCHED_DEADLINE admission of each group (root domain) in the kernel's integer arithmetic
/// (`__dl_overflow`): Σ to_ratio(P, Q) of the group's reservations + m × the fair server's
/// to_ratio ≤ m × to_ratio(sched_rt_period, sched_rt_runtime), m = the group's CPUs (symmetric
/// capacities: cap_scale(bw, 1024·m) = m·bw). The bin test works on C × margin in floating point
/// with a rounding slack and without the absolute `margin_add` allowance; this is the check that
/// the runtimes actually sent will be admitted, done before anything starts.
pub fn kernel_admits_groups(
    specs: &[TaskSpec],
    assign: &[usize],
    groups: &[Vec<u32>],
    limits: KernelLimits,
) -> Result<(), String> {
    if limits.limit_per_cpu >= 1.0 {
        return Ok(()); // sched_rt_runtime_us = -1: no DEADLINE admission limit
    }
    let limit = bw_of(limits.limit_per_cpu);
    let fair = bw_of(limits.fair_server_per_cpu);
    for (g, cpus) in groups.iter().enumerate() {
        let m = cpus.len() as u64;
        let asked: u64 = specs
            .iter()
            .zip(assign)
            .filter(|(_, &a)| a == g)
            .filter_map(|(s, _)| match s.policy {
                ThreadPolicy::Deadline {
                    runtime_ns,
                    period_ns,
                    ..
                } => Some(to_ratio(period_ns, runtime_ns)),
                _ => None,
            })
            .sum();
        if asked + m * fair > m * limit {
            return Err(format!(
                "{}: the kernel would refuse these reservations: Σ to_ratio(P, Q) = {asked} + {m} × {fair} (fair server) > {m} × {limit} (sched_rt_runtime/sched_rt_period), in units of 2^-20 (BW_SHIFT = 20); runtimes are C × margin + margin_add: lower {MARGIN}/{MARGIN_ADD} or the load",
                scope_name(cpus)
            ));
        }
    }
    Ok(())
}

/// The schedulability tests that apply to each scope of the plan, on C inflated by
/// `inflate_ns`. Tasks are grouped by scheduling class: DEADLINE and SCHED_OTHER tasks get the EDF
/// tests (for SCHED_OTHER they are the reference of what EDF would guarantee, not a CFS test),
/// FIFO/RR tasks the fixed-priority tests in their priority order; DEADLINE tasks also get the
/// kernel's admission rule on their reservations (not inflated).
pub fn predict(p: &RunPlan, limits: KernelLimits, inflate_ns: u64) -> Vec<TestResult> {
    let mut out = Vec::new();
    for (scope, cpus, idx) in &p.scopes {
        let m = cpus.len() as u32;
        let edf: Vec<&TaskSpec> = idx
            .iter()
            .map(|&i| &p.specs[i])
            .filter(|s| {
                matches!(
                    s.policy,
                    ThreadPolicy::Deadline { .. } | ThreadPolicy::Other(_)
                )
            })
            .collect();
        let mut fp: Vec<&TaskSpec> = idx
            .iter()
            .map(|&i| &p.specs[i])
            .filter(|s| matches!(s.policy, ThreadPolicy::Fifo(_) | ThreadPolicy::Rr(_)))
            .collect();
        fp.sort_by_key(|s| match s.policy {
            ThreadPolicy::Fifo(x) | ThreadPolicy::Rr(x) => std::cmp::Reverse(x),
            _ => std::cmp::Reverse(0),
        });
        let label = |mut r: TestResult| {
            if edf
                .iter()
                .any(|s| matches!(s.policy, ThreadPolicy::Other(_)))
                && r.test != "kernel-admission"
            {
                r.detail = format!("[EDF reference, not a CFS test] {}", r.detail);
            }
            r
        };
        if !edf.is_empty() {
            let ts: Vec<Task> = sched::inflate(
                &edf.iter().map(|s| s.task.clone()).collect::<Vec<_>>(),
                inflate_ns,
            );
            if m == 1 {
                out.extend(
                    sched::edf_uniprocessor_tests(&ts, scope)
                        .into_iter()
                        .map(label),
                );
            } else {
                out.push(label(sched::gfb(&ts, m, scope)));
            }
            let res: Vec<(u64, u64, u64)> = edf
                .iter()
                .filter_map(|s| match s.policy {
                    ThreadPolicy::Deadline {
                        runtime_ns,
                        deadline_ns,
                        period_ns,
                    } => Some((runtime_ns, deadline_ns, period_ns)),
                    _ => None,
                })
                .collect();
            if !res.is_empty() {
                let mut l = limits;
                if !p.groups.is_empty() {
                    // Other DEADLINE threads live in the default root domain, not in ours.
                    l.other_bandwidth = 0.0;
                }
                out.push(sched::kernel_admission(&res, m, l, scope));
            }
        }
        if !fp.is_empty() {
            let ts: Vec<Task> = sched::inflate(
                &fp.iter().map(|s| s.task.clone()).collect::<Vec<_>>(),
                inflate_ns,
            );
            if m == 1 {
                let mut v = Vec::new();
                let implicit = ts.iter().all(|t| t.deadline_ns >= t.period_ns);
                if implicit && p.priorities.as_deref() == Some("rm") {
                    v.push(sched::liu_layland(&ts, scope));
                    v.push(sched::hyperbolic(&ts, scope));
                }
                let mut r = sched::rta(&ts, PriorityOrder::AsListed, scope);
                if let Some(o) = &p.priorities {
                    r.test = format!("rta-{o}");
                }
                v.push(r);
                out.extend(v);
            } else {
                let u: f64 = ts.iter().map(Task::utilisation).sum();
                let (v, op) = if u > m as f64 + 1e-12 {
                    (Verdict::NotSchedulable, ">")
                } else {
                    (Verdict::Inconclusive, "≤")
                };
                out.push(TestResult {
                    test: "global-fp".into(),
                    scope: scope.clone(),
                    verdict: v,
                    exact: false,
                    detail: format!("U = {u:.4} {op} m = {m}; no sufficient global fixed-priority test is implemented"),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(us: &[(f64, u64)]) -> TaskSet {
        TaskSet {
            schema_version: 1,
            tasks: us
                .iter()
                .enumerate()
                .map(|(i, &(u, t_ms))| Task {
                    id: i as u32,
                    wcet_ns: (u * t_ms as f64 * 1e6) as u64,
                    period_ns: t_ms * 1_000_000,
                    deadline_ns: t_ms * 1_000_000,
                    wss_bytes: None,
                    name: None,
                })
                .collect(),
            generated: None,
        }
    }

    const LIM: KernelLimits = KernelLimits {
        limit_per_cpu: 0.95,
        fair_server_per_cpu: 0.05,
        other_bandwidth: 0.0,
    };

    #[test]
    fn partitioned_deadline_plan() {
        // U_i = 0.5, 0.4, 0.3, 0.2 on 2 CPUs, margin 1.1: bin capacity (0.95 − 0.05)/1.1 = 0.818.
        // WFD: 0.5→cpu0, 0.4→cpu1, 0.3→cpu1 (0.7), 0.2→cpu0 (0.7).
        let s = set(&[(0.5, 10), (0.4, 20), (0.3, 50), (0.2, 100)]);
        let p = plan(
            &s,
            PolicyKind::Deadline,
            PlacementKind::Partitioned(Fit::WorstFit),
            1.1,
            &[0, 1],
            LIM,
        )
        .unwrap();
        assert_eq!(p.placement.cpus, vec![vec![0], vec![1], vec![1], vec![0]]);
        assert_eq!(p.groups, vec![vec![0], vec![1]]);
        assert_eq!(p.specs[0].group, Some(0));
        // runtime = ⌈5 ms × 1.1⌉ = 5.5 ms
        assert_eq!(
            p.specs[0].policy,
            ThreadPolicy::Deadline {
                runtime_ns: 5_500_000,
                deadline_ns: 10_000_000,
                period_ns: 10_000_000
            }
        );
        let pr = predict(&p, LIM, 0);
        // cpu0: U = 0.7 ≤ 1 (EDF) and reservations 0.55 + 0.22 = 0.77 ≤ 0.9 (admission).
        assert!(pr
            .iter()
            .filter(|r| r.scope == "cpu0")
            .all(|r| r.verdict == Verdict::Schedulable));
        assert_eq!(
            pr.iter().filter(|r| r.test == "kernel-admission").count(),
            2
        );
    }

    #[test]
    fn deadline_parameters_the_kernel_refuses_are_named() {
        // Periods 10 ms and 100 ms; a kernel admitting 100 µs..=50 ms refuses the second.
        let s = set(&[(0.5, 10), (0.2, 100)]);
        let p = plan(
            &s,
            PolicyKind::Deadline,
            PlacementKind::Partitioned(Fit::WorstFit),
            1.1,
            &[0, 1],
            LIM,
        )
        .unwrap();
        assert_eq!(dl_periods_admitted(&p.specs, (100_000, 1 << 32)), Ok(()));
        let e = dl_periods_admitted(&p.specs, (100_000, 50_000_000)).unwrap_err();
        assert!(
            e.contains("period 100000 us") && e.contains("100..=50000 us"),
            "{e}"
        );
        // A runtime under 1024 ns (1 << DL_SCALE).
        let mut short = p.specs.clone();
        short[0].policy = ThreadPolicy::Deadline {
            runtime_ns: 1000,
            deadline_ns: 10_000_000,
            period_ns: 10_000_000,
        };
        let e = dl_periods_admitted(&short, (100_000, 1 << 32)).unwrap_err();
        assert!(
            e.contains("runtime 1000 ns") && e.contains("1024 ns <= runtime"),
            "{e}"
        );
    }

    #[test]
    fn fifo_rm_priorities_and_rejections() {
        let s = set(&[(0.2, 50), (0.2, 10), (0.2, 20)]);
        let p = plan(
            &s,
            PolicyKind::Fifo(PriorityOrder::RateMonotonic),
            PlacementKind::Global,
            1.0,
            &[0, 1],
            LIM,
        )
        .unwrap();
        // RM: T = 10 ms highest (90), 20 ms (89), 50 ms (88).
        let pr: Vec<_> = p.specs.iter().map(|s| s.policy).collect();
        assert_eq!(
            pr,
            vec![
                ThreadPolicy::Fifo(88),
                ThreadPolicy::Fifo(90),
                ThreadPolicy::Fifo(89)
            ]
        );
        assert!(p.groups.is_empty());
        // U = 2.4 > 2 CPUs → rejected before anything starts.
        let big = set(&[(0.8, 10), (0.8, 10), (0.8, 10)]);
        assert!(matches!(
            plan(
                &big,
                PolicyKind::Other,
                PlacementKind::Global,
                1.0,
                &[0, 1],
                LIM
            ),
            Err(TasksetError::Invalid(_))
        ));
        // Partitioning that cannot fit: 0.6 × 3 on 2 CPUs.
        let hard = set(&[(0.6, 10), (0.6, 10), (0.6, 10)]);
        let e = plan(
            &hard,
            PolicyKind::Other,
            PlacementKind::Partitioned(Fit::FirstFit),
            1.0,
            &[0, 1],
            LIM,
        );
        assert!(e.unwrap_err().to_string().contains("could not place task"));
    }

    fn ns_set(ct: &[(u64, u64)]) -> TaskSet {
        TaskSet {
            schema_version: 1,
            tasks: ct
                .iter()
                .enumerate()
                .map(|(i, &(c, t))| Task {
                    id: i as u32,
                    wcet_ns: c,
                    period_ns: t,
                    deadline_ns: t,
                    wss_bytes: None,
                    name: None,
                })
                .collect(),
            generated: None,
        }
    }

    #[test]
    fn set_filling_a_cpu_exactly_fits_within_rounding() {
        // Three tasks of U = 0.3 each, C rounded to whole ns as `taskset gen` does:
        // 0.3 × 10_000_003 = 3_000_000.9 → C = 3_000_001: U = 0.3 + 0.1/10_000_003 = 0.3 + 1.0e-8
        // 0.3 × 20_000_003 = 6_000_000.9 → C = 6_000_001: U = 0.3 + 0.1/20_000_003 = 0.3 + 5.0e-9
        // 0.3 × 30_000_003 = 9_000_000.9 → C = 9_000_001: U = 0.3 + 0.1/30_000_003 = 0.3 + 3.3e-9
        // ΣU = 0.9 + 1.83e-8 — 0.9 in decimal before rounding. The capacity (0.95 − 0.05)/1.0 is
        // 0.9 in decimal but 0.8999999999999999 in binary; the old test (U ≤ cap + 1e-12) refused
        // the third task. Slack = 0.5/10_000_003 + 0.5/20_000_003 + 0.5/30_000_003 = 9.17e-8
        // (+ 9e-10) ≥ 1.83e-8 → fits.
        let s = ns_set(&[
            (3_000_001, 10_000_003),
            (6_000_001, 20_000_003),
            (9_000_001, 30_000_003),
        ]);
        let u = s.utilisation();
        let cap = (LIM.limit_per_cpu - LIM.fair_server_per_cpu) / 1.0;
        assert!(
            u > cap + 1e-12,
            "U = {u:e} must exceed the capacity {cap:e} in floats"
        );
        let tol = bin_tolerance(&s.tasks, cap);
        assert!((tol - 9.2566e-8).abs() < 1e-11, "{tol:e}");
        let o = PlanOptions {
            margin: 1.0,
            extra_runtime_ns: 0,
            same_bins: false,
        };
        let p = plan_with(
            &s,
            PolicyKind::Deadline,
            PlacementKind::Partitioned(Fit::WorstFit),
            &[1],
            LIM,
            &o,
        )
        .expect("a set filling the CPU exactly must be placed");
        assert_eq!(p.groups, vec![vec![1]]);
        // The kernel admits it: to_ratio = ⌊C·2²⁰/T⌋ = ⌊314572.80…⌋ = 314572 for each task
        // (3_000_001·1_048_576/10_000_003 = 314572.81…), Σ = 943716; + fair server
        // ⌊0.05·2²⁰⌋ = ⌊52428.8⌋ = 52428 → 996144 ≤ ⌊0.95·2²⁰⌋ = ⌊996147.2⌋ = 996147.
        assert_eq!(to_ratio(10_000_003, 3_000_001), 314_572);
        assert_eq!(to_ratio(20_000_003, 6_000_001), 314_572);
        assert_eq!(to_ratio(30_000_003, 9_000_001), 314_572);
        // The slack does not reach beyond rounding: one more task of U = 1e-6 (10 ns / 10 ms)
        // makes ΣU = 0.9 + 1.02e-6 > capacity + slack (9.26e-8 + 0.5/10⁷ = 9.76e-8) → refused.
        let mut more = s.clone();
        more.tasks.push(Task {
            id: 3,
            wcet_ns: 10,
            period_ns: 10_000_000,
            deadline_ns: 10_000_000,
            wss_bytes: None,
            name: None,
        });
        let e = plan_with(
            &more,
            PolicyKind::Deadline,
            PlacementKind::Partitioned(Fit::WorstFit),
            &[1],
            LIM,
            &o,
        );
        assert!(e.unwrap_err().to_string().contains("could not place task"));
    }

    #[test]
    fn reservations_the_kernel_would_refuse_are_caught_before_the_run() {
        // U = 0.5 + 0.3 + 0.1 = 0.9 fits the bin (capacity 0.9, margin 1.0), but the 50 µs
        // allowance makes Q = 5.05, 3.05, 1.05 ms per 10 ms: to_ratio = ⌊Q·2²⁰/10⁷⌋ =
        // ⌊529530.88⌋ + ⌊319815.68⌋ + ⌊110100.48⌋ = 529530 + 319815 + 110100 = 959445;
        // + 52428 (fair server) = 1011873 > 996147 → refused with the arithmetic, exit 2.
        let s = ns_set(&[
            (5_000_000, 10_000_000),
            (3_000_000, 10_000_000),
            (1_000_000, 10_000_000),
        ]);
        let o = PlanOptions {
            margin: 1.0,
            extra_runtime_ns: 50_000,
            same_bins: false,
        };
        let e = plan_with(
            &s,
            PolicyKind::Deadline,
            PlacementKind::Partitioned(Fit::FirstFit),
            &[0],
            LIM,
            &o,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("cpu0") && e.contains("959445 + 1 × 52428") && e.contains("> 1 × 996147"),
            "{e}"
        );
        // Without the allowance: 524288 + 314572 + 104857 = 943717 + 52428 = 996145 ≤ 996147.
        let ok = PlanOptions {
            extra_runtime_ns: 0,
            ..o
        };
        assert!(plan_with(
            &s,
            PolicyKind::Deadline,
            PlacementKind::Partitioned(Fit::FirstFit),
            &[0],
            LIM,
            &ok,
        )
        .is_ok());
        // sched_rt_runtime_us = -1 (limit 1.0): no admission limit, nothing to check.
        let unlimited = KernelLimits {
            limit_per_cpu: 1.0,
            fair_server_per_cpu: 0.0,
            other_bandwidth: 0.0,
        };
        assert!(plan_with(
            &s,
            PolicyKind::Deadline,
            PlacementKind::Partitioned(Fit::FirstFit),
            &[0],
            unlimited,
            &PlanOptions {
                margin: 1.0,
                extra_runtime_ns: 0,
                same_bins: false
            },
        )
        .is_ok());
    }
}
