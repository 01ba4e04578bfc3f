//! Results from elsewhere into the RunRecord model: rtscope's own record JSON (a fallback file
//! written when the database was unreachable) as it is, and cyclictest's outputs — its `-h`/`-H`
//! histogram text, `-v` per-sample lines, `-q` status lines and `--json` — converted, so old
//! results can be compared with new ones.

use crate::cyclictest::{self as ct, CtResult};
use rtscope_model::histogram::LinearHistogram;
use rtscope_model::{
    EndReason, Histogram, Hygiene, Policy, RunConfig, RunRecord, Stats, SystemInfo, ThreadResult,
};

/// What a file holds, when the user says so (`rtscope import cyclictest|run FILE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Cyclictest,
    Run,
}

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "cyclictest" => Some(Kind::Cyclictest),
            "run" => Some(Kind::Run),
            _ => None,
        }
    }
}

/// A result file's text as a RunRecord. Without `kind` the content decides: JSON with a
/// `schema_version` is an rtscope record, other JSON is cyclictest `--json`, text is one of
/// cyclictest's text outputs. A converted record gets `id` and `started_at`.
pub fn record(
    text: &str,
    kind: Option<Kind>,
    source: &str,
    id: String,
    started_at: String,
) -> Result<RunRecord, String> {
    let is_json = text.trim_start().starts_with('{');
    let is_run = is_json && text.contains("\"schema_version\"");
    let ct = match (kind, is_json, is_run) {
        (Some(Kind::Run), _, _) | (None, true, true) => {
            return crate::json::parse_run_record(text).map_err(|e| e.to_string())
        }
        (_, true, _) => ct::parse_json(text),
        (_, false, _) => match ct::text_kind(text) {
            ct::TextKind::Verbose => ct::parse_verbose(text),
            ct::TextKind::SummaryOnly => ct::parse_summary(text),
            _ => ct::parse_histogram(text),
        },
    }
    .map_err(|e| e.to_string())?;
    from_cyclictest(&ct, source, id, started_at)
}

/// cyclictest's numbers are whole µs (truncated). Each bucket `u` is recorded at `u·1000` ns;
/// the exact min/max of its footer are kept; overflow samples (≥ the histogram size) have unknown
/// values between the limit and the max: one is recorded at the max, the rest at the limit, and
/// the record says so.
pub fn from_cyclictest(
    r: &CtResult,
    source: &str,
    id: String,
    started_at: String,
) -> Result<RunRecord, String> {
    // Status lines alone (`-q`, or --json without -h): the per-thread min/avg/max and cycle
    // counts are kept as exact statistics; there is no distribution to rebuild.
    let summary_only = r.hist_size.is_none() && r.threads.iter().all(|t| t.counts.is_empty());
    let flags = r
        .cmdline
        .as_deref()
        .and_then(|c| {
            let argv: Vec<String> = c.split_whitespace().skip(1).map(String::from).collect();
            crate::cyclictest_args::parse(&argv).ok()
        })
        .unwrap_or_default();
    let limit_us = r.hist_size.unwrap_or(0) as u64;
    let mut warnings = vec![format!(
        "imported from cyclictest output {source}: latencies are whole microseconds (truncated), recorded at the bucket's lower edge"
    )];
    if summary_only {
        warnings[0] = format!(
            "imported from cyclictest output {source}: status lines only (min/avg/max and cycles per thread, whole microseconds): no histogram, no percentiles; re-run cyclictest with -h N, -v or --json for the distribution"
        );
    }
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
        // Sparse: a thread costs what it holds (a `-q` thread, no bucket at all).
        let mut h = Histogram::sparse();
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
        // cyclictest says -1 for a thread not pinned to a CPU; a CPU number is a u32.
        let cpu = match t.cpu {
            None => t.index,
            Some(c) if c < 0 => t.index,
            Some(c) => u32::try_from(c).map_err(|_| {
                format!(
                    "thread {}: cpu {c} out of range (-1..={})",
                    t.index,
                    u32::MAX
                )
            })?,
        };
        threads.push(ThreadResult {
            index: t.index,
            cpu,
            tid: t.tid.unwrap_or(0),
            observed_policy: "unknown".into(),
            observed_priority: flags.prio as i32,
            cycles: t.cycles,
            overruns: 0,
            stats: if summary_only {
                summary_stats(t.cycles, t.min_us, t.avg_us, t.max_us)
            } else {
                Stats::from_histogram(&h)
            },
            histogram: h,
            linear: lin,
            worst: Vec::new(),
            above_threshold: Vec::new(),
            above_threshold_dropped: 0,
        });
    }
    let policy = match (
        flags.policy.as_deref(),
        r.summary_priority.unwrap_or(flags.prio),
    ) {
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
    let stats = if summary_only {
        let n = rtscope_model::limits::checked_sum(
            threads.iter().map(|t| t.stats.samples),
            "C (the threads' cycle counts)",
        )?;
        let weighted: f64 = threads
            .iter()
            .map(|t| t.stats.samples as f64 * t.stats.avg_ns.unwrap_or(0.0))
            .sum();
        Stats {
            samples: n,
            min_ns: threads.iter().filter_map(|t| t.stats.min_ns).min(),
            max_ns: threads.iter().filter_map(|t| t.stats.max_ns).max(),
            avg_ns: (n > 0).then(|| weighted / n as f64),
            ..Default::default()
        }
    } else {
        Stats::from_histogram(&merged)
    };
    Ok(RunRecord {
        schema_version: rtscope_model::SCHEMA_VERSION,
        id,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        started_at,
        wall_duration_s: 0.0,
        end_reason: EndReason::Completed,
        interrupted: false,
        verb: "import-cyclictest".into(),
        cmdline: r
            .cmdline
            .as_deref()
            .map(|c| c.split_whitespace().map(String::from).collect())
            .unwrap_or_else(|| vec![format!("(cyclictest output {source})")]),
        system,
        hygiene: Hygiene {
            cpu_dma_latency_us: r.dma_latency_line.then_some(0),
            notes: vec!["hygiene not recorded by cyclictest".into()],
            ..Default::default()
        },
        loads: Vec::new(),
        trace_file: None,
        // Every warning of an import is about what the cyclictest output could not carry.
        warnings: warnings
            .into_iter()
            .map(|w| rtscope_model::Warning::new(rtscope_model::WarningCode::Import, w))
            .collect(),
        tags: [("source".to_string(), "cyclictest".to_string())]
            .into_iter()
            .collect(),
        checkpoint: None,
        kind: rtscope_model::RunKind::Measurement(Box::new(rtscope_model::Measurement {
            config: RunConfig {
                cpus: threads.iter().map(|t| t.cpu).collect(),
                policy,
                priority: if policy == Policy::Other {
                    0
                } else {
                    r.summary_priority.unwrap_or(flags.prio)
                },
                interval_us: r.summary_interval_us.unwrap_or(flags.interval).max(1),
                distance_us: flags.distance,
                aligned: true,
                loops: flags.loops,
                hold_cpu_dma_latency: r.dma_latency_line,
                break_above_us: flags.breaktrace,
                worst_n: 0,
                linear_max_us: limit_us.saturating_sub(1) as u32,
                ..Default::default()
            },
            threads,
            stats,
            histogram: merged,
            ..Default::default()
        })),
    })
}

