//! `rtscope bound`: the ECRTS'20 latency bound (Theorem 8, six interrupt characterizations) from
//! one of three inputs — the documented JSON (`--input`), rtsl's SQLite databases (`--rtsl-db`),
//! or an rtscope trace (`--trace`), each read and checked here. Text like rtsl's report, or JSON.

use crate::input::{bad, VerbError};
use crate::outputs::JsonDest;
use crate::tool::{run_tool, Flow, Tool, Work};
use rtscope_analysis::bound::{self, BoundInput, Options};
use rtscope_model::record::RawSample;
use rtscope_store::RTSL_DB;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

rtscope_model::request_fields! {
    /// The fields of a bound request as its errors name them (rtsl's databases are the store's
    /// [`RTSL_DB`]); the caller renders each token ([`rtscope_model::field::render`]).
    pub enum Field in "bound" {
        Input = "input" => INPUT,
        Trace = "trace" => TRACE,
        Samples = "samples" => SAMPLES,
        AssumeThread = "assume_thread" => ASSUME_THREAD,
        Series = "series" => SERIES,
        Cap = "cap" => CAP,
        MaxIterations = "max_iterations" => MAX_ITERATIONS,
    }
}

/// The verb's request, typed.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundFlags {
    pub input: Option<PathBuf>,
    pub rtsl_db: Vec<PathBuf>,
    pub trace: Option<PathBuf>,
    /// The thread term assumed on CPUs a trace says nothing about ([`ASSUME_THREAD_RANGE`]).
    pub assume_thread: Option<Duration>,
    pub samples: Option<PathBuf>,
    pub series: Option<u32>,
    /// Where a fixed point stops unconverged ([`CAP_RANGE`]).
    pub cap: Duration,
    pub max_iterations: u64,
}

/// A thread term: at least a nanosecond, at most a second (no preemption-disabled section of a
/// working kernel comes near).
pub const ASSUME_THREAD_RANGE: RangeInclusive<Duration> =
    Duration::from_nanos(1)..=Duration::from_secs(1);

/// The fixed point's cap on L.
pub const CAP_RANGE: RangeInclusive<Duration> =
    Duration::from_micros(1)..=Duration::from_secs(3600);

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn read_json(p: &Path) -> Result<BoundInput, VerbError> {
    let text = crate::input::read(&INPUT.to_string(), p)?;
    bound::json::parse(&text, &p.display().to_string()).map_err(|e| bad!("{INPUT} {e}"))
}

fn read_rtsl(paths: &[PathBuf]) -> Result<BoundInput, VerbError> {
    let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    let raw = rtscope_store::rtsl::read_paths(&refs).map_err(|e| bad!("{RTSL_DB} {e}"))?;
    bound::from_raw(raw, Vec::new()).map_err(|e| bad!("{RTSL_DB} {e}"))
}

type Series = Vec<rtscope_model::bound::BoundSeriesPoint>;

/// `rtscope measure --raw` CSV → samples; every bad line is named.
fn read_samples_csv(p: &Path) -> Result<Vec<RawSample>, VerbError> {
    let text = crate::input::read(&SAMPLES.to_string(), p)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if (n == 1 && line.trim() == "cpu,tid,cycle,expected_ns,latency_ns")
            || line.trim().is_empty()
        {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != 5 {
            return Err(bad!(
                "{SAMPLES} {} line {n}: expected 5 fields cpu,tid,cycle,expected_ns,latency_ns, got {}",
                p.display(),
                f.len()
            ));
        }
        let num = |k: usize| -> Result<u64, VerbError> {
            f[k].parse::<u64>().map_err(|_| {
                bad!(
                    "{SAMPLES} {} line {n}: field {} must be a non-negative integer, got {:?}",
                    p.display(),
                    k + 1,
                    f[k]
                )
            })
        };
        let cpu = u32::try_from(num(0)?)
            .map_err(|_| bad!("{SAMPLES} {} line {n}: cpu out of range", p.display()))?;
        let tid = u32::try_from(num(1)?)
            .map_err(|_| bad!("{SAMPLES} {} line {n}: tid out of range", p.display()))?;
        out.push(RawSample {
            cpu,
            tid,
            cycle: num(2)?,
            expected_ns: num(3)?,
            latency_ns: num(4)?,
        });
    }
    Ok(out)
}

fn read_trace(
    p: &Path,
    samples_csv: Option<&Path>,
    assume_thread: Option<Duration>,
    series: Option<(u32, Options)>,
) -> Result<(BoundInput, Series), VerbError> {
    rtscope_files::check_input(p).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => bad!("{TRACE} {}: no such file", p.display()),
        _ => bad!("{TRACE} {}: {e}", p.display()),
    })?;
    let mut f =
        rtscope_trace::rtt::read_rtt(p).map_err(|e| bad!("{TRACE} {}: {e}", p.display()))?;
    if let Some(c) = samples_csv {
        f.samples.extend(read_samples_csv(c)?);
    }
    bound::events::traced_run_input(
        &f.events,
        &f.samples,
        (f.meta.start_ns, f.meta.end_ns),
        &f.meta.lost_per_cpu,
        assume_thread.map(ns),
        series.map(|(n, _)| n),
        &series.map(|(_, o)| o).unwrap_or_default(),
    )
    .map_err(|e| bad!("{TRACE} {}: {e}", p.display()))
}

