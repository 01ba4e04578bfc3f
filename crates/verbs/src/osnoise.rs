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
use crate::work;
use rtscope_model::{
    Histogram, Measurement, Policy, RunConfig, RunKind, Stats, ThreadResult, Warning, WarningCode,
};
use rtscope_trace::osnoise::{
    check_tracer, NoiseAgg, OsnEvent, OsnoiseConfig, OsnoiseSession, TimerlatAgg, Tracer,
};
use std::time::{Duration, Instant};

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
    /// The command as the user would type it in the lab (for the missing-tracer message).
    pub lab_hint: String,
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
    pub lab_hint: String,
}

/// The tracer is missing: bad input (exit 2), with the lab command whose kernel has it.
fn missing(why: String, lab_hint: &str) -> VerbError {
    bad!("{why}; run it in the lab's trace kernel: rtscope lab run --kernel trace -- {lab_hint} (docs/rtla.md)")
}

/// Check the timerlat flags against the kernel's ranges.
pub fn check_timerlat(p: &TimerlatPlan) -> Result<(), VerbError> {
    let (lo, hi) = TIMERLAT_PERIOD_US;
    if !(lo..=hi).contains(&p.period_us) {
        return Err(bad!(
            "--interval: must be {lo}..={hi} µs with --probe timerlat (the kernel's timerlat_period_us range); got {}",
            p.period_us
        ));
    }
    if let Some(pr) = p.priority {
        if !(1..=99).contains(&pr) {
            return Err(bad!(
                "--priority: must be 1..=99 (SCHED_FIFO of the timerlat threads); got {pr}"
            ));
        }
    }
    Ok(())
}

