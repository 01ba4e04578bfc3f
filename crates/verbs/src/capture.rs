//! `rtscope trace record`: kernel events on some CPUs for a while into a `.rtt` file (no samples:
//! `rtscope measure --trace` adds those). Useful alone to look at what a machine's CPUs do, and
//! to test the capture mechanisms. Like every verb that produces a result, the capture is stored
//! as a RunRecord: `trace_file` names the written trace and its kind (`trace_record`) holds the
//! capture's summary.

use crate::input::{self, bad, VerbError};
use crate::outputs::RecordOutputs;
use crate::tool::{run_tool, Begin, Flow, Tool, Work};
use rtscope_model::{RunRecord, Warning, WarningCode, Warnings};
use rtscope_trace::{Keep, Mechanism, TraceSession};
use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `trace record`'s request, typed.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// [`DURATION_RANGE`].
    pub duration: Duration,
    /// The online CPUs to trace.
    pub cpus: Vec<u32>,
    /// auto, bpf or tracefs (`off` is refused).
    pub mechanism: Mechanism,
    pub output: PathBuf,
    /// None: relevant, or all with `preemptirq`.
    pub keep: Option<Keep>,
    /// Record the preemptirq events too (tracefs only; the kernel must have them).
    pub preemptirq: bool,
}

/// How long a capture may run: every event stays in memory until its end.
pub const DURATION_RANGE: RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(86_400);

rtscope_model::request_fields! {
    /// The fields of a `trace record` request, as its refusals name them.
    pub enum Field in "trace_record" {
        Duration = "duration" => DURATION,
        Cpus = "cpus" => CPUS,
        Mechanism = "mechanism" => MECHANISM,
        Output = "output" => OUTPUT,
        Keep = "keep" => KEEP,
        Preemptirq = "preemptirq" => PREEMPTIRQ,
    }
}

/// What one capture produced, as stored in its record and printed.
pub use rtscope_model::TraceCapture as CaptureSummary;

/// The one-line account of a capture printed after it.
pub fn summary_line(file: &Path, s: &CaptureSummary, interrupted: bool) -> String {
    let secs = s.duration_s.max(1e-9);
    let ncpus = s.cpus.len().max(1) as f64;
    let lost_line = s
        .lost_per_cpu
        .iter()
        .map(|(c, n)| format!("cpu{c}={n}"))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "{}: {} events in {:.2} s ({:.0} events/s) on {} CPU(s), mechanism {}, file {} bytes \
         ({:.1} KB/s/CPU), kernel buffer {:.1} KB/s/CPU, lost {} ({lost_line}), \
         left out by the relevance filter {} (keep {}){}",
        file.display(),
        s.events,
        s.duration_s,
        s.events as f64 / secs,
        s.cpus.len(),
        s.mechanism,
        s.file_bytes,
        s.file_bytes as f64 / 1024.0 / secs / ncpus,
        s.kernel_bytes as f64 / 1024.0 / secs / ncpus,
        s.lost_events,
        s.filtered_events,
        s.keep,
        if interrupted { " [interrupted]" } else { "" }
    )
}

/// The warnings a capture's summary calls for.
pub fn summary_warnings(s: &CaptureSummary) -> Vec<Warning> {
    let mut w = Vec::new();
    if s.lost_events > 0 {
        w.warn(
            WarningCode::LostEvents,
            format!(
                "{} events were lost; attribution of samples in the affected windows is incomplete",
                s.lost_events
            ),
        );
    }
    w
}

/// Record for `r.duration` on `r.cpus` into `r.output`, say what the file holds, then store the
/// run and write `--json` (`out`).
pub fn record(a: &Record, out: &RecordOutputs) -> Result<(), VerbError> {
    // Validate everything before touching the kernel.
    let dur = rtscope_model::duration::within(a.duration, &DURATION_RANGE)
        .map_err(|e| bad!("{DURATION}: {e}"))?;
    if a.cpus.is_empty() {
        return Err(bad!("{CPUS}: empty CPU list"));
    }
    let cpus = a.cpus.clone();
    let mech = a.mechanism;
    if mech == Mechanism::Off {
        return Err(bad!(
            "{MECHANISM}: must be one of auto, bpf, tracefs for 'trace record'"
        ));
    }
    let keep = match a.keep {
        None if a.preemptirq => Keep::All,
        None => Keep::Relevant,
        Some(k) => k,
    };
    // The preemptirq events go to the thread analysis (`rtscope bound --trace`), which follows
    // every switch: the relevance filter would take some away. The eBPF capture has no
    // programs for them (its in-kernel reduction of them is `trace thread-vars`).
    let mech = if a.preemptirq {
        if keep == Keep::Relevant {
            return Err(bad!(
                "{KEEP} relevant: {PREEMPTIRQ} needs every switch (the thread analysis follows \
                 each one): use {KEEP} all or leave {KEEP} out"
            ));
        }
        match mech {
            Mechanism::Bpf => {
                return Err(bad!(
                    "{PREEMPTIRQ}: the eBPF capture does not record preemptirq events (its \
                     in-kernel reduction of them is `rtscope trace thread-vars`): use \
                     {MECHANISM} tracefs"
                ))
            }
            _ => Mechanism::Tracefs,
        }
    } else {
        mech
    };
    input::output(&OUTPUT.to_string(), &a.output)?;
    let tags = out.validate()?;
    if a.preemptirq {
        rtscope_trace::tracefs::preemptirq_available()
            .map_err(|e| bad!("{PREEMPTIRQ}: unavailable: {e}"))?;
    }
    let resolved = rtscope_trace::check(mech)
        .map_err(|e| VerbError::context(format!("{MECHANISM} {}", mech.name()), e))?;
    if resolved == Mechanism::Off {
        return Err(VerbError::failed(format!(
            "no capture mechanism available: {}",
            rtscope_trace::unavailable_reasons().join("; ")
        )));
    }
    run_tool(CaptureTool {
        a,
        out,
        cpus,
        resolved,
        keep,
        dur,
        tags,
        session: None,
        t0: Instant::now(),
        written: None,
        interrupted: false,
        warnings: Vec::new(),
    })
}

