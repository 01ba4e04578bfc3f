//! The global structures behind push() and pull(), through the hook interface of §2.3.7:
//!
//! | §2.3.7 hook    | here                                                               |
//! |----------------|--------------------------------------------------------------------|
//! | `data_init`    | the constructor (`CpuDl::new`, `CpuPri::new`, …)                   |
//! | `data_cleanup` | `Drop` (nothing outlives a run)                                    |
//! | `data_preempt` | [`GlobalStructure::preempt`]: an enqueue changed what the CPU shows |
//! | `data_finish`  | [`GlobalStructure::finish`]: a dequeue did (possibly to nothing)   |
//! | `data_find`    | [`GlobalStructure::find`]                                          |
//! | `data_check`   | [`GlobalStructure::check`]                                         |
//!
//! A structure plays one of two roles. A *push* structure tracks each CPU's running task (the
//! queue top) and finds the CPU a task should be pushed to: a free CPU, or the one running the
//! lowest-priority task if that is lower than the task's (kernel: `cpudl_find`,
//! `cpupri_find`). A *pull* structure tracks each CPU's highest-priority waiting task (the
//! queue's second) and finds the CPU to pull from: the one whose waiting task beats the puller's
//! running task by the most.
//!
//! preempt() and finish() are only ever called with the CPU's run-queue lock held (as the kernel
//! calls `cpudl_set`/`cpupri_set` under `rq->lock`), so a checker holding every run-queue lock
//! sees each structure at rest: any disagreement with the queues is a bug, never a race.

pub mod cpudl;
pub mod cpupri;
pub mod flat;
pub mod scan;

use crate::task::Key;
use std::sync::Arc;

/// Which role a structure instance plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Push,
    Pull,
}

pub trait GlobalStructure: Send + Sync {
    fn name(&self) -> &'static str;
    /// `data_preempt`: an enqueue on `cpu` changed the key this structure tracks for it.
    fn preempt(&self, cpu: usize, key: Key);
    /// `data_finish`: a dequeue on `cpu` changed it; `None`: the CPU has nothing to track any
    /// more (idle for a push structure, no waiting task for a pull structure).
    fn finish(&self, cpu: usize, key: Option<Key>);
    /// `data_find`. Push role: the CPU a task with key `key` should go to. Pull role: the CPU
    /// to pull from when `this_cpu` runs a task with key `key` (`None`: it is idle). Never
    /// `this_cpu`.
    fn find(&self, key: Option<Key>, this_cpu: usize) -> Option<usize>;
    /// `data_check`: `expected[cpu]` is the key this structure must hold for each CPU.
    /// Called with every run-queue lock held. `Err` names the invariant and shows the state.
    fn check(&self, expected: &[Option<Key>]) -> Result<(), Violated>;
}

/// A broken invariant: its name and the state that broke it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violated {
    pub invariant: String,
    pub state: String,
}

impl Violated {
    pub fn new(invariant: impl Into<String>, state: impl Into<String>) -> Self {
        Violated {
            invariant: invariant.into(),
            state: state.into(),
        }
    }
}

/// A deliberately broken structure, to show that the checkers fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// cpudl's heapify-down compares the moved element with the left child only, so a larger
    /// right child can stay below a smaller parent.
    CpudlLeftOnly,
}

impl Fault {
    pub fn name(self) -> &'static str {
        match self {
            Fault::CpudlLeftOnly => "cpudl-left-only",
        }
    }
    pub fn parse(s: &str) -> Option<Fault> {
        (s == "cpudl-left-only").then_some(Fault::CpudlLeftOnly)
    }
}

/// A lab configuration: which structure serves push() and which serves pull().
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StructureKind {
    /// The kernel's SCHED_DEADLINE today: push through cpudl (max-heap), pull by scanning the
    /// overloaded CPUs' `earliest_dl.next` (kernel/sched/deadline.c, `pull_dl_task`).
    Cpudl,
    /// The thesis' PRAcTISE SCHED_DEADLINE (§2.3.4, Figs. 2.26–2.27): push through cpudl, pull
    /// through the proposed min-heap of the waiting tasks' deadlines.
    PullHeap,
    /// The kernel's SCHED_FIFO: push through cpupri (priority vector), pull by scanning the
    /// overloaded CPUs (kernel/sched/rt.c, `pull_rt_task`). Fixed priorities only.
    Cpupri,
    /// Ours: one atomic word per CPU for each role, no lock — O(1) modify, O(M) find; the
    /// opposite trade-off to cpudl's O(log M) locked modify and O(1) find.
    Flat,
}

