//! System capture stored with every run. Each reading is best-effort and says where it came from;
//! a file that cannot be read leaves its field empty rather than failing the run.

use rtscope_model::system::{CpuTopology, SystemInfo};
use std::fs;

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn uname() -> (String, String, String) {
    rtscope_sys::system::uname()
        .map(|u| (u.nodename, u.release, u.version))
        .unwrap_or_default()
}

/// Kernel config, from /boot/config-<release> or /proc/config.gz (decompressed in-process, so
/// capturing the system starts no child process). Either read is capped at [`CONFIG_MAX`].
fn kernel_config(release: &str) -> Option<String> {
    use std::io::Read;
    let capped = |r: &mut dyn Read| -> Option<String> {
        let mut s = String::new();
        r.take(CONFIG_MAX).read_to_string(&mut s).ok()?;
        Some(s)
    };
    if let Ok(mut f) = fs::File::open(format!("/boot/config-{release}")) {
        return capped(&mut f);
    }
    let f = fs::File::open("/proc/config.gz").ok()?;
    capped(&mut flate2::read::GzDecoder::new(f.take(CONFIG_MAX)))
}

/// A kernel config is about 300 KiB; 8 MiB bounds a corrupt or hostile file.
const CONFIG_MAX: u64 = 8 << 20;

/// The preemption model and where it was read. In order of trust: the live debugfs knob (shows
/// the PREEMPT_DYNAMIC choice in parentheses), /sys/kernel/realtime (PREEMPT_RT), the boot
/// command line's `preempt=`, the kernel config's default, then `uname -v`.
pub fn preempt_model(cmdline: &str, version: &str, config: Option<&str>) -> (String, String) {
    if let Some(s) = read_trim("/sys/kernel/debug/sched/preempt") {
        if let Some(m) = parse_debugfs_preempt(&s) {
            return (m, "/sys/kernel/debug/sched/preempt".into());
        }
    }
    if read_trim("/sys/kernel/realtime").as_deref() == Some("1") {
        return ("rt".into(), "/sys/kernel/realtime".into());
    }
    preempt_model_offline(cmdline, version, config)
}

/// Whether a kernel is PREEMPT_RT, from `/sys/kernel/realtime` (the RT patch set's, "1") or
/// `/proc/sys/kernel/version` (`uname -v`, which names PREEMPT_RT on mainline).
pub fn is_preempt_rt(realtime: Option<&str>, version: Option<&str>) -> bool {
    realtime.map(str::trim) == Some("1") || version.is_some_and(|v| v.contains("PREEMPT_RT"))
}

/// [`is_preempt_rt`] of the running kernel.
pub fn running_preempt_rt() -> bool {
    is_preempt_rt(
        std::fs::read_to_string("/sys/kernel/realtime")
            .ok()
            .as_deref(),
        std::fs::read_to_string("/proc/sys/kernel/version")
            .ok()
            .as_deref(),
    )
}

pub fn parse_debugfs_preempt(s: &str) -> Option<String> {
    s.split_whitespace()
        .find(|w| w.starts_with('(') && w.ends_with(')'))
        .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
}

/// The part of [`preempt_model`] that needs no live files (tested on fixtures).
pub fn preempt_model_offline(
    cmdline: &str,
    version: &str,
    config: Option<&str>,
) -> (String, String) {
    let dynamic = version.contains("PREEMPT_DYNAMIC")
        || config.is_some_and(|c| c.contains("\nCONFIG_PREEMPT_DYNAMIC=y"));
    if version.contains("PREEMPT_RT") || config.is_some_and(|c| c.contains("\nCONFIG_PREEMPT_RT=y"))
    {
        return (
            "rt".into(),
            "uname -v / kernel config (CONFIG_PREEMPT_RT=y)".into(),
        );
    }
    if dynamic {
        if let Some(p) = cmdline
            .split_whitespace()
            .find_map(|w| w.strip_prefix("preempt="))
        {
            return (
                p.to_string(),
                "kernel command line preempt= (PREEMPT_DYNAMIC)".into(),
            );
        }
    }
    if let Some(c) = config {
        for (key, model) in [
            ("CONFIG_PREEMPT_NONE=y", "none"),
            ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
            ("CONFIG_PREEMPT_LAZY=y", "lazy"),
            ("CONFIG_PREEMPT=y", "full"),
        ] {
            if c.lines().any(|l| l == key) {
                let src = if dynamic {
                    format!("kernel config {key} (PREEMPT_DYNAMIC default; no preempt= on the command line; debugfs not readable)")
                } else {
                    format!("kernel config {key}")
                };
                return (model.into(), src);
            }
        }
    }
    if version.contains("PREEMPT ") || version.ends_with("PREEMPT") {
        return ("full".into(), "uname -v".into());
    }
    ("unknown".into(), "no readable source".into())
}

