//! The discrete-event simulator: hard CBS servers (SCHED_DEADLINE reservations) on m CPUs under
//! global EDF with affinities (clustered and partitioned are affinity sets), sharing mutexes
//! under one of the [`MbwiProtocol`]s.
//!
//! What is modelled, and from where:
//! * CBS as in kernel/sched/deadline.c: a new reservation starts with `d = t + D, c = Q`
//!   (`setup_new_dl_entity`); a wake-up keeps `(c, d)` unless the deadline passed or
//!   `c / (d − t) > Q / D` (`update_dl_entity`, `dl_entity_overflow`; constrained deadlines use
//!   the revised wake-up rule, `update_dl_revised_wakeup`); an exhausted budget throttles the
//!   server until `d − D + P` (`start_dl_timer`, `dl_next_period`), where
//!   `while c ≤ 0 { d += P; c += Q }` (`replenish_dl_entity`). A replenishment instant already
//!   past is applied at once, as the kernel does when `start_dl_timer` fails.
//! * Budget enforcement: exact (`tick_us` 0, HRTICK_DL), or noticed only at tick boundaries and
//!   when the task blocks or finishes (`update_curr_dl` runs from the tick and on dequeue).
//! * Scheduling: at every event the ready entities are ordered by deadline and placed greedily on
//!   the CPUs their affinity allows; an entity keeps the CPU it last ran on when that CPU is
//!   still free for it, so a task migrates only when it must. With disjoint affinity sets this is
//!   exact partitioned/clustered EDF; with overlapping sets it is a greedy heuristic, like the
//!   kernel's push/pull.
//! * Jobs: one at a time per task; a job that ends after its successor's release skips the
//!   releases already past (counted as `skipped`), so every job starts at a release instant —
//!   the same policy as the kernel experiment's threads.
//! * A mutex is handed to the next waiter on unlock: FIFO under `none` (a futex wakes
//!   SCHED_DEADLINE waiters in arrival order: all have prio −1) and under M-BWI (thesis §4.2.5);
//!   earliest deadline first under `mainline` and the thesis' implementation (rt_mutex waiter
//!   tree ordered by deadline).

use super::MbwiError;
use rtscope_model::mbwi::*;
use std::collections::BTreeMap;

/// Events processed before a simulation is declared runaway.
const MAX_STEPS: u64 = 20_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    Compute(u64),
    Lock(usize),
    Unlock(usize),
}

#[derive(Clone, Debug)]
struct Job {
    k: u32,
    release: u64,
    deadline: u64,
    steps: Vec<Step>,
    pc: usize,
    /// Remaining time of the compute step at `pc`.
    left: u64,
    start: Option<u64>,
    blocked: u64,
    spin: u64,
    blocked_since: Option<u64>,
}

#[derive(Clone, Debug)]
struct Task {
    q: i64,
    p: u64,
    d_rel: u64,
    mask: u64,
    next_release: Option<u64>,
    next_k: u32,
    max_jobs: Option<u32>,
    job: Option<Job>,
    blocked_on: Option<usize>,
    held: Vec<usize>,
    /// Mainline: the server whose parameters `pi_se` points to while boosted.
    donor: Option<usize>,
    results: Vec<SimJob>,
    skipped: u32,
}

#[derive(Clone, Debug)]
struct Server {
    c: i64,
    d: u64,
    throttled: bool,
    repl_at: u64,
    /// Never activated yet: the first wake-up sets up a new instance.
    fresh: bool,
}

impl Server {
    /// `replenish_dl_entity`: the deadline moves one period later per budget Q overdrawn
    /// (q > 0: validated with the task set).
    fn postpone(&mut self, q: i64, p: u64) {
        while self.c <= 0 {
            self.d += p;
            self.c += q;
        }
    }

