//! `rtscope lab kernel build|list|run`: kernels as inputs (crates/lab).

use super::common::{self, OutArgs};
use crate::exit::ExitCode;
use crate::usage;
use anyhow::Result;
use rtscope_lab::{guest, home, kernel, preset::Preset, LabError};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Build a kernel from Debian's linux-source-6.12 with a preset's config (trace, rt-trace),
    /// or fetch a Debian image (debian-stock, debian-rt). Cached: a second build is a hit.
    Kernel {
        #[command(subcommand)]
        cmd: KernelSub,
    },
    /// The kernels in the cache and what each supports.
    List {
        /// JSON instead of the table: FILE, or stdout with `-`
        #[command(flatten)]
        json: common::JsonOut,
    },
    /// Boot a kernel under QEMU/TCG, run one rtscope verb inside, bring its records home.
    Run(Box<RunArgs>),
    /// In the guest of `lab run --nic-load`: a UDP socket on PORT that reads and discards.
    #[command(hide = true)]
    NicSink { port: u16 },
}

#[derive(clap::Subcommand)]
enum KernelSub {
    Build {
        /// trace | rt-trace | debian-stock | debian-rt
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(Preset::names()))]
        preset: String,
        /// Parallel compile jobs [default: online CPUs]
        #[arg(short, long)]
        jobs: Option<u32>,
        /// Rebuild even when the cache has this kernel
        #[arg(long)]
        force: bool,
        /// No progress display
        #[arg(short, long)]
        quiet: bool,
    },
    /// Same as `rtscope lab list`.
    List {
        #[command(flatten)]
        json: common::JsonOut,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// A preset (its newest cached kernel) or a kernel name from `rtscope lab list`
    #[arg(long, short = 'k')]
    kernel: String,
    /// Preemption model at boot (PREEMPT_DYNAMIC kernels): none | voluntary | full
    #[arg(long, value_parser = ["none", "voluntary", "full"])]
    preempt: Option<String>,
    /// Guest CPUs
    #[arg(long, default_value_t = 2)]
    smp: u32,
    /// Guest memory (e.g. 1G, 768M)
    #[arg(long, default_value = "1G")]
    mem: String,
    /// Instruction-driven guest clock (QEMU -icount shift=N,sleep=off): 2^N ns per guest
    /// instruction, so no host stall is visible to the guest; `auto` lets QEMU re-fit N to the
    /// host's speed (host slowness then leaks into guest time) [default shift when given: 1]
    #[arg(long, value_name = "SHIFT|auto", num_args = 0..=1, default_missing_value = "1")]
    icount: Option<String>,
    /// All vCPUs in one host thread (QEMU -accel tcg,thread=single): the default. Code the
    /// guest kernel patches at run time (static keys, the tracepoints a capture switches on)
    /// is seen by every vCPU at once; tagged emulated=tcg-single when --smp > 1
    #[arg(long, conflicts_with = "multi_thread")]
    single_thread: bool,
    /// One host thread per vCPU (QEMU's multi-threaded TCG): vCPUs run in parallel, but a vCPU
    /// can execute an int3 the guest's text patching already removed and the guest oopses
    /// (docs/lab.md); tagged emulated=tcg
    #[arg(long)]
    multi_thread: bool,
    /// Kill the guest after this long in host time [default: a limit in the guest's own time —
    /// 3 × the verb's -D plus 3 min of emulated time (for `taskset sweep`, -D × its runs), 10 min
    /// to boot, and a stall limit sized from the boot's emulation speed]
    #[arg(long, value_name = "DURATION")]
    timeout: Option<String>,
    /// Extra kernel command-line word (repeatable), e.g. isolcpus=1
    #[arg(long = "cmdline", value_name = "WORD")]
    cmdline: Vec<String>,
    /// Host executable to put into the guest's /bin with its libraries (repeatable; a bare
    /// name is looked up in PATH), e.g. rtla for --alongside
    #[arg(long = "guest-bin", value_name = "PATH")]
    guest_bins: Vec<PathBuf>,
    /// Shell command the guest starts in the background 2 s before the verb (a reference tool
    /// on the same kernel); its output comes home as alongside.log
    #[arg(long, value_name = "CMD")]
    alongside: Option<String>,
    /// No scratch disk for the verb's disk load (`--load disk|io`): its files then stay in the
    /// guest's memory, where no I/O reaches a block device [default: a sparse virtio-blk disk of
    /// the verb's --disk-size + 128 MiB, mounted on /var/tmp, removed after the run]
    #[arg(long)]
    no_scratch_disk: bool,
    /// Give the guest a virtio-net NIC (QEMU user networking, restrict=on: it reaches nothing)
    /// and send it PPS full-MTU UDP datagrams per second of host time from 127.0.0.1, to a
    /// socket in the guest that discards them: NIC interrupts, NET_RX and the UDP path during
    /// the verb (1..=50000; counts in lab-nic/ and the progress output)
    #[arg(long, value_name = "PPS")]
    nic_load: Option<String>,
    /// Where the guest's files go (a sub-directory per lab run)
    #[arg(short, long, default_value = "rtscope-results", value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    output: OutArgs,
    /// The verb and its flags, after `--`
    #[arg(last = true, required = true, value_name = "VERB ARGS")]
    verb: Vec<String>,
}

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
