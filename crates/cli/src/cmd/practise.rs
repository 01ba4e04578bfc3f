//! `rtscope practise` — the SCHED_DEADLINE thesis' scheduler lab, PRAcTISE (lelli-2014 §2.3,
//! `rtscope_practise::modes`): emulated CPUs as threads, cpudl/cpupri/pull-heap/flat behind push
//! and pull, checkers (`test`), per-operation costs (`perf`), or a recorded trace's event order
//! (`replay`); and the kernel's own cpudl/cpupri costs, timed with fentry/fexit (`kernel`,
//! §2.3.9).

use super::common::OutArgs;
use anyhow::Result;
use rtscope_practise::{self as pr, modes};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(clap::Subcommand)]
enum Mode {
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
struct Common {
    /// Push/pull structures: cpudl (kernel DL: cpudl + scan), pullheap (cpudl + the thesis' pull
    /// min-heap), cpupri (kernel RT: cpupri + scan), flat (ours: lock-free arrays), or all
    #[arg(long, default_value = "all", value_parser = ["cpudl", "pullheap", "cpupri", "flat", "all"])]
    structure: String,
    /// Ready queues: heap (binary heap, as PRAcTISE) or btree (ordered map, as the kernel's rb-tree)
    #[arg(long, default_value = "heap", value_parser = ["heap", "btree"])]
    queue: String,
    /// A deliberately broken structure (checker self-test)
    #[arg(long, hide = true, value_parser = ["cpudl-left-only"])]
    inject_fault: Option<String>,
    /// Write the modify/query boxplots per structure and M as SVG
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    #[command(flatten)]
    out: OutArgs,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Emulated CPUs M, one set of runs per value: 2, 1-2, 2,4,8 [default: the online CPUs]
    #[arg(long = "emulated-cpus", alias = "cpus-emulated", value_name = "LIST")]
    emulated_cpus: Option<String>,
    /// Duration of each run (each structure at each M), 10ms..=1d
    #[arg(short = 'D', long, default_value = "5s", value_name = "TIME")]
    duration: String,
    /// Thread cycle, one random event per CPU per cycle (thesis §2.3.9: 10 ms), 10us..=10s
    #[arg(long, default_value = "10ms", value_name = "TIME")]
    cycle: String,
    /// Probability of an activation per cycle (thesis: 0.2)
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    p_arrival: f64,
    /// Probability of an early finish per cycle (thesis: 0.1); the rest is "nothing"
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    p_finish: f64,
    /// auto (cpupri under FP, the others under EDF, as the thesis), edf, fp
    #[arg(long, default_value = "auto", value_parser = ["auto", "edf", "fp"])]
    policy: String,
    /// Random seed [default: random; stored in the result]
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    common: Common,
}

pub fn run(a: Args) -> Result<()> {
    Ok(match a.mode {
        Mode::Test { run, check_every } => random(pr::Mode::Test, run, check_every),
        Mode::Perf { run } => random(pr::Mode::Perf, run, "1ms".into()),
        Mode::Replay { file, common: c } => modes::replay(&file, &c.lib(), &c.out.lib()),
        Mode::Kernel {
            duration,
            load,
            out,
        } => modes::kernel(&duration, &load, &out.lib()),
    }?)
}

fn random(
    mode: pr::Mode,
    a: RunArgs,
    check_every: String,
) -> Result<(), rtscope_session::VerbError> {
    let r = modes::Random {
        emulated_cpus: a.emulated_cpus,
        duration: a.duration,
        cycle: a.cycle,
        p_arrival: a.p_arrival,
        p_finish: a.p_finish,
        policy: a.policy,
        seed: a.seed,
        check_every,
    };
    modes::random(mode, &r, &a.common.lib(), &a.common.out.lib())
}

impl Common {
    fn lib(&self) -> modes::Common {
        modes::Common {
            structure: self.structure.clone(),
            queue: self.queue.clone(),
            inject_fault: self.inject_fault.clone(),
            svg: self.svg.clone(),
        }
    }
}
