//! Synthetic but complete [`RunRecord`]s for tests, the report's browser test and the store
//! throughput measurement. Deterministic: the same arguments give the same record. Nothing here
//! is ever presented as a measurement.

use rtscope_model::attribution::{
    AttributionSummary, CauseSummary, Segment, ThreadRan, WorstSample,
};
use rtscope_model::bound::BoundReport;
use rtscope_model::histogram::LinearHistogram;
use rtscope_model::*;
use std::collections::BTreeMap;

/// What a synthetic run looks like.
#[derive(Clone, Debug)]
pub struct Spec {
    pub id: String,
    pub started_at: String,
    pub hostname: String,
    pub kernel_release: String,
    pub policy: Policy,
    pub loads: Vec<String>,
    pub samples_per_cpu: u64,
    pub cpus: u32,
    /// Typical latency (ns); samples are base + exponential(mean = spread) + rare spikes.
    pub base_ns: u64,
    pub spread_ns: u64,
    pub seed: u64,
    pub tags: BTreeMap<String, String>,
    /// Fill attribution and bound sections too.
    pub with_analysis: bool,
}

impl Spec {
    pub fn new(id: &str, seed: u64) -> Spec {
        Spec {
            id: id.to_string(),
            started_at: format!("2026-11-{:02}T10:{:02}:00Z", 1 + seed % 28, seed % 60),
            hostname: "fixture-host".into(),
            kernel_release: "6.18.0-fixture".into(),
            policy: Policy::Fifo,
            loads: vec![],
            samples_per_cpu: 5_000,
            cpus: 2,
            base_ns: 3_000,
            spread_ns: 1_500,
            seed,
            tags: BTreeMap::new(),
            with_analysis: false,
        }
    }
}

/// The seeded generator of every fixture stream.
pub use rtscope_model::rng::Rng;

/// Latency samples of one CPU as described by `spec`.
pub fn samples(spec: &Spec, cpu: u32) -> Vec<u64> {
    let mut rng = Rng::new(spec.seed.wrapping_mul(31).wrapping_add(cpu as u64));
    (0..spec.samples_per_cpu)
        .map(|_| {
            let exp = -(rng.unit().ln()) * spec.spread_ns as f64;
            let spike = if rng.unit() < 0.001 {
                rng.unit() * 20.0 * spec.spread_ns as f64
            } else {
                0.0
            };
            spec.base_ns + (exp + spike) as u64
        })
        .collect()
}

pub fn record(spec: &Spec) -> RunRecord {
    let mut all = Histogram::new();
    let mut threads = Vec::new();
    for cpu in 0..spec.cpus {
        let xs = samples(spec, cpu);
        let mut h = Histogram::new();
        let mut lin = LinearHistogram::new(1000);
        let mut worst: Vec<SampleRef> = Vec::new();
        for (i, &x) in xs.iter().enumerate() {
            h.record(x);
            lin.record(x);
            worst.push(SampleRef {
                cpu,
                tid: 1000 + cpu,
                cycle: i as u64,
                expected_ns: 1_000_000 * i as u64,
                latency_ns: x,
            });
        }
        worst.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
        worst.truncate(5);
        all.merge(&h);
        threads.push(ThreadResult {
            index: cpu,
            cpu,
            tid: 1000 + cpu,
            observed_policy: spec.policy.name().to_string(),
            observed_priority: if spec.policy == Policy::Other { 0 } else { 95 },
            cycles: xs.len() as u64,
            overruns: 0,
            stats: Stats::from_histogram(&h),
            histogram: h,
            linear: lin,
            worst,
            above_threshold: vec![],
            above_threshold_dropped: 0,
        });
    }
    let mut cmdline = vec![
        "rtscope".to_string(),
        "measure".into(),
        "--policy".into(),
        spec.policy.name().into(),
    ];
    for l in &spec.loads {
        cmdline.push("--load".into());
        cmdline.push(l.clone());
    }
    let loads = spec
        .loads
        .iter()
        .map(|l| LoadReport {
            kind: l.clone(),
            params: BTreeMap::from([("workers".to_string(), "2".to_string())]),
            figures: BTreeMap::from([("ops_per_s".to_string(), 12_345.0 + spec.seed as f64)]),
            duration_s: 10.0,
            warnings: vec![],
        })
        .collect();
    let (attribution, bound) = if spec.with_analysis {
        (Some(attribution()), Some(bound(&threads)))
    } else {
        (None, None)
    };
    RunRecord {
        schema_version: SCHEMA_VERSION,
        id: spec.id.clone(),
        tool_version: "0.1.0-fixture".into(),
        started_at: spec.started_at.clone(),
        wall_duration_s: spec.samples_per_cpu as f64 / 1000.0,
        end_reason: EndReason::Completed,
        interrupted: false,
        verb: "measure".into(),
        cmdline,
        system: SystemInfo {
            hostname: spec.hostname.clone(),
            kernel_release: spec.kernel_release.clone(),
            kernel_version: "#1 SMP PREEMPT_DYNAMIC".into(),
            kernel_cmdline: "console=ttyS0 preempt=none".into(),
            preempt_model: "none".into(),
            preempt_model_source: "fixture".into(),
            clocksource: "kvm-clock".into(),
            cpu_model: "Fixture CPU".into(),
            online_cpus: (0..spec.cpus).collect(),
            hz: Some(250),
            ..Default::default()
        },
        hygiene: Hygiene {
            mlockall: true,
            ..Default::default()
        },
        loads,
        trace_file: None,
        warnings: vec![],
        tags: spec.tags.clone(),
        checkpoint: None,
        kind: RunKind::Measurement(Box::new(Measurement {
            break_sample: None,
            config: RunConfig {
                cpus: (0..spec.cpus).collect(),
                policy: spec.policy,
                priority: 95,
                nice: 0,
                deadline: None,
                interval_us: 1000,
                distance_us: 0,
                aligned: true,
                duration_s: Some(spec.samples_per_cpu as f64 / 1000.0),
                loops: None,
                timer: TimerMode::AbsNanosleep,
                clock: ClockId::Monotonic,
                hold_cpu_dma_latency: true,
                break_above_us: None,
                threshold_us: None,
                worst_n: 5,
                linear_max_us: 1000,
                loads: spec.loads.clone(),
                trace: "off".into(),
                trace_bursts: None,
                housekeeping_cpus: Vec::new(),
            },
            threads,
            stats: Stats::from_histogram(&all),
            histogram: all,
            overruns: 0,
            attribution,
            bound,
            timerlat: None,
            tail: None,
            stable: None,
            watch: None,
        })),
    }
}

