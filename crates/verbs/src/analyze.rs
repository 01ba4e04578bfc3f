//! `rtscope analyze FILE.rtt`: per-sample attribution re-run on a recorded trace, offline: the
//! run-level view and the worst samples' timelines (text, or JSON).
//!
//! A flight-recorder file (`--trace-file-mode flight`, the default of long runs) holds only the
//! kept windows (an explained sample with its look-back) and periodic snapshots of every CPU:
//! each kept sample is attributed on the events of the kept stretch that holds its whole window
//! [E, E + latency] (never across a stretch the file does not have, where silence would read as
//! "no guest activity"), and the output says plainly what was not kept. A file cut short (the
//! run did not finish writing it) is analysed up to the cut, and says so.

use crate::input::{bad, VerbError};
use crate::outputs::JsonDest;
use crate::tool::{run_tool, Flow, Tool, Work};
use rtscope_analysis::attribution::{self, AttributionOptions};
use rtscope_report::analyze as text;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Version of the analysis JSON (docs/trace-format.md, "analyze JSON").
pub const ANALYZE_SCHEMA_VERSION: u32 = 1;

rtscope_model::request_fields! {
    /// The fields of an analysis request, as its refusals and warnings name them; `TraceKeep`
    /// and `TraceFileMode` are the recording's settings a warning or a hint advises.
    pub enum Field in "analyze" {
        Json = "json" => JSON,
        Worst = "worst" => WORST,
        GapThreshold = "gap_threshold" => GAP_THRESHOLD,
        BusyGapThreshold = "busy_gap_threshold" => BUSY_GAP_THRESHOLD,
        TraceKeep = "trace_keep" => TRACE_KEEP,
        TraceFileMode = "trace_file_mode" => TRACE_FILE_MODE,
    }
}

/// The range of both gap thresholds: below 1 µs every pair of events is a gap; above 1 s no
/// stretch of a latency window is.
pub const GAP_THRESHOLD_RANGE: RangeInclusive<Duration> =
    Duration::from_micros(1)..=Duration::from_secs(1);

/// The verb's request, typed.
#[derive(Clone, Debug)]
pub struct AnalyzeFlags {
    /// The trace; absent, the error says what `--json` took.
    pub file: Option<PathBuf>,
    /// Worst samples shown with their timeline (0..=10000).
    pub top: usize,
    /// Eventless stretches this long count as "no guest activity" ([`GAP_THRESHOLD_RANGE`]).
    pub gap_threshold: Duration,
    /// The same while another thread holds the CPU ([`GAP_THRESHOLD_RANGE`]).
    pub busy_gap_threshold: Duration,
    /// Also the share of samples above this latency each cause explains.
    pub tail_threshold: Option<Duration>,
    /// How the caller names each field: the analysis's warnings (printed and in its JSON)
    /// refer to fields through it.
    pub field_names: fn(Field) -> &'static str,
}

/// Read the trace and attribute its samples: JSON to `json`, the text otherwise.
pub fn file(a: &AnalyzeFlags, json: &JsonDest) -> Result<(), VerbError> {
    // `--json` takes an optional FILE: in `analyze --json x.rtt` it took the trace.
    let file = match a.file.clone() {
        Some(f) => f,
        None => match &json.0 {
            Some(p) if p.extension().is_some_and(|e| e == "rtt") => {
                return Err(bad!(
                "FILE: missing ({JSON} took {} as its output): write `rtscope analyze {} {JSON} -`",
                p.display(),
                p.display()
            ))
            }
            _ => return Err(bad!("FILE: the .rtt trace file to analyse is required")),
        },
    };
    json.check()?;
    if a.top > 10_000 {
        return Err(bad!("{WORST}: must be 0..=10000, got {}", a.top));
    }
    for (field, d) in [
        (GAP_THRESHOLD, a.gap_threshold),
        (BUSY_GAP_THRESHOLD, a.busy_gap_threshold),
    ] {
        rtscope_model::duration::within(d, &GAP_THRESHOLD_RANGE)
            .map_err(|e| bad!("{field}: {e}"))?;
    }
    rtscope_files::check_input(&file).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => bad!("FILE: {} is not a readable file", file.display()),
        _ => bad!("FILE: {}: {e}", file.display()),
    })?;
    run_tool(Analyze {
        a,
        file,
        json,
        done: None,
    })
}