/// Hypervisor detection: CPUID leaf 0x40000000 signature, else the cpuinfo `hypervisor` flag.
pub fn hypervisor() -> (Option<String>, Option<String>) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: cpuid is always available on x86_64.
        let leaf1 = std::arch::x86_64::__cpuid(1);
        if leaf1.ecx & (1 << 31) != 0 {
            let r = std::arch::x86_64::__cpuid(0x4000_0000);
            let mut sig = Vec::with_capacity(12);
            for reg in [r.ebx, r.ecx, r.edx] {
                sig.extend_from_slice(&reg.to_le_bytes());
            }
            let sig = String::from_utf8_lossy(&sig)
                .trim_matches(char::from(0))
                .to_string();
            let name = match sig.as_str() {
                "KVMKVMKVM" => "kvm".to_string(),
                "Microsoft Hv" => "hyper-v".to_string(),
                "VMwareVMware" => "vmware".to_string(),
                "XenVMMXenVMM" => "xen".to_string(),
                "TCGTCGTCGTCG" => "qemu-tcg".to_string(),
                s if !s.is_empty() => s.to_string(),
                _ => "unknown hypervisor".to_string(),
            };
            return (Some(name), Some("cpuid 0x40000000 signature".into()));
        }
        (None, Some("cpuid: hypervisor bit clear".into()))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let flag = fs::read_to_string("/proc/cpuinfo")
            .map(|s| s.contains(" hypervisor"))
            .unwrap_or(false);
        (
            flag.then(|| "unknown hypervisor".into()),
            Some("/proc/cpuinfo".into()),
        )
    }
}

/// Per-CPU steal time from /proc/stat, in ns.
pub fn steal_ns() -> Vec<(u32, u64)> {
    let Ok(s) = fs::read_to_string("/proc/stat") else {
        return Vec::new();
    };
    let hz = rtscope_sys::system::clock_ticks_per_sec().unwrap_or(1);
    parse_steal(&s, hz)
}

pub fn parse_steal(stat: &str, clk_tck: u64) -> Vec<(u32, u64)> {
    stat.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let cpu = it.next()?.strip_prefix("cpu")?.parse::<u32>().ok()?;
            let steal: u64 = it.nth(7)?.parse().ok()?;
            Some((cpu, steal * 1_000_000_000 / clk_tck))
        })
        .collect()
}

pub fn capture(measured_cpus: &[u32]) -> SystemInfo {
    let (hostname, release, version) = uname();
    let cmdline = read_trim("/proc/cmdline").unwrap_or_default();
    let config = kernel_config(&release);
    let (preempt_model, preempt_model_source) =
        preempt_model(&cmdline, &version, config.as_deref());
    let online = crate::sys::online_cpus().unwrap_or_default();
    let topology = online
        .iter()
        .map(|&c| CpuTopology {
            cpu: c,
            core_id: read_trim(&format!("/sys/devices/system/cpu/cpu{c}/topology/core_id"))
                .and_then(|s| s.parse().ok()),
            package_id: read_trim(&format!(
                "/sys/devices/system/cpu/cpu{c}/topology/physical_package_id"
            ))
            .and_then(|s| s.parse().ok()),
        })
        .collect();
    let cpu_model = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    let hz = config.as_deref().and_then(|c| {
        c.lines()
            .find_map(|l| l.strip_prefix("CONFIG_HZ="))
            .and_then(|v| v.parse().ok())
    });
    let (hypervisor, hypervisor_source) = hypervisor();
    let _ = measured_cpus;
    SystemInfo {
        hostname,
        kernel_release: release,
        kernel_version: version,
        kernel_cmdline: cmdline.clone(),
        preempt_model,
        preempt_model_source,
        clocksource: read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default(),
        cpu_model,
        online_cpus: online,
        topology,
        cpuidle_driver: read_trim("/sys/devices/system/cpu/cpuidle/current_driver"),
        cpuidle_governor: read_trim("/sys/devices/system/cpu/cpuidle/current_governor_ro")
            .or_else(|| read_trim("/sys/devices/system/cpu/cpuidle/current_governor")),
        isolcpus: read_trim("/sys/devices/system/cpu/isolated").filter(|s| !s.is_empty()),
        nohz_full: read_trim("/sys/devices/system/cpu/nohz_full")
            .filter(|s| !s.is_empty() && s != "(null)"),
        sched_rt_runtime_us: read_trim("/proc/sys/kernel/sched_rt_runtime_us")
            .and_then(|s| s.parse().ok()),
        sched_rt_period_us: read_trim("/proc/sys/kernel/sched_rt_period_us")
            .and_then(|s| s.parse().ok()),
        hypervisor,
        hypervisor_source,
        hz,
        steal_during_run_ns: None,
        steal_per_cpu_ns: Vec::new(),
        tuning: None,
    }
}

