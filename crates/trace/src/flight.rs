//! The `.rtt` file written as the run goes (format version 3, docs/trace-format.md), so a run of
//! any length needs bounded memory and, by default, a file of megabytes: the flight recorder.
//!
//! * [`TraceFileMode::All`]: every event and sample, in compressed chunks of
//!   [`CHUNK_EVENTS`](crate::rtt::CHUNK_EVENTS) per CPU — memory is one chunk per CPU.
//! * [`TraceFileMode::Flight`] (the default): only what explains the run — the windows the
//!   caller keeps ([`RttWriter::keep_window`]: an explained sample, why it was kept, its CPU's
//!   events from its look-back to its end) and periodic snapshots of every CPU (all events and
//!   samples of `snapshot_len_ns` every `snapshot_every_ns`, counted from the file's creation,
//!   the first one at once), which show what the machine did when nothing stood out.
//!
//! Snapshot stretches are fixed in advance ([k·every, k·every + len) after creation), so an event
//! or sample is classified by its time alone, whenever it arrives: no ring buffer, and an event
//! delivered late still lands in its snapshot. A window's events inside a snapshot stretch are
//! left to the snapshot, and a stretch of a CPU already written by an earlier window is not
//! written again, so overlapping windows cost nothing twice (a remote waking that belongs to a
//! window of another CPU may still be written twice: the reader drops exact duplicates).
//! What grows with the run is only what is in the file: the windows' stretches per CPU and the
//! keys of the samples kept (flight mode), to deduplicate.
//!
//! The file is written under an unpredictable name beside its final path (created with
//! `O_EXCL`, so nothing already there — a link planted in a shared directory — is followed or
//! reused) and renamed into place by [`RttWriter::finish`]; an error or a drop without `finish`
//! removes it. A crash leaves it as `<name>.<16 hex digits>.partial`: a valid truncated file
//! (`rtscope analyze` reads everything written before the cut). META comes first, provisional
//! (what is known at creation), and again at the end, final (loss counts, names and counts are
//! known only then); the reader takes the last one.

use crate::rtt::{
    evts_payload, header, push_events, push_section, smpl_payload, wind_payload, KeptKind,
    KeptWindowInfo, RttError, RttMeta, CHUNK_EVENTS,
};
use rtscope_model::event::{Event, NameTables};
use rtscope_model::record::RawSample;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::Path;

/// Default period of the flight recorder's snapshots: 10 minutes.
pub const DEFAULT_SNAPSHOT_EVERY_NS: u64 = 600_000_000_000;
/// Default length of a snapshot: 1 s.
pub const DEFAULT_SNAPSHOT_LEN_NS: u64 = 1_000_000_000;

/// What the trace file keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFileMode {
    /// Every event and every sample.
    All,
    /// Kept windows, plus every event and sample of `snapshot_len_ns` every `snapshot_every_ns`
    /// (`snapshot_len_ns` 0: no snapshots).
    Flight {
        snapshot_every_ns: u64,
        snapshot_len_ns: u64,
    },
}

impl Default for TraceFileMode {
    fn default() -> Self {
        TraceFileMode::Flight {
            snapshot_every_ns: DEFAULT_SNAPSHOT_EVERY_NS,
            snapshot_len_ns: DEFAULT_SNAPSHOT_LEN_NS,
        }
    }
}

impl TraceFileMode {
    /// "all" or "flight" (META `file_mode`).
    pub fn name(&self) -> &'static str {
        match self {
            TraceFileMode::All => "all",
            TraceFileMode::Flight { .. } => "flight",
        }
    }

    fn validate(&self) -> Result<(), RttError> {
        if let TraceFileMode::Flight {
            snapshot_every_ns,
            snapshot_len_ns,
        } = *self
        {
            if snapshot_len_ns > 0 && !(1..=snapshot_every_ns).contains(&snapshot_len_ns) {
                return Err(RttError::Invalid(format!(
                    "snapshot length {snapshot_len_ns} ns must be at most the snapshot period {snapshot_every_ns} ns"
                )));
            }
        }
        Ok(())
    }
}

/// A trace being written under an unpredictable `<name>.<hex>.partial` name beside its final
/// path (rtscope_files: exclusive, no link followed, removed when abandoned, renamed when done).
pub(crate) struct PartFile(rtscope_files::AtomicFile);

