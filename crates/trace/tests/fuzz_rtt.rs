//! Randomized fuzzing of the .rtt decoder (no cargo-fuzz: nightly is not available here).
//!
//! Each case builds a random valid trace, checks that it round-trips, then mutates the bytes
//! (bit flips, byte overwrites, truncation, insertion, deletion, section-length edits) and
//! decodes: the decoder must return Ok or a Corrupt error whose offset lies inside the file —
//! never panic, never allocate without bound. Half the mutants get their section checksums
//! repaired so the mutation reaches the section parsers instead of stopping at the CRC.
//!
//! Version 3: the random files have kept windows and snapshots (WIND) and half of them are
//! flight files; one case in 25 is written by the streaming `RttWriter` instead (event chunks
//! per CPU, META first and last, windows and snapshots interleaved); every valid file, cut at a
//! random point after its first section, must read as truncated there, never fail.
//!
//! CI runs 20 000 cases. The full run (≥ 1 M cases, ~ minutes):
//!   RTSCOPE_FUZZ_CASES=1000000 cargo test --release -p rtscope-trace --test fuzz_rtt -- --nocapture

use rtscope_model::event::{Event, EventKind, NameTables, Vector};
use rtscope_model::record::RawSample;
use rtscope_trace::flight::{RttWriter, TraceFileMode};
use rtscope_trace::rtt::{
    crc32, decode, encode_with, KeptKind, KeptWindowInfo, RttError, RttFile, RttMeta,
};

/// xorshift64*: deterministic, seedable, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

fn random_kind(r: &mut Rng) -> EventKind {
    let small = |r: &mut Rng| match r.below(4) {
        0 => r.next(),
        _ => r.below(300),
    };
    let vec = |r: &mut Rng| match r.below(10) {
        0 => Vector::LocalTimer,
        1 => Vector::Reschedule,
        2 => Vector::CallFunction,
        3 => Vector::CallFunctionSingle,
        4 => Vector::IrqWork,
        5 => Vector::ErrorApic,
        6 => Vector::SpuriousApic,
        7 => Vector::ThermalApic,
        8 => Vector::X86PlatformIpi,
        _ => Vector::Other(r.next() as u32),
    };
    match r.below(20) {
        0 => EventKind::IrqEntry {
            irq: small(r) as u32,
        },
        1 => EventKind::IrqExit {
            irq: small(r) as u32,
            handled: r.below(2) == 1,
        },
        2 => EventKind::SoftirqRaise {
            vec: r.below(12) as u32,
        },
        3 => EventKind::SoftirqEntry {
            vec: r.below(12) as u32,
        },
        4 => EventKind::SoftirqExit {
            vec: r.below(12) as u32,
        },
        5 => EventKind::VectorEntry { vector: vec(r) },
        6 => EventKind::VectorExit { vector: vec(r) },
        7 => EventKind::Nmi { delta_ns: small(r) },
        8 => EventKind::HrtimerEntry {
            timer: r.next(),
            function: r.next(),
            now_ns: r.next(),
        },
        9 => EventKind::HrtimerExit { timer: r.next() },
        10 => EventKind::Waking {
            pid: small(r) as u32,
            prio: r.next() as i32,
            target_cpu: r.below(8) as u32,
        },
        11 => EventKind::Wakeup {
            pid: small(r) as u32,
            prio: r.next() as i32,
            target_cpu: r.below(8) as u32,
        },
        12 => EventKind::Switch {
            prev_pid: small(r) as u32,
            prev_prio: r.next() as i32,
            prev_state: small(r),
            next_pid: small(r) as u32,
            next_prio: r.next() as i32,
        },
        13 => EventKind::Migrate {
            pid: small(r) as u32,
            orig_cpu: r.below(8) as u32,
            dest_cpu: r.below(8) as u32,
        },
        14 => EventKind::CpuIdle {
            state: if r.below(2) == 0 {
                u32::MAX
            } else {
                r.below(4) as u32
            },
        },
        15 => EventKind::PreemptDisable,
        16 => EventKind::PreemptEnable,
        17 => EventKind::IrqDisable,
        18 => EventKind::Background {
            len_ns: small(r),
            events: r.below(1000) as u32,
        },
        _ => EventKind::IrqEnable,
    }
}

