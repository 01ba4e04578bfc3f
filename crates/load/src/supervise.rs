//! Starting, supervising and stopping the load processes.
//!
//! ```text
//! rtscope ──fork──▶ supervisor (own pgid, PDEATHSIG=SIGTERM, SCHED_OTHER)
//!                      ├─fork─▶ worker (own pgid, PDEATHSIG=SIGKILL, policy, affinity)
//!                      └─ …
//! ```
//! The supervisor waits in `sigtimedwait` for SIGTERM/SIGINT/SIGHUP (rtscope's stop, or its death
//! via PDEATHSIG) and SIGCHLD; on stop it SIGKILLs every worker's process group, reaps them and
//! removes the scratch directory. If the supervisor itself does not answer within 1.5 s, rtscope
//! kills the workers by the pids in shared memory.
//!
//! Workers wait at a [`Gate`] until the supervisor has forked the last of them. Otherwise the
//! first ones run while it forks the rest, and a SCHED_OTHER supervisor sharing a CPU with
//! hundreds of busy workers (hackbench's 400 on one vCPU) gets a fair share that shrinks with
//! every fork: starting takes quadratic time (minutes in an emulated guest).

use crate::plan::{plan, Resolved, Role, Unit};
use crate::procstat::Snapshot;
use crate::shm::{self, Shared, NCOUNTERS};
use crate::{cpu_cache, disk, exec, hackbench, net, report, sys};
use crate::{LoadError, LoadKind, LoadOptions};
use rtscope_model::LoadReport;
use rtscope_sys::process::{self, Fork};
use rtscope_sys::signals::SignalMask;
use rtscope_sys::Signal;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Indexes, in the per-slot counter arrays, where rtscope puts each worker's CPU time and
/// context switches read from /proc (the workers never write these slots).
pub(crate) const C_CPU_NS: usize = 5;
pub(crate) const C_CTX_SWITCHES: usize = 6;

/// How long the workers may take to start (and cpu-cache workers to fill their working set):
/// seconds here, but an emulated guest (the kernel lab's QEMU/TCG with -icount) runs a hundred
/// times slower. A supervisor that died is noticed at once, whatever this is.
const READY_TIMEOUT: Duration = Duration::from_secs(180);
const STOP_GRACE: Duration = Duration::from_millis(1500);

/// Handle on running loads. [`RunningLoads::stop`] returns the figures; dropping the handle also
/// stops everything and cleans up (without figures).
pub struct RunningLoads {
    kinds: Vec<LoadKind>,
    opts: LoadOptions,
    resolved: Resolved,
    units: Vec<Unit>,
    shm: Shared,
    supervisor: i32,
    started: Instant,
    before: Snapshot,
    base_counters: Vec<[u64; NCOUNTERS]>,
    scratch: Option<PathBuf>,
    net_port: Option<u16>,
    warnings: Vec<String>,
    /// Warnings that only concern the disk load.
    disk_notes: Vec<String>,
    stopped: bool,
}

/// What the supervisor needs; built in rtscope before the fork and inherited by it.
struct Ctx<'a> {
    units: &'a [Unit],
    shm: &'a Shared,
    resolved: &'a Resolved,
    opts: &'a LoadOptions,
    scratch: Option<&'a Path>,
    listener: Option<&'a OwnedFd>,
    parent: i32,
    /// None when the supervisor could not create the pipe: workers then start at once.
    gate: Option<&'a Gate>,
}

pub(crate) use rtscope_sys::process::Gate;

/// The signals the supervisor waits for synchronously.
fn supervisor_signals() -> SignalMask {
    SignalMask::of(&[
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGCHLD,
    ])
}