/// Statistics from a status line: exact count, min, average and max; nothing else is known.
fn summary_stats(cycles: u64, min_us: u64, avg_us: f64, max_us: u64) -> Stats {
    let some = cycles > 0;
    Stats {
        samples: cycles,
        min_ns: some.then_some(min_us * 1000),
        max_ns: some.then_some(max_us * 1000),
        avg_ns: some.then_some(avg_us * 1000.0),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn import(text: &str, kind: Option<Kind>) -> Result<RunRecord, String> {
        record(text, kind, "f", "id".into(), "now".into())
    }

    fn m(r: &RunRecord) -> &rtscope_model::Measurement {
        r.measurement().expect("an import is a measurement")
    }

    #[test]
    fn status_lines_keep_exact_statistics_only() {
        let r = import(&fixture("cyclictest-q.txt"), None).unwrap();
        assert_eq!((r.id.as_str(), r.started_at.as_str()), ("id", "now"));
        assert_eq!(m(&r).threads.len(), 2);
        assert_eq!(
            (m(&r).stats.samples, m(&r).stats.max_ns),
            (174, Some(140_000))
        );
        assert!(m(&r).stats.percentiles.is_empty() && m(&r).histogram.count() == 0);
        assert_eq!(
            (m(&r).config.policy, m(&r).config.priority),
            (Policy::Fifo, 90)
        );
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].message.contains("status lines only"));
        assert!(r.hygiene.cpu_dma_latency_us == Some(0));
    }

    #[test]
    fn histograms_keep_their_overflows_and_say_so() {
        let r = import(&fixture("cyclictest-h20-H.txt"), None).unwrap();
        let j = import(&fixture("cyclictest-h20-H.json"), None).unwrap();
        for r in [&r, &j] {
            assert_eq!(m(r).stats.max_ns, Some(12_784_000));
            assert_eq!(m(r).config.linear_max_us, 19);
            assert!(r
                .warnings
                .iter()
                .any(|w| w.message.contains("overflow samples (≥ 20 us)")));
        }
        assert_eq!(r.stats().samples, j.stats().samples);
        let v = import(&fixture("cyclictest-v-l50.txt"), None).unwrap();
        assert_eq!(v.stats().samples, 83);
    }

    #[test]
    fn the_kind_decides_when_given() {
        let q = fixture("cyclictest-q.txt");
        assert!(import(&q, Some(Kind::Run)).is_err());
        assert_eq!(Kind::parse("run"), Some(Kind::Run));
        assert_eq!(Kind::parse("cyclictest"), Some(Kind::Cyclictest));
        assert_eq!(Kind::parse("x.txt"), None);
        let own = crate::json::run_record(&import(&q, None).unwrap());
        let back = import(&own, None).unwrap();
        assert_eq!((back.id.as_str(), back.stats().samples), ("id", 174));
        assert!(import("garbage", None).is_err());
    }
}
