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
        self.res = Some(self.job.run()?);
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