pub(crate) fn start(
    kinds: &[LoadKind],
    opts: &LoadOptions,
    resolved: Resolved,
) -> Result<RunningLoads, LoadError> {
    let units = plan(kinds, opts, &resolved);
    let nslots = units.last().map_or(0, |u| u.first_slot + u.nslots);
    let shm = Shared::new(nslots)?;
    let (before, missing) = Snapshot::read();
    let mut rl = RunningLoads {
        kinds: kinds.to_vec(),
        opts: opts.clone(),
        resolved,
        units,
        shm,
        supervisor: 0,
        started: Instant::now(),
        before,
        base_counters: Vec::new(),
        scratch: None,
        net_port: None,
        warnings: missing,
        disk_notes: Vec::new(),
        stopped: false,
    };
    if rl.units.is_empty() {
        return Ok(rl); // idle: nothing to run, the /proc figures still describe the machine.
    }

    if let Some(n) = &rl.resolved.disk_tool_note {
        rl.disk_notes.push(n.clone());
    }
    if rl.units.iter().any(|u| u.role == Role::Disk) {
        // Unique per run so two rtscope instances never share (or delete) each other's files.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = opts
            .scratch_dir
            .join(format!("rtscope-load-{}-{nanos:09}", sys::getpid()));
        std::fs::create_dir(&dir)
            .map_err(|e| LoadError::os(format!("creating {}", dir.display()), e))?;
        rl.scratch = Some(dir);
        if let Some(fs) = memory_fs(&opts.scratch_dir) {
            rl.disk_notes.push(format!(
                "disk: {} is on {fs}: no I/O reaches a block device, so there are no disk \
                 interrupts; use a directory on a real disk for the paper's scenario",
                opts.scratch_dir.display()
            ));
        }
    }

    let listener = if rl
        .units
        .iter()
        .any(|u| matches!(u.role, Role::Net { veth: false, .. }))
    {
        let l = std::net::TcpListener::bind(("127.0.0.1", opts.net_port)).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse {
                LoadError::PortInUse {
                    port: opts.net_port,
                }
            } else {
                LoadError::os("binding the net load's server socket", e)
            }
        })?;
        rl.net_port = l.local_addr().ok().map(|a| a.port());
        Some(OwnedFd::from(l))
    } else {
        None
    };

    let parent = sys::getpid();
    // Blocked before the fork so a stop request can never kill the supervisor before it has
    // set up its signal wait; restored in rtscope right after.
    let old_mask = supervisor_signals().block();
    // SAFETY: the child only runs `supervisor_main`, which never returns (it _exits), and uses
    // only fork-safe operations (glibc's malloc is reinitialised in the child).
    let forked = unsafe { process::fork() };
    if forked.as_ref().is_ok_and(|f| *f == Fork::Child) {
        let gate = Gate::new().ok();
        let ctx = Ctx {
            units: &rl.units,
            shm: &rl.shm,
            resolved: &rl.resolved,
            opts: &rl.opts,
            scratch: rl.scratch.as_deref(),
            listener: listener.as_ref(),
            parent,
            gate: gate.as_ref(),
        };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| supervisor_main(&ctx)));
        // Leaving the forked child without running rtscope's destructors.
        process::exit_now(101);
    }
    old_mask.set_thread_mask();
    let pid = match forked {
        Ok(Fork::Parent(pid)) => pid,
        _ => return Err(LoadError::last_os("fork of the load supervisor")),
    };
    rl.supervisor = pid;
    drop(listener); // the supervisor and the servers hold it now

    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        match rl.shm.header().state.load(Ordering::Acquire) {
            shm::STATE_READY => break,
            shm::STATE_FAILED => {
                let errno = rl.shm.header().errno.load(Ordering::Relaxed) as i32;
                return Err(LoadError::os(
                    "starting the load workers",
                    std::io::Error::from_raw_os_error(errno),
                ));
            }
            _ if Instant::now() > deadline || !sys::process_running(pid) => {
                return Err(LoadError::os(
                    "starting the load workers",
                    std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the supervisor did not report ready",
                    ),
                ));
            }
            _ => sys::sleep_ms(2),
        }
    }
    // cpu-cache workers first fill their working set (hundreds of MiB by default).
    let warm_slots: Vec<usize> = rl
        .units
        .iter()
        .filter(|u| matches!(u.role, Role::CpuCache { .. }))
        .map(|u| u.first_slot)
        .collect();
    while !warm_slots
        .iter()
        .all(|&i| rl.shm.slot(i).get(cpu_cache::C_WARM) == 1)
    {
        if Instant::now() > deadline {
            rl.warnings
                .push("cpu-cache: working set still being filled when the run started".into());
            break;
        }
        sys::sleep_ms(5);
    }
    // Rates are counted from here: forking hundreds of processes is not the load.
    rl.base_counters = rl.read_counters();
    for (base, (cpu_ns, ctx)) in rl.base_counters.iter_mut().zip(sample_proc(
        &rl.units,
        &rl.shm,
        rl.resolved.bonnie.is_some(),
    )) {
        base[C_CPU_NS] = cpu_ns;
        base[C_CTX_SWITCHES] = ctx;
    }
    let (before, _) = Snapshot::read();
    rl.before = before;
    rl.started = Instant::now();
    Ok(rl)
}

