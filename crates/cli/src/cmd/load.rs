//! `rtscope load KIND[,KIND…] [-- CMD ARGS…]`: run a background workload on its own
//! (`rtscope_verbs::load_only`). The same [`LoadFlags`] are flattened into `rtscope measure` so
//! both verbs spell the load options identically.

use super::common::{load_policy, LoadKinds, LoadKindsParser};
use std::path::PathBuf;

mod flags;
pub use flags::*;

impl LoadFlags {
    pub fn settings(&self) -> rtscope_load::LoadSettings {
        rtscope_load::LoadSettings {
            wss: self.wss.clone(),
            scratch_dir: self.scratch_dir.clone(),
            disk_size: self.disk_size.clone(),
            disk_tool: self.disk_tool.parse().unwrap_or_default(),
            net_veth: self.net_veth,
            net_port: self.net_port,
            policy: self.load_policy,
            hackbench_groups: self.hackbench_groups,
        }
    }
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let l = rtscope_verbs::load_only::LoadOnly {
        kinds: a.kinds.0,
        duration: a.duration.text(),
        cpus: a.cpus.spec(),
        force: a.force,
        settings: a.flags.settings(),
        exec: a.exec,
    };
    Ok(rtscope_verbs::load_only::run(&l, &a.out.lib())?)
}
