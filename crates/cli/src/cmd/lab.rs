//! `rtscope lab kernel build|list|run`: kernels as inputs (crates/lab).

use super::common::{self, OutArgs};
use crate::exit::ExitCode;
use crate::usage;
use anyhow::Result;
use clap::CommandFactory;
use rtscope_lab::verb::{self, VerbWork};
use rtscope_lab::{guest, home, kernel, preset::Preset, LabError};
use rtscope_load::LoadKind;
use std::path::PathBuf;

mod flags;
pub use flags::*;

/// What an empty kernel list says to run.
const BUILD: &str = "rtscope lab kernel build --preset trace";

fn lab_err(e: LabError) -> anyhow::Error {
    match e {
        LabError::Usage(m) | LabError::Missing(m) => usage!("{m}"),
        LabError::Interrupted(m) => anyhow::Error::new(ExitCode(0, m)),
        other => anyhow::anyhow!("{other}"),
    }
}

pub fn run(a: Args) -> Result<()> {
    // Directories of lab runs whose rtscope was killed outright (their QEMU died with it).
    guest::sweep_stale(&std::env::temp_dir());
    match a.cmd {
        Sub::Kernel {
            cmd:
                KernelSub::Build {
                    preset,
                    jobs,
                    force,
                    quiet,
                },
        } => build(preset, jobs, force, quiet),
        Sub::Kernel {
            cmd: KernelSub::List { json },
        }
        | Sub::List { json } => Ok(rtscope_verbs::lab::list(&json.dest(), BUILD)?),
        Sub::Run(r) => run_verb(*r),
        Sub::NicSink { port } => rtscope_lab::nic::sink(port).map_err(|e| anyhow::anyhow!("{e}")),
    }
}

fn build(p: Preset, jobs: Option<u32>, force: bool, quiet: bool) -> Result<()> {
    let k = kernel::build(p, &kernel::BuildOpts::new(jobs, force, !quiet)).map_err(lab_err)?;
    let how = if p.is_built() {
        format!(
            "built in {:.0} s with {} jobs",
            k.meta.build_secs, k.meta.jobs
        )
    } else {
        "Debian's image".to_string()
    };
    println!(
        "{}  {}  ({}; {how})\n  {}",
        k.meta.name,
        k.meta.features.summary(),
        k.meta.source,
        k.image().display()
    );
    Ok(())
}

/// The guest verb read by this binary's own grammar, as the guest will read it, and what it
/// asks of the guest: its length, its load, its disk load's file. Nothing is resolved (its
/// files, CPUs and devices are the guest's). A refusal is one line naming the flag (exit 2),
/// before anything boots.
pub fn guest_work(verb: &[String]) -> Result<VerbWork> {
    guest::check_verb(verb).map_err(lab_err)?;
    let name = verb.first().map_or("", String::as_str);
    let refused = |e: &str| usage!("lab run -- {name}: {e}");
    let argv: Vec<std::ffi::OsString> = std::iter::once("rtscope".into())
        .chain(verb.iter().map(Into::into))
        .collect();
    let matches =
        match crate::Cli::command().try_get_matches_from(crate::deprecated::rewrite_argv(&argv)) {
            Ok(m) => m,
            // `--help`, `--version`: the guest prints them.
            Err(e) if !e.use_stderr() => return Ok(VerbWork::default()),
            Err(e) => {
                let line = crate::exit::clap_line(&e);
                return Err(refused(
                    line.strip_prefix("error: ").unwrap_or(line.as_str()),
                ));
            }
        };
    let (mut path, mut m) = (Vec::new(), &matches);
    while let Some((sub, sm)) = m.subcommand() {
        path.push(sub);
        m = sm;
    }
    if path == ["cyclictest"] {
        return cyclictest_work(m).map_err(|e| refused(&e));
    }
    let kinds: Vec<LoadKind> = ["load", "kinds"]
        .iter()
        .filter_map(|id| m.try_get_one::<common::LoadKinds>(id).ok().flatten())
        .flat_map(|k| k.0.iter().copied())
        .collect();
    // `practise kernel`'s task-set load (deadline, fifo) keeps the CPUs busy too.
    let task_set = path == ["practise", "kernel"] && raw(m, "load").is_some_and(|l| l != "none");
    let disk_file = if kinds.iter().any(|k| k.parts().contains(&LoadKind::Disk)) {
        let size = m.try_get_one::<String>("disk_size").ok().flatten();
        let size = size.map_or("1G", String::as_str);
        Some(rtscope_load::parse_size(size).map_err(|e| refused(&format!("--disk-size: {e}")))?)
    } else {
        None
    };
    let length_s = if path == ["taskset", "sweep"] {
        let count = |id: &str| m.try_get_raw(id).ok().flatten().map_or(0, |v| v.len());
        let sets = m.try_get_one::<u32>("sets").ok().flatten().copied();
        let run_s = duration_s(m, true)
            .map_err(|e| refused(&e))?
            .or(Some(super::taskset::SWEEP_RUN.as_secs_f64()));
        sets.zip(run_s).map(|(sets, run_s)| {
            verb::sweep_length_s(count("loads"), sets, count("policies"), run_s)
        })
    } else {
        duration_s(m, false).map_err(|e| refused(&e))?
    };
    Ok(VerbWork {
        length_s,
        load: task_set || kinds.iter().any(|k| *k != LoadKind::Idle),
        disk_file,
    })
}

