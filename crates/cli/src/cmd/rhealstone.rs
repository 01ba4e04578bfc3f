//! `rtscope rhealstone` — the Rhealstone suite (Kar & Porter 1989; heursch-2001 §3.1,
//! `rtscope_bench::rhealstone`): task switch, preemption, intertask message, semaphore shuffle,
//! deadlock break and interrupt response, each pinned to one CPU under SCHED_FIFO with memory
//! locked, with the full distribution and Kar's composite figure.

use super::common::OutArgs;
use anyhow::Result;
use rtscope_bench::rhealstone;

#[derive(clap::Args)]
pub struct Args {
    /// CPU every benchmark thread is pinned to [default: the last online CPU]
    #[command(flatten)]
    cpu: super::common::CpuArg,
    /// Highest SCHED_FIFO priority (21..=99); the medium and low threads run 10 and 20 below.
    #[arg(long, default_value_t = 80)]
    priority: u32,
    /// Samples per metric (1..=100000000).
    #[arg(long, default_value_t = 1_000_000)]
    iterations: u64,
    /// Cap on each metric's run time (100ms..=1h).
    #[arg(long, default_value = "10s", value_name = "TIME", value_parser = super::common::duration(0.1, 3600.0))]
    timeout: std::time::Duration,
    /// Timer period of the preemption and interrupt-response metrics, µs (10..=10000).
    #[arg(long, default_value_t = 50)]
    timer_interval_us: u64,
    /// Samples for interrupt response (1..=100000; each costs trace-buffer space).
    #[arg(long, default_value_t = 20_000)]
    irq_iterations: u64,
    /// Compute burst of the medium-priority thread in deadlock break, µs (1..=10000).
    #[arg(long, default_value_t = 50)]
    medium_burst_us: u64,
    /// Run only these metrics (comma-separated): task_switch, preemption, intertask_message,
    /// semaphore_shuffle, deadlock_break, interrupt_response.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Skip the secondary variants (futex and timer wake-up preemption, POSIX mq, pipe, POSIX
    /// sem, futex, no-PI mutex).
    #[arg(long)]
    no_variants: bool,
    /// Run exactly these variants (comma-separated): sched_yield, setparam, futex_wake,
    /// hrtimer_wake, sysv_msg, posix_mq, pipe, sysv_sem, posix_sem, futex, pi_mutex,
    /// no_pi_mutex, parallel_port (the lab's device interrupt), hrtimer_expire.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    variants: Vec<String>,
    #[command(flatten)]
    out: OutArgs,
}

pub fn run(a: Args) -> Result<()> {
    // Everything is validated before a thread starts or a resource exists.
    let flags = rhealstone::Flags {
        cpus: a.cpu.cpu.map(|c| c.to_string()),
        priority: a.priority,
        iterations: a.iterations,
        max_seconds: a.timeout.as_secs_f64(),
        timer_interval_us: a.timer_interval_us,
        irq_iterations: a.irq_iterations,
        medium_burst_us: a.medium_burst_us,
        only: a.only,
        no_variants: a.no_variants,
        variants: a.variants,
    };
    let cfg = flags.resolve(&rtscope_verbs::bench::Rules)?;
    Ok(rtscope_verbs::bench::rhealstone(
        &cfg,
        a.timeout.as_secs_f64(),
        &a.out.lib(),
    )?)
}
