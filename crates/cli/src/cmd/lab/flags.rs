//! The flags of `rtscope lab` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;
use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use rtscope_lab::nic::NicLoad;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub(super) cmd: Sub,
}

#[derive(clap::Subcommand)]
pub(super) enum Sub {
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
pub(super) enum KernelSub {
    Build {
        /// trace | rt-trace | debian-stock | debian-rt
        #[arg(long, value_parser = PossibleValuesParser::new(Preset::names())
            .try_map(|s| Preset::parse(&s).map_err(|e| e.to_string())))]
        preset: Preset,
        /// Parallel compile jobs (1..=1024) [default: online CPUs]
        #[arg(short, long, value_parser = clap::value_parser!(u32).range(1..=1024))]
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
pub(super) struct RunArgs {
    /// A preset (its newest cached kernel) or a kernel name from `rtscope lab list`
    #[arg(long, short = 'k')]
    pub(super) kernel: String,
    /// Preemption model at boot (PREEMPT_DYNAMIC kernels): none | voluntary | full
    #[arg(long, value_parser = PossibleValuesParser::new(["none", "voluntary", "full"])
        .try_map(|s| guest::Preempt::parse(&s).map_err(|e| e.to_string())))]
    pub(super) preempt: Option<guest::Preempt>,
    /// Guest CPUs
    #[arg(long, default_value_t = 2)]
    pub(super) smp: u32,
    /// Guest memory (e.g. 1G, 768M; a bare number is MiB; 128M..=64G)
    #[arg(long, default_value = "1G", value_name = "SIZE",
          value_parser = |s: &str| guest::mem_mib(s).map_err(|e| e.to_string()))]
    pub(super) mem: u64,
    /// Instruction-driven guest clock (QEMU -icount shift=N,sleep=off): 2^N ns per guest
    /// instruction, so no host stall is visible to the guest; `auto` lets QEMU re-fit N to the
    /// host's speed (host slowness then leaks into guest time) [default shift when given: 1]
    #[arg(long, value_name = "SHIFT|auto", num_args = 0..=1, default_missing_value = "1",
          value_parser = |s: &str| guest::Icount::parse(s).map_err(|e| e.to_string()))]
    pub(super) icount: Option<guest::Icount>,
    /// All vCPUs in one host thread (QEMU -accel tcg,thread=single): the default. Code the
    /// guest kernel patches at run time (static keys, the tracepoints a capture switches on)
    /// is seen by every vCPU at once; tagged emulated=tcg-single when --smp > 1
    #[arg(long, conflicts_with = "multi_thread")]
    pub(super) single_thread: bool,
    /// One host thread per vCPU (QEMU's multi-threaded TCG): vCPUs run in parallel, but a vCPU
    /// can execute an int3 the guest's text patching already removed and the guest oopses
    /// (docs/lab.md); tagged emulated=tcg
    #[arg(long)]
    pub(super) multi_thread: bool,
    /// Kill the guest after this long in host time (10s..=7d) [default: a limit in the guest's
    /// own time — 3 × the verb's -D plus 3 min of emulated time (for `taskset sweep`, -D × its
    /// runs), 10 min to boot, and a stall limit sized from the boot's emulation speed]
    #[arg(long, value_name = "DURATION", value_parser = common::duration(10.0, 7.0 * 86400.0))]
    pub(super) timeout: Option<std::time::Duration>,
    /// Extra kernel command-line word (repeatable), e.g. isolcpus=1
    #[arg(long = "cmdline", value_name = "WORD")]
    pub(super) cmdline: Vec<String>,
    /// Host executable to put into the guest's /bin with its libraries (repeatable; a bare
    /// name is looked up in PATH), e.g. rtla for --alongside
    #[arg(long = "guest-bin", value_name = "PATH")]
    pub(super) guest_bins: Vec<PathBuf>,
    /// Shell command the guest starts in the background 2 s before the verb (a reference tool
    /// on the same kernel); its output comes home as alongside.log
    #[arg(long, value_name = "CMD")]
    pub(super) alongside: Option<String>,
    /// No scratch disk for the verb's disk load (`--load disk|io`): its files then stay in the
    /// guest's memory, where no I/O reaches a block device [default: a sparse virtio-blk disk of
    /// the verb's --disk-size + 128 MiB, mounted on /var/tmp, removed after the run]
    #[arg(long)]
    pub(super) no_scratch_disk: bool,
    /// Give the guest a virtio-net NIC (QEMU user networking, restrict=on: it reaches nothing)
    /// and send it PPS full-MTU UDP datagrams per second of host time from 127.0.0.1, to a
    /// socket in the guest that discards them: NIC interrupts, NET_RX and the UDP path during
    /// the verb (1..=50000; counts in lab-nic/ and the progress output)
    #[arg(long, value_name = "PPS",
          value_parser = |s: &str| NicLoad::parse(s).map_err(|e| e.to_string()))]
    pub(super) nic_load: Option<NicLoad>,
    /// Where the guest's files go (a sub-directory per lab run)
    #[arg(short, long, default_value = "rtscope-results", value_name = "DIR")]
    pub(super) out: PathBuf,
    #[command(flatten)]
    pub(super) output: OutArgs,
    /// The verb and its flags, after `--`
    #[arg(last = true, required = true, value_name = "VERB ARGS")]
    pub(super) verb: Vec<String>,
}
