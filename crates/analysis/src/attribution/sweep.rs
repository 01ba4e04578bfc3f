//! Attribution of every sample of a CPU from one sweep over its events.
//!
//! A sample's window [E, R) is cut at event timestamps into pieces; between two consecutive
//! events the CPU's state (open interrupt frames, current task, idle, `Background`) is the same
//! for every sample whose window covers that stretch. What differs per sample is only the phase
//! boundaries (its handler entry, the handler's exit, its switch-in), the handler frame and the
//! thread id. So one sweep over the events records each stretch's state and class, and keeps
//! per-class prefix sums: a sample's parts are then range sums over its window, split at its
//! phase boundaries (binary searches), plus its two partial stretches at E and R.
//!
//! Causes that are many (an interrupt context, a thread that ran) are kept per key with their
//! own prefix sums; the keys present in a window are listed with a min-tree over "index of the
//! previous stretch with the same key" (a key's first stretch in [lo, hi) is the one whose
//! previous is before lo). Cost: O(events) to build, O((1 + causes) × log events) per sample,
//! whatever the windows' overlap. The result is exactly [`super::attribute_one`]'s (the tests
//! hold one against the other).

use super::{
    Anchors, AttributionOptions, CpuSlice, CpuState, Ctx, Ev, Frame, Key, SampleAttribution,
    ThreadRan, LATE_FOR_SLEEP, NO_GUEST, RETURN_TO_USER, SCHED_DELAY, TIMER_HANDLER,
    TIMER_IRQ_DELAY, TIMER_IRQ_DELAY_IDLE, UNATTRIBUTED,
};
use rtscope_model::event::{EventKind, NameTables};
use rtscope_model::record::RawSample;
use std::collections::HashMap;
use std::hash::Hash;

const NONE: usize = usize::MAX;

/// The CPU state after one event, as far as the attribution reads it.
#[derive(Clone, Copy, Debug)]
struct Snap {
    /// Innermost open frame: its value id (`Index::frames`), or NONE.
    top: usize,
    /// The presence run of that frame value (`Index::run_end`), or NONE.
    run: usize,
    current: Option<(u32, i32)>,
    idle: bool,
    background: bool,
}

impl Snap {
    const START: Snap = Snap {
        top: NONE,
        run: NONE,
        current: None,
        idle: false,
        background: false,
    };
    fn is_idle(&self) -> bool {
        self.idle || matches!(self.current, Some((0, _)))
    }
    /// A thread other than the idle task holds the CPU in thread context (a candidate for
    /// `thread:<comm>` in the scheduling phase).
    fn thread(&self) -> Option<(u32, i32)> {
        match self.current {
            Some((pid, prio)) if self.top == NONE && !self.idle && pid != 0 => Some((pid, prio)),
            _ => None,
        }
    }
}

/// Positions (stretch indices) carrying a key, and the keys first seen in a range.
struct Distinct<K> {
    pos: Vec<usize>,
    key: Vec<K>,
    /// Min-tree over q[i] = (index in `pos` of the previous position with the same key) + 1,
    /// 0 when none: the first of a key inside [lo, hi) is the one with q ≤ lo.
    tree: Vec<usize>,
    size: usize,
}

