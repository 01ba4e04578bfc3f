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
    let started = std::time::SystemTime::now();
    let res = job.run()?;
    let wall = started.elapsed().map(|d| d.as_secs_f64()).unwrap_or(0.0);
    match (out.text(), out.quiet) {
        (false, _) => {}
        (true, true) => println!("{}", text::summary_line(&res)),
        (true, false) => print!("{}", text::result(&res)),
    }
    let cpus = &job.options.cpus;
    out.emit(&crate::record::taskset_record(
        &res, cpus, started, wall, tags,
    ))?;
    if res.interrupted {
        eprintln!("rtscope: interrupted: results are partial (the record says so)");
    }
    Ok(())
}
