//! The benchmarks once resolved (`rtscope_bench::{pdlt, rhealstone, sched_scale}`'s
//! `Flags::resolve`): output files and flags checked, the privilege each needs, leftovers of
//! killed runs repaired, the stop signals, the cleanup reaper (IPC objects, scratch files and
//! tracefs instances go on every exit path), progress lines, the run, its text, CSV/SVG files
//! and its record.

use crate::input::{self, VerbError};
use crate::outputs::RecordOutputs;
use crate::privilege::Need;
use crate::work;
use rtscope_bench::common::{reaper::Reaper, BenchError};
use rtscope_bench::{pdlt, rhealstone, sched_scale};
use rtscope_model::RunKind;
use rtscope_report::bench as text;
use std::path::Path;

fn check_files(files: [(&str, Option<&Path>); 2]) -> Result<(), VerbError> {
    for (flag, p) in files {
        p.map_or(Ok(()), |p| input::output(flag, p))?;
    }
    Ok(())
}

/// The PDLT scan; `step_us` as given, for the progress line.
pub fn pdlt(
    cfg: &pdlt::Config,
    step_us: f64,
    (csv, svg): (Option<&Path>, Option<&Path>),
    out: &RecordOutputs,
) -> Result<(), VerbError> {
    check_files([("--csv", csv), ("--svg", svg)])?;
    let tags = out.validate()?;
    // Said before anything starts: the test driver needs the lab's module (missing input,
    // exit 2); a PREEMPT_RT kernel's timerfd cannot drive the other calls' scans (exit 1).
    pdlt::check_kernel(cfg)?;
    // Said before anything starts: on this kind of machine the model cannot be switched.
    if cfg.compare_preempt {
        if let Err(BenchError::Unavailable(m)) = pdlt::check_compare_preempt() {
            return Err(VerbError::failed(m));
        }
    }
    let work = work::begin("pdlt", Need::RealTime, "SCHED_FIFO, mlockall")?;
    let reaper = Reaper::start().map_err(VerbError::failed)?;
    let what = match cfg.syscall {
        pdlt::Syscall::Driver => format!(
            "the test driver's loop of {} iterations with {} preemption point(s), device interrupt",
            cfg.size, cfg.points
        ),
        s => format!("{} of {}, timer interrupt", s.name(), cfg.size),
    };
    out.progress(&format!(
        "rtscope pdlt: {what}, on CPU {}, producer FIFO {}, consumer FIFO {}, step {step_us} µs",
        cfg.cpu, cfg.producer_priority, cfg.consumer_priority,
    ));
    let res = pdlt::run(cfg, &reaper, |m| {
        out.progress(&format!("  scanning under preempt={m} …"))
    });
    drop(reaper);
    let res = res?;
    let files = [
        csv.map(|p| (p, text::pdlt_csv(&res))),
        svg.map(|p| (p, text::pdlt_svg(&res))),
    ];
    let body = text::pdlt(&res);
    let who = (cfg.cpu, cfg.producer_priority);
    let res = RunKind::Pdlt(Box::new(res));
    let rec = work.bench_record("pdlt", who, Vec::new(), tags, res);
    work.finish(out, &body, &files, &rec)
}

/// The Rhealstone suite; `max_seconds` as given, for the progress line.
pub fn rhealstone(
    cfg: &rhealstone::Config,
    max_seconds: f64,
    out: &RecordOutputs,
) -> Result<(), VerbError> {
    let tags = out.validate()?;
    let work = work::begin("rhealstone", Need::RealTime, "SCHED_FIFO, mlockall")?;
    let reaper = Reaper::start().map_err(VerbError::failed)?;
    let p = cfg.priority_high;
    out.progress(&format!(
        "rtscope rhealstone: CPU {}, SCHED_FIFO {p}/{}/{}, {} iterations per metric (cap {max_seconds} s each)",
        cfg.cpu,
        p - 10,
        p - 20,
        cfg.iterations,
    ));
    let res = rhealstone::run(cfg, &reaper, |m, v| out.progress(&format!("  {m} / {v} …")));
    drop(reaper);
    let res = res?;
    let body = text::rhealstone(&res);
    let warnings = rhealstone::warnings(&res);
    let res = RunKind::Rhealstone(Box::new(res));
    let rec = work.bench_record("rhealstone", (cfg.cpu, p), warnings, tags, res);
    work.finish(out, &body, &[], &rec)
}

