//! The RunRecord: everything one run produced, as stored and exported.

use crate::{Histogram, LoadReport, RunConfig, Stats, SystemInfo};
use serde::{Deserialize, Serialize};

/// One sample worth keeping individually (worst N, above threshold, break).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SampleRef {
    pub cpu: u32,
    pub tid: u32,
    /// 0-based cycle number of the thread.
    pub cycle: u64,
    /// Planned wake-up, ns on the run's clock.
    pub expected_ns: u64,
    pub latency_ns: u64,
}

/// Every sample of a thread, for traced runs and `--raw` files: planned wake-up and latency on
/// CLOCK_MONOTONIC (so they line up with kernel event timestamps).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RawSample {
    pub cpu: u32,
    pub tid: u32,
    pub cycle: u64,
    pub expected_ns: u64,
    pub latency_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct Hygiene {
    pub mlockall: bool,
    pub prefaulted_stack_bytes: u64,
    pub prefaulted_heap_bytes: u64,
    /// Value written to /dev/cpu_dma_latency and held for the run (None = not held).
    pub cpu_dma_latency_us: Option<u32>,
    /// Timer slack applied to SCHED_OTHER threads (1 ns), None when not applicable.
    pub timer_slack_ns: Option<u64>,
    pub notes: Vec<String>,
    /// Peak resident set size of the rtscope process over the run (getrusage ru_maxrss).
    #[serde(default)]
    pub peak_rss_kib: Option<u64>,
    /// A run traced in bursts (`--trace-bursts`): the bursts that ran and the time they traced.
    /// Only samples inside a burst are explained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced_bursts: Option<TracedBursts>,
    /// A `--bound` run: the kernel-side measurement its thread terms came from (the preemptirq
    /// events, reduced in eBPF or read through tracefs) as `trace thread-vars` documents it —
    /// per CPU the terms, the events lost (queue and nesting overflows) and where the longest
    /// D_POID was; the programs' recursion misses; the tracefs reader's totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_terms: Option<crate::thread_vars::ThreadVarsRun>,
    /// Samples the measurement threads' rings could not hand to the streaming analysis in time
    /// (the rings were full): in the histograms, but not explained, not in `--raw` and not in
    /// the trace file.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ring_dropped_samples: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the bursts of a run traced in bursts covered.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct TracedBursts {
    /// Bursts that ran (the last one may have been cut by the end of the run).
    pub count: u32,
    /// Time the bursts traced, summed.
    pub traced_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ThreadResult {
    pub index: u32,
    pub cpu: u32,
    pub tid: u32,
    /// Policy as observed from the kernel during the run (sched_getattr).
    pub observed_policy: String,
    pub observed_priority: i32,
    pub cycles: u64,
    /// Periods missed entirely (the thread woke after one or more whole further periods).
    pub overruns: u64,
    pub histogram: Histogram,
    pub linear: crate::histogram::LinearHistogram,
    pub stats: Stats,
    pub worst: Vec<SampleRef>,
    pub above_threshold: Vec<SampleRef>,
    /// Samples above threshold beyond the stored cap.
    pub above_threshold_dropped: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    #[default]
    Completed,
    /// SIGINT/SIGTERM: results are partial.
    Interrupted,
    /// `--break-above`: stopped at the first sample over the threshold.
    BreakAbove,
    Error,
    /// An interim record written while the run was going (`--checkpoint`). Stored and still
    /// this: the run never finished (killed, out of memory, power lost) or is still running;
    /// `checkpoint` says when it was written.
    Checkpoint,
}

/// When an interim record was written (`EndReason::Checkpoint`), and by whom, so that `runs` and
/// `show` can tell a run that died after its last checkpoint from one still going.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct CheckpointInfo {
    /// 1 for the first checkpoint of the run.
    pub number: u32,
    /// RFC 3339, UTC.
    pub written_at: String,
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// The writing process and host (a run is "still running" only if both match a live
    /// rtscope process).
    pub pid: u32,
    pub hostname: String,
    /// Seconds between checkpoints.
    pub interval_s: f64,
}

/// What a latency measurement (`measure`, `run`, `cyclictest`, an imported cyclictest result)
/// produced: its configuration, every thread's histogram and statistics, the attribution of its
/// tail and its bound.
///
/// `Default`: an empty measurement (no thread, no sample, [`RunConfig::default`]) for a maker
/// that fills what it has and leaves the analyses it did not run (`..Default::default()`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Measurement {
    pub config: RunConfig,
    /// `--break-above`: the sample that stopped the run.
    pub break_sample: Option<SampleRef>,
    pub threads: Vec<ThreadResult>,
    pub histogram: Histogram,
    pub stats: Stats,
    pub overruns: u64,
    pub attribution: Option<crate::attribution::AttributionSummary>,
    pub bound: Option<crate::bound::BoundReport>,
    /// `measure --probe timerlat`: the kernel's timerlat samples, IRQ and thread side per CPU
    /// (the thread side is also `threads`, as every measurement's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timerlat: Option<crate::timerlat::TimerlatResult>,
    /// The tail model (EVT on block maxima, docs/tail.md): absent when the samples were not
    /// streamed to the session (an unstored, untraced, quiet run) or the record predates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<crate::tail::TailReport>,
    /// `--until-stable`: what ended the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable: Option<crate::tail::StableEnd>,
    /// `rtscope watch`: the watched threads' own figures (their histograms of the activation
    /// latency are `threads`, as every measurement's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<crate::watch::WatchResult>,
}