fn random_file(r: &mut Rng) -> RttFile {
    let ncpu = 1 + r.below(3) as u32;
    let mut events = Vec::new();
    let mut ts = r.next() >> 4;
    for _ in 0..r.below(60) {
        ts = ts.wrapping_add(r.below(100_000));
        events.push(Event {
            ts_ns: ts,
            cpu: r.below(ncpu as u64) as u32,
            kind: random_kind(r),
        });
    }
    // The decoder merges per-CPU streams by (ts, cpu) and keeps per-CPU order: compare in that form.
    events.sort_by_key(|e| (e.ts_ns, e.cpu));
    let samples = (0..r.below(30))
        .map(|i| RawSample {
            cpu: r.below(ncpu as u64) as u32,
            tid: r.below(1 << 22) as u32,
            cycle: i,
            expected_ns: r.next() >> 2,
            latency_ns: r.below(10_000_000),
        })
        .collect();
    let mut names = NameTables::default();
    for _ in 0..r.below(4) {
        names
            .comms
            .insert(r.below(100) as u32, format!("t{}", r.below(1000)));
    }
    let flight = r.below(2) == 0;
    let mut windows = Vec::new();
    let mut samples: Vec<RawSample> = samples;
    for _ in 0..r.below(5) {
        let from_ns = r.next() >> 8;
        let to_ns = from_ns + r.below(1_000_000);
        let reasons = (0..r.below(3))
            .map(|_| format!("worst-of:irq:{}:eth{}", r.below(40), r.below(3)))
            .collect();
        windows.push(if r.below(3) == 0 {
            KeptWindowInfo {
                kind: KeptKind::Snapshot,
                cpu: None,
                from_ns,
                to_ns,
                sample: None,
                reasons,
            }
        } else {
            let s = RawSample {
                cpu: r.below(ncpu as u64) as u32,
                tid: r.below(1 << 22) as u32,
                cycle: 1_000 + r.below(1_000),
                expected_ns: from_ns + 10,
                latency_ns: r.below(1_000_000),
            };
            if flight {
                samples.push(s);
            }
            KeptWindowInfo {
                kind: KeptKind::Window,
                cpu: Some(s.cpu),
                from_ns,
                to_ns,
                sample: Some(s),
                reasons,
            }
        });
    }
    if flight {
        // What a reader makes of a flight file: events without exact duplicates, samples by
        // time without duplicates (cpu, tid, cycle).
        events.dedup();
        samples.sort_by_key(|s| (s.expected_ns, s.cpu, s.tid, s.cycle, s.latency_ns));
        samples.dedup_by_key(|s| (s.cpu, s.tid, s.cycle));
    }
    let meta = RttMeta {
        mechanism: "bpf".into(),
        cpus: (0..ncpu).collect(),
        start_ns: r.next(),
        file_mode: if flight { "flight" } else { "all" }.into(),
        windows_kept: windows.len() as u64,
        ..Default::default()
    };
    RttFile {
        meta,
        names,
        events,
        samples,
        windows,
        truncated_at: None,
    }
}

/// A file written by the streaming writer: random events and samples around now, snapshots
/// every 50 ms for 10 ms, random windows.
fn streamed_file(r: &mut Rng, dir: &std::path::Path, case: u64) -> Vec<u8> {
    let path = dir.join(format!("s{case}.rtt"));
    let mode = if r.below(3) == 0 {
        TraceFileMode::All
    } else {
        TraceFileMode::Flight {
            snapshot_every_ns: 50_000_000,
            snapshot_len_ns: 10_000_000,
        }
    };
    let ncpu = 1 + r.below(3) as u32;
    let cpus: Vec<u32> = (0..ncpu).collect();
    let mut w = RttWriter::create(&path, mode, &cpus).expect("create");
    let t0 = rtscope_trace::sys::monotonic_ns();
    let mut ts = t0;
    let mut cycle = 0u64;
    for _ in 0..1 + r.below(6) {
        let mut evs = Vec::new();
        for _ in 0..r.below(300) {
            ts += r.below(200_000);
            evs.push(Event {
                ts_ns: ts,
                cpu: r.below(ncpu as u64) as u32,
                kind: random_kind(r),
            });
        }
        w.on_events(&evs).expect("events");
        let sm: Vec<RawSample> = (0..r.below(40))
            .map(|_| {
                cycle += 1;
                RawSample {
                    cpu: r.below(ncpu as u64) as u32,
                    tid: 7,
                    cycle,
                    expected_ns: t0 + r.below(ts - t0 + 1),
                    latency_ns: r.below(100_000),
                }
            })
            .collect();
        w.on_samples(&sm).expect("samples");
        if let (Some(s), Some(e)) = (sm.first(), evs.first()) {
            let from = e.ts_ns.min(s.expected_ns);
            let to = from + r.below(3_000_000);
            w.keep_window(s, &["worst-n".into()], &evs, from, to)
                .expect("window");
        }
    }
    let meta = RttMeta {
        mechanism: "tracefs".into(),
        cpus,
        end_ns: ts,
        ..Default::default()
    };
    w.finish(meta, &NameTables::default()).expect("finish");
    let b = std::fs::read(&path).expect("read back");
    let _ = std::fs::remove_file(&path);
    b
}

