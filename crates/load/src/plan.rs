//! The resolved configuration and the worker plan: which processes run, on which CPUs, and which
//! counter slots they own. Pure; built before anything is forked.

use crate::{LoadKind, LoadOptions};
use std::ffi::CString;

/// The working-set size's source when the request gave it (records before this value say
/// `--wss`).
pub(crate) const WSS_REQUESTED: &str = "requested";

/// Options after validation, with defaults filled in from the machine.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub cpus: Vec<u32>,
    pub wss_bytes: u64,
    /// Where the working-set size came from ([`WSS_REQUESTED`], `2 x L3 (sysfs)`, `fallback`).
    pub wss_source: String,
    /// `exec`: the program path (resolved in PATH) and argv, ready for execv.
    pub exec_path: Option<CString>,
    pub exec_argv: Vec<CString>,
    /// `disk` runs bonnie++ (this path) rather than the builtin worker.
    pub bonnie: Option<CString>,
    /// `--disk-tool auto` without bonnie++: why the builtin worker runs instead.
    pub disk_tool_note: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Role {
    /// One pinned worker.
    CpuCache {
        cpu: u32,
    },
    /// `fds` receivers (slots first..first+fds) then `fds` senders.
    HackGroup {
        fds: u32,
    },
    Disk,
    /// `clients` senders, then `clients` receivers (one per CPU), then (veth) the netns holder.
    Net {
        clients: u32,
        veth: bool,
    },
    Exec,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Unit {
    /// The kind the user asked for (`io` for the parts of io).
    pub kind: LoadKind,
    pub role: Role,
    pub first_slot: usize,
    pub nslots: usize,
}

impl Role {
    fn nslots(&self) -> usize {
        match *self {
            Role::CpuCache { .. } | Role::Disk | Role::Exec => 1,
            Role::HackGroup { fds } => 2 * fds as usize,
            Role::Net { clients, veth } => 2 * clients as usize + usize::from(veth),
        }
    }
}

pub(crate) fn plan(kinds: &[LoadKind], opts: &LoadOptions, r: &Resolved) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut next = 0usize;
    for &kind in kinds {
        for &part in kind.parts() {
            let roles: Vec<Role> = match part {
                LoadKind::CpuCache => r.cpus.iter().map(|&cpu| Role::CpuCache { cpu }).collect(),
                LoadKind::Hackbench => (0..opts.hackbench_groups)
                    .map(|_| Role::HackGroup {
                        fds: opts.hackbench_fds,
                    })
                    .collect(),
                LoadKind::Disk => vec![Role::Disk],
                LoadKind::Net => vec![Role::Net {
                    clients: r.cpus.len() as u32,
                    veth: opts.net_veth,
                }],
                LoadKind::Exec => vec![Role::Exec],
                LoadKind::Idle | LoadKind::Io => Vec::new(),
            };
            for role in roles {
                let n = role.nslots();
                units.push(Unit {
                    kind,
                    role,
                    first_slot: next,
                    nslots: n,
                });
                next += n;
            }
        }
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_expands_to_three_parts_with_disjoint_slots() {
        let r = Resolved {
            cpus: vec![0, 1],
            wss_bytes: 1 << 20,
            wss_source: WSS_REQUESTED.into(),
            exec_path: None,
            exec_argv: vec![],
            bonnie: None,
            disk_tool_note: None,
        };
        let opts = LoadOptions {
            hackbench_groups: 2,
            hackbench_fds: 3,
            ..LoadOptions::default()
        };
        let u = plan(&[LoadKind::CpuCache, LoadKind::Io], &opts, &r);
        // 2 cpu-cache workers (1 slot each), 2 hackbench groups (2*3 slots each), disk (1),
        // net with 2 clients (2*2 slots): 2 + 12 + 1 + 4 = 19 slots.
        assert_eq!(u.len(), 2 + 2 + 1 + 1);
        assert_eq!(u[1].role, Role::CpuCache { cpu: 1 });
        assert_eq!(u[2].kind, LoadKind::Io);
        assert_eq!((u[3].first_slot, u[3].nslots), (8, 6));
        assert_eq!(u[4].role, Role::Disk);
        let last = u.last().unwrap();
        assert_eq!(last.first_slot + last.nslots, 19);
        assert!(plan(&[LoadKind::Idle], &opts, &r).is_empty());
    }
}