/// What `rtscope trace record` captured (the events themselves are in the record's
/// `trace_file`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TraceCapture {
    /// `bpf` or `tracefs`.
    pub mechanism: String,
    /// `relevant` or `all`.
    pub keep: String,
    pub cpus: Vec<u32>,
    pub duration_s: f64,
    pub events: u64,
    pub events_per_kind: std::collections::BTreeMap<String, u64>,
    pub lost_events: u64,
    pub lost_per_cpu: std::collections::BTreeMap<u32, u64>,
    /// Events the relevance filter left out (`keep: relevant`).
    pub filtered_events: u64,
    pub file_bytes: u64,
    /// Bytes the kernel wrote into its ring buffers for the capture.
    pub kernel_bytes: u64,
    pub notes: Vec<String>,
}

/// A run of background loads alone (`rtscope load`): their figures are the record's `loads`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LoadOnly {
    /// Scheduling policy of the load processes (`other`, `fifo:PRIO`).
    pub policy: String,
}

/// The verb's own result: one variant per kind of run. A record is an envelope (id, times,
/// system, hygiene, loads, warnings, tags) around exactly one of these.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// `measure`, `run`, `cyclictest`, `import`.
    Measurement(Box<Measurement>),
    /// `taskset run`.
    Taskset(Box<crate::taskset::TasksetResult>),
    /// `taskset sweep`: a whole load sweep (sets × policies) summarised per point.
    TasksetSweep(Box<crate::taskset::SweepResult>),
    /// `rtscope rhealstone` (Kar & Porter 1989; heursch-2001 §3.1).
    Rhealstone(Box<crate::bench::RhealstoneResult>),
    /// `rtscope sched-scale` (heursch-2001 §4, Table 3).
    SchedScale(Box<crate::bench::SchedScaleResult>),
    /// `rtscope pdlt` (heursch-2001 §2.5–2.7, Figs. 3–8).
    Pdlt(Box<crate::bench::PdltResult>),
    /// `rtscope practise` (lelli-2014 thesis §2.3, PRAcTISE).
    Practise(Box<crate::practise::PractiseResult>),
    /// `rtscope practise kernel` (thesis §2.3.9: the kernel's own cpudl/cpupri call durations).
    PractiseKernel(Box<crate::practise::PractiseKernelResult>),
    /// `rtscope mbwi` (Lelli 2014 thesis Ch. 4: bandwidth inheritance, §4.4.2–4.4.3).
    Mbwi(Box<crate::mbwi::MbwiResult>),
    /// `rtscope trace record`.
    TraceRecord(Box<TraceCapture>),
    /// `rtscope load`.
    Load(Box<LoadOnly>),
    /// `rtscope noise` (the kernel's osnoise tracer, as `rtla osnoise top`).
    Noise(Box<crate::noise::NoiseResult>),
}

impl RunKind {
    /// The variant's name as written in the JSON (`measurement`, `rhealstone`, …).
    pub fn name(&self) -> &'static str {
        match self {
            RunKind::Measurement(_) => "measurement",
            RunKind::Taskset(_) => "taskset",
            RunKind::TasksetSweep(_) => "taskset_sweep",
            RunKind::Rhealstone(_) => "rhealstone",
            RunKind::SchedScale(_) => "sched_scale",
            RunKind::Pdlt(_) => "pdlt",
            RunKind::Practise(_) => "practise",
            RunKind::PractiseKernel(_) => "practise_kernel",
            RunKind::Mbwi(_) => "mbwi",
            RunKind::TraceRecord(_) => "trace_record",
            RunKind::Load(_) => "load",
            RunKind::Noise(_) => "noise",
        }
    }
}

