//! `rtscope bound`: the ECRTS'20 latency bound (Theorem 8, six interrupt characterizations) from
//! one of three inputs — the documented JSON (`--input`), rtsl's SQLite databases (`--rtsl-db`),
//! or an rtscope trace (`--trace`). Text like rtsl's report, or `--json` (docs/schema/bound.schema.json).

use crate::usage;
use anyhow::{Context, Result};
use rtscope_analysis::bound::{self, BoundInput, Options};
use rtscope_model::record::RawSample;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The documented interchange JSON (docs/bound.md).
    #[arg(long, value_name = "FILE.json", conflicts_with_all = ["rtsl_db", "trace"])]
    input: Option<PathBuf>,
    /// rtsl's per-CPU SQLite databases (tables poid, paie, psd, dst, irq, nmi).
    #[arg(long = "rtsl-db", value_name = "PATH", num_args = 1.., conflicts_with = "trace")]
    rtsl_db: Vec<PathBuf>,
    /// An rtscope trace file (.rtt): interrupts from its events, thread terms from preemptirq
    /// events or, where the kernel has none, the estimate fallback.
    #[arg(long, value_name = "FILE.rtt")]
    trace: Option<PathBuf>,
    /// With --trace: the thread term (ns) to assume on CPUs that have neither preemptirq events
    /// nor samples in the trace. The result is labelled an estimate, not a sound bound.
    #[arg(long, value_name = "NS", requires = "trace")]
    assume_thread_ns: Option<u64>,
    /// With --trace: latency samples recorded beside the trace (`rtscope measure --raw FILE`
    /// CSV: cpu,tid,cycle,expected_ns,latency_ns on CLOCK_MONOTONIC, like the trace), added to
    /// any samples stored in the .rtt.
    #[arg(long, value_name = "FILE.csv", requires = "trace")]
    samples: Option<PathBuf>,
    /// With --trace: also compute the time-to-bound series at N evenly spaced instants
    /// (1 ..= 1000): the sliding-window bound from the data seen so far vs the observed maximum.
    #[arg(long, value_name = "N", requires = "trace")]
    series: Option<u32>,
    /// The bound report as JSON (docs/schema/bound.schema.json): FILE, or stdout instead of the
    /// text with `-`
    #[command(flatten)]
    json: super::common::JsonOut,
    /// Stop a fixed point (not converged) once L exceeds this: 1us ..= 1h, with a unit (ns, us,
    /// ms, s, m, h)
    #[arg(long, default_value = "1s")]
    cap: String,
    /// Stop a fixed point (not converged) after this many iterations (1 ..= 10000000).
    #[arg(long, default_value_t = bound::DEFAULT_MAX_ITERATIONS)]
    max_iterations: u64,
}

/// `--cap` in the one duration grammar (`rtscope_model::duration`), 1 µs ..= 1 h. A bare number
/// meant ns here before the grammar was shared (it means seconds everywhere now): refused, with
/// the spelling that keeps the old meaning, instead of silently becoming a million times larger.
fn parse_cap(s: &str) -> Result<u64> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(usage!(
            "--cap: '{s}' has no unit; a bare number meant ns here before and means seconds in the shared grammar: write {t}ns (or {t}s)"
        ));
    }
    let secs = super::common::parse_duration_in("--cap", s, 1e-6, 3600.0)?;
    Ok((secs * 1e9).round() as u64)
}

fn read_json(p: &Path) -> Result<BoundInput> {
    let text = super::common::read_input("--input", p)?;
    bound::json::parse(&text, &p.display().to_string()).map_err(|e| usage!("--input {e}"))
}

fn read_rtsl(paths: &[PathBuf]) -> Result<BoundInput> {
    let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    let raw = rtscope_store::rtsl::read_paths(&refs).map_err(|e| usage!("--rtsl-db {e}"))?;
    bound::from_raw(raw, Vec::new()).map_err(|e| usage!("--rtsl-db {e}"))
}

type Series = Vec<rtscope_model::bound::BoundSeriesPoint>;

