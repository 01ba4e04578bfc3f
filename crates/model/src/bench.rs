//! Results of the fine-grained benchmarks (rhealstone, sched-scale, pdlt) and task-set runs.
//! Owned by the bench work; extend here, keep it plain data.
//!
//! Every figure carries its unit in the field name; distributions are full [`Histogram`]s with
//! their [`Stats`], so a report can draw them and a comparison can test them.

use crate::histogram::HistogramData;
use crate::{Histogram, Stats};
use serde::{Deserialize, Serialize};

/// A [`Histogram`] as stored inside the benchmarks' results. Version-1 records held these results
/// in an internally tagged enum, and serde buffers such content in a form that cannot hold u128
/// (the exact sums of a histogram); so here the two sums are written as decimal strings, which
/// every version reads. Everything else is [`HistogramData`] unchanged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BenchHistogram(pub Histogram);

impl std::ops::Deref for BenchHistogram {
    type Target = Histogram;
    fn deref(&self) -> &Histogram {
        &self.0
    }
}

impl From<Histogram> for BenchHistogram {
    fn from(h: Histogram) -> Self {
        BenchHistogram(h)
    }
}

#[derive(Serialize, Deserialize)]
struct BenchHistogramData {
    count: u64,
    min_ns: Option<u64>,
    max_ns: Option<u64>,
    /// Decimal string (u128).
    sum_ns: String,
    /// Decimal string (u128).
    sum_sq_ns2: String,
    #[serde(default)]
    clamped: u64,
    significant_digits: u8,
    buckets: Vec<(u64, u64)>,
}

impl Serialize for BenchHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let d = self.0.to_data();
        BenchHistogramData {
            count: d.count,
            min_ns: d.min_ns,
            max_ns: d.max_ns,
            sum_ns: d.sum_ns.to_string(),
            sum_sq_ns2: d.sum_sq_ns2.to_string(),
            clamped: d.clamped,
            significant_digits: d.significant_digits,
            buckets: d.buckets,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for BenchHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let b = BenchHistogramData::deserialize(d)?;
        let data = HistogramData {
            count: b.count,
            min_ns: b.min_ns,
            max_ns: b.max_ns,
            sum_ns: b
                .sum_ns
                .parse()
                .map_err(|_| D::Error::custom("sum_ns: not a decimal u128"))?,
            sum_sq_ns2: b
                .sum_sq_ns2
                .parse()
                .map_err(|_| D::Error::custom("sum_sq_ns2: not a decimal u128"))?,
            clamped: b.clamped,
            significant_digits: b.significant_digits,
            buckets: b.buckets,
        };
        Histogram::from_data(&data)
            .map(BenchHistogram)
            .map_err(D::Error::custom)
    }
}

// ---------------------------------------------------------------------------------------------
// Rhealstone

/// One measured operation of the Rhealstone suite, in one implementation variant.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RhealstoneMetric {
    /// `task_switch`, `preemption`, `intertask_message`, `semaphore_shuffle`, `deadlock_break`,
    /// `interrupt_response`.
    pub metric: String,
    /// Implementation: `sched_yield`, `user_spin`, `sysv_msg`, `posix_mq`, `pipe`, `sysv_sem`,
    /// `posix_sem`, `futex`, `pi_mutex`, `no_pi_mutex`, `hrtimer_expire`.
    pub variant: String,
    /// Whether this variant is the one entering the composite figure.
    pub primary: bool,
    pub iterations_requested: u64,
    /// Set when the run stopped at its duration cap (or on SIGINT) before the iteration count.
    pub stopped_early: Option<String>,
    pub histogram: BenchHistogram,
    pub stats: Stats,
    /// Why the metric could not be measured (then the histogram is empty).
    pub unavailable: Option<String>,
    /// What the number includes and excludes, in words.
    pub definition: String,
    pub notes: Vec<String>,
    /// How the number stands to the paper's quantity of the same name (heursch-2001 §3.1):
    /// `as_defined` (the paper's interval, deviations in `definition`), `nearest_measurable` (a
    /// different interval, the closest this host allows), `contrast` (a different interval
    /// shown beside it, e.g. with a timer in the path), or empty in records written before this
    /// was stated (see [`RhealstoneMetric::effective_quantity`]). Only `as_defined` may be set
    /// beside the paper's figure.
    #[serde(default)]
    pub quantity: String,
    /// Intervals measured in the same samples as the main one (e.g. the semaphore shuffle's
    /// release → own and the holder's run time it subtracts).
    #[serde(default)]
    pub parts: Vec<RhealstonePart>,
    /// Counts that show the mechanism (context switches of each thread, local timer interrupts
    /// on the CPU during the run), by name.
    #[serde(default)]
    pub counters: std::collections::BTreeMap<String, u64>,
}

