//! Every check happens here, before a single process is forked; nothing here changes the machine
//! (the port check binds and immediately closes a listening socket, which leaves no trace).

use crate::error::*;
use crate::options::FALLBACK_WSS_BYTES as FALLBACK_WSS;
use crate::plan::Resolved;
use crate::{sys, LoadKind, LoadOptions, LoadPolicy};
use std::ffi::CString;
use std::path::{Path, PathBuf};

const MIN_WSS: u64 = 4 << 10;
const MAX_WSS: u64 = 64 << 30;
const MIN_DISK: u64 = 1 << 20;
const MAX_DISK: u64 = 1 << 40;
/// Room left on the scratch file system beyond the sequential file (small files, metadata).
pub(crate) const DISK_MARGIN: u64 = 64 << 20;

fn human(b: u64) -> String {
    if b >= 1 << 30 && b.is_multiple_of(1 << 30) {
        format!("{} GiB", b >> 30)
    } else if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / 1048576.0)
    } else {
        format!("{b} B")
    }
}

pub(crate) fn validate(kinds: &[LoadKind], opts: &LoadOptions) -> Result<Resolved, LoadError> {
    if kinds.is_empty() {
        return Err(LoadError::invalid(LOAD, "no load kind given"));
    }
    let has = |k: LoadKind| kinds.iter().any(|x| x.parts().contains(&k));

    let online = sys::online_cpus();
    let cpus = if opts.cpus.is_empty() {
        online.clone()
    } else {
        let mut seen = Vec::new();
        for &c in &opts.cpus {
            if !online.contains(&c) {
                return Err(LoadError::invalid(
                    CPUS,
                    format!("CPU {c} is not online (online: {online:?})"),
                ));
            }
            if seen.contains(&c) {
                return Err(LoadError::invalid(CPUS, format!("CPU {c} listed twice")));
            }
            seen.push(c);
        }
        seen
    };

    if let LoadPolicy::Fifo(_) = opts.policy {
        if !opts.force {
            return Err(LoadError::invalid(
                LOAD_POLICY,
                format!("a SCHED_FIFO load can starve the machine; add {FORCE} to confirm"),
            ));
        }
        // RT throttling (sched_rt_runtime_us < sched_rt_period_us) is what still leaves the
        // machine some time; we never turn it off and refuse to run when someone else did.
        let rt = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").map_err(|e| {
            LoadError::invalid(
                LOAD_POLICY,
                format!("cannot read /proc/sys/kernel/sched_rt_runtime_us: {e}"),
            )
        })?;
        if rt.trim() == "-1" {
            return Err(LoadError::invalid(
                LOAD_POLICY,
                "fifo needs RT throttling on, but sched_rt_runtime_us is -1",
            ));
        }
    }

    if has(LoadKind::Hackbench) {
        if !(1..=100).contains(&opts.hackbench_groups) {
            return Err(LoadError::invalid(
                HACKBENCH_GROUPS,
                format!("must be 1..=100, got {}", opts.hackbench_groups),
            ));
        }
        if !(1..=100).contains(&opts.hackbench_fds) {
            return Err(LoadError::invalid(
                HACKBENCH_FDS,
                format!("must be 1..=100, got {}", opts.hackbench_fds),
            ));
        }
    }

    let (wss_bytes, wss_source) = match opts.wss_bytes {
        Some(w) => (w, crate::plan::WSS_REQUESTED.to_string()),
        None => match largest_cache_bytes() {
            Some((c, name)) => (2 * c, format!("2 x {name} ({} from sysfs)", human(c))),
            None => (
                FALLBACK_WSS,
                "fallback (no cache size in sysfs)".to_string(),
            ),
        },
    };
    if has(LoadKind::CpuCache) {
        if !(MIN_WSS..=MAX_WSS).contains(&wss_bytes) {
            return Err(LoadError::invalid(
                WSS,
                format!("must be 4K..=64G bytes, got {wss_bytes}"),
            ));
        }
        if let Some(avail) = mem_available_bytes() {
            let total = wss_bytes.saturating_mul(cpus.len() as u64);
            if total > avail / 2 {
                return Err(LoadError::invalid(
                    WSS,
                    format!(
                        "{} x {} workers = {} exceeds half of MemAvailable ({})",
                        human(wss_bytes),
                        cpus.len(),
                        human(total),
                        human(avail)
                    ),
                ));
            }
        }
    }

    if has(LoadKind::Disk) {
        check_scratch(&opts.scratch_dir, opts.disk_bytes)?;
    }

    if has(LoadKind::Net) {
        if opts.net_veth {
            if !rtscope_sys::system::is_root() {
                return Err(LoadError::invalid(NET_VETH, "needs root (CAP_NET_ADMIN)"));
            }
            if ip_command().is_none() {
                return Err(LoadError::invalid(
                    NET_VETH,
                    "the 'ip' command (iproute2) was not found",
                ));
            }
        } else if opts.net_port != 0 {
            check_port_free(opts.net_port)?;
        }
    }

    let (mut exec_path, mut exec_argv) = (None, Vec::new());
    if has(LoadKind::Exec) {
        let Some(prog) = opts.exec_argv.first() else {
            return Err(LoadError::invalid(
                EXEC,
                "needs a command: rtscope load exec -- CMD ARGS…",
            ));
        };
        let path = find_program(prog).ok_or_else(|| {
            LoadError::invalid(
                EXEC,
                format!("command '{prog}' not found or not executable"),
            )
        })?;
        let cstr = |s: &str| {
            CString::new(s)
                .map_err(|_| LoadError::invalid(EXEC, format!("argument {s:?} contains NUL")))
        };
        exec_path = Some(cstr(&path.to_string_lossy())?);
        for a in &opts.exec_argv {
            exec_argv.push(cstr(a)?);
        }
    } else if !opts.exec_argv.is_empty() {
        return Err(LoadError::invalid(
            EXEC,
            "a command was given after -- but no 'exec' load was asked for",
        ));
    }

    let (mut bonnie, mut disk_tool_note) = (None, None);
    if has(LoadKind::Disk) && opts.disk_tool != crate::DiskTool::Builtin {
        match bonnie_program() {
            Some(p) => {
                bonnie = Some(CString::new(p.to_string_lossy().as_bytes()).map_err(|_| {
                    LoadError::invalid(DISK_TOOL, "the bonnie++ path contains NUL")
                })?)
            }
            None if opts.disk_tool == crate::DiskTool::Bonnie => {
                return Err(LoadError::invalid(
                    DISK_TOOL,
                    format!("bonnie++ not found in PATH or /usr/sbin (apt-get install bonnie++), or use {DISK_TOOL} builtin"),
                ))
            }
            None => {
                disk_tool_note = Some(
                    "disk: bonnie++ is not installed: the builtin bonnie++-like worker ran instead"
                        .to_string(),
                )
            }
        }
    }

    Ok(Resolved {
        cpus,
        wss_bytes,
        wss_source,
        exec_path,
        exec_argv,
        bonnie,
        disk_tool_note,
    })
}

