//! The kernel's own probes (`rtscope_trace::osnoise`): `measure --probe timerlat` and `noise`.
//! Flags checked first (exit 2, nothing started; a kernel without the tracer is bad input too,
//! with the lab command that has it), then the tracer set up in a private tracefs instance, its
//! pages read ten times a second into per-CPU histograms and counters (constant memory), and on
//! every exit path (the end, an error, SIGINT/SIGTERM/SIGHUP) the tracer stopped and every
//! global setting written back before the record is built.

use crate::input::{bad, VerbError};
use crate::outputs::RecordOutputs;
use crate::privilege::Need;
use crate::record::WorkInfo;
use crate::tool::{run_tool, Begin, Flow, Tool, Work};
use rtscope_model::RunRecord;
use rtscope_model::{
    Histogram, Measurement, RunConfig, RunKind, Stats, ThreadResult, Warning, WarningCode,
};
use rtscope_trace::osnoise::{
    check_tracer, NoiseAgg, OsnEvent, OsnoiseConfig, OsnoiseSession, TimerlatAgg, Tracer,
};
use std::time::{Duration, Instant};

rtscope_model::request_fields! {
    /// The fields of `noise` and of `measure --probe timerlat` as their errors name them (the
    /// timerlat period and priority are the measurement's [`crate::input::Field::Interval`]
    /// and [`crate::input::Field::Priority`]); the caller renders each token
    /// ([`rtscope_model::field::render`]).
    pub enum Field in "osnoise" {
        /// `measure`'s probe (timerlat here).
        Probe = "probe" => PROBE,
        Period = "period_us" => PERIOD,
        Runtime = "runtime_us" => RUNTIME,
        MinNoise = "min_noise_us" => MIN_NOISE,
        Stop = "stop_us" => STOP,
        Top = "top" => TOP,
    }
}

/// The kernel's timerlat_period_us range (kernel/trace/trace_osnoise.c).
pub const TIMERLAT_PERIOD_US: (u64, u64) = (100, 1_000_000);

/// `measure --probe timerlat`, resolved.
#[derive(Clone, Debug)]
pub struct TimerlatPlan {
    pub cpus: Vec<u32>,
    pub period_us: u64,
    pub duration_s: Option<f64>,
    /// SCHED_FIFO priority given to the `timerlat/N` threads (None: the kernel's, FIFO 95).
    pub priority: Option<u32>,
    pub linear_max_us: u32,
    /// The lab command that runs this one in the trace kernel (for the missing-tracer message).
    pub lab_hint: String,
    /// How the caller names each field: the start-up line names the probe through it.
    pub field_names: fn(Field) -> &'static str,
}

/// `rtscope noise`, resolved.
#[derive(Clone, Debug)]
pub struct NoisePlan {
    pub cpus: Vec<u32>,
    pub duration_s: f64,
    pub period_us: u64,
    pub runtime_us: u64,
    pub threshold_us: Option<u64>,
    pub stop_us: Option<u64>,
    /// Sources shown per CPU in the text.
    pub top: usize,
    /// The lab command that runs this one in the trace kernel (for the missing-tracer message).
    pub lab_hint: String,
    /// How the caller names each field: the warning of a tracer that stopped itself names the
    /// stop threshold through it.
    pub field_names: fn(Field) -> &'static str,
}

/// The tracer is missing: bad input (exit 2), with the lab command whose kernel has it.
fn missing(why: String, lab_hint: &str) -> VerbError {
    bad!("{why}; run it in the lab's trace kernel: {lab_hint} (docs/rtla.md)")
}

/// Check the timerlat flags against the kernel's ranges.
pub fn check_timerlat(p: &TimerlatPlan) -> Result<(), VerbError> {
    let (lo, hi) = TIMERLAT_PERIOD_US;
    if !(lo..=hi).contains(&p.period_us) {
        return Err(bad!(
            "{}: must be {lo}..={hi} µs with {PROBE} timerlat (the kernel's timerlat_period_us range); got {}",
            crate::input::Field::Interval,
            p.period_us
        ));
    }
    if let Some(pr) = p.priority {
        if !(1..=99).contains(&pr) {
            return Err(bad!(
                "{}: must be 1..=99 (SCHED_FIFO of the timerlat threads); got {pr}",
                crate::input::Field::Priority
            ));
        }
    }
    Ok(())
}

