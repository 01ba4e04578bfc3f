//! Per-CPU (or per-cluster) root domains for partitioned SCHED_DEADLINE: exclusive cpusets with
//! load balancing off in the parent (Documentation/scheduler/sched-deadline.rst §5.1; Lelli 2014
//! §2.3 used the same cpuset set-up). A DEADLINE task's affinity must span its whole root domain,
//! so pinning alone is refused by the kernel; each exclusive child cpuset becomes its own root
//! domain once the root cpuset stops balancing.
//!
//! rtscope creates `rtscope-taskset-<pid>-lb<orig>-<n>` under the cpuset hierarchy and removes
//! them on drop (normal exit, error, SIGINT/SIGTERM via the runner's stop flag, panic unwinding).
//! After a SIGKILL, the next run finds directories whose pid is dead and removes them, restoring
//! the root's `sched_load_balance` from the `lb<orig>` part of the name.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

const PREFIX: &str = "rtscope-taskset-";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v1 cpuset controller mounted here.
    V1(PathBuf),
    /// cgroup v2 with the cpuset controller available here.
    V2(PathBuf),
}

/// Find the cpuset hierarchy (v1 first: that is what is mounted on our test machine).
pub fn detect() -> Option<Hierarchy> {
    let mounts = fs::read_to_string("/proc/self/mounts").ok()?;
    let mut v2 = None;
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        if f[2] == "cgroup" && f[3].split(',').any(|o| o == "cpuset") {
            return Some(Hierarchy::V1(PathBuf::from(f[1])));
        }
        if f[2] == "cgroup2" {
            let ctl =
                fs::read_to_string(Path::new(f[1]).join("cgroup.controllers")).unwrap_or_default();
            if ctl.split_whitespace().any(|c| c == "cpuset") {
                v2 = Some(Hierarchy::V2(PathBuf::from(f[1])));
            }
        }
    }
    v2
}

#[derive(Debug, thiserror::Error)]
pub enum CpusetError {
    #[error("no cpuset cgroup hierarchy is mounted (needed for partitioned SCHED_DEADLINE: per-CPU root domains); mount one with 'mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset'")]
    NotMounted,
    #[error("cgroup v2 cpuset partitions (cpuset.cpus.partition=root) need a threaded subtree to hold single threads; rtscope does not set that up yet — use --placement global, or a cgroup v1 cpuset mount")]
    V2Unsupported,
    #[error("cpuset {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

fn write(path: &Path, v: &str) -> Result<(), CpusetError> {
    fs::write(path, v).map_err(|e| CpusetError::Io {
        path: path.display().to_string(),
        source: e,
    })
}

fn read(path: &Path) -> Result<String, CpusetError> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| CpusetError::Io {
            path: path.display().to_string(),
            source: e,
        })
}

