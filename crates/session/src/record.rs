//! The RunRecord of a run: from the threads' own recorders at the end, or from what they
//! published so far at a checkpoint. One builder for both, so an interim record and the final one have the same shape.

use rtscope_model::{
    EndReason, Histogram, Measurement, Policy, RunConfig, RunKind, RunRecord, SampleRef, Stats,
    SystemInfo, ThreadResult,
};
use rtscope_model::{Warning, WarningCode, Warnings};
use rtscope_probe::recorder::Recorder;

/// One thread as the builder needs it.
pub struct ThreadIn<'a> {
    pub index: u32,
    /// The CPU reported: the pinned one, or the last one for unpinned DEADLINE threads.
    pub cpu: u32,
    pub recorder: &'a Recorder,
    pub observed_policy: String,
    pub observed_priority: i32,
    pub error: Option<String>,
}

pub struct RecordIn<'a> {
    pub id: &'a str,
    pub verb: &'a str,
    pub cmdline: &'a [String],
    pub tags: &'a std::collections::BTreeMap<String, String>,
    pub config: &'a RunConfig,
    pub warnings: &'a [Warning],
    pub system: SystemInfo,
    pub hygiene: rtscope_model::Hygiene,
    pub started_at: String,
    pub wall_s: f64,
    pub end_reason: EndReason,
    pub break_sample: Option<SampleRef>,
    /// "SIGINT", … when the run was interrupted.
    pub stop_signal: Option<&'static str>,
}

pub fn build(r: RecordIn<'_>, threads: &[ThreadIn<'_>]) -> RunRecord {
    let mut warnings = r.warnings.to_vec();
    let mut merged = Histogram::new();
    let mut overruns = 0;
    let mut results = Vec::with_capacity(threads.len());
    let expected_policy = r.config.policy.name();
    for t in threads {
        let rec = t.recorder;
        merged.merge(&rec.hist);
        overruns += rec.overruns;
        if t.observed_policy != expected_policy {
            warnings.warn(
                WarningCode::NotRealtime,
                format!(
                    "thread on CPU {} ran under {} although {} was requested",
                    t.cpu, t.observed_policy, expected_policy
                ),
            );
        }
        if let Some(e) = &t.error {
            warnings.warn(
                WarningCode::ThreadStopped,
                format!("thread on CPU {} stopped early: {e}", t.cpu),
            );
        }
        results.push(ThreadResult {
            index: t.index,
            cpu: t.cpu,
            tid: rec.tid,
            observed_policy: t.observed_policy.clone(),
            observed_priority: t.observed_priority,
            cycles: rec.cycles,
            overruns: rec.overruns,
            stats: Stats::from_histogram(&rec.hist),
            worst: rec.worst(),
            above_threshold: rec.above.clone(),
            above_threshold_dropped: rec.above_dropped,
            linear: rec.linear.clone(),
            histogram: rec.hist.clone(),
        });
    }
    let stats = Stats::from_histogram(&merged);
    if overruns > 0 {
        warnings.warn(WarningCode::Overruns, format!(
            "{overruns} periods were missed entirely (overruns); they are counted here, not folded into latency"
        ));
    }
    if merged.clamped() > 0 {
        warnings.warn(
            WarningCode::Other,
            format!(
                "{} samples above 100 s were clamped in the histogram (max is exact)",
                merged.clamped()
            ),
        );
    }
    if let Some(h) = &r.system.hypervisor {
        let steal_ms = r.system.steal_during_run_ns.unwrap_or(0) as f64 / 1e6;
        warnings.warn(WarningCode::Hypervisor, format!(
            "running under a hypervisor ({h}): host preemption appears as latency with no guest cause; steal time on the measured CPUs during the run: {steal_ms:.1} ms"
        ));
    }
    if stats
        .percentiles
        .iter()
        .any(|p| !p.reliable && p.percent <= 99.99)
    {
        warnings.warn(
            WarningCode::FewSamples,
            format!(
                "only {} samples: percentiles marked * have fewer than 10 samples above them",
                stats.samples
            ),
        );
    }
    if let Some(sig) = r.stop_signal {
        warnings.warn(
            WarningCode::Interrupted,
            format!("interrupted by {sig}: partial results"),
        );
    }
    let interrupted = matches!(r.end_reason, EndReason::Interrupted);
    RunRecord {
        schema_version: rtscope_model::SCHEMA_VERSION,
        id: r.id.to_string(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        verb: r.verb.to_string(),
        cmdline: r.cmdline.to_vec(),
        started_at: r.started_at,
        wall_duration_s: r.wall_s,
        end_reason: r.end_reason,
        interrupted,
        system: r.system,
        hygiene: r.hygiene,
        loads: Vec::new(),
        trace_file: None,
        warnings,
        tags: r.tags.clone(),
        checkpoint: None,
        kind: RunKind::Measurement(Box::new(Measurement {
            config: r.config.clone(),
            break_sample: r.break_sample,
            threads: results,
            histogram: merged,
            stats,
            overruns,
            ..Default::default()
        })),
    }
}

/// The CPU a thread is reported on.
pub fn reported_cpu(policy: Policy, pinned: u32, last: u32) -> u32 {
    if policy == Policy::Deadline {
        last
    } else {
        pinned
    }
}

/// RFC 3339 UTC timestamp of a SystemTime, to the second ("2026-11-28T02:15:00Z"): the run id
/// takes its digits. Times before 1970 read as the epoch; past year 9999 (where RFC 3339 ends) as
/// its last second.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    const LAST_RFC3339_SECOND: u64 = 253_402_300_799; // 9999-12-31T23:59:59Z
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
        .min(LAST_RFC3339_SECOND);
    time::OffsetDateTime::from_unix_timestamp(secs as i64)
        .ok()
        .and_then(|d| {
            d.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string())
}

/// Peak resident set of this process, KiB.
pub fn peak_rss_kib() -> Option<u64> {
    rtscope_sys::mem::usage_self().ok().map(|u| u.max_rss_kib)
}

/// Current resident set of this process, KiB (/proc/self/statm).
pub fn current_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    let page = rtscope_sys::mem::page_size().max(4096);
    Some(pages * page / 1024)
}

