//! The flags of `rtscope load` as clap declares them (help, defaults, typed values);
//! the parent module does the work.

use super::*;

/// Load options shared by `load` and `measure` (`#[command(flatten)]`).
#[derive(clap::Args, Debug, Clone)]
pub struct LoadFlags {
    /// cpu-cache working set per worker (e.g. 20M) [default: 2 x the largest cache in sysfs,
    /// 20M if none]
    #[arg(long, value_name = "SIZE")]
    pub wss: Option<String>,
    /// Directory for the disk load's scratch files (a private subdirectory, removed at the end)
    #[arg(long, value_name = "DIR", default_value = "/var/tmp")]
    pub scratch_dir: PathBuf,
    /// Size of the disk load's sequential file; checked against free space before start
    #[arg(long, value_name = "SIZE", default_value = "1G")]
    pub disk_size: String,
    /// What makes the disk load: builtin (our bonnie++-like worker), bonnie++ (the real one,
    /// direct I/O, as OSPERT'13 ran it) or auto (bonnie++ when installed)
    #[arg(long, value_name = "TOOL", default_value = "builtin", value_parser = ["builtin", "bonnie++", "auto"])]
    pub disk_tool: String,
    /// net: stream over a veth pair into a private network namespace instead of loopback
    #[arg(long)]
    pub net_veth: bool,
    /// net: server port on 127.0.0.1 (0 = any free port)
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub net_port: u16,
    /// Scheduling policy of the load processes: other, fifo or fifo:PRIO (fifo needs --force)
    #[arg(long, value_name = "POLICY", default_value = "other", value_parser = load_policy())]
    pub load_policy: rtscope_load::LoadPolicy,
    /// hackbench: number of groups of 20 senders and 20 receivers
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub hackbench_groups: u32,
}

#[derive(clap::Args)]
pub struct Args {
    /// idle, cpu-cache, hackbench, disk, net, io (= hackbench+disk+net) or exec, comma-separated
    #[arg(value_name = "KIND[,KIND…]", value_parser = LoadKindsParser)]
    pub(super) kinds: LoadKinds,
    /// How long to run (e.g. 30s, 5m, 1h; plain number = seconds; 1ms..=30d) [default: until
    /// Ctrl-C]
    #[command(flatten)]
    pub(super) duration: crate::cmd::common::DurationArg,
    /// CPUs the loads may use (e.g. 0-1,3) [default: all online]
    #[command(flatten)]
    pub(super) cpus: crate::cmd::common::CpuListArg,
    /// Confirm a real-time load policy (--load-policy fifo)
    #[arg(long)]
    pub(super) force: bool,
    #[command(flatten)]
    pub(super) out: crate::cmd::common::OutArgs,
    #[command(flatten)]
    pub(super) flags: LoadFlags,
    /// exec: the command and its arguments, after `--` (run without a shell)
    #[arg(last = true, value_name = "CMD ARGS")]
    pub(super) exec: Vec<String>,
}