/// The bound from exactly one input, as text or JSON (docs/schema/bound.schema.json).
pub fn run(a: &BoundFlags, json: &JsonDest) -> Result<(), VerbError> {
    // Validate everything before reading anything.
    let within = |field: Field, d: Duration, r: &RangeInclusive<Duration>| {
        rtscope_model::duration::within(d, r).map_err(|e| bad!("{field}: {e}"))
    };
    let cap_ns = ns(within(CAP, a.cap, &CAP_RANGE)?);
    json.check()?;
    if let Some(t) = a.assume_thread {
        within(ASSUME_THREAD, t, &ASSUME_THREAD_RANGE)?;
    }
    if !(1..=10_000_000).contains(&a.max_iterations) {
        return Err(bad!(
            "{MAX_ITERATIONS}: must be 1..=10000000, got {}",
            a.max_iterations
        ));
    }
    if let Some(n) = a.series {
        if !(1..=1000).contains(&n) {
            return Err(bad!("{SERIES}: must be 1..=1000 points, got {n}"));
        }
    }
    let opts = Options {
        cap_ns,
        max_iterations: a.max_iterations,
    };
    let source = match (&a.input, a.rtsl_db.is_empty(), &a.trace) {
        (Some(p), true, None) => Source::Json(p),
        (None, false, None) => Source::Rtsl(&a.rtsl_db),
        (None, true, Some(p)) => Source::Trace(p),
        _ => {
            return Err(bad!(
                "give exactly one of {INPUT} FILE.json, {RTSL_DB} PATH…, {TRACE} FILE.rtt"
            ))
        }
    };
    run_tool(Bound {
        a,
        opts,
        source,
        json,
        report: None,
    })
}

/// The one input of a bound.
enum Source<'a> {
    Json(&'a Path),
    Rtsl(&'a [PathBuf]),
    Trace(&'a Path),
}

/// `bound` as a tool: its input read and the bound computed in its step, the text or JSON its
/// outputs.
struct Bound<'a> {
    a: &'a BoundFlags,
    opts: Options,
    source: Source<'a>,
    json: &'a JsonDest,
    report: Option<rtscope_model::bound::BoundReport>,
}

impl Tool for Bound<'_> {
    type Output = ();

    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        let a = self.a;
        let (input, kind, series) = match self.source {
            Source::Json(p) => (read_json(p)?, "json", Vec::new()),
            Source::Rtsl(paths) => (read_rtsl(paths)?, "rtsl-db", Vec::new()),
            Source::Trace(p) => {
                let (i, s) = read_trace(
                    p,
                    a.samples.as_deref(),
                    a.assume_thread,
                    a.series.map(|n| (n, self.opts)),
                )?;
                (i, "trace", s)
            }
        };
        let mut report = bound::analyze(&input, &self.opts, kind);
        report.series = series;
        self.report = Some(report);
        Ok(Flow::Done)
    }

    fn outputs(self, _: &Work, _: Option<rtscope_model::RunRecord>) -> Result<(), VerbError> {
        let Some(report) = self.report else {
            return Ok(());
        };
        let doc = serde_json::to_string_pretty(&report)
            .map_err(|e| VerbError::context("serialising the bound report", e))?;
        self.json.write(&doc)?;
        if self.json.to_stdout() {
            return Ok(());
        }
        // A closed pipe (`| head`) is not an error worth a message.
        crate::outputs::print(&bound::render::text(&report))
    }
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    #[test]
    fn flags_are_checked_before_any_input_is_read() {
        let f = BoundFlags {
            input: None,
            rtsl_db: Vec::new(),
            trace: Some("/nonexistent/t.rtt".into()),
            assume_thread: None,
            samples: None,
            series: None,
            cap: Duration::from_secs(1),
            max_iterations: 100,
        };
        let rows: Vec<(BoundFlags, &str)> = vec![
            (
                BoundFlags {
                    assume_thread: Some(Duration::ZERO),
                    ..f.clone()
                },
                "⟨bound.assume_thread⟩: 0ns is out of range (1ns ..= 1s)",
            ),
            (
                BoundFlags {
                    cap: Duration::from_nanos(10),
                    ..f.clone()
                },
                "⟨bound.cap⟩: 10ns is out of range (1us ..= 1h)",
            ),
            (
                BoundFlags {
                    max_iterations: 0,
                    ..f.clone()
                },
                "⟨bound.max_iterations⟩: must be 1..=10000000, got 0",
            ),
            (
                BoundFlags {
                    series: Some(0),
                    ..f.clone()
                },
                "⟨bound.series⟩: must be 1..=1000 points, got 0",
            ),
            (
                BoundFlags {
                    trace: None,
                    ..f.clone()
                },
                "give exactly one of ⟨bound.input⟩ FILE.json, ⟨store.rtsl_db⟩ PATH…, ⟨bound.trace⟩ FILE.rtt",
            ),
            (f.clone(), "⟨bound.trace⟩ /nonexistent/t.rtt: no such file"),
        ];
        for (flags, want) in rows {
            match run(&flags, &JsonDest(None)) {
                Err(VerbError::BadInput(got)) => assert_eq!(got, want),
                other => panic!("{want}: {other:?}"),
            }
        }
    }
}