/// A run id: UTC time to the second plus 32 random bits; sortable, and unique across machines.
pub fn new_run_id() -> String {
    let now = std::time::SystemTime::now();
    let ts: String = rfc3339(now)
        .chars()
        .filter(|c| c.is_ascii_digit())
        .collect();
    format!("{}-{:08x}", &ts[2..14], rand::random::<u32>())
}

/// What a verb that runs work without measurement threads (benchmarks, task sets, trace
/// captures, loads) knows about its run besides when it ran; [`crate::tool::Work::record`] puts
/// it in the one RunRecord envelope every verb stores.
pub struct WorkInfo {
    pub verb: String,
    /// The CPUs the work ran on (the system capture reads their settings).
    pub cpus: Vec<u32>,
    /// Stopped early (a stop signal, or the work's own account of one).
    pub interrupted: bool,
    pub hygiene: rtscope_model::Hygiene,
    pub warnings: Vec<Warning>,
    pub tags: std::collections::BTreeMap<String, String>,
    /// Background loads that ran, with their own figures (`rtscope load` runs only these).
    pub loads: Vec<rtscope_model::LoadReport>,
    /// The verb's own result.
    pub kind: RunKind,
}

/// The RunRecord envelope around a verb's result: this process's command line (passwords
/// masked), the system as it is now on the work's CPUs, the warnings sorted and deduplicated.
pub fn work_record(started: std::time::SystemTime, wall_s: f64, w: WorkInfo) -> RunRecord {
    let mut warnings = w.warnings;
    warnings.sort();
    warnings.dedup();
    RunRecord {
        schema_version: rtscope_model::SCHEMA_VERSION,
        id: new_run_id(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        verb: w.verb,
        cmdline: cmdline(),
        started_at: rfc3339(started),
        wall_duration_s: wall_s,
        end_reason: if w.interrupted {
            EndReason::Interrupted
        } else {
            EndReason::Completed
        },
        interrupted: w.interrupted,
        system: rtscope_probe::system::capture(&w.cpus),
        hygiene: w.hygiene,
        loads: w.loads,
        trace_file: None,
        warnings,
        tags: w.tags,
        checkpoint: None,
        kind: w.kind,
    }
}

static CMDLINE: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// The command line this process was given by its caller (the binary, once, before any work),
/// stored with every record; the library never reads the process's arguments itself.
pub fn set_cmdline(argv: &[String]) {
    let _ = CMDLINE.set(argv.to_vec());
}

/// The command line as it may be stored and shown: passwords masked
/// (`rtscope_model::secrets`); empty when the caller gave none.
pub fn cmdline() -> Vec<String> {
    rtscope_model::secrets::redact_argv(CMDLINE.get().map_or(&[][..], Vec::as_slice))
}