impl<K: Copy + Eq + Hash> Distinct<K> {
    fn new() -> Self {
        Distinct {
            pos: Vec::new(),
            key: Vec::new(),
            tree: Vec::new(),
            size: 0,
        }
    }
    fn push(&mut self, pos: usize, key: K) {
        self.pos.push(pos);
        self.key.push(key);
    }
    fn finish(&mut self) {
        let n = self.pos.len();
        self.size = n.next_power_of_two().max(1);
        self.tree = vec![usize::MAX; 2 * self.size];
        let mut last: HashMap<K, usize> = HashMap::new();
        for (i, k) in self.key.iter().enumerate() {
            self.tree[self.size + i] = last.insert(*k, i).map_or(0, |p| p + 1);
        }
        for node in (1..self.size).rev() {
            self.tree[node] = self.tree[2 * node].min(self.tree[2 * node + 1]);
        }
    }
    /// The positions in [lo, hi) where a key appears for the first time in that range, in order.
    fn first_seen(&self, lo: usize, hi: usize, out: &mut Vec<usize>) {
        let clo = self.pos.partition_point(|&p| p < lo);
        let chi = self.pos.partition_point(|&p| p < hi);
        if clo < chi {
            self.collect(1, 0, self.size, clo, chi, out);
        }
    }
    fn collect(
        &self,
        node: usize,
        nl: usize,
        nr: usize,
        lo: usize,
        hi: usize,
        out: &mut Vec<usize>,
    ) {
        if nr <= lo || hi <= nl || self.tree[node] > lo {
            return;
        }
        if nr - nl == 1 {
            out.push(nl);
            return;
        }
        let mid = (nl + nr) / 2;
        self.collect(2 * node, nl, mid, lo, hi, out);
        self.collect(2 * node + 1, mid, nr, lo, hi, out);
    }
}

/// Stretch indices and running sums of one key.
#[derive(Default)]
struct Sums<const N: usize> {
    idx: Vec<usize>,
    /// cum[i] = sums over idx[..=i].
    cum: Vec<[u64; N]>,
}

impl<const N: usize> Sums<N> {
    fn push(&mut self, i: usize, v: [u64; N]) {
        let mut c = self.cum.last().copied().unwrap_or([0; N]);
        for (a, b) in c.iter_mut().zip(v) {
            *a += b;
        }
        self.idx.push(i);
        self.cum.push(c);
    }
    /// Sums over the stretches in [lo, hi).
    fn range(&self, lo: usize, hi: usize) -> [u64; N] {
        let at = |k: usize| if k == 0 { [0; N] } else { self.cum[k - 1] };
        let (a, b) = (
            at(self.idx.partition_point(|&p| p < lo)),
            at(self.idx.partition_point(|&p| p < hi)),
        );
        let mut out = [0; N];
        for k in 0..N {
            out[k] = b[k] - a[k];
        }
        out
    }
}

/// Prefix sums over all stretches, one column per class (`P_*`).
const P_NOG: usize = 0;
/// Not inside a frame, no eventless gap: idle / not idle (phases A, B, D).
const P_IDLE: usize = 1;
const P_BUSY: usize = 2;
/// No guest activity as the scheduling phase sees it (the busy threshold while another thread
/// holds the CPU, counting every thread as "other").
const P_C_NOG: usize = 3;
/// Scheduling delay: neither a frame nor another thread, no gap.
const P_SCHED: usize = 4;
const P_N: usize = 5;

/// One CPU's events, swept once.
pub(super) struct Index {
    /// State after event i.
    snaps: Vec<Snap>,
    /// Frame values by id.
    frames: Vec<Frame>,
    /// First event index at which a presence run of a frame value has ended (NONE: never).
    run_end: Vec<usize>,
    /// prefix[i] = Σ over stretches j < i.
    prefix: Vec<[u64; P_N]>,
    /// Stretches inside a frame, no gap: per context, and per frame value (the handler).
    by_ctx: HashMap<Ctx, Sums<1>>,
    by_frame: HashMap<usize, Sums<1>>,
    ctx_seen: Distinct<Ctx>,
    /// Stretches where a thread holds the CPU: per pid (len, len if gap, len if busy gap).
    by_thread: HashMap<u32, Sums<3>>,
    thread_seen: Distinct<u32>,
    /// Event indices per pid: its wakings (local or remote), switches in and out.
    wakings: HashMap<u32, Vec<usize>>,
    switch_in: HashMap<u32, Vec<usize>>,
    switch_out: HashMap<u32, Vec<usize>>,
}

fn first_in(v: Option<&Vec<usize>>, lo: usize, hi: usize) -> Option<usize> {
    let v = v?;
    let k = v.partition_point(|&i| i < lo);
    v.get(k).copied().filter(|&i| i < hi)
}