    /// The same, then a deadline already in the past at `t` starts a new instance.
    fn replenish(&mut self, q: i64, p: u64, d_rel: u64, t: u64) {
        self.postpone(q, p);
        if self.d < t {
            self.d = t + d_rel;
            self.c = q;
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Mtx {
    owner: Option<usize>,
    /// In arrival order.
    waiters: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    /// Task index (server index under M-BWI): what stickiness is tracked for.
    entity: usize,
    task: usize,
    server: usize,
    inherited: Option<usize>,
    spin: bool,
}

#[derive(Clone, Copy, Debug)]
struct Cand {
    entity: usize,
    key: u64,
    mask: u64,
    server: usize,
    task: usize,
    inherited: Option<usize>,
    /// M-BWI: the server's own task is blocked (the server may busy-wait).
    own_blocked: bool,
}

pub(super) struct Sim<'a> {
    set: &'a MbwiTaskSet,
    proto: MbwiProtocol,
    t: u64,
    tasks: Vec<Task>,
    servers: Vec<Server>,
    mutexes: Vec<Mtx>,
    mutex_names: Vec<String>,
    runs: Vec<Option<Run>>,
    last_cpu: Vec<Option<u32>>,
    /// M-BWI: the server each task executed in at the previous placement.
    exec_in: Vec<Option<usize>>,
    all_cpus: u64,
    segments: Vec<SimSegment>,
    /// Index in `segments` of each CPU's last segment.
    last_seg: Vec<Option<usize>>,
    events: Vec<SimEvent>,
    /// Lowest budget any server reached (µs), for the invariant tests.
    pub(super) min_budget: i64,
}

fn mask_of(aff: &[u32], all: u64) -> u64 {
    if aff.is_empty() {
        all
    } else {
        aff.iter().fold(0, |m, &c| m | (1u64 << c))
    }
}

impl<'a> Sim<'a> {
    pub(super) fn new(set: &'a MbwiTaskSet, proto: MbwiProtocol) -> Sim<'a> {
        let all_cpus = if set.cpus >= 64 {
            u64::MAX
        } else {
            (1u64 << set.cpus) - 1
        };
        let mut mutex_ids: BTreeMap<String, usize> = BTreeMap::new();
        let mut mutex_names = Vec::new();
        let mut see = |s: &Segment| {
            if let Segment::Lock(m) | Segment::Unlock(m) = s {
                if !mutex_ids.contains_key(m) {
                    mutex_ids.insert(m.clone(), mutex_names.len());
                    mutex_names.push(m.clone());
                }
            }
        };
        for t in &set.tasks {
            t.script.iter().for_each(&mut see);
            t.job_scripts
                .iter()
                .flat_map(|j| j.script.iter())
                .for_each(&mut see);
        }
        let tasks = set
            .tasks
            .iter()
            .map(|t| Task {
                q: t.runtime_us as i64,
                p: t.period_us,
                d_rel: t.deadline(),
                mask: mask_of(&t.affinity, all_cpus),
                next_release: Some(t.offset_us),
                next_k: 0,
                max_jobs: t.jobs,
                job: None,
                blocked_on: None,
                held: Vec::new(),
                donor: None,
                results: Vec::new(),
                skipped: 0,
            })
            .collect::<Vec<_>>();
        let n = tasks.len();
        Sim {
            set,
            proto,
            t: 0,
            tasks,
            servers: vec![
                Server {
                    c: 0,
                    d: 0,
                    throttled: false,
                    repl_at: 0,
                    fresh: true,
                };
                n
            ],
            mutexes: vec![Mtx::default(); mutex_names.len()],
            mutex_names,
            runs: vec![None; set.cpus as usize],
            last_cpu: vec![None; n],
            exec_in: vec![None; n],
            all_cpus,
            segments: Vec::new(),
            last_seg: vec![None; set.cpus as usize],
            events: Vec::new(),
            min_budget: 0,
        }
    }

    fn compile(&self, i: usize, k: u32) -> Vec<Step> {
        let id = |m: &str| self.mutex_names.iter().position(|x| x == m).unwrap_or(0);
        self.set.tasks[i]
            .script_of(k)
            .iter()
            .map(|s| match s {
                Segment::ComputeUs(us) => Step::Compute(*us),
                Segment::Lock(m) => Step::Lock(id(m)),
                Segment::Unlock(m) => Step::Unlock(id(m)),
            })
            .collect()
    }

    fn name(&self, i: usize) -> String {
        self.set.tasks[i].name.clone()
    }

    fn event(
        &mut self,
        task: usize,
        kind: SimEventKind,
        mutex: Option<usize>,
        server: Option<usize>,
    ) {
        self.events.push(SimEvent {
            t_us: self.t,
            task: self.name(task),
            kind,
            mutex: mutex.map(|m| self.mutex_names[m].clone()),
            server: server.map(|s| self.name(s)),
        });
    }

    // -----------------------------------------------------------------------------------------
    // CBS

    /// The parameters replenishments use: the donor's while boosted (mainline `pi_of`).
    fn pi_params(&self, s: usize) -> (i64, u64, u64) {
        let w = match self.proto {
            MbwiProtocol::Mainline => self.tasks[s].donor.unwrap_or(s),
            _ => s,
        };
        let t = &self.tasks[w];
        (t.q, t.p, t.d_rel)
    }

    fn boosted(&self, s: usize) -> bool {
        self.proto == MbwiProtocol::Mainline && self.tasks[s].donor.is_some()
    }

    /// `update_dl_entity`: CBS wake-up rule (and `setup_new_dl_entity` on the first wake-up).
    fn wake_server(&mut self, s: usize) {
        let t = self.t;
        let (q, _, d_pi) = self.pi_params(s);
        let boosted = self.boosted(s);
        let (own_q, own_p, own_d) = (self.tasks[s].q, self.tasks[s].p, self.tasks[s].d_rel);
        let sv = &mut self.servers[s];
        if sv.fresh {
            sv.fresh = false;
            sv.d = t + own_d;
            sv.c = own_q;
            return;
        }
        if sv.throttled {
            return;
        }
        let past = sv.d < t;
        // dl_entity_overflow: runtime / (deadline − t) > dl_runtime / dl_deadline.
        let overflow =
            !past && (d_pi as i128) * (sv.c as i128) > ((sv.d - t) as i128) * (q as i128);
        if past || overflow {
            if own_d != own_p && !past && !boosted {
                // update_dl_revised_wakeup: c = dl_density · (d − t).
                sv.c = ((own_q as i128) * ((sv.d - t) as i128) / own_d as i128) as i64;
                return;
            }
            sv.d = t + d_pi;
            sv.c = q;
        }
    }

    /// `replenish_dl_entity`.
    fn replenish(&mut self, s: usize) {
        let t = self.t;
        let (q, p, d) = self.pi_params(s);
        let sv = &mut self.servers[s];
        sv.replenish(q, p, d, t);
        sv.throttled = false;
        self.event(s, SimEventKind::Replenish, None, Some(s));
    }

    /// The budget of server `s` is found exhausted (`update_curr_dl`'s throttle path).
    fn exhaust(&mut self, s: usize) {
        if self.boosted(s) {
            // is_dl_boosted: no throttling; enqueue_task_dl(ENQUEUE_REPLENISH) with pi_of's
            // runtime and period, at once.
            let w = self.tasks[s].donor.unwrap_or(s);
            let (q, p, _) = self.pi_params(s);
            self.servers[s].postpone(q, p);
            self.event(s, SimEventKind::Replenish, None, Some(w));
            return;
        }
        let t = self.t;
        let (d_rel, p) = (self.tasks[s].d_rel, self.tasks[s].p);
        let sv = &mut self.servers[s];
        sv.throttled = true;
        // dl_next_period uses the entity's own dl_deadline and dl_period.
        sv.repl_at = (sv.d + p).saturating_sub(d_rel);
        let due = sv.repl_at <= t;
        self.event(s, SimEventKind::Throttle, None, Some(s));
        if due {
            self.replenish(s);
        }
    }

    /// A task leaves the CPU for good (blocks or finishes): `dequeue_task_dl` → `update_curr_dl`
    /// notices an exhausted budget even between ticks.
    fn dequeue_check(&mut self, s: usize) {
        if self.servers[s].c <= 0 && !self.servers[s].throttled {
            self.exhaust(s);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Mainline priority inheritance (rt_mutex_setprio)

    fn chain_end(&self, mut i: usize) -> usize {
        for _ in 0..=self.tasks.len() {
            match self.tasks[i].blocked_on.and_then(|m| self.mutexes[m].owner) {
                Some(o) => i = o,
                None => break,
            }
        }
        i
    }

    /// `rt_mutex_adjust_prio` + `rt_mutex_setprio` for holder `h`: boosted when its top waiter
    /// has an earlier deadline (`dl_entity_preempt`); `pi_se` then points to the top waiter's
    /// `pi_se`. Boosting re-enqueues with ENQUEUE_REPLENISH (a throttled holder is unthrottled,
    /// an exhausted one refilled); deboosting with ENQUEUE_RESTORE (a deadline already past
    /// starts a new instance).
    fn adjust_prio(&mut self, h: usize) {
        if self.proto != MbwiProtocol::Mainline {
            return;
        }
        let top = self.tasks[h]
            .held
            .iter()
            .flat_map(|&m| self.mutexes[m].waiters.iter().copied())
            .min_by_key(|&w| self.servers[w].d);
        let want = top
            .filter(|&w| self.servers[w].d < self.servers[h].d)
            .map(|w| self.tasks[w].donor.unwrap_or(w));
        if want == self.tasks[h].donor {
            return;
        }
        let queued = self.tasks[h].job.is_some() && self.tasks[h].blocked_on.is_none();
        self.tasks[h].donor = want;
        let t = self.t;
        match want {
            Some(w) => {
                self.event(h, SimEventKind::Boost, None, Some(w));
                if queued {
                    let (q, p, d) = (self.tasks[w].q, self.tasks[w].p, self.tasks[w].d_rel);
                    let sv = &mut self.servers[h];
                    // enqueue_task_dl: "the boost overrides the throttle".
                    sv.throttled = false;
                    sv.replenish(q, p, d, t);
                }
            }
            None => {
                self.event(h, SimEventKind::Deboost, None, None);
                let (q, d) = (self.tasks[h].q, self.tasks[h].d_rel);
                let sv = &mut self.servers[h];
                if queued && !sv.throttled && sv.d < t {
                    sv.d = t + d;
                    sv.c = q;
                }
            }
        }
    }

    /// The PI chain walk from a task that just blocked: every owner up the chain is adjusted.
    fn adjust_chain(&mut self, from: usize) {
        let mut i = from;
        for _ in 0..=self.tasks.len() {
            let Some(o) = self.tasks[i].blocked_on.and_then(|m| self.mutexes[m].owner) else {
                break;
            };
            self.adjust_prio(o);
            i = o;
        }
    }

    // -----------------------------------------------------------------------------------------
    // Jobs and mutexes

    fn release(&mut self, i: usize) {
        let t = self.t;
        let k = self.tasks[i].next_k;
        let steps = self.compile(i, k);
        let left = match steps.first() {
            Some(Step::Compute(c)) => *c,
            _ => 0,
        };
        let d_rel = self.tasks[i].d_rel;
        self.tasks[i].job = Some(Job {
            k,
            release: t,
            deadline: t + d_rel,
            steps,
            pc: 0,
            left,
            start: None,
            blocked: 0,
            spin: 0,
            blocked_since: None,
        });
        self.tasks[i].next_release = None;
        self.event(i, SimEventKind::Release, None, None);
        self.wake_server(i);
    }

    fn finish(&mut self, i: usize) {
        let t = self.t;
        let Some(job) = self.tasks[i].job.take() else {
            return;
        };
        self.event(i, SimEventKind::Finish, None, None);
        self.tasks[i].results.push(SimJob {
            job: job.k,
            release_us: job.release,
            deadline_us: job.deadline,
            start_us: job.start,
            finish_us: Some(t),
            response_us: Some(t - job.release),
            blocked_us: job.blocked,
            spin_us: job.spin,
            missed: t > job.deadline,
        });
        self.dequeue_check(i);
        let task = &mut self.tasks[i];
        let mut next = job.release + task.p;
        let mut k = job.k + 1;
        while next < t && task.max_jobs.is_none_or(|m| k < m) {
            task.skipped += 1;
            k += 1;
            next += task.p;
        }
        let skipped_now = k - job.k - 1;
        task.next_k = k;
        task.next_release = match task.max_jobs {
            Some(m) if k >= m => None,
            _ => Some(next),
        };
        for _ in 0..skipped_now {
            self.event(i, SimEventKind::Skip, None, None);
        }
    }

    fn advance_pc(job: &mut Job) {
        job.pc += 1;
        job.left = match job.steps.get(job.pc) {
            Some(Step::Compute(c)) => *c,
            _ => 0,
        };
    }

    fn lock(&mut self, i: usize, m: usize) {
        let t = self.t;
        self.event(i, SimEventKind::LockRequest, Some(m), None);
        if self.mutexes[m].owner.is_none() {
            self.mutexes[m].owner = Some(i);
            self.tasks[i].held.push(m);
            if let Some(j) = self.tasks[i].job.as_mut() {
                Self::advance_pc(j);
            }
            self.event(i, SimEventKind::LockAcquire, Some(m), None);
            return;
        }
        self.tasks[i].blocked_on = Some(m);
        self.mutexes[m].waiters.push(i);
        if let Some(j) = self.tasks[i].job.as_mut() {
            j.blocked_since = Some(t);
        }
        if matches!(self.proto, MbwiProtocol::None | MbwiProtocol::Mainline) {
            self.dequeue_check(i);
        }
        self.adjust_chain(i);
    }

    fn unlock(&mut self, i: usize, m: usize) {
        let t = self.t;
        self.event(i, SimEventKind::Unlock, Some(m), None);
        self.tasks[i].held.retain(|&x| x != m);
        if let Some(j) = self.tasks[i].job.as_mut() {
            Self::advance_pc(j);
        }
        self.mutexes[m].owner = None;
        let waiters = &self.mutexes[m].waiters;
        let next = match self.proto {
            MbwiProtocol::None | MbwiProtocol::Mbwi => waiters.first().copied(),
            _ => waiters.iter().copied().min_by_key(|&w| self.servers[w].d),
        };
        if let Some(w) = next {
            self.mutexes[m].waiters.retain(|&x| x != w);
            self.mutexes[m].owner = Some(w);
            self.tasks[w].blocked_on = None;
            self.tasks[w].held.push(m);
            if let Some(j) = self.tasks[w].job.as_mut() {
                j.blocked += t - j.blocked_since.take().unwrap_or(t);
                Self::advance_pc(j);
            }
            self.event(w, SimEventKind::LockAcquire, Some(m), None);
            // The waiter slept in the kernel (futex / rt_mutex): its wake-up goes through the
            // CBS rule. Under M-BWI its server stayed active (lent), so it just continues.
            if matches!(self.proto, MbwiProtocol::None | MbwiProtocol::Mainline) {
                self.wake_server(w);
            }
            self.adjust_prio(w);
        }
        self.adjust_prio(i);
    }

    // -----------------------------------------------------------------------------------------
    // Placement

    fn candidates(&self) -> Vec<Cand> {
        let mut v = Vec::new();
        let ready = |s: usize| self.tasks[s].job.is_some() && !self.servers[s].throttled;
        match self.proto {
            MbwiProtocol::None | MbwiProtocol::Mainline => {
                for i in 0..self.tasks.len() {
                    if ready(i) && self.tasks[i].blocked_on.is_none() {
                        v.push(Cand {
                            entity: i,
                            key: self.servers[i].d,
                            mask: self.tasks[i].mask,
                            server: i,
                            task: i,
                            inherited: self.tasks[i].donor,
                            own_blocked: false,
                        });
                    }
                }
            }
            MbwiProtocol::Mbwi => {
                for s in 0..self.tasks.len() {
                    if ready(s) {
                        let r = self.chain_end(s);
                        v.push(Cand {
                            entity: s,
                            key: self.servers[s].d,
                            mask: self.tasks[s].mask,
                            server: s,
                            task: r,
                            inherited: (r != s).then_some(s),
                            own_blocked: self.tasks[s].blocked_on.is_some(),
                        });
                    }
                }
            }
            MbwiProtocol::MbwiImpl | MbwiProtocol::MbwiImplAffinity => {
                for i in 0..self.tasks.len() {
                    if self.tasks[i].job.is_none() || self.tasks[i].blocked_on.is_some() {
                        continue;
                    }
                    // The servers it can use: its own and those of every task blocked on it
                    // (transitively); the effective one is the earliest-deadline available one.
                    let e = (0..self.tasks.len())
                        .filter(|&w| {
                            (w == i
                                || (self.tasks[w].blocked_on.is_some() && self.chain_end(w) == i))
                                && ready(w)
                        })
                        .min_by_key(|&w| (self.servers[w].d, w));
                    let Some(e) = e else { continue };
                    let mask = if self.proto == MbwiProtocol::MbwiImplAffinity {
                        self.tasks[e].mask
                    } else {
                        self.tasks[i].mask
                    };
                    v.push(Cand {
                        entity: i,
                        key: self.servers[e].d,
                        mask,
                        server: e,
                        task: i,
                        inherited: (e != i).then_some(e),
                        own_blocked: false,
                    });
                }
            }
        }
        v.sort_by_key(|c| (c.key, c.entity));
        v
    }

    /// Greedy placement in priority order: each candidate takes the CPU it last ran on if free,
    /// else the lowest free CPU it may use.
    fn greedy(&self, cands: &[Cand], skip: &[bool]) -> Vec<(usize, u32)> {
        let mut taken = 0u64;
        let mut out = Vec::new();
        for (j, c) in cands.iter().enumerate() {
            if skip[j] {
                continue;
            }
            let free = c.mask & !taken & self.all_cpus;
            if free == 0 {
                continue;
            }
            let cpu = match self.last_cpu[c.entity] {
                Some(l) if free & (1 << l) != 0 => l,
                _ => free.trailing_zeros(),
            };
            taken |= 1 << cpu;
            out.push((j, cpu));
        }
        out
    }

    fn assign(&mut self) {
        let cands = self.candidates();
        let mut skip = vec![false; cands.len()];
        // Selection, and under M-BWI the role of each selected server: it executes its chain
        // end, or busy-waits because the chain end executes in another selected server
        // (§4.2.5). A holder keeps executing where it already runs; otherwise it runs in the
        // earliest-deadline selected server. Its own server, when it runs elsewhere, gives up its
        // CPU (selection is redone without it).
        let (sel, spin) = loop {
            let sel = self.greedy(&cands, &skip);
            let mut spin = vec![false; cands.len()];
            if self.proto != MbwiProtocol::Mbwi {
                break (sel, spin);
            }
            // Per chain end: the server it already executes in, else the first selected.
            let mut exec: BTreeMap<usize, usize> = BTreeMap::new();
            for &(j, _) in &sel {
                let c = &cands[j];
                if self.exec_in[c.task] == Some(c.server) {
                    exec.insert(c.task, j);
                } else {
                    exec.entry(c.task).or_insert(j);
                }
            }
            let mut redo = false;
            for &(j, _) in &sel {
                let c = &cands[j];
                if exec.get(&c.task) == Some(&j) {
                    continue;
                }
                if c.own_blocked {
                    spin[j] = true;
                } else {
                    skip[j] = true;
                    redo = true;
                }
            }
            if !redo {
                break (sel, spin);
            }
        };
        // Placement with stickiness: the selected keep their last CPU where they can; the rest
        // take the lowest free CPU; if affinities make that fail, the greedy placement stands.
        let mut taken = 0u64;
        let mut place: Vec<Option<u32>> = vec![None; sel.len()];
        for (x, &(j, _)) in sel.iter().enumerate() {
            if let Some(l) = self.last_cpu[cands[j].entity] {
                if cands[j].mask & (1 << l) != 0 && taken & (1 << l) == 0 {
                    taken |= 1 << l;
                    place[x] = Some(l);
                }
            }
        }
        let mut ok = true;
        for (x, &(j, _)) in sel.iter().enumerate() {
            if place[x].is_none() {
                let free = cands[j].mask & !taken & self.all_cpus;
                if free == 0 {
                    ok = false;
                    break;
                }
                let cpu = free.trailing_zeros();
                taken |= 1 << cpu;
                place[x] = Some(cpu);
            }
        }
        let mut runs = vec![None; self.runs.len()];
        for (x, &(j, g)) in sel.iter().enumerate() {
            let cpu = if ok { place[x].unwrap_or(g) } else { g };
            let c = &cands[j];
            runs[cpu as usize] = Some(if spin[j] {
                Run {
                    entity: c.entity,
                    task: c.server,
                    server: c.server,
                    inherited: None,
                    spin: true,
                }
            } else {
                Run {
                    entity: c.entity,
                    task: c.task,
                    server: c.server,
                    inherited: c.inherited,
                    spin: false,
                }
            });
        }
        self.exec_in.iter_mut().for_each(|e| *e = None);
        let t = self.t;
        for (cpu, r) in runs.iter().enumerate() {
            if let Some(r) = r {
                self.last_cpu[r.entity] = Some(cpu as u32);
                if !r.spin {
                    self.exec_in[r.task] = Some(r.server);
                    if let Some(j) = self.tasks[r.task].job.as_mut() {
                        j.start.get_or_insert(t);
                    }
                }
            }
        }
        self.runs = runs;
    }

    // -----------------------------------------------------------------------------------------
    // The event loop

    /// Zero-time work of the executing tasks: finished compute steps, lock, unlock, job end.
    /// One action at a time (each changes who may run); true if something happened.
    fn instant_step(&mut self) -> bool {
        for cpu in 0..self.runs.len() {
            let Some(r) = self.runs[cpu] else { continue };
            if r.spin {
                continue;
            }
            let i = r.task;
            let Some(job) = self.tasks[i].job.as_mut() else {
                continue;
            };
            match job.steps.get(job.pc).copied() {
                Some(Step::Compute(_)) if job.left == 0 => {
                    Self::advance_pc(job);
                    return true;
                }
                Some(Step::Compute(_)) => {}
                Some(Step::Lock(m)) => {
                    self.lock(i, m);
                    return true;
                }
                Some(Step::Unlock(m)) => {
                    self.unlock(i, m);
                    // Releasing the last lock and ending the job are one instant: the task
                    // does not need the CPU again (it may have run in a lent server only).
                    while let Some(job) = self.tasks[i].job.as_ref() {
                        match job.steps.get(job.pc).copied() {
                            Some(Step::Unlock(m)) => self.unlock(i, m),
                            None => {
                                self.finish(i);
                                break;
                            }
                            _ => break,
                        }
                    }
                    return true;
                }
                None => {
                    self.finish(i);
                    return true;
                }
            }
        }
        false
    }

    /// Before budgets are enforced at an instant: the executing tasks whose compute step just
    /// ended move on through unlocks to their next compute step or their end (never into a
    /// lock, which may need a new placement).
    fn complete_work(&mut self) -> bool {
        let mut changed = false;
        for cpu in 0..self.runs.len() {
            let Some(r) = self.runs[cpu] else { continue };
            if r.spin || self.tasks[r.task].blocked_on.is_some() {
                continue;
            }
            let i = r.task;
            while let Some(job) = self.tasks[i].job.as_mut() {
                match job.steps.get(job.pc).copied() {
                    Some(Step::Compute(_)) if job.left == 0 => Self::advance_pc(job),
                    Some(Step::Unlock(m)) => self.unlock(i, m),
                    None => {
                        self.finish(i);
                        changed = true;
                        break;
                    }
                    _ => break,
                }
                changed = true;
            }
        }
        changed
    }

    fn settle(&mut self) -> Result<(), MbwiError> {
        for _ in 0..100_000 {
            let t = self.t;
            let mut changed = false;
            for s in 0..self.servers.len() {
                if self.servers[s].throttled && self.servers[s].repl_at <= t {
                    self.replenish(s);
                    changed = true;
                }
            }
            for i in 0..self.tasks.len() {
                if self.tasks[i].job.is_none() && self.tasks[i].next_release.is_some_and(|r| r <= t)
                {
                    self.release(i);
                    changed = true;
                }
            }
            // Work that ends exactly when the budget does completes first: the job reached its
            // next step, its unlock or its end before the enforcement point.
            changed |= self.complete_work();
            let tick = self.set.tick_us;
            if tick == 0 || t.is_multiple_of(tick) {
                let paying: Vec<usize> = self.runs.iter().flatten().map(|r| r.server).collect();
                for s in paying {
                    if self.servers[s].c <= 0 && !self.servers[s].throttled {
                        self.exhaust(s);
                        changed = true;
                    }
                }
            }
            let before: Vec<usize> = self.runs.iter().flatten().map(|r| r.server).collect();
            self.assign();
            // A server taken off its CPU goes through put_prev_task → update_curr_dl, which
            // notices an exhausted budget between ticks too.
            for s in before {
                let still = self.runs.iter().flatten().any(|r| r.server == s);
                if !still && self.servers[s].c <= 0 && !self.servers[s].throttled {
                    self.exhaust(s);
                    changed = true;
                }
            }
            if changed {
                continue;
            }
            changed |= self.instant_step();
            if !changed {
                return Ok(());
            }
        }
        Err(MbwiError::Runaway(format!(
            "no progress at t = {} µs (zero-time steps keep changing the schedule)",
            self.t
        )))
    }

    fn next_time(&self) -> u64 {
        let t = self.t;
        let tick = self.set.tick_us;
        let mut next = self.set.horizon_us;
        for task in &self.tasks {
            if task.job.is_none() {
                if let Some(r) = task.next_release {
                    next = next.min(r);
                }
            }
        }
        for s in &self.servers {
            if s.throttled {
                next = next.min(s.repl_at);
            }
        }
        for r in self.runs.iter().flatten() {
            if !r.spin {
                if let Some(j) = &self.tasks[r.task].job {
                    next = next.min(t + j.left);
                }
            }
            let c = self.servers[r.server].c.max(0) as u64;
            let at = if tick == 0 {
                t + c
            } else {
                (t + c).div_ceil(tick).max(t / tick + 1) * tick
            };
            next = next.min(at);
        }
        next.max(t)
    }

    fn advance(&mut self, to: u64) {
        let dt = to - self.t;
        if dt == 0 {
            return;
        }
        for cpu in 0..self.runs.len() {
            let Some(r) = self.runs[cpu] else { continue };
            self.servers[r.server].c -= dt as i64;
            self.min_budget = self.min_budget.min(self.servers[r.server].c);
            if let Some(j) = self.tasks[r.task].job.as_mut() {
                if r.spin {
                    j.spin += dt;
                } else {
                    j.left = j.left.saturating_sub(dt);
                }
            }
            let seg = SimSegment {
                cpu: cpu as u32,
                task: self.set.tasks[r.task].name.clone(),
                server: self.set.tasks[r.server].name.clone(),
                start_us: self.t,
                end_us: to,
                inherited_from: r.inherited.map(|x| self.set.tasks[x].name.clone()),
                spinning: r.spin,
            };
            match self.last_seg[cpu] {
                Some(ix)
                    if {
                        let l = &self.segments[ix];
                        l.end_us == self.t
                            && l.task == seg.task
                            && l.server == seg.server
                            && l.inherited_from == seg.inherited_from
                            && l.spinning == seg.spinning
                    } =>
                {
                    self.segments[ix].end_us = to;
                }
                _ => {
                    self.last_seg[cpu] = Some(self.segments.len());
                    self.segments.push(seg);
                }
            }
        }
        self.t = to;
    }

    pub(super) fn run(&mut self) -> Result<(), MbwiError> {
        self.settle()?;
        for _ in 0..MAX_STEPS {
            let next = self.next_time();
            if next >= self.set.horizon_us {
                self.advance(self.set.horizon_us);
                return Ok(());
            }
            self.advance(next);
            self.settle()?;
        }
        Err(MbwiError::Runaway(format!(
            "more than {MAX_STEPS} events before t = {} µs",
            self.t
        )))
    }

    pub(super) fn finish_result(mut self) -> SimResult {
        let horizon = self.set.horizon_us;
        // Jobs still open at the horizon.
        for i in 0..self.tasks.len() {
            if let Some(job) = self.tasks[i].job.take() {
                self.tasks[i].results.push(SimJob {
                    job: job.k,
                    release_us: job.release,
                    deadline_us: job.deadline,
                    start_us: job.start,
                    finish_us: None,
                    response_us: None,
                    blocked_us: job.blocked + job.blocked_since.map_or(0, |s| horizon - s),
                    spin_us: job.spin,
                    missed: job.deadline < horizon,
                });
            }
        }
        let mut users: BTreeMap<&str, usize> = BTreeMap::new();
        for t in &self.set.tasks {
            let mut mine: Vec<&str> = t
                .script
                .iter()
                .chain(t.job_scripts.iter().flat_map(|j| j.script.iter()))
                .filter_map(|s| match s {
                    Segment::Lock(m) => Some(m.as_str()),
                    _ => None,
                })
                .collect();
            mine.sort_unstable();
            mine.dedup();
            for m in mine {
                *users.entry(m).or_default() += 1;
            }
        }
        let mut events = std::mem::take(&mut self.events);
        let mut tasks = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            let spec = &self.set.tasks[i];
            let interacts = spec
                .script
                .iter()
                .chain(spec.job_scripts.iter().flat_map(|j| j.script.iter()))
                .any(|s| matches!(s, Segment::Lock(m) if users.get(m.as_str()).copied().unwrap_or(0) > 1));
            for j in t.results.iter().filter(|j| j.missed) {
                events.push(SimEvent {
                    t_us: j.deadline_us,
                    task: spec.name.clone(),
                    kind: SimEventKind::Miss,
                    mutex: None,
                    server: None,
                });
            }
            tasks.push(SimTaskResult {
                name: spec.name.clone(),
                interacts,
                misses: t.results.iter().filter(|j| j.missed).count() as u32,
                skipped: t.skipped,
                max_blocked_us: t.results.iter().map(|j| j.blocked_us).max().unwrap_or(0),
                max_response_us: t.results.iter().filter_map(|j| j.response_us).max(),
                jobs: t.results.clone(),
            });
        }
        // Stable: events at one instant keep the order they happened in.
        events.sort_by_key(|e| e.t_us);
        let mut segments = self.segments;
        segments.sort_by_key(|s| (s.cpu, s.start_us));
        SimResult {
            name: String::new(),
            protocol: self.proto,
            cpus: self.set.cpus,
            horizon_us: horizon,
            tick_us: self.set.tick_us,
            segments,
            events,
            tasks,
        }
    }
}
