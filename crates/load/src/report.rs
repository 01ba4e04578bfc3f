//! Turning counters into `LoadReport`s: pure arithmetic over the counters and /proc snapshots.
//! Units are in the names; MB = 10^6 bytes.

use crate::plan::{Resolved, Role, Unit};
use crate::procstat::{figures, Snapshot};
use crate::shm::NCOUNTERS;
use crate::supervise::{C_CPU_NS, C_CTX_SWITCHES};
use crate::{cpu_cache, disk, exec, hackbench, net, LoadKind, LoadOptions};
use rtscope_model::LoadReport;
use std::collections::BTreeMap;

pub(crate) struct Inputs<'a> {
    pub kinds: &'a [LoadKind],
    pub opts: &'a LoadOptions,
    pub resolved: &'a Resolved,
    pub units: &'a [Unit],
    /// Per slot, counted from the moment every worker was running.
    pub counters: &'a [[u64; NCOUNTERS]],
    /// Per slot, since the worker was forked (state-like counters: connects, flags, exit status).
    pub totals: &'a [[u64; NCOUNTERS]],
    pub before: &'a Snapshot,
    pub after: &'a Snapshot,
    pub elapsed_s: f64,
    pub early_exits: u64,
    pub net_port: Option<u16>,
    pub warnings: &'a [String],
    pub disk_notes: &'a [String],
}

const MB: f64 = 1e6;

fn part_of(role: &Role) -> LoadKind {
    match role {
        Role::CpuCache { .. } => LoadKind::CpuCache,
        Role::HackGroup { .. } => LoadKind::Hackbench,
        Role::Disk => LoadKind::Disk,
        Role::Net { .. } => LoadKind::Net,
        Role::Exec => LoadKind::Exec,
    }
}

