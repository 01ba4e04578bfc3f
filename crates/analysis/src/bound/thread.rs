//! The thread-context variables of Table 1 (ECRTS'20 §4.2, measured as §5's latency parser
//! does) from an event stream with `preemptirq` tracepoints, and the fallback when a kernel has
//! none (kernels built without CONFIG_PREEMPTIRQ_TRACEPOINTS, e.g. distribution defaults).
//!
//! Mainline's preemptirq events do not say *why* preemption was disabled (the paper's patched
//! kernel had `preempt_disable_sched`), so a preempt-disabled section is classified by what
//! happens inside it: one that contains a context switch (`sched_switch`) is the scheduler's
//! (EV1…EV7), any other postpones the scheduler. Per CPU:
//! - D_PSD: longest preempt-disabled section containing a switch (EV1 → EV7).
//! - D_ST: from the last IRQ disable before the switch in that section (EV3) to its preempt
//!   enable (EV7).
//! - D_POID: longest interval in which preemption (not to schedule) or IRQs are disabled — the
//!   union of both, cut where a scheduler section begins (that part is D_PSD's).
//! - D_PAIE: longest interval with both preemption and IRQs enabled while a wake-up on this CPU
//!   is pending (the pe_ie state of Fig. 21 between set_need_resched and the scheduler), ended by
//!   the next disable of either. Mainline has no set_need_resched event; a `sched_wakeup` with
//!   this CPU as target stands for it when the woken task would preempt the running one, and the
//!   next switch clears it. "Would preempt" follows the kernel's wake-up preemption check
//!   (`wakeup_preempt`): a higher priority (lower `prio`) than the running task's, as recorded
//!   by the last switch; any wake-up while the CPU is idle or the running task is unknown; and,
//!   conservatively, every fair-class wake-up of a fair-class CPU (EEVDF may or may not set
//!   need_resched). A wake-up that cannot preempt sets no need_resched, so the pe_ie state is not
//!   entered: counting it would stretch D_PAIE to the running task's whole run. A priority
//!   change of the running task after its switch (PI boosting) is not followed.
//!
//!
//! The idle task (pid 0) runs with preemption disabled for good, so a switch to or from it marks
//! a scheduler section's edge that the preemptirq events do not show (the preempt toggles the
//! idle task itself emits — it does reach a preemption count of 0 now and then — are counted as
//! events and otherwise ignored until the switch from idle):
//! - a switch *to* idle inside a preempt-disabled section ends that scheduler section at the
//!   switch (D_PSD and D_ST up to the switch), clears the preempt-disabled state (idle's own
//!   preempt-disable is no delay: a wake-up makes the idle loop call the scheduler at once) and
//!   cuts the D_POID union there; IRQs still masked after the switch start a new union (masked
//!   IRQs in idle delay the wake-up's interrupt);
//! - a switch *from* idle opens a scheduler section that began in idle's exit path, which emits
//!   no preempt event: it starts at the last IRQ disable since the previous switch (the exit
//!   path masks IRQs before calling the scheduler; that disable is also EV3), else at the
//!   switch, and the next preempt enable closes it as any other. A section still open at a
//!   switch from idle began in idle before the trace saw the switch to it: it is dropped.
//!
//! As in §5, the execution time of interrupts (IRQ handlers, vectors, NMIs) that ran inside an
//! interval is discounted from it: it is counted as interference, not as thread delay.

use rtscope_model::bound::ThreadVars;
use rtscope_model::event::{Event, EventKind};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuThreadMeasure {
    pub vars: ThreadVars,
    /// Number of preemptirq events seen on the CPU: 0 means the kernel does not have them.
    pub preemptirq_events: u64,
    pub sched_sections: u64,
    /// The hard-IRQ context outside the handlers, per arrival (max, ns): see [`St::step`]'s
    /// `IrqEnable`. Theorem 8 charges each arrival its execution time, so this is added to every
    /// IRQ source's per-instance time, not to a thread variable.
    pub irq_entry_exit_ns: u64,
    /// Arrivals it was measured on (IRQ-disabled stretches that contained a handler entered at
    /// nesting depth 0).
    pub irq_arrivals: u64,
}

