//! The in-kernel reduction of preemptirq events (src/bpf/preemptirq.bpf.c) on the real kernel:
//! - whether this kernel has the tracepoints, and the reason when it has not;
//! - the BPF state machine, fed recorded events through BPF_PROG_TEST_RUN (no tracepoint needed),
//!   gives exactly what the pure one (`rtscope_analysis::bound::thread::measure`) gives: on the
//!   hand-checked fixture, on random event streams, with programs interrupting an application
//!   (queue-only events), and it counts what it cannot hold (queue and handler-stack overflow).
//!
//! Needs root for the BPF parts.

use proptest::prelude::*;
use rtscope_analysis::bound::thread;
use rtscope_model::bound::ThreadVars;
use rtscope_model::event::{Event, EventKind, Vector};
use rtscope_trace::preemptirq::{self, Replay, HANDLER_DEPTH, QUEUE_LEN};

fn ev(cpu: u32, ts: u64, kind: EventKind) -> Event {
    Event {
        ts_ns: ts,
        cpu,
        kind,
    }
}

fn switch() -> EventKind {
    switch_pids(1, 7)
}

/// A switch from `prev_pid` to `next_pid` (0: the idle task).
fn switch_pids(prev_pid: u32, next_pid: u32) -> EventKind {
    EventKind::Switch {
        prev_pid,
        prev_prio: 120,
        prev_state: 0,
        next_pid,
        next_prio: 9,
    }
}

fn wakeup(target_cpu: u32) -> EventKind {
    EventKind::Wakeup {
        pid: 7,
        prio: 9,
        target_cpu,
    }
}

