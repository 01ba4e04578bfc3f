//! Per-CPU (or per-cluster) root domains for partitioned SCHED_DEADLINE. A DEADLINE task's
//! affinity must span its whole root domain (Documentation/scheduler/sched-deadline.rst §5), so
//! pinning alone is refused by the kernel; each group of CPUs needs a root domain of its own.
//!
//! **cgroup v1** (preferred when the cpuset controller is bound to v1: a controller bound to a v1
//! hierarchy cannot be enabled on v2):
//! exclusive child cpusets with load balancing off in the parent (sched-deadline.rst §5.1; Lelli
//! 2014 §2.3 used the same set-up); each exclusive child becomes its own root domain once the root
//! cpuset stops balancing. Directories `rtscope-taskset-<pid>-lb<orig>-<n>`.
//!
//! **cgroup v2** (Documentation/admin-guide/cgroup-v2.rst, "cpuset.cpus.partition", "Threaded"):
//! one *partition root* per group, created directly under the top cgroup as a *threaded* cgroup
//! (`cgroup.type` = threaded, `cpuset.cpus` = the group, `cpuset.cpus.partition` = root), so that
//! single threads of this one process can be placed in different partitions through
//! `cgroup.threads`. Facts this relies on (checked in kernel/cgroup/{cgroup,cpuset}.c and under
//! QEMU on Debian's 6.1 and 6.12 kernels, crates/bench/tests/taskset_cgroup_v2.rs):
//! * the top cgroup is "mixable" (`cgroup_is_mixable`): it may have threaded and domain children
//!   at once, and its threaded children belong to its own threaded domain — so the process must
//!   sit in the top cgroup (we move it there for the run and back afterwards), and no extra
//!   partition level is needed (6.1 only has local partitions: the parent must be a partition
//!   root, which the top cgroup always is);
//! * a threaded cgroup may be a partition root (6.1 and 6.12 accept it);
//! * the top cgroup always holds tasks, and a populated parent partition may not give away its
//!   last CPU (`tasks_nocpu_error`: "Parent unable to distribute cpu downstream"). So when the
//!   groups cover all of the top cgroup's CPUs, the group holding its first CPU gets no partition:
//!   it stays in the top cgroup, whose own root domain is then exactly that group (the rest of the
//!   system shares those CPUs with it, below DEADLINE);
//! * "root", not "isolated": an isolated partition is left out of the scheduling domains and its
//!   CPUs are attached to the shared default root domain (not one per partition), has no load
//!   balancing inside a multi-CPU cluster, and recent kernels refuse a root partition under an
//!   isolated parent;
//! * `cpuset.cpus.exclusive` (≥ 6.7) is optional for a local partition (its exclusive CPUs
//!   default to `cpuset.cpus`) and is left alone; it is only required for remote partitions;
//! * an invalid partition reads back `root invalid (<reason>)`: that becomes
//!   [`CpusetError::Partition`] naming the reason;
//! * after `rmdir` the CPUs return to the top cgroup asynchronously (css offline work): clean-up
//!   waits until the top cgroup's `cpuset.cpus.effective` is back to what it was.
//!
//! `+cpuset` is written to the top `cgroup.subtree_control` when absent and removed again at the
//! end. v2 directories are named `rtscope-taskset-<pid>-sc<0|1>-<n>` (`sc1`: cpuset was already
//! enabled there, leave it; `sc0`: rtscope enabled it, remove it).
//!
//! Clean-up happens on drop (normal exit, error, SIGINT/SIGTERM via the runner's stop flag, panic
//! unwinding): threads still inside are moved back (v2: to the top cgroup, then the process to the
//! cgroup it came from), the directories removed, the changed setting restored. After a SIGKILL,
//! the next run finds directories whose pid is dead and removes them, restoring the setting from
//! the `lb<orig>` / `sc<0|1>` part of the name.

