//! The tracefs thread variables streamed through the state machine.

use rtscope_model::bound::ThreadVars;
use rtscope_model::event::Event;
use rtscope_model::event::EventKind::*;
use rtscope_model::warning::WarningCode;
use rtscope_session::thread_vars::*;
use rtscope_trace::preemptirq_tracefs::{ReaderTotals, Record};

fn ev(cpu: u32, ts: u64, kind: rtscope_model::event::EventKind) -> Event {
    Event {
        ts_ns: ts,
        cpu,
        kind,
    }
}

fn sw(ts: u64) -> Event {
    ev(
        0,
        ts,
        Switch {
            prev_pid: 1,
            prev_prio: 120,
            prev_state: 0,
            next_pid: 2,
            next_prio: 120,
        },
    )
}

/// A gap restarts the state machine: an interval open across it is not measured, the
/// maxima before it are kept, the counts add up.
#[test]
fn a_gap_restarts_the_state_machine() {
    let mut s = Streams::new(&[0]);
    // IRQs off 0–40 (POID 40), then a scheduler section 100–160 with its switch at 130.
    for e in [
        ev(0, 0, IrqDisable),
        ev(0, 40, IrqEnable),
        ev(0, 100, PreemptDisable),
        sw(130),
        ev(0, 160, PreemptEnable),
        // Opened before the gap; its enable after the gap is never paired with it.
        ev(0, 200, PreemptDisable),
    ] {
        on_record(&mut s, Record::Event(e));
    }
    on_record(&mut s, Record::Gap { cpu: 0, missed: 5 });
    // After the gap: the enable at 10_000 would close a 9_800 ns POID had the gap not
    // restarted the state machine; then IRQs off 10_100–10_130 (POID 30).
    for e in [
        ev(0, 10_000, PreemptEnable),
        ev(0, 10_100, IrqDisable),
        ev(0, 10_130, IrqEnable),
    ] {
        on_record(&mut s, Record::Event(e));
    }
    // Another CPU's record is not ours.
    on_record(&mut s, Record::Event(ev(3, 10_200, IrqDisable)));
    let m = s.cpus[&0].measure();
    assert_eq!(
        m.vars,
        ThreadVars {
            poid_ns: 40,
            paie_ns: 0,
            psd_ns: 60,
            dst_ns: 0
        }
    );
    assert_eq!((m.preemptirq_events, m.sched_sections), (8, 1));
    assert_eq!(s.cpus[&0].restarts, 1);
    // Without the gap, the same events give the 9_800 ns interval.
    let mut whole = Streams::new(&[0]);
    for e in [
        ev(0, 0, IrqDisable),
        ev(0, 40, IrqEnable),
        ev(0, 100, PreemptDisable),
        sw(130),
        ev(0, 160, PreemptEnable),
        ev(0, 200, PreemptDisable),
        ev(0, 10_000, PreemptEnable),
    ] {
        on_record(&mut whole, Record::Event(e));
    }
    assert_eq!(whole.cpus[&0].measure().vars.poid_ns, 9_800);
}

#[test]
fn the_document_says_the_loss_and_the_reader() {
    let mut s = Streams::new(&[0, 1]);
    for e in [ev(0, 0, IrqDisable), ev(0, 50, IrqEnable)] {
        on_record(&mut s, Record::Event(e));
    }
    let mut t = ReaderTotals {
        start_ns: 1_000,
        end_ns: 2_000_001_000,
        records: 2,
        bytes: 4096,
        ..Default::default()
    };
    let ok = document(&s, &t, 7, false);
    assert_eq!(ok.lost_events, 0);
    assert_eq!(ok.mechanism, "tracefs");
    assert_eq!(ok.duration_ns, 2_000_000_000);
    assert_eq!(ok.started_ns, 1_000);
    assert_eq!(ok.cpus[0].thread.poid_ns, 50);
    assert_eq!(ok.cpus[0].preemptirq_events, 2);
    assert!(ok
        .warnings
        .iter()
        .all(|w| w.code != WarningCode::LostEvents));
    // CPU 1 saw nothing: said.
    assert!(ok.warnings.iter().any(|w| w.message.contains("cpu 1")));
    let r = ok.reader.expect("reader");
    assert_eq!((r.records, r.bytes, r.cpu_ns), (2, 4096, 7));
    // The stats counter and the pages disagree: the larger counts.
    t.dropped.insert(0, 3);
    t.paged_missed.insert(0, 5);
    t.dropped.insert(1, 2);
    let bad = document(&s, &t, 7, false);
    assert_eq!(bad.lost_events, 7);
    assert_eq!((bad.cpus[0].lost_events, bad.cpus[1].lost_events), (5, 2));
    let w = &bad.warnings[0];
    assert_eq!(w.code, WarningCode::LostEvents);
    assert!(w.message.contains("cpu 0 5, cpu 1 2"), "{}", w.message);
}