/// Recompute every section checksum that still parses as a section chain.
fn repair_crcs(b: &mut [u8]) {
    let mut pos = 16usize;
    while pos + 12 <= b.len() {
        let mut lb = [0u8; 8];
        lb.copy_from_slice(&b[pos + 4..pos + 12]);
        let len = u64::from_le_bytes(lb);
        let body = pos + 12;
        if len > (b.len() - body) as u64 || (b.len() - body) as u64 - len < 4 {
            return;
        }
        let len = len as usize;
        let c = crc32(&b[body..body + len]);
        b[body + len..body + len + 4].copy_from_slice(&c.to_le_bytes());
        pos = body + len + 4;
    }
}

fn mutate(r: &mut Rng, b: &mut Vec<u8>) {
    for _ in 0..1 + r.below(4) {
        if b.is_empty() {
            b.push(r.next() as u8);
        }
        let at = r.below(b.len() as u64) as usize;
        match r.below(7) {
            0 => b[at] ^= 1 << r.below(8),
            1 => b[at] = r.next() as u8,
            2 => b.truncate(at),
            3 => b.insert(at, r.next() as u8),
            4 => {
                b.remove(at);
            }
            5 => {
                // Overwrite a would-be length field with something extreme.
                let v = match r.below(3) {
                    0 => u64::MAX,
                    1 => r.below(64),
                    _ => r.next(),
                };
                for (i, byte) in v.to_le_bytes().iter().enumerate() {
                    if let Some(x) = b.get_mut(at + i) {
                        *x = *byte;
                    }
                }
            }
            _ => {
                // A long varint run.
                for i in 0..r.below(12) as usize {
                    if let Some(x) = b.get_mut(at + i) {
                        *x = 0xff;
                    }
                }
            }
        }
    }
}

#[test]
fn fuzz_decoder() {
    let cases: u64 = std::env::var("RTSCOPE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let seed: u64 = std::env::var("RTSCOPE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_0001);
    let mut r = Rng(seed | 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut ok, mut corrupt) = (0u64, 0u64);
    for case in 0..cases {
        let good = if case % 25 == 0 {
            let b = streamed_file(&mut r, dir.path(), case);
            let f = decode(&b).expect("a streamed file decodes");
            assert_eq!(f.truncated_at, None, "case {case}");
            b
        } else {
            let f = random_file(&mut r);
            // Both event encodings: compressed (EVTZ, what rtscope writes) and plain (EVTS).
            let good = encode_with(&f, case % 2 == 0);
            if case % 8 == 0 {
                assert_eq!(
                    decode(&good).expect("valid file decodes"),
                    f,
                    "round trip, case {case}"
                );
            }
            good
        };
        // A valid version-3 file cut after its first section reads as truncated.
        let first_end = 16 + 12 + u64::from_le_bytes(good[20..28].try_into().unwrap()) as usize + 4;
        if good.len() > first_end {
            let cut = first_end + r.below((good.len() - first_end) as u64) as usize;
            match decode(&good[..cut]) {
                Ok(t) => assert!(
                    t.truncated_at.is_some_and(|at| at as usize <= cut),
                    "case {case}: cut at {cut}, read as {:?}",
                    t.truncated_at
                ),
                Err(e) => panic!("case {case}: cut at {cut} of {}: {e}", good.len()),
            }
        }
        let mut b = good.clone();
        mutate(&mut r, &mut b);
        if r.below(2) == 0 {
            repair_crcs(&mut b);
        }
        match decode(&b) {
            Ok(_) => ok += 1,
            Err(RttError::Corrupt { offset, .. }) => {
                assert!(
                    offset as usize <= b.len(),
                    "case {case}: offset {offset} beyond {} bytes",
                    b.len()
                );
                corrupt += 1;
            }
            Err(e) => panic!("case {case}: unexpected error kind {e}"),
        }
    }
    println!("fuzz: {cases} cases (seed {seed:#x}): {ok} mutants still decoded, {corrupt} rejected with an offset");
    assert_eq!(ok + corrupt, cases);
    assert!(corrupt > cases / 4, "mutations should mostly be caught");
}