impl PartFile {
    pub(crate) fn create(path: &Path) -> Result<Self, RttError> {
        rtscope_files::AtomicFile::create_styled(
            path,
            rtscope_files::PRIVATE_FILE,
            rtscope_files::TempStyle::Partial,
        )
        .map(PartFile)
        .map_err(|e| RttError::Io {
            path: path.display().to_string(),
            source: e,
        })
    }

    pub(crate) fn write_all(&mut self, b: &[u8]) -> Result<(), RttError> {
        self.0.write_all(b).map_err(|e| RttError::Io {
            path: self.0.temp_path().display().to_string(),
            source: e,
        })
    }

    /// Flush to disk and rename into place (atomic on one file system).
    pub(crate) fn persist(self) -> Result<(), RttError> {
        let path = self.0.target().display().to_string();
        self.0
            .persist()
            .map(|_| ())
            .map_err(|e| RttError::Io { path, source: e })
    }
}

/// Writes one `.rtt` file as the run goes (module docs).
pub struct RttWriter {
    out: Option<PartFile>,
    mode: TraceFileMode,
    /// Snapshots are counted from here (CLOCK_MONOTONIC ns at creation).
    origin_ns: u64,
    bytes: u64,
    /// Events waiting for their chunk, per CPU (all: every event; flight: snapshot stretches).
    ev_buf: BTreeMap<u32, Vec<Event>>,
    smpl_buf: Vec<RawSample>,
    samples_seen: u64,
    samples_written: u64,
    windows: u64,
    snapshots: u64,
    /// Flight: the first snapshot whose WIND record is not written yet.
    next_snapshot: u64,
    /// Flight: the latest event or sample time seen.
    seen_ns: u64,
    /// Flight: per CPU, the stretches [from, to) windows have written, sorted and merged.
    covered: BTreeMap<u32, Vec<(u64, u64)>>,
    /// Flight: (cpu, tid, cycle) of every sample written.
    kept_samples: HashSet<(u32, u32, u64)>,
}

impl RttWriter {
    /// Create the file (under a temporary name until `finish`) and write its header and a
    /// provisional META (`cpus`, the mode, this machine): a truncated file still says what it is.
    pub fn create(path: &Path, mode: TraceFileMode, cpus: &[u32]) -> Result<Self, RttError> {
        mode.validate()?;
        let origin_ns = crate::sys::monotonic_ns();
        let mut w = RttWriter {
            out: Some(PartFile::create(path)?),
            mode,
            origin_ns,
            bytes: 0,
            ev_buf: BTreeMap::new(),
            smpl_buf: Vec::new(),
            samples_seen: 0,
            samples_written: 0,
            windows: 0,
            snapshots: 0,
            next_snapshot: 0,
            seen_ns: 0,
            covered: BTreeMap::new(),
            kept_samples: HashSet::new(),
        };
        let (every, len) = w.snapshot_params();
        let meta = RttMeta {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            cpus: cpus.to_vec(),
            start_ns: origin_ns,
            kernel: crate::sys::kernel_release(),
            hostname: crate::sys::hostname(),
            notes: vec![
                "provisional metadata written when the file was created: the run did not finish writing it (no final metadata: loss counts, names and the capture's mechanism are unknown)".into(),
            ],
            file_mode: mode.name().into(),
            snapshot_every_ns: every,
            snapshot_len_ns: len,
            ..Default::default()
        };
        let mut b = header().to_vec();
        // serde_json of plain structs with string keys cannot fail.
        push_section(
            &mut b,
            b"META",
            &serde_json::to_vec(&meta).unwrap_or_default(),
        );
        w.write(&b)?;
        Ok(w)
    }

    /// Bytes written to the file so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// Events of the run (per CPU in time order, as `TraceSession::poll` delivers them). All
    /// mode: every event is written (a compressed chunk per [`CHUNK_EVENTS`] of a CPU). Flight
    /// mode: only events inside snapshot stretches.
    pub fn on_events(&mut self, events: &[Event]) -> Result<(), RttError> {
        let flight = self.is_flight();
        let limit = self.time_limit();
        for e in events {
            if flight {
                if e.ts_ns <= limit {
                    self.seen_ns = self.seen_ns.max(e.ts_ns);
                }
                if !self.in_snapshot(e.ts_ns) {
                    continue;
                }
            }
            let buf = self.ev_buf.entry(e.cpu).or_default();
            buf.push(*e);
            if buf.len() >= CHUNK_EVENTS {
                self.flush_cpu(e.cpu)?;
            }
        }
        if flight {
            self.close_snapshots(self.seen_ns)?;
        }
        Ok(())
    }

