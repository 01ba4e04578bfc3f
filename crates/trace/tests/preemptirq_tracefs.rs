//! The tracefs mechanism of the thread variables end to end without a kernel: random event
//! streams are written as ring-buffer pages (the layout `trace_pipe_raw` returns, with the
//! events' `format` files as kernel 6.12 prints them), decoded back page by page
//! ([`page_records`]) and streamed record by record through the pure state machine; the result
//! equals the state machine over the original stream, and — with root — the eBPF state machine
//! fed the decoded events through BPF_PROG_TEST_RUN ([`Replay`]).

use proptest::prelude::*;
use rtscope_analysis::bound::thread::{self, ThreadMeasurer};
use rtscope_model::event::{Event, EventKind, Vector};
use rtscope_trace::preemptirq::Replay;
use rtscope_trace::preemptirq_tracefs::{page_records, Record};
use rtscope_trace::tracefs::{parse_format, parse_header_page, Decoders, HeaderPage};

const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

/// A field of a format file: declaration, offset, size.
type FieldDecl = (&'static str, usize, usize);

/// The events, their ids, and their fields as 6.12 x86_64 has them.
const EVENTS: &[(&str, u16, &[FieldDecl])] = &[
    (
        "preempt_disable",
        500,
        &[("s32 caller_offs", 8, 4), ("s32 parent_offs", 12, 4)],
    ),
    (
        "preempt_enable",
        501,
        &[("s32 caller_offs", 8, 4), ("s32 parent_offs", 12, 4)],
    ),
    (
        "irq_disable",
        502,
        &[("s32 caller_offs", 8, 4), ("s32 parent_offs", 12, 4)],
    ),
    (
        "irq_enable",
        503,
        &[("s32 caller_offs", 8, 4), ("s32 parent_offs", 12, 4)],
    ),
    (
        "sched_switch",
        504,
        &[
            ("char prev_comm[16]", 8, 16),
            ("pid_t prev_pid", 24, 4),
            ("int prev_prio", 28, 4),
            ("long prev_state", 32, 8),
            ("char next_comm[16]", 40, 16),
            ("pid_t next_pid", 56, 4),
            ("int next_prio", 60, 4),
        ],
    ),
    (
        "sched_wakeup",
        505,
        &[
            ("char comm[16]", 8, 16),
            ("pid_t pid", 24, 4),
            ("int prio", 28, 4),
            ("int target_cpu", 32, 4),
        ],
    ),
    (
        "irq_handler_entry",
        506,
        &[("int irq", 8, 4), ("__data_loc char[] name", 12, 4)],
    ),
    (
        "irq_handler_exit",
        507,
        &[("int irq", 8, 4), ("int ret", 12, 4)],
    ),
    ("local_timer_entry", 508, &[("int vector", 8, 4)]),
    ("local_timer_exit", 509, &[("int vector", 8, 4)]),
    (
        "nmi_handler",
        510,
        &[
            ("void * handler", 8, 8),
            ("s64 delta_ns", 16, 8),
            ("int handled", 24, 4),
        ],
    ),
    ("softirq_raise", 511, &[("unsigned int vec", 8, 4)]),
];

const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
const PAGE: usize = 4096;

fn format_text(name: &str, id: u16, fields: &[FieldDecl]) -> String {
    let mut t = format!("name: {name}\nID: {id}\nformat:\n{COMMON}");
    for (decl, off, size) in fields {
        t += &format!("\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:1;\n");
    }
    t
}

fn decoders() -> Decoders {
    let mut d = Decoders::default();
    for (name, id, fields) in EVENTS {
        let f = parse_format(&format_text(name, *id, fields)).expect("format parses");
        d.add(name, &f).expect("decoder");
    }
    d
}

fn id_of(name: &str) -> u16 {
    EVENTS.iter().find(|e| e.0 == name).expect("known event").1
}

/// The record payload of one event (common fields, then the event's own).
fn payload(k: &EventKind) -> Vec<u8> {
    let put = |p: &mut Vec<u8>, off: usize, b: &[u8]| p[off..off + b.len()].copy_from_slice(b);
    let (name, len) = match k {
        EventKind::PreemptDisable => ("preempt_disable", 16),
        EventKind::PreemptEnable => ("preempt_enable", 16),
        EventKind::IrqDisable => ("irq_disable", 16),
        EventKind::IrqEnable => ("irq_enable", 16),
        EventKind::Switch { .. } => ("sched_switch", 64),
        EventKind::Wakeup { .. } => ("sched_wakeup", 36),
        EventKind::IrqEntry { .. } => ("irq_handler_entry", 16),
        EventKind::IrqExit { .. } => ("irq_handler_exit", 16),
        EventKind::VectorEntry { .. } => ("local_timer_entry", 12),
        EventKind::VectorExit { .. } => ("local_timer_exit", 12),
        EventKind::Nmi { .. } => ("nmi_handler", 28),
        EventKind::SoftirqRaise { .. } => ("softirq_raise", 12),
        k => panic!("no encoding for {k:?}"),
    };
    let mut p = vec![0u8; len];
    put(&mut p, 0, &id_of(name).to_le_bytes());
    match *k {
        EventKind::PreemptDisable
        | EventKind::PreemptEnable
        | EventKind::IrqDisable
        | EventKind::IrqEnable => {
            put(&mut p, 8, &(-0x123i32).to_le_bytes());
            put(&mut p, 12, &0x4567i32.to_le_bytes());
        }
        EventKind::Switch {
            prev_pid,
            prev_prio,
            prev_state,
            next_pid,
            next_prio,
        } => {
            put(&mut p, 8, b"prev");
            put(&mut p, 24, &prev_pid.to_le_bytes());
            put(&mut p, 28, &prev_prio.to_le_bytes());
            put(&mut p, 32, &prev_state.to_le_bytes());
            put(&mut p, 40, b"next");
            put(&mut p, 56, &next_pid.to_le_bytes());
            put(&mut p, 60, &next_prio.to_le_bytes());
        }
        EventKind::Wakeup {
            pid,
            prio,
            target_cpu,
        } => {
            put(&mut p, 8, b"woken");
            put(&mut p, 24, &pid.to_le_bytes());
            put(&mut p, 28, &prio.to_le_bytes());
            put(&mut p, 32, &target_cpu.to_le_bytes());
        }
        EventKind::IrqEntry { irq } => put(&mut p, 8, &irq.to_le_bytes()),
        EventKind::IrqExit { irq, handled } => {
            put(&mut p, 8, &irq.to_le_bytes());
            put(&mut p, 12, &u32::from(handled).to_le_bytes());
        }
        EventKind::VectorEntry { .. } | EventKind::VectorExit { .. } => {
            put(&mut p, 8, &0xecu32.to_le_bytes())
        }
        EventKind::Nmi { delta_ns } => {
            put(&mut p, 8, &0xffff_ffff_8100_0000u64.to_le_bytes());
            put(&mut p, 16, &delta_ns.to_le_bytes());
            put(&mut p, 24, &1u32.to_le_bytes());
        }
        EventKind::SoftirqRaise { vec } => put(&mut p, 8, &vec.to_le_bytes()),
        _ => {}
    }
    p
}

/// One CPU's events (time order) as ring-buffer pages: each page's base is its first event's
/// time; a delta that does not fit 27 bits takes a time-extend record first (ring_buffer.c).
fn pages(events: &[Event]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut data: Vec<u8> = Vec::new();
    let mut base = 0u64;
    let mut last = 0u64;
    let flush = |data: &mut Vec<u8>, base: u64, out: &mut Vec<Vec<u8>>| {
        if data.is_empty() {
            return;
        }
        let mut page = vec![0u8; 16];
        page[0..8].copy_from_slice(&base.to_le_bytes());
        page[8..16].copy_from_slice(&(data.len() as u64).to_le_bytes());
        page.extend_from_slice(data);
        page.resize(PAGE, 0);
        out.push(page);
        data.clear();
    };
    for e in events {
        let p = payload(&e.kind);
        let rec_len = 4 + p.len() + 8;
        if data.len() + rec_len > PAGE - 16 {
            flush(&mut data, base, &mut out);
        }
        if data.is_empty() {
            base = e.ts_ns;
            last = e.ts_ns;
        }
        let delta = e.ts_ns - last;
        last = e.ts_ns;
        let delta = if delta >= 1 << 27 {
            // Time extend: type_len 30, low 27 bits in the header, the rest in array[0].
            let hdr = (((delta & ((1 << 27) - 1)) as u32) << 5) | 30;
            data.extend_from_slice(&hdr.to_le_bytes());
            data.extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
            0
        } else {
            delta
        };
        let hdr = ((delta as u32) << 5) | (p.len() / 4) as u32;
        data.extend_from_slice(&hdr.to_le_bytes());
        data.extend_from_slice(&p);
    }
    flush(&mut data, base, &mut out);
    out
}

fn header() -> HeaderPage {
    parse_header_page(HEADER_PAGE).expect("header parses")
}

fn switch_pids(prev_pid: u32, next_pid: u32) -> EventKind {
    EventKind::Switch {
        prev_pid,
        prev_prio: 120,
        prev_state: 0,
        next_pid,
        next_prio: 9,
    }
}

fn arb_kind(cpus: u32) -> impl Strategy<Value = EventKind> {
    prop_oneof![
        4 => Just(EventKind::PreemptDisable),
        4 => Just(EventKind::PreemptEnable),
        3 => Just(EventKind::IrqDisable),
        3 => Just(EventKind::IrqEnable),
        2 => Just(switch_pids(1, 7)),
        1 => Just(switch_pids(1, 0)),
        1 => Just(switch_pids(0, 7)),
        1 => (0..cpus, 0i32..140).prop_map(|(target_cpu, prio)| EventKind::Wakeup { pid: 7, prio, target_cpu }),
        1 => (0u32..3).prop_map(|irq| EventKind::IrqEntry { irq }),
        1 => (0u32..3).prop_map(|irq| EventKind::IrqExit { irq, handled: true }),
        1 => Just(EventKind::VectorEntry { vector: Vector::LocalTimer }),
        1 => Just(EventKind::VectorExit { vector: Vector::LocalTimer }),
        1 => (0u64..30).prop_map(|delta_ns| EventKind::Nmi { delta_ns }),
        1 => Just(EventKind::SoftirqRaise { vec: 1 }),
    ]
}

/// Random per-CPU streams (deltas up to 2^28 ns, so some need a time extend), long enough to
/// fill several pages.
fn arb_streams() -> impl Strategy<Value = Vec<Event>> {
    let one = |cpu: u32| {
        prop::collection::vec(
            (
                arb_kind(2),
                prop_oneof![8 => 0u64..50, 1 => 0u64..(1 << 28)],
            ),
            1..600,
        )
        .prop_map(move |v| {
            let mut ts = 1_000_000u64;
            v.into_iter()
                .map(|(kind, dt)| {
                    ts += dt;
                    Event {
                        ts_ns: ts,
                        cpu,
                        kind,
                    }
                })
                .collect::<Vec<_>>()
        })
    };
    (one(0), one(1)).prop_map(|(a, b)| a.into_iter().chain(b).collect())
}

/// Decode the CPUs' pages, CPU after CPU (as the reader drains them), pushing each event into
/// the state machine the moment it comes out of its page.
fn decode_and_stream(events: &[Event]) -> (Vec<Event>, ThreadMeasurer, u64) {
    let dec = decoders();
    let hp = header();
    let mut decoded = Vec::new();
    let mut m = ThreadMeasurer::default();
    let mut gaps = 0;
    let mut buf = Vec::new();
    for cpu in 0..2 {
        let mine: Vec<Event> = events.iter().filter(|e| e.cpu == cpu).copied().collect();
        for page in pages(&mine) {
            page_records(&page, &hp, cpu, &dec, &mut buf, &mut |r| match r {
                Record::Event(e) => {
                    m.push(&e);
                    decoded.push(e);
                }
                Record::Gap { .. } => gaps += 1,
            })
            .expect("page decodes");
        }
    }
    (decoded, m, gaps)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The pages decode back to the very events written (time stamps to the ns, every field
    /// the state machine reads), and the measure streamed record by record equals the state
    /// machine over the original stream.
    #[test]
    fn pages_decode_to_the_stream_and_measure_the_same(events in arb_streams()) {
        let (decoded, m, gaps) = decode_and_stream(&events);
        prop_assert_eq!(gaps, 0);
        let mut want = events.clone();
        want.sort_by_key(|e| e.cpu); // per CPU, in time order, as decoded
        prop_assert_eq!(&decoded, &want);
        prop_assert_eq!(m.finish(), thread::measure(&events));
    }
}

/// The decoded events through the eBPF state machine (BPF_PROG_TEST_RUN on each event's CPU)
/// give what the streamed pure one gives: the two mechanisms agree on the same events.
#[test]
fn decoded_pages_through_the_bpf_state_machine_agree() {
    if !rtscope_sys::system::is_root() {
        rtscope_testkit::skipped("needs root (BPF_PROG_TEST_RUN)");
    }
    let r = match Replay::load() {
        Ok(r) => r,
        Err(e) => return rtscope_testkit::skipped(format_args!("{e}")),
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    if cpus < 2 {
        return rtscope_testkit::skipped("the replay needs 2 online CPUs (events of CPUs 0 and 1)");
    }
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 16,
        ..ProptestConfig::default()
    });
    runner
        .run(&arb_streams(), |events| {
            r.reset().map_err(TestCaseError::fail)?;
            let (decoded, m, _) = decode_and_stream(&events);
            for e in &decoded {
                r.push(e, false).map_err(TestCaseError::fail)?;
            }
            let got = r.read();
            for (cpu, w) in m.finish() {
                let g = got.get(&cpu).cloned().unwrap_or_default();
                prop_assert_eq!(g.thread, w.vars, "cpu {}", cpu);
                prop_assert_eq!(g.preemptirq_events, w.preemptirq_events, "cpu {}", cpu);
                prop_assert_eq!(g.sched_sections, w.sched_sections, "cpu {}", cpu);
            }
            Ok(())
        })
        .expect("bpf and streamed measures agree");
}
