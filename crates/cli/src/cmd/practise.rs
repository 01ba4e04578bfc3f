//! `rtscope practise` — the SCHED_DEADLINE thesis' scheduler lab, PRAcTISE (lelli-2014 §2.3,
//! `rtscope_practise::modes`): emulated CPUs as threads, cpudl/cpupri/pull-heap/flat behind push
//! and pull, checkers (`test`), per-operation costs (`perf`), or a recorded trace's event order
//! (`replay`); and the kernel's own cpudl/cpupri costs, timed with fentry/fexit (`kernel`,
//! §2.3.9).

use super::common::{self, OutArgs};
use anyhow::Result;
use clap::builder::TypedValueParser;
use rtscope_practise::structures::{Fault, StructureKind, ALL_STRUCTURES};
use rtscope_practise::{self as pr, modes, queue::QueueKind};
use std::path::PathBuf;
use std::time::Duration;

mod flags;
pub use flags::*;

pub fn run(a: Args) -> Result<()> {
    Ok(match a.mode {
        Mode::Test { run, check_every } => random(pr::Mode::Test, run, check_every),
        // Performance mode runs no checker (its period is not stored).
        Mode::Perf { run } => random(pr::Mode::Perf, run, Duration::from_millis(1)),
        Mode::Replay { file, common: c } => modes::replay(&file, &c.lib(), &c.out.lib()),
        Mode::Kernel {
            duration,
            load,
            out,
        } => modes::kernel(duration, load.lib(), &out.lib()),
    }?)
}

/// A duration flag within one of the lab's ranges (ns, `rtscope_practise::DURATION_NS`, …).
fn lab_range((lo, hi): (u64, u64)) -> impl TypedValueParser<Value = Duration> {
    common::duration(lo as f64 / 1e9, hi as f64 / 1e9)
}

/// `--emulated-cpus`: M values, as a count or a list (`2`, `1-2`, `2,4,8`); the range is the
/// lab's to check (it depends on the mode).
#[derive(Clone, Debug)]
pub struct EmulatedCpus(Vec<u32>);

impl std::str::FromStr for EmulatedCpus {
    type Err = String;
    fn from_str(s: &str) -> Result<EmulatedCpus, String> {
        match rtscope_model::cpus::parse_cpu_list(s) {
            Ok(v) if !v.is_empty() => Ok(EmulatedCpus(v)),
            r => Err(format!(
                "{} (a count or a list: 2, 1-2, 2,4,8)",
                r.err().unwrap_or_else(|| "empty".into())
            )),
        }
    }
}

fn random(
    mode: pr::Mode,
    a: RunArgs,
    check_every: Duration,
) -> Result<(), rtscope_session::VerbError> {
    let r = modes::Random {
        emulated_cpus: a.emulated_cpus.map(|m| m.0),
        duration: a.duration,
        cycle: a.cycle,
        p_arrival: a.p_arrival,
        p_finish: a.p_finish,
        policy: match a.policy {
            PolicyArg::Auto => pr::PolicyChoice::Auto,
            PolicyArg::Edf => pr::PolicyChoice::Edf,
            PolicyArg::Fp => pr::PolicyChoice::Fp,
        },
        seed: a.seed,
        check_every,
    };
    modes::random(mode, &r, &a.common.lib(), &a.common.out.lib())
}

impl Common {
    fn lib(&self) -> modes::Common {
        modes::Common {
            structures: match self.structure {
                StructureArg::Cpudl => vec![StructureKind::Cpudl],
                StructureArg::Pullheap => vec![StructureKind::PullHeap],
                StructureArg::Cpupri => vec![StructureKind::Cpupri],
                StructureArg::Flat => vec![StructureKind::Flat],
                StructureArg::All => ALL_STRUCTURES.to_vec(),
            },
            queue: match self.queue {
                QueueArg::Heap => QueueKind::Heap,
                QueueArg::Btree => QueueKind::Btree,
            },
            inject_fault: self.inject_fault.map(|f| match f {
                FaultArg::CpudlLeftOnly => Fault::CpudlLeftOnly,
            }),
            svg: self.svg.clone(),
        }
    }
}

impl KernelLoadArg {
    fn lib(self) -> modes::KernelLoad {
        match self {
            KernelLoadArg::Deadline => modes::KernelLoad::Deadline,
            KernelLoadArg::Fifo => modes::KernelLoad::Fifo,
            KernelLoadArg::NoLoad => modes::KernelLoad::None,
        }
    }
}
