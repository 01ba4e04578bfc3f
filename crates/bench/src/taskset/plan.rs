//! From a task set, a policy and a placement to one thread specification per task, plus the
//! predictions of the schedulability tests for exactly that configuration.

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
    let (margin, same_bins, extra_runtime_ns) = (o.margin, o.same_bins, o.extra_runtime_ns);
    let tasks = &set.tasks;
    let m = cpus.len();
    if m == 0 {
        return Err(TasksetError::Invalid("--cpus: no CPU to run on".into()));
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
    let (groups_cpus, assign, heuristic): (Vec<Vec<u32>>, Vec<usize>, &str) = match placement {
        PlacementKind::Global => (vec![cpus.to_vec()], vec![0; tasks.len()], "none"),
        PlacementKind::Partitioned(fit) => {
            let test = match policy {
                PolicyKind::Fifo(order) if !same_bins => PartitionTest::FixedPriority {
                    order,
                    capacity: cap,
                },
                _ => PartitionTest::Edf { capacity: cap },
            };
            let a = sched::partition(tasks, m, fit, test)
                .map_err(|e| TasksetError::Invalid(format!("--placement partitioned: {e}")))?;
            (cpus.iter().map(|&c| vec![c]).collect(), a, fit.name())
        }
        PlacementKind::Clustered { size, fit } => {
            if size == 0 || (m / size as usize) * size as usize != m {
                return Err(TasksetError::Invalid(format!(
                    "--cluster-size: {size} does not divide the {m} CPUs of the run"
                )));
            }
            let clusters: Vec<Vec<u32>> = cpus.chunks(size as usize).map(|c| c.to_vec()).collect();
            let a = sched::partition(
                tasks,
                clusters.len(),
                fit,
                PartitionTest::ClusterGfb {
                    cpus: size,
                    capacity: cap,
                },
            )
            .map_err(|e| TasksetError::Invalid(format!("--placement clustered: {e}")))?;
            (clusters, a, fit.name())
        }
    };
    let prio_of: Vec<u32> = match policy {
        PolicyKind::Fifo(order) => {
            if tasks.len() > FIFO_TOP as usize {
                return Err(TasksetError::Invalid(format!(
                    "--policy fifo: {} tasks need distinct priorities, at most {FIFO_TOP}",
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
        });
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
    let kind = match placement {
        PlacementKind::Global => "global",
        PlacementKind::Partitioned(_) => "partitioned",
        PlacementKind::Clustered { .. } => "clustered",
    };
    Ok(RunPlan {
        specs,
        groups: if needs_rd {
            groups_cpus.clone()
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
}
