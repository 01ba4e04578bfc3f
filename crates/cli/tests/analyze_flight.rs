//! `rtscope analyze` on flight-recorder files (no root needed): a small file generated with the
//! trace crate's streaming writer — 1 000 samples of one thread on CPU 0, every sample's events
//! (the thread sleeps, CPU 0 idles, the timer interrupt wakes it, it is switched in), a 200 ms
//! snapshot and three kept windows (two of them overlapping) — then the same file cut short.
//! The text and the JSON must say what the file holds and what it does not.

use rtscope_model::event::{Event, EventKind, NameTables, Vector};
use rtscope_model::record::RawSample;
use rtscope_testkit::bin;
use rtscope_trace::flight::{RttWriter, TraceFileMode};
use rtscope_trace::RttMeta;
use std::path::Path;
use std::process::Command;

const MS: u64 = 1_000_000;
const TID: u32 = 4242;

/// One sample's events on CPU 0: the thread sleeps and CPU 0 idles before E; the local timer
/// fires a quarter of the latency after E and wakes the thread, which is switched in just
/// before E + latency.
fn episode(e: u64, lat: u64) -> Vec<Event> {
    let ev = |ts, kind| Event {
        ts_ns: ts,
        cpu: 0,
        kind,
    };
    vec![
        ev(
            e - 500_000,
            EventKind::Switch {
                prev_pid: TID,
                prev_prio: 9,
                prev_state: 1,
                next_pid: 0,
                next_prio: 120,
            },
        ),
        ev(e - 400_000, EventKind::CpuIdle { state: 1 }),
        ev(
            e + lat / 4,
            EventKind::VectorEntry {
                vector: Vector::LocalTimer,
            },
        ),
        ev(
            e + lat / 4 + 500,
            EventKind::Waking {
                pid: TID,
                prio: 9,
                target_cpu: 0,
            },
        ),
        ev(
            e + lat / 4 + 1_000,
            EventKind::VectorExit {
                vector: Vector::LocalTimer,
            },
        ),
        ev(e + lat / 2, EventKind::CpuIdle { state: u32::MAX }),
        ev(
            e + lat - 200,
            EventKind::Switch {
                prev_pid: 0,
                prev_prio: 120,
                prev_state: 0,
                next_pid: TID,
                next_prio: 9,
            },
        ),
    ]
}

/// Writes the file; returns the samples of the run.
fn write_flight_file(path: &Path) -> Vec<RawSample> {
    let mode = TraceFileMode::Flight {
        snapshot_every_ns: 10_000 * MS,
        snapshot_len_ns: 200 * MS,
    };
    let mut w = RttWriter::create(path, mode, &[0]).expect("create");
    // Snapshot 0 starts when the writer was created, just before t0.
    let t0 = rtscope_trace::sys::monotonic_ns();
    let samples: Vec<RawSample> = (0..1000u64)
        .map(|i| RawSample {
            cpu: 0,
            tid: TID,
            cycle: i,
            expected_ns: t0 + (i + 1) * MS,
            latency_ns: 8_000 + (i % 10) * 1_000 + if i == 500 { 90_000 } else { 0 },
        })
        .collect();
    for chunk in samples.chunks(100) {
        let events: Vec<Event> = chunk
            .iter()
            .flat_map(|s| episode(s.expected_ns, s.latency_ns))
            .collect();
        w.on_events(&events).expect("events");
        w.on_samples(chunk).expect("samples");
    }
    // Windows: from E − 1 ms to E + latency.
    let keep = |w: &mut RttWriter, s: &RawSample, reason: &str| {
        let events = episode(s.expected_ns, s.latency_ns);
        w.keep_window(
            s,
            &[reason.to_string()],
            &events,
            s.expected_ns - MS,
            s.expected_ns + s.latency_ns,
        )
        .expect("window");
    };
    keep(&mut w, &samples[500], "worst-n");
    keep(&mut w, &samples[700], "worst-of:irq:10:eth0");
    keep(&mut w, &samples[701], "worst-n");
    let mut names = NameTables::default();
    names.comms.insert(TID, "rtscope-m0".into());
    let meta = RttMeta {
        mechanism: "bpf".into(),
        cpus: vec![0],
        start_ns: t0,
        end_ns: t0 + 1_001 * MS,
        keep: "relevant".into(),
        ..Default::default()
    };
    w.finish(meta, &names).expect("finish");
    samples
}