/// Check the noise flags against the kernel's rules (runtime ≤ period).
pub fn check_noise(p: &NoisePlan) -> Result<(), VerbError> {
    if !(100..=10_000_000).contains(&p.period_us) {
        return Err(bad!(
            "--period: must be 100..=10000000 µs; got {}",
            p.period_us
        ));
    }
    if p.runtime_us < 100 || p.runtime_us > p.period_us {
        return Err(bad!(
            "--runtime: must be 100 µs ..= --period ({} µs); got {}",
            p.period_us,
            p.runtime_us
        ));
    }
    if let Some(t) = p.threshold_us {
        if !(1..=1_000_000).contains(&t) {
            return Err(bad!("--min-noise: must be 1..=1000000 µs; got {t}"));
        }
    }
    if let Some(t) = p.stop_us {
        if !(1..=10_000_000).contains(&t) {
            return Err(bad!("--stop: must be 1..=10000000 µs; got {t}"));
        }
    }
    if p.top > 1000 {
        return Err(bad!("--top: must be 0..=1000; got {}", p.top));
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

/// `work::begin`, keeping what was repaired of killed runs (their instances, the osnoise settings
/// a killed run of these verbs left) for the record's warnings.
fn begin(verb: &str, why: &str) -> Result<work::Work, VerbError> {
    work::begin(verb, Need::Root, why)
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

/// Seconds between progress lines.
const STATUS_EVERY_S: u64 = 10;

/// The run loop shared by both: poll every 100 ms until the duration, a stop signal, or (for
/// osnoise) the tracer stopping itself; a progress line every 10 s. Returns whether the tracer
/// stopped itself.
fn run_loop(
    sess: &mut OsnoiseSession,
    duration: Option<f64>,
    watch_stop: bool,
    sink: &mut impl Sink,
    out: &RecordOutputs,
) -> Result<bool, VerbError> {
    let t0 = Instant::now();
    let end = duration.map(Duration::from_secs_f64);
    let mut next_status = STATUS_EVERY_S;
    loop {
        let left = end.map(|e| e.saturating_sub(t0.elapsed()));
        std::thread::sleep(left.map_or(Duration::from_millis(100), |l| {
            l.min(Duration::from_millis(100))
        }));
        sess.poll(|c, ts, ev| sink.push(c, ts, ev))
            .map_err(VerbError::failed)?;
        if crate::signals::stop_requested() || left.is_some_and(|l| l.is_zero()) {
            return Ok(false);
        }
        if watch_stop && sess.stopped_by_tracer() {
            return Ok(true);
        }
        if t0.elapsed().as_secs() >= next_status {
            out.progress(&format!("  {next_status} s: {}", sink.status()));
            next_status += STATUS_EVERY_S;
        }
    }
}

/// `measure --probe timerlat`.
pub fn timerlat(p: &TimerlatPlan, out: &RecordOutputs) -> Result<(), VerbError> {
    check_timerlat(p)?;
    let tags = out.validate()?;
    check_tracer(Tracer::Timerlat).map_err(|e| missing(e, &p.lab_hint))?;
    let work = begin("measure --probe timerlat", "the timerlat tracer")?;
    out.progress(&format!(
        "rtscope measure --probe timerlat: CPUs {:?}, period {} us{}",
        p.cpus,
        p.period_us,
        p.duration_s
            .map_or(" until Ctrl-C".into(), |d| format!(", {d} s"))
    ));
    let cfg = OsnoiseConfig {
        cpus: p.cpus.clone(),
        timerlat_period_us: Some(p.period_us),
        ..Default::default()
    };
    let mut sess = OsnoiseSession::start(Tracer::Timerlat, &cfg).map_err(VerbError::failed)?;
    let (threads, mut warnings) = timerlat_threads(p.priority, &p.cpus);
    let mut agg = TimerlatAgg::new(&p.cpus, p.linear_max_us);
    let res = run_loop(&mut sess, p.duration_s, false, &mut agg, out);
    let lost = sess.stop(|c, ts, ev| agg.push(c, ts, &ev));
    for e in sess.restore() {
        warnings.push(Warning::new(WarningCode::System, e));
    }
    drop(sess);
    res?;
    let lost = lost.map_err(VerbError::failed)?;
    let prio = threads.iter().map(|t| t.2).max();
    let section = agg.result(p.period_us, prio, &lost);
    warnings.extend(lost_warning(section.lost_events));
    let mut m = measurement(&agg, &threads, p, prio.unwrap_or(95).max(0) as u32);
    m.timerlat = Some(section.clone());
    let rec = work.record(WorkInfo {
        verb: "measure".into(),
        cpus: p.cpus.clone(),
        interrupted: work.interrupted(),
        hygiene: rtscope_model::Hygiene {
            notes: vec![
                "kernel-side probe: the timerlat tracer's threads and timer, nothing in user space"
                    .into(),
            ],
            ..Default::default()
        },
        warnings,
        tags,
        loads: Vec::new(),
        kind: RunKind::Measurement(Box::new(m)),
    });
    let text = rtscope_report::text::summary(&rec);
    work.finish(out, &text, &[], &rec)
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
            policy: Policy::Fifo,
            priority,
            nice: 0,
            deadline: None,
            interval_us: p.period_us,
            distance_us: 0,
            aligned: false,
            duration_s: p.duration_s,
            loops: None,
            timer: rtscope_model::TimerMode::AbsNanosleep,
            clock: rtscope_model::ClockId::Monotonic,
            hold_cpu_dma_latency: false,
            break_above_us: None,
            threshold_us: None,
            worst_n: 10,
            linear_max_us: p.linear_max_us,
            loads: Vec::new(),
            trace: "timerlat".into(),
            trace_bursts: None,
            housekeeping_cpus: Vec::new(),
        },
        break_sample: None,
        stats: Stats::from_histogram(&merged),
        histogram: merged,
        threads: out,
        overruns: 0,
        attribution: None,
        bound: None,
        timerlat: None,
        tail: None,
        stable: None,
        watch: None,
    }
}

/// `rtscope noise`.
pub fn noise(p: &NoisePlan, out: &RecordOutputs) -> Result<(), VerbError> {
    check_noise(p)?;
    let tags = out.validate()?;
    check_tracer(Tracer::Osnoise).map_err(|e| missing(e, &p.lab_hint))?;
    let work = begin("noise", "the osnoise tracer")?;
    out.progress(&format!(
        "rtscope noise: CPUs {:?}, period {} us, runtime {} us, {} s",
        p.cpus, p.period_us, p.runtime_us, p.duration_s
    ));
    let cfg = OsnoiseConfig {
        cpus: p.cpus.clone(),
        period_us: Some(p.period_us),
        runtime_us: Some(p.runtime_us),
        threshold_us: p.threshold_us,
        stop_us: p.stop_us,
        ..Default::default()
    };
    let mut sess = OsnoiseSession::start(Tracer::Osnoise, &cfg).map_err(VerbError::failed)?;
    let mut agg = NoiseAgg::new(&p.cpus);
    let mut warnings = Vec::new();
    let res = run_loop(
        &mut sess,
        Some(p.duration_s),
        p.stop_us.is_some(),
        &mut agg,
        out,
    );
    let lost = sess.stop(|c, _, ev| agg.push(c, &ev));
    for e in sess.restore() {
        warnings.push(Warning::new(WarningCode::System, e));
    }
    drop(sess);
    let stopped = res?;
    let lost = lost.map_err(VerbError::failed)?;
    let result = agg.result(
        (p.period_us, p.runtime_us),
        (p.threshold_us, p.stop_us),
        stopped,
        &lost,
    );
    warnings.extend(lost_warning(result.lost_events));
    if stopped {
        warnings.push(Warning::new(
            WarningCode::Other,
            format!(
                "the tracer stopped itself: a single noise reached --stop {} us",
                p.stop_us.unwrap_or(0)
            ),
        ));
    }
    let text = rtscope_report::osnoise::noise(&result, p.top);
    let rec = work.record(WorkInfo {
        verb: "noise".into(),
        cpus: p.cpus.clone(),
        interrupted: work.interrupted(),
        hygiene: rtscope_model::Hygiene::default(),
        warnings,
        tags,
        loads: Vec::new(),
        kind: RunKind::Noise(Box::new(result)),
    });
    work.finish(out, &text, &[], &rec)
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
            lab_hint: "measure --probe timerlat".into(),
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
            lab_hint: "noise".into(),
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
        assert!(e.is_bad_input() && e.to_string().contains("--interval: must be 100..=1000000"));
        let e = check_timerlat(&TimerlatPlan {
            priority: Some(0),
            ..tl()
        })
        .unwrap_err();
        assert!(e.to_string().starts_with("--priority"));
        assert!(check_noise(&np()).is_ok());
        let e = check_noise(&NoisePlan {
            runtime_us: 2000,
            ..np()
        })
        .unwrap_err();
        assert!(
            e.is_bad_input() && e.to_string().starts_with("--runtime"),
            "{e}"
        );
        let e = check_noise(&NoisePlan {
            threshold_us: Some(0),
            ..np()
        })
        .unwrap_err();
        assert!(e.to_string().starts_with("--min-noise"));
    }

    #[test]
    fn a_missing_tracer_names_it_and_the_lab_command() {
        let e = missing(
            "the timerlat tracer is not available: x".into(),
            "measure --probe timerlat -D 5s",
        );
        assert!(e.is_bad_input());
        let m = e.to_string();
        assert!(!m.contains('\n'));
        assert!(
            m.contains("rtscope lab run --kernel trace -- measure --probe timerlat -D 5s"),
            "{m}"
        );
    }
}
