//! Clap-free load options, shared by `rtscope load` and `rtscope measure --load`.

use crate::error::*;
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

    /// Every kind's name, as the command line spells it.
    pub const NAMES: [&'static str; 7] = rtscope_model::load::NAMES;

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
        check_next(&kinds, k, spec)?;
        kinds.push(k);
    }
    check_idle(&kinds, spec)?;
    Ok(kinds)
}

/// Duplicates, overlaps (`io,disk`) and `idle` mixed with real loads are refused; `spec` is how
/// the list was given, for the message.
pub(crate) fn check_kinds_in(kinds: &[LoadKind], spec: &str) -> Result<(), LoadError> {
    for (i, &k) in kinds.iter().enumerate() {
        check_next(&kinds[..i], k, spec)?;
    }
    check_idle(kinds, spec)
}

fn check_next(before: &[LoadKind], k: LoadKind, spec: &str) -> Result<(), LoadError> {
    for prev in before {
        let overlap = prev.parts().iter().any(|p| k.parts().contains(p));
        if *prev == k || overlap {
            return Err(LoadError::invalid(
                LOAD,
                format!("'{k}' overlaps '{prev}' in '{spec}' (io = hackbench+disk+net)"),
            ));
        }
    }
    Ok(())
}

fn check_idle(kinds: &[LoadKind], spec: &str) -> Result<(), LoadError> {
    if kinds.len() > 1 && kinds.contains(&LoadKind::Idle) {
        return Err(LoadError::invalid(
            LOAD,
            format!("'idle' cannot be combined with other loads in '{spec}'"),
        ));
    }
    Ok(())
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

impl LoadPolicy {
    /// The spellings the command line accepts (`fifo:PRIO` with PRIO 1..=99).
    pub const NAMES: [&'static str; 3] = ["other", "fifo", "fifo:PRIO"];
}

impl std::str::FromStr for LoadPolicy {
    type Err = LoadError;
    fn from_str(s: &str) -> Result<Self, LoadError> {
        let bad = || {
            LoadError::invalid(
                LOAD_POLICY,
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

/// What makes the disk load: our own bonnie++-like worker, or the real bonnie++ as Cerqueira &
/// Brandenburg ran it (OSPERT'13 §3.3: bonnie++ with direct I/O).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DiskTool {
    #[default]
    Builtin,
    /// bonnie++ from PATH (or /usr/sbin), `-D` direct I/O; bad input when it is not installed.
    Bonnie,
    /// bonnie++ when installed, the builtin worker otherwise (and the report says so).
    Auto,
}

impl DiskTool {
    pub const NAMES: [&'static str; 3] = ["builtin", "bonnie++", "auto"];
    pub fn name(self) -> &'static str {
        match self {
            DiskTool::Builtin => "builtin",
            DiskTool::Bonnie => "bonnie++",
            DiskTool::Auto => "auto",
        }
    }
}

impl std::str::FromStr for DiskTool {
    type Err = LoadError;
    fn from_str(s: &str) -> Result<Self, LoadError> {
        DiskTool::NAMES
            .iter()
            .position(|n| *n == s.trim())
            .map(|i| [DiskTool::Builtin, DiskTool::Bonnie, DiskTool::Auto][i])
            .ok_or_else(|| {
                LoadError::invalid(
                    DISK_TOOL,
                    format!("expected builtin, bonnie++ or auto, got '{s}'"),
                )
            })
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
    pub disk_tool: DiskTool,
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
            disk_tool: DiskTool::Builtin,
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

/// The load options as the command line gives them (`rtscope load`, `rtscope measure --load`),
/// sizes still as text; [`LoadSettings::options`] checks them.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadSettings {
    /// `--wss`: cpu-cache working set per worker; `None` = 2 × the largest cache.
    pub wss: Option<String>,
    pub scratch_dir: PathBuf,
    /// `--disk-size`.
    pub disk_size: String,
    /// `--disk-tool`.
    pub disk_tool: DiskTool,
    pub net_veth: bool,
    pub net_port: u16,
    pub policy: LoadPolicy,
    pub hackbench_groups: u32,
}

impl Default for LoadSettings {
    fn default() -> Self {
        let o = LoadOptions::default();
        LoadSettings {
            wss: None,
            scratch_dir: o.scratch_dir,
            disk_size: "1G".into(),
            disk_tool: o.disk_tool,
            net_veth: o.net_veth,
            net_port: o.net_port,
            policy: o.policy,
            hackbench_groups: o.hackbench_groups,
        }
    }
}

impl LoadSettings {
    /// The library options for loads on `cpus` (empty: every online CPU); a size that does not
    /// parse is bad input naming its flag.
    pub fn options(
        &self,
        cpus: Vec<u32>,
        force: bool,
        exec_argv: Vec<String>,
    ) -> Result<LoadOptions, LoadError> {
        let wss_bytes = match &self.wss {
            Some(w) => Some(parse_size(w).map_err(|e| LoadError::invalid(WSS, e))?),
            None => None,
        };
        let disk_bytes =
            parse_size(&self.disk_size).map_err(|e| LoadError::invalid(DISK_SIZE, e))?;
        Ok(LoadOptions {
            cpus,
            wss_bytes,
            scratch_dir: self.scratch_dir.clone(),
            disk_bytes,
            disk_tool: self.disk_tool,
            net_veth: self.net_veth,
            net_port: self.net_port,
            policy: self.policy,
            force,
            exec_argv,
            hackbench_groups: self.hackbench_groups,
            ..LoadOptions::default()
        })
    }
}

/// Parses a byte size: `4096`, `64K`, `20M`, `20MiB`, `1G`, `1GiB` (binary multiples; the one
/// parser is [`rtscope_model::size::parse_size`]).
pub fn parse_size(s: &str) -> Result<u64, String> {
    rtscope_model::size::parse_size(s).map_err(|e| e.to_string())
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
    fn typed_kinds_are_checked_like_a_spec() {
        use LoadKind::*;
        assert!(check_kinds_in(&[CpuCache, Io], "cpu-cache,io").is_ok());
        let rows: &[(&[LoadKind], &str)] = &[
            (
                &[Io, Disk],
                "⟨load.load⟩: 'disk' overlaps 'io' in 'io,disk' (io = hackbench+disk+net)",
            ),
            (
                &[Net, Net],
                "⟨load.load⟩: 'net' overlaps 'net' in 'net,net' (io = hackbench+disk+net)",
            ),
            (
                &[Idle, Net],
                "⟨load.load⟩: 'idle' cannot be combined with other loads in 'idle,net'",
            ),
        ];
        for (kinds, want) in rows {
            let spec: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
            let e = check_kinds_in(kinds, &spec.join(",")).unwrap_err();
            assert!(e.is_bad_input());
            assert_eq!(e.to_string(), *want);
        }
        for (k, n) in LoadKind::ALL.iter().zip(LoadKind::NAMES) {
            assert_eq!(k.name(), n);
            assert_eq!(n.parse::<LoadKind>().unwrap(), *k);
        }
    }

    #[test]
    fn settings_resolve_to_options() {
        let o = LoadSettings::default()
            .options(vec![1], false, Vec::new())
            .unwrap();
        assert_eq!(
            o,
            LoadOptions {
                cpus: vec![1],
                ..LoadOptions::default()
            }
        );
        let s = LoadSettings {
            wss: Some("20M".into()),
            disk_size: "64K".into(),
            policy: LoadPolicy::Fifo(5),
            ..LoadSettings::default()
        };
        let o = s.options(Vec::new(), true, vec!["true".into()]).unwrap();
        assert_eq!(
            (o.wss_bytes, o.disk_bytes, o.policy, o.force),
            (Some(20 << 20), 64 << 10, LoadPolicy::Fifo(5), true)
        );
        let rows: &[(LoadSettings, &str)] = &[
            (
                LoadSettings {
                    wss: Some("3X".into()),
                    ..LoadSettings::default()
                },
                "⟨load.wss⟩: unknown size unit 'X' in '3X' (use K, M, G, T)",
            ),
            (
                LoadSettings {
                    disk_size: "x".into(),
                    ..LoadSettings::default()
                },
                "⟨load.disk_size⟩: expected a size like 4096, 64K, 20M or 1G, got 'x'",
            ),
        ];
        for (s, want) in rows {
            let e = s.options(Vec::new(), false, Vec::new()).unwrap_err();
            assert!(e.is_bad_input());
            assert_eq!(e.to_string(), *want);
        }
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
        for n in &LoadPolicy::NAMES[..2] {
            assert!(n.parse::<LoadPolicy>().is_ok(), "{n}");
        }
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
