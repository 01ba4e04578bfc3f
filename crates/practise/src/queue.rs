//! Per-CPU ready queues (§2.3.4). Every ready task of a CPU is in its queue, the running one
//! included: the top is `curr` (PRAcTISE skips the context switch, so "running" means "at the
//! top"), the second is the highest-priority task that push() may move away and that another
//! CPU's pull() may take (the kernel's `earliest_dl.next` / pushable tasks).
//!
//! Two implementations to compare, as §2.3.4 suggests:
//! - [`TaskHeap`], an array binary min-heap (PRAcTISE used B. Brandenburg's heap; this is a
//!   binary heap, not the binomial heap of LITMUS^RT's `bheap.h`), with O(1) access to the
//!   second task (the better child of the root) and O(log n) removal of it;
//! - a `BTreeMap` ordered by (key, id): the kernel keeps its queues in red-black trees; Rust's
//!   standard library has no red-black tree, and a B-tree is the ordered map it offers (same
//!   O(log n) interface; it allocates nodes on insertion, where the kernel's rb-nodes live in the
//!   task).

use crate::task::Task;
use std::collections::BTreeMap;

/// Initial capacity of a heap queue: enqueue does not allocate in the timed path until a queue
/// grows beyond this.
pub const QUEUE_CAPACITY: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    Heap,
    Btree,
}

impl QueueKind {
    pub fn name(self) -> &'static str {
        match self {
            QueueKind::Heap => "heap",
            QueueKind::Btree => "btree",
        }
    }
    pub fn parse(s: &str) -> Option<QueueKind> {
        match s {
            "heap" => Some(QueueKind::Heap),
            "btree" => Some(QueueKind::Btree),
            _ => None,
        }
    }
}

/// An array binary min-heap of tasks ordered by [`Task::order`].
#[derive(Clone, Debug, Default)]
pub struct TaskHeap {
    v: Vec<Task>,
}

#[inline]
fn less(a: &Task, b: &Task) -> bool {
    a.order() < b.order()
}

impl TaskHeap {
    pub fn with_capacity(n: usize) -> Self {
        TaskHeap {
            v: Vec::with_capacity(n),
        }
    }
    pub fn len(&self) -> usize {
        self.v.len()
    }
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
    pub fn insert(&mut self, t: Task) {
        self.v.push(t);
        self.sift_up(self.v.len() - 1);
    }
    pub fn first(&self) -> Option<Task> {
        self.v.first().copied()
    }
    /// The second-smallest task: the smaller child of the root.
    pub fn second_index(&self) -> Option<usize> {
        match self.v.len() {
            0 | 1 => None,
            2 => Some(1),
            _ => Some(if less(&self.v[2], &self.v[1]) { 2 } else { 1 }),
        }
    }
    pub fn second(&self) -> Option<Task> {
        self.second_index().map(|i| self.v[i])
    }
    pub fn remove_at(&mut self, i: usize) -> Option<Task> {
        if i >= self.v.len() {
            return None;
        }
        let t = self.v.swap_remove(i);
        if i < self.v.len() {
            // The moved last element may belong above or below position i.
            if i > 0 && less(&self.v[i], &self.v[(i - 1) / 2]) {
                self.sift_up(i);
            } else {
                self.sift_down(i);
            }
        }
        Some(t)
    }
    pub fn position(&self, id: u64) -> Option<usize> {
        self.v.iter().position(|t| t.id == id)
    }
    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let p = (i - 1) / 2;
            if !less(&self.v[i], &self.v[p]) {
                break;
            }
            self.v.swap(i, p);
            i = p;
        }
    }
    fn sift_down(&mut self, mut i: usize) {
        let n = self.v.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && less(&self.v[l], &self.v[m]) {
                m = l;
            }
            if r < n && less(&self.v[r], &self.v[m]) {
                m = r;
            }
            if m == i {
                return;
            }
            self.v.swap(i, m);
            i = m;
        }
    }
    /// The heap property, for the checker: no child orders before its parent.
    pub fn check(&self) -> Result<(), String> {
        for i in 1..self.v.len() {
            let p = (i - 1) / 2;
            if less(&self.v[i], &self.v[p]) {
                return Err(format!(
                    "task heap: element {i} (key {}) orders before its parent {p} (key {})",
                    self.v[i].key, self.v[p].key
                ));
            }
        }
        Ok(())
    }
    pub fn tasks(&self) -> &[Task] {
        &self.v
    }
}

/// A CPU's ready queue.
#[derive(Clone, Debug)]
pub enum RunQueue {
    Heap(TaskHeap),
    Btree(BTreeMap<(u64, u64), Task>),
}