/// thread.rs's hand-checked fixture (its unit test `measures_table_1_variables`): POID 90,
/// PAIE 30, PSD 70, DST 50, one scheduler section, 8 preemptirq events.
fn fixture(cpu: u32) -> Vec<Event> {
    use EventKind::*;
    vec![
        ev(cpu, 0, PreemptDisable),
        ev(cpu, 40, IrqEntry { irq: 5 }),
        ev(
            cpu,
            50,
            IrqExit {
                irq: 5,
                handled: true,
            },
        ),
        ev(cpu, 95, wakeup(cpu)),
        ev(cpu, 100, PreemptEnable),
        ev(cpu, 130, PreemptDisable),
        ev(cpu, 150, IrqDisable),
        ev(cpu, 170, switch()),
        ev(cpu, 180, IrqEnable),
        ev(cpu, 200, PreemptEnable),
        ev(cpu, 300, IrqDisable),
        ev(
            cpu,
            310,
            VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            cpu,
            315,
            VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        ev(cpu, 340, IrqEnable),
    ]
}

/// Root and a loadable replay program, or why not (then the test prints SKIPPED).
fn replay() -> Result<Replay, String> {
    if !rtscope_sys::system::is_root() {
        return Err("needs root (BPF_PROG_TEST_RUN)".into());
    }
    Replay::load()
}

fn online_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// Compare the BPF result with the pure one for every CPU of `events`.
fn assert_same(r: &Replay, events: &[Event]) -> Result<(), TestCaseError> {
    let want = thread::measure(events);
    let got = r.read();
    for (cpu, w) in &want {
        let g = got.get(cpu).cloned().unwrap_or_default();
        prop_assert_eq!(g.thread, w.vars, "cpu {} thread vars", cpu);
        prop_assert_eq!(g.preemptirq_events, w.preemptirq_events, "cpu {}", cpu);
        prop_assert_eq!(g.sched_sections, w.sched_sections, "cpu {}", cpu);
        prop_assert_eq!(
            (g.irq_entry_exit_ns, g.irq_arrivals),
            (w.irq_entry_exit_ns, w.irq_arrivals),
            "cpu {} interrupt entry/exit",
            cpu
        );
        prop_assert_eq!(g.lost_events, 0, "cpu {}", cpu);
    }
    Ok(())
}

#[test]
fn availability_on_this_kernel() {
    let btf = std::fs::read("/sys/kernel/btf/vmlinux").unwrap_or_default();
    let has = preemptirq::btf_tracepoints(&btf).contains("preempt_disable");
    match preemptirq::available() {
        Ok(()) => assert!(has, "available() but no btf_trace_preempt_disable in BTF"),
        Err(e) => {
            assert!(!has, "the BTF has the tracepoint, yet: {e}");
            assert!(
                e.contains("CONFIG_PREEMPTIRQ_TRACEPOINTS"),
                "the reason should name the config option: {e}"
            );
        }
    }
    // Reducer::start refuses for the same reason, before loading anything.
    if !has {
        let e = preemptirq::Reducer::start(&[0])
            .err()
            .expect("start must fail");
        assert!(e.contains("CONFIG_PREEMPTIRQ_TRACEPOINTS"), "{e}");
    }
}

#[test]
fn replay_matches_the_hand_checked_fixture() {
    let r = match replay() {
        Ok(r) => r,
        Err(e) => return rtscope_testkit::skipped(format_args!("{e}")),
    };
    let cpus = online_cpus().min(2);
    let mut all = Vec::new();
    for cpu in 0..cpus {
        all.extend(fixture(cpu));
    }
    for e in &all {
        r.push(e, false).expect("replay");
    }
    let got = r.read();
    for cpu in 0..cpus {
        let c = &got[&cpu];
        assert_eq!(
            c.thread,
            ThreadVars {
                poid_ns: 90,
                paie_ns: 30,
                psd_ns: 70,
                dst_ns: 50
            },
            "cpu {cpu}"
        );
        assert_eq!((c.sched_sections, c.preemptirq_events), (1, 8));
        assert_eq!((c.lost_events, c.max_queued), (0, 1));
        // 300–340 masked around local_timer 310–315: 40 − 5, one arrival.
        assert_eq!((c.irq_entry_exit_ns, c.irq_arrivals), (35, 1));
    }
    assert_same(&r, &all).unwrap();
}

/// thread.rs's idle fixtures (`idle_time_is_not_a_scheduler_section`: POID 5, PSD 37, DST 30,
/// two sections, the idle task's own preempt toggles ignored; `idle_exit_section_starts_at_its_last_irq_disable`: POID 50, PSD = DST = 55).
#[test]
fn replay_ends_and_starts_scheduler_sections_at_idle_switches() {
    use EventKind::*;
    let r = match replay() {
        Ok(r) => r,
        Err(e) => return rtscope_testkit::skipped(format_args!("{e}")),
    };
    let exit = |irq, ts| ev(0, ts, IrqExit { irq, handled: true });
    let to_idle_and_back = vec![
        ev(0, 0, PreemptDisable),
        ev(0, 2, IrqEntry { irq: 4 }),
        exit(4, 5),
        ev(0, 10, IrqDisable),
        ev(0, 40, switch_pids(1, 0)),
        ev(0, 45, IrqEnable),
        ev(0, 50, PreemptEnable),
        ev(0, 54, PreemptDisable),
        ev(0, 1000, IrqEntry { irq: 3 }),
        ev(0, 1005, wakeup(0)),
        exit(3, 1010),
        ev(0, 1025, IrqDisable),
        ev(0, 1030, switch_pids(0, 7)),
        ev(0, 1040, IrqEnable),
        ev(0, 1050, PreemptEnable),
    ];
    let idle_exit = vec![
        ev(0, 100, IrqDisable),
        ev(0, 150, IrqEnable),
        ev(0, 400, IrqDisable),
        ev(0, 420, switch_pids(0, 7)),
        ev(0, 430, IrqEnable),
        ev(0, 435, IrqEntry { irq: 5 }),
        exit(5, 440),
        ev(0, 460, PreemptEnable),
    ];
    let events_of = |v: &[Event]| {
        v.iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    PreemptDisable | PreemptEnable | IrqDisable | IrqEnable
                )
            })
            .count() as u64
    };
    for (events, want, sections) in [
        (&to_idle_and_back, (5, 0, 37, 30), 2),
        (&idle_exit, (50, 0, 55, 55), 1),
    ] {
        r.reset().expect("reset");
        for e in events {
            r.push(e, false).expect("replay");
        }
        let c = r.read()[&0].clone();
        let t = c.thread;
        assert_eq!((t.poid_ns, t.paie_ns, t.psd_ns, t.dst_ns), want);
        assert_eq!((c.sched_sections, c.lost_events), (sections, 0));
        assert_eq!(c.preemptirq_events, events_of(events));
        assert_same(&r, events).unwrap();
    }
}