fn cpu_list(cpus: &[u32]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Exclusive child cpusets, one per group of CPUs; removed on drop.
pub struct Cpusets {
    root: PathBuf,
    dirs: Vec<PathBuf>,
    /// Root's sched_load_balance before we changed it (None = untouched).
    restore_lb: Option<String>,
    pub notes: Vec<String>,
}

impl Cpusets {
    /// One exclusive cpuset (= one root domain) per group. Groups must be disjoint.
    pub fn create(groups: &[Vec<u32>]) -> Result<Cpusets, CpusetError> {
        let root = match detect() {
            Some(Hierarchy::V1(p)) => p,
            Some(Hierarchy::V2(_)) => return Err(CpusetError::V2Unsupported),
            None => return Err(CpusetError::NotMounted),
        };
        let mut me = Cpusets {
            root: root.clone(),
            dirs: Vec::new(),
            restore_lb: None,
            notes: Vec::new(),
        };
        let lb = read(&root.join("cpuset.sched_load_balance"))?;
        let mems = read(&root.join("cpuset.mems"))?;
        let pid = std::process::id();
        for (i, g) in groups.iter().enumerate() {
            let d = root.join(format!("{PREFIX}{pid}-lb{lb}-{i}"));
            fs::create_dir(&d).map_err(|e| CpusetError::Io {
                path: d.display().to_string(),
                source: e,
            })?;
            me.dirs.push(d.clone());
            write(&d.join("cpuset.cpus"), &cpu_list(g))?;
            write(&d.join("cpuset.mems"), &mems)?;
            write(&d.join("cpuset.cpu_exclusive"), "1")?;
        }
        if lb != "0" {
            write(&root.join("cpuset.sched_load_balance"), "0")?;
            me.restore_lb = Some(lb.clone());
            me.notes.push(format!(
                "root cpuset sched_load_balance set 0 (was {lb}) for the run: {} root domains",
                groups.len()
            ));
        }
        Ok(me)
    }

    /// Move thread `tid` into group `g` (before it becomes SCHED_DEADLINE).
    pub fn attach(&self, g: usize, tid: i32) -> Result<(), CpusetError> {
        let d = self.dirs.get(g).ok_or_else(|| CpusetError::Io {
            path: format!("group {g}"),
            source: io::Error::from_raw_os_error(libc::EINVAL),
        })?;
        write(&d.join("tasks"), &tid.to_string())
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.dirs
    }

    fn cleanup(&mut self) {
        for d in self.dirs.drain(..) {
            remove_dir(&self.root, &d);
        }
        if let Some(lb) = self.restore_lb.take() {
            let _ = fs::write(self.root.join("cpuset.sched_load_balance"), lb);
        }
    }
}

impl Drop for Cpusets {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// Move any task left in `d` back to the root, then rmdir (retrying: an exited thread leaves the
/// cgroup shortly after pthread_join returns).
fn remove_dir(root: &Path, d: &Path) {
    for _ in 0..100 {
        if let Ok(t) = fs::read_to_string(d.join("tasks")) {
            for tid in t.split_whitespace() {
                let _ = fs::write(root.join("tasks"), tid);
            }
        }
        match fs::remove_dir(d) {
            Ok(()) => return,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Remove cpusets left by a SIGKILLed rtscope (their pid is gone); returns what was done.
pub fn remove_stale() -> Vec<String> {
    let mut out = Vec::new();
    let Some(Hierarchy::V1(root)) = detect() else {
        return out;
    };
    let Ok(rd) = fs::read_dir(&root) else {
        return out;
    };
    let mut restore: Option<String> = None;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let mut parts = rest.split('-');
        let pid = parts.next().unwrap_or("");
        let lb = parts
            .next()
            .and_then(|s| s.strip_prefix("lb"))
            .unwrap_or("1");
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        remove_dir(&root, &e.path());
        out.push(format!(
            "removed stale cpuset {} (pid {pid} is gone)",
            e.path().display()
        ));
        restore = Some(lb.to_string());
    }
    if let Some(lb) = restore {
        let f = root.join("cpuset.sched_load_balance");
        let cur = fs::read_to_string(&f).unwrap_or_default();
        if cur.trim() != lb && fs::write(&f, &lb).is_ok() {
            out.push(format!("restored root cpuset sched_load_balance = {lb}"));
        }
        // Threads SIGKILLed while SCHED_DEADLINE inside the per-CPU root domains leave their
        // bandwidth counted in the rebuilt default root domain (seen on 6.18: every later
        // admission fails with EBUSY). One more rebuild, from the tasks that exist, clears it.
        if lb == "1" {
            std::thread::sleep(Duration::from_millis(50));
            if fs::write(&f, "0").is_ok() && fs::write(&f, "1").is_ok() {
                out.push(
                    "rebuilt the root domain to drop DEADLINE bandwidth of killed threads".into(),
                );
            }
        }
    }
    out
}

/// Our cpusets currently present (for tests and `taskset run` diagnostics).
pub fn ours() -> Vec<PathBuf> {
    let Some(Hierarchy::V1(root)) = detect() else {
        return Vec::new();
    };
    fs::read_dir(&root)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(PREFIX))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}
