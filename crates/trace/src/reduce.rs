//! The relevance filter (`--trace-keep relevant`, the default): what a capture may leave out
//! without changing any sample's attribution.
//!
//! Under a busy SCHED_OTHER load (hackbench, a network stream) most kernel events are the load
//! scheduling itself: SCHED_OTHER threads switching among each other and waking each other
//! (tens of thousands per second per CPU, 40–50 % of an io trace). Attribution only needs, for
//! each sample window, which task held the CPU at every recorded event; and it only follows the
//! wake-up of the measured thread (a real-time or SCHED_DEADLINE thread). So:
//!
//! * a `sched_switch` between two SCHED_OTHER tasks (prio ≥ 100 on both sides, neither the idle
//!   task) is **held back** per CPU; the held switch is recorded, with its own timestamp, right
//!   before the next event that CPU records; a newer held switch replaces (drops) an older one.
//!   So at every recorded event the current task is exactly what the full stream says; only the
//!   intermediate SCHED_OTHER tasks between two recorded events of a CPU disappear (charged to
//!   the last one before them). With a real-time thread woken, the scheduler picks it next, so
//!   inside a sample's window there is no SCHED_OTHER → SCHED_OTHER switch to lose.
//!   One exception: a SCHED_OTHER → SCHED_OTHER switch is kept at once while the recorded
//!   stream says the CPU is idle (its last recorded switch went to the idle task, or an idle
//!   entry came after it). Only a lost switch away from the idle task leaves that state with a
//!   task running, and then this switch is the first record to say the CPU is busy: held and
//!   replaced by a later one, the CPU would look idle until then.
//! * `sched_waking`/`sched_wakeup` of a task with prio ≥ 100 are dropped.
//! * `hrtimer_expire_entry/exit` are dropped: neither attribution nor the bound uses them (the
//!   timer handler of a sample is the interrupt frame its waking happened in), and they are two
//!   of the six records inside a typical sample's window, each costing a program run.
//! * everything else (interrupts of every kind, idle, migrations, switches involving a
//!   real-time, DEADLINE or idle task, wake-ups of those) is kept.
//! * what was left out still proves the guest ran: consecutive left-out events of a CPU no more
//!   than [`SPLIT_NS`] apart form a burst, recorded as one `Background { len_ns, events }` marker
//!   (first event's time, span to the last) before the CPU's next recorded event, or when the
//!   next left-out event comes ≥ [`SPLIT_NS`] later — except a burst between two recorded events
//!   less than [`SPLIT_NS`] apart (the hrtimers inside a timer interrupt), which needs none. An eventless stretch of the full stream
//!   longer than [`SPLIT_NS`] is therefore exactly an eventless stretch of the filtered one (ends
//!   included), and inside a marker there is none: "no guest activity" detection is unchanged
//!   for any gap threshold ≥ [`SPLIT_NS`].
//!
//! Not applied when the measured threads are SCHED_OTHER themselves (`measure` then keeps all)
//! or when the trace holds preemptirq events (rtsl's thread analysis needs every switch).
//!
//! The eBPF capture applies the same rules in the kernel (`src/bpf/rtscope.bpf.c`, `held`), so
//! the records are never written; the tracefs capture runs a [`Reducer`] over the stream in its
//! reader thread, as the events arrive. Pure: no syscalls.

use rtscope_model::event::{Event, EventKind, IDLE_EXIT};
use std::collections::BTreeMap;

/// What a capture keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Keep {
    /// Leave out what no attribution needs (see the module docs).
    #[default]
    Relevant,
    /// Every event.
    All,
}

impl Keep {
    pub fn name(self) -> &'static str {
        match self {
            Keep::Relevant => "relevant",
            Keep::All => "all",
        }
    }
}

impl std::str::FromStr for Keep {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "relevant" => Ok(Keep::Relevant),
            "all" => Ok(Keep::All),
            _ => Err(format!("must be relevant or all; got '{s}'")),
        }
    }
}

/// Left-out events further apart than this start a new `Background` marker (keep in sync with
/// BG_SPLIT_NS in src/bpf/rtscope.bpf.c). Gap thresholds below it are not exact on filtered
/// traces (`rtscope analyze` warns).
pub const SPLIT_NS: u64 = 10_000;

/// Lowest `task->prio` of the SCHED_OTHER/BATCH/IDLE classes (0–99 real-time, −1 DEADLINE).
pub const FIRST_NORMAL_PRIO: i32 = 100;