/// The first value of `id` as written (or defaulted), when the verb has that argument.
fn raw<'a>(m: &'a clap::ArgMatches, id: &str) -> Option<&'a str> {
    m.try_get_raw(id).ok().flatten()?.next()?.to_str()
}

/// The verb's `-D/--duration` in seconds when the command line gives it (`default`: also its
/// default). Verbs whose duration clap keeps as text check its range themselves.
fn duration_s(m: &clap::ArgMatches, default: bool) -> Result<Option<f64>, String> {
    if !m.try_contains_id("duration").unwrap_or(false) {
        return Ok(None);
    }
    if !default && m.value_source("duration") != Some(clap::parser::ValueSource::CommandLine) {
        return Ok(None);
    }
    if let Ok(Some(d)) = m.try_get_one::<std::time::Duration>("duration") {
        return Ok(Some(d.as_secs_f64()));
    }
    raw(m, "duration")
        .map(|t| rtscope_model::duration::parse_secs(t).map_err(|e| format!("-D/--duration: {e}")))
        .transpose()
}

/// `cyclictest`'s flags are cyclictest's own (getopt): its `-D`.
fn cyclictest_work(m: &clap::ArgMatches) -> Result<VerbWork, String> {
    let argv: Vec<String> = m
        .try_get_many::<String>("argv")
        .ok()
        .flatten()
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let f = rtscope_report::cyclictest_args::parse(&argv)?;
    let length_s = f
        .duration
        .map(|d| rtscope_model::duration::parse_secs(&d).map_err(|e| format!("-D: {e}")))
        .transpose()?;
    Ok(VerbWork {
        length_s,
        ..VerbWork::default()
    })
}

fn run_verb(r: RunArgs) -> Result<()> {
    let tags = r.output.validate()?;
    let work = guest_work(&r.verb)?;
    let (timeout, guest_limit) = work.limits(r.timeout, r.smp, !r.multi_thread);
    let k = kernel::find(&rtscope_lab::cache_dir(), &r.kernel).map_err(lab_err)?;
    let spec = guest::RunSpec {
        kernel: k,
        preempt: r.preempt,
        smp: r.smp,
        mem_mib: r.mem,
        icount: r.icount,
        timeout,
        guest_limit,
        rtscope: std::env::current_exe()?,
        args: r.verb.clone(),
        cmdline: r.cmdline.clone(),
        live: r.output.text(),
        failure_log: Some(home::failure_log(&r.out)),
        guest_bins: r
            .guest_bins
            .iter()
            .map(|b| rtscope_lab::in_path(b))
            .collect(),
        alongside: r.alongside.clone(),
        single_thread: !r.multi_thread,
        scratch_disk: work.scratch_disk().filter(|_| !r.no_scratch_disk),
        nic_load: r.nic_load,
    };
    spec.validate().map_err(lab_err)?;
    rtscope_files::check_output_dir(&r.out, Some(64 << 20))
        .map_err(|e| usage!("--out {}: {e}", r.out.display()))?;
    r.output.progress(&format!(
        "lab: booting {} ({}, preempt {}, {} vCPUs, {} MiB{}) for `rtscope {}`",
        spec.kernel.meta.name,
        spec.emulation(),
        spec.preempt_model(),
        spec.smp,
        spec.mem_mib,
        r.nic_load.map_or(String::new(), |n| format!(
            ", virtio-net fed {} datagrams/s",
            n.pps
        )),
        r.verb.join(" ")
    ));
    let out = guest::run(&spec).map_err(lab_err)?;
    r.output.progress(&format!(
        "lab: guest {} ({} CPUs) reached the verb after {:.1} s, finished after {:.1} s; verb exit {}",
        out.release, out.guest_cpus, out.boot_secs, out.total_secs, out.exit_code
    ));
    let nic = rtscope_lab::nic::Figures::from_files(&out.files);
    match &nic {
        Some(Ok(f)) => r
            .output
            .progress(&format!("lab: {}", crate::exit::libraries(&f.summary()))),
        Some(Err(m)) => r.output.progress(&format!("lab: NIC load: {m}")),
        None => {}
    }
    let (dest, records) = home::bring_run_home(&spec, &out, tags, &r.out).map_err(lab_err)?;
    r.output
        .progress(&format!("lab: the guest's files are in {}", dest.display()));
    for rec in &records {
        common::emit(&r.output, rec)?;
    }
    if out.exit_code != 0 {
        return Err(anyhow::Error::new(ExitCode(
            out.exit_code,
            format!(
                "lab run: `rtscope {}` exited {} in the guest",
                r.verb.join(" "),
                out.exit_code
            ),
        )));
    }
    if records.is_empty() {
        r.output
            .progress("lab: the verb stored no record in the guest (nothing to bring home)");
    }
    Ok(())
}