/// A capture as a tool of the one lifecycle: start the capture, a step every 20 ms until the
/// duration or a stop signal (the tracing state is removed as on a normal end), stop it and
/// write its file, the record of what the file holds, its line, the record stored.
struct CaptureTool<'a> {
    a: &'a Record,
    out: &'a RecordOutputs,
    cpus: Vec<u32>,
    resolved: Mechanism,
    keep: rtscope_trace::Keep,
    dur: Duration,
    tags: BTreeMap<String, String>,
    session: Option<TraceSession>,
    t0: Instant,
    /// The file written, what it holds.
    written: Option<CaptureSummary>,
    interrupted: bool,
    /// The capture's own warnings, said on stderr (the record has them too).
    warnings: Vec<Warning>,
}

impl Tool for CaptureTool<'_> {
    type Output = ();

    fn begin(&self) -> Begin {
        Begin::live("trace record", crate::privilege::Need::Nothing, "")
    }

    fn start(&mut self, _w: &Work) -> Result<(), VerbError> {
        let (a, cpus) = (self.a, &self.cpus);
        let session = TraceSession::start_opts(cpus, self.resolved, self.keep, a.preemptirq)
            .map_err(|e| match e {
                rtscope_trace::TraceError::Unavailable(m) if a.preemptirq => {
                    bad!("{PREEMPTIRQ}: unavailable: {m}")
                }
                e => VerbError::context("starting the capture", e),
            })?;
        self.session = Some(session);
        self.out.progress(&format!(
            "rtscope: tracing cpus {cpus:?} with {} for {:?} (Ctrl-C stops early)",
            self.resolved.name(),
            self.dur
        ));
        self.t0 = Instant::now();
        Ok(())
    }

    fn step(&mut self, w: &Work) -> Result<Flow, VerbError> {
        let (t0, dur) = (self.t0, self.dur);
        if t0.elapsed() >= dur || w.interrupted() {
            return Ok(Flow::Done);
        }
        std::thread::sleep(Duration::from_millis(20).min(dur.saturating_sub(t0.elapsed())));
        Ok(Flow::Continue)
    }

    fn stop(&mut self, w: &Work) -> Result<(), VerbError> {
        self.interrupted = w.interrupted();
        let session = self
            .session
            .take()
            .ok_or_else(|| VerbError::failed("the capture was not started"))?;
        let cap = session
            .stop()
            .map_err(|e| VerbError::context("stopping the capture", e))?;
        let mut events_per_kind: BTreeMap<String, u64> = BTreeMap::new();
        for e in &cap.events {
            *events_per_kind
                .entry(e.kind.kind_name().to_string())
                .or_default() += 1;
        }
        let mut summary = CaptureSummary {
            mechanism: self.resolved.name().to_string(),
            keep: cap.keep.name().to_string(),
            cpus: self.cpus.clone(),
            duration_s: cap.end_ns.saturating_sub(cap.start_ns) as f64 / 1e9,
            events: cap.events.len() as u64,
            events_per_kind,
            lost_events: cap.lost_total(),
            lost_per_cpu: cap.lost_per_cpu.clone(),
            filtered_events: cap.filtered,
            file_bytes: 0,
            kernel_bytes: cap.kernel_bytes,
            notes: cap.notes.clone(),
        };
        let file = cap.into_rtt(Vec::new());
        summary.file_bytes = rtscope_trace::write_rtt(&self.a.output, &file)
            .map_err(|e| VerbError::context("writing the trace file", e))?;
        self.written = Some(summary);
        Ok(())
    }

    fn record(&mut self, w: &Work) -> Result<Option<RunRecord>, VerbError> {
        let summary = self
            .written
            .as_ref()
            .ok_or_else(|| VerbError::failed("the capture wrote no file"))?;
        let mut warnings = summary_warnings(summary);
        if self.interrupted {
            warnings.warn(
                WarningCode::Interrupted,
                "interrupted: the capture is shorter than asked for",
            );
        }
        self.warnings = warnings.clone();
        let mut rec = w.record(crate::record::WorkInfo {
            verb: "trace".into(),
            cpus: self.cpus.clone(),
            interrupted: self.interrupted,
            hygiene: rtscope_model::Hygiene::default(),
            warnings,
            tags: std::mem::take(&mut self.tags),
            loads: Vec::new(),
            kind: rtscope_model::RunKind::TraceRecord(Box::new(summary.clone())),
        });
        rec.trace_file = Some(absolute(&self.a.output).display().to_string());
        Ok(Some(rec))
    }

    fn outputs(self, _w: &Work, rec: Option<RunRecord>) -> Result<(), VerbError> {
        let (Some(summary), Some(rec)) = (&self.written, rec) else {
            return Err(VerbError::failed("the capture made no record"));
        };
        if self.out.text() {
            println!(
                "{}",
                summary_line(&self.a.output, summary, self.interrupted)
            );
        }
        for w in &self.warnings {
            eprintln!("rtscope: warning [{}]: {}", w.code.as_str(), w.message);
        }
        for n in &summary.notes {
            eprintln!("rtscope: note: {n}");
        }
        self.out.emit(&rec)
    }
}