impl Index {
    /// Stretch j is [ts[j], ts[j+1]) in the state after event j.
    pub(super) fn build(ce: CpuSlice<'_>, opts: &AttributionOptions) -> Index {
        let n = ce.ts.len();
        let mut ix = Index {
            snaps: Vec::with_capacity(n),
            frames: Vec::new(),
            run_end: Vec::new(),
            prefix: Vec::with_capacity(n + 1),
            by_ctx: HashMap::new(),
            by_frame: HashMap::new(),
            ctx_seen: Distinct::new(),
            by_thread: HashMap::new(),
            thread_seen: Distinct::new(),
            wakings: HashMap::new(),
            switch_in: HashMap::new(),
            switch_out: HashMap::new(),
        };
        let busy_thr = opts.gap_threshold_ns.max(opts.busy_gap_threshold_ns);
        let mut ids: HashMap<(Ctx, u64), usize> = HashMap::new();
        // The open frames with their presence runs, mirroring the stack.
        let mut open: Vec<(Frame, usize)> = Vec::new();
        let mut st = CpuState::default();
        for i in 0..n {
            match ce.ev[i] {
                Ev::K(EventKind::Waking { pid, .. }) | Ev::RemoteWaking { pid, .. } => {
                    ix.wakings.entry(pid).or_default().push(i)
                }
                Ev::K(EventKind::Switch {
                    prev_pid, next_pid, ..
                }) => {
                    ix.switch_in.entry(next_pid).or_default().push(i);
                    ix.switch_out.entry(prev_pid).or_default().push(i);
                }
                _ => {}
            }
            st.apply(ce.ts[i], &ce.ev[i]);
            let frames = st.stack.frames();
            if open.len() != frames.len() || open.iter().zip(frames).any(|(o, f)| o.0 != *f) {
                for (f, r) in &open {
                    if !frames.contains(f) {
                        ix.run_end[*r] = i;
                    }
                }
                let mut next = Vec::with_capacity(frames.len());
                for f in frames {
                    let r = match open.iter().find(|o| o.0 == *f) {
                        Some(o) => o.1,
                        None => {
                            ix.run_end.push(NONE);
                            ix.run_end.len() - 1
                        }
                    };
                    next.push((*f, r));
                }
                open = next;
            }
            let (top, run) = match open.last() {
                Some(&(f, r)) => {
                    let id = *ids.entry((f.ctx, f.start_ns)).or_insert_with(|| {
                        ix.frames.push(f);
                        ix.frames.len() - 1
                    });
                    (id, r)
                }
                None => (NONE, NONE),
            };
            ix.snaps.push(Snap {
                top,
                run,
                current: st.current,
                idle: st.idle,
                background: st.background,
            });
        }
        ix.prefix.push([0; P_N]);
        for j in 0..n {
            let len = if j + 1 < n {
                ce.ts[j + 1] - ce.ts[j]
            } else {
                0
            };
            let sn = ix.snaps[j];
            let nog = len >= opts.gap_threshold_ns && !sn.background;
            let nog_busy = len >= busy_thr && !sn.background;
            let mut row = [0u64; P_N];
            let l = |b: bool| if b { len } else { 0 };
            row[P_NOG] = l(nog);
            if sn.top != NONE {
                row[P_C_NOG] = l(nog);
                if !nog && len > 0 {
                    let ctx = ix.frames[sn.top].ctx;
                    ix.by_ctx.entry(ctx).or_default().push(j, [len]);
                    ix.by_frame.entry(sn.top).or_default().push(j, [len]);
                    ix.ctx_seen.push(j, ctx);
                }
            } else {
                row[P_IDLE] = l(!nog && sn.is_idle());
                row[P_BUSY] = l(!nog && !sn.is_idle());
                match sn.thread() {
                    Some((pid, _)) => {
                        row[P_C_NOG] = l(nog_busy);
                        if len > 0 {
                            ix.by_thread
                                .entry(pid)
                                .or_default()
                                .push(j, [len, l(nog), l(nog_busy)]);
                            if !nog_busy {
                                ix.thread_seen.push(j, pid);
                            }
                        }
                    }
                    None => {
                        row[P_C_NOG] = l(nog);
                        row[P_SCHED] = l(!nog);
                    }
                }
            }
            let mut p = ix.prefix[j];
            for (a, b) in p.iter_mut().zip(row) {
                *a += b;
            }
            ix.prefix.push(p);
        }
        ix.ctx_seen.finish();
        ix.thread_seen.finish();
        ix
    }