/// `analyze` as a tool: the trace read and attributed in its step, the JSON and text its
/// outputs.
struct Analyze<'a> {
    a: &'a AnalyzeFlags,
    file: PathBuf,
    json: &'a JsonDest,
    done: Option<Analysed>,
}

/// What the step read and found.
struct Analysed {
    f: rtscope_trace::RttFile,
    flight: Option<crate::flight::FlightView>,
    r: attribution::AttributionResult,
    /// Seconds to read the file, and to attribute its samples.
    read_s: f64,
    analyse_s: f64,
}

impl Tool for Analyze<'_> {
    type Output = ();

    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        let (a, file) = (self.a, &self.file);
        let t_read = Instant::now();
        // A corrupt or oversized file is bad input (exit 2), as for `bound --trace`.
        let f = rtscope_trace::read_rtt(file).map_err(|e| bad!("FILE {}: {e}", file.display()))?;
        let read_s = t_read.elapsed().as_secs_f64();
        let opts = AttributionOptions {
            gap_threshold_ns: ns(a.gap_threshold),
            busy_gap_threshold_ns: ns(a.busy_gap_threshold),
            tail_threshold_ns: a.tail_threshold.map(ns),
            top_n: a.top,
            lost_per_cpu: f.meta.lost_per_cpu.iter().map(|(c, n)| (*c, *n)).collect(),
            steal_ns_per_cpu: f
                .meta
                .steal_ns_per_cpu
                .iter()
                .map(|(c, n)| (*c, *n))
                .collect(),
        };
        let t0 = Instant::now();
        let flight = f
            .is_flight()
            .then(|| crate::flight::FlightView::of(&f, a.field_names));
        let mut r = match &flight {
            Some(fv) => fv.attribute(&f, &opts),
            None => attribution::attribute(&f.events, &f.samples, &f.names, &opts),
        };
        if let Some(at) = f.truncated_at {
            r.warnings.push(format!(
                "truncated at byte {at}: the run stopped writing this file (no END section, e.g. it crashed); everything before byte {at} was read{}",
                if f.meta.notes.iter().any(|n| n.starts_with("provisional")) {
                    ", but the final metadata (loss counts, names) was never written"
                } else {
                    ""
                }
            ));
        }
        // The relevance filter keeps every eventless stretch of 10 µs or more exactly; shorter
        // gap thresholds could see gaps the full stream did not have.
        if f.meta.keep == "relevant" && opts.gap_threshold_ns < rtscope_trace::reduce::SPLIT_NS {
            let w = format!(
                "{GAP_THRESHOLD} {}: below the relevance filter's 10 us split, \"no guest activity\" may include stretches where left-out SCHED_OTHER events ran (record with {TRACE_KEEP} all for finer gaps)",
                rtscope_model::duration::human(a.gap_threshold.as_secs_f64())
            );
            r.warnings
                .push(rtscope_model::field::render(&w, Field::ALL, a.field_names));
        }
        let analyse_s = t0.elapsed().as_secs_f64();
        self.done = Some(Analysed {
            f,
            flight,
            r,
            read_s,
            analyse_s,
        });
        Ok(Flow::Done)
    }

    fn outputs(self, _: &Work, _: Option<rtscope_model::RunRecord>) -> Result<(), VerbError> {
        let (file, json) = (&self.file, self.json);
        let Some(Analysed {
            f,
            flight,
            r,
            read_s,
            analyse_s,
        }) = self.done
        else {
            return Ok(());
        };
        let throughput = f.events.len() as f64 / analyse_s.max(1e-9);
        let doc = serde_json::json!({
            "schema_version": ANALYZE_SCHEMA_VERSION,
            "file": file.display().to_string(),
            "meta": f.meta,
            "events": f.events.len(),
            "samples": f.samples.len(),
            "file_mode": f.meta.file_mode,
            "truncated_at_byte": f.truncated_at,
            "flight": flight.as_ref().map(|fv| fv.json(&f)),
            "analysis_seconds": analyse_s,
            "analysis_events_per_second": throughput,
            "event_counts": rtscope_model::event::count_by_kind(&f.events),
            "attribution": r,
        });
        json.write(&serde_json::to_string_pretty(&doc).map_err(VerbError::failed)?)?;
        if json.to_stdout() {
            return Ok(());
        }
        let m = &f.meta;
        let dur = m.end_ns.saturating_sub(m.start_ns) as f64 / 1e9;
        println!(
            "{}: {} events, {} samples{}, mechanism {}, cpus {:?}, {}, kernel {}",
            file.display(),
            f.events.len(),
            f.samples.len(),
            if flight.is_some() { " kept" } else { "" },
            if m.mechanism.is_empty() {
                "unknown"
            } else {
                &m.mechanism
            },
            m.cpus,
            // A file cut before its final metadata does not know when the run ended.
            if m.end_ns > m.start_ns {
                format!("{dur:.2} s")
            } else {
                "duration unknown".to_string()
            },
            m.kernel
        );
        if let Some(fv) = &flight {
            println!("{}", fv.line(&f));
            if fv.not_attributable > 0 {
                println!(
                    "{} kept samples not attributed: their window [E, E + latency] is not wholly inside a kept stretch",
                    fv.not_attributable
                );
            }
        }
        if m.keep == "relevant" {
            println!(
                "relevance filter: {} SCHED_OTHER switches/wake-ups and hrtimer expiries left out (kept: every interrupt, real-time/DEADLINE/idle switch, and their activity as background records)",
                m.filtered_events
            );
        }
        let lost: u64 = m.lost_per_cpu.values().sum();
        if lost > 0 {
            println!(
                "WARNING: {lost} events lost ({:?}); attribution on those CPUs is incomplete",
                m.lost_per_cpu
            );
        }
        for w in &r.warnings {
            println!("warning: {w}");
        }
        for n in &m.notes {
            println!("note: {n}");
        }
        // A flight file's events cover only the kept stretches: counts, no rates.
        print!(
            "{}",
            text::event_counts(&f.events, flight.is_none().then_some(dur))
        );
        print!("{}", text::summary(&r));
        for (i, s) in r.worst.iter().enumerate() {
            print!("{}", text::sample(i + 1, s, &f.names));
        }
        eprintln!(
            "rtscope: read in {:.3} s; attribution of {} events in {:.3} s ({:.2} M events/s)",
            read_s,
            f.events.len(),
            analyse_s,
            throughput / 1e6
        );
        Ok(())
    }
}