#[test]
fn queued_events_apply_in_order_and_overflow_is_counted() {
    let r = match replay() {
        Ok(r) => r,
        Err(e) => return rtscope_testkit::skipped(format_args!("{e}")),
    };
    // Every event but the last left queued (as behind an interrupted program): the last one
    // applies them all, in order.
    let f = fixture(0);
    for (i, e) in f.iter().enumerate() {
        r.push(e, i + 1 < f.len()).expect("replay");
    }
    let c = r.read()[&0].clone();
    assert_eq!(c.thread.poid_ns, 90);
    assert_eq!(
        (c.thread.psd_ns, c.thread.dst_ns, c.thread.paie_ns),
        (70, 50, 30)
    );
    assert_eq!(c.max_queued, f.len() as u64);
    assert_eq!(c.lost_events, 0);

    // QUEUE_LEN events appended while nothing drains fill the queue; the next event finds no
    // slot: it is dropped and counted, then applies the others.
    r.reset().expect("reset");
    for i in 0..=QUEUE_LEN as u64 {
        let nested = i < QUEUE_LEN as u64;
        r.push(&ev(0, 10 * i, EventKind::IrqDisable), nested)
            .expect("replay");
    }
    let c = r.read()[&0].clone();
    assert_eq!(c.queue_overflows, 1);
    assert_eq!(c.lost_events, 1);
    assert_eq!(c.preemptirq_events, QUEUE_LEN as u64);

    // HANDLER_DEPTH + 1 distinct open handlers: the last entry is dropped and counted.
    r.reset().expect("reset");
    for irq in 0..=HANDLER_DEPTH as u32 {
        r.push(&ev(0, u64::from(irq), EventKind::IrqEntry { irq }), false)
            .expect("replay");
    }
    let c = r.read()[&0].clone();
    assert_eq!((c.nest_overflows, c.lost_events), (1, 1));
}

/// A program that interrupts another's claim of a queue slot, between its loads of the tail and
/// the head, and claims, commits and applies its own event there (an interrupt's): the
/// interrupted event still gets a slot. Were the head read first, the tail could move past it,
/// the difference would wrap below 0 and the event would be dropped as a queue overflow.
#[test]
fn a_program_nested_in_a_claim_loses_nothing() {
    let r = match replay() {
        Ok(r) => r,
        Err(e) => return rtscope_testkit::skipped(format_args!("{e}")),
    };
    r.reset().expect("reset");
    let f = fixture(0);
    for e in &f {
        r.push_nested_in_claim(e).expect("replay");
    }
    let c = r.read()[&0].clone();
    assert_eq!((c.queue_overflows, c.lost_events), (0, 0));
    assert_eq!(c.thread.poid_ns, 90);
    assert_eq!(
        (c.thread.psd_ns, c.thread.dst_ns, c.thread.paie_ns),
        (70, 50, 30)
    );
    assert_same(&r, &f).unwrap();
}