    /// Samples of the run. All mode: every sample. Flight mode: samples inside snapshot
    /// stretches (by their planned wake-up); a kept window's sample comes with the window.
    pub fn on_samples(&mut self, samples: &[RawSample]) -> Result<(), RttError> {
        self.samples_seen += samples.len() as u64;
        let flight = self.is_flight();
        let limit = self.time_limit();
        for s in samples {
            if flight {
                if s.expected_ns <= limit {
                    self.seen_ns = self.seen_ns.max(s.expected_ns);
                }
                if !self.in_snapshot(s.expected_ns)
                    || !self.kept_samples.insert((s.cpu, s.tid, s.cycle))
                {
                    continue;
                }
            }
            self.smpl_buf.push(*s);
            if self.smpl_buf.len() >= CHUNK_EVENTS {
                self.flush_samples()?;
            }
        }
        if flight {
            self.close_snapshots(self.seen_ns)?;
        }
        Ok(())
    }

    /// Keep one window: `sample`, why (`reasons`, e.g. "worst-n", "worst-of:irq:10:eth0"), and
    /// its CPU's events with `from_ns <= ts_ns <= to_ns` (`events` may hold more; remote wakings
    /// of its tasks carry the waking CPU's number and are kept too). Flight mode writes the
    /// events no snapshot or earlier window of that CPU already wrote; all mode has written them
    /// and records only the window.
    pub fn keep_window(
        &mut self,
        sample: &RawSample,
        reasons: &[String],
        events: &[Event],
        from_ns: u64,
        to_ns: u64,
    ) -> Result<(), RttError> {
        if to_ns < from_ns {
            return Err(RttError::Invalid(format!(
                "window ends ({to_ns}) before it starts ({from_ns})"
            )));
        }
        let cpu = sample.cpu;
        if self.is_flight() {
            let hi = to_ns.saturating_add(1);
            let mut by_cpu: BTreeMap<u32, Vec<Event>> = BTreeMap::new();
            for e in events {
                if e.ts_ns < from_ns
                    || e.ts_ns >= hi
                    || self.in_snapshot(e.ts_ns)
                    || self.is_covered(e.cpu, e.ts_ns)
                {
                    continue;
                }
                by_cpu.entry(e.cpu).or_default().push(*e);
            }
            let mut b = Vec::new();
            for (c, mut evs) in by_cpu {
                evs.sort_by_key(|e| e.ts_ns);
                let p = evts_payload(c, evs.len(), evs.iter());
                push_events(&mut b, &p, true);
            }
            self.cover(cpu, from_ns, hi);
            if self
                .kept_samples
                .insert((sample.cpu, sample.tid, sample.cycle))
            {
                self.samples_written += 1;
            }
            self.write(&b)?;
        }
        self.windows += 1;
        let w = KeptWindowInfo {
            kind: KeptKind::Window,
            cpu: Some(cpu),
            from_ns,
            to_ns,
            sample: Some(*sample),
            reasons: reasons.to_vec(),
        };
        let mut b = Vec::new();
        push_section(&mut b, b"WIND", &wind_payload(&w));
        self.write(&b)
    }

    /// Write what is buffered, the final META (with the file mode and what was kept: windows,
    /// snapshots, samples in the run and kept — the writer's counts unless `meta` says more
    /// samples were measured), the names and END; then rename the file into place. Returns the
    /// file's size.
    pub fn finish(mut self, mut meta: RttMeta, names: &NameTables) -> Result<u64, RttError> {
        if self.is_flight() {
            let end = self.seen_ns.max(meta.end_ns.min(self.time_limit()));
            self.close_snapshots(end)?;
            // The snapshot the run ended in.
            let (every, len) = self.snapshot_params();
            let s = self.origin_ns + self.next_snapshot.saturating_mul(every);
            if len > 0 && s <= end {
                self.flush_all()?;
                self.write_snapshot(s, end)?;
            }
        }
        self.flush_all()?;
        let (every, len) = self.snapshot_params();
        meta.file_mode = self.mode.name().into();
        meta.windows_kept = self.windows;
        meta.snapshots_kept = self.snapshots;
        meta.snapshot_every_ns = every;
        meta.snapshot_len_ns = len;
        meta.samples_in_run = meta.samples_in_run.max(self.samples_seen);
        meta.samples_kept = if self.is_flight() {
            self.kept_samples.len() as u64
        } else {
            self.samples_written
        };
        let mut b = Vec::new();
        push_section(
            &mut b,
            b"META",
            &serde_json::to_vec(&meta).unwrap_or_default(),
        );
        push_section(
            &mut b,
            b"NAME",
            &serde_json::to_vec(names).unwrap_or_default(),
        );
        push_section(&mut b, b"END\0", &[]);
        self.write(&b)?;
        match self.out.take() {
            Some(f) => f.persist()?,
            None => return Err(closed()),
        }
        Ok(self.bytes)
    }