/// `Some("tmpfs")` when `dir` lives in memory (statfs magic numbers from linux/magic.h).
fn memory_fs(dir: &Path) -> Option<&'static str> {
    match rtscope_sys::fs::fs_magic(dir).ok()? {
        0x0102_1994 => Some("tmpfs"),
        0x8584_58f6 => Some("ramfs"),
        _ => None,
    }
}

impl RunningLoads {
    /// Stops every load, cleans up, and returns one report per requested kind.
    pub fn stop(mut self) -> Vec<LoadReport> {
        // Everything is read while the loads still run, in one go, so the load's own counters
        // and the machine-wide deltas cover the same window.
        let procs = sample_proc(&self.units, &self.shm, self.resolved.bonnie.is_some());
        let mut end_counters = self.read_counters();
        let (after, missing) = Snapshot::read();
        let elapsed_s = self.started.elapsed().as_secs_f64();
        self.shutdown();
        self.warnings.extend(missing);
        // State-like counters (connects, flags, exit status) are read after the stop so an
        // exec command's end is seen.
        let totals = self.read_counters();
        let mut counters = Vec::with_capacity(end_counters.len());
        for (i, end) in end_counters.iter_mut().enumerate() {
            let base = self.base_counters.get(i).copied().unwrap_or([0; NCOUNTERS]);
            let (cpu_ns, ctx) = procs.get(i).copied().unwrap_or((0, 0));
            end[C_CPU_NS] = cpu_ns;
            end[C_CTX_SWITCHES] = ctx;
            // saturating: a worker that died early has no /proc entry left (0, not negative).
            counters.push(std::array::from_fn(|k| end[k].saturating_sub(base[k])));
        }
        let early = self.shm.header().early_exits.load(Ordering::Relaxed);
        report::build(&report::Inputs {
            kinds: &self.kinds,
            opts: &self.opts,
            resolved: &self.resolved,
            units: &self.units,
            counters: &counters,
            totals: &totals,
            before: &self.before,
            after: &after,
            elapsed_s,
            early_exits: early,
            net_port: self.net_port,
            warnings: &self.warnings,
            disk_notes: &self.disk_notes,
        })
    }

    /// The supervisor's pid (0 for `idle`).
    pub fn supervisor_pid(&self) -> i32 {
        self.supervisor
    }

    /// Pids of every load process as they wrote them into shared memory.
    pub fn worker_pids(&self) -> Vec<i32> {
        (0..self.shm.nslots())
            .map(|i| self.shm.slot(i).pid() as i32)
            .filter(|&p| p > 0)
            .collect()
    }

    /// The scratch directory of `disk` (removed at stop).
    pub fn scratch_path(&self) -> Option<&Path> {
        self.scratch.as_deref()
    }