/// A random event on CPU 0 or 1 (the kinds the state machine reads, plus one it ignores).
fn arb_kind() -> impl Strategy<Value = (u32, EventKind)> {
    let irq = 0u32..3;
    (0u32..2).prop_flat_map(move |cpu| {
        let k = prop_oneof![
            4 => Just(EventKind::PreemptDisable),
            4 => Just(EventKind::PreemptEnable),
            3 => Just(EventKind::IrqDisable),
            3 => Just(EventKind::IrqEnable),
            2 => Just(switch()),
            1 => Just(switch_pids(1, 0)),
            1 => Just(switch_pids(0, 7)),
            1 => Just(switch_pids(0, 0)),
            1 => (0u32..2).prop_map(wakeup),
            1 => irq.clone().prop_map(|irq| EventKind::IrqEntry { irq }),
            1 => irq.clone().prop_map(|irq| EventKind::IrqExit { irq, handled: true }),
            1 => Just(EventKind::VectorEntry { vector: Vector::LocalTimer }),
            1 => Just(EventKind::VectorExit { vector: Vector::LocalTimer }),
            1 => Just(EventKind::VectorEntry { vector: Vector::Other(0xec) }),
            1 => Just(EventKind::VectorExit { vector: Vector::Other(0xec) }),
            1 => (0u64..30).prop_map(|delta_ns| EventKind::Nmi { delta_ns }),
            1 => Just(EventKind::SoftirqRaise { vec: 1 }),
        ];
        k.prop_map(move |k| (cpu, k))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Random streams, each event possibly left queued (at most QUEUE_LEN - 1 in a
    /// row per CPU; the next applied event or the final flush applies them): the BPF maxima and
    /// counts equal the pure state machine's.
    #[test]
    fn replay_equals_pure_state_machine(
        steps in prop::collection::vec((arb_kind(), 0u64..40, any::<bool>()), 1..80)
    ) {
        let r = match replay() {
            Ok(r) => r,
            Err(e) => { rtscope_testkit::skipped(format_args!("{e}")); return Ok(()); }
        };
        let cpus = online_cpus().min(2);
        let mut ts = [1000u64; 2];
        let mut queued = [0usize; 2];
        let mut events = Vec::new();
        for ((cpu, kind), dt, nested) in steps {
            let cpu = cpu % cpus;
            let c = cpu as usize;
            ts[c] += dt;
            let kind = match kind {
                EventKind::Wakeup { pid, prio, target_cpu } => {
                    EventKind::Wakeup { pid, prio, target_cpu: target_cpu % cpus }
                }
                k => k,
            };
            let e = ev(cpu, ts[c], kind);
            let nested = nested && queued[c] + 1 < QUEUE_LEN;
            queued[c] = if nested { queued[c] + 1 } else { 0 };
            r.push(&e, nested).map_err(TestCaseError::fail)?;
            events.push(e);
        }
        for cpu in 0..cpus {
            r.flush(cpu).map_err(TestCaseError::fail)?;
        }
        assert_same(&r, &events)?;
    }
}

/// The longest D_POID says which events opened and closed it: in the hand-checked fixture the
/// union from the preempt_disable at 0 to the preempt_enable at 100 (10 ns of IRQ 5 discounted);
/// a union cut by a scheduler section ends at the section's preempt_disable.
#[test]
fn longest_poid_names_its_ends() {
    let r = match replay() {
        Ok(r) => r,
        Err(e) => return rtscope_testkit::skipped(format_args!("{e}")),
    };
    let site = |c: &rtscope_model::thread_vars::CodeSite| (c.event.clone(), c.ip, c.parent_ip);
    // Event i carries ip 0x1000 + i, parent_ip 0x2000 + i.
    let push_all = |events: &[Event]| {
        for (i, e) in events.iter().enumerate() {
            let i = i as u64;
            r.push_at(e, false, 0x1000 + i, 0x2000 + i).expect("replay");
        }
    };
    push_all(&fixture(0));
    let c = r.read()[&0].clone();
    assert_eq!(c.thread.poid_ns, 90);
    let at = c.poid_at.expect("poid_at");
    assert_eq!(site(&at.from), ("preempt_disable".into(), 0x1000, 0x2000));
    assert_eq!(site(&at.to), ("preempt_enable".into(), 0x1004, 0x2004));
    assert_eq!(at.irq_ns, 10);

    use EventKind::*;
    r.reset().expect("reset");
    let cut = vec![
        ev(0, 1000, IrqDisable),
        ev(0, 1020, PreemptDisable),
        ev(0, 1030, switch()),
        ev(0, 1040, PreemptEnable),
        ev(0, 1060, IrqEnable),
    ];
    push_all(&cut);
    let c = r.read()[&0].clone();
    assert_eq!(c.thread.poid_ns, 20);
    assert_eq!(c.thread.psd_ns, 20);
    let at = c.poid_at.expect("poid_at");
    assert_eq!(site(&at.from), ("irq_disable".into(), 0x1000, 0x2000));
    assert_eq!(site(&at.to), ("preempt_disable".into(), 0x1001, 0x2001));
    assert_eq!(at.irq_ns, 0);
    assert_same(&r, &cut).unwrap();
}

/// D_PAIE from the need_resched flag read at the wake-up: a fair-class wake-up beside a running
/// fair-class task that did not set TIF_NEED_RESCHED opens no pe_ie state; one that did, or one
/// replayed without the flag (thread.rs's conservative rule), does.
#[test]
fn a_wakeup_that_set_no_need_resched_opens_no_pe_ie_state() {
    use EventKind::*;
    let r = match replay() {
        Ok(r) => r,
        Err(e) => return rtscope_testkit::skipped(format_args!("{e}")),
    };
    let fair = Switch {
        prev_pid: 4,
        prev_prio: 120,
        prev_state: 0,
        next_pid: 5,
        next_prio: 120,
    };
    let wake = Wakeup {
        pid: 6,
        prio: 120,
        target_cpu: 0,
    };
    // IRQs masked 100→120 with the wake-up at 110; the next disable at 170: pe_ie 120→170.
    for (flag, want) in [(Some(false), 0u64), (Some(true), 50), (None, 50)] {
        r.reset().expect("reset");
        r.push(&ev(0, 0, fair), false).unwrap();
        r.push(&ev(0, 100, IrqDisable), false).unwrap();
        match flag {
            Some(f) => r.push_wakeup_read(&ev(0, 110, wake), f).unwrap(),
            None => r.push(&ev(0, 110, wake), false).unwrap(),
        }
        r.push(&ev(0, 120, IrqEnable), false).unwrap();
        r.push(&ev(0, 170, PreemptDisable), false).unwrap();
        r.push(&ev(0, 180, PreemptEnable), false).unwrap();
        let got = r.read()[&0].thread.paie_ns;
        assert_eq!(got, want, "need_resched read: {flag:?}");
    }
    // A wake-up of another CPU's task is refused by the helper, not mis-recorded.
    let remote = Wakeup {
        pid: 6,
        prio: 120,
        target_cpu: 1,
    };
    assert!(r.push_wakeup_read(&ev(0, 200, remote), true).is_err());
}