/// [`RhealstoneMetric::quantity`] of a metric measuring the paper's interval.
pub const QUANTITY_AS_DEFINED: &str = "as_defined";
/// [`RhealstoneMetric::quantity`] of a metric measuring a different, nearest measurable interval.
pub const QUANTITY_NEAREST_MEASURABLE: &str = "nearest_measurable";
/// [`RhealstoneMetric::quantity`] of a different interval shown for contrast.
pub const QUANTITY_CONTRAST: &str = "contrast";

impl RhealstoneMetric {
    /// `quantity`, or for records written before it existed what their interval was: interrupt
    /// response on a timer (nearest measurable); preemption through a timer wake-up and a
    /// semaphore shuffle timed from release to own only (different intervals); the rest as
    /// defined.
    pub fn effective_quantity(&self) -> &str {
        if !self.quantity.is_empty() {
            return &self.quantity;
        }
        match self.metric.as_str() {
            "interrupt_response" => QUANTITY_NEAREST_MEASURABLE,
            "preemption" | "semaphore_shuffle" => QUANTITY_CONTRAST,
            _ => QUANTITY_AS_DEFINED,
        }
    }

    /// Whether the number is only the nearest measurable quantity, not the paper's.
    pub fn is_nearest_measurable(&self) -> bool {
        self.effective_quantity() == QUANTITY_NEAREST_MEASURABLE
    }

    /// Whether the number is the paper's quantity (deviations stated in `definition`).
    pub fn is_papers_quantity(&self) -> bool {
        self.effective_quantity() == QUANTITY_AS_DEFINED
    }
}

/// One interval measured alongside a metric's main one, in the same samples.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RhealstonePart {
    pub name: String,
    pub definition: String,
    pub histogram: BenchHistogram,
    pub stats: Stats,
}

/// Kar's single figure of merit computed from the mean of each primary metric.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RhealstoneComposite {
    /// The formula as printed in the output.
    pub formula: String,
    pub citation: String,
    /// (metric, mean in ns) of the components used.
    pub components_mean_ns: Vec<(String, f64)>,
    /// Components that were unavailable; when non-empty the figure is partial.
    pub missing: Vec<String>,
    pub mean_component_ns: f64,
    pub rhealstones_per_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RhealstoneResult {
    pub cpu: u32,
    /// SCHED_FIFO priority of the highest thread; the others run 10 and 20 below.
    pub priority_high: u32,
    pub metrics: Vec<RhealstoneMetric>,
    pub composite: Option<RhealstoneComposite>,
}

// ---------------------------------------------------------------------------------------------
// Least-squares line (shared by sched-scale; computed in rtscope-analysis::benchstats)

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LinearFit {
    pub points: u32,
    pub slope: f64,
    pub intercept: f64,
    pub slope_stderr: f64,
    /// Two-sided confidence interval of the slope at `confidence` (Student t, points − 2 df).
    pub slope_ci_low: f64,
    pub slope_ci_high: f64,
    pub confidence: f64,
    pub t_critical: f64,
    pub r_squared: f64,
}

