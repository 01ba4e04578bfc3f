//! The benchmarks once resolved (`rtscope_bench::{pdlt, rhealstone, sched_scale}`'s
//! `Flags::resolve`): output files and flags checked, the privilege each needs, leftovers of
//! killed runs repaired, the stop signals, the cleanup reaper (IPC objects, scratch files and
//! tracefs instances go on every exit path), progress lines, the run, its text, CSV/SVG files
//! and its record.

use crate::input::{self, VerbError};
use crate::outputs::RecordOutputs;
use crate::privilege::Need;
use crate::tool::{run_tool, Begin, Flow, Tool, Work};
use rtscope_bench::common::{reaper::Reaper, BenchError};
use rtscope_bench::{pdlt, rhealstone, sched_scale};
use rtscope_model::{RunKind, RunRecord};
use rtscope_report::bench as text;
use std::collections::BTreeMap;
use std::path::Path;

rtscope_model::request_fields! {
    /// The files a benchmark writes besides its record (pdlt, sched-scale), as the refusals
    /// name them.
    pub enum Field in "bench_files" {
        Csv = "csv" => CSV,
        Svg = "svg" => SVG,
    }
}

/// The session's rule for each shared value, for the jobs of the bench crate (benchmarks, task
/// sets, M-BWI task sets).
pub struct Rules;

impl rtscope_bench::taskset::job::Values for Rules {
    type Error = VerbError;
    fn cpus(&self, flag: &str, spec: Option<&str>) -> Result<Vec<u32>, VerbError> {
        input::cpus(flag, spec)
    }
    fn read(&self, flag: &str, p: &Path) -> Result<String, VerbError> {
        input::read(flag, p)
    }
    fn output_dir(&self, flag: &str, p: &Path) -> Result<(), VerbError> {
        input::output_dir(flag, p)
    }
    fn write(&self, p: &Path, data: &[u8]) -> Result<(), VerbError> {
        crate::outputs::write_file(p, data)
    }
    fn require_realtime(&self, verb: &str, why: &str) -> Result<(), VerbError> {
        crate::privilege::require(verb, Need::RealTime, why).map_err(VerbError::failed)
    }
}

/// What a benchmark's run made: its text, its files, who ran at which priority (`(cpu,
/// priority)`), its warnings and its result.
struct Ran<'a> {
    body: String,
    files: Vec<Option<(&'a Path, String)>>,
    who: (u32, u32),
    warnings: Vec<rtscope_model::Warning>,
    /// Taken by the record.
    kind: Option<RunKind>,
}

/// A benchmark through the one lifecycle: begin (its privilege, leftovers of killed runs, the
/// stop signals), start (the cleanup reaper: IPC objects, scratch files and tracefs instances go
/// on every exit path), one step (the whole benchmark, its progress lines), stop (the reaper's
/// cleanup), record, outputs (text, CSV/SVG files, the record stored and written).
struct Bench<'a, R> {
    verb: &'static str,
    need: (Need, &'static str),
    out: &'a RecordOutputs,
    tags: BTreeMap<String, String>,
    run: Option<R>,
    reaper: Option<Reaper>,
    ran: Option<Ran<'a>>,
}