/// Nanoseconds of a duration, saturating (a trace's clock counts in `u64` ns).
fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_checked_before_the_file_is_read() {
        let f = AnalyzeFlags {
            file: Some("/nonexistent/x.rtt".into()),
            top: 10,
            gap_threshold: Duration::from_micros(100),
            busy_gap_threshold: Duration::from_millis(6),
            tail_threshold: None,
            field_names: Field::key,
        };
        let rows: Vec<(AnalyzeFlags, JsonDest, String)> = vec![
            (
                AnalyzeFlags { file: None, ..f.clone() },
                JsonDest(Some("x.rtt".into())),
                format!("FILE: missing ({JSON} took x.rtt as its output): write `rtscope analyze x.rtt {JSON} -`"),
            ),
            (
                AnalyzeFlags { file: None, ..f.clone() },
                JsonDest(None),
                "FILE: the .rtt trace file to analyse is required".into(),
            ),
            (AnalyzeFlags { top: 10_001, ..f.clone() }, JsonDest(None), format!("{WORST}: must be 0..=10000, got 10001")),
            (
                AnalyzeFlags { gap_threshold: Duration::ZERO, ..f.clone() },
                JsonDest(None),
                format!("{GAP_THRESHOLD}: 0ns is out of range (1us ..= 1s)"),
            ),
            (
                AnalyzeFlags { busy_gap_threshold: Duration::from_secs(2), ..f.clone() },
                JsonDest(None),
                format!("{BUSY_GAP_THRESHOLD}: 2s is out of range (1us ..= 1s)"),
            ),
            (f.clone(), JsonDest(None), "FILE: /nonexistent/x.rtt is not a readable file".into()),
        ];
        for (flags, json, want) in rows {
            match file(&flags, &json) {
                Err(VerbError::BadInput(got)) => assert_eq!(got, want),
                other => panic!("{want}: {other:?}"),
            }
        }
    }
}