/// The same measure as a kernel-side reader reports it (the in-kernel reduction, a stored
/// thread-vars document): what the bound takes from it.
impl From<&rtscope_model::thread_vars::CpuThreadMeasure> for CpuThreadMeasure {
    fn from(m: &rtscope_model::thread_vars::CpuThreadMeasure) -> Self {
        CpuThreadMeasure {
            vars: m.thread,
            preemptirq_events: m.preemptirq_events,
            sched_sections: m.sched_sections,
            irq_entry_exit_ns: m.irq_entry_exit_ns,
            irq_arrivals: m.irq_arrivals,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum HKey {
    Irq(u32),
    Vec(rtscope_model::event::Vector),
}

#[derive(Clone, Debug, Default)]
struct St {
    m: CpuThreadMeasure,
    /// Cumulative interrupt execution time seen on this CPU so far.
    irq_time: u64,
    open_handlers: BTreeMap<HKey, u64>,
    preempt_off: Option<(u64, u64)>, // (ts, irq_time at ts)
    irq_off: Option<(u64, u64)>,
    union_start: Option<(u64, u64)>,
    switch_in_section: bool,
    last_irq_disable: Option<(u64, u64)>,
    ev3: Option<(u64, u64)>,
    /// Start of the scheduler section inside the current union, once known.
    sched_start_in_union: Option<(u64, u64)>,
    wakeup_pending: bool,
    paie_start: Option<(u64, u64)>,
    /// Last IRQ disable since the previous switch: after a switch to idle, where idle's exit
    /// path entered the scheduler.
    irq_disable_since_switch: Option<(u64, u64)>,
    /// The last switch seen went to the idle task.
    idle: bool,
    /// `prio` of the task the last switch put on the CPU.
    cur_prio: Option<i32>,
    /// The current IRQ-disabled stretch contains an interrupt arrival (a handler entered with
    /// no other handler open).
    arrival: bool,
}

/// Whether a wake-up of a task with `woken` prio sets need_resched on a CPU running `cur`
/// (None: not known yet) or idle. Fair-class prios are 100..=139.
pub(crate) fn wakeup_preempts(cur: Option<i32>, idle: bool, woken: i32) -> bool {
    match cur {
        None => true,
        Some(_) if idle => true,
        Some(c) => woken < c || (woken >= 100 && c >= 100),
    }
}

fn span(from: (u64, u64), to_ts: u64, to_irq: u64) -> u64 {
    to_ts
        .saturating_sub(from.0)
        .saturating_sub(to_irq.saturating_sub(from.1))
}

impl St {
    fn disable_begins(&mut self, ts: u64) {
        if let Some(p) = self.paie_start.take() {
            let d = span(p, ts, self.irq_time);
            self.m.vars.paie_ns = self.m.vars.paie_ns.max(d);
        }
        if self.union_start.is_none() {
            self.union_start = Some((ts, self.irq_time));
            self.sched_start_in_union = None;
        }
    }

    fn maybe_close_union(&mut self, ts: u64) {
        if self.preempt_off.is_some() || self.irq_off.is_some() {
            return;
        }
        if let Some(u) = self.union_start.take() {
            // The part before a scheduler section postponed the scheduler (or masked IRQs).
            let d = match self.sched_start_in_union.take() {
                Some(s) => span(u, s.0, s.1),
                None => span(u, ts, self.irq_time),
            };
            self.m.vars.poid_ns = self.m.vars.poid_ns.max(d);
        }
        if self.wakeup_pending {
            self.paie_start = Some((ts, self.irq_time));
        }
    }

    fn step(&mut self, e: &Event) {
        let ts = e.ts_ns;
        match e.kind {
            // The idle task's own preemption toggles (its section is cut at the switches to and
            // from it) neither delay the scheduler nor bound a section of another task.
            EventKind::PreemptDisable | EventKind::PreemptEnable if self.idle => {
                self.m.preemptirq_events += 1;
            }
            EventKind::PreemptDisable => {
                self.m.preemptirq_events += 1;
                self.disable_begins(ts);
                self.preempt_off = Some((ts, self.irq_time));
                self.switch_in_section = false;
                self.ev3 = None;
                self.last_irq_disable = None;
            }
            EventKind::PreemptEnable => {
                self.m.preemptirq_events += 1;
                if let Some(p) = self.preempt_off.take() {
                    if self.switch_in_section {
                        self.m.sched_sections += 1;
                        let psd = span(p, ts, self.irq_time);
                        self.m.vars.psd_ns = self.m.vars.psd_ns.max(psd);
                        if let Some(e3) = self.ev3 {
                            self.m.vars.dst_ns =
                                self.m.vars.dst_ns.max(span(e3, ts, self.irq_time));
                        }
                        if self.sched_start_in_union.is_none() {
                            self.sched_start_in_union = Some(p);
                        }
                    }
                }
                self.switch_in_section = false;
                self.maybe_close_union(ts);
            }
            EventKind::IrqDisable => {
                self.m.preemptirq_events += 1;
                self.disable_begins(ts);
                self.irq_off = Some((ts, self.irq_time));
                self.irq_disable_since_switch = Some((ts, self.irq_time));
                if self.preempt_off.is_some() {
                    self.last_irq_disable = Some((ts, self.irq_time));
                }
            }
            EventKind::IrqEnable => {
                self.m.preemptirq_events += 1;
                // An interrupt's hard-IRQ context is wider than its handler: the entry code
                // (irqentry_enter, irq_enter_rcu, the vector dispatch) runs after the entry's
                // irq_disable (trace_hardirqs_off_finish) and before irq_handler_entry or the
                // vector's entry event, the exit code (irq_exit_rcu, irqentry_exit) after the
                // handler's exit event and before the irq_enable (trace_hardirqs_on in
                // irqentry_exit, or local_irq_enable where soft-IRQs start on the way out). The
                // IRQ-disabled stretch minus the handler bodies inside it is that per-arrival
                // overhead. A stretch that did not begin at an arrival (code that masked IRQs and
                // then ran a handler itself) only makes it larger: never below the truth.
                if std::mem::take(&mut self.arrival) {
                    if let Some(off) = self.irq_off {
                        let d = span(off, ts, self.irq_time);
                        self.m.irq_entry_exit_ns = self.m.irq_entry_exit_ns.max(d);
                        self.m.irq_arrivals += 1;
                    }
                }
                self.irq_off = None;
                self.maybe_close_union(ts);
            }
            EventKind::Switch {
                prev_pid,
                next_pid,
                next_prio,
                ..
            } => {
                self.switch(ts, prev_pid == 0, next_pid == 0);
                self.cur_prio = Some(next_prio);
            }
            EventKind::Wakeup {
                target_cpu, prio, ..
            } if target_cpu == e.cpu && wakeup_preempts(self.cur_prio, self.idle, prio) => {
                self.wakeup_pending = true;
            }
            EventKind::IrqEntry { irq } => self.handler_open(HKey::Irq(irq), ts),
            EventKind::IrqExit { irq, .. } => self.handler_close(HKey::Irq(irq), ts),
            EventKind::VectorEntry { vector } => self.handler_open(HKey::Vec(vector), ts),
            EventKind::VectorExit { vector } => self.handler_close(HKey::Vec(vector), ts),
            EventKind::Nmi { delta_ns } => self.irq_time = self.irq_time.saturating_add(delta_ns),
            _ => {}
        }
    }

    fn switch(&mut self, ts: u64, from_idle: bool, to_idle: bool) {
        if let Some(p) = self.preempt_off {
            if to_idle || from_idle {
                // To idle: the scheduler section ends here, what follows is the idle task's.
                // From idle with a section open: the switch to idle was not seen (the trace
                // began in idle), so the section is the idle task's own and is dropped.
                if to_idle {
                    self.m.sched_sections += 1;
                    let psd = span(p, ts, self.irq_time);
                    self.m.vars.psd_ns = self.m.vars.psd_ns.max(psd);
                    if let Some(e3) = self.last_irq_disable {
                        self.m.vars.dst_ns = self.m.vars.dst_ns.max(span(e3, ts, self.irq_time));
                    }
                }
                // The union up to the section's start postponed the scheduler; it ends here.
                if let Some(u) = self.union_start.take() {
                    let s = self.sched_start_in_union.unwrap_or(p);
                    self.m.vars.poid_ns = self.m.vars.poid_ns.max(span(u, s.0, s.1));
                }
                self.sched_start_in_union = None;
                self.preempt_off = None;
                self.switch_in_section = false;
                self.ev3 = None;
                self.last_irq_disable = None;
                // IRQs still masked in idle (until finish_task_switch unmasks them) delay the
                // wake-up's interrupt.
                if self.irq_off.is_some() {
                    self.union_start = Some((ts, self.irq_time));
                }
            } else {
                self.switch_in_section = true;
                self.ev3 = self.last_irq_disable;
            }
        }
        if from_idle {
            // Idle's exit path entered the scheduler with no preempt event: the section starts
            // at its last IRQ disable (EV3), else here.
            let start = self.irq_disable_since_switch.unwrap_or((ts, self.irq_time));
            if self.union_start.is_none() {
                self.union_start = Some(start);
                self.sched_start_in_union = None;
            }
            if self.sched_start_in_union.is_none() {
                self.sched_start_in_union = Some(start);
            }
            self.preempt_off = Some(start);
            self.switch_in_section = true;
            self.last_irq_disable = self.irq_disable_since_switch;
            self.ev3 = self.irq_disable_since_switch;
        }
        self.idle = to_idle;
        self.irq_disable_since_switch = None;
        self.wakeup_pending = false;
        self.paie_start = None;
    }

    fn handler_open(&mut self, key: HKey, ts: u64) {
        if self.open_handlers.is_empty() && self.irq_off.is_some() {
            self.arrival = true;
        }
        self.open_handlers.insert(key, ts);
    }
    fn handler_close(&mut self, key: HKey, ts: u64) {
        if let Some(s) = self.open_handlers.remove(&key) {
            self.irq_time = self.irq_time.saturating_add(ts.saturating_sub(s));
        }
    }
}

/// Pure: per-CPU thread variables from an event stream (per CPU in time order).
pub fn measure(events: &[Event]) -> BTreeMap<u32, CpuThreadMeasure> {
    let mut m = ThreadMeasurer::default();
    for e in events {
        m.push(e);
    }
    m.finish()
}

/// [`measure`] fed event by event, for runs whose events are never all in memory. The maxima
/// are running maxima; what is carried between events is, per CPU, the state machine above (the
/// open preempt/IRQ-disabled sections, the pending wake-up, the open handlers — one per IRQ
/// line or vector at most), so memory does not grow with the run. After the same events, in
/// the same per-CPU order, it holds exactly what [`measure`] returns, however they were batched.
#[derive(Clone, Debug, Default)]
pub struct ThreadMeasurer {
    st: BTreeMap<u32, St>,
}

impl ThreadMeasurer {
    /// One event; per CPU, events must come in time order (any interleaving across CPUs).
    pub fn push(&mut self, e: &Event) {
        self.st.entry(e.cpu).or_default().step(e);
    }

    /// The CPU's measure so far (None before its first event).
    pub fn get(&self, cpu: u32) -> Option<&CpuThreadMeasure> {
        self.st.get(&cpu).map(|s| &s.m)
    }

    pub fn finish(self) -> BTreeMap<u32, CpuThreadMeasure> {
        self.st.into_iter().map(|(c, s)| (c, s.m)).collect()
    }

    /// Heap held (approximate: map entries and open handlers), for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.st
            .values()
            .map(|s| {
                std::mem::size_of::<(u32, St)>()
                    + s.open_handlers.len() * std::mem::size_of::<(HKey, u64)>()
            })
            .sum()
    }
}

/// The fallback on kernels without preemptirq tracepoints: the observed maximum of the
/// non-interrupt part of the scheduling delay (from attribution) stands in for the whole
/// thread term. It is put in D_POID (so IFL equals it); the result is an ESTIMATE, NOT A SOUND
/// BOUND — observation can only under-estimate these maxima.
pub fn fallback_vars(max_non_interrupt_delay_ns: u64) -> ThreadVars {
    ThreadVars {
        poid_ns: max_non_interrupt_delay_ns,
        paie_ns: 0,
        psd_ns: 0,
        dst_ns: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::event::Vector;
    use EventKind::*;

    fn ev(ts: u64, kind: EventKind) -> Event {
        Event {
            ts_ns: ts,
            cpu: 0,
            kind,
        }
    }

    /// Hand-written fixture on CPU 0 (times in ns):
    /// 0–100: a thread disables preemption (not to schedule); IRQ 5 runs 40–50 inside it
    ///        → POID = 100 − 10 = 90.
    /// 100: both enabled; a wake-up for CPU 0 is pending since 95 → pe_ie starts.
    /// 130: preempt disable to schedule → PAIE = 30. IRQs disabled at 150 (EV3), switch at 170,
    ///      IRQs enabled 180, preempt enabled 200 (EV7) → PSD = 200 − 130 = 70, DST = 200 − 150 = 50.
    /// 300–340: IRQs disabled, local_timer runs 310–315 inside → POID candidate 40 − 5 = 35.
    fn fixture() -> Vec<Event> {
        vec![
            ev(0, PreemptDisable),
            ev(40, IrqEntry { irq: 5 }),
            ev(
                50,
                IrqExit {
                    irq: 5,
                    handled: true,
                },
            ),
            ev(
                95,
                Wakeup {
                    pid: 7,
                    prio: 9,
                    target_cpu: 0,
                },
            ),
            ev(100, PreemptEnable),
            ev(130, PreemptDisable),
            ev(150, IrqDisable),
            ev(
                170,
                Switch {
                    prev_pid: 1,
                    prev_prio: 120,
                    prev_state: 0,
                    next_pid: 7,
                    next_prio: 9,
                },
            ),
            ev(180, IrqEnable),
            ev(200, PreemptEnable),
            ev(300, IrqDisable),
            ev(
                310,
                VectorEntry {
                    vector: Vector::LocalTimer,
                },
            ),
            ev(
                315,
                VectorExit {
                    vector: Vector::LocalTimer,
                },
            ),
            ev(340, IrqEnable),
        ]
    }

    #[test]
    fn measures_table_1_variables() {
        let m = measure(&fixture());
        let c = &m[&0];
        assert_eq!(
            c.vars,
            ThreadVars {
                poid_ns: 90,
                paie_ns: 30,
                psd_ns: 70,
                dst_ns: 50
            }
        );
        assert_eq!(c.sched_sections, 1);
        assert_eq!(c.preemptirq_events, 8); // 0,100,130,150,180,200,300,340
                                            // 300–340 is an arrival (local_timer entered with IRQs off, no handler open): 40 − 5.
                                            // IRQ 5 at 40 came with IRQs on as far as the events say: not measured as one.
        assert_eq!((c.irq_entry_exit_ns, c.irq_arrivals), (35, 1));
    }

    #[test]
    fn irq_entry_exit_is_the_irq_off_stretch_around_a_handler() {
        let h = |ts, irq, entry: bool| {
            if entry {
                ev(ts, IrqEntry { irq })
            } else {
                ev(ts, IrqExit { irq, handled: true })
            }
        };
        let v = vec![
            // From a task: entry code 1000→1010, handler 20, exit code 1030→1034: 14.
            ev(1000, IrqDisable),
            h(1010, 5, true),
            h(1030, 5, false),
            ev(1034, IrqEnable),
            // A vector whose exit starts soft-IRQs (local_irq_enable at 2060): 3 + 10 = 13;
            // the soft-IRQ's own masked stretch (2200→2210) has no handler: not an arrival.
            ev(2000, IrqDisable),
            ev(
                2003,
                VectorEntry {
                    vector: Vector::LocalTimer,
                },
            ),
            ev(
                2050,
                VectorExit {
                    vector: Vector::LocalTimer,
                },
            ),
            ev(2060, IrqEnable),
            ev(2200, IrqDisable),
            ev(2210, IrqEnable),
            // A masked stretch with no handler: not an arrival.
            ev(3000, IrqDisable),
            ev(3500, IrqEnable),
            // A shared line, two handlers in one entry: one arrival, 25 − 8 − 9 = 8.
            ev(4000, IrqDisable),
            h(4002, 5, true),
            h(4010, 5, false),
            h(4011, 6, true),
            h(4020, 6, false),
            ev(4025, IrqEnable),
        ];
        let c = &measure(&v)[&0];
        assert_eq!((c.irq_entry_exit_ns, c.irq_arrivals), (14, 3));
        // The masked stretches stay D_POID's too (the longest is 3000→3500).
        assert_eq!(c.vars.poid_ns, 500);
    }

    #[test]
    fn irq_return_preemption_splits_poid_and_psd() {
        // IRQs off from 0 (IRQ return path), preempt disabled to schedule at 30, switch at 40,
        // IRQs on at 45, preempt on at 60: POID = 30 (0→30), PSD = 30 (30→60), no EV3 inside the
        // section (IRQs were already off) → DST 0.
        let v = vec![
            ev(0, IrqDisable),
            ev(30, PreemptDisable),
            ev(
                40,
                Switch {
                    prev_pid: 1,
                    prev_prio: 120,
                    prev_state: 0,
                    next_pid: 2,
                    next_prio: 9,
                },
            ),
            ev(45, IrqEnable),
            ev(60, PreemptEnable),
        ];
        let c = &measure(&v)[&0];
        assert_eq!(
            c.vars,
            ThreadVars {
                poid_ns: 30,
                paie_ns: 0,
                psd_ns: 30,
                dst_ns: 0
            }
        );
    }

    fn sw(prev_pid: u32, next_pid: u32) -> EventKind {
        Switch {
            prev_pid,
            prev_prio: 120,
            prev_state: 0,
            next_pid,
            next_prio: 120,
        }
    }

    #[test]
    fn idle_time_is_not_a_scheduler_section() {
        // Task 1 calls the scheduler (preempt off at 0, IRQ 4 runs 2–5, IRQs off at 10 = EV3)
        // and switches to idle at 40: PSD 40 − 3 = 37, DST 40 − 10 = 30. IRQs stay masked in
        // idle until 45: POID 5. Idle for ~1 ms; a wake-up interrupt (IRQ 3, 1000–1010); idle's
        // exit path masks IRQs at 1025 and switches to task 7 at 1030, which unmasks at 1040
        // and enables preemption at 1050: PSD = DST = 1050 − 1025 = 25. Before idle was
        // understood, PSD was the whole 0 → 1050 minus 13 of interrupts = 1037.
        let v = vec![
            ev(0, PreemptDisable),
            ev(2, IrqEntry { irq: 4 }),
            ev(
                5,
                IrqExit {
                    irq: 4,
                    handled: true,
                },
            ),
            ev(10, IrqDisable),
            ev(40, sw(1, 0)),
            ev(45, IrqEnable),
            // The idle task's own preemption toggles: counted, no interval.
            ev(50, PreemptEnable),
            ev(54, PreemptDisable),
            ev(1000, IrqEntry { irq: 3 }),
            ev(
                1005,
                Wakeup {
                    pid: 7,
                    prio: 120,
                    target_cpu: 0,
                },
            ),
            ev(
                1010,
                IrqExit {
                    irq: 3,
                    handled: true,
                },
            ),
            ev(1025, IrqDisable),
            ev(1030, sw(0, 7)),
            ev(1040, IrqEnable),
            ev(1050, PreemptEnable),
        ];
        let mut m = ThreadMeasurer::default();
        for e in &v[..5] {
            m.push(e);
        }
        let c = m.get(0).unwrap();
        assert_eq!(
            (c.vars.psd_ns, c.vars.dst_ns, c.sched_sections),
            (37, 30, 1)
        );
        let c = &measure(&v)[&0];
        assert_eq!(
            c.vars,
            ThreadVars {
                poid_ns: 5,
                paie_ns: 0,
                psd_ns: 37,
                dst_ns: 30
            }
        );
        assert_eq!(c.sched_sections, 2);
        assert_eq!(c.preemptirq_events, 8);
    }

    #[test]
    fn idle_exit_section_starts_at_its_last_irq_disable() {
        // Idle since before the trace: IRQs masked 100–150 (POID 50: masked IRQs delay the
        // wake-up); the exit path masks IRQs at 400 and switches at 420; IRQ 5 runs 435–440
        // after the unmask at 430; preempt enable at 460: PSD = DST = 460 − 400 − 5 = 55, and
        // the union from 400 is the scheduler's (no POID from it).
        let v = vec![
            ev(100, IrqDisable),
            ev(150, IrqEnable),
            ev(400, IrqDisable),
            ev(420, sw(0, 7)),
            ev(430, IrqEnable),
            ev(435, IrqEntry { irq: 5 }),
            ev(
                440,
                IrqExit {
                    irq: 5,
                    handled: true,
                },
            ),
            ev(460, PreemptEnable),
        ];
        let c = &measure(&v)[&0];
        assert_eq!(
            c.vars,
            ThreadVars {
                poid_ns: 50,
                paie_ns: 0,
                psd_ns: 55,
                dst_ns: 55
            }
        );
        assert_eq!(c.sched_sections, 1);
    }

    #[test]
    fn idle_exit_without_irq_disable_starts_at_the_switch() {
        // Task 1 switches to idle at 30 (section 0 → 30, no IRQ disable: DST 0); no IRQ disable
        // in idle, so the section leaving it starts at the switch at 500 and ends at the preempt
        // enable at 520: PSD max(30, 20) = 30, two sections, no POID.
        let v = vec![
            ev(0, PreemptDisable),
            ev(30, sw(1, 0)),
            ev(500, sw(0, 7)),
            ev(520, PreemptEnable),
        ];
        let c = &measure(&v)[&0];
        assert_eq!(
            c.vars,
            ThreadVars {
                poid_ns: 0,
                paie_ns: 0,
                psd_ns: 30,
                dst_ns: 0
            }
        );
        assert_eq!(c.sched_sections, 2);
        // The same exit alone: PSD 20.
        let c = &measure(&v[2..])[&0];
        assert_eq!((c.vars.psd_ns, c.vars.dst_ns, c.sched_sections), (20, 0, 1));
        // The trace begins in idle, whose preempt disable at 0 is taken for a section until the
        // switch from idle shows whose it was: dropped, PSD 20, no POID.
        let c = &measure(&[
            ev(0, PreemptDisable),
            ev(500, sw(0, 7)),
            ev(520, PreemptEnable),
        ])[&0];
        assert_eq!(
            (c.vars.psd_ns, c.vars.poid_ns, c.sched_sections),
            (20, 0, 1)
        );
    }

    #[test]
    fn no_preemptirq_means_zero_events() {
        let v = vec![
            ev(0, IrqEntry { irq: 1 }),
            ev(
                5,
                IrqExit {
                    irq: 1,
                    handled: true,
                },
            ),
        ];
        assert_eq!(measure(&v)[&0].preemptirq_events, 0);
    }

    /// A wake-up that cannot preempt the running task sets no need_resched: no pe_ie state.
    /// CPU 0 runs a FIFO task (prio 4) from 10. A wake-up at 100 of a fair task (prio 120)
    /// cannot preempt it: D_PAIE 0. The same wake-up of a prio-2 task is pending from 100;
    /// preemption is enabled again at 300 and the next disable, at 500, ends the pe_ie state:
    /// D_PAIE = 200. With a fair task running, a fair wake-up counts (conservatively): 200.
    #[test]
    fn wakeups_that_cannot_preempt_open_no_pe_ie_state() {
        let sw = |ts, next_pid, next_prio| {
            ev(
                ts,
                Switch {
                    prev_pid: 1,
                    prev_prio: 120,
                    prev_state: 0,
                    next_pid,
                    next_prio,
                },
            )
        };
        let wk = |ts, prio| {
            ev(
                ts,
                Wakeup {
                    pid: 9,
                    prio,
                    target_cpu: 0,
                },
            )
        };
        let low = vec![
            ev(0, PreemptDisable),
            sw(10, 5, 4),
            ev(20, PreemptEnable),
            wk(100, 120),
            ev(290, PreemptDisable),
            ev(300, PreemptEnable),
            ev(500, PreemptDisable),
            ev(510, PreemptEnable),
        ];
        assert_eq!(measure(&low)[&0].vars.paie_ns, 0);
        // The same with a higher-priority wake-up: pending from 100; the enable at 300 opens
        // pe_ie, the disable at 500 ends it: D_PAIE = 200.
        let mut high = low.clone();
        high[3] = wk(100, 2);
        assert_eq!(measure(&high)[&0].vars.paie_ns, 200);
        // A fair task running (prio 120): a fair wake-up counts (conservatively).
        let mut fair = low.clone();
        fair[1] = sw(10, 5, 120);
        assert_eq!(measure(&fair)[&0].vars.paie_ns, 200);
        assert!(wakeup_preempts(None, false, 120));
        assert!(wakeup_preempts(Some(4), true, 120));
        assert!(!wakeup_preempts(Some(4), false, 4));
        assert!(wakeup_preempts(Some(4), false, -1));
    }
}