/// One run of any verb, as stored and exported (schema version 2). Version-1 records (the
/// measurement fields at the top level, other verbs' results in `bench`) read back through
/// [`crate::record_v1`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub schema_version: u32,
    pub id: String,
    pub tool_version: String,
    /// The verb that produced the record (`measure`, `run`, `rhealstone`, …).
    pub verb: String,
    /// Exact argv, passwords masked (`crate::secrets`).
    pub cmdline: Vec<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub wall_duration_s: f64,
    pub end_reason: EndReason,
    pub interrupted: bool,
    pub system: SystemInfo,
    pub hygiene: Hygiene,
    /// Background loads that ran, with their own figures.
    pub loads: Vec<LoadReport>,
    pub trace_file: Option<String>,
    /// Each with a stable code (crate::warning); plain strings of older records read back too.
    pub warnings: Vec<crate::warning::Warning>,
    pub tags: std::collections::BTreeMap<String, String>,
    /// Set on interim records (`end_reason: checkpoint`) and kept on the final record of a run
    /// that wrote checkpoints (the last one written before the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointInfo>,
    /// The verb's own result.
    pub kind: RunKind,
}

impl RunRecord {
    /// The latency measurement, for the kinds that are one.
    pub fn measurement(&self) -> Option<&Measurement> {
        match &self.kind {
            RunKind::Measurement(m) => Some(m),
            _ => None,
        }
    }

    pub fn measurement_mut(&mut self) -> Option<&mut Measurement> {
        match &mut self.kind {
            RunKind::Measurement(m) => Some(m),
            _ => None,
        }
    }

    /// The latency statistics of a measurement; empty for other kinds.
    pub fn stats(&self) -> Stats {
        self.measurement()
            .map(|m| m.stats.clone())
            .unwrap_or_default()
    }

    /// The scheduling policy the run's measured work used, where one applies: the measurement
    /// threads', a task set's, a benchmark's (SCHED_FIFO) or the loads'.
    pub fn policy_name(&self) -> String {
        match &self.kind {
            RunKind::Measurement(m) => m.config.policy.name().into(),
            RunKind::Taskset(t) => t.config.policy.clone(),
            RunKind::TasksetSweep(t) => t.config.policies.join(","),
            RunKind::Rhealstone(_)
            | RunKind::SchedScale(_)
            | RunKind::Pdlt(_)
            | RunKind::Mbwi(_) => "fifo".into(),
            RunKind::Practise(_)
            | RunKind::PractiseKernel(_)
            | RunKind::TraceRecord(_)
            | RunKind::Noise(_) => "-".into(),
            RunKind::Load(l) => l.policy.clone(),
        }
    }

    /// The loads of the run by name: those a measurement was asked for, else those that ran.
    pub fn load_names(&self) -> Vec<String> {
        match self.measurement() {
            Some(m) => m.config.loads.clone(),
            None => self.loads.iter().map(|l| l.kind.clone()).collect(),
        }
    }

    /// Periods missed (measurement) or jobs past their deadline (task set).
    pub fn overruns(&self) -> u64 {
        match &self.kind {
            RunKind::Measurement(m) => m.overruns,
            RunKind::Taskset(t) => t.total_misses,
            RunKind::TasksetSweep(t) => t.runs.iter().map(|r| r.misses).sum(),
            _ => 0,
        }
    }
}

/// Why a text is not a run record this version can read.
#[derive(Debug, PartialEq)]
pub enum DecodeError {
    /// Malformed JSON, a missing or mistyped field (serde's message).
    Parse(String),
    /// Written by a newer rtscope.
    TooNew { found: u64, supported: u32 },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Parse(e) => write!(f, "{e}"),
            DecodeError::TooNew { found, supported } => write!(
                f,
                "schema_version {found} is newer than this rtscope understands ({supported})"
            ),
        }
    }
}

/// A run record of any schema version this rtscope knows, as the current [`RunRecord`]: version
/// 1 records are upgraded ([`crate::record_v1`]). Parsed straight from the text, never through
/// `serde_json::Value` (which cannot hold the histograms' u128 sums). The caller bounds the
/// text's size and checks its claims first (`crate::limits::check_run_record_json`).
pub fn decode_run_record(text: &str) -> Result<RunRecord, DecodeError> {
    #[derive(Deserialize)]
    struct Version {
        schema_version: Option<u64>,
    }
    crate::json_keys::reject_duplicate_keys(text).map_err(DecodeError::Parse)?;
    let v: Version = serde_json::from_str(text).map_err(|e| DecodeError::Parse(e.to_string()))?;
    match v.schema_version {
        None => Err(DecodeError::Parse("no schema_version".into())),
        Some(1) => serde_json::from_str::<crate::record_v1::RecordV1>(text)
            .map_err(|e| DecodeError::Parse(e.to_string()))?
            .upgrade()
            .map_err(DecodeError::Parse),
        Some(found) if found > crate::SCHEMA_VERSION as u64 => Err(DecodeError::TooNew {
            found,
            supported: crate::SCHEMA_VERSION,
        }),
        Some(2) => serde_json::from_str(text).map_err(|e| DecodeError::Parse(e.to_string())),
        Some(found) => Err(DecodeError::Parse(format!(
            "schema_version {found} was never written by rtscope (1..={})",
            crate::SCHEMA_VERSION
        ))),
    }
}
