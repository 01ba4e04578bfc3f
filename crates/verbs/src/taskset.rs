//! `rtscope taskset run` once planned (`rtscope_bench::taskset::job::prepare`): what the rt-app
//! reader could not carry over said first, the run, its text, its record stored. A stop by
//! SIGINT/SIGTERM is a finished run with partial results (exit 0), marked `interrupted` in the
//! record, like every verb's.

use crate::input::VerbError;
use crate::outputs::RecordOutputs;
use rtscope_bench::taskset::job::Prepared;
use rtscope_report::taskset as text;

/// Run `job`; `-q` prints only the summary line. `tags` are `out`'s, validated before the job
/// was prepared.
pub fn run(
    job: &Prepared,
    out: &RecordOutputs,
    tags: std::collections::BTreeMap<String, String>,
) -> Result<(), VerbError> {
    for n in &job.notes {
        eprintln!("rtscope: note: {n}");
    }
    // The task-set runner installs its own stop handling (it must stop its task threads).
    let work = crate::work::Work::clock();
    let res = job.run()?;
    match (out.text(), out.quiet) {
        (false, _) => {}
        (true, true) => println!("{}", text::summary_line(&res)),
        (true, false) => print!("{}", text::result(&res)),
    }
    emit(
        out,
        &work,
        job.options.cpus.clone(),
        res.interrupted,
        res.warnings.clone(),
        tags,
        rtscope_model::RunKind::Taskset(Box::new(res.clone())),
    )
}

/// `taskset sweep`: every run's line as it ends (unless `-q`), then the per-point table, and one
/// record for the whole sweep.
pub fn sweep(
    job: &rtscope_bench::taskset::sweep::SweepJob,
    out: &RecordOutputs,
    tags: std::collections::BTreeMap<String, String>,
) -> Result<(), VerbError> {
    let work = crate::work::Work::clock();
    let verbose = out.text() && !out.quiet;
    let res = job.run(|r| {
        if verbose {
            println!("{}", text::sweep_run_line(r));
        }
    })?;
    if out.text() {
        print!("{}", text::sweep(&res));
    }
    emit(
        out,
        &work,
        job.config.cpus.clone(),
        res.interrupted,
        res.warnings.clone(),
        tags,
        rtscope_model::RunKind::TasksetSweep(Box::new(res.clone())),
    )
}

/// One taskset record (a run or a sweep): the task threads' hygiene, then a word on stderr if
/// the results are partial.
fn emit(
    out: &RecordOutputs,
    work: &crate::work::Work,
    cpus: Vec<u32>,
    interrupted: bool,
    warnings: Vec<rtscope_model::warning::Warning>,
    tags: std::collections::BTreeMap<String, String>,
    kind: rtscope_model::RunKind,
) -> Result<(), VerbError> {
    out.emit(&work.record(crate::record::WorkInfo {
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
    }))?;
    if interrupted {
        eprintln!("rtscope: interrupted: results are partial (the record says so)");
    }
    Ok(())
}
