//! The thin reader behind `rtscope doctor`: the machine's real-time tuning as
//! [`rtscope_model::system::Tuning`], read from a root directory — `/` for the running machine,
//! or a recorded copy of the same files (the doctor fixtures), so the checks in
//! `rtscope_analysis::doctor` are tested on recorded machines. Every reading is best effort: a
//! file that cannot be read leaves its field empty.

use rtscope_model::cpus::parse_cpu_list;
use rtscope_model::system::{CpuTopology, IdleState, IrqInfo, SystemInfo, TaskInfo, Tuning};
use std::path::Path;

/// The user-space daemons the checks look for (irqbalance moves IRQs, stalld boosts starved
/// threads, tuned applies profiles).
pub const DAEMONS: &[&str] = &["irqbalance", "stalld", "tuned"];

/// PF_KTHREAD in /proc/PID/stat's flags (include/linux/sched.h).
const PF_KTHREAD: u64 = 0x0020_0000;

fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(root.join(rel.trim_start_matches('/')))
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_num<T: std::str::FromStr>(root: &Path, rel: &str) -> Option<T> {
    read(root, rel)?.parse().ok()
}

fn read_list(root: &Path, rel: &str) -> Option<Vec<u32>> {
    parse_cpu_list(&read(root, rel)?).ok()
}

/// A hex CPU mask (`3`, `ff,ffffffff`) as a CPU list.
pub fn parse_cpu_mask(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let mut bit = 0u32;
    for word in s.trim().rsplit(',') {
        let v = u64::from_str_radix(word, 16).ok()?;
        for i in 0..(word.len() as u32 * 4) {
            if v & (1u64 << i) != 0 {
                out.push(bit + i);
            }
        }
        bit += word.len() as u32 * 4;
    }
    Some(out)
}

/// The bracketed choice of a sysfs multiple-choice file (`always [madvise] never`).
pub fn bracketed(s: &str) -> Option<String> {
    s.split_whitespace()
        .find(|w| w.starts_with('[') && w.ends_with(']'))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
}

/// /proc/interrupts: the numbered lines (per-CPU counts in column order of `cpus`).
pub fn parse_interrupts(text: &str) -> Vec<IrqInfo> {
    let mut lines = text.lines();
    let Some(head) = lines.next() else {
        return Vec::new();
    };
    let cpus: Vec<u32> = head
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    lines
        .filter_map(|l| {
            let (n, rest) = l.split_once(':')?;
            let irq: u32 = n.trim().parse().ok()?;
            let mut words = rest.split_whitespace();
            let counts: Vec<(u32, u64)> = cpus
                .iter()
                .map_while(|&c| Some((c, words.next()?.parse().ok()?)))
                .collect();
            let tail: Vec<&str> = words.collect();
            // chip, [hwirq-and-trigger], then the action names (comma separated, may hold spaces).
            let chip = tail.first().copied().unwrap_or_default().to_string();
            let name = if tail.len() >= 3 {
                tail[2..].join(" ")
            } else {
                tail.get(1).copied().unwrap_or_default().to_string()
            };
            Some(IrqInfo {
                irq,
                name,
                chip,
                counts,
                affinity: None,
                effective_affinity: None,
            })
        })
        .collect()
}

/// One /proc/PID: (comm, is a kernel thread, allowed CPUs).
fn task(root: &Path, pid: u32) -> Option<(String, bool, Vec<u32>)> {
    let stat = read(root, &format!("proc/{pid}/stat"))?;
    let (left, right) = stat.rsplit_once(')')?;
    let comm = left.split_once('(')?.1.to_string();
    // After `)`: state (3), ppid, pgrp, session, tty_nr, tpgid, flags (9) — the 7th field.
    let flags: u64 = right.split_whitespace().nth(6)?.parse().ok()?;
    let status = read(root, &format!("proc/{pid}/status"))?;
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|v| parse_cpu_list(v).ok())
        .unwrap_or_default();
    Some((comm, flags & PF_KTHREAD != 0, allowed))
}

/// /proc/stat per CPU: (cpu, all ticks, steal ticks).
pub fn parse_cpu_ticks(stat: &str) -> Vec<(u32, u64, u64)> {
    stat.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let cpu = it.next()?.strip_prefix("cpu")?.parse::<u32>().ok()?;
            let v: Vec<u64> = it.take(8).filter_map(|x| x.parse().ok()).collect();
            (v.len() == 8).then(|| (cpu, v.iter().sum(), v[7]))
        })
        .collect()
}