    /// The loopback port the `net` server listens on.
    pub fn net_port(&self) -> Option<u16> {
        self.net_port
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn read_counters(&self) -> Vec<[u64; NCOUNTERS]> {
        (0..self.shm.nslots())
            .map(|i| {
                let s = self.shm.slot(i);
                std::array::from_fn(|k| s.get(k))
            })
            .collect()
    }

    fn shutdown(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        if self.supervisor > 0 {
            let pid = self.supervisor;
            let _ = process::kill(pid, Signal::SIGTERM);
            let deadline = Instant::now() + STOP_GRACE;
            let mut reaped = false;
            while Instant::now() < deadline {
                let r = process::try_wait(pid);
                if r.as_ref()
                    .map_or(true, |r| r.is_some_and(|(p, _)| p == pid))
                {
                    reaped = true;
                    break;
                }
                sys::sleep_ms(5);
            }
            if !reaped {
                self.warnings.push(
                    "load supervisor did not stop within 1.5 s; its workers were killed directly"
                        .into(),
                );
                let _ = process::kill(pid, Signal::SIGKILL);
            }
            // Whatever the supervisor managed, make sure no worker survives it.
            for p in self.worker_pids() {
                sys::kill_tree(p);
            }
            if !reaped {
                // Reaping our own SIGKILLed child.
                let _ = process::wait(pid);
            }
        }
        if let Some(dir) = &self.scratch {
            if dir.exists() {
                // The supervisor normally removed it; a worker SIGKILLed mid-write may not have
                // been reaped yet when it tried, so try again.
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

impl Drop for RunningLoads {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The supervisor process. Never returns.
fn supervisor_main(ctx: &Ctx) -> ! {
    let me = sys::getpid();
    // A new group keeps the terminal's Ctrl-C (sent to rtscope's foreground group) away from
    // the loads: rtscope decides when they stop.
    process::set_own_group();
    // SIGTERM, not SIGKILL: on rtscope's death we still kill the workers and remove files.
    sys::die_with_parent(Signal::SIGTERM, ctx.parent);
    let _ = sys::set_policy(crate::LoadPolicy::Other);
    let _ = sys::set_affinity(&ctx.resolved.cpus);
    let hdr = ctx.shm.header();
    hdr.supervisor_pid.store(me as i64, Ordering::Relaxed);

    let mut workers: Vec<(i32, usize)> = Vec::new();
    for u in ctx.units {
        if let Err(e) = spawn_unit(ctx, u, &mut workers) {
            hdr.errno.store(
                e.raw_os_error().unwrap_or(rtscope_sys::EIO) as u64,
                Ordering::Relaxed,
            );
            stop_workers(ctx, &workers);
            if let Some(d) = ctx.scratch {
                let _ = std::fs::remove_dir_all(d);
            }
            hdr.state.store(shm::STATE_FAILED, Ordering::Release);
            // Leaving the forked supervisor.
            process::exit_now(1);
        }
    }
    // Every worker exists: let them all go at once.
    if let Some(g) = ctx.gate {
        g.open();
    }
    let started = Instant::now();
    hdr.state.store(shm::STATE_READY, Ordering::Release);

    // Signals blocked since before the fork.
    let set = supervisor_signals();
    let timeout = std::time::Duration::from_millis(500);
    loop {
        let sig = set
            .wait_timeout(timeout)
            .and_then(|s| Signal::try_from(s).ok());
        if sig == Some(Signal::SIGCHLD) {
            reap_early(ctx, &mut workers, started);
        } else if matches!(sig, Some(Signal::SIGTERM | Signal::SIGINT | Signal::SIGHUP)) {
            break;
        } else if process::getppid() != ctx.parent {
            break; // belt and braces: PDEATHSIG missed (e.g. the forking thread still lives)
        }
    }
    stop_workers(ctx, &workers);
    if let Some(d) = ctx.scratch {
        let _ = std::fs::remove_dir_all(d);
    }
    hdr.state.store(shm::STATE_STOPPED, Ordering::Release);
    // Leaving the forked supervisor.
    process::exit_now(0)
}

/// Reaps workers that ended on their own (crash, refused setup, an exec command finishing).
fn reap_early(ctx: &Ctx, workers: &mut Vec<(i32, usize)>, started: Instant) {
    loop {
        let Ok(Some((pid, st))) = process::try_wait(-1) else {
            return;
        };
        if let Some(i) = workers.iter().position(|&(p, _)| p == pid) {
            let (_, slot) = workers.swap_remove(i);
            ctx.shm.header().early_exits.fetch_add(1, Ordering::Relaxed);
            let s = ctx.shm.slot(slot);
            // Raw wait status + 1 so 0 still means "running"; time of exit in ms.
            s.set(exec::C_EXIT_STATUS, st as u64 + 1);
            s.set(exec::C_EXIT_MS, started.elapsed().as_millis() as u64);
        }
    }
}

/// CPU time (/proc/PID/schedstat, ns) and context switches (/proc/PID/status) of one process.
pub(crate) fn proc_stats(pid: i64) -> Option<(u64, u64)> {
    let t = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    let cpu_ns = t.split_whitespace().next()?.parse().ok()?;
    let t = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let ctx: u64 = t
        .lines()
        .filter(|l| l.contains("ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    Some((cpu_ns, ctx))
}

/// Live processes in process group `pgid` (an exec'd command and whatever it spawned).
fn group_members(pgid: i64) -> Vec<i64> {
    let Ok(d) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, r)| r.split_whitespace().nth(2)?.parse::<i64>().ok())
                    == Some(pgid)
            })
        })
        .collect()
}

/// Per-slot CPU time and context switches read from /proc by rtscope itself, at the same instants
/// as the /proc/stat snapshots so both cover the same window. An exec'd command is counted with
/// its whole process group (stress-ng and the like do their work in children). (0, 0) for a
/// process that is gone.
fn sample_proc(units: &[Unit], shm: &Shared, bonnie: bool) -> Vec<(u64, u64)> {
    let exec_slots: Vec<usize> = units
        .iter()
        .filter(|u| u.role == Role::Exec || (u.role == Role::Disk && bonnie))
        .map(|u| u.first_slot)
        .collect();
    (0..shm.nslots())
        .map(|i| {
            let pid = shm.slot(i).pid();
            if pid <= 0 {
                return (0, 0);
            }
            let members = if exec_slots.contains(&i) {
                group_members(pid)
            } else {
                vec![pid]
            };
            members
                .iter()
                .filter_map(|&p| proc_stats(p))
                .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
        })
        .collect()
}

fn stop_workers(ctx: &Ctx, workers: &[(i32, usize)]) {
    for &(pid, _) in workers {
        sys::kill_tree(pid);
    }
    // Grandchildren (the veth server's senders) wrote their own pids.
    for i in 0..ctx.shm.nslots() {
        sys::kill_tree(ctx.shm.slot(i).pid() as i32);
    }
    loop {
        // Reaping our own children; ECHILD when none is left.
        if process::wait(-1).is_err() {
            break;
        }
    }
}

fn spawn_unit(ctx: &Ctx, u: &Unit, workers: &mut Vec<(i32, usize)>) -> std::io::Result<()> {
    let all = &ctx.resolved.cpus;
    match &u.role {
        Role::CpuCache { cpu } => {
            let wss = ctx.resolved.wss_bytes;
            let slot = u.first_slot;
            let pid = spawn_worker(ctx, slot, &[*cpu], true, move |s| cpu_cache::run(s, wss))?;
            workers.push((pid, slot));
        }
        Role::HackGroup { fds } => hackbench::spawn_group(ctx_spawner(ctx), u, *fds, workers)?,
        Role::Disk => {
            let dir = ctx.scratch.map(Path::to_path_buf).unwrap_or_default();
            let bytes = ctx.opts.disk_bytes;
            let pid = match &ctx.resolved.bonnie {
                Some(prog) => {
                    let argv = exec::bonnie_argv(prog, &dir, bytes >> 20);
                    let prog = prog.clone();
                    spawn_worker(ctx, u.first_slot, all, true, move |_| {
                        exec::run_quiet(&prog, &argv)
                    })?
                }
                None => spawn_worker(ctx, u.first_slot, all, true, move |s| {
                    disk::run(s, &dir, bytes)
                })?,
            };
            workers.push((pid, u.first_slot));
        }
        Role::Net { clients, veth } => {
            net::spawn(ctx_spawner(ctx), u, *clients, *veth, ctx.listener, workers)?
        }
        Role::Exec => {
            let path = ctx.resolved.exec_path.clone().unwrap_or_default();
            let argv = ctx.resolved.exec_argv.clone();
            let pid = spawn_worker(ctx, u.first_slot, all, true, move |_| {
                exec::run(&path, &argv)
            })?;
            workers.push((pid, u.first_slot));
        }
    }
    Ok(())
}

/// What the per-kind spawners need from the supervisor.
pub(crate) struct Spawner<'a> {
    ctx: &'a Ctx<'a>,
}

fn ctx_spawner<'a>(ctx: &'a Ctx<'a>) -> Spawner<'a> {
    Spawner { ctx }
}

impl Spawner<'_> {
    pub fn cpus(&self) -> &[u32] {
        &self.ctx.resolved.cpus
    }
    /// A worker that starts when every worker has been forked.
    pub fn spawn(
        &self,
        slot: usize,
        cpus: &[u32],
        body: impl FnOnce(&shm::Slot) -> std::convert::Infallible,
    ) -> std::io::Result<i32> {
        spawn_worker(self.ctx, slot, cpus, true, body)
    }
    /// A worker that starts at once: one the supervisor talks to while it forks the others
    /// (the veth namespace holder).
    pub fn spawn_now(
        &self,
        slot: usize,
        cpus: &[u32],
        body: impl FnOnce(&shm::Slot) -> std::convert::Infallible,
    ) -> std::io::Result<i32> {
        spawn_worker(self.ctx, slot, cpus, false, body)
    }
    pub fn shm(&self) -> &Shared {
        self.ctx.shm
    }
}

