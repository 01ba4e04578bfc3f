//! The flags of `rtscope rhealstone` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

#[derive(clap::Args)]
pub struct Args {
    /// CPU every benchmark thread is pinned to [default: the last online CPU]
    #[command(flatten)]
    pub(super) cpu: crate::cmd::common::CpuArg,
    /// Highest SCHED_FIFO priority (21..=99); the medium and low threads run 10 and 20 below.
    #[arg(long, default_value_t = 80)]
    pub(super) priority: u32,
    /// Samples per metric (1..=100000000).
    #[arg(long, default_value_t = 1_000_000)]
    pub(super) iterations: u64,
    /// Cap on each metric's run time (100ms..=1h).
    #[arg(long, default_value = "10s", value_name = "TIME", value_parser = crate::cmd::common::duration(0.1, 3600.0))]
    pub(super) timeout: std::time::Duration,
    /// Timer period of the preemption and interrupt-response metrics (10us ..= 10ms)
    #[arg(long, default_value = "50us", value_name = "TIME",
          value_parser = crate::cmd::common::duration(1e-5, 0.01))]
    pub(super) timer_interval: std::time::Duration,
    /// Samples for interrupt response (1..=100000; each costs trace-buffer space).
    #[arg(long, default_value_t = 20_000)]
    pub(super) irq_iterations: u64,
    /// Compute burst of the medium-priority thread in deadlock break (1us ..= 10ms)
    #[arg(long, default_value = "50us", value_name = "TIME",
          value_parser = crate::cmd::common::duration(1e-6, 0.01))]
    pub(super) medium_burst: std::time::Duration,
    /// Run only these metrics (comma-separated): task_switch, preemption, intertask_message,
    /// semaphore_shuffle, deadlock_break, interrupt_response.
    #[arg(long, value_delimiter = ',')]
    pub(super) only: Vec<String>,
    /// Skip the secondary variants (futex and timer wake-up preemption, POSIX mq, pipe, POSIX
    /// sem, futex, no-PI mutex).
    #[arg(long)]
    pub(super) no_variants: bool,
    /// Run exactly these variants (comma-separated): sched_yield, setparam, futex_wake,
    /// hrtimer_wake, sysv_msg, posix_mq, pipe, sysv_sem, posix_sem, futex, pi_mutex,
    /// no_pi_mutex, parallel_port (the lab's device interrupt), hrtimer_expire.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub(super) variants: Vec<String>,
    #[command(flatten)]
    pub(super) out: OutArgs,
}