pub const ALL_STRUCTURES: [StructureKind; 4] = [
    StructureKind::Cpudl,
    StructureKind::PullHeap,
    StructureKind::Cpupri,
    StructureKind::Flat,
];

impl StructureKind {
    pub fn name(self) -> &'static str {
        match self {
            StructureKind::Cpudl => "cpudl",
            StructureKind::PullHeap => "pullheap",
            StructureKind::Cpupri => "cpupri",
            StructureKind::Flat => "flat",
        }
    }
    pub fn parse(s: &str) -> Option<StructureKind> {
        ALL_STRUCTURES.into_iter().find(|k| k.name() == s)
    }
    /// The policy it runs under by default: cpupri only knows fixed priorities; the others run
    /// EDF as in the thesis' PRAcTISE experiments (§2.3.9).
    pub fn natural_policy(self) -> crate::Policy {
        match self {
            StructureKind::Cpupri => crate::Policy::Fp,
            _ => crate::Policy::Edf,
        }
    }
    pub fn push_name(self) -> &'static str {
        match self {
            StructureKind::Cpudl | StructureKind::PullHeap => "cpudl",
            StructureKind::Cpupri => "cpupri",
            StructureKind::Flat => "flat",
        }
    }
    pub fn pull_name(self) -> &'static str {
        match self {
            StructureKind::Cpudl | StructureKind::Cpupri => "scan",
            StructureKind::PullHeap => "pullheap",
            StructureKind::Flat => "flat",
        }
    }
}

/// The overloaded CPUs (kernel: `rd->dlo_mask`/`dlo_count`, `rd->rto_mask`/`rto_count`): a CPU
/// is overloaded while its queue holds a task that is not running. Maintained by the run-queue
/// code under the CPU's lock, read without a lock by the scan pull.
#[derive(Debug, Default)]
pub struct Overload {
    pub mask: std::sync::atomic::AtomicU64,
    pub count: std::sync::atomic::AtomicU32,
}

impl Overload {
    /// kernel `dl_set_overload`: the mask bit, `smp_wmb()`, then the count — so a reader that
    /// sees the count (Acquire) also sees the bit. Release on the count is that barrier.
    pub fn set(&self, cpu: usize) {
        use std::sync::atomic::Ordering::*;
        self.mask.fetch_or(1 << cpu, Relaxed);
        self.count.fetch_add(1, Release);
    }
    /// kernel `dl_clear_overload`: the count first, then the bit, with no barrier (a reader
    /// that still sees the bit finds no waiting task there and moves nothing).
    pub fn clear(&self, cpu: usize) {
        use std::sync::atomic::Ordering::*;
        self.count.fetch_sub(1, Relaxed);
        self.mask.fetch_and(!(1 << cpu), Relaxed);
    }
}

/// Build the (push, pull) structures of a configuration for `m` CPUs.
pub fn build(
    kind: StructureKind,
    m: usize,
    fault: Option<Fault>,
    overload: &Arc<Overload>,
) -> (Box<dyn GlobalStructure>, Box<dyn GlobalStructure>) {
    let fault = fault.filter(|f| match f {
        Fault::CpudlLeftOnly => kind.push_name() == "cpudl",
    });
    match kind {
        StructureKind::Cpudl => (
            Box::new(cpudl::CpuDl::push_heap(m, fault)),
            Box::new(scan::Scan::new(m, overload.clone())),
        ),
        StructureKind::PullHeap => (
            Box::new(cpudl::CpuDl::push_heap(m, fault)),
            Box::new(cpudl::CpuDl::pull_heap(m)),
        ),
        StructureKind::Cpupri => (
            Box::new(cpupri::CpuPri::new(m)),
            Box::new(scan::Scan::new(m, overload.clone())),
        ),
        StructureKind::Flat => (
            Box::new(flat::Flat::new(m, Role::Push)),
            Box::new(flat::Flat::new(m, Role::Pull)),
        ),
    }
}

/// Format a per-CPU key list for a violation's state.
pub(crate) fn fmt_keys(v: &[Option<Key>]) -> String {
    let parts: Vec<String> = v
        .iter()
        .enumerate()
        .map(|(c, k)| match k {
            Some(k) => format!("{c}:{k}"),
            None => format!("{c}:-"),
        })
        .collect();
    format!("[{}]", parts.join(" "))
}
