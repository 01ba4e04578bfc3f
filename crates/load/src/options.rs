//! Clap-free load options, shared by `rtscope load` and `rtscope measure --load`.

use crate::LoadError;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LoadKind {
    /// Nothing runs; recorded so the scenario is explicit (paper §3.1).
    Idle,
    /// One pinned worker per CPU doing random reads and writes over a working set (paper §3.2).
    CpuCache,
    /// Groups of sender/receiver processes over UNIX sockets, like hackbench's default.
    Hackbench,
    /// bonnie++-like direct I/O on a scratch file plus small-file metadata churn.
    Disk,
    /// One TCP download-and-discard loop per CPU (the paper's wget loop), over loopback or veth.
    Net,
    /// hackbench + disk + net: the paper's I/O-bound scenario (§3.3).
    Io,
    /// Any external command, run with argv (no shell), supervised like the rest.
    Exec,
}

impl LoadKind {
    pub const ALL: [LoadKind; 7] = [
        LoadKind::Idle,
        LoadKind::CpuCache,
        LoadKind::Hackbench,
        LoadKind::Disk,
        LoadKind::Net,
        LoadKind::Io,
        LoadKind::Exec,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LoadKind::Idle => "idle",
            LoadKind::CpuCache => "cpu-cache",
            LoadKind::Hackbench => "hackbench",
            LoadKind::Disk => "disk",
            LoadKind::Net => "net",
            LoadKind::Io => "io",
            LoadKind::Exec => "exec",
        }
    }

    /// The primitive loads this kind runs (`io` is three of them).
    pub fn parts(self) -> &'static [LoadKind] {
        match self {
            LoadKind::Idle => &[],
            LoadKind::Io => &[LoadKind::Hackbench, LoadKind::Disk, LoadKind::Net],
            LoadKind::CpuCache => &[LoadKind::CpuCache],
            LoadKind::Hackbench => &[LoadKind::Hackbench],
            LoadKind::Disk => &[LoadKind::Disk],
            LoadKind::Net => &[LoadKind::Net],
            LoadKind::Exec => &[LoadKind::Exec],
        }
    }
}

impl std::fmt::Display for LoadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for LoadKind {
    type Err = LoadError;
    fn from_str(s: &str) -> Result<Self, LoadError> {
        let s = s.trim();
        LoadKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| LoadError::UnknownKind(s.to_string()))
    }
}

pub(crate) fn parse_kinds(spec: &str) -> Result<Vec<LoadKind>, LoadError> {
    let mut kinds: Vec<LoadKind> = Vec::new();
    for part in spec.split(',') {
        let k: LoadKind = part.parse()?;
        for prev in &kinds {
            let overlap = prev.parts().iter().any(|p| k.parts().contains(p));
            if *prev == k || overlap {
                return Err(LoadError::invalid(
                    "--load",
                    format!("'{k}' overlaps '{prev}' in '{spec}' (io = hackbench+disk+net)"),
                ));
            }
        }
        kinds.push(k);
    }
    if kinds.len() > 1 && kinds.contains(&LoadKind::Idle) {
        return Err(LoadError::invalid(
            "--load",
            format!("'idle' cannot be combined with other loads in '{spec}'"),
        ));
    }
    Ok(kinds)
}

/// Scheduling policy of every load process. Loads never run at real-time priority unless asked
/// (`fifo` requires `force`), and RT throttling must stay on so a runaway load cannot starve the
/// machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LoadPolicy {
    #[default]
    Other,
    /// SCHED_FIFO at this priority (1..=99).
    Fifo(u8),
}

impl std::str::FromStr for LoadPolicy {
    type Err = LoadError;
    fn from_str(s: &str) -> Result<Self, LoadError> {
        let bad = || {
            LoadError::invalid(
                "--load-policy",
                format!("expected 'other', 'fifo' or 'fifo:PRIO' with PRIO 1..=99, got '{s}'"),
            )
        };
        match s.trim() {
            "other" => Ok(LoadPolicy::Other),
            "fifo" => Ok(LoadPolicy::Fifo(1)),
            t => {
                let prio = t.strip_prefix("fifo:").ok_or_else(bad)?;
                match prio.parse::<u8>() {
                    Ok(p) if (1..=99).contains(&p) => Ok(LoadPolicy::Fifo(p)),
                    _ => Err(bad()),
                }
            }
        }
    }
}