fn attribution() -> AttributionSummary {
    let cause = |c: &str, share: f64, max: u64| CauseSummary {
        cause: c.to_string(),
        samples_affected: 40,
        total_ns: max * 20,
        max_ns: max,
        p99_contribution_ns: max / 2,
        tail_p99_share: share,
        ..Default::default()
    };
    AttributionSummary {
        schema_version: 1,
        causes: vec![
            cause("irq:timer", 0.45, 9_000),
            cause("softirq:RCU", 0.2, 4_000),
            cause("thread:kworker/0:1", 0.15, 3_000),
            cause("hypervisor-stall", 0.1, 15_000),
        ],
        per_cpu_tail: vec![(0, "irq:timer".into()), (1, "hypervisor-stall".into())],
        lost_events: 0,
        samples_attributed: 100,
        samples_unattributed: 3,
        ..Default::default()
    }
}

fn bound(threads: &[ThreadResult]) -> BoundReport {
    use rtscope_model::bound::{BoundSeriesPoint, Bounds, CharBound, CpuBound};
    let cb = |ns: Option<u64>| CharBound {
        latency_ns: ns,
        converged: ns.is_some(),
        ..Default::default()
    };
    let cpus = threads
        .iter()
        .map(|t| {
            let obs = t.stats.max_ns.unwrap_or(0);
            CpuBound {
                cpu: t.cpu,
                ifl_ns: obs / 3,
                thread_estimated: true,
                observed_max_latency_ns: Some(obs),
                bounds: Bounds {
                    no_interrupts: cb(Some(obs / 2)),
                    worst_single: cb(None),
                    single_of_each: cb(Some(obs + obs / 5)),
                    sporadic: cb(Some(obs * 2)),
                    sliding_window: cb(Some(obs + obs / 3)),
                    sliding_window_owcet: cb(Some(obs + obs / 2)),
                },
                ..Default::default()
            }
        })
        .collect();
    let series = (0..10)
        .map(|i| BoundSeriesPoint {
            t_s: i as f64,
            cpu: 0,
            sliding_window_ns: Some(10_000 + 1_000 * i),
            observed_max_ns: Some(8_000 + 500 * i),
        })
        .collect();
    BoundReport {
        schema_version: 1,
        cpus,
        estimate: true,
        input: "trace".into(),
        series,
        ..Default::default()
    }
}

/// A record whose system strings are hostile HTML, for escaping tests.
pub fn hostile(id: &str) -> RunRecord {
    let mut s = Spec::new(id, 7);
    s.hostname = "<script>alert(1)</script>".into();
    s.with_analysis = true;
    s.tags
        .insert("note".into(), "\"><img src=x onerror=alert(2)>".into());
    let mut r = record(&s);
    r.cmdline.push("--tag".into());
    r.cmdline.push("x=<script>alert(3)</script>".into());
    if let Some(a) = r.measurement_mut().and_then(|m| m.attribution.as_mut()) {
        a.causes.push(CauseSummary {
            cause: "thread:<script>alert(1)</script>".into(),
            samples_affected: 3,
            total_ns: 9_000,
            max_ns: 4_000,
            p99_contribution_ns: 1_000,
            tail_p99_share: 0.1,
            ..Default::default()
        });
        a.per_cpu_tail
            .push((1, "thread:<script>alert(1)</script>".into()));
        // A worst sample whose timeline names the hostile thread: 2 µs timer IRQ delay, 1 µs
        // handler, 6 µs the hostile thread blocking, 1 µs switch (sums to 10 µs).
        let seg = |a: u64, b: u64, cause: &str, detail: &str| Segment {
            start_ns: a,
            end_ns: b,
            cause: cause.into(),
            detail: detail.into(),
        };
        a.worst.push(WorstSample {
            cpu: 1,
            tid: 4242,
            cycle: 77,
            expected_ns: 1_000_000,
            latency_ns: 10_000,
            handler: "vector:local_timer".into(),
            parts: vec![
                ("thread:<script>alert(1)</script>".into(), 6_000),
                ("timer_irq_delay".into(), 2_000),
                ("timer_handler".into(), 1_000),
                ("switch_to_user".into(), 1_000),
            ],
            segments: vec![
                seg(0, 2_000, "timer_irq_delay", ""),
                seg(2_000, 3_000, "timer_handler", "local_timer"),
                seg(3_000, 9_000, "thread:<script>alert(1)</script>", "pid 666"),
                seg(9_000, 10_000, "switch_to_user", ""),
            ],
            threads: vec![ThreadRan {
                pid: 666,
                comm: "<script>alert(1)</script>".into(),
                prio: 120,
                ran_ns: 6_000,
                relation: "blocking".into(),
            }],
        });
    }
    r
}
