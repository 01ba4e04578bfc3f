//! `rtscope lab kernel build|list|run`: kernels as inputs (crates/lab).

use super::common::{self, OutArgs};
use crate::exit::ExitCode;
use crate::usage;
use anyhow::Result;
use rtscope_lab::{guest, home, kernel, preset::Preset, LabError};
use std::path::PathBuf;

mod flags;
pub use flags::*;

/// A bare name through PATH (as a shell would find it); a path as given.
fn in_path(b: &std::path::Path) -> PathBuf {
    if b.components().count() > 1 {
        return b.to_path_buf();
    }
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(b))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.is_file())
        .unwrap_or_else(|| b.to_path_buf())
}

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
        } => build(&preset, jobs, force, quiet),
        Sub::Kernel {
            cmd: KernelSub::List { json },
        }
        | Sub::List { json } => list(&json),
        Sub::Run(r) => run_verb(*r),
        Sub::NicSink { port } => rtscope_lab::nic::sink(port).map_err(|e| anyhow::anyhow!("{e}")),
    }
}

fn build(preset: &str, jobs: Option<u32>, force: bool, quiet: bool) -> Result<()> {
    let p = Preset::parse(preset).map_err(lab_err)?;
    let jobs = match jobs {
        Some(0) => return Err(usage!("--jobs: must be 1..=1024; got 0")),
        Some(j) => j,
        None => rtscope_probe::sys::online_cpus()
            .map(|c| c.len() as u32)
            .unwrap_or(1),
    };
    let k = kernel::build(
        p,
        &kernel::BuildOpts {
            jobs,
            force,
            progress: !quiet,
        },
    )
    .map_err(lab_err)?;
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

fn list(json: &common::JsonOut) -> Result<()> {
    json.check()?;
    let ks = kernel::list(&rtscope_lab::cache_dir());
    if json.path.is_some() {
        let metas: Vec<&kernel::KernelMeta> = ks.iter().map(|k| &k.meta).collect();
        return json.write(&serde_json::to_string_pretty(&metas)?);
    }
    if ks.is_empty() {
        println!(
            "no kernels in {} (build one: rtscope lab kernel build --preset trace)",
            rtscope_lab::cache_dir().display()
        );
        return Ok(());
    }
    let rows: Vec<Vec<String>> = ks
        .iter()
        .map(|k| {
            vec![
                k.meta.name.clone(),
                k.meta.release.clone(),
                k.meta.features.summary(),
                k.meta.built_at.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        rtscope_report::table::render(&["kernel", "release", "supports", "built"], &rows)
    );
    Ok(())
}

/// `--mem`: a size in the load flags' grammar (`768M`, `1G`, `2GiB`); a bare number is MiB,
/// as QEMU's `-m` reads it.
pub fn mem_mib(s: &str) -> Result<u64> {
    let t = s.trim();
    let mib = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse::<u64>().ok()
    } else {
        rtscope_load::parse_size(t).ok().map(|b| b >> 20)
    };
    mib.filter(|m| (128..=65536).contains(m))
        .ok_or_else(|| usage!("--mem: must be 128M..=64G (e.g. 1G, 768M); got '{s}'"))
}

/// Room on the scratch disk beyond the disk load's file: the load's own 64 MiB margin (small
/// files, metadata) and the file system's tables.
const SCRATCH_EXTRA: u64 = 128 << 20;

/// The scratch disk a verb's disk load needs, in bytes: its `--disk-size` (default 1G) plus
/// [`SCRATCH_EXTRA`]; None when no load of the verb writes files (`--load` of `measure`/`run`,
/// or the kinds of `rtscope load`, without disk or io). Flags after `--` are not the verb's.
pub fn scratch_disk_bytes(verb: &[String]) -> Option<u64> {
    use rtscope_load::LoadKind;
    let args: Vec<&str> = verb
        .iter()
        .skip(1)
        .map(String::as_str)
        .take_while(|a| *a != "--")
        .collect();
    let value = |flag: &str| -> Vec<&str> {
        let mut v = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if *a == flag {
                v.extend(args.get(i + 1).copied());
            } else if let Some(x) = a.strip_prefix(flag).and_then(|x| x.strip_prefix('=')) {
                v.push(x);
            }
        }
        v
    };
    let mut kinds = value("--load");
    if verb.first().map(String::as_str) == Some("load") {
        // `rtscope load KIND[,KIND…]`: the positional argument.
        kinds.extend(args.iter().filter(|a| !a.starts_with('-')));
    }
    let disk = kinds.iter().any(|k| {
        k.split(',').any(|k| {
            k.parse::<LoadKind>()
                .is_ok_and(|k| k.parts().contains(&LoadKind::Disk))
        })
    });
    if !disk {
        return None;
    }
    let size = value("--disk-size")
        .last()
        .and_then(|s| rtscope_load::parse_size(s).ok())
        .unwrap_or(rtscope_load::parse_size("1G").expect("a valid size"));
    Some(size.saturating_add(SCRATCH_EXTRA))
}

/// The verb's whole length, to size the default timeout: its `-D/--duration`, times the number
/// of runs for `taskset sweep` (loads × sets × policies, whose -D is per run; defaults 10 s,
/// 50 sets, 2 policies as the verb's).
pub fn verb_length_s(args: &[String]) -> Option<f64> {
    if !(args.first().is_some_and(|a| a == "taskset") && args.get(1).is_some_and(|a| a == "sweep"))
    {
        return verb_duration_s(args);
    }
    let value = |name: &str| {
        let eq = format!("{name}=");
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
            .or_else(|| {
                args.iter()
                    .find_map(|a| a.strip_prefix(&eq).map(String::from))
            })
    };
    let count = |name: &str, default: usize| value(name).map_or(default, |v| v.split(',').count());
    let sets: f64 = value("--sets").and_then(|v| v.parse().ok()).unwrap_or(50.0);
    let runs = count("--loads", 1) as f64 * sets * count("--policies", 2) as f64;
    Some(runs * verb_duration_s(args).unwrap_or(10.0))
}

/// Whether the verb runs a background load other than `idle` (`--load KIND`).
fn verb_has_load(args: &[String]) -> bool {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = if a == "--load" {
            it.next().map(String::as_str)
        } else {
            a.strip_prefix("--load=")
        };
        if v.is_some_and(|v| v != "idle") {
            return true;
        }
    }
    false
}