/// The written file's absolute path (the record may be read from another directory).
fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or(p.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_checked_before_the_kernel_is_touched() {
        let r = Record {
            duration: Duration::from_secs(5),
            cpus: vec![0],
            mechanism: Mechanism::Auto,
            output: "/proc/x.rtt".into(),
            keep: Some(Keep::Relevant),
            preemptirq: false,
        };
        let rows = [
            (
                Record {
                    duration: Duration::from_secs(2 * 86_400),
                    ..r.clone()
                },
                format!("{DURATION}: 2d is out of range (1ms ..= 1d)"),
            ),
            (
                Record {
                    duration: Duration::ZERO,
                    ..r.clone()
                },
                format!("{DURATION}: 0ns is out of range (1ms ..= 1d)"),
            ),
            (
                Record {
                    cpus: Vec::new(),
                    ..r.clone()
                },
                format!("{CPUS}: empty CPU list"),
            ),
            (
                Record {
                    mechanism: Mechanism::Off,
                    ..r.clone()
                },
                format!("{MECHANISM}: must be one of auto, bpf, tracefs for 'trace record'"),
            ),
            (
                Record {
                    preemptirq: true,
                    ..r.clone()
                },
                format!("{KEEP} relevant: {PREEMPTIRQ} needs every switch"),
            ),
            (
                Record {
                    preemptirq: true,
                    keep: None,
                    mechanism: Mechanism::Bpf,
                    ..r.clone()
                },
                format!("{PREEMPTIRQ}: the eBPF capture does not record preemptirq events"),
            ),
            (r.clone(), format!("{OUTPUT} /proc/x.rtt: ")),
        ];
        let out = RecordOutputs {
            no_store: true,
            ..RecordOutputs::default()
        };
        for (r, want) in rows {
            match record(&r, &out) {
                Err(VerbError::BadInput(got)) => assert!(got.starts_with(&want), "{got} / {want}"),
                other => panic!("{want}: {other:?}"),
            }
        }
    }

    #[test]
    fn output_flags_are_checked_before_the_kernel_is_touched() {
        let d = tempfile::tempdir().unwrap();
        let r = Record {
            duration: Duration::from_secs(5),
            cpus: vec![0],
            mechanism: Mechanism::Auto,
            output: d.path().join("t.rtt"),
            keep: Some(Keep::Relevant),
            preemptirq: false,
        };
        let out = RecordOutputs {
            no_store: true,
            tags: vec!["x".into()],
            ..RecordOutputs::default()
        };
        match record(&r, &out) {
            Err(VerbError::BadInput(got)) => assert!(got.starts_with("⟨tags⟩: 'x'"), "{got}"),
            other => panic!("{other:?}"),
        }
        assert!(!r.output.exists());
    }

    #[test]
    fn lost_events_are_a_typed_warning_and_the_summary_is_stored_whole() {
        let mut s = CaptureSummary {
            mechanism: "bpf".into(),
            keep: "relevant".into(),
            cpus: vec![0, 1],
            duration_s: 2.0,
            events: 3,
            events_per_kind: [("sched_switch".to_string(), 3)].into(),
            ..Default::default()
        };
        assert!(summary_warnings(&s).is_empty());
        s.lost_events = 7;
        s.lost_per_cpu = [(1, 7)].into();
        let w = summary_warnings(&s);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].code, WarningCode::LostEvents);
        assert!(w[0].message.starts_with("7 events were lost"));
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["lost_events"], 7);
        assert_eq!(j["lost_per_cpu"]["1"], 7);
        assert_eq!(j["events_per_kind"]["sched_switch"], 3);
        assert_eq!(j["duration_s"], 2.0);
        assert_eq!(j["mechanism"], "bpf");
        let line = summary_line(Path::new("t.rtt"), &s, false);
        assert!(line.starts_with("t.rtt: 3 events in 2.00 s"), "{line}");
        assert!(line.contains("lost 7 (cpu1=7)"), "{line}");
    }
}