/// Read the tuning under `root`.
pub fn read_tuning(root: &Path, online: &[u32]) -> Tuning {
    let mut irqs = read(root, "proc/interrupts")
        .map(|s| parse_interrupts(&s))
        .unwrap_or_default();
    for i in &mut irqs {
        i.affinity = read_list(root, &format!("proc/irq/{}/smp_affinity_list", i.irq));
        i.effective_affinity =
            read_list(root, &format!("proc/irq/{}/effective_affinity_list", i.irq));
    }
    let mut kthreads = Vec::new();
    let mut daemons = Vec::new();
    if let Ok(rd) = std::fs::read_dir(root.join("proc")) {
        let mut pids: Vec<u32> = rd
            .flatten()
            .filter_map(|d| d.file_name().to_str()?.parse().ok())
            .collect();
        pids.sort_unstable();
        for pid in pids {
            let Some((comm, kthread, cpus_allowed)) = task(root, pid) else {
                continue;
            };
            let t = TaskInfo {
                pid,
                comm,
                cpus_allowed,
            };
            if kthread {
                kthreads.push(t);
            } else if DAEMONS.contains(&t.comm.as_str()) {
                daemons.push(t);
            }
        }
    }
    let wq = root.join("sys/devices/virtual/workqueue");
    let mut workqueues: Vec<(String, Vec<u32>)> = std::fs::read_dir(&wq)
        .map(|rd| {
            rd.flatten()
                .filter(|d| d.path().is_dir())
                .filter_map(|d| {
                    let name = d.file_name().to_str()?.to_string();
                    let mask = std::fs::read_to_string(d.path().join("cpumask")).ok()?;
                    Some((name, parse_cpu_mask(&mask)?))
                })
                .collect()
        })
        .unwrap_or_default();
    workqueues.sort();
    let mut idle_states = Vec::new();
    let mut governors = Vec::new();
    let mut smt_siblings = Vec::new();
    for &c in online {
        let base = format!("sys/devices/system/cpu/cpu{c}");
        for k in 0.. {
            let s = format!("{base}/cpuidle/state{k}");
            let Some(name) = read(root, &format!("{s}/name")) else {
                break;
            };
            idle_states.push(IdleState {
                cpu: c,
                state: k,
                name,
                exit_latency_us: read_num(root, &format!("{s}/latency")).unwrap_or(0),
                disabled: read(root, &format!("{s}/disable")).as_deref() == Some("1"),
            });
        }
        if let Some(g) = read(root, &format!("{base}/cpufreq/scaling_governor")) {
            governors.push((c, g));
        }
        if let Some(l) = read_list(root, &format!("{base}/topology/thread_siblings_list")) {
            smt_siblings.push((c, l));
        }
    }
    let boost = read(root, "sys/devices/system/cpu/cpufreq/boost")
        .map(|s| s == "1")
        .or_else(|| read(root, "sys/devices/system/cpu/intel_pstate/no_turbo").map(|s| s == "0"));
    let cpu_dma_latency_us = std::fs::read(root.join("dev/cpu_dma_latency"))
        .ok()
        .and_then(|b| Some(u32::from_ne_bytes(b.get(..4)?.try_into().ok()?)));
    let fair = root.join("sys/kernel/debug/sched/fair_server");
    let fair_server_runtime_ns = online
        .iter()
        .filter_map(|&c| {
            let v = std::fs::read_to_string(fair.join(format!("cpu{c}/runtime"))).ok()?;
            Some((c, v.trim().parse().ok()?))
        })
        .collect();
    let tracefs = ["sys/kernel/tracing", "sys/kernel/debug/tracing"]
        .iter()
        .map(|t| root.join(t))
        .find(|t| t.join("events").is_dir());
    Tuning {
        irqs,
        default_irq_affinity: read(root, "proc/irq/default_smp_affinity")
            .and_then(|s| parse_cpu_mask(&s)),
        kthreads,
        daemons,
        workqueue_cpumask: read(root, "sys/devices/virtual/workqueue/cpumask")
            .and_then(|s| parse_cpu_mask(&s)),
        workqueues,
        timer_migration: read_num(root, "proc/sys/kernel/timer_migration"),
        idle_states,
        cpu_dma_latency_us,
        governors,
        boost,
        smt_siblings,
        thp_enabled: read(root, "sys/kernel/mm/transparent_hugepage/enabled")
            .and_then(|s| bracketed(&s)),
        thp_defrag: read(root, "sys/kernel/mm/transparent_hugepage/defrag")
            .and_then(|s| bracketed(&s)),
        khugepaged_defrag: read_num(root, "sys/kernel/mm/transparent_hugepage/khugepaged/defrag"),
        ksm_run: read_num(root, "sys/kernel/mm/ksm/run"),
        swaps: read(root, "proc/swaps")
            .map(|s| {
                s.lines()
                    .skip(1)
                    .filter_map(|l| l.split_whitespace().next().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
        numa_balancing: read_num(root, "proc/sys/kernel/numa_balancing"),
        fair_server_runtime_ns,
        watchdog: read_num(root, "proc/sys/kernel/watchdog"),
        nmi_watchdog: read_num(root, "proc/sys/kernel/nmi_watchdog"),
        watchdog_cpumask: read_list(root, "proc/sys/kernel/watchdog_cpumask"),
        available_clocksources: read(
            root,
            "sys/devices/system/clocksource/clocksource0/available_clocksource",
        )
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default(),
        mce_check_interval_s: read_num(
            root,
            "sys/devices/system/machinecheck/machinecheck0/check_interval",
        ),
        lockdown: read(root, "sys/kernel/security/lockdown").and_then(|s| bracketed(&s)),
        btf: root.join("sys/kernel/btf/vmlinux").exists(),
        preemptirq_events: tracefs.map(|t| t.join("events/preemptirq").is_dir()),
        cpu_ticks: read(root, "proc/stat")
            .map(|s| parse_cpu_ticks(&s))
            .unwrap_or_default(),
    }
}

/// The [`SystemInfo`] of the machine under `root`, from files only (no uname, no cpuid): the
/// fields the doctor checks read besides [`Tuning`], which it holds in `tuning`. The hypervisor is
/// the cpuinfo `hypervisor` flag, named by /sys/hypervisor/type or the DMI vendor when present.
pub fn system_at(root: &Path) -> SystemInfo {
    let release = read(root, "proc/sys/kernel/osrelease").unwrap_or_default();
    let version = read(root, "proc/sys/kernel/version").unwrap_or_default();
    let cmdline = read(root, "proc/cmdline").unwrap_or_default();
    let config = read(root, &format!("boot/config-{release}")).map(|c| format!("\n{c}\n"));
    let (preempt_model, preempt_model_source) = match read(root, "sys/kernel/debug/sched/preempt")
        .and_then(|s| crate::system::parse_debugfs_preempt(&s))
    {
        Some(m) => (m, "/sys/kernel/debug/sched/preempt".into()),
        None if read(root, "sys/kernel/realtime").as_deref() == Some("1") => {
            ("rt".into(), "/sys/kernel/realtime".into())
        }
        None => crate::system::preempt_model_offline(&cmdline, &version, config.as_deref()),
    };
    let online = read_list(root, "sys/devices/system/cpu/online").unwrap_or_default();
    let topology = online
        .iter()
        .map(|&c| CpuTopology {
            cpu: c,
            core_id: read_num(
                root,
                &format!("sys/devices/system/cpu/cpu{c}/topology/core_id"),
            ),
            package_id: read_num(
                root,
                &format!("sys/devices/system/cpu/cpu{c}/topology/physical_package_id"),
            ),
        })
        .collect();
    let cpuinfo = read(root, "proc/cpuinfo").unwrap_or_default();
    let flagged = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|w| w == "hypervisor"));
    let hypervisor = flagged.then(|| {
        read(root, "sys/hypervisor/type")
            .or_else(|| read(root, "sys/class/dmi/id/sys_vendor"))
            .unwrap_or_else(|| "unknown hypervisor".into())
    });
    let tuning = read_tuning(root, &online);
    SystemInfo {
        hostname: read(root, "proc/sys/kernel/hostname").unwrap_or_default(),
        kernel_release: release,
        kernel_version: version,
        kernel_cmdline: cmdline,
        preempt_model,
        preempt_model_source,
        clocksource: read(
            root,
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .unwrap_or_default(),
        cpu_model: cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            .unwrap_or_default(),
        online_cpus: online,
        topology,
        cpuidle_driver: read(root, "sys/devices/system/cpu/cpuidle/current_driver"),
        cpuidle_governor: read(root, "sys/devices/system/cpu/cpuidle/current_governor_ro"),
        isolcpus: read(root, "sys/devices/system/cpu/isolated").filter(|s| !s.is_empty()),
        nohz_full: read(root, "sys/devices/system/cpu/nohz_full")
            .filter(|s| !s.is_empty() && s != "(null)"),
        sched_rt_runtime_us: read_num(root, "proc/sys/kernel/sched_rt_runtime_us"),
        sched_rt_period_us: read_num(root, "proc/sys/kernel/sched_rt_period_us"),
        hypervisor_source: Some(if flagged {
            "/proc/cpuinfo hypervisor flag".into()
        } else {
            "/proc/cpuinfo: no hypervisor flag".into()
        }),
        hypervisor,
        hz: None,
        steal_during_run_ns: None,
        steal_per_cpu_ns: Vec::new(),
        tuning: Some(tuning),
    }
}

/// The running machine: [`crate::system::capture`] (cpuid, uname, the kernel config) with its
/// [`Tuning`] read from `/`.
pub fn capture_live() -> SystemInfo {
    let mut s = crate::system::capture(&[]);
    s.tuning = Some(read_tuning(Path::new("/"), &s.online_cpus));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_choices_and_interrupts() {
        assert_eq!(parse_cpu_mask("3"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_mask("1,00000000"), Some(vec![32]));
        assert_eq!(parse_cpu_mask("zz"), None);
        assert_eq!(
            bracketed("always [madvise] never").as_deref(),
            Some("madvise")
        );
        let t = "           CPU0       CPU1\n 41:       8203          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx\n  0:  5 6  IO-APIC   2-edge      timer\nNMI:  0 0 Non-maskable interrupts\n";
        let v = parse_interrupts(t);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].irq, 41);
        assert_eq!(v[0].name, "virtio3-rx");
        assert_eq!(v[0].chip, "PCI-MSIX-0000:00:04.0");
        assert_eq!(v[0].counts, vec![(0, 8203), (1, 0)]);
        assert_eq!(
            parse_cpu_ticks("cpu  1 2\ncpu0 1 1 1 1 1 1 1 3 0 0\n"),
            vec![(0, 10, 3)]
        );
    }
}