/// Forks one worker: own process group, dies with the supervisor, signals reset, pinned to
/// `cpus`, the requested policy, then (`gated`: once the gate opens) `body`, which never returns.
fn spawn_worker(
    ctx: &Ctx,
    slot: usize,
    cpus: &[u32],
    gated: bool,
    body: impl FnOnce(&shm::Slot) -> std::convert::Infallible,
) -> std::io::Result<i32> {
    let sup = sys::getpid();
    let s = ctx.shm.slot(slot);
    // SAFETY: the child runs `body` and then _exits; it never returns into the supervisor loop.
    let pid = match unsafe { process::fork() }? {
        Fork::Parent(pid) => pid,
        Fork::Child => 0,
    };
    if pid == 0 {
        process::set_own_group();
        sys::die_with_parent(Signal::SIGKILL, sup);
        sys::reset_signals();
        s.pid.store(sys::getpid() as i64, Ordering::Relaxed);
        if let Some(g) = ctx.gate {
            g.pass_in_child(gated);
        }
        let code = if sys::set_affinity(cpus).is_err() {
            120
        } else if sys::set_policy(ctx.opts.policy).is_err() {
            121
        } else {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(s)));
            101
        };
        // Leaving the forked worker.
        process::exit_now(code);
    }
    // Also set from this side so a kill of the group can never race the child's own setpgid,
    // and so the pid is in shared memory before we report ready.
    process::set_group_of(pid);
    s.pid.store(pid as i64, Ordering::Relaxed);
    Ok(pid)
}