/// Check the noise flags against the kernel's rules (runtime ≤ period).
pub fn check_noise(p: &NoisePlan) -> Result<(), VerbError> {
    if !(100..=10_000_000).contains(&p.period_us) {
        return Err(bad!(
            "{PERIOD}: must be 100..=10000000 µs; got {}",
            p.period_us
        ));
    }
    if p.runtime_us < 100 || p.runtime_us > p.period_us {
        return Err(bad!(
            "{RUNTIME}: must be 100 µs ..= {PERIOD} ({} µs); got {}",
            p.period_us,
            p.runtime_us
        ));
    }
    if let Some(t) = p.threshold_us {
        if !(1..=1_000_000).contains(&t) {
            return Err(bad!("{MIN_NOISE}: must be 1..=1000000 µs; got {t}"));
        }
    }
    if let Some(t) = p.stop_us {
        if !(1..=10_000_000).contains(&t) {
            return Err(bad!("{STOP}: must be 1..=10000000 µs; got {t}"));
        }
    }
    if p.top > 1000 {
        return Err(bad!("{TOP}: must be 0..=1000; got {}", p.top));
    }
    Ok(())
}

/// Give the `timerlat/N` threads SCHED_FIFO `prio`; what each runs at afterwards, by CPU (pid,
/// priority as read back).
fn timerlat_threads(prio: Option<u32>, cpus: &[u32]) -> (Vec<(u32, u32, i32)>, Vec<Warning>) {
    let mut warnings = Vec::new();
    // The kernel creates them when the tracer starts; give it a moment under emulation.
    let t0 = Instant::now();
    let mut pids = OsnoiseSession::threads(Tracer::Timerlat);
    while cpus.iter().any(|c| !pids.contains_key(c)) && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
        pids = OsnoiseSession::threads(Tracer::Timerlat);
    }
    let mut out = Vec::new();
    for &cpu in cpus {
        let Some(&pid) = pids.get(&cpu) else {
            warnings.push(Warning::new(
                WarningCode::Other,
                format!("no timerlat/{cpu} thread found: its priority is not known"),
            ));
            continue;
        };
        if let Some(p) = prio {
            use rtscope_sys::sched::{set_scheduler, Policy};
            if let Err(e) = set_scheduler(pid as i32, Policy::fifo(p as i32)) {
                warnings.push(Warning::new(
                    WarningCode::NotRealtime,
                    format!("timerlat/{cpu}: setting SCHED_FIFO {p}: {e}"),
                ));
            }
        }
        let got = rtscope_sys::sched::get_priority(pid as i32).unwrap_or(-1);
        out.push((cpu, pid, got));
    }
    (out, warnings)
}

fn lost_warning(lost: u64) -> Option<Warning> {
    (lost > 0).then(|| {
        Warning::new(
            WarningCode::LostEvents,
            format!("{lost} tracer entries were lost in the ring buffer: the counts and histograms miss them"),
        )
    })
}

/// What the loop feeds: the per-CPU sums, and a progress line of them.
trait Sink {
    fn push(&mut self, cpu: u32, ts_ns: u64, ev: OsnEvent);
    fn status(&self) -> String;
}