fn analyze(path: &Path, json: bool) -> (bool, String, String) {
    let mut c = Command::new(bin!());
    c.arg("analyze").arg(path);
    if json {
        c.arg("--json");
    }
    let out = c.output().expect("run rtscope analyze");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn analyze_says_what_a_flight_file_holds() {
    let d = tempfile::tempdir().expect("tempdir");
    let path = d.path().join("flight.rtt");
    write_flight_file(&path);
    let (ok, text, err) = analyze(&path, false);
    assert!(ok, "{err}");
    assert!(
        text.contains("flight recorder: 3 windows (2 worst-n, 1 worst-of-cause) and 1 snapshot of 200 ms; 1 000 samples in the run,"),
        "{text}"
    );
    assert!(
        text.contains("events outside these windows and snapshots were not recorded (use --trace-file-mode all to keep everything)"),
        "{text}"
    );
    // The worst kept sample is shown with its timeline.
    assert!(
        text.contains("#1 cpu0 tid 4242 (rtscope-m0) cycle 500"),
        "{text}"
    );
    assert!(!text.contains("truncated"), "{text}");

    let (ok, out, err) = analyze(&path, true);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["file_mode"], "flight");
    assert!(v["truncated_at_byte"].is_null());
    let fl = &v["flight"];
    assert_eq!(fl["windows"], 3);
    assert_eq!(fl["windows_by_reason"]["worst-n"], 2);
    assert_eq!(fl["windows_by_reason"]["worst-of-cause"], 1);
    assert_eq!(fl["snapshots"], 1);
    assert_eq!(fl["snapshot_len_ns"], 200 * MS);
    assert_eq!(fl["samples_in_run"], 1000);
    // ~199 samples in the 200 ms snapshot, plus the three windows' samples.
    let kept = fl["samples_kept"].as_u64().expect("samples_kept");
    assert!((190..=205).contains(&kept), "{kept} kept");
    assert_eq!(v["samples"], kept);
    let attributed = fl["samples_attributed"].as_u64().expect("attributed");
    let not = fl["samples_not_attributable"].as_u64().expect("not");
    assert_eq!(attributed + not, kept);
    // At most the sample at the snapshot's end has its window cut by it.
    assert!(not <= 1, "{not} not attributable");
    assert_eq!(
        v["attribution"]["summary"]["samples_attributed"]
            .as_u64()
            .expect("summary")
            + v["attribution"]["summary"]["samples_unattributed"]
                .as_u64()
                .expect("summary"),
        attributed
    );
    assert_eq!(v["attribution"]["worst"][0]["cycle"], 500);
    assert_eq!(fl["kept"].as_array().map(Vec::len), Some(4));
}

#[test]
fn analyze_reads_a_cut_flight_file_up_to_the_cut() {
    let d = tempfile::tempdir().expect("tempdir");
    let path = d.path().join("flight.rtt");
    write_flight_file(&path);
    let bytes = std::fs::read(&path).expect("read");
    // Cut inside the final metadata: every window and snapshot is there, the provisional
    // metadata from the file's creation stands in.
    let last_meta = bytes
        .windows(4)
        .rposition(|w| w == b"META")
        .expect("final META");
    let cut = d.path().join("cut.rtt");
    std::fs::write(&cut, &bytes[..last_meta + 30]).expect("write");
    let (ok, text, err) = analyze(&cut, false);
    assert!(ok, "{err}");
    assert!(
        text.contains(&format!("truncated at byte {last_meta}")),
        "{text}"
    );
    assert!(text.contains("final metadata"), "{text}");
    assert!(
        text.contains("flight recorder: 3 windows (2 worst-n, 1 worst-of-cause) and 1 snapshot"),
        "{text}"
    );
    let (ok, out, err) = analyze(&cut, true);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(v["truncated_at_byte"].as_u64().is_some());
    assert_eq!(v["flight"]["windows"], 3);
}