use rtscope_sys::knob::{Knob, KnobError};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const PREFIX: &str = "rtscope-taskset-";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v1 cpuset controller mounted here.
    V1(PathBuf),
    /// cgroup v2 with the cpuset controller available here.
    V2(PathBuf),
}

/// Find the cpuset hierarchy (v1 first: a controller bound to a v1 hierarchy is not available
/// on v2, so a v2 mount found beside it could not make partitions).
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
        if f[2] == "cgroup2" && v2.is_none() {
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
    #[error("no cpuset cgroup hierarchy is mounted (needed for partitioned SCHED_DEADLINE: per-CPU root domains); mount cgroup2 on /sys/fs/cgroup, or a v1 one with 'mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset'")]
    NotMounted,
    #[error("cgroup v2 partition {path}: cpuset.cpus.partition reads '{state}': the kernel refused it as a partition root (the reason is in parentheses); CPUs {cpus}")]
    Partition {
        path: String,
        state: String,
        cpus: String,
    },
    #[error("cgroup v2: CPUs {group} are not all in the top cgroup's cpuset.cpus.effective ({available}); pass {} within it", super::field::CPUS)]
    CpusUnavailable { group: String, available: String },
    #[error("cpuset {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

fn io_err(path: &Path, e: io::Error) -> CpusetError {
    CpusetError::Io {
        path: path.display().to_string(),
        source: e,
    }
}

fn write(path: &Path, v: &str) -> Result<(), CpusetError> {
    fs::write(path, v).map_err(|e| io_err(path, e))
}

fn read(path: &Path) -> Result<String, CpusetError> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| io_err(path, e))
}