pub(crate) fn build(i: &Inputs) -> Vec<LoadReport> {
    let sys = figures(i.before, i.after, i.elapsed_s);
    let dt = i.elapsed_s.max(1e-9);
    let sum_of = |c: &[[u64; NCOUNTERS]],
                  units: &[&Unit],
                  range: &dyn Fn(&Unit) -> std::ops::Range<usize>,
                  k: usize| {
        units
            .iter()
            .flat_map(|u| range(u))
            .map(|s| c.get(s).map_or(0, |c| c[k]))
            .sum::<u64>() as f64
    };
    let sum = |units: &[&Unit], range: &dyn Fn(&Unit) -> std::ops::Range<usize>, k: usize| {
        sum_of(i.counters, units, range, k)
    };
    let total = |units: &[&Unit], range: &dyn Fn(&Unit) -> std::ops::Range<usize>, k: usize| {
        sum_of(i.totals, units, range, k)
    };
    let all_slots = |u: &Unit| u.first_slot..u.first_slot + u.nslots;

    let mut out = Vec::new();
    for &kind in i.kinds {
        let mut f: BTreeMap<String, f64> = BTreeMap::new();
        let mut params: BTreeMap<String, String> = BTreeMap::new();
        let mut warnings: Vec<String> = i.warnings.to_vec();
        params.insert("cpus".into(), format!("{:?}", i.resolved.cpus));
        params.insert("policy".into(), i.opts.policy.to_string());
        for &part in kind.parts() {
            let units: Vec<&Unit> = i
                .units
                .iter()
                .filter(|u| u.kind == kind && part_of(&u.role) == part)
                .collect();
            let pre = if kind == LoadKind::Io {
                format!("{}_", part.name())
            } else {
                String::new()
            };
            let mut put = |name: &str, v: f64| {
                f.insert(format!("{pre}{name}"), v);
            };
            put(
                "workers",
                units.iter().map(|u| u.nslots).sum::<usize>() as f64,
            );
            put(
                "worker_cpu_pct",
                100.0 * sum(&units, &all_slots, C_CPU_NS) / 1e9 / dt,
            );
            put(
                "worker_ctx_switches_per_s",
                sum(&units, &all_slots, C_CTX_SWITCHES) / dt,
            );
            match part {
                LoadKind::CpuCache => {
                    let acc = sum(&units, &all_slots, cpu_cache::C_ACCESSES);
                    put("accesses_per_s", acc / dt);
                    put(
                        "accesses_per_s_per_worker",
                        acc / dt / units.len().max(1) as f64,
                    );
                    params.insert("wss_bytes".into(), i.resolved.wss_bytes.to_string());
                    params.insert("wss_source".into(), i.resolved.wss_source.clone());
                }
                LoadKind::Hackbench => {
                    let fds = i.opts.hackbench_fds as usize;
                    let receivers = |u: &Unit| u.first_slot..u.first_slot + fds;
                    put(
                        "messages_per_s",
                        sum(&units, &receivers, hackbench::C_MESSAGES) / dt,
                    );
                    put(
                        "mb_per_s",
                        sum(&units, &receivers, hackbench::C_BYTES) / MB / dt,
                    );
                    params.insert("groups".into(), i.opts.hackbench_groups.to_string());
                    params.insert("senders_per_group".into(), fds.to_string());
                    params.insert("receivers_per_group".into(), fds.to_string());
                    params.insert("transport".into(), "unix-stream-socket".into());
                }
                LoadKind::Disk if i.resolved.bonnie.is_some() => {
                    // bonnie++'s own figures stay inside it: the machine-wide sys_disk_* figures
                    // below say what reached the disk.
                    params.insert("tool".into(), "bonnie++".into());
                    params.insert(
                        "argv".into(),
                        i.resolved
                            .bonnie
                            .as_ref()
                            .map(|p| {
                                let dir = std::path::Path::new("SCRATCH");
                                format!(
                                    "{:?}",
                                    crate::exec::bonnie_argv(p, dir, i.opts.disk_bytes >> 20)
                                        .iter()
                                        .map(|a| a.to_string_lossy().into_owned())
                                        .collect::<Vec<_>>()
                                )
                            })
                            .unwrap_or_default(),
                    );
                    params.insert("direct_io".into(), "true".into());
                    params.insert("disk_bytes".into(), i.opts.disk_bytes.to_string());
                    params.insert(
                        "scratch_dir".into(),
                        i.opts.scratch_dir.display().to_string(),
                    );
                    warnings.extend(i.disk_notes.iter().cloned());
                }
                LoadKind::Disk => {
                    params.insert("tool".into(), "builtin".into());
                    put(
                        "write_mb_per_s",
                        sum(&units, &all_slots, disk::C_WRITE_BYTES) / MB / dt,
                    );
                    put(
                        "read_mb_per_s",
                        sum(&units, &all_slots, disk::C_READ_BYTES) / MB / dt,
                    );
                    put(
                        "random_reads_per_s",
                        sum(&units, &all_slots, disk::C_RANDOM_READS) / dt,
                    );
                    put(
                        "file_ops_per_s",
                        sum(&units, &all_slots, disk::C_FILE_OPS) / dt,
                    );
                    let buffered = total(&units, &all_slots, disk::C_BUFFERED) > 0.0;
                    params.insert("direct_io".into(), (!buffered).to_string());
                    params.insert("disk_bytes".into(), i.opts.disk_bytes.to_string());
                    params.insert(
                        "scratch_dir".into(),
                        i.opts.scratch_dir.display().to_string(),
                    );
                    warnings.extend(i.disk_notes.iter().cloned());
                    if buffered {
                        warnings.push(format!(
                            "disk: O_DIRECT refused on {}; used buffered I/O with \
                             POSIX_FADV_DONTNEED instead",
                            i.opts.scratch_dir.display()
                        ));
                    }
                }
                LoadKind::Net => {
                    let n = i.resolved.cpus.len();
                    let clients = |u: &Unit| u.first_slot + n..u.first_slot + 2 * n;
                    put(
                        "rx_mb_per_s",
                        sum(&units, &clients, net::C_RX_BYTES) / MB / dt,
                    );
                    let connections = total(&units, &clients, net::C_CONNECTS);
                    put("connections", connections);
                    if connections == 0.0 && !units.is_empty() {
                        // The clients retry every 10 ms without a word: a refused or unreachable
                        // server would otherwise look like a load that ran.
                        warnings.push(format!(
                            "net: no client ever connected to the server ({}); the net load \
                             did not run (a loopback interface left down, as in a fresh \
                             network namespace or a minimal guest, or clients starved of CPU \
                             by the other loads: see net_worker_cpu_pct)",
                            if i.opts.net_veth {
                                "over the veth pair".to_string()
                            } else {
                                format!("127.0.0.1:{}", i.net_port.unwrap_or(0))
                            }
                        ));
                    }
                    params.insert(
                        "transport".into(),
                        if i.opts.net_veth {
                            "tcp over veth into a private netns".into()
                        } else {
                            "tcp over 127.0.0.1".into()
                        },
                    );
                    if let Some(p) = i.net_port {
                        params.insert("port".into(), p.to_string());
                    }
                    params.insert("clients".into(), n.to_string());
                    let _ = net::C_TX_BYTES;
                }
                LoadKind::Exec => {
                    params.insert("argv".into(), format!("{:?}", i.opts.exec_argv));
                    for u in &units {
                        let c = i.totals.get(u.first_slot).copied().unwrap_or_default();
                        if c[exec::C_EXIT_STATUS] > 0 {
                            let status = (c[exec::C_EXIT_STATUS] - 1) as i32;
                            let how = match rtscope_sys::process::exit_code(status) {
                                Some(code) => format!("exit status {code}"),
                                None => format!(
                                    "signal {}",
                                    rtscope_sys::process::term_signal(status).unwrap_or_default()
                                ),
                            };
                            let at = c[exec::C_EXIT_MS] as f64 / 1e3;
                            put("exited_after_s", at);
                            warnings.push(format!(
                                "exec: {:?} ended on its own ({how}) after {at:.1} s; the load \
                                 did not run for the whole measurement",
                                i.opts.exec_argv
                            ));
                        }
                    }
                }
                LoadKind::Idle | LoadKind::Io => {}
            }
        }
        let exec_exits = i
            .units
            .iter()
            .filter(|u| u.role == Role::Exec)
            .filter(|u| i.totals.get(u.first_slot).is_some_and(|c| c[0] > 0))
            .count() as u64;
        let crashed = i.early_exits.saturating_sub(exec_exits);
        if crashed > 0 {
            warnings.push(format!(
                "{crashed} load process(es) exited before the end of the run; figures may be low"
            ));
        }
        f.extend(sys.iter().map(|(k, v)| (k.clone(), *v)));
        out.push(LoadReport {
            kind: kind.name().to_string(),
            params,
            figures: f,
            duration_s: i.elapsed_s,
            warnings,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan;

    #[test]
    fn figures_from_counters() {
        let opts = LoadOptions {
            hackbench_groups: 1,
            hackbench_fds: 2,
            ..LoadOptions::default()
        };
        let r = Resolved {
            cpus: vec![0, 1],
            wss_bytes: 1 << 20,
            wss_source: crate::plan::WSS_REQUESTED.into(),
            exec_path: None,
            exec_argv: vec![],
            bonnie: None,
            disk_tool_note: None,
        };
        let kinds = [LoadKind::CpuCache, LoadKind::Io];
        let units = plan(&kinds, &opts, &r);
        // Slots: cpu-cache 0,1; hackbench receivers 2,3 senders 4,5; disk 6; net senders 7,8,
        // clients 9,10.
        let mut c = vec![[0u64; NCOUNTERS]; 11];
        c[0][0] = 3_000_000;
        c[1][0] = 1_000_000;
        c[0][C_CPU_NS] = 2_000_000_000; // 2 s of CPU over 2 s = 100 %
        c[2] = [500, 50_000, 0, 0, 0, 0, 40];
        c[3] = [1500, 150_000, 0, 0, 0, 0, 60];
        c[4][0] = 999_999; // senders' own count is not used for messages_per_s
        c[6] = [20_000_000, 10_000_000, 2048, 768, 0, 0, 0];
        c[9][0] = 300_000_000;
        c[10][0] = 100_000_000;
        c[9][1] = 1;
        c[10][1] = 1;
        let snap = Snapshot::default();
        let out = build(&Inputs {
            kinds: &kinds,
            opts: &opts,
            resolved: &r,
            units: &units,
            counters: &c,
            totals: &c,
            before: &snap,
            after: &snap,
            elapsed_s: 2.0,
            early_exits: 0,
            net_port: Some(4000),
            warnings: &[],
            disk_notes: &[],
        });
        assert_eq!(out.len(), 2);
        let cc = &out[0].figures;
        assert_eq!(cc["accesses_per_s"], 2_000_000.0); // 4e6 / 2 s
        assert_eq!(cc["accesses_per_s_per_worker"], 1_000_000.0);
        assert_eq!(cc["worker_cpu_pct"], 100.0);
        let io = &out[1].figures;
        assert_eq!(out[1].kind, "io");
        assert_eq!(io["hackbench_messages_per_s"], 1000.0); // (500+1500)/2
        assert_eq!(io["hackbench_mb_per_s"], 0.1); // 200000 B / 2 s
        assert_eq!(io["hackbench_worker_ctx_switches_per_s"], 50.0); // 100 / 2
        assert_eq!(io["hackbench_workers"], 4.0);
        assert_eq!(io["disk_write_mb_per_s"], 10.0);
        assert_eq!(io["disk_read_mb_per_s"], 5.0);
        assert_eq!(io["disk_random_reads_per_s"], 1024.0);
        assert_eq!(io["disk_file_ops_per_s"], 384.0);
        assert_eq!(io["net_rx_mb_per_s"], 200.0); // 400e6 B / 2 s
        assert_eq!(io["net_connections"], 2.0);
        assert_eq!(out[1].params["direct_io"], "true");
        assert!(out[1].warnings.is_empty());

        // Clients that never connected: said, not reported as a load that ran.
        c[9][1] = 0;
        c[10][1] = 0;
        let out = build(&Inputs {
            kinds: &kinds,
            opts: &opts,
            resolved: &r,
            units: &units,
            counters: &c,
            totals: &c,
            before: &snap,
            after: &snap,
            elapsed_s: 2.0,
            early_exits: 0,
            net_port: Some(4000),
            warnings: &[],
            disk_notes: &[],
        });
        assert_eq!(out[1].figures["net_connections"], 0.0);
        assert_eq!(
            out[1].warnings,
            vec![
                "net: no client ever connected to the server (127.0.0.1:4000); the net load did \
                  not run (a loopback interface left down, as in a fresh network namespace or a \
                  minimal guest, or clients starved of CPU by the other loads: see \
                  net_worker_cpu_pct)"
                    .to_string()
            ]
        );
        assert!(out[0].warnings.is_empty(), "cpu-cache is not concerned");
    }
}
