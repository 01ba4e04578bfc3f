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
    // Said before anything starts: on this kind of machine the model cannot be switched.
    if cfg.compare_preempt {
        if let Err(BenchError::Unavailable(m)) = pdlt::check_compare_preempt() {
            return Err(VerbError::failed(m));
        }
    }
    let work = work::begin("pdlt", Need::RealTime, "SCHED_FIFO, mlockall")?;
    let reaper = Reaper::start().map_err(VerbError::failed)?;
    out.progress(&format!(
        "rtscope pdlt: {} of {} on CPU {}, producer FIFO {}, consumer FIFO {}, step {step_us} µs",
        cfg.syscall.name(),
        cfg.size,
        cfg.cpu,
        cfg.producer_priority,
        cfg.consumer_priority,
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
    let reaper = Reaper::start().map_err(VerbError::failed)?;
    out.progress(&format!(
        "rtscope sched-scale: CPU {}, SCHED_FIFO {}, {} wake-ups every {sleep_ms} ms per level, N = {:?}",
        cfg.cpu, cfg.priority, cfg.wakeups, cfg.loads
    ));
    let res = sched_scale::run(cfg, &reaper, |n| out.progress(&format!("  N = {n} …")));
    drop(reaper);
    let res = res?;
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