fn cpu_list(cpus: &[u32]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_list(path: &Path) -> Result<Vec<u32>, CpusetError> {
    let s = read(path)?;
    rtscope_probe::sys::parse_cpu_list(&s)
        .map_err(|e| io_err(path, io::Error::new(io::ErrorKind::InvalidData, e)))
}

/// What the v2 set-up changed, to undo it.
#[derive(Debug, Default)]
struct V2State {
    /// The cgroup this process was in before (absolute path), when it was not the top one.
    orig_cgroup: Option<PathBuf>,
    /// rtscope wrote `+cpuset` to the top cgroup.subtree_control.
    added_cpuset: bool,
    /// The top cgroup's cpuset.cpus.effective before the partitions were made.
    top_effective: Vec<u32>,
    /// Per group: its partition directory, or None = the group stays in the top cgroup.
    targets: Vec<Option<PathBuf>>,
    /// Per group: its CPUs (for the affinity of threads that stay in the top cgroup).
    cpus: Vec<Vec<u32>>,
}

/// Exclusive child cpusets (v1) or partition roots (v2), one per group of CPUs; removed on drop.
pub struct Cpusets {
    root: PathBuf,
    dirs: Vec<PathBuf>,
    /// v1: root's sched_load_balance, changed for the run (None = untouched); a journalled
    /// [`Knob`], so a SIGKILLed run's value is written back by the next run.
    restore_lb: Option<Knob>,
    /// v2 state (None on v1).
    v2: Option<V2State>,
    pub notes: Vec<String>,
}

impl Cpusets {
    /// One root domain per group. Groups must be disjoint.
    pub fn create(groups: &[Vec<u32>]) -> Result<Cpusets, CpusetError> {
        match detect() {
            Some(Hierarchy::V1(p)) => Self::create_v1(p, groups),
            Some(Hierarchy::V2(p)) => Self::create_v2(p, groups),
            None => Err(CpusetError::NotMounted),
        }
    }

    fn create_v1(root: PathBuf, groups: &[Vec<u32>]) -> Result<Cpusets, CpusetError> {
        let mut me = Cpusets {
            root: root.clone(),
            dirs: Vec::new(),
            restore_lb: None,
            v2: None,
            notes: Vec::new(),
        };
        let lb = read(&root.join("cpuset.sched_load_balance"))?;
        let mems = read(&root.join("cpuset.mems"))?;
        let pid = std::process::id();
        for (i, g) in groups.iter().enumerate() {
            let d = root.join(format!("{PREFIX}{pid}-lb{lb}-{i}"));
            fs::create_dir(&d).map_err(|e| io_err(&d, e))?;
            me.dirs.push(d.clone());
            write(&d.join("cpuset.cpus"), &cpu_list(g))?;
            write(&d.join("cpuset.mems"), &mems)?;
            write(&d.join("cpuset.cpu_exclusive"), "1")?;
        }
        if lb != "0" {
            let f = root.join("cpuset.sched_load_balance");
            let k = Knob::set_with_original(&f, &lb, "0").map_err(|e| match e {
                KnobError::Write { source, .. } | KnobError::Read { source, .. } => {
                    io_err(&f, source)
                }
                other => io_err(&f, io::Error::other(other.to_string())),
            })?;
            me.restore_lb = Some(k);
            me.notes.push(format!(
                "root cpuset sched_load_balance set 0 (was {lb}) for the run: {} root domains",
                groups.len()
            ));
        }
        Ok(me)
    }

    fn create_v2(root: PathBuf, groups: &[Vec<u32>]) -> Result<Cpusets, CpusetError> {
        let mut me = Cpusets {
            root: root.clone(),
            dirs: Vec::new(),
            restore_lb: None,
            v2: Some(V2State::default()),
            notes: Vec::new(),
        };
        let sc_path = root.join("cgroup.subtree_control");
        let sc = read(&sc_path)?;
        let had = sc.split_whitespace().any(|c| c == "cpuset");
        if !had {
            write(&sc_path, "+cpuset")?;
            if let Some(v) = me.v2.as_mut() {
                v.added_cpuset = true;
            }
            me.notes.push(
                "cgroup v2: +cpuset written to the top cgroup.subtree_control for the run".into(),
            );
        }
        let top = parse_list(&root.join("cpuset.cpus.effective"))?;
        for g in groups {
            if g.is_empty() || !g.iter().all(|c| top.contains(c)) {
                return Err(CpusetError::CpusUnavailable {
                    group: cpu_list(g),
                    available: cpu_list(&top),
                });
            }
        }
        // The top cgroup keeps at least one CPU: if the groups cover all of them, the group with
        // its first CPU stays there (the top's own root domain is then exactly that group).
        let mut covered: Vec<u32> = groups.iter().flatten().copied().collect();
        covered.sort_unstable();
        covered.dedup();
        let stay = (covered == top)
            .then(|| groups.iter().position(|g| g.contains(&top[0])))
            .flatten();
        // Threads of one process can only be split across the top cgroup's threaded children if
        // the process is in the top cgroup itself.
        let cg = fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| io_err(Path::new("/proc/self/cgroup"), e))?;
        let rel = cg
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .unwrap_or("/")
            .trim()
            .trim_start_matches('/')
            .to_string();
        if !rel.is_empty() {
            let orig = root.join(&rel);
            write(&root.join("cgroup.procs"), &std::process::id().to_string())?;
            me.notes.push(format!(
                "cgroup v2: process moved from {} to the top cgroup for the run (threads of one process can only be split across its threaded children)",
                orig.display()
            ));
            if let Some(v) = me.v2.as_mut() {
                v.orig_cgroup = Some(orig);
            }
        }
        if let Some(v) = me.v2.as_mut() {
            v.top_effective = top.clone();
            v.cpus = groups.to_vec();
        }
        let pid = std::process::id();
        let tag = if had { "sc1" } else { "sc0" };
        let mut made = Vec::new();
        for (i, g) in groups.iter().enumerate() {
            if Some(i) == stay {
                if let Some(v) = me.v2.as_mut() {
                    v.targets.push(None);
                }
                continue;
            }
            let d = root.join(format!("{PREFIX}{pid}-{tag}-{i}"));
            fs::create_dir(&d).map_err(|e| io_err(&d, e))?;
            me.dirs.push(d.clone());
            if let Some(v) = me.v2.as_mut() {
                v.targets.push(Some(d.clone()));
            }
            write(&d.join("cgroup.type"), "threaded")?;
            write(&d.join("cpuset.cpus"), &cpu_list(g))?;
            let part = d.join("cpuset.cpus.partition");
            let w = fs::write(&part, "root");
            let state = read(&part)?;
            if state != "root" {
                return Err(CpusetError::Partition {
                    path: d.display().to_string(),
                    state,
                    cpus: cpu_list(g),
                });
            }
            w.map_err(|e| io_err(&part, e))?;
            let eff = parse_list(&d.join("cpuset.cpus.effective"))?;
            if eff != *g {
                return Err(CpusetError::Partition {
                    path: d.display().to_string(),
                    state: format!("root, but cpuset.cpus.effective = {}", cpu_list(&eff)),
                    cpus: cpu_list(g),
                });
            }
            made.push(cpu_list(g));
        }
        me.notes.push(format!(
            "cgroup v2: threaded partition roots for CPUs [{}]{}",
            made.join("], ["),
            match stay {
                Some(i) => format!(
                    "; CPUs [{}] stay in the top cgroup, whose own root domain they form (it must keep ≥ 1 CPU)",
                    cpu_list(&groups[i])
                ),
                None => String::new(),
            }
        ));
        Ok(me)
    }

    /// Move thread `tid` into group `g` (before it becomes SCHED_DEADLINE).
    pub fn attach(&self, g: usize, tid: i32) -> Result<(), CpusetError> {
        let bad = || CpusetError::Io {
            path: format!("group {g}"),
            source: rtscope_sys::einval(),
        };
        let Some(v2) = &self.v2 else {
            let d = self.dirs.get(g).ok_or_else(bad)?;
            return write(&d.join("tasks"), &tid.to_string());
        };
        match v2.targets.get(g).ok_or_else(bad)? {
            Some(d) => write(&d.join("cgroup.threads"), &tid.to_string()),
            None => {
                // Stays in the top cgroup: its affinity must be the top's remaining CPUs, which
                // are exactly this group.
                let cpus = v2.cpus.get(g).ok_or_else(bad)?;
                rtscope_probe::sys::set_affinity(tid, cpus)
                    .map_err(|e| io_err(&self.root.join("cgroup.threads"), e))
            }
        }
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.dirs
    }

    fn cleanup(&mut self) {
        if let Some(v2) = self.v2.take() {
            for d in self.dirs.drain(..) {
                remove_dir_v2(&self.root, &d);
            }
            // The CPUs return to the top cgroup when the partitions go offline (asynchronously).
            let eff = self.root.join("cpuset.cpus.effective");
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(2) {
                if parse_list(&eff)
                    .map(|e| e == v2.top_effective)
                    .unwrap_or(true)
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            if let Some(orig) = &v2.orig_cgroup {
                let _ = fs::write(orig.join("cgroup.procs"), std::process::id().to_string());
            }
            if v2.added_cpuset {
                let _ = fs::write(self.root.join("cgroup.subtree_control"), "-cpuset");
            }
            return;
        }
        for d in self.dirs.drain(..) {
            remove_dir(&self.root, &d);
        }
        if let Some(mut k) = self.restore_lb.take() {
            let _ = k.restore();
        }
    }
}

impl Drop for Cpusets {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// Move any task left in `d` back to the root, then rmdir (retrying: an exited thread leaves the
/// cgroup shortly after pthread_join returns). `tasks` is the file listing and accepting the
/// tasks: `tasks` in v1; `cgroup.threads` in v2, where the top cgroup is the same threaded domain.
fn remove_dir_via(root: &Path, d: &Path, tasks: &str) {
    for _ in 0..100 {
        if let Ok(t) = fs::read_to_string(d.join(tasks)) {
            for tid in t.split_whitespace() {
                let _ = fs::write(root.join(tasks), tid);
            }
        }
        match fs::remove_dir(d) {
            Ok(()) => return,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn remove_dir(root: &Path, d: &Path) {
    remove_dir_via(root, d, "tasks");
}

fn remove_dir_v2(root: &Path, d: &Path) {
    remove_dir_via(root, d, "cgroup.threads");
}

/// Remove cpusets left by a SIGKILLed rtscope (their pid is gone); returns what was done.
pub fn remove_stale() -> Vec<String> {
    match detect() {
        Some(Hierarchy::V1(root)) => remove_stale_v1(&root),
        Some(Hierarchy::V2(root)) => remove_stale_v2(&root),
        None => Vec::new(),
    }
}

/// (path, pid, the tag after the pid) of every directory of ours under `root`.
fn our_dirs(root: &Path) -> Vec<(PathBuf, String, String)> {
    let Ok(rd) = fs::read_dir(root) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let rest = name.strip_prefix(PREFIX)?;
            let mut parts = rest.split('-');
            let pid = parts.next().unwrap_or("").to_string();
            let tag = parts.next().unwrap_or("").to_string();
            Some((e.path(), pid, tag))
        })
        .collect()
}

fn pid_alive(pid: &str) -> bool {
    !pid.is_empty() && Path::new("/proc").join(pid).exists()
}

fn remove_stale_v1(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut restore: Option<String> = None;
    for (path, pid, tag) in our_dirs(root) {
        if pid_alive(&pid) {
            continue;
        }
        let lb = tag.strip_prefix("lb").unwrap_or("1");
        remove_dir(root, &path);
        out.push(format!(
            "removed stale cpuset {} (pid {pid} is gone)",
            path.display()
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

fn remove_stale_v2(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut remove_cpuset = false;
    let dirs = our_dirs(root);
    for (path, pid, tag) in &dirs {
        if pid_alive(pid) {
            continue;
        }
        remove_dir_v2(root, path);
        out.push(format!(
            "removed stale cgroup v2 partition {} (pid {pid} is gone)",
            path.display()
        ));
        remove_cpuset |= tag == "sc0";
    }
    // `-cpuset` only when that run had enabled it and no live run of ours still uses it.
    let live = our_dirs(root).iter().any(|(_, pid, _)| pid_alive(pid));
    if remove_cpuset && !live {
        let f = root.join("cgroup.subtree_control");
        let has = fs::read_to_string(&f)
            .map(|s| s.split_whitespace().any(|c| c == "cpuset"))
            .unwrap_or(false);
        if has && fs::write(&f, "-cpuset").is_ok() {
            out.push(
                "removed +cpuset from the top cgroup.subtree_control (the killed run had added it)"
                    .into(),
            );
        }
    }
    out
}

/// Our cpusets currently present (for tests and `taskset run` diagnostics).
pub fn ours() -> Vec<PathBuf> {
    let root = match detect() {
        Some(Hierarchy::V1(r)) | Some(Hierarchy::V2(r)) => r,
        None => return Vec::new(),
    };
    our_dirs(&root).into_iter().map(|(p, _, _)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_dir_names_parse() {
        let d = std::env::temp_dir().join(format!("rtscope-cpuset-names-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("rtscope-taskset-123-sc0-1")).unwrap();
        fs::create_dir_all(d.join("rtscope-taskset-77-lb1-0")).unwrap();
        fs::create_dir_all(d.join("other")).unwrap();
        let mut v: Vec<(String, String)> =
            our_dirs(&d).into_iter().map(|(_, p, t)| (p, t)).collect();
        v.sort();
        assert_eq!(
            v,
            vec![
                ("123".to_string(), "sc0".to_string()),
                ("77".to_string(), "lb1".to_string())
            ]
        );
        let _ = fs::remove_dir_all(&d);
    }
}
