//! `rtscope import cyclictest FILE…`: cyclictest's `-h`/`-H` text and its `--json` output into the
//! RunRecord model (and the store), so old results can be compared with new ones.

use super::common;
use crate::usage;
use anyhow::{Context, Result};
use rtscope_model::histogram::LinearHistogram;
use rtscope_model::{
    ClockId, EndReason, Histogram, Hygiene, Policy, RunConfig, RunRecord, Stats, SystemInfo,
    ThreadResult, TimerMode,
};
use rtscope_report::cyclictest::{self as ct, CtResult};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// [cyclictest|run] FILE… — the kind may be omitted: it is detected from the content
    /// (cyclictest -h/-H text, cyclictest --json, or an rtscope RunRecord JSON such as a
    /// fallback file written when the database was unreachable).
    #[arg(required = true, value_name = "[KIND] FILE")]
    args: Vec<String>,
    /// Also write the resulting RunRecord JSON (single input only)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Results database: a SQLite file path or postgres://user@host/db [default:
    /// $XDG_DATA_HOME/rtscope/results.db]
    #[arg(long, value_parser = crate::cmd::common::db_url, value_name = "PATH|URL")]
    db: Option<String>,
    /// Do not store the run in the results database
    #[arg(long)]
    no_store: bool,
    /// key=value tag stored with the run (repeatable)
    #[arg(long = "tag", value_name = "K=V")]
    tags: Vec<String>,
    /// No line per imported file (errors are still printed)
    #[arg(short, long)]
    quiet: bool,
}

struct FileArgs {
    kind: Option<String>,
    files: Vec<PathBuf>,
    json: Option<PathBuf>,
    db: Option<String>,
    no_store: bool,
    tags: Vec<String>,
    quiet: bool,
}

pub fn run(a: Args) -> Result<()> {
    let (kind, files) = match a.args.first().map(String::as_str) {
        Some(k @ ("cyclictest" | "run")) => (Some(k.to_string()), a.args[1..].to_vec()),
        _ => (None, a.args.clone()),
    };
    if files.is_empty() {
        return Err(usage!("import: no input file given"));
    }
    import_files(FileArgs {
        kind,
        files: files.into_iter().map(PathBuf::from).collect(),
        json: a.json,
        db: a.db,
        no_store: a.no_store,
        tags: a.tags,
        quiet: a.quiet,
    })
}

fn import_files(f: FileArgs) -> Result<()> {
    if f.json.is_some() && f.files.len() != 1 {
        return Err(usage!("--json: only with a single input file"));
    }
    if let Some(j) = &f.json {
        common::check_output("--json", j)?;
    }
    let tags = common::parse_tags("--tag", &f.tags)?;
    if !f.no_store {
        common::check_db_writable(f.db.as_deref())?;
    }
    let mut records = Vec::new();
    for p in &f.files {
        let bytes =
            rtscope_files::read_bounded(p, rtscope_files::max_input_bytes(), "an imported result")
                .map_err(|e| usage!("{}: cannot read: {e}", p.display()))?;
        let text =
            String::from_utf8(bytes).map_err(|e| usage!("{}: not UTF-8 text: {e}", p.display()))?;
        let is_json = text.trim_start().starts_with('{');
        let is_run = is_json && text.contains("\"schema_version\"");
        let mut rec = match (f.kind.as_deref(), is_json, is_run) {
            (Some("run"), _, _) | (None, true, true) => {
                rtscope_report::json::parse_run_record(&text)
                    .map_err(|e| usage!("{}: {e}", p.display()))?
            }
            (_, true, _) => ct::parse_json(&text)
                .map_err(|e| usage!("{}: {e}", p.display()))
                .and_then(|r| {
                    to_record(&r, &p.display().to_string())
                        .map_err(|e| usage!("{}: {e}", p.display()))
                })?,
            (_, false, _) => match ct::text_kind(&text) {
                ct::TextKind::Verbose => ct::parse_verbose(&text),
                ct::TextKind::SummaryOnly => {
                    return Err(usage!(
                        "{}: only cyclictest's summary lines (min/avg/max, no distribution): re-run cyclictest with -h N, -v or --json",
                        p.display()
                    ))
                }
                _ => ct::parse_histogram(&text),
            }
            .map_err(|e| usage!("{}: {e}", p.display()))
                .and_then(|r| {
                    to_record(&r, &p.display().to_string())
                        .map_err(|e| usage!("{}: {e}", p.display()))
                })?,
        };
        rec.tags.extend(tags.clone());
        records.push((p.clone(), rec));
    }
    for (p, rec) in &records {
        if let Some(j) = &f.json {
            common::write_atomic(j, rtscope_report::json::run_record(rec).as_bytes())?;
        }
        if !f.quiet {
            println!(
                "{}: {} threads, {} samples, max {} us — imported as run {}",
                p.display(),
                rec.threads.len(),
                rec.stats.samples,
                rec.stats.max_ns.unwrap_or(0) / 1000,
                rec.id
            );
        }
        if !f.no_store {
            super::store_record(f.db.as_deref(), rec).context("storing the imported run")?;
        }
    }
    Ok(())
}