    fn snap_before(&self, i: usize) -> Snap {
        if i == 0 {
            Snap::START
        } else {
            self.snaps[i - 1]
        }
    }

    fn sums(&self, lo: usize, hi: usize) -> [u64; P_N] {
        let mut out = [0; P_N];
        if lo < hi {
            for (k, o) in out.iter_mut().enumerate() {
                *o = self.prefix[hi][k] - self.prefix[lo][k];
            }
        }
        out
    }

    /// Attribute `s` (no timeline). `first`: the index of the first event at or after E.
    pub(super) fn attribute(
        &self,
        s: &RawSample,
        ts: &[u64],
        ev: &[Ev],
        first: usize,
        names: &NameTables,
        opts: &AttributionOptions,
    ) -> SampleAttribution {
        let e0 = s.expected_ns;
        let r = s.expected_ns.saturating_add(s.latency_ns);
        let end = first + ts[first..].partition_point(|&t| t < r);
        let state = self.snap_before(first);
        let mut out = SampleAttribution::unexplained(s);
        let waking = first_in(self.wakings.get(&s.tid), first, end).map(|i| match ev[i] {
            Ev::RemoteWaking { prio, from, .. } => (i, prio, Some(from)),
            Ev::K(EventKind::Waking { prio, .. }) => (i, prio, None),
            _ => (i, 0, None),
        });
        let late = waking.is_none()
            && s.latency_ns > 0
            && matches!(state.current, Some((pid, _)) if pid == s.tid)
            && first_in(self.switch_out.get(&s.tid), first, end).is_none();
        if waking.is_none() && !late {
            out.unattributed_reason = Some(super::no_waking_reason(s, state.current, names));
            out.parts = vec![(UNATTRIBUTED.to_string(), s.latency_ns)];
            return out;
        }
        let before_waking = waking.map(|(wi, _, _)| self.snap_before(wi));
        // The context the waking ran in (a local waking only), and where that frame closes.
        let handler = match (waking, before_waking) {
            (Some((_, _, None)), Some(b)) if b.top != NONE => Some((b.top, b.run)),
            _ => None,
        };
        let handler_frame = handler.map(|(id, _)| self.frames[id]);
        let tid_prio = match waking {
            Some((_, p, _)) => p,
            None => state.current.map(|c| c.1).unwrap_or(0),
        };
        let handler_exit = handler
            .map(|(_, run)| self.run_end[run])
            .filter(|&i| i < end);
        let switch_in = waking.and_then(|(wi, _, _)| {
            first_in(self.switch_in.get(&s.tid), handler_exit.unwrap_or(wi), end)
        });
        out.anchors = Anchors {
            handler_entry_ns: handler_frame.map(|h| h.start_ns),
            waking_ns: waking.map(|(wi, _, _)| ts[wi]),
            handler_exit_ns: handler_exit.map(|i| ts[i]),
            switch_in_ns: switch_in.map(|i| ts[i]),
            handler: match waking.and_then(|w| w.2) {
                _ if late => "none: late for its own sleep".into(),
                Some(c) => format!("remote:cpu{c}"),
                None => super::ctx_handler_name(handler_frame.map(|h| h.ctx)),
            },
        };
        let wake_ts = waking.map(|(wi, _, _)| ts[wi]).unwrap_or(e0);
        let b_start = handler_frame.map(|h| h.start_ns.max(e0)).unwrap_or(wake_ts);
        let c_start =
            handler_exit
                .map(|i| ts[i])
                .unwrap_or(if handler.is_some() { r } else { wake_ts });
        let never_left = switch_in.is_none()
            && matches!(before_waking.and_then(|b| b.current), Some((pid, _)) if pid == s.tid);
        let d_start = match switch_in {
            Some(i) => ts[i],
            None if late => e0,
            None if never_left => c_start,
            None => r,
        };
        let cx = Cx {
            tid: s.tid,
            tid_prio,
            handler: handler.map(|h| h.0),
            late,
            b_start,
            c_start,
            d_start,
        };

        let mut acc = Acc::default();
        // The stretch from E to the first event (or to R), in the state before it.
        let head_end = if first < end { ts[first] } else { r };
        self.piece(&mut acc, &state, e0, head_end - e0, &cx, names, opts);
        if first < end {
            // Whole stretches between the window's events, phase by phase.
            let (lo, hi) = (first, end - 1);
            let pos = |x: u64| lo + ts[lo..hi].partition_point(|&t| t < x);
            let i_d = pos(d_start);
            let i_c = pos(c_start).min(i_d);
            let i_b = pos(b_start).min(i_c);
            let a = self.sums(lo, i_b);
            acc.add(Key::Static(NO_GUEST), a[P_NOG]);
            acc.add(Key::Static(TIMER_IRQ_DELAY_IDLE), a[P_IDLE]);
            acc.add(Key::Static(TIMER_IRQ_DELAY), a[P_BUSY]);
            let b = self.sums(i_b, i_c);
            acc.add(Key::Static(NO_GUEST), b[P_NOG]);
            acc.add(Key::Static(TIMER_HANDLER), b[P_IDLE] + b[P_BUSY]);
            let c = self.sums(i_c, i_d);
            // The thread itself holding the CPU is not "another thread": gap threshold, and
            // scheduling delay.
            let own = self
                .by_thread
                .get(&s.tid)
                .map_or([0; 3], |t| t.range(i_c, i_d));
            acc.add(Key::Static(NO_GUEST), c[P_C_NOG] + own[1] - own[2]);
            acc.add(Key::Static(SCHED_DELAY), c[P_SCHED] + own[0] - own[1]);
            let mut seen = Vec::new();
            self.thread_seen.first_seen(i_c, i_d, &mut seen);
            for k in seen {
                let j = self.thread_seen.pos[k];
                let Some((pid, prio)) = self.snaps[j].thread() else {
                    continue;
                };
                if pid == s.tid {
                    continue;
                }
                let t = self
                    .by_thread
                    .get(&pid)
                    .map_or([0; 3], |t| t.range(i_c, i_d));
                acc.thread(pid, prio, t[0] - t[2], &cx, names);
            }
            let d = self.sums(i_d, hi);
            acc.add(Key::Static(NO_GUEST), d[P_NOG]);
            let own_time = if late { LATE_FOR_SLEEP } else { RETURN_TO_USER };
            acc.add(Key::Static(own_time), d[P_IDLE] + d[P_BUSY]);
            // Inside interrupt frames, any phase: the handler's frame is the timer handler,
            // every other one is charged to its context.
            let in_handler = cx
                .handler
                .and_then(|h| self.by_frame.get(&h))
                .map_or(0, |f| f.range(lo, hi)[0]);
            acc.add(Key::Static(TIMER_HANDLER), in_handler);
            let mut seen = Vec::new();
            self.ctx_seen.first_seen(lo, hi, &mut seen);
            for k in seen {
                let ctx = self.ctx_seen.key[k];
                let mut ns = self.by_ctx.get(&ctx).map_or(0, |f| f.range(lo, hi)[0]);
                if handler_frame.map(|h| h.ctx) == Some(ctx) {
                    ns -= in_handler;
                }
                acc.add(Key::Ctx(ctx), ns);
            }
            // The stretch from the last event to R.
            let last = self.snaps[end - 1];
            self.piece(
                &mut acc,
                &last,
                ts[end - 1],
                r - ts[end - 1],
                &cx,
                names,
                opts,
            );
        }
        let mut parts: Vec<(String, u64)> = acc
            .parts
            .into_iter()
            .map(|(k, ns)| (k.name(names), ns))
            .collect();
        parts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.parts = parts;
        out.threads = acc.threads;
        out
    }