#[cfg(test)]
mod tests {
    use super::Gate;
    use rtscope_sys::process::{self, Fork};
    use std::time::{Duration, Instant};

    fn fork_child(gate: &Gate, wait: bool) -> i32 {
        // SAFETY: the child only makes async-signal-safe calls (close, read, _exit).
        match unsafe { process::fork() }.expect("fork") {
            Fork::Child => {
                gate.pass_in_child(wait);
                process::exit_now(7)
            }
            Fork::Parent(pid) => pid,
        }
    }

    /// Exit status of `pid` if it has ended by `deadline`, polling.
    fn ended_by(pid: i32, deadline: Instant) -> Option<i32> {
        loop {
            if let Ok(Some((p, st))) = process::try_wait(pid) {
                if p == pid {
                    return process::exit_code(st);
                }
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Gated children stay at the gate while the supervisor forks the others (which close their
    /// copies of the write end), and all pass when it opens; an ungated child never waits.
    #[test]
    fn gated_children_start_together_when_the_gate_opens() {
        let gate = Gate::new().unwrap();
        let gated: Vec<i32> = (0..3).map(|_| fork_child(&gate, true)).collect();
        let now = fork_child(&gate, false);
        assert_eq!(
            ended_by(now, Instant::now() + Duration::from_secs(10)),
            Some(7),
            "an ungated child passes at once"
        );
        let held = Instant::now() + Duration::from_millis(300);
        for &p in &gated {
            assert_eq!(ended_by(p, held), None, "child {p} passed a closed gate");
        }
        gate.open();
        for &p in &gated {
            assert_eq!(
                ended_by(p, Instant::now() + Duration::from_secs(10)),
                Some(7),
                "child {p} still waits at an open gate"
            );
        }
    }
}
