//! `rtscope analyze FILE.rtt`: re-run per-sample attribution on a recorded trace, offline, and
//! print the run-level view and the worst samples' timelines (text, or JSON with `--json`).
//!
//! A flight-recorder file (`--trace-file-mode flight`, the default of long runs) holds only the
//! kept windows (an explained sample with its look-back) and periodic snapshots of every CPU:
//! each kept sample is attributed on the events of the kept stretch that holds its whole window
//! [E, E + latency] (never across a stretch the file does not have, where silence would read as
//! "no guest activity"), and the output says plainly what was not kept. A file cut short (the
//! run did not finish writing it) is analysed up to the cut, and says so.

use rtscope_analysis::attribution::{self, AttributionOptions};
use rtscope_report::analyze as text;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The trace file (.rtt) written by `measure --trace` or `trace record`.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// How many worst samples to show with their full timeline (0..=10000).
    #[arg(long = "top", default_value_t = 10)]
    top: usize,
    /// Eventless stretches at least this long (µs) count as "no guest activity" (1..=1000000).
    #[arg(long = "gap-threshold-us", default_value_t = 100)]
    gap_threshold_us: u64,
    /// The same while another thread holds the CPU after the wake-up (µs, 1..=1000000): it may
    /// run in the kernel without events, but a busy CPU gets a tick every 1/HZ (default: 1.5
    /// ticks at HZ=250).
    #[arg(long = "busy-gap-threshold-us", default_value_t = 6000)]
    busy_gap_threshold_us: u64,
    /// Also report the share of samples above this latency (µs) each cause explains.
    #[arg(long = "threshold-us")]
    threshold_us: Option<u64>,
    /// The analysis as JSON (schema: docs/trace-format.md, "analyze JSON") to FILE, or to stdout
    /// instead of the text with `-`
    #[command(flatten)]
    json: super::common::JsonOut,
    /// Old spelling of `--json FILE`.
    #[arg(long = "json-out", hide = true)]
    json_out: Option<PathBuf>,
}

pub const ANALYZE_SCHEMA_VERSION: u32 = 1;

pub fn run(mut a: Args) -> anyhow::Result<()> {
    if let Some(p) = a.json_out.take() {
        a.json.path = Some(p);
    }
    // `--json` takes an optional FILE: in `analyze --json x.rtt` it took the trace.
    let file = match a.file.take() {
        Some(f) => f,
        None => match &a.json.path {
            Some(p) if p.extension().is_some_and(|e| e == "rtt") => {
                return Err(crate::usage!(
                "FILE: missing (--json took {} as its output): write `rtscope analyze {} --json -`",
                p.display(),
                p.display()
            ))
            }
            _ => {
                return Err(crate::usage!(
                    "FILE: the .rtt trace file to analyse is required"
                ))
            }
        },
    };
    a.json.check()?;
    if a.top > 10_000 {
        return Err(crate::usage!("--top: must be 0..=10000, got {}", a.top));
    }
    if !(1..=1_000_000).contains(&a.gap_threshold_us) {
        return Err(crate::usage!(
            "--gap-threshold-us: must be 1..=1000000, got {}",
            a.gap_threshold_us
        ));
    }
    if !(1..=1_000_000).contains(&a.busy_gap_threshold_us) {
        return Err(crate::usage!(
            "--busy-gap-threshold-us: must be 1..=1000000, got {}",
            a.busy_gap_threshold_us
        ));
    }
    if !file.is_file() {
        return Err(crate::usage!(
            "FILE: {} is not a readable file",
            file.display()
        ));
    }
    let t_read = Instant::now();
    // A corrupt or oversized file is bad input (exit 2), as for `bound --trace`.
    let f = rtscope_trace::read_rtt(&file)
        .map_err(|e| crate::usage!("FILE {}: {e}", file.display()))?;
    let read_s = t_read.elapsed().as_secs_f64();
    let opts = AttributionOptions {
        gap_threshold_ns: a.gap_threshold_us * 1000,
        busy_gap_threshold_ns: a.busy_gap_threshold_us * 1000,
        tail_threshold_ns: a.threshold_us.map(|t| t * 1000),
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
        .then(|| rtscope_session::flight::FlightView::of(&f));
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
    // The relevance filter keeps every eventless stretch of 10 µs or more exactly; shorter gap
    // thresholds could see gaps the full stream did not have.
    if f.meta.keep == "relevant" && opts.gap_threshold_ns < rtscope_trace::reduce::SPLIT_NS {
        r.warnings.push(format!(
            "--gap-threshold-us {}: below the relevance filter's 10 us split, \"no guest activity\" may include stretches where left-out SCHED_OTHER events ran (record with --trace-keep all for finer gaps)",
            a.gap_threshold_us
        ));
    }
    let analyse_s = t0.elapsed().as_secs_f64();
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
    a.json.write(&serde_json::to_string_pretty(&doc)?)?;
    if a.json.to_stdout() {
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