/// The verb's own `-D/--duration`.
pub fn verb_duration_s(args: &[String]) -> Option<f64> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = if a == "-D" || a == "--duration" {
            it.next().cloned()
        } else if let Some(v) = a.strip_prefix("--duration=") {
            Some(v.to_string())
        } else {
            a.strip_prefix("-D")
                .filter(|v| !v.is_empty())
                .map(String::from)
        };
        if let Some(v) = v {
            return rtscope_model::duration::parse_secs_in(&v, 0.0, 1e9).ok();
        }
    }
    None
}

fn run_verb(r: RunArgs) -> Result<()> {
    let tags = r.output.validate()?;
    guest::check_verb(&r.verb).map_err(lab_err)?;
    let mem = mem_mib(&r.mem)?;
    let nic_load = r
        .nic_load
        .as_deref()
        .map(rtscope_lab::nic::NicLoad::parse)
        .transpose()
        .map_err(lab_err)?;
    // Without --timeout the limit is in the guest's own time (guest::GuestLimit): the host
    // cost of an emulated second varies by orders of magnitude with icount, busy vCPUs and the
    // host's load; a hard host limit of a week stays as the last resort.
    let (timeout, guest_limit) = match &r.timeout {
        Some(t) => (
            common::parse_duration_in("--timeout", t, 10.0, 7.0 * 86400.0)?,
            None,
        ),
        None => (
            7.0 * 86400.0,
            Some(guest::GuestLimit {
                verb_s: 3.0 * verb_length_s(&r.verb).unwrap_or(60.0) + 180.0,
                busy_vcpus: if !r.multi_thread && verb_has_load(&r.verb) {
                    r.smp
                } else {
                    1
                },
                boot_s: 600.0,
            }),
        ),
    };
    let k = kernel::find(&rtscope_lab::cache_dir(), &r.kernel).map_err(lab_err)?;
    let preempt = r
        .preempt
        .as_deref()
        .map(guest::Preempt::parse)
        .transpose()
        .map_err(lab_err)?;
    let lab_id = rtscope_session::record::new_run_id();
    let spec = guest::RunSpec {
        kernel: k,
        preempt,
        smp: r.smp,
        mem_mib: mem,
        icount: r
            .icount
            .as_deref()
            .map(guest::Icount::parse)
            .transpose()
            .map_err(lab_err)?,
        timeout: std::time::Duration::from_secs_f64(timeout),
        guest_limit,
        rtscope: std::env::current_exe()?,
        args: r.verb.clone(),
        cmdline: r.cmdline.clone(),
        live: r.output.text(),
        failure_log: Some(r.out.join(format!("lab-{lab_id}-failed-console.log"))),
        guest_bins: r.guest_bins.iter().map(|b| in_path(b)).collect(),
        alongside: r.alongside.clone(),
        single_thread: !r.multi_thread,
        scratch_disk: (!r.no_scratch_disk)
            .then(|| scratch_disk_bytes(&r.verb))
            .flatten(),
        nic_load,
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
        nic_load.map_or(String::new(), |n| format!(
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
    let dest = r
        .out
        .join(format!("lab-{}", rtscope_session::record::new_run_id()));
    let mut all_tags = home::lab_tags(&spec, &out);
    all_tags.extend(tags);
    let records = home::bring_home(&out, &all_tags, &home::emulation_warning(&spec), &dest)
        .map_err(lab_err)?;
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