/// bonnie++ lives in /usr/sbin on Debian, outside an ordinary user's PATH.
fn bonnie_program() -> Option<PathBuf> {
    find_program("bonnie++").or_else(|| {
        let p = PathBuf::from("/usr/sbin/bonnie++");
        is_executable(&p).then_some(p)
    })
}

fn check_scratch(dir: &Path, disk_bytes: u64) -> Result<(), LoadError> {
    const F: Field = SCRATCH_DIR;
    if !(MIN_DISK..=MAX_DISK).contains(&disk_bytes) {
        return Err(LoadError::invalid(
            DISK_SIZE,
            format!("must be 1M..=1T bytes, got {disk_bytes}"),
        ));
    }
    let md = std::fs::metadata(dir)
        .map_err(|e| LoadError::invalid(F, format!("{}: {e}", dir.display())))?;
    if !md.is_dir() {
        return Err(LoadError::invalid(
            F,
            format!("{} is not a directory", dir.display()),
        ));
    }
    if rtscope_sys::fs::c_path(dir).is_none() {
        return Err(LoadError::invalid(F, "path contains NUL"));
    }
    if let Err(e) = rtscope_sys::fs::check_writable_dir(dir) {
        return Err(LoadError::invalid(
            F,
            format!("{} is not writable: {e}", dir.display()),
        ));
    }
    let free = match rtscope_sys::fs::space(dir) {
        Ok(s) if !s.read_only => s.free_bytes,
        _ => {
            return Err(LoadError::invalid(
                F,
                format!("{} is on a read-only file system", dir.display()),
            ))
        }
    };
    let need = disk_bytes + DISK_MARGIN;
    if free < need {
        return Err(LoadError::invalid(
            F,
            format!(
                "{} has {} free; {DISK_SIZE} {} needs {} (file + 64 MiB margin)",
                dir.display(),
                human(free),
                human(disk_bytes),
                human(need)
            ),
        ));
    }
    Ok(())
}

fn check_port_free(port: u16) -> Result<(), LoadError> {
    match std::net::TcpListener::bind(("127.0.0.1", port)) {
        Ok(l) => {
            drop(l);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(LoadError::PortInUse { port }),
        Err(e) => Err(LoadError::invalid(
            NET_PORT,
            format!("cannot bind {port}: {e}"),
        )),
    }
}

/// Largest cache of CPU 0 (caches are symmetric on the machines we target), with its name.
fn largest_cache_bytes() -> Option<(u64, String)> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    let mut best: Option<(u64, String)> = None;
    for e in dir.filter_map(|e| e.ok()) {
        let p = e.path();
        let size = std::fs::read_to_string(p.join("size")).ok();
        let level = std::fs::read_to_string(p.join("level")).ok();
        if let (Some(size), Some(level)) = (size, level) {
            if let Ok(b) = crate::parse_size(size.trim()) {
                if best.as_ref().is_none_or(|(x, _)| b > *x) {
                    best = Some((b, format!("L{}", level.trim())));
                }
            }
        }
    }
    best.filter(|(b, _)| *b > 0)
}

fn mem_available_bytes() -> Option<u64> {
    let t = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = t.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn find_program(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| is_executable(p))
}

pub(crate) fn ip_command() -> Option<PathBuf> {
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .iter()
        .map(PathBuf::from)
        .find(|p| is_executable(p))
}