// ---------------------------------------------------------------------------------------------
// sched-scale

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SchedScaleRow {
    pub load_processes: u32,
    pub wakeups: u64,
    /// Programmed wake-up → first user-space instruction of the SCHED_FIFO thread (own clock).
    pub wakeup_to_run: BenchHistogram,
    pub wakeup_to_run_stats: Stats,
    /// stddev / mean of `wakeup_to_run` (Table 3's last column, as a fraction, not %).
    pub wakeup_to_run_cv: Option<f64>,
    /// Timer interrupt handling the wake-up (hrtimer_expire_entry `now`) → thread running: the
    /// kernel's wake + schedule + switch + return, the nearest modern analogue of Table 3.
    pub irq_to_run: Option<BenchHistogram>,
    pub irq_to_run_stats: Option<Stats>,
    pub irq_to_run_cv: Option<f64>,
    /// sched_waking → sched_switch (trace timestamps, µs resolution of the text trace).
    pub waking_to_switch: Option<BenchHistogram>,
    pub waking_to_switch_stats: Option<Stats>,
    /// Load processes that were actually running (R state) when the row finished.
    pub load_running_at_end: u32,
    /// Time in the scheduler, Table 3's own quantity: entry of schedule() / schedule_idle() /
    /// preempt_schedule_irq() → the sched_switch to the SCHED_FIFO thread (fentry + tp_btf);
    /// None when the programs were not attached.
    #[serde(default)]
    pub sched_time: Option<BenchHistogram>,
    #[serde(default)]
    pub sched_time_stats: Option<Stats>,
    #[serde(default)]
    pub sched_time_cv: Option<f64>,
    /// Switches to the thread the timing could not see begin (through preempt_schedule(),
    /// which is notrace), and durations lost to a full queue.
    #[serde(default)]
    pub sched_time_missed: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SchedScaleResult {
    pub cpu: u32,
    pub priority: u32,
    pub sleep_us: u64,
    pub rows: Vec<SchedScaleRow>,
    /// Mean wake-up→run (ns) against N (load processes); slope in ns per load process.
    pub fit_wakeup_to_run: Option<LinearFit>,
    pub fit_irq_to_run: Option<LinearFit>,
    /// None when kernel events were captured; otherwise why not.
    pub trace_unavailable: Option<String>,
    /// Mean time in the scheduler (ns) against N.
    #[serde(default)]
    pub fit_sched_time: Option<LinearFit>,
    /// None when the scheduler was timed (or not asked to be); otherwise why not.
    #[serde(default)]
    pub sched_time_unavailable: Option<String>,
    /// How the scheduler's entry was marked (fentry on its entry points, or on PREEMPT_RT the
    /// preempt_disable tracepoint in them); absent when it was not timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_time_method: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// PDLT scan

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct PdltPoint {
    /// Offset asked for (timer expiry − consumer's clock read before arming).
    pub requested_offset_ns: u64,
    /// Timer expiry − start of the system call (negative: the timer expired before it).
    pub offset_ns: i64,
    /// Timer expiry → producer running (process dispatch latency).
    pub pdlt_ns: u64,
    /// Duration of the system call in this iteration (includes the producer's run when the
    /// producer preempted it).
    pub syscall_ns: u64,
    pub repeat: u32,
    /// Interrupt raised → the handler's first statement (the test driver's device interrupt;
    /// absent for the timer-driven scans, whose interrupt is not a device's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irt_ns: Option<u64>,
}

/// A non-preemptible region found in the scan: PDLT falls with slope ≈ −1 from `peak_pdlt_ns`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct PdltTriangle {
    pub start_offset_ns: i64,
    pub end_offset_ns: i64,
    pub peak_pdlt_ns: u64,
    /// Fitted slope of PDLT against offset inside the region (−1 for a perfect triangle).
    pub slope: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PdltScan {
    /// Preemption model in force for this scan ("none", "voluntary", "full", "lazy", …).
    pub preempt_model: String,
    /// The system call alone (no timer), measured before the scan.
    pub syscall_calibration: Stats,
    pub points: Vec<PdltPoint>,
    /// Median PDLT of points whose timer expired after the system call ended.
    pub baseline_pdlt_ns: Option<u64>,
    pub max_pdlt_ns: Option<u64>,
    pub triangles: Vec<PdltTriangle>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PdltResult {
    /// `read`, `munmap`, `getdents`, `mmap_populate`.
    pub syscall: String,
    /// Size parameter: bytes for read/munmap/mmap_populate, directory entries for getdents.
    pub size: u64,
    pub cpu: u32,
    pub producer_priority: u32,
    pub consumer_priority: u32,
    pub step_ns: u64,
    pub scans: Vec<PdltScan>,
    pub notes: Vec<String>,
    /// The test driver's preemption points (heursch-2001 Figs. 5–8; `driver` scans only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption_points: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_result_json_roundtrip() {
        let mut h = Histogram::new();
        h.record(1500);
        h.record(2500);
        let r = crate::RunKind::Rhealstone(Box::new(RhealstoneResult {
            cpu: 1,
            priority_high: 80,
            metrics: vec![RhealstoneMetric {
                metric: "semaphore_shuffle".into(),
                variant: "sysv_sem".into(),
                primary: true,
                iterations_requested: 2,
                stopped_early: None,
                stats: Stats::from_histogram(&h),
                histogram: BenchHistogram(h),
                unavailable: None,
                definition: "d".into(),
                notes: vec![],
                quantity: QUANTITY_AS_DEFINED.into(),
                parts: vec![],
                counters: Default::default(),
            }],
            composite: None,
        }));
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.starts_with("{\"rhealstone\":"), "{s}");
        let back: crate::RunKind = serde_json::from_str(&s).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn rhealstone_metric_without_the_new_fields_still_reads() {
        // A metric as written before `quantity`, `parts` and `counters` existed.
        let m = RhealstoneMetric {
            metric: "interrupt_response".into(),
            variant: "hrtimer_expire".into(),
            primary: true,
            iterations_requested: 2,
            stopped_early: None,
            histogram: BenchHistogram(Histogram::new()),
            stats: Stats::from_histogram(&Histogram::new()),
            unavailable: None,
            definition: "d".into(),
            notes: vec![],
            quantity: String::new(),
            parts: vec![],
            counters: Default::default(),
        };
        let mut v = serde_json::to_value(&m).unwrap();
        for k in ["quantity", "parts", "counters"] {
            v.as_object_mut().unwrap().remove(k);
        }
        let back: RhealstoneMetric = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);
        assert!(back.is_nearest_measurable());
        assert!(!back.is_papers_quantity());
        let old = |metric: &str| RhealstoneMetric {
            metric: metric.into(),
            ..m.clone()
        };
        assert_eq!(old("semaphore_shuffle").effective_quantity(), "contrast");
        assert_eq!(old("preemption").effective_quantity(), "contrast");
        assert!(old("intertask_message").is_papers_quantity());
        let new = RhealstoneMetric {
            quantity: QUANTITY_AS_DEFINED.into(),
            ..old("semaphore_shuffle")
        };
        assert!(new.is_papers_quantity());
    }
}
