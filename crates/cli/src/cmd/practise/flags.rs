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
        #[arg(long, default_value = "1ms", value_name = "TIME")]
        check_every: String,
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
        #[arg(short = 'D', long, default_value = "5s", value_name = "TIME")]
        duration: String,
        /// Load while timing: deadline (SCHED_DEADLINE set: cpudl), fifo (SCHED_FIFO set:
        /// cpupri), none (whatever the machine runs)
        #[arg(long, default_value = "deadline", value_parser = ["deadline", "fifo", "none"])]
        load: String,
        #[command(flatten)]
        out: OutArgs,
    },
}

#[derive(clap::Args)]
pub(super) struct Common {
    /// Push/pull structures: cpudl (kernel DL: cpudl + scan), pullheap (cpudl + the thesis' pull
    /// min-heap), cpupri (kernel RT: cpupri + scan), flat (ours: lock-free arrays), or all
    #[arg(long, default_value = "all", value_parser = ["cpudl", "pullheap", "cpupri", "flat", "all"])]
    pub(super) structure: String,
    /// Ready queues: heap (binary heap, as PRAcTISE) or btree (ordered map, as the kernel's rb-tree)
    #[arg(long, default_value = "heap", value_parser = ["heap", "btree"])]
    pub(super) queue: String,
    /// A deliberately broken structure (checker self-test)
    #[arg(long, hide = true, value_parser = ["cpudl-left-only"])]
    pub(super) inject_fault: Option<String>,
    /// Write the modify/query boxplots per structure and M as SVG
    #[arg(long, value_name = "FILE")]
    pub(super) svg: Option<PathBuf>,
    #[command(flatten)]
    pub(super) out: OutArgs,
}

#[derive(clap::Args)]
pub(super) struct RunArgs {
    /// Emulated CPUs M, one set of runs per value: 2, 1-2, 2,4,8 [default: the online CPUs]
    #[arg(long = "emulated-cpus", alias = "cpus-emulated", value_name = "LIST")]
    pub(super) emulated_cpus: Option<String>,
    /// Duration of each run (each structure at each M), 10ms..=1d
    #[arg(short = 'D', long, default_value = "5s", value_name = "TIME")]
    pub(super) duration: String,
    /// Thread cycle, one random event per CPU per cycle (thesis §2.3.9: 10 ms), 10us..=10s
    #[arg(long, default_value = "10ms", value_name = "TIME")]
    pub(super) cycle: String,
    /// Probability of an activation per cycle (thesis: 0.2)
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    pub(super) p_arrival: f64,
    /// Probability of an early finish per cycle (thesis: 0.1); the rest is "nothing"
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    pub(super) p_finish: f64,
    /// auto (cpupri under FP, the others under EDF, as the thesis), edf, fp
    #[arg(long, default_value = "auto", value_parser = ["auto", "edf", "fp"])]
    pub(super) policy: String,
    /// Random seed [default: random; stored in the result]
    #[arg(long)]
    pub(super) seed: Option<u64>,
    #[command(flatten)]
    pub(super) common: Common,
}