impl std::fmt::Display for LoadPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadPolicy::Other => f.write_str("other"),
            LoadPolicy::Fifo(p) => write!(f, "fifo:{p}"),
        }
    }
}

/// Everything a load needs; the cli fills it from flags. `Default` gives the paper's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadOptions {
    /// CPUs the loads may use; empty = every online CPU. cpu-cache and net put one worker on each.
    pub cpus: Vec<u32>,
    /// cpu-cache working set per worker; `None` = 2 × the largest cache in sysfs (20 MiB if none).
    pub wss_bytes: Option<u64>,
    /// Where `disk` puts its scratch directory (removed at stop).
    pub scratch_dir: PathBuf,
    /// Size of `disk`'s sequential file; checked against free space before start.
    pub disk_bytes: u64,
    /// `net` over a veth pair into a private network namespace instead of loopback.
    pub net_veth: bool,
    /// `net` server port on 127.0.0.1; 0 = any free port.
    pub net_port: u16,
    pub policy: LoadPolicy,
    /// Required for `policy = Fifo`.
    pub force: bool,
    /// `exec`: the command and its arguments (argv, no shell).
    pub exec_argv: Vec<String>,
    /// hackbench groups (each `hackbench_fds` senders × `hackbench_fds` receivers).
    pub hackbench_groups: u32,
    pub hackbench_fds: u32,
}

pub const DEFAULT_DISK_BYTES: u64 = 1 << 30;
pub const FALLBACK_WSS_BYTES: u64 = 20 << 20;

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            cpus: Vec::new(),
            wss_bytes: None,
            scratch_dir: PathBuf::from("/var/tmp"),
            disk_bytes: DEFAULT_DISK_BYTES,
            net_veth: false,
            net_port: 0,
            policy: LoadPolicy::Other,
            force: false,
            exec_argv: Vec::new(),
            // hackbench's defaults: 10 groups of 20 senders and 20 receivers = 400 processes.
            hackbench_groups: 10,
            hackbench_fds: 20,
        }
    }
}

/// Parses a byte size: `4096`, `64K`, `20M`, `20MiB`, `1G`, `1GiB` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("expected a size like 4096, 64K, 20M or 1G, got '{s}'"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "unknown size unit '{unit}' in '{s}' (use K, M, G, T)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size '{s}' overflows 64 bits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_refuse_overlaps() {
        assert_eq!(
            parse_kinds("cpu-cache,io").unwrap(),
            vec![LoadKind::CpuCache, LoadKind::Io]
        );
        assert_eq!(parse_kinds(" net ").unwrap(), vec![LoadKind::Net]);
        assert!(matches!(
            parse_kinds("cpu,io"),
            Err(LoadError::UnknownKind(k)) if k == "cpu"
        ));
        assert!(parse_kinds("io,disk").is_err());
        assert!(parse_kinds("net,net").is_err());
        assert!(parse_kinds("idle,net").is_err());
        assert!(parse_kinds("").is_err());
    }

    #[test]
    fn policy_parse() {
        assert_eq!("other".parse::<LoadPolicy>().unwrap(), LoadPolicy::Other);
        assert_eq!("fifo".parse::<LoadPolicy>().unwrap(), LoadPolicy::Fifo(1));
        assert_eq!(
            "fifo:42".parse::<LoadPolicy>().unwrap(),
            LoadPolicy::Fifo(42)
        );
        assert!("fifo:0".parse::<LoadPolicy>().is_err());
        assert!("fifo:100".parse::<LoadPolicy>().is_err());
        assert!("rr".parse::<LoadPolicy>().is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("20MiB"), Ok(20 * 1048576));
        assert_eq!(parse_size("1g"), Ok(1073741824));
        assert!(parse_size("1.5G").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("3X").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