/// The sched-scale measurement; `sleep_ms` as given, for the progress line.
pub fn sched_scale(
    cfg: &sched_scale::Config,
    sleep_ms: f64,
    (csv, svg): (Option<&Path>, Option<&Path>),
    out: &RecordOutputs,
) -> Result<(), VerbError> {
    check_files([("--csv", csv), ("--svg", svg)])?;
    let tags = out.validate()?;
    let why = "SCHED_FIFO, mlockall, tracefs";
    let work = work::begin("sched-scale", Need::Root, why)?;
    // PREEMPT_RT needs the tracepoint method (fentry's trampoline is a preemption point there).
    let tracepoints = cfg.sched_time == sched_scale::SchedTime::Preemptirq
        || rtscope_probe::system::running_preempt_rt();
    // Attached before anything starts: `--sched-time on` stops here when the kernel refuses.
    let (mut timer, sched_unavailable) = match cfg.sched_time {
        sched_scale::SchedTime::Off => (None, None),
        mode => match rtscope_trace::schedtime::attach(std::process::id(), cfg.cpu, tracepoints) {
            Ok(t) => (Some(SchedFentry(t)), None),
            Err(e) if mode != sched_scale::SchedTime::Auto => {
                return Err(VerbError::BadInput(format!(
                    "--sched-time {}: the scheduler cannot be timed on this kernel: {e}",
                    if tracepoints { "preemptirq" } else { "on" }
                )))
            }
            Err(e) => (None, Some(e)),
        },
    };
    let method = rtscope_trace::schedtime::start_method(tracepoints);
    let reaper = Reaper::start().map_err(VerbError::failed)?;
    out.progress(&format!(
        "rtscope sched-scale: CPU {}, SCHED_FIFO {}, {} wake-ups every {sleep_ms} ms per level, N = {:?}, time in the scheduler: {}",
        cfg.cpu,
        cfg.priority,
        cfg.wakeups,
        cfg.loads,
        if timer.is_some() { method } else { "no" }
    ));
    let res = sched_scale::run(
        cfg,
        &reaper,
        timer
            .as_mut()
            .map(|t| t as &mut dyn sched_scale::SchedTimer),
        |n| out.progress(&format!("  N = {n} …")),
    );
    let timed = timer.is_some();
    drop(timer);
    drop(reaper);
    let mut res = res?;
    res.sched_time_method = timed.then(|| method.to_string());
    res.sched_time_unavailable = sched_unavailable;
    let files = [
        csv.map(|p| (p, text::sched_scale_csv(&res))),
        svg.map(|p| (p, text::sched_scale_svg(&res))),
    ];
    let body = text::sched_scale(&res);
    let warnings = sched_scale::warnings(&res, work.interrupted());
    let who = (cfg.cpu, cfg.priority);
    let res = RunKind::SchedScale(Box::new(res));
    let rec = work.bench_record("sched-scale", who, warnings, tags, res);
    work.finish(out, &body, &files, &rec)
}

/// sched-scale's in-kernel scheduler timing (fentry/tp_btf programs of rtscope-trace).
struct SchedFentry(rtscope_trace::schedtime::SchedTiming);

impl sched_scale::SchedTimer for SchedFentry {
    fn drain(&mut self) -> (Vec<u64>, u64) {
        let d = self.0.drain();
        (d.samples_ns, d.missed + d.dropped)
    }
}