/// cyclictest's numbers are whole µs (truncated). Each bucket `u` is recorded at `u·1000` ns;
/// the exact min/max of its footer are kept; overflow samples (≥ the histogram size) have unknown
/// values between the limit and the max: one is recorded at the max, the rest at the limit, and
/// the record says so.
pub fn to_record(r: &CtResult, source: &str) -> Result<RunRecord, String> {
    if r.hist_size.is_none() {
        return Err("no histogram in this cyclictest output (only min/avg/max): re-run cyclictest with -h N or -H N".into());
    }
    let flags = r
        .cmdline
        .as_deref()
        .and_then(|c| {
            let argv: Vec<String> = c.split_whitespace().skip(1).map(String::from).collect();
            super::cyclictest::parse(&argv).ok()
        })
        .unwrap_or_default();
    let limit_us = r.hist_size.unwrap_or(0) as u64;
    let mut warnings = vec![format!(
        "imported from cyclictest output {source}: latencies are whole microseconds (truncated), recorded at the bucket's lower edge"
    )];
    // Every count read must add up without wrapping, and every value must be a latency the
    // histograms can hold (≤ 100 s): the file's numbers are not trusted.
    let max_us = rtscope_model::histogram::HIGHEST_TRACKABLE_NS / 1000;
    let mut all = 0u64;
    for t in &r.threads {
        let field = |f: &str| format!("thread {}: {f}", t.index);
        let n = rtscope_model::limits::checked_sum(
            t.counts.iter().copied().chain([t.overflows]),
            &field("histogram and overflow counts"),
        )?;
        all = all
            .checked_add(n)
            .ok_or_else(|| "the threads' sample counts add up to more than 2^64-1".to_string())?;
        for (what, v) in [("min", t.min_us), ("max", t.max_us)] {
            if v > max_us {
                return Err(field(&format!(
                    "{what} {v} us out of range (0..={max_us} us)"
                )));
            }
        }
        if !(0.0..=max_us as f64).contains(&t.avg_us) {
            return Err(field(&format!(
                "avg {} us out of range (0..={max_us} us)",
                t.avg_us
            )));
        }
    }
    if limit_us > max_us {
        return Err(format!(
            "histogram of {limit_us} buckets: above {max_us} us (0..={max_us} us)"
        ));
    }
    let mut merged = Histogram::new();
    let mut threads = Vec::new();
    for t in &r.threads {
        let mut h = Histogram::new();
        for (u, &c) in t.counts.iter().enumerate() {
            h.record_n((u as u64 * 1000).max(1), c);
        }
        if t.overflows > 0 {
            let max_ns = (t.max_us * 1000).max(limit_us * 1000);
            h.record(max_ns);
            h.record_n((limit_us * 1000).max(1), t.overflows - 1);
            warnings.push(format!(
                "thread {}: {} overflow samples (≥ {limit_us} us) have unknown values between {limit_us} us and the max {} us",
                t.index, t.overflows, t.max_us
            ));
        }
        if h.count() > 0 && h.min_ns() != Some((t.min_us * 1000).max(1)) && t.overflows < h.count()
        {
            // The footer's min is authoritative; the histogram's lowest bucket should agree.
            let lowest = h.min_ns().unwrap_or(0) / 1000;
            if lowest != t.min_us {
                warnings.push(format!(
                    "thread {}: footer min {} us but lowest histogram bucket {} us",
                    t.index, t.min_us, lowest
                ));
            }
        }
        merged.merge(&h);
        // from_counts keeps at least one bucket, so an empty histogram is still well-formed.
        let lin = LinearHistogram::from_counts(t.counts.clone(), t.overflows);
        threads.push(ThreadResult {
            index: t.index,
            cpu: t.cpu.unwrap_or(t.index as i64).max(0) as u32,
            tid: t.tid.unwrap_or(0),
            observed_policy: "unknown".into(),
            observed_priority: flags.prio as i32,
            cycles: t.cycles,
            overruns: 0,
            stats: Stats::from_histogram(&h),
            histogram: h,
            linear: lin,
            worst: Vec::new(),
            above_threshold: Vec::new(),
            above_threshold_dropped: 0,
        });
    }
    let policy = match (flags.policy.as_deref(), flags.prio) {
        (Some("rr"), _) => Policy::Rr,
        (Some("other") | Some("normal"), _) | (None, 0) => Policy::Other,
        _ => Policy::Fifo,
    };
    let mut system = SystemInfo::default();
    for (k, v) in &r.sysinfo {
        match k.as_str() {
            "nodename" => system.hostname = v.clone(),
            "release" => system.kernel_release = v.clone(),
            "version" => system.kernel_version = v.clone(),
            "realtime" if v == "1" => system.preempt_model = "rt".into(),
            _ => {}
        }
    }
    if system.preempt_model.is_empty() {
        system.preempt_model = "unknown".into();
        system.preempt_model_source = "not recorded by cyclictest".into();
    } else {
        system.preempt_model_source = "cyclictest sysinfo.realtime".into();
    }
    let stats = Stats::from_histogram(&merged);
    Ok(RunRecord {
        schema_version: rtscope_model::SCHEMA_VERSION,
        id: common::new_run_id(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        started_at: common::rfc3339(std::time::SystemTime::now()),
        wall_duration_s: 0.0,
        end_reason: EndReason::Completed,
        interrupted: false,
        break_sample: None,
        config: RunConfig {
            verb: "import-cyclictest".into(),
            cmdline: r
                .cmdline
                .as_deref()
                .map(|c| c.split_whitespace().map(String::from).collect())
                .unwrap_or_else(|| vec![format!("(cyclictest output {source})")]),
            cpus: threads.iter().map(|t| t.cpu).collect(),
            policy,
            priority: if policy == Policy::Other {
                0
            } else {
                flags.prio
            },
            nice: 0,
            deadline: None,
            interval_us: flags.interval.max(1),
            distance_us: flags.distance,
            aligned: true,
            duration_s: None,
            loops: flags.loops,
            timer: TimerMode::AbsNanosleep,
            clock: ClockId::Monotonic,
            hold_cpu_dma_latency: r.dma_latency_line,
            break_above_us: flags.breaktrace,
            threshold_us: None,
            worst_n: 0,
            linear_max_us: limit_us.saturating_sub(1) as u32,
            loads: Vec::new(),
            trace: "off".into(),
            tags: Default::default(),
        },
        system,
        hygiene: Hygiene {
            cpu_dma_latency_us: r.dma_latency_line.then_some(0),
            notes: vec!["hygiene not recorded by cyclictest".into()],
            ..Default::default()
        },
        threads,
        overruns: 0,
        stats,
        histogram: merged,
        loads: Vec::new(),
        attribution: None,
        bound: None,
        trace_file: None,
        warnings,
        tags: [("source".to_string(), "cyclictest".to_string())]
            .into_iter()
            .collect(),
        bench: None,
        checkpoint: None,
    })
}