    // ---------- internals ----------

    fn is_flight(&self) -> bool {
        matches!(self.mode, TraceFileMode::Flight { .. })
    }

    /// (every, len) of the snapshots; (0, 0) without.
    fn snapshot_params(&self) -> (u64, u64) {
        match self.mode {
            TraceFileMode::Flight {
                snapshot_every_ns,
                snapshot_len_ns,
            } if snapshot_len_ns > 0 => (snapshot_every_ns, snapshot_len_ns),
            _ => (0, 0),
        }
    }

    /// Times beyond this are not trusted to advance the snapshots (a clock far in the future
    /// would otherwise close every snapshot up to it).
    fn time_limit(&self) -> u64 {
        crate::sys::monotonic_ns().saturating_add(60_000_000_000)
    }

    fn in_snapshot(&self, ts: u64) -> bool {
        let (every, len) = self.snapshot_params();
        len > 0 && ts >= self.origin_ns && (ts - self.origin_ns) % every < len
    }

    fn is_covered(&self, cpu: u32, ts: u64) -> bool {
        self.covered.get(&cpu).is_some_and(|v| {
            let i = v.partition_point(|&(a, _)| a <= ts);
            i > 0 && ts < v[i - 1].1
        })
    }

    /// Add [lo, hi) to the CPU's written stretches, merging overlaps.
    fn cover(&mut self, cpu: u32, lo: u64, hi: u64) {
        let v = self.covered.entry(cpu).or_default();
        let i = v.partition_point(|&(_, b)| b < lo);
        let mut j = i;
        let (mut a, mut b) = (lo, hi);
        while j < v.len() && v[j].0 <= hi {
            a = a.min(v[j].0);
            b = b.max(v[j].1);
            j += 1;
        }
        v.splice(i..j, [(a, b)]);
    }

    /// Write the WIND record of every snapshot that ended by `now`, after the events and samples
    /// buffered so far (its own, and any that came late).
    fn close_snapshots(&mut self, now: u64) -> Result<(), RttError> {
        let (every, len) = self.snapshot_params();
        if len == 0 {
            return Ok(());
        }
        loop {
            let s = self.origin_ns + self.next_snapshot.saturating_mul(every);
            if s.saturating_add(len) > now {
                return Ok(());
            }
            self.flush_all()?;
            self.write_snapshot(s, s + len - 1)?;
        }
    }

    fn write_snapshot(&mut self, from_ns: u64, to_ns: u64) -> Result<(), RttError> {
        let w = KeptWindowInfo {
            kind: KeptKind::Snapshot,
            cpu: None,
            from_ns,
            to_ns,
            sample: None,
            reasons: vec!["snapshot".into()],
        };
        let mut b = Vec::new();
        push_section(&mut b, b"WIND", &wind_payload(&w));
        self.write(&b)?;
        self.snapshots += 1;
        self.next_snapshot += 1;
        Ok(())
    }

    fn flush_cpu(&mut self, cpu: u32) -> Result<(), RttError> {
        let Some(evs) = self.ev_buf.get_mut(&cpu) else {
            return Ok(());
        };
        if evs.is_empty() {
            return Ok(());
        }
        let p = evts_payload(cpu, evs.len(), evs.iter());
        evs.clear();
        let mut b = Vec::new();
        push_events(&mut b, &p, true);
        self.write(&b)
    }

    fn flush_samples(&mut self) -> Result<(), RttError> {
        if self.smpl_buf.is_empty() {
            return Ok(());
        }
        let mut b = Vec::new();
        push_section(&mut b, b"SMPL", &smpl_payload(&self.smpl_buf));
        self.samples_written += self.smpl_buf.len() as u64;
        self.smpl_buf.clear();
        self.write(&b)
    }