fn normal(prio: i32) -> bool {
    prio >= FIRST_NORMAL_PRIO
}

/// A switch between two SCHED_OTHER tasks, neither of them the idle task (pid 0).
pub fn is_background_switch(k: &EventKind) -> bool {
    matches!(*k, EventKind::Switch { prev_pid, prev_prio, next_pid, next_prio, .. }
        if prev_pid != 0 && next_pid != 0 && normal(prev_prio) && normal(next_prio))
}

/// A wake-up (waking or wakeup) of a SCHED_OTHER task.
pub fn is_background_wake(k: &EventKind) -> bool {
    matches!(*k, EventKind::Waking { prio, .. } | EventKind::Wakeup { prio, .. } if normal(prio))
}

/// An hrtimer expiry entry or exit.
pub fn is_hrtimer(k: &EventKind) -> bool {
    matches!(
        k,
        EventKind::HrtimerEntry { .. } | EventKind::HrtimerExit { .. }
    )
}

/// Whether a trace must be kept whole (it has preemptirq events).
pub fn needs_all(events: &[Event]) -> bool {
    events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::PreemptDisable
                | EventKind::PreemptEnable
                | EventKind::IrqDisable
                | EventKind::IrqEnable
        )
    })
}

/// Apply the relevance filter to a time-ordered event stream (any mix of CPUs). Returns the
/// kept events (still time-ordered) and how many were left out. The batch form of [`Reducer`].
pub fn reduce(events: Vec<Event>) -> (Vec<Event>, u64) {
    let mut r = Reducer::new();
    let mut out = r.push(events);
    let (rest, dropped) = r.finish();
    out.extend(rest);
    (out, dropped)
}

/// Per-CPU state of the filter.
#[derive(Default)]
struct CpuFilter {
    held: Option<Event>,
    /// Current burst of left-out events: (first ts, last ts, count).
    burst: Option<(u64, u64, u32)>,
    /// Time of the CPU's last kept event (not markers or held switches).
    last_kept: Option<u64>,
    /// What the recorded stream says, as attribution reads it: an idle entry without its exit
    /// or a switch away from the idle task since, and whether the last switch went to it.
    idle_entered: bool,
    on_idle_task: bool,
}

impl CpuFilter {
    fn looks_idle(&self) -> bool {
        self.idle_entered || self.on_idle_task
    }
    /// Follow an event the output has (kept, or a held switch that will be).
    fn track(&mut self, k: &EventKind) {
        match *k {
            EventKind::CpuIdle { state } => self.idle_entered = state != IDLE_EXIT,
            EventKind::Switch { next_pid, .. } => {
                self.on_idle_task = next_pid == 0;
                if next_pid != 0 {
                    self.idle_entered = false;
                }
            }
            _ => {}
        }
    }
}

fn marker(cpu: u32, (first, last, n): (u64, u64, u32)) -> Event {
    Event {
        ts_ns: first,
        cpu,
        kind: EventKind::Background {
            len_ns: last - first,
            events: n,
        },
    }
}

/// The relevance filter applied incrementally: the tracefs capture feeds it as the stream
/// arrives, so a run of any length needs only the per-CPU state and the events it has not yet
/// released.
///
/// Input: a time-ordered stream (any mix of CPUs) cut into pieces at any points. The
/// concatenation of what [`Reducer::push`], [`Reducer::advance_to`] and [`Reducer::finish`]
/// return is exactly what [`reduce`] returns for the whole stream: the same events in the same
/// order. An event cannot be released while an earlier one may still be emitted: a held switch
/// and a burst marker carry their own (earlier) times and come out when a later event of their
/// CPU flushes them; the next input may be as early as the last one. So events wait until their
/// time is below [`Reducer::bound_ns`].
#[derive(Default)]
pub struct Reducer {
    cpus: BTreeMap<u32, CpuFilter>,
    /// Output not yet released: sorted by (ts, cpu) after each release, then emission order.
    pending: Vec<Event>,
    /// No later input is earlier than this (the last input's time, or what `advance_to` said).
    frontier_ns: u64,
    dropped: u64,
}

