//! Reading records of schema version 1, where a measurement's fields sat at the top level of
//! every record (verbs without measurement threads left them at placeholder values) and other
//! verbs' results were in `bench`, an internally tagged enum. Read only: every record is written
//! as version 2 ([`crate::RunRecord`]) and a version-1 record becomes one on reading.

use crate::record::{
    CheckpointInfo, EndReason, Hygiene, LoadOnly, Measurement, RunKind, RunRecord, SampleRef,
    ThreadResult, TraceCapture,
};
use crate::{ClockId, DeadlineParams, Histogram, LoadReport, Policy, RunConfig, Stats, SystemInfo};
use crate::{TimerMode, Warning};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct ConfigV1 {
    verb: String,
    cmdline: Vec<String>,
    cpus: Vec<u32>,
    policy: Policy,
    priority: u32,
    nice: i32,
    deadline: Option<DeadlineParams>,
    interval_us: u64,
    distance_us: u64,
    #[serde(default)]
    aligned: bool,
    duration_s: Option<f64>,
    loops: Option<u64>,
    timer: TimerMode,
    clock: ClockId,
    hold_cpu_dma_latency: bool,
    break_above_us: Option<u64>,
    threshold_us: Option<u64>,
    worst_n: usize,
    linear_max_us: u32,
    loads: Vec<String>,
    trace: String,
    tags: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum BenchV1 {
    Other {
        name: String,
        data: serde_json::Value,
    },
    Taskset(Box<crate::taskset::TasksetResult>),
    Rhealstone(Box<crate::bench::RhealstoneResult>),
    SchedScale(Box<crate::bench::SchedScaleResult>),
    Pdlt(Box<crate::bench::PdltResult>),
    Practise(Box<crate::practise::PractiseResult>),
    PractiseKernel(Box<crate::practise::PractiseKernelResult>),
    Mbwi(Box<crate::mbwi::MbwiResult>),
}

#[derive(Deserialize)]
pub(crate) struct RecordV1 {
    id: String,
    tool_version: String,
    started_at: String,
    wall_duration_s: f64,
    end_reason: EndReason,
    interrupted: bool,
    break_sample: Option<SampleRef>,
    config: ConfigV1,
    system: SystemInfo,
    hygiene: Hygiene,
    threads: Vec<ThreadResult>,
    histogram: Histogram,
    stats: Stats,
    overruns: u64,
    loads: Vec<LoadReport>,
    attribution: Option<crate::attribution::AttributionSummary>,
    bound: Option<crate::bound::BoundReport>,
    trace_file: Option<String>,
    warnings: Vec<Warning>,
    tags: BTreeMap<String, String>,
    #[serde(default)]
    bench: Option<BenchV1>,
    #[serde(default)]
    checkpoint: Option<CheckpointInfo>,
}

impl RecordV1 {
    /// The same run as a version-2 record: the envelope's fields carried over, the verb's
    /// result as its kind. A measurement keeps its configuration; the placeholder configuration
    /// of the other verbs is dropped. Tags: the config's, overridden by the record's own (as
    /// version 1 read them).
    pub(crate) fn upgrade(self) -> Result<RunRecord, String> {
        let c = self.config;
        let mut tags = c.tags;
        tags.extend(self.tags);
        let kind = match self.bench {
            Some(BenchV1::Other { name, data }) if name == "trace_record" => {
                let t: TraceCapture = serde_json::from_value(data)
                    .map_err(|e| format!("bench (trace_record): {e}"))?;
                RunKind::TraceRecord(Box::new(t))
            }
            Some(BenchV1::Other { name, .. }) => {
                return Err(format!("bench: unknown result kind '{name}'"))
            }
            Some(BenchV1::Taskset(t)) => RunKind::Taskset(t),
            Some(BenchV1::Rhealstone(r)) => RunKind::Rhealstone(r),
            Some(BenchV1::SchedScale(r)) => RunKind::SchedScale(r),
            Some(BenchV1::Pdlt(r)) => RunKind::Pdlt(r),
            Some(BenchV1::Practise(r)) => RunKind::Practise(r),
            Some(BenchV1::PractiseKernel(r)) => RunKind::PractiseKernel(r),
            Some(BenchV1::Mbwi(r)) => RunKind::Mbwi(r),
            None if c.verb == "load" => RunKind::Load(Box::new(LoadOnly {
                policy: c.policy.name().into(),
            })),
            None => RunKind::Measurement(Box::new(Measurement {
                config: RunConfig {
                    cpus: c.cpus,
                    policy: c.policy,
                    priority: c.priority,
                    nice: c.nice,
                    deadline: c.deadline,
                    interval_us: c.interval_us,
                    distance_us: c.distance_us,
                    aligned: c.aligned,
                    duration_s: c.duration_s,
                    loops: c.loops,
                    timer: c.timer,
                    clock: c.clock,
                    hold_cpu_dma_latency: c.hold_cpu_dma_latency,
                    break_above_us: c.break_above_us,
                    threshold_us: c.threshold_us,
                    worst_n: c.worst_n,
                    linear_max_us: c.linear_max_us,
                    loads: c.loads,
                    trace: c.trace,
                    trace_bursts: None,
                    housekeeping_cpus: Vec::new(),
                },
                break_sample: self.break_sample,
                threads: self.threads,
                histogram: self.histogram,
                stats: self.stats,
                overruns: self.overruns,
                attribution: self.attribution,
                bound: self.bound,
                timerlat: None,
                tail: None,
                stable: None,
                watch: None,
            })),
        };
        Ok(RunRecord {
            schema_version: crate::SCHEMA_VERSION,
            id: self.id,
            tool_version: self.tool_version,
            verb: c.verb,
            cmdline: c.cmdline,
            started_at: self.started_at,
            wall_duration_s: self.wall_duration_s,
            end_reason: self.end_reason,
            interrupted: self.interrupted,
            system: self.system,
            hygiene: self.hygiene,
            loads: self.loads,
            trace_file: self.trace_file,
            warnings: self.warnings,
            tags,
            checkpoint: self.checkpoint,
            kind,
        })
    }
}