/// `rtscope measure --raw` CSV → samples; every bad line is named.
fn read_samples_csv(p: &Path) -> Result<Vec<RawSample>> {
    let text = super::common::read_input("--samples", p)?;
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
            return Err(usage!(
                "--samples {} line {n}: expected 5 fields cpu,tid,cycle,expected_ns,latency_ns, got {}",
                p.display(),
                f.len()
            ));
        }
        let num = |k: usize| -> Result<u64> {
            f[k].parse::<u64>().map_err(|_| {
                usage!(
                    "--samples {} line {n}: field {} must be a non-negative integer, got {:?}",
                    p.display(),
                    k + 1,
                    f[k]
                )
            })
        };
        let cpu = u32::try_from(num(0)?)
            .map_err(|_| usage!("--samples {} line {n}: cpu out of range", p.display()))?;
        let tid = u32::try_from(num(1)?)
            .map_err(|_| usage!("--samples {} line {n}: tid out of range", p.display()))?;
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
    assume_thread_ns: Option<u64>,
    series: Option<(u32, Options)>,
) -> Result<(BoundInput, Series)> {
    if !p.is_file() {
        return Err(usage!("--trace {}: no such file", p.display()));
    }
    let mut f =
        rtscope_trace::rtt::read_rtt(p).map_err(|e| usage!("--trace {}: {e}", p.display()))?;
    if let Some(c) = samples_csv {
        f.samples.extend(read_samples_csv(c)?);
    }
    bound::events::traced_run_input(
        &f.events,
        &f.samples,
        (f.meta.start_ns, f.meta.end_ns),
        &f.meta.lost_per_cpu,
        assume_thread_ns,
        series.map(|(n, _)| n),
        &series.map(|(_, o)| o).unwrap_or_default(),
    )
    .map_err(|e| usage!("--trace {}: {e}", p.display()))
}

pub fn run(a: Args) -> Result<()> {
    // Validate everything before reading anything.
    let cap_ns = parse_cap(&a.cap)?;
    a.json.check()?;
    if let Some(t) = a.assume_thread_ns {
        if !(1..=1_000_000_000).contains(&t) {
            return Err(usage!(
                "--assume-thread-ns: must be 1..=1000000000 ns, got {t}"
            ));
        }
    }
    if !(1..=10_000_000).contains(&a.max_iterations) {
        return Err(usage!(
            "--max-iterations: must be 1..=10000000, got {}",
            a.max_iterations
        ));
    }
    if let Some(n) = a.series {
        if !(1..=1000).contains(&n) {
            return Err(usage!("--series: must be 1..=1000 points, got {n}"));
        }
    }
    let opts = Options {
        cap_ns,
        max_iterations: a.max_iterations,
    };
    let (input, kind, series) = match (&a.input, a.rtsl_db.is_empty(), &a.trace) {
        (Some(p), true, None) => (read_json(p)?, "json", Vec::new()),
        (None, false, None) => (read_rtsl(&a.rtsl_db)?, "rtsl-db", Vec::new()),
        (None, true, Some(p)) => {
            let (i, s) = read_trace(
                p,
                a.samples.as_deref(),
                a.assume_thread_ns,
                a.series.map(|n| (n, opts)),
            )?;
            (i, "trace", s)
        }
        _ => {
            return Err(usage!(
                "give exactly one of --input FILE.json, --rtsl-db PATH…, --trace FILE.rtt"
            ))
        }
    };
    let mut report = bound::analyze(&input, &opts, kind);
    report.series = series;
    a.json
        .write(&serde_json::to_string_pretty(&report).context("serialising the bound report")?)?;
    if a.json.to_stdout() {
        return Ok(());
    }
    // A closed pipe (`| head`) is not an error worth a message.
    super::db::out(&bound::render::text(&report))
}

#[cfg(test)]
mod tests {
    use super::parse_cap;

    #[test]
    fn cap_parsing() {
        assert_eq!(parse_cap("1s").unwrap(), 1_000_000_000);
        assert_eq!(parse_cap("250us").unwrap(), 250_000);
        assert_eq!(parse_cap("5000ns").unwrap(), 5_000);
        assert_eq!(parse_cap("1.5ms").unwrap(), 1_500_000);
        let e = parse_cap("5000").unwrap_err().to_string();
        assert!(e.contains("write 5000ns"), "{e}");
        assert!(parse_cap("10ns").is_err());
        assert!(parse_cap("2h").is_err());
        assert!(parse_cap("-1s").is_err());
    }
}