    fn flush_all(&mut self) -> Result<(), RttError> {
        let cpus: Vec<u32> = self.ev_buf.keys().copied().collect();
        for c in cpus {
            self.flush_cpu(c)?;
        }
        self.flush_samples()
    }

    /// Write one or more whole sections; on failure the file is removed and the writer closed.
    fn write(&mut self, b: &[u8]) -> Result<(), RttError> {
        let Some(f) = self.out.as_mut() else {
            return Err(closed());
        };
        match f.write_all(b) {
            Ok(()) => {
                self.bytes += b.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.out = None; // removes the temporary file
                Err(e)
            }
        }
    }
}

fn closed() -> RttError {
    RttError::Invalid("the trace file was closed after an earlier write error".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtt::{decode, read_rtt};
    use rtscope_model::event::{EventKind, Vector};
    use std::path::PathBuf;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    fn tick(ts: u64, cpu: u32) -> Event {
        Event {
            ts_ns: ts,
            cpu,
            kind: EventKind::VectorEntry {
                vector: Vector::LocalTimer,
            },
        }
    }

    fn sample(cpu: u32, cycle: u64, expected_ns: u64) -> RawSample {
        RawSample {
            cpu,
            tid: 100 + cpu,
            cycle,
            expected_ns,
            latency_ns: 5_000 + cycle % 7,
        }
    }

    /// Only the final file is left in the directory.
    fn only_file(dir: &Path, name: &str) {
        let names: Vec<String> = std::fs::read_dir(dir)
            .expect("dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![name.to_string()]);
    }

    fn final_meta() -> RttMeta {
        RttMeta {
            mechanism: "bpf".into(),
            cpus: vec![0, 1],
            keep: "relevant".into(),
            ..Default::default()
        }
    }

    #[test]
    fn all_mode_round_trip_in_chunks() {
        let d = tempfile::tempdir().expect("tempdir");
        let path = d.path().join("run.rtt");
        std::fs::write(&path, b"an older file").expect("older file");
        let mut w = RttWriter::create(&path, TraceFileMode::All, &[0, 1]).expect("create");
        let t0 = w.origin_ns;
        // 150 000 events over two CPUs (more than two chunks on CPU 0), in polls of 1000.
        let events: Vec<Event> = (0..150_000u64)
            .map(|i| tick(t0 + i * 1_000, (i % 3 == 0) as u32))
            .collect();
        let samples: Vec<RawSample> = (0..70_000u64)
            .map(|i| sample(0, i, t0 + i * 2_000))
            .collect();
        for (ev, sm) in events.chunks(1000).zip(samples.chunks(467)) {
            w.on_events(ev).expect("events");
            w.on_samples(sm).expect("samples");
        }
        let reasons = vec!["worst-n".to_string()];
        w.keep_window(&samples[10], &reasons, &events[..50], t0, t0 + 40_000)
            .expect("window");
        assert!(w.bytes_written() > 16);
        let names = NameTables::default();
        let size = w.finish(final_meta(), &names).expect("finish");
        only_file(d.path(), "run.rtt");
        assert_eq!(std::fs::metadata(&path).expect("file").len(), size);
        let f = read_rtt(&path).expect("reads");
        assert_eq!(f.truncated_at, None);
        assert_eq!(f.events, events);
        assert_eq!(f.samples, samples);
        assert_eq!(f.meta.file_mode, "all");
        assert_eq!(
            (f.meta.samples_in_run, f.meta.samples_kept),
            (70_000, 70_000)
        );
        assert_eq!((f.meta.windows_kept, f.meta.snapshots_kept), (1, 0));
        assert_eq!(f.meta.keep, "relevant");
        assert_eq!(f.windows.len(), 1);
        assert_eq!(f.windows[0].reasons, reasons);
        assert_eq!(f.windows[0].sample, Some(samples[10]));
    }

    /// 45 s on two CPUs, 1 event per ms per CPU, snapshots of 1 s every 10 s, three windows on
    /// CPU 0 (two overlapping, one reaching into a snapshot) with a remote waking from CPU 1:
    /// the file holds exactly the snapshots' and the windows' events and samples, once each.
    #[test]
    fn flight_mode_keeps_windows_and_snapshots_once() {
        let d = tempfile::tempdir().expect("tempdir");
        let path = d.path().join("flight.rtt");
        let mode = TraceFileMode::Flight {
            snapshot_every_ns: 10 * S,
            snapshot_len_ns: S,
        };
        let mut w = RttWriter::create(&path, mode, &[0, 1]).expect("create");
        let t0 = w.origin_ns;
        let mut events = Vec::new();
        for i in 0..45_000u64 {
            events.push(tick(t0 + i * MS + 17, 0));
            events.push(tick(t0 + i * MS + 500_000, 1));
        }
        let waking = Event {
            ts_ns: t0 + 12 * S + 3 * MS + 1,
            cpu: 1,
            kind: EventKind::Waking {
                pid: 100,
                prio: 9,
                target_cpu: 0,
            },
        };
        let samples: Vec<RawSample> = (0..45_000u64).map(|i| sample(0, i, t0 + i * MS)).collect();
        // Windows: [12.000, 12.004] s and [12.002, 12.006] s on CPU 0 (overlap), with the
        // remote waking; [20.9995, 21.002] s reaching into the snapshot [20, 21) s.
        let wins = [
            (samples[12_004], t0 + 12 * S, t0 + 12 * S + 4 * MS),
            (samples[12_006], t0 + 12 * S + 2 * MS, t0 + 12 * S + 6 * MS),
            (samples[21_002], t0 + 21 * S - 500_000, t0 + 21 * S + 2 * MS),
        ];
        let mut kept_windows = 0;
        for (k, chunk) in events.chunks(2_000).enumerate() {
            w.on_events(chunk).expect("events");
            w.on_samples(&samples[k * 1000..(k + 1) * 1000])
                .expect("samples");
            // Windows are kept after their events arrived (the stream explains late).
            while kept_windows < wins.len() && wins[kept_windows].2 < chunk[chunk.len() - 1].ts_ns {
                let (s, from, to) = wins[kept_windows];
                let mut evs: Vec<Event> = events
                    .iter()
                    .filter(|e| e.cpu == 0 && e.ts_ns >= from && e.ts_ns <= to)
                    .copied()
                    .collect();
                if kept_windows == 0 {
                    evs.push(waking);
                }
                w.keep_window(&s, &["worst-n".into()], &evs, from, to)
                    .expect("window");
                kept_windows += 1;
            }
        }
        assert_eq!(kept_windows, 3);
        let mut meta = final_meta();
        meta.end_ns = t0 + 45 * S;
        let size = w.finish(meta, &NameTables::default()).expect("finish");
        only_file(d.path(), "flight.rtt");
        let f = read_rtt(&path).expect("reads");
        // What should be there.
        let in_snap = |ts: u64| (ts - t0) % (10 * S) < S;
        let in_win = |e: &Event| {
            e.cpu == 0
                && wins
                    .iter()
                    .any(|&(_, from, to)| e.ts_ns >= from && e.ts_ns <= to)
        };
        let mut want: Vec<Event> = events
            .iter()
            .filter(|e| in_snap(e.ts_ns) || in_win(e))
            .copied()
            .collect();
        want.push(waking);
        want.sort_by_key(|e| (e.ts_ns, e.cpu));
        assert_eq!(f.events.len(), want.len());
        assert_eq!(f.events, want);
        let mut want_s: Vec<RawSample> = samples
            .iter()
            .filter(|s| in_snap(s.expected_ns))
            .copied()
            .collect();
        want_s.extend(wins.iter().map(|w| w.0));
        want_s.sort_by_key(|s| s.expected_ns);
        assert_eq!(f.samples, want_s);
        assert_eq!(f.meta.file_mode, "flight");
        assert_eq!(f.meta.windows_kept, 3);
        // Snapshots at 0, 10, 20, 30, 40 s.
        assert_eq!(f.meta.snapshots_kept, 5);
        assert_eq!(
            (f.meta.snapshot_every_ns, f.meta.snapshot_len_ns),
            (10 * S, S)
        );
        assert_eq!(f.meta.samples_in_run, 45_000);
        assert_eq!(f.meta.samples_kept, want_s.len() as u64);
        let snaps: Vec<(u64, u64)> = f
            .windows
            .iter()
            .filter(|w| w.kind == KeptKind::Snapshot)
            .map(|w| (w.from_ns - t0, w.to_ns - t0))
            .collect();
        assert_eq!(
            snaps,
            (0..5)
                .map(|k| (k * 10 * S, k * 10 * S + S - 1))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            f.windows
                .iter()
                .filter(|w| w.kind == KeptKind::Window)
                .count(),
            3
        );
        // Far smaller than all of it.
        let all = crate::rtt::encode(&crate::rtt::RttFile {
            events: events.clone(),
            samples: samples.clone(),
            ..Default::default()
        });
        assert!(size * 3 < all.len() as u64, "{size} vs {}", all.len());
    }

    /// What a crash leaves: the partial file reads up to its last complete section and says it
    /// was cut; the writer removes it when dropped without `finish`.
    #[test]
    fn crash_leaves_a_readable_partial_file() {
        let d = tempfile::tempdir().expect("tempdir");
        let path = d.path().join("t.rtt");
        let mut w = RttWriter::create(&path, TraceFileMode::All, &[0]).expect("create");
        let t0 = w.origin_ns;
        let events: Vec<Event> = (0..(CHUNK_EVENTS as u64 * 2 + 10))
            .map(|i| tick(t0 + i * 100, 0))
            .collect();
        w.on_events(&events).expect("events");
        let partial: Vec<PathBuf> = std::fs::read_dir(d.path())
            .expect("dir")
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(partial.len(), 1);
        let name = partial[0]
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let hex = name
            .strip_prefix("t.rtt.")
            .and_then(|r| r.strip_suffix(".partial"))
            .expect("<name>.<hex>.partial");
        assert!(
            hex.len() == 16 && hex.chars().all(|c| c.is_ascii_hexdigit()),
            "{name}"
        );
        let bytes = std::fs::read(&partial[0]).expect("partial");
        let f = decode(&bytes).expect("a partial file reads");
        assert_eq!(f.truncated_at, Some(bytes.len() as u64));
        // Two full chunks written; the last 10 events still buffered.
        assert_eq!(f.events, events[..2 * CHUNK_EVENTS].to_vec());
        assert!(f.meta.notes[0].contains("provisional"));
        assert_eq!(f.meta.cpus, vec![0]);
        // Cut inside the second chunk: the first one is still there.
        let g = decode(&bytes[..bytes.len() - 100]).expect("cut");
        assert_eq!(g.events, events[..CHUNK_EVENTS].to_vec());
        assert!(g.truncated_at.expect("cut") < bytes.len() as u64 - 100);
        drop(w);
        assert_eq!(std::fs::read_dir(d.path()).expect("dir").count(), 0);
        assert!(!path.exists());
    }

    #[test]
    fn bad_arguments() {
        let d = tempfile::tempdir().expect("tempdir");
        let bad = TraceFileMode::Flight {
            snapshot_every_ns: S,
            snapshot_len_ns: 2 * S,
        };
        assert!(matches!(
            RttWriter::create(&d.path().join("x.rtt"), bad, &[0]),
            Err(RttError::Invalid(_))
        ));
        assert!(matches!(
            RttWriter::create(
                &d.path().join("no/such/dir/x.rtt"),
                TraceFileMode::All,
                &[0]
            ),
            Err(RttError::Io { .. })
        ));
        let mut w = RttWriter::create(&d.path().join("x.rtt"), TraceFileMode::default(), &[0])
            .expect("create");
        assert!(w.keep_window(&sample(0, 0, 5), &[], &[], 10, 9).is_err());
        // No snapshots at all.
        let none = TraceFileMode::Flight {
            snapshot_every_ns: 0,
            snapshot_len_ns: 0,
        };
        let mut w2 = RttWriter::create(&d.path().join("y.rtt"), none, &[0]).expect("create");
        w2.on_events(&[tick(w2.origin_ns + 5, 0)]).expect("events");
        w2.finish(final_meta(), &NameTables::default())
            .expect("finish");
        let f = read_rtt(&d.path().join("y.rtt")).expect("reads");
        assert!(f.events.is_empty() && f.windows.is_empty());
        drop(w);
    }

    #[test]
    fn cover_merges() {
        let d = tempfile::tempdir().expect("tempdir");
        let mut w =
            RttWriter::create(&d.path().join("c.rtt"), TraceFileMode::default(), &[0]).expect("c");
        w.cover(0, 10, 20);
        w.cover(0, 30, 40);
        w.cover(0, 20, 30);
        w.cover(0, 50, 60);
        w.cover(0, 5, 12);
        assert_eq!(w.covered[&0], vec![(5, 40), (50, 60)]);
        assert!(w.is_covered(0, 5) && w.is_covered(0, 39) && !w.is_covered(0, 40));
        assert!(!w.is_covered(0, 4) && w.is_covered(0, 55) && !w.is_covered(1, 55));
    }
}
