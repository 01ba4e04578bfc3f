//! The flags of `rtscope practise` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub(super) mode: Mode,
}

#[derive(clap::Subcommand)]
pub(super) enum Mode {
    /// Testing mode: threads unpinned (M up to 48, more than the CPUs allowed), a checker thread
    /// locks every queue and verifies every structure; a violation exits 1.
    Test {
        #[command(flatten)]
        run: RunArgs,
        /// How often the checker runs (100us..=10s)
        #[arg(long, default_value = "1ms", value_name = "TIME", value_parser = lab_range(pr::CHECK_EVERY_NS))]
        check_every: Duration,
    },
    /// Performance mode: one thread pinned per online CPU, memory locked, per-operation costs.
    Perf {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Drive the queues from a .rtt trace's sched_switch/sched_wakeup/sched_migrate_task events.
    Replay {
        /// The trace (e.g. `rtscope trace record --keep all -o FILE`)
        file: PathBuf,
        #[command(flatten)]
        common: Common,
    },
    /// Time the kernel's own cpudl_set/cpudl_find/cpupri_set/cpupri_find (fentry/fexit) under a
    /// small task-set load (§2.3.9, Fig. 2.24). Needs a kernel without lockdown.
    Kernel {
        /// How long to time (10ms..=1d)
        #[arg(short = 'D', long, default_value = "5s", value_name = "TIME", value_parser = lab_range(pr::DURATION_NS))]
        duration: Duration,
        /// Load while timing: deadline (SCHED_DEADLINE set: cpudl), fifo (SCHED_FIFO set:
        /// cpupri), none (whatever the machine runs)
        #[arg(long, value_enum, default_value_t = KernelLoadArg::Deadline)]
        load: KernelLoadArg,
        #[command(flatten)]
        out: OutArgs,
    },
}

/// `--structure`: what serves push() and pull().
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum StructureArg {
    Cpudl,
    Pullheap,
    Cpupri,
    Flat,
    All,
}

/// `--queue`: the emulated CPUs' ready queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum QueueArg {
    Heap,
    Btree,
}

/// `--inject-fault`: a structure broken on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum FaultArg {
    CpudlLeftOnly,
}

/// `--policy`: the emulated scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum PolicyArg {
    Auto,
    Edf,
    Fp,
}

/// `kernel --load`: the task set run while the kernel's functions are timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum KernelLoadArg {
    Deadline,
    Fifo,
    #[value(name = "none")]
    NoLoad,
}

#[derive(clap::Args)]
pub(super) struct Common {
    /// Push/pull structures: cpudl (kernel DL: cpudl + scan), pullheap (cpudl + the thesis' pull
    /// min-heap), cpupri (kernel RT: cpupri + scan), flat (ours: lock-free arrays), or all
    #[arg(long, value_enum, default_value_t = StructureArg::All)]
    pub(super) structure: StructureArg,
    /// Ready queues: heap (binary heap, as PRAcTISE) or btree (ordered map, as the kernel's rb-tree)
    #[arg(long, value_enum, default_value_t = QueueArg::Heap)]
    pub(super) queue: QueueArg,
    /// A deliberately broken structure (checker self-test)
    #[arg(long, hide = true, value_enum)]
    pub(super) inject_fault: Option<FaultArg>,
    /// Write the modify/query boxplots per structure and M as SVG
    #[arg(long, value_name = "FILE")]
    pub(super) svg: Option<PathBuf>,
    #[command(flatten)]
    pub(super) out: OutArgs,
}

#[derive(clap::Args)]
pub(super) struct RunArgs {
    /// Emulated CPUs M, one set of runs per value: 2, 1-2, 2,4,8 [default: the online CPUs]
    #[arg(long = "emulated-cpus", value_name = "LIST")]
    pub(super) emulated_cpus: Option<EmulatedCpus>,
    /// Duration of each run (each structure at each M), 10ms..=1d
    #[arg(short = 'D', long, default_value = "5s", value_name = "TIME", value_parser = lab_range(pr::DURATION_NS))]
    pub(super) duration: Duration,
    /// Thread cycle, one random event per CPU per cycle (thesis §2.3.9: 10 ms), 10us..=10s
    #[arg(long, default_value = "10ms", value_name = "TIME", value_parser = lab_range(pr::CYCLE_NS))]
    pub(super) cycle: Duration,
    /// Probability of an activation per cycle (thesis: 0.2)
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    pub(super) p_arrival: f64,
    /// Probability of an early finish per cycle (thesis: 0.1); the rest is "nothing"
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    pub(super) p_finish: f64,
    /// auto (cpupri under FP, the others under EDF, as the thesis), edf, fp
    #[arg(long, value_enum, default_value_t = PolicyArg::Auto)]
    pub(super) policy: PolicyArg,
    /// Random seed [default: random; stored in the result]
    #[arg(long)]
    pub(super) seed: Option<u64>,
    #[command(flatten)]
    pub(super) common: Common,
}