impl Sink for TimerlatAgg {
    fn push(&mut self, cpu: u32, ts_ns: u64, ev: OsnEvent) {
        TimerlatAgg::push(self, cpu, ts_ns, &ev)
    }
    fn status(&self) -> String {
        let us = |v: Option<u64>| v.map_or("-".into(), rtscope_report::text::us);
        self.maxima()
            .iter()
            .map(|(cpu, n, irq, thr)| {
                format!(
                    "CPU {cpu}: {n} samples, max IRQ {} thread {} us",
                    us(*irq),
                    us(*thr)
                )
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

impl Sink for NoiseAgg {
    fn push(&mut self, cpu: u32, _ts_ns: u64, ev: OsnEvent) {
        NoiseAgg::push(self, cpu, &ev)
    }
    fn status(&self) -> String {
        self.rows()
            .iter()
            .map(|c| {
                format!(
                    "CPU {}: {} periods, {:.3} % available, max single {} us",
                    c.cpu, c.periods, c.cpu_available_pct, c.max_single_noise_us
                )
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

/// A step: the pages are read every 100 ms, and for at most 100 ms, so a stop is seen within
/// 100 ms however fast the tracer writes.
const TICK: Duration = Duration::from_millis(100);

/// Seconds between progress lines.
const STATUS_EVERY_S: u64 = 10;

/// What differs between the two verbs of the kernel's probes.
trait Probe {
    type Agg: Sink;
    const TRACER: Tracer;
    fn begin(&self) -> Begin;
    /// The line said before the tracer starts.
    fn announce(&self) -> String;
    fn config(&self) -> OsnoiseConfig;
    fn duration_s(&self) -> Option<f64>;
    /// The tracer may stop itself (`noise --stop`).
    fn watch_stop(&self) -> bool;
    fn agg(&mut self) -> &mut Self::Agg;
    /// Once the tracer runs: warnings of what could not be set up around it.
    fn started(&mut self) -> Vec<Warning> {
        Vec::new()
    }
    /// The text (None: the record's summary) and the record's content once the tracer
    /// stopped.
    fn finish(&self, end: End, w: &Work) -> (Option<String>, WorkInfo);
}

/// How the tracer's run ended.
struct End {
    stopped_by_tracer: bool,
    lost: std::collections::BTreeMap<u32, u64>,
    warnings: Vec<Warning>,
    tags: std::collections::BTreeMap<String, String>,
}

/// A tracer run as a tool of the one lifecycle: start it in its instance, a step every 100 ms
/// reads its pages until the duration, a stop signal or (with `watch_stop`) the tracer stopping
/// itself, with a progress line every 10 s; stop reads the rest and writes every global setting
/// back (also after a failed read, whose error is returned then).
struct TracerTool<'a, P: Probe> {
    probe: P,
    out: &'a RecordOutputs,
    tags: std::collections::BTreeMap<String, String>,
    sess: Option<OsnoiseSession>,
    t0: Instant,
    /// The last read ended with pages left.
    behind: bool,
    next_status: u64,
    stopped_by_tracer: bool,
    failure: Option<VerbError>,
    warnings: Vec<Warning>,
    lost: std::collections::BTreeMap<u32, u64>,
    text: Option<String>,
}

fn run_probe<P: Probe>(
    probe: P,
    out: &RecordOutputs,
    tags: std::collections::BTreeMap<String, String>,
) -> Result<(), VerbError> {
    run_tool(TracerTool {
        probe,
        out,
        tags,
        sess: None,
        t0: Instant::now(),
        behind: false,
        next_status: STATUS_EVERY_S,
        stopped_by_tracer: false,
        failure: None,
        warnings: Vec::new(),
        lost: Default::default(),
        text: None,
    })
}

impl<P: Probe> Tool for TracerTool<'_, P> {
    type Output = ();

    fn begin(&self) -> Begin {
        self.probe.begin()
    }

    fn start(&mut self, _w: &Work) -> Result<(), VerbError> {
        self.out.progress(&self.probe.announce());
        let sess = OsnoiseSession::start(P::TRACER, &self.probe.config());
        self.sess = Some(sess.map_err(VerbError::failed)?);
        self.warnings = self.probe.started();
        self.t0 = Instant::now();
        Ok(())
    }

    fn step(&mut self, w: &Work) -> Result<Flow, VerbError> {
        let sess = self.sess.as_mut().ok_or_else(not_started)?;
        let end = self.probe.duration_s().map(Duration::from_secs_f64);
        let left = end.map(|e| e.saturating_sub(self.t0.elapsed()));
        // Behind the tracer (the last read ended at its budget with pages left): read on at once.
        if !self.behind {
            std::thread::sleep(left.map_or(TICK, |l| l.min(TICK)));
        }
        let agg = self.probe.agg();
        match sess.poll_for(Some(TICK), &|| w.interrupted(), |c, ts, ev| {
            agg.push(c, ts, ev)
        }) {
            Ok(drained) => self.behind = !drained,
            Err(e) => {
                self.failure = Some(VerbError::failed(e));
                return Ok(Flow::Done);
            }
        }
        if w.interrupted() || left.is_some_and(|l| l.is_zero()) {
            return Ok(Flow::Done);
        }
        if self.probe.watch_stop() && sess.stopped_by_tracer() {
            self.stopped_by_tracer = true;
            return Ok(Flow::Done);
        }
        if self.t0.elapsed().as_secs() >= self.next_status {
            let status = self.probe.agg().status();
            self.out
                .progress(&format!("  {} s: {status}", self.next_status));
            self.next_status += STATUS_EVERY_S;
        }
        Ok(Flow::Continue)
    }

    fn stop(&mut self, _w: &Work) -> Result<(), VerbError> {
        let mut sess = self.sess.take().ok_or_else(not_started)?;
        let agg = self.probe.agg();
        let lost = sess.stop(|c, ts, ev| agg.push(c, ts, ev));
        for e in sess.restore() {
            self.warnings.push(Warning::new(WarningCode::System, e));
        }
        drop(sess);
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        self.lost = lost.map_err(VerbError::failed)?;
        Ok(())
    }

    fn record(&mut self, w: &Work) -> Result<Option<RunRecord>, VerbError> {
        let end = End {
            stopped_by_tracer: self.stopped_by_tracer,
            lost: std::mem::take(&mut self.lost),
            warnings: std::mem::take(&mut self.warnings),
            tags: std::mem::take(&mut self.tags),
        };
        let (text, info) = self.probe.finish(end, w);
        self.text = text;
        Ok(Some(w.record(info)))
    }

    fn outputs(self, w: &Work, rec: Option<RunRecord>) -> Result<(), VerbError> {
        let rec = rec.ok_or_else(|| VerbError::failed("the tracer made no record"))?;
        let text = (self.text).unwrap_or_else(|| rtscope_report::text::summary(&rec));
        w.finish(self.out, &text, &[], &rec)
    }
}

fn not_started() -> VerbError {
    VerbError::failed("the tracer was not started")
}

/// `measure --probe timerlat`'s tracer.
struct Timerlat<'a> {
    p: &'a TimerlatPlan,
    agg: TimerlatAgg,
    /// By CPU: the `timerlat/N` thread's pid and priority as read back.
    threads: Vec<(u32, u32, i32)>,
}

impl Probe for Timerlat<'_> {
    type Agg = TimerlatAgg;
    const TRACER: Tracer = Tracer::Timerlat;

    fn begin(&self) -> Begin {
        Begin::live(
            &format!("measure {PROBE} timerlat"),
            Need::Root,
            "the timerlat tracer",
        )
    }

    fn announce(&self) -> String {
        timerlat_announce(self.p)
    }

    fn config(&self) -> OsnoiseConfig {
        OsnoiseConfig {
            cpus: self.p.cpus.clone(),
            timerlat_period_us: Some(self.p.period_us),
            ..Default::default()
        }
    }

    fn duration_s(&self) -> Option<f64> {
        self.p.duration_s
    }

    fn watch_stop(&self) -> bool {
        false
    }

    fn agg(&mut self) -> &mut TimerlatAgg {
        &mut self.agg
    }

    fn started(&mut self) -> Vec<Warning> {
        let (threads, warnings) = timerlat_threads(self.p.priority, &self.p.cpus);
        self.threads = threads;
        warnings
    }

    fn finish(&self, end: End, w: &Work) -> (Option<String>, WorkInfo) {
        let (p, mut warnings) = (self.p, end.warnings);
        let prio = self.threads.iter().map(|t| t.2).max();
        let section = self.agg.result(p.period_us, prio, &end.lost);
        warnings.extend(lost_warning(section.lost_events));
        let mut m = measurement(
            &self.agg,
            &self.threads,
            p,
            prio.unwrap_or(95).max(0) as u32,
        );
        m.timerlat = Some(section);
        let info = WorkInfo {
            verb: "measure".into(),
            cpus: p.cpus.clone(),
            interrupted: w.interrupted(),
            hygiene: rtscope_model::Hygiene {
                notes: vec![
                    "kernel-side probe: the timerlat tracer's threads and timer, nothing in user space"
                        .into(),
                ],
                ..Default::default()
            },
            warnings,
            tags: end.tags,
            loads: Vec::new(),
            kind: RunKind::Measurement(Box::new(m)),
        };
        (None, info)
    }
}

/// The line said before the timerlat tracer starts, the probe named by the caller's
/// `field_names`.
pub fn timerlat_announce(p: &TimerlatPlan) -> String {
    let line = format!(
        "rtscope measure {PROBE} timerlat: CPUs {:?}, period {} us{}",
        p.cpus,
        p.period_us,
        p.duration_s
            .map_or(" until Ctrl-C".into(), |d| format!(", {d} s"))
    );
    rtscope_model::field::render(&line, Field::ALL, p.field_names)
}

/// `measure --probe timerlat`.
pub fn timerlat(p: &TimerlatPlan, out: &RecordOutputs) -> Result<(), VerbError> {
    check_timerlat(p)?;
    let tags = out.validate()?;
    check_tracer(Tracer::Timerlat).map_err(|e| missing(e, &p.lab_hint))?;
    let probe = Timerlat {
        p,
        agg: TimerlatAgg::new(&p.cpus, p.linear_max_us),
        threads: Vec::new(),
    };
    run_probe(probe, out, tags)
}

/// The measurement from the thread side of the samples, so that every reader of a measurement
/// (show, compare, report) reads this one unchanged. The timerlat threads wait for an absolute
/// hrtimer expiry each period, as `clock_nanosleep(TIMER_ABSTIME)` does in user space.
fn measurement(
    agg: &TimerlatAgg,
    threads: &[(u32, u32, i32)],
    p: &TimerlatPlan,
    priority: u32,
) -> Measurement {
    let mut merged = Histogram::new();
    let mut out = Vec::new();
    for (i, h) in agg.histograms().into_iter().enumerate() {
        let (tid, prio) = threads
            .iter()
            .find(|t| t.0 == h.cpu)
            .map_or((0, -1), |t| (t.1, t.2));
        merged.merge(&h.thread);
        let worst = h
            .worst
            .iter()
            .map(|w| rtscope_model::SampleRef { tid, ..*w })
            .collect();
        out.push(ThreadResult {
            index: i as u32,
            cpu: h.cpu,
            tid,
            observed_policy: "fifo".into(),
            observed_priority: prio,
            cycles: h.thread.count(),
            overruns: 0,
            stats: Stats::from_histogram(&h.thread),
            histogram: h.thread,
            linear: h.thread_linear,
            worst,
            above_threshold: Vec::new(),
            above_threshold_dropped: 0,
        });
    }
    Measurement {
        config: RunConfig {
            cpus: p.cpus.clone(),
            priority,
            interval_us: p.period_us,
            duration_s: p.duration_s,
            linear_max_us: p.linear_max_us,
            trace: "timerlat".into(),
            ..Default::default()
        },
        stats: Stats::from_histogram(&merged),
        histogram: merged,
        threads: out,
        ..Default::default()
    }
}

/// `rtscope noise`'s tracer.
struct Noise<'a> {
    p: &'a NoisePlan,
    agg: NoiseAgg,
}

impl Probe for Noise<'_> {
    type Agg = NoiseAgg;
    const TRACER: Tracer = Tracer::Osnoise;

    fn begin(&self) -> Begin {
        Begin::live("noise", Need::Root, "the osnoise tracer")
    }

    fn announce(&self) -> String {
        let p = self.p;
        format!(
            "rtscope noise: CPUs {:?}, period {} us, runtime {} us, {} s",
            p.cpus, p.period_us, p.runtime_us, p.duration_s
        )
    }

    fn config(&self) -> OsnoiseConfig {
        let p = self.p;
        OsnoiseConfig {
            cpus: p.cpus.clone(),
            period_us: Some(p.period_us),
            runtime_us: Some(p.runtime_us),
            threshold_us: p.threshold_us,
            stop_us: p.stop_us,
            ..Default::default()
        }
    }

    fn duration_s(&self) -> Option<f64> {
        Some(self.p.duration_s)
    }

    fn watch_stop(&self) -> bool {
        self.p.stop_us.is_some()
    }

    fn agg(&mut self) -> &mut NoiseAgg {
        &mut self.agg
    }

    fn finish(&self, end: End, w: &Work) -> (Option<String>, WorkInfo) {
        let (p, mut warnings, stopped) = (self.p, end.warnings, end.stopped_by_tracer);
        let result = self.agg.result(
            (p.period_us, p.runtime_us),
            (p.threshold_us, p.stop_us),
            stopped,
            &end.lost,
        );
        warnings.extend(lost_warning(result.lost_events));
        if stopped {
            warnings.push(stopped_warning(p));
        }
        let text = rtscope_report::osnoise::noise(&result, p.top);
        let info = WorkInfo {
            verb: "noise".into(),
            cpus: p.cpus.clone(),
            interrupted: w.interrupted(),
            hygiene: rtscope_model::Hygiene::default(),
            warnings,
            tags: end.tags,
            loads: Vec::new(),
            kind: RunKind::Noise(Box::new(result)),
        };
        (Some(text), info)
    }
}

/// The tracer stopped itself: a single noise reached the stop threshold (the record's
/// `stop_us` and `stopped_by_tracer`), named by the caller's `field_names`.
pub fn stopped_warning(p: &NoisePlan) -> Warning {
    let msg = format!(
        "the tracer stopped itself: a single noise reached {STOP} {} us",
        p.stop_us.unwrap_or(0)
    );
    Warning::new(
        WarningCode::TracerStopped,
        rtscope_model::field::render(&msg, Field::ALL, p.field_names),
    )
}

/// `rtscope noise`.
pub fn noise(p: &NoisePlan, out: &RecordOutputs) -> Result<(), VerbError> {
    check_noise(p)?;
    let tags = out.validate()?;
    check_tracer(Tracer::Osnoise).map_err(|e| missing(e, &p.lab_hint))?;
    let probe = Noise {
        p,
        agg: NoiseAgg::new(&p.cpus),
    };
    run_probe(probe, out, tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tl() -> TimerlatPlan {
        TimerlatPlan {
            cpus: vec![0],
            period_us: 1000,
            duration_s: Some(1.0),
            priority: None,
            linear_max_us: 100,
            lab_hint: "rtscope lab run --kernel trace -- measure --probe timerlat".into(),
            field_names: Field::key,
        }
    }

    fn np() -> NoisePlan {
        NoisePlan {
            cpus: vec![0],
            duration_s: 1.0,
            period_us: 1000,
            runtime_us: 900,
            threshold_us: None,
            stop_us: None,
            top: 5,
            lab_hint: "rtscope lab run --kernel trace -- noise".into(),
            field_names: Field::key,
        }
    }

    #[test]
    fn flags_outside_the_kernels_ranges_are_bad_input() {
        assert!(check_timerlat(&tl()).is_ok());
        let e = check_timerlat(&TimerlatPlan {
            period_us: 50,
            ..tl()
        })
        .unwrap_err();
        assert!(e.is_bad_input() && e.to_string().contains("⟨interval⟩: must be 100..=1000000"));
        let e = check_timerlat(&TimerlatPlan {
            priority: Some(0),
            ..tl()
        })
        .unwrap_err();
        assert!(e.to_string().starts_with("⟨priority⟩"));
        assert!(check_noise(&np()).is_ok());
        let e = check_noise(&NoisePlan {
            runtime_us: 2000,
            ..np()
        })
        .unwrap_err();
        assert!(
            e.is_bad_input() && e.to_string().starts_with("⟨osnoise.runtime_us⟩"),
            "{e}"
        );
        let e = check_noise(&NoisePlan {
            threshold_us: Some(0),
            ..np()
        })
        .unwrap_err();
        assert!(e.to_string().starts_with("⟨osnoise.min_noise_us⟩"));
    }

    #[test]
    fn a_missing_tracer_names_it_and_the_lab_command() {
        let e = missing(
            "the timerlat tracer is not available: x".into(),
            "rtscope lab run --kernel trace -- measure --probe timerlat -D 5s",
        );
        assert!(e.is_bad_input());
        let m = e.to_string();
        assert!(!m.contains('\n'));
        assert!(
            m.contains("rtscope lab run --kernel trace -- measure --probe timerlat -D 5s"),
            "{m}"
        );
    }

    /// The library names its fields, never a flag: the caller's names render them (the cli's
    /// flags: crates/cli/tests/unit_fields.rs).
    #[test]
    fn the_start_line_and_the_stop_warning_name_fields() {
        let line = timerlat_announce(&tl());
        assert_eq!(
            line,
            "rtscope measure probe timerlat: CPUs [0], period 1000 us, 1 s"
        );
        let w = stopped_warning(&NoisePlan {
            stop_us: Some(20),
            ..np()
        });
        assert_eq!(w.code, WarningCode::TracerStopped);
        assert_eq!(
            w.message,
            "the tracer stopped itself: a single noise reached stop_us 20 us"
        );
        assert!(!line.contains("--") && !w.message.contains("--"));
    }
}