impl<'a, R> Bench<'a, R>
where
    R: FnOnce(&Reaper, &Work) -> Result<Ran<'a>, VerbError>,
{
    fn new(
        verb: &'static str,
        need: (Need, &'static str),
        out: &'a RecordOutputs,
        tags: BTreeMap<String, String>,
        run: R,
    ) -> Self {
        Bench {
            verb,
            need,
            out,
            tags,
            run: Some(run),
            reaper: None,
            ran: None,
        }
    }
}

impl<'a, R> Tool for Bench<'a, R>
where
    R: FnOnce(&Reaper, &Work) -> Result<Ran<'a>, VerbError>,
{
    type Output = ();

    fn begin(&self) -> Begin {
        Begin::live(self.verb, self.need.0, self.need.1)
    }

    fn start(&mut self, _w: &Work) -> Result<(), VerbError> {
        self.reaper = Some(Reaper::start().map_err(VerbError::failed)?);
        Ok(())
    }

    fn step(&mut self, w: &Work) -> Result<Flow, VerbError> {
        let (Some(run), Some(reaper)) = (self.run.take(), self.reaper.as_ref()) else {
            return Err(VerbError::failed("the benchmark was not started"));
        };
        let ran = run(reaper, w);
        // The reaper cleans up before an error is returned, as after a run that ended well.
        if ran.is_err() {
            self.reaper = None;
        }
        self.ran = Some(ran?);
        Ok(Flow::Done)
    }

    fn stop(&mut self, _w: &Work) -> Result<(), VerbError> {
        self.reaper = None;
        Ok(())
    }

    fn record(&mut self, w: &Work) -> Result<Option<RunRecord>, VerbError> {
        let Some(ran) = self.ran.as_mut() else {
            return Ok(None);
        };
        let Some(kind) = ran.kind.take() else {
            return Ok(None);
        };
        let warnings = std::mem::take(&mut ran.warnings);
        let tags = std::mem::take(&mut self.tags);
        Ok(Some(w.record(
            w.bench_info(self.verb, ran.who, warnings, tags, kind),
        )))
    }

    fn outputs(self, w: &Work, rec: Option<RunRecord>) -> Result<(), VerbError> {
        let (Some(ran), Some(rec)) = (self.ran, rec) else {
            return Err(VerbError::failed("the benchmark made no record"));
        };
        w.finish(self.out, &ran.body, &ran.files, &rec)
    }
}

/// A duration in the grammar's words (`1.5us`, `10ms`) for a progress line.
fn human_ns(ns: u64) -> String {
    rtscope_model::duration::human(ns as f64 / 1e9)
}

fn check_files(files: [(Field, Option<&Path>); 2]) -> Result<(), VerbError> {
    for (field, p) in files {
        p.map_or(Ok(()), |p| input::output(&field.to_string(), p))?;
    }
    Ok(())
}

/// The PDLT scan.
pub fn pdlt(
    cfg: &pdlt::Config,
    (csv, svg): (Option<&Path>, Option<&Path>),
    out: &RecordOutputs,
) -> Result<(), VerbError> {
    check_files([(CSV, csv), (SVG, svg)])?;
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
    let run = |reaper: &Reaper, _: &Work| -> Result<Ran, VerbError> {
        let what = match cfg.syscall {
            pdlt::Syscall::Driver => format!(
            "the test driver's loop of {} iterations with {} preemption point(s), device interrupt",
            cfg.size, cfg.points
        ),
            s => format!("{} of {}, timer interrupt", s.name(), cfg.size),
        };
        out.progress(&format!(
            "rtscope pdlt: {what}, on CPU {}, producer FIFO {}, consumer FIFO {}, step {}",
            cfg.cpu,
            cfg.producer_priority,
            cfg.consumer_priority,
            human_ns(cfg.step_ns),
        ));
        let res = pdlt::run(cfg, reaper, |m| {
            out.progress(&format!("  scanning under preempt={m} …"))
        })?;
        Ok(Ran {
            files: vec![
                csv.map(|p| (p, text::pdlt_csv(&res))),
                svg.map(|p| (p, text::pdlt_svg(&res))),
            ],
            body: text::pdlt(&res),
            who: (cfg.cpu, cfg.producer_priority),
            warnings: Vec::new(),
            kind: Some(RunKind::Pdlt(Box::new(res))),
        })
    };
    run_tool(Bench::new(
        "pdlt",
        (Need::RealTime, "SCHED_FIFO, mlockall"),
        out,
        tags,
        run,
    ))
}

/// The Rhealstone suite.
pub fn rhealstone(cfg: &rhealstone::Config, out: &RecordOutputs) -> Result<(), VerbError> {
    let tags = out.validate()?;
    let run = |reaper: &Reaper, _: &Work| -> Result<Ran, VerbError> {
        let p = cfg.priority_high;
        out.progress(&format!(
        "rtscope rhealstone: CPU {}, SCHED_FIFO {p}/{}/{}, {} iterations per metric (cap {} each)",
        cfg.cpu,
        p - 10,
        p - 20,
        cfg.iterations,
        human_ns(cfg.max_duration_ns),
    ));
        let res = rhealstone::run(cfg, reaper, |m, v| out.progress(&format!("  {m} / {v} …")))?;
        Ok(Ran {
            files: Vec::new(),
            body: text::rhealstone(&res),
            who: (cfg.cpu, p),
            warnings: rhealstone::warnings(&res),
            kind: Some(RunKind::Rhealstone(Box::new(res))),
        })
    };
    let need = (Need::RealTime, "SCHED_FIFO, mlockall");
    run_tool(Bench::new("rhealstone", need, out, tags, run))
}

/// The sched-scale measurement.
pub fn sched_scale(
    cfg: &sched_scale::Config,
    (csv, svg): (Option<&Path>, Option<&Path>),
    out: &RecordOutputs,
) -> Result<(), VerbError> {
    check_files([(CSV, csv), (SVG, svg)])?;
    let tags = out.validate()?;
    let run = |reaper: &Reaper, work: &Work| -> Result<Ran, VerbError> {
        // PREEMPT_RT needs the tracepoint method (fentry's trampoline is a preemption point there).
        let tracepoints = cfg.sched_time == sched_scale::SchedTime::Preemptirq
            || rtscope_probe::system::running_preempt_rt();
        // Attached before anything starts: `--sched-time on` stops here when the kernel refuses.
        let (mut timer, sched_unavailable) = match cfg.sched_time {
            sched_scale::SchedTime::Off => (None, None),
            mode => {
                match rtscope_trace::schedtime::attach(std::process::id(), cfg.cpu, tracepoints) {
                    Ok(t) => (Some(SchedFentry(t)), None),
                    Err(e) if mode != sched_scale::SchedTime::Auto => {
                        return Err(VerbError::BadInput(format!(
                            "{} {}: the scheduler cannot be timed on this kernel: {e}",
                            sched_scale::SCHED_TIME,
                            if tracepoints { "preemptirq" } else { "on" }
                        )))
                    }
                    Err(e) => (None, Some(e)),
                }
            }
        };
        let method = rtscope_trace::schedtime::start_method(tracepoints);
        out.progress(&format!(
        "rtscope sched-scale: CPU {}, SCHED_FIFO {}, {} wake-ups every {} per level, N = {:?}, time in the scheduler: {}",
        cfg.cpu,
        cfg.priority,
        cfg.wakeups,
        human_ns(cfg.sleep_ns),
        cfg.loads,
        if timer.is_some() { method } else { "no" }
    ));
        let res = sched_scale::run(
            cfg,
            reaper,
            timer
                .as_mut()
                .map(|t| t as &mut dyn sched_scale::SchedTimer),
            |n| out.progress(&format!("  N = {n} …")),
        );
        let timed = timer.is_some();
        drop(timer);
        let mut res = res?;
        res.sched_time_method = timed.then(|| method.to_string());
        res.sched_time_unavailable = sched_unavailable;
        Ok(Ran {
            files: vec![
                csv.map(|p| (p, text::sched_scale_csv(&res))),
                svg.map(|p| (p, text::sched_scale_svg(&res))),
            ],
            body: text::sched_scale(&res),
            who: (cfg.cpu, cfg.priority),
            warnings: sched_scale::warnings(&res, work.interrupted()),
            kind: Some(RunKind::SchedScale(Box::new(res))),
        })
    };
    let need = (Need::Root, "SCHED_FIFO, mlockall, tracefs");
    run_tool(Bench::new("sched-scale", need, out, tags, run))
}

/// sched-scale's in-kernel scheduler timing (fentry/tp_btf programs of rtscope-trace).
struct SchedFentry(rtscope_trace::schedtime::SchedTiming);

impl sched_scale::SchedTimer for SchedFentry {
    fn drain(&mut self) -> (Vec<u64>, u64) {
        let d = self.0.drain();
        (d.samples_ns, d.missed + d.dropped)
    }
}
