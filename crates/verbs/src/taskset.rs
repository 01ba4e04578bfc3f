//! `rtscope taskset run` once planned (`rtscope_bench::taskset::job::prepare`) and `taskset
//! sweep`, each a [`Tool`] of the one lifecycle: what the rt-app reader could not carry over said
//! first, the run (its whole work is one step: the task-set runner installs its own stop
//! handling, it must stop its task threads), its record, its text, the record stored. A stop by
//! SIGINT/SIGTERM is a finished run with partial results (exit 0), marked `interrupted` in the
//! record, like every verb's.

use crate::input::VerbError;
use crate::outputs::RecordOutputs;
use crate::tool::{run_tool, Flow, Tool, Work};
use rtscope_bench::taskset::job::Prepared;
use rtscope_bench::taskset::sweep::SweepJob;
use rtscope_model::taskset::{SweepResult, TasksetResult};
use rtscope_model::RunRecord;
use rtscope_report::taskset as text;
use std::collections::BTreeMap;

/// Run `job`; `-q` prints only the summary line. `tags` are `out`'s, validated before the job
/// was prepared.
pub fn run(
    job: &Prepared,
    out: &RecordOutputs,
    tags: BTreeMap<String, String>,
) -> Result<(), VerbError> {
    run_tool(TasksetRun {
        job,
        out,
        tags,
        res: None,
    })
}

/// `taskset sweep`: every run's line as it ends (unless `-q`), then the per-point table, and one
/// record for the whole sweep.
pub fn sweep(
    job: &SweepJob,
    out: &RecordOutputs,
    tags: BTreeMap<String, String>,
) -> Result<(), VerbError> {
    run_tool(TasksetSweep {
        job,
        out,
        tags,
        res: None,
    })
}

struct TasksetRun<'a> {
    job: &'a Prepared,
    out: &'a RecordOutputs,
    tags: BTreeMap<String, String>,
    res: Option<TasksetResult>,
}

impl Tool for TasksetRun<'_> {
    type Output = ();

    fn start(&mut self, _w: &Work) -> Result<(), VerbError> {
        for n in &self.job.notes {
            eprintln!("rtscope: note: {n}");
        }
        Ok(())
    }

    fn step(&mut self, _w: &Work) -> Result<Flow, VerbError> {
        let Some(_) = &self.job.rt_app else {
            self.res = Some(self.job.run()?);
            return Ok(Flow::Done);
        };
        let mut kv = KernelView::start();
        let mut res = self.job.run_watched(&mut kv)?;
        kv.attach(&mut res);
        self.res = Some(res);
        Ok(Flow::Done)
    }

    fn record(&mut self, w: &Work) -> Result<Option<RunRecord>, VerbError> {
        let res = done(&self.res)?;
        Ok(Some(record(
            w,
            self.job.options.cpus.clone(),
            (res.interrupted, res.warnings.clone()),
            std::mem::take(&mut self.tags),
            rtscope_model::RunKind::Taskset(Box::new(res.clone())),
        )))
    }

    fn outputs(self, _w: &Work, rec: Option<RunRecord>) -> Result<(), VerbError> {
        let res = done(&self.res)?;
        match (self.out.text(), self.out.quiet) {
            (false, _) => {}
            (true, true) => println!("{}", text::summary_line(res)),
            (true, false) => print!("{}", text::result(res)),
        }
        emit(self.out, rec)
    }
}

/// The kernel's view of rt-app's threads: the watch's eBPF programs attached before rt-app
/// starts, its process added the moment it exists (so its threads are seen from their first
/// wake-up), stepped while it runs, then every activation compared with rt-app's own log.
struct KernelView {
    watcher: Option<crate::watch::Watcher>,
    why_not: Option<String>,
    tids: Vec<u32>,
    last_step: Option<std::time::Instant>,
    samples: Vec<rtscope_model::RawSample>,
}

/// How often the watcher reads its ring buffer while rt-app runs (the engine ticks every 2 ms).
const KERNEL_VIEW_STEP: std::time::Duration = std::time::Duration::from_millis(50);

impl KernelView {
    fn start() -> KernelView {
        let spec = rtscope_trace::watch::WatchSpec {
            tgids: Vec::new(),
            comm: None,
            follow_children: false,
            cgroup_id: None,
        };
        let (watcher, why_not) = match crate::watch::Watcher::start(&spec, 0, None, false) {
            Ok(w) => (Some(w), None),
            Err(e) => (None, Some(e)),
        };
        KernelView {
            watcher,
            why_not,
            tids: Vec::new(),
            last_step: None,
            samples: Vec::new(),
        }
    }