impl RunQueue {
    pub fn new(kind: QueueKind) -> RunQueue {
        match kind {
            QueueKind::Heap => RunQueue::Heap(TaskHeap::with_capacity(QUEUE_CAPACITY)),
            QueueKind::Btree => RunQueue::Btree(BTreeMap::new()),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            RunQueue::Heap(h) => h.len(),
            RunQueue::Btree(t) => t.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn insert(&mut self, t: Task) {
        match self {
            RunQueue::Heap(h) => h.insert(t),
            RunQueue::Btree(m) => {
                m.insert(t.order(), t);
            }
        }
    }
    /// The running task (top).
    pub fn first(&self) -> Option<Task> {
        match self {
            RunQueue::Heap(h) => h.first(),
            RunQueue::Btree(m) => m.values().next().copied(),
        }
    }
    /// The highest-priority waiting task.
    pub fn second(&self) -> Option<Task> {
        match self {
            RunQueue::Heap(h) => h.second(),
            RunQueue::Btree(m) => m.values().nth(1).copied(),
        }
    }
    pub fn pop_first(&mut self) -> Option<Task> {
        match self {
            RunQueue::Heap(h) => h.remove_at(0),
            RunQueue::Btree(m) => m.pop_first().map(|(_, t)| t),
        }
    }
    pub fn remove_second(&mut self) -> Option<Task> {
        match self {
            RunQueue::Heap(h) => h.second_index().and_then(|i| h.remove_at(i)),
            RunQueue::Btree(m) => {
                let k = *m.keys().nth(1)?;
                m.remove(&k)
            }
        }
    }
    /// Remove a task by id (replay: a blocked or migrated task, wherever it is in the queue).
    pub fn remove(&mut self, id: u64) -> Option<Task> {
        match self {
            RunQueue::Heap(h) => h.position(id).and_then(|i| h.remove_at(i)),
            RunQueue::Btree(m) => {
                let k = m.iter().find(|(_, t)| t.id == id).map(|(k, _)| *k)?;
                m.remove(&k)
            }
        }
    }
    /// Every task, highest priority first.
    pub fn sorted(&self) -> Vec<Task> {
        match self {
            RunQueue::Heap(h) => {
                let mut v = h.tasks().to_vec();
                v.sort_by_key(Task::order);
                v
            }
            RunQueue::Btree(m) => m.values().copied().collect(),
        }
    }
    /// The queue's own invariant (heap property; the B-tree keeps its order by construction).
    pub fn check(&self) -> Result<(), String> {
        match self {
            RunQueue::Heap(h) => h.check(),
            RunQueue::Btree(m) => {
                for (k, t) in m {
                    if *k != t.order() {
                        return Err(format!("btree: task {} filed under {k:?}", t.id));
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(id: u64, key: u64) -> Task {
        Task { id, key, end_ns: 0 }
    }

    #[test]
    fn first_and_second_by_hand() {
        for kind in [QueueKind::Heap, QueueKind::Btree] {
            let mut q = RunQueue::new(kind);
            assert_eq!(q.first(), None);
            for (id, key) in [(1, 50), (2, 10), (3, 30), (4, 20), (5, 10)] {
                q.insert(t(id, key));
            }
            // (10,2) < (10,5) < (20,4) < (30,3) < (50,1)
            assert_eq!(q.first().map(|t| t.id), Some(2));
            assert_eq!(q.second().map(|t| t.id), Some(5));
            assert_eq!(q.remove_second().map(|t| t.id), Some(5));
            assert_eq!(q.second().map(|t| t.id), Some(4));
            assert_eq!(q.pop_first().map(|t| t.id), Some(2));
            assert_eq!(q.remove(3).map(|t| t.id), Some(3));
            assert_eq!(q.remove(3), None);
            let ids: Vec<u64> = q.sorted().iter().map(|t| t.id).collect();
            assert_eq!(ids, vec![4, 1]);
            q.check().unwrap();
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64),
        PopFirst,
        RemoveSecond,
        Remove(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u64..20).prop_map(Op::Insert),
            1 => Just(Op::PopFirst),
            1 => Just(Op::RemoveSecond),
            1 => (0u64..40).prop_map(Op::Remove),
        ]
    }

    proptest! {
        /// Both queues against a sorted vector (the reference model).
        #[test]
        fn queues_match_a_sorted_vector(ops in proptest::collection::vec(op(), 0..200)) {
            for kind in [QueueKind::Heap, QueueKind::Btree] {
                let mut q = RunQueue::new(kind);
                let mut model: Vec<Task> = Vec::new();
                let mut next_id = 0;
                for o in &ops {
                    match *o {
                        Op::Insert(k) => {
                            let x = t(next_id, k);
                            next_id += 1;
                            q.insert(x);
                            model.push(x);
                            model.sort_by_key(Task::order);
                        }
                        Op::PopFirst => {
                            let want = if model.is_empty() { None } else { Some(model.remove(0)) };
                            prop_assert_eq!(q.pop_first(), want);
                        }
                        Op::RemoveSecond => {
                            let want = if model.len() < 2 { None } else { Some(model.remove(1)) };
                            prop_assert_eq!(q.remove_second(), want);
                        }
                        Op::Remove(id) => {
                            let want = model.iter().position(|x| x.id == id).map(|i| model.remove(i));
                            prop_assert_eq!(q.remove(id), want);
                        }
                    }
                    prop_assert_eq!(q.first(), model.first().copied());
                    prop_assert_eq!(q.second(), model.get(1).copied());
                    prop_assert_eq!(q.len(), model.len());
                    prop_assert!(q.check().is_ok());
                }
                prop_assert_eq!(q.sorted(), model.clone());
            }
        }
    }
}