    /// One stretch [t, t + len) in state `sn`: its cause, as [`super::attribute_one`] decides it.
    #[allow(clippy::too_many_arguments)]
    fn piece(
        &self,
        acc: &mut Acc,
        sn: &Snap,
        t: u64,
        len: u64,
        cx: &Cx,
        names: &NameTables,
        opts: &AttributionOptions,
    ) {
        if len == 0 {
            return;
        }
        let ph = cx.phase(t);
        let other = sn.thread().filter(|&(pid, _)| pid != cx.tid);
        let gap_thr = if ph == Phase::C && other.is_some() {
            opts.gap_threshold_ns.max(opts.busy_gap_threshold_ns)
        } else {
            opts.gap_threshold_ns
        };
        let key = if len >= gap_thr && !sn.background {
            Key::Static(NO_GUEST)
        } else if sn.top != NONE {
            if Some(sn.top) == cx.handler {
                Key::Static(TIMER_HANDLER)
            } else {
                Key::Ctx(self.frames[sn.top].ctx)
            }
        } else {
            match ph {
                Phase::A if sn.is_idle() => Key::Static(TIMER_IRQ_DELAY_IDLE),
                Phase::A => Key::Static(TIMER_IRQ_DELAY),
                Phase::B => Key::Static(TIMER_HANDLER),
                Phase::C => match other {
                    Some((pid, prio)) => {
                        acc.thread(pid, prio, len, cx, names);
                        return;
                    }
                    None => Key::Static(SCHED_DELAY),
                },
                Phase::D if cx.late => Key::Static(LATE_FOR_SLEEP),
                Phase::D => Key::Static(RETURN_TO_USER),
            }
        };
        acc.add(key, len);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    A,
    B,
    C,
    D,
}

/// What one sample's pieces are judged by.
struct Cx {
    tid: u32,
    tid_prio: i32,
    /// The handler's frame value id.
    handler: Option<usize>,
    late: bool,
    b_start: u64,
    c_start: u64,
    d_start: u64,
}

impl Cx {
    fn phase(&self, t: u64) -> Phase {
        if t >= self.d_start {
            Phase::D
        } else if t >= self.c_start {
            Phase::C
        } else if t >= self.b_start {
            Phase::B
        } else {
            Phase::A
        }
    }
}

/// One sample's parts and threads, in the order their first stretch comes.
#[derive(Default)]
struct Acc {
    parts: Vec<(Key, u64)>,
    part_at: HashMap<Key, usize>,
    threads: Vec<ThreadRan>,
    thread_at: HashMap<u32, usize>,
}

impl Acc {
    fn add(&mut self, key: Key, ns: u64) {
        if ns == 0 {
            return;
        }
        match self.part_at.get(&key) {
            Some(&k) => self.parts[k].1 += ns,
            None => {
                self.part_at.insert(key, self.parts.len());
                self.parts.push((key, ns));
            }
        }
    }
    fn thread(&mut self, pid: u32, prio: i32, ns: u64, cx: &Cx, names: &NameTables) {
        if ns == 0 {
            return;
        }
        match self.thread_at.get(&pid) {
            Some(&k) => self.threads[k].ran_ns += ns,
            None => {
                self.thread_at.insert(pid, self.threads.len());
                self.threads.push(ThreadRan {
                    pid,
                    comm: names.comm(pid),
                    prio,
                    ran_ns: ns,
                    relation: if prio < cx.tid_prio {
                        "preempting"
                    } else {
                        "blocking"
                    }
                    .into(),
                });
            }
        }
        self.add(Key::Thread(pid), ns);
    }
}