    /// The kernel's view and its comparison with rt-app's, into `res`'s rt-app view; a view
    /// that could not be taken is said in a warning.
    fn attach(mut self, res: &mut TasksetResult) {
        use rtscope_model::{Warning, WarningCode};
        let Some(view) = res.rt_app.as_mut() else {
            return;
        };
        let Some(mut w) = self.watcher.take() else {
            let why = self.why_not.unwrap_or_else(|| "not started".into());
            res.warnings.push(Warning::new(
                WarningCode::Trace,
                format!("the kernel's view of rt-app's threads was not taken: {why}"),
            ));
            return;
        };
        w.finish(rtscope_sys::clock::monotonic_ns(), &mut self.samples);
        let comm = |t: u32| rtscope_trace::sys::comm_of(t).unwrap_or_else(|| format!("tid{t}"));
        let mut kernel = w.result("rt-app", None, &comm);
        // rt-app's main thread only waits for the others: not one of its workload's threads.
        kernel.threads.retain(|t| self.tids.contains(&t.tid));
        if kernel.dropped_events > 0 {
            res.warnings.push(Warning::new(
                WarningCode::LostEvents,
                format!(
                    "the kernel's view of rt-app's threads lost {} events (ring buffer full): \
                     its activation counts are low",
                    kernel.dropped_events
                ),
            ));
        }
        view.agreement = rtscope_analysis::rtapp::agreement(&view.threads, &self.tids, &kernel);
        view.kernel = Some(kernel);
    }
}

impl rtscope_bench::taskset::rtapp_engine::Observer for KernelView {
    fn spawned(&mut self, pid: u32) {
        if let Some(w) = self.watcher.as_mut() {
            if let Err(e) = w.add_tgid(pid) {
                self.why_not = Some(e);
                self.watcher = None;
            }
        }
    }

    fn threads(&mut self, _pid: u32, threads: &[(i32, String)]) {
        self.tids = threads.iter().map(|&(t, _)| t as u32).collect();
    }

    fn tick(&mut self) {
        let due = self
            .last_step
            .is_none_or(|t| t.elapsed() >= KERNEL_VIEW_STEP);
        if let (Some(w), true) = (self.watcher.as_mut(), due) {
            w.step(rtscope_sys::clock::monotonic_ns(), &mut self.samples);
            // Each activation is in the per-thread sums; the samples are not needed here.
            self.samples.clear();
            self.last_step = Some(std::time::Instant::now());
        }
    }
}

struct TasksetSweep<'a> {
    job: &'a SweepJob,
    out: &'a RecordOutputs,
    tags: BTreeMap<String, String>,
    res: Option<SweepResult>,
}

impl Tool for TasksetSweep<'_> {
    type Output = ();

    fn step(&mut self, _w: &Work) -> Result<Flow, VerbError> {
        let verbose = self.out.text() && !self.out.quiet;
        self.res = Some(self.job.run(|r| {
            if verbose {
                println!("{}", text::sweep_run_line(r));
            }
        })?);
        Ok(Flow::Done)
    }

    fn record(&mut self, w: &Work) -> Result<Option<RunRecord>, VerbError> {
        let res = done(&self.res)?;
        Ok(Some(record(
            w,
            self.job.config.cpus.clone(),
            (res.interrupted, res.warnings.clone()),
            std::mem::take(&mut self.tags),
            rtscope_model::RunKind::TasksetSweep(Box::new(res.clone())),
        )))
    }

    fn outputs(self, _w: &Work, rec: Option<RunRecord>) -> Result<(), VerbError> {
        if self.out.text() {
            print!("{}", text::sweep(done(&self.res)?));
        }
        emit(self.out, rec)
    }
}

fn done<T>(res: &Option<T>) -> Result<&T, VerbError> {
    res.as_ref()
        .ok_or_else(|| VerbError::failed("the task set did not run"))
}

/// One taskset record (a run or a sweep) with the task threads' hygiene.
fn record(
    work: &Work,
    cpus: Vec<u32>,
    (interrupted, warnings): (bool, Vec<rtscope_model::warning::Warning>),
    tags: BTreeMap<String, String>,
    kind: rtscope_model::RunKind,
) -> RunRecord {
    work.record(crate::record::WorkInfo {
        verb: "taskset".into(),
        cpus,
        interrupted,
        hygiene: rtscope_model::Hygiene {
            mlockall: true,
            timer_slack_ns: Some(1),
            notes: vec![
                "task threads: timer slack 1 ns, memory locked, working sets prefaulted".into(),
            ],
            ..Default::default()
        },
        warnings,
        tags,
        loads: Vec::new(),
        kind,
    })
}

/// The record stored and written, then a word on stderr if the results are partial.
fn emit(out: &RecordOutputs, rec: Option<RunRecord>) -> Result<(), VerbError> {
    let rec = rec.ok_or_else(|| VerbError::failed("the task set made no record"))?;
    out.emit(&rec)?;
    if rec.interrupted {
        eprintln!("rtscope: interrupted: results are partial (the record says so)");
    }
    Ok(())
}