impl Reducer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Events left out so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Events held back, not yet released (the filter's memory).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Every event a later call returns has `ts_ns >= bound_ns()`: the smallest of the input
    /// frontier, the held switches' times and the open bursts' first times.
    pub fn bound_ns(&self) -> u64 {
        let mut b = self.frontier_ns;
        for c in self.cpus.values() {
            if let Some(h) = &c.held {
                b = b.min(h.ts_ns);
            }
            if let Some((first, _, _)) = c.burst {
                b = b.min(first);
            }
        }
        b
    }

    /// Filter the next piece of the stream; returns what can be released (time-ordered).
    pub fn push(&mut self, events: impl IntoIterator<Item = Event>) -> Vec<Event> {
        for e in events {
            self.frontier_ns = self.frontier_ns.max(e.ts_ns);
            self.one(e);
        }
        self.release()
    }

    /// Declare that no later input is earlier than `ts_ns` (the capture's watermark): releases
    /// what waited only for that.
    pub fn advance_to(&mut self, ts_ns: u64) -> Vec<Event> {
        self.frontier_ns = self.frontier_ns.max(ts_ns);
        self.release()
    }

    /// The end of the stream: each CPU's open burst and its last held switch (who runs at the
    /// end), and everything still held back. Returns those events and the total left out.
    pub fn finish(mut self) -> (Vec<Event>, u64) {
        for (&cpu, c) in self.cpus.iter_mut() {
            if let Some(b) = c.burst.take() {
                self.pending.push(marker(cpu, b));
            }
            if let Some(h) = c.held.take() {
                self.pending.push(h);
            }
        }
        // Stable: equal (ts, cpu) keep their emission order, as the batch's sort does.
        self.pending.sort_by_key(|e| (e.ts_ns, e.cpu));
        (self.pending, self.dropped)
    }

    fn one(&mut self, e: Event) {
        let c = self.cpus.entry(e.cpu).or_default();
        let bg_wake = is_background_wake(&e.kind) || is_hrtimer(&e.kind);
        let bg_switch = !bg_wake && is_background_switch(&e.kind) && !c.looks_idle();
        if bg_wake || bg_switch {
            // The event leaves out itself (a waking, an hrtimer) or the switch it replaces in
            // `held`; either way it is activity at e.ts_ns.
            match &mut c.burst {
                Some((_, last, n)) if e.ts_ns.saturating_sub(*last) < SPLIT_NS => {
                    *last = e.ts_ns;
                    *n += 1;
                }
                b => {
                    if let Some(old) = b.take() {
                        self.pending.push(marker(e.cpu, old));
                    }
                    *b = Some((e.ts_ns, e.ts_ns, 1));
                }
            }
            // A waking is dropped; a switch replaces the held one (which is then dropped).
            // (A held switch cannot change `looks_idle`: it is only held when that is false.)
            if bg_wake || c.held.replace(e).is_some() {
                self.dropped += 1;
            }
            return;
        }
        if let Some(b) = c.burst.take() {
            // A burst between two kept events less than SPLIT_NS apart needs no marker: that
            // stretch is shorter than any gap it protects.
            let short = matches!(c.last_kept, Some(r0) if e.ts_ns >= r0 && e.ts_ns - r0 < SPLIT_NS);
            if !short {
                self.pending.push(marker(e.cpu, b));
            }
        }
        if let Some(h) = c.held.take() {
            self.pending.push(h);
        }
        c.last_kept = Some(e.ts_ns);
        c.track(&e.kind);
        self.pending.push(e);
    }

    /// Release the pending events earlier than the bound, in (ts, cpu) order.
    fn release(&mut self) -> Vec<Event> {
        let bound = self.bound_ns();
        // Markers and held switches carry their own (earlier) times, emitted when a later event
        // of their CPU flushed them, possibly after events of other CPUs: order by time again (a
        // stable sort of nearly sorted input, linear in practice). Stability keeps equal (ts,
        // cpu) in emission order across releases too: what stays pending stays ahead of what is
        // emitted later.
        self.pending.sort_by_key(|e| (e.ts_ns, e.cpu));
        let n = self.pending.partition_point(|e| e.ts_ns < bound);
        if n == self.pending.len() {
            return std::mem::take(&mut self.pending);
        }
        let out = self.pending.drain(..n).collect();
        rtscope_model::slack::release_slack(&mut self.pending);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::event::Vector;

    fn sw(ts: u64, cpu: u32, prev: (u32, i32), next: (u32, i32)) -> Event {
        Event {
            ts_ns: ts,
            cpu,
            kind: EventKind::Switch {
                prev_pid: prev.0,
                prev_prio: prev.1,
                prev_state: 1,
                next_pid: next.0,
                next_prio: next.1,
            },
        }
    }
    fn waking(ts: u64, cpu: u32, pid: u32, prio: i32) -> Event {
        Event {
            ts_ns: ts,
            cpu,
            kind: EventKind::Waking {
                pid,
                prio,
                target_cpu: cpu,
            },
        }
    }
    fn tick(ts: u64, cpu: u32) -> Event {
        Event {
            ts_ns: ts,
            cpu,
            kind: EventKind::VectorEntry {
                vector: Vector::LocalTimer,
            },
        }
    }

    #[test]
    fn classifies() {
        assert!(is_background_switch(&sw(0, 0, (10, 120), (11, 139)).kind));
        assert!(!is_background_switch(&sw(0, 0, (0, 120), (11, 120)).kind)); // idle → task
        assert!(!is_background_switch(&sw(0, 0, (10, 120), (0, 120)).kind)); // task → idle
        assert!(!is_background_switch(&sw(0, 0, (10, 120), (12, 9)).kind)); // → FIFO 90
        assert!(!is_background_switch(&sw(0, 0, (12, -1), (10, 120)).kind)); // DEADLINE →
        assert!(is_background_wake(&waking(0, 0, 10, 100).kind));
        assert!(!is_background_wake(&waking(0, 0, 10, 99).kind));
        assert!(!is_background_wake(&waking(0, 0, 10, -1).kind));
    }

    fn bg(ts: u64, cpu: u32, len_ns: u64, events: u32) -> Event {
        Event {
            ts_ns: ts,
            cpu,
            kind: EventKind::Background { len_ns, events },
        }
    }

    /// CPU 0: A(10)→B(11) at 100, B→C(12) at 200 (both held; the first is dropped), a tick at
    /// 300 flushes the burst marker [100, 200] (2 events; no kept event before it) and B→C before
    /// it; a SCHED_OTHER waking at 350 (dropped) and C→D(13) at 400 (held) form the burst
    /// [350, 400]; the measured FIFO thread's waking at 500 flushes C→D but not the marker (500 −
    /// 300 = 200 ns < 10 µs between the two kept events); the switch D→RT(50, prio 4) at 600 is
    /// kept. CPU 1: a held switch at 150 with nothing after it is kept at the end, after its
    /// one-event marker. Dropped: the switch at 100 and the waking at 350 = 2.
    #[test]
    fn holds_and_flushes() {
        let v = vec![
            sw(100, 0, (10, 120), (11, 120)),
            sw(150, 1, (20, 120), (21, 120)),
            sw(200, 0, (11, 120), (12, 120)),
            tick(300, 0),
            waking(350, 0, 14, 120),
            sw(400, 0, (12, 120), (13, 120)),
            waking(500, 0, 50, 4),
            sw(600, 0, (13, 120), (50, 4)),
        ];
        let (out, dropped) = reduce(v.clone());
        assert_eq!(dropped, 2);
        assert_eq!(
            out,
            vec![
                bg(100, 0, 100, 2),
                bg(150, 1, 0, 1),
                v[1],
                v[2],
                v[3],
                v[5],
                v[6],
                v[7],
            ]
        );
    }

    /// Left-out events 9.999 µs apart stay in one marker; 10 µs apart start a new one, so the
    /// 10 µs stretch between them stays visible.
    #[test]
    fn bursts_split_at_10_us() {
        let v = vec![
            waking(0, 0, 10, 120),
            waking(9_999, 0, 10, 120),
            waking(19_999, 0, 10, 120),
            tick(20_000, 0),
        ];
        let (out, dropped) = reduce(v.clone());
        assert_eq!(dropped, 3);
        assert_eq!(out, vec![bg(0, 0, 9_999, 2), bg(19_999, 0, 0, 1), v[3]]);
    }

    /// A held switch flushed without a marker (the stretch between CPU 0's two ticks is < 10 µs)
    /// after an event of CPU 1 still comes out in time order: tick 0 @0, held A→B @100, CPU 1's
    /// tick @150, CPU 0's tick @200.
    #[test]
    fn output_stays_time_ordered() {
        let v = vec![
            tick(0, 0),
            sw(100, 0, (10, 120), (11, 120)),
            tick(150, 1),
            tick(200, 0),
        ];
        let (out, dropped) = reduce(v.clone());
        assert_eq!(dropped, 0);
        assert_eq!(out, vec![v[0], v[1], v[2], v[3]]);
    }

    #[test]
    fn keeps_everything_else() {
        let v = vec![
            sw(100, 0, (0, 120), (10, 120)),
            waking(150, 0, 50, 4),
            sw(200, 0, (10, 120), (50, 4)),
            sw(300, 0, (50, 4), (0, 120)),
        ];
        let (out, dropped) = reduce(v.clone());
        assert_eq!(dropped, 0);
        assert_eq!(out, v);
    }

    /// A random stream: 1–3 CPUs, SCHED_OTHER and real-time switches and wake-ups, idle,
    /// hrtimers and ticks, some on the same nanosecond, gaps around the 10 µs split.
    fn random_stream(seed: u64, n: usize) -> Vec<Event> {
        let mut rng: rand::rngs::SmallRng = rand::SeedableRng::seed_from_u64(seed);
        let mut next = move || rand::RngCore::next_u64(&mut rng);
        let mut ts = 1_000u64;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            ts += match next() % 4 {
                0 => 0,
                1 => next() % 3_000,
                2 => 9_000 + next() % 2_000,
                _ => next() % 40_000,
            };
            let cpu = (next() % 3) as u32;
            let prio = |r: u64| if r.is_multiple_of(3) { 4 } else { 120 };
            let pid = |r: u64| (r % 5) as u32;
            let e = match next() % 6 {
                0 | 1 => sw(
                    ts,
                    cpu,
                    (pid(next()), prio(next())),
                    (pid(next()), prio(next())),
                ),
                2 => waking(ts, cpu, 1 + pid(next()), prio(next())),
                3 => tick(ts, cpu),
                4 => Event {
                    ts_ns: ts,
                    cpu,
                    kind: EventKind::HrtimerEntry {
                        timer: 1,
                        function: 2,
                        now_ns: ts,
                    },
                },
                _ => Event {
                    ts_ns: ts,
                    cpu,
                    kind: EventKind::CpuIdle { state: 1 },
                },
            };
            v.push(e);
        }
        v
    }

    /// A lost switch away from the idle task: after the idle entry at 0 the stream jumps to
    /// A→B at 100, so A→B is the first record saying the CPU is busy and is kept at once; B→C
    /// at 200 is held as usual and flushed before the tick at 300 (no marker: 300 − 100 < 10 µs).
    /// D→idle at 400 is kept; E→F at 500 (again no switch from the idle task recorded) is kept;
    /// F→G at 600 is held to the end, after its one-event marker. Nothing is dropped.
    #[test]
    fn keeps_a_switch_while_the_cpu_looks_idle() {
        let v = vec![
            Event {
                ts_ns: 0,
                cpu: 0,
                kind: EventKind::CpuIdle { state: 1 },
            },
            sw(100, 0, (10, 120), (11, 120)),
            sw(200, 0, (11, 120), (12, 120)),
            tick(300, 0),
            sw(400, 0, (13, 120), (0, 120)),
            sw(500, 0, (14, 120), (15, 120)),
            sw(600, 0, (15, 120), (16, 120)),
        ];
        let (out, dropped) = reduce(v.clone());
        assert_eq!(dropped, 0);
        assert_eq!(
            out,
            vec![v[0], v[1], v[2], v[3], v[4], v[5], bg(600, 0, 0, 1), v[6]]
        );
    }

    /// What attribution reads from a CPU's stream at an event: the current task and whether
    /// the CPU counts as idle (an idle entry not yet left, or the idle task current).
    #[derive(Clone, Copy, Default, PartialEq, Debug)]
    struct Seen {
        current: Option<u32>,
        idle: bool,
    }

    impl Seen {
        fn apply(&mut self, k: &EventKind) {
            match *k {
                EventKind::CpuIdle { state } => self.idle = state != IDLE_EXIT,
                EventKind::Switch { next_pid, .. } => {
                    self.current = Some(next_pid);
                    if next_pid != 0 {
                        self.idle = false;
                    }
                }
                _ => {}
            }
        }
        fn view(&self) -> (Option<u32>, bool) {
            (self.current, self.idle || self.current == Some(0))
        }
    }

    /// The filter's promise, on random streams (which include idle entries followed by
    /// SCHED_OTHER switches, as a lost switch from the idle task leaves them): before every
    /// event the filtered stream kept (other than the held switches themselves), its CPU's
    /// current task and idleness are what the full stream says there, and idleness agrees at
    /// every point of the full stream.
    #[test]
    fn state_at_every_kept_event_matches_the_full_stream() {
        for seed in 0..300u64 {
            let v = random_stream(seed * 7919 + 1, 1 + (seed as usize * 13) % 700);
            let (red, _) = reduce(v.clone());
            for cpu in 0..3u32 {
                let kept: Vec<&Event> = red
                    .iter()
                    .filter(|e| e.cpu == cpu && !matches!(e.kind, EventKind::Background { .. }))
                    .collect();
                let (mut full, mut filt) = (Seen::default(), Seen::default());
                let mut k = 0;
                for e in v.iter().filter(|e| e.cpu == cpu) {
                    if k < kept.len() && kept[k] == e {
                        if !is_background_switch(&e.kind) {
                            assert_eq!(full.view(), filt.view(), "seed {seed} CPU {cpu} at {e:?}");
                        }
                        filt.apply(&e.kind);
                        k += 1;
                    }
                    full.apply(&e.kind);
                    // Idleness also between kept events: a held or dropped switch only ever
                    // replaces one busy task by another.
                    assert_eq!(
                        full.view().1,
                        filt.view().1,
                        "seed {seed} CPU {cpu} after {e:?}"
                    );
                }
                assert_eq!(
                    k,
                    kept.len(),
                    "seed {seed} CPU {cpu}: kept events out of order"
                );
                assert_eq!(full.view(), filt.view(), "seed {seed} CPU {cpu} at the end");
            }
        }
    }

    /// Feeding the stream in pieces (with watermark advances between them) gives exactly the
    /// batch result; released events never go below an earlier bound.
    #[test]
    fn incremental_equals_batch_on_random_streams() {
        for seed in 0..300u64 {
            let v = random_stream(seed * 7919 + 1, 1 + (seed as usize * 13) % 700);
            let (batch, batch_dropped) = reduce(v.clone());
            let mut r = Reducer::new();
            let mut out = Vec::new();
            let mut i = 0;
            let mut piece = 1 + (seed as usize % 17);
            let mut last_bound = 0u64;
            while i < v.len() {
                let j = (i + piece).min(v.len());
                let got = r.push(v[i..j].iter().copied());
                assert!(got.iter().all(|e| e.ts_ns >= last_bound), "seed {seed}");
                out.extend(got);
                // The next piece starts no earlier than its first event: a watermark there.
                if j < v.len() && seed % 2 == 0 {
                    let got = r.advance_to(v[j].ts_ns);
                    assert!(got.iter().all(|e| e.ts_ns >= last_bound), "seed {seed}");
                    out.extend(got);
                }
                last_bound = r.bound_ns();
                i = j;
                piece = 1 + (piece * 31 + 7) % 97;
            }
            let (rest, dropped) = r.finish();
            out.extend(rest);
            assert_eq!(dropped, batch_dropped, "seed {seed}");
            assert_eq!(out, batch, "seed {seed}");
        }
    }

    /// The hand-built fixtures above, one event at a time.
    #[test]
    fn incremental_equals_batch_on_fixtures() {
        let fixtures = vec![
            vec![
                sw(100, 0, (10, 120), (11, 120)),
                sw(150, 1, (20, 120), (21, 120)),
                sw(200, 0, (11, 120), (12, 120)),
                tick(300, 0),
                waking(350, 0, 14, 120),
                sw(400, 0, (12, 120), (13, 120)),
                waking(500, 0, 50, 4),
                sw(600, 0, (13, 120), (50, 4)),
            ],
            vec![
                tick(0, 0),
                sw(100, 0, (10, 120), (11, 120)),
                tick(150, 1),
                tick(200, 0),
            ],
        ];
        for v in fixtures {
            let mut r = Reducer::new();
            let mut out = Vec::new();
            for e in &v {
                out.extend(r.push([*e]));
            }
            out.extend(r.finish().0);
            assert_eq!(out, reduce(v).0);
        }
    }

    /// A held switch keeps the bound (and so the capture's watermark) at its time until a kept
    /// event of its CPU flushes it.
    #[test]
    fn held_switch_holds_the_bound() {
        let mut r = Reducer::new();
        assert!(
            r.push([tick(50, 0), sw(100, 0, (10, 120), (11, 120))])
                .len()
                == 1
        );
        assert!(r.push([tick(5_000_000, 1)]).is_empty());
        assert!(r.advance_to(9_000_000).is_empty());
        assert_eq!(r.bound_ns(), 100);
        let out = r.push([tick(9_000_000, 0)]);
        // The marker (100, one event), the held switch, CPU 1's tick; CPU 0's tick waits for a
        // later frontier.
        assert_eq!(out.len(), 3);
        assert_eq!(r.bound_ns(), 9_000_000);
        assert_eq!(r.advance_to(9_000_001).len(), 1);
    }
}