/// Fill in steal time over the run from two /proc/stat readings.
pub fn set_steal(info: &mut SystemInfo, before: &[(u32, u64)], after: &[(u32, u64)], cpus: &[u32]) {
    let per: Vec<(u32, u64)> = cpus
        .iter()
        .filter_map(|c| {
            let b = before.iter().find(|(x, _)| x == c)?.1;
            let a = after.iter().find(|(x, _)| x == c)?.1;
            Some((*c, a.saturating_sub(b)))
        })
        .collect();
    info.steal_during_run_ns = Some(per.iter().map(|(_, v)| v).sum());
    info.steal_per_cpu_ns = per;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running kernel's config, where it publishes one, is read without a child process
    /// and yields its CONFIG_HZ (a run's system capture stores it).
    #[test]
    fn the_running_kernels_config_is_read_in_process() {
        let release = uname().1;
        let published = std::path::Path::new("/proc/config.gz").exists()
            || std::path::Path::new(&format!("/boot/config-{release}")).exists();
        if !published {
            skipped("the kernel publishes no config");
            return;
        }
        let c = kernel_config(&release).expect("config read");
        assert!(
            c.lines().any(|l| l.starts_with("CONFIG_HZ=")),
            "no CONFIG_HZ"
        );
        assert!(capture(&[]).hz.is_some());
    }

    fn skipped(why: &str) {
        println!("SKIPPED: {why}");
    }

    #[test]
    fn preempt_rt_from_realtime_or_uname() {
        let stock = "#1 SMP PREEMPT_DYNAMIC Debian 6.12.117-1";
        assert!(!is_preempt_rt(None, None));
        assert!(!is_preempt_rt(Some("0\n"), Some(stock)));
        assert!(is_preempt_rt(Some("1\n"), None));
        assert!(is_preempt_rt(
            None,
            Some("#1 SMP PREEMPT_RT Tue Nov 24 2026")
        ));
    }

    #[test]
    fn preempt_sources() {
        assert_eq!(
            parse_debugfs_preempt("none (voluntary) full lazy").as_deref(),
            Some("voluntary")
        );
        let cfg = "\nCONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n";
        let (m, src) = preempt_model_offline("quiet", "#1 SMP PREEMPT_DYNAMIC @0", Some(cfg));
        assert_eq!(m, "none");
        assert!(src.contains("CONFIG_PREEMPT_NONE"));
        let (m, _) =
            preempt_model_offline("quiet preempt=full", "#1 SMP PREEMPT_DYNAMIC", Some(cfg));
        assert_eq!(m, "full");
        let (m, _) = preempt_model_offline("", "#1 SMP PREEMPT_RT", None);
        assert_eq!(m, "rt");
        let (m, _) = preempt_model_offline("", "#1 SMP", None);
        assert_eq!(m, "unknown");
    }

    #[test]
    fn steal_parse() {
        let stat = "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 0 0 0 0 0 0 250 0 0\ncpu1 1 0 0 0 0 0 0 5 0 0\nintr 1\n";
        // 250 ticks at USER_HZ 100 = 2.5 s
        assert_eq!(
            parse_steal(stat, 100),
            vec![(0, 2_500_000_000), (1, 50_000_000)]
        );
    }
}
