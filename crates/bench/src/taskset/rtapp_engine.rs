//! The real rt-app as the workload engine (`taskset run --rt-app FILE --engine rt-app`): the
//! user's file is run by the installed `rt-app`, unchanged but for where its logs go (a private
//! directory) and its duration (`-D`); rtscope reads rt-app's own per-thread logs and puts its
//! per-loop view in the record. Whatever the file uses (locks, barriers, phases, fork …), rt-app
//! itself runs it: rtscope does not keep a second rt-app in step with the first.
//!
//! Logs: rt-app 1.0 (`log_size` absent: its default "file" mode) writes each loop's line with
//! `fprintf` on a `FILE` opened in `logdir`: a regular file is block-buffered by glibc, so the
//! last few KiB of every thread's log stay in rt-app's memory until the thread ends (`fclose`) or
//! the process `exit`s, and a kill loses them. rtscope makes each expected log name
//! (`<logdir>/<log_basename>-<thread>-<index>.log`) a symlink to a pty of its own: glibc
//! line-buffers a stream on a terminal, so every line reaches rtscope as rt-app writes it, and a
//! stop no longer has to wait for rt-app to write its logs.
//!
//! Exit paths: rt-app dies with rtscope (PR_SET_PDEATHSIG). On a stop or at the end of the
//! duration it gets SIGTERM: its handler clears its run flag, and each thread ends after its
//! current event (a timer wait ends at the next expiry, a run event at its end), then rt-app
//! joins them and exits. With streamed logs it is killed if it has not ended within one period
//! (its shortest timer period) and at most [`STREAM_GRACE_NS`]; every loop it logged is already
//! read. Logs that could not be streamed (more than [`MAX_STREAMED`] threads, no pty) keep the
//! old waits ([`TERM_GRACE_NS`], [`END_GRACE_NS`]) and may lose their tail on a kill, which the
//! record says. Its threads and their policies end with its process; the private directory and
//! the ptys are removed.

use super::rtapp::{scan_structure, strip_json_extensions, RtAppError};
use rtscope_model::taskset::{RtAppThread, RtAppView};
use rtscope_sys::signals;
use serde::ser::{SerializeMap, SerializeSeq};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a caller learns of rt-app's run as it goes: the seam for the kernel's view (a watcher
/// attaches to rt-app's process as soon as it exists, before its threads, and is stepped while
/// it runs).
pub trait Observer {
    /// rt-app was started: its pid, before it has parsed its file or created a thread.
    fn spawned(&mut self, _pid: u32) {}
    /// rt-app's threads (tid, comm), its main thread excluded, once all of them exist.
    fn threads(&mut self, _pid: u32, _threads: &[(i32, String)]) {}
    /// Called every few milliseconds while rt-app runs, and once after it ended.
    fn tick(&mut self) {}
}

/// No one watching.
pub struct Unobserved;
impl Observer for Unobserved {}

/// Most threads an rt-app file may create (instances summed).
pub const MAX_THREADS: u64 = 4096;
/// How long rt-app may take to end after a stop (SIGINT/SIGTERM to rtscope) before it is
/// killed: the rule for every run is "within one period and at most 100 ms" of the stop.
/// rt-app 1.0's own shutdown waits for each thread to reach its next timer expiry or the end of
/// its run event, and writes its logs (kept in memory) only then: a kill loses them.
pub const TERM_GRACE_NS: u64 = 90_000_000;
/// The same at the end of the duration (`-D`, or the file's): rt-app is given up to a second
/// to end on its own and write its logs, the record being the point of the run.
pub const END_GRACE_NS: u64 = 1_000_000_000;
/// After SIGTERM, how long rt-app may take to end on its own when its logs are streamed: the
/// rule "within one period, at most 100 ms" of a stop, less the time to read the logs.
pub const STREAM_GRACE_NS: u64 = 50_000_000;
/// Shortest wait before a kill (a 1-ms timer still gets a chance to end on its own).
pub const STREAM_GRACE_MIN_NS: u64 = 5_000_000;
/// Most threads whose logs are streamed through a pty each (the kernel's pty limit,
/// /proc/sys/kernel/pty/max, is 4096 for the whole machine by default).
pub const MAX_STREAMED: usize = 256;
/// Longest run when neither `-D` nor the file bounds it (the verb's own limit).
pub const MAX_RUN_NS: u64 = 600_000_000_000;

/// A JSON value that keeps its keys in file order (rt-app runs a thread's events in file order;
/// serde_json's `Map` sorts them).
#[derive(Clone, Debug, PartialEq)]
enum Node {
    Obj(Vec<(String, Node)>),
    Arr(Vec<Node>),
    Leaf(serde_json::Value),
}

impl Node {
    fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Obj(v) => v.iter().find(|(k, _)| k == key).map(|(_, n)| n),
            _ => None,
        }
    }

    fn remove(&mut self, key: &str) {
        if let Node::Obj(v) = self {
            v.retain(|(k, _)| k != key);
        }
    }

    fn set(&mut self, key: &str, value: Node) {
        if let Node::Obj(v) = self {
            match v.iter_mut().find(|(k, _)| k == key) {
                Some((_, n)) => *n = value,
                None => v.push((key.to_string(), value)),
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Node, A::Error> {
                let mut v = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    v.push((k, m.next_value::<Node>()?));
                }
                Ok(Node::Obj(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<Node, A::Error> {
                let mut v = Vec::new();
                while let Some(n) = s.next_element::<Node>()? {
                    v.push(n);
                }
                Ok(Node::Arr(v))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Node, E> {
                Ok(Node::Leaf(b.into()))
            }
            fn visit_i64<E>(self, x: i64) -> Result<Node, E> {
                Ok(Node::Leaf(x.into()))
            }
            fn visit_u64<E>(self, x: u64) -> Result<Node, E> {
                Ok(Node::Leaf(x.into()))
            }
            fn visit_f64<E>(self, x: f64) -> Result<Node, E> {
                Ok(Node::Leaf(x.into()))
            }
            fn visit_str<E>(self, s: &str) -> Result<Node, E> {
                Ok(Node::Leaf(s.into()))
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Leaf(serde_json::Value::Null))
            }
        }
        d.deserialize_any(V)
    }
}

impl serde::Serialize for Node {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Obj(v) => {
                let mut m = s.serialize_map(Some(v.len()))?;
                for (k, n) in v {
                    m.serialize_entry(k, n)?;
                }
                m.end()
            }
            Node::Arr(v) => {
                let mut q = s.serialize_seq(Some(v.len()))?;
                for n in v {
                    q.serialize_element(n)?;
                }
                q.end()
            }
            Node::Leaf(x) => x.serialize(s),
        }
    }
}

/// An rt-app run resolved: nothing started yet.
#[derive(Clone, Debug, PartialEq)]
pub struct RtAppJob {
    pub binary: PathBuf,
    /// The user's file.
    pub source: PathBuf,
    tree: Node,
    /// Threads the file creates (instances summed).
    pub threads: u64,
    /// When rtscope ends the run (SIGTERM) if rt-app has not: `-D`, else the file's duration.
    pub limit_ns: u64,
    /// Each thread's log name as rt-app forms it (`<key>-<index>`, index counting instances in
    /// file order), in rt-app's thread order.
    pub log_names: Vec<String>,
    /// The shortest timer period of the file (µs), if it has a timer.
    pub min_period_us: Option<u64>,
}

/// The installed rt-app: the first `rt-app` on PATH that is an executable file.
pub fn find_binary() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("rt-app"))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

fn bad<T>(s: String) -> Result<T, RtAppError> {
    Err(RtAppError(s))
}

/// Read the file as rt-app will and check what rtscope must rely on: JSON as json-c reads it,
/// no repeated key, bounded nesting, a `tasks` object of 1..=4096 threads, a sane duration.
/// The rest is rt-app's to judge (its own error is shown if it refuses the file).
pub fn prepare(
    text: &str,
    source: &Path,
    binary: PathBuf,
    duration_s: Option<f64>,
) -> Result<(RtAppJob, Vec<String>), RtAppError> {
    let json = strip_json_extensions(text)?;
    scan_structure(&json)?;
    let mut tree: Node =
        serde_json::from_str(&json).map_err(|e| RtAppError(format!("not JSON: {e}")))?;
    let Some(Node::Obj(tasks)) = tree.get("tasks") else {
        return bad("tasks: missing or not an object (accepted: 1..=4096 threads)".into());
    };
    let mut threads = 0u64;
    let mut log_names = Vec::new();
    for (name, t) in tasks {
        let n = match t.get("instance") {
            None => 1,
            Some(Node::Leaf(v)) => v.as_i64().unwrap_or(-1),
            Some(_) => -1,
        };
        if !(1..=MAX_THREADS as i64).contains(&n) {
            return bad(format!(
                "tasks.{name}.instance: must be 1..={MAX_THREADS}, got {}",
                match t.get("instance") {
                    Some(Node::Leaf(v)) => v.to_string(),
                    _ => "a non-integer".into(),
                }
            ));
        }
        for _ in 0..n {
            if log_names.len() < MAX_THREADS as usize {
                log_names.push(format!("{name}-{}", log_names.len()));
            }
        }
        threads += n as u64;
    }
    let min_period_us = min_timer_period(tasks_node(&tree));
    if !(1..=MAX_THREADS).contains(&threads) {
        return bad(format!(
            "tasks: {threads} threads with their instances; accepted 1..={MAX_THREADS}"
        ));
    }
    if !matches!(tree.get("global"), None | Some(Node::Obj(_))) {
        return bad("global: expected an object".into());
    }
    if tree.get("global").is_none() {
        tree.set("global", Node::Obj(Vec::new()));
    }
    let file_duration = match tree.get("global").and_then(|g| g.get("duration")) {
        None => None,
        Some(Node::Leaf(v)) => match v.as_i64() {
            Some(d) if d <= 0 => None,
            Some(d) if d <= 600 => Some(d as f64),
            _ => {
                return bad(format!(
                    "global.duration: -1 (until the threads end) or 1..=600 s, got {v}"
                ))
            }
        },
        Some(_) => return bad("global.duration: expected an integer (seconds)".into()),
    };
    let mut notes = vec![
        "rt-app runs the file; its logs go to a private directory (global.logdir and log_basename replaced, log_size removed) and are read line by line into the record".to_string(),
    ];
    match tree.get("global").and_then(|g| g.get("log_size")) {
        None => {}
        Some(Node::Leaf(v)) => notes.push(format!(
            "global.log_size {v} removed: rt-app's default writes each loop's line as it goes, which rtscope reads at once (rt-app 1.0 reads \"file\" and \"auto\" as no log)"
        )),
        Some(_) => return bad("global.log_size: expected \"file\", \"auto\", \"disable\" or an integer (MB)".into()),
    }
    let limit_s = duration_s.or(file_duration);
    if let Some(d) = duration_s {
        // rt-app's duration is whole seconds: it ends on its own at the next one, rtscope stops
        // it at -D.
        let secs = d.ceil().max(1.0) as i64;
        if let Some(g) = tree_global(&mut tree) {
            g.set("duration", Node::Leaf(secs.into()));
        }
        notes.push(format!(
            "-D {d} s: rt-app is stopped then (global.duration set to {secs} s)"
        ));
    }
    let limit_ns = limit_s.map_or(MAX_RUN_NS, |s| (s * 1e9) as u64);
    Ok((
        RtAppJob {
            binary,
            source: source.to_path_buf(),
            tree,
            threads,
            limit_ns,
            log_names,
            min_period_us,
        },
        notes,
    ))
}

fn tasks_node(tree: &Node) -> Option<&Node> {
    tree.get("tasks")
}

/// The smallest `period` of any `timer` object under `n` (rt-app's timer events, any phase).
fn min_timer_period(n: Option<&Node>) -> Option<u64> {
    fn walk(n: &Node, under_timer: bool, best: &mut Option<u64>) {
        match n {
            Node::Obj(v) => {
                for (k, c) in v {
                    if under_timer && k == "period" {
                        if let Node::Leaf(x) = c {
                            if let Some(p) = x.as_u64().filter(|&p| p > 0) {
                                *best = Some(best.map_or(p, |b| b.min(p)));
                            }
                        }
                    }
                    walk(c, k.starts_with("timer"), best);
                }
            }
            Node::Arr(v) => v.iter().for_each(|c| walk(c, false, best)),
            Node::Leaf(_) => {}
        }
    }
    let mut best = None;
    if let Some(n) = n {
        walk(n, false, &mut best);
    }
    best
}

fn tree_global(tree: &mut Node) -> Option<&mut Node> {
    match tree {
        Node::Obj(v) => v.iter_mut().find(|(k, _)| k == "global").map(|(_, n)| n),
        _ => None,
    }
}

/// rt-app ran and ended: its view, how long it ran, and what it printed.
#[derive(Debug)]
pub struct RtAppOutcome {
    pub view: RtAppView,
    pub window_ns: u64,
    pub interrupted: bool,
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// rt-app refused the file or failed: its own words (exit code 1 for the CLI).
    #[error("rt-app failed ({status}): {message}")]
    Failed { status: String, message: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> EngineError {
    let what = what.into();
    move |source| EngineError::Io { what, source }
}

/// rt-app's threads once they exist: (tid, name) of every task of its process but the main one.
/// The seam for the kernel's view: `run`'s observer gets these as soon as rt-app
/// has created them, so a watcher (the `watch` machinery) can follow those tids from the kernel.
pub fn threads_of(pid: u32) -> Vec<(i32, String)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out: Vec<(i32, String)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&tid| tid != pid as i32)
        .map(|tid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .map(|s| s.trim_end().to_string())
                .unwrap_or_default();
            (tid, comm)
        })
        .collect();
    out.sort();
    out
}

/// A private directory for rt-app's file and logs, removed on drop.
struct Private(PathBuf);

impl Private {
    fn create() -> Result<Private, EngineError> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        for i in 0..100u32 {
            let p = base.join(format!(
                "rtscope-rtapp-{}-{}-{i}",
                std::process::id(),
                rtscope_sys::clock::monotonic_ns() % 1_000_000_007
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => return Ok(Private(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(format!("creating {}", p.display()))(e)),
            }
        }
        Err(EngineError::Io {
            what: "creating a private directory for rt-app".into(),
            source: std::io::Error::other("no free name"),
        })
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Each thread's log streamed through a pty (see the module's comment), keyed by its name.
struct Streams(Vec<(String, rtscope_sys::pty::Pty, Vec<u8>)>);

impl Streams {
    /// A pty per expected log, its path linked where rt-app will open the log; a name that
    /// cannot have one (no pty left, a name rt-app would put elsewhere) is left to a file.
    fn open(dir: &Path, names: &[String]) -> (Streams, Option<String>) {
        let mut v = Vec::new();
        if names.len() > MAX_STREAMED {
            return (
                Streams(v),
                Some(format!(
                    "{} threads: their logs are files (streamed up to {MAX_STREAMED}), written by rt-app in blocks; a kill at a stop loses each log's unwritten tail",
                    names.len()
                )),
            );
        }
        for n in names {
            if n.contains('/') {
                continue;
            }
            let pty = match rtscope_sys::pty::open_raw() {
                Ok(p) => p,
                Err(e) => {
                    return (
                        Streams(v),
                        Some(format!(
                            "no pty for the log of {n} ({e}): it and the following are files, written by rt-app in blocks; a kill at a stop loses each one's unwritten tail"
                        )),
                    )
                }
            };
            let link = dir.join(format!("rtscope-{n}.log"));
            if std::os::unix::fs::symlink(pty.path(), &link).is_ok() {
                v.push((n.clone(), pty, Vec::new()));
            }
        }
        (Streams(v), None)
    }

    fn drain(&mut self) {
        for (_, p, buf) in &mut self.0 {
            let _ = p.drain(buf);
        }
    }

    /// rt-app has ended: close our side and read what is left.
    fn finish(&mut self) {
        for (_, p, buf) in &mut self.0 {
            p.close_slave();
            for _ in 0..64 {
                if !matches!(p.drain(buf), Ok(false)) {
                    break;
                }
            }
        }
    }

    fn all(&self, names: usize) -> bool {
        self.0.len() == names
    }
}

/// Run rt-app on the job's file; `obs` sees rt-app's pid, then its threads once they exist
/// (the seam for the kernel's view). Returns when rt-app has ended and its logs are read.
pub fn run(job: &RtAppJob, obs: &mut dyn Observer) -> Result<RtAppOutcome, EngineError> {
    let dir = Private::create()?;
    let mut tree = job.tree.clone();
    if let Some(g) = tree_global(&mut tree) {
        g.set(
            "logdir",
            Node::Leaf(dir.0.to_string_lossy().into_owned().into()),
        );
        g.set("log_basename", Node::Leaf("rtscope".into()));
        // rt-app's default (no log_size) writes each loop's line to the log file as it goes,
        // which the streamed ptys pass on at once; rt-app 1.0 reads "file" and "auto" as no
        // log at all (only the headers), an integer keeps the log in memory to the end.
        g.remove("log_size");
    }
    let mut warnings = Vec::new();
    let (mut streams, why_not) = Streams::open(&dir.0, &job.log_names);
    warnings.extend(why_not);
    let streamed = streams.all(job.log_names.len());
    let file = dir.0.join("workload.json");
    let text = serde_json::to_string_pretty(&tree).map_err(|e| EngineError::Io {
        what: "writing rt-app's file".into(),
        source: std::io::Error::other(e),
    })?;
    std::fs::write(&file, text).map_err(io(format!("writing {}", file.display())))?;
    let out = dir.0.join("rt-app.out");
    let out_f = std::fs::File::create(&out).map_err(io(format!("creating {}", out.display())))?;
    let err_f = out_f
        .try_clone()
        .map_err(io(format!("opening {}", out.display())))?;
    let mut cmd = std::process::Command::new(&job.binary);
    cmd.arg(&file)
        .current_dir(&dir.0)
        .stdin(std::process::Stdio::null())
        .stdout(out_f)
        .stderr(err_f);
    // SAFETY: prctl is async-signal-safe; rt-app dies with rtscope even if it is SIGKILLed.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            // Its own process group: a terminal's Ctrl-C reaches rtscope, which stops rt-app.
            rtscope_sys::process::set_own_group();
            rtscope_sys::process::set_parent_death_signal(rtscope_sys::Signal::SIGKILL)
        });
    }
    // With every log streamed, a stop or the end waits for rt-app one period at most.
    let stream_grace = job
        .min_period_us
        .map_or(STREAM_GRACE_NS, |p| p.saturating_mul(1000))
        .clamp(STREAM_GRACE_MIN_NS, STREAM_GRACE_NS);
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(io(format!("starting {}", job.binary.display())))?;
    let pid = child.id();
    obs.spawned(pid);
    let mut seen_threads = false;
    let mut term_at: Option<(Instant, u64)> = None;
    let mut interrupted = false;
    let mut killed_after: Option<u128> = None;
    let limit = Duration::from_nanos(job.limit_ns);
    let status = loop {
        streams.drain();
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => return Err(io("waiting for rt-app")(e)),
        }
        if !seen_threads {
            let t = threads_of(pid);
            if t.len() as u64 >= job.threads {
                seen_threads = true;
                obs.threads(pid, &t);
            }
        }
        match term_at {
            None => {
                let stop = signals::stop_requested();
                if stop || t0.elapsed() >= limit {
                    interrupted |= stop;
                    let _ = rtscope_sys::process::kill(pid as i32, rtscope_sys::Signal::SIGTERM);
                    let grace = match (streamed, stop) {
                        (true, _) => stream_grace,
                        (false, true) => TERM_GRACE_NS,
                        (false, false) => END_GRACE_NS,
                    };
                    term_at = Some((Instant::now(), grace));
                }
            }
            Some((t, grace))
                if t.elapsed() >= Duration::from_nanos(grace)
                    || (grace > TERM_GRACE_NS
                        && signals::stop_requested()
                        && t.elapsed() >= Duration::from_nanos(TERM_GRACE_NS)) =>
            {
                let _ = child.kill();
                killed_after = Some(t.elapsed().as_millis());
                if !streamed {
                    warnings.push(format!(
                        "rt-app had not ended {} ms after SIGTERM (its threads stop at their next timer expiry or the end of a run event): killed; the logs it had not written out (block-buffered files) are lost",
                        t.elapsed().as_millis()
                    ));
                }
                let s = child.wait().map_err(io("waiting for rt-app"))?;
                break s;
            }
            Some(_) => {}
        }
        obs.tick();
        std::thread::sleep(Duration::from_millis(2));
    };
    obs.tick();
    let window_ns = t0.elapsed().as_nanos() as u64;
    streams.finish();
    let printed = std::fs::read_to_string(&out).unwrap_or_default();
    // A pty rt-app never wrote to (not even the policy header a thread writes first): a thread
    // that never started, or a log rt-app named otherwise (then a file, read below).
    let mut threads: Vec<RtAppThread> = streams
        .0
        .iter()
        .filter(|(_, _, buf)| !buf.is_empty())
        .map(|(n, _, buf)| parse_log(n, &String::from_utf8_lossy(buf)))
        .collect();
    threads.extend(read_logs(&dir.0)?);
    threads.sort_by(|a, b| a.name.cmp(&b.name));
    let ended = match (status.code(), status.signal_name(), killed_after) {
        (Some(c), _, _) => format!("exited {c}"),
        (None, Some(s), Some(ms)) => format!(
            "killed by {s} {ms} ms after SIGTERM (a thread was inside an event longer than that)"
        ),
        (None, Some(s), None) => format!("killed by {s}"),
        (None, None, _) => "ended".into(),
    };
    if !status.success() && term_at.is_none() {
        let message: Vec<&str> = printed
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter(|l| !l.contains("<notice>"))
            .collect();
        let tail = message[message.len().saturating_sub(3)..].join(" / ");
        return Err(EngineError::Failed {
            status: ended,
            message: if tail.is_empty() {
                "no message".into()
            } else {
                tail
            },
        });
    }
    Ok(RtAppOutcome {
        view: RtAppView {
            binary: job.binary.display().to_string(),
            ended,
            pid,
            logs: if streamed {
                "streamed".into()
            } else {
                "files".into()
            },
            threads,
            kernel: None,
            agreement: Vec::new(),
        },
        window_ns,
        interrupted,
        warnings,
    })
}

trait SignalName {
    fn signal_name(&self) -> Option<String>;
}

impl SignalName for std::process::ExitStatus {
    fn signal_name(&self) -> Option<String> {
        use std::os::unix::process::ExitStatusExt;
        self.signal().map(|s| match s {
            9 => "SIGKILL".to_string(),
            15 => "SIGTERM".to_string(),
            n => format!("signal {n}"),
        })
    }
}

/// Every `rtscope-*.log` of `dir` that is a regular file (not a streamed pty link), parsed.
fn read_logs(dir: &Path) -> Result<Vec<RtAppThread>, EngineError> {
    let mut names =
        rtscope_files::regular_files(dir, |n| n.starts_with("rtscope-") && n.ends_with(".log"))
            .map_err(io(format!("reading {}", dir.display())))?;
    names.sort();
    let mut out = Vec::with_capacity(names.len());
    for p in names {
        let text = rtscope_files::read_bounded(&p, 1 << 30, "an rt-app log")
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| EngineError::Io {
                what: format!("reading {}", p.display()),
                source: std::io::Error::other(e.to_string()),
            })?;
        let name = p
            .file_stem()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("rtscope-"))
            .unwrap_or_default()
            .to_string();
        out.push(parse_log(&name, &text));
    }
    Ok(out)
}

/// One rt-app thread log: `# Policy : …`, a `#idx perf run period start end rel_st slack
/// c_duration c_period wu_lat` header, then one line per loop. rt-app 1.0 prints a negative
/// wake-up latency as an unsigned 64-bit number: read back as signed. Lines that do not parse
/// (a log cut by a kill) are skipped.
pub fn parse_log(name: &str, text: &str) -> RtAppThread {
    let mut policy = String::new();
    let mut cols: Vec<String> = Vec::new();
    let mut t = RtAppThread {
        name: name.to_string(),
        policy: String::new(),
        jobs: 0,
        c_duration_us: 0,
        c_period_us: 0,
        mean_run_us: 0.0,
        mean_period_us: 0.0,
        min_slack_us: 0,
        mean_slack_us: 0.0,
        negative_slack_jobs: 0,
        mean_wu_lat_us: 0.0,
        max_wu_lat_us: 0,
    };
    let (mut run, mut period, mut wu, mut sl) = (0f64, 0f64, 0f64, 0f64);
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("# Policy :") {
            policy = p.trim().to_string();
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            cols = h.split_whitespace().map(str::to_string).collect();
            continue;
        }
        let vals: Vec<i64> = match line
            .split_whitespace()
            .map(|v| {
                v.parse::<i64>()
                    .or_else(|_| v.parse::<u64>().map(|u| u as i64))
            })
            .collect::<Result<Vec<i64>, _>>()
        {
            Ok(v) if v.len() == cols.len() && !v.is_empty() => v,
            _ => continue,
        };
        let col = |n: &str| cols.iter().position(|c| c == n).map(|i| vals[i]);
        let slack = col("slack").unwrap_or(0);
        let wl = col("wu_lat").unwrap_or(0);
        if t.jobs == 0 {
            t.c_duration_us = col("c_duration").unwrap_or(0).max(0) as u64;
            t.c_period_us = col("c_period").unwrap_or(0).max(0) as u64;
            t.min_slack_us = slack;
            t.max_wu_lat_us = wl;
        }
        t.jobs += 1;
        run += col("run").unwrap_or(0) as f64;
        period += col("period").unwrap_or(0) as f64;
        wu += wl as f64;
        sl += slack as f64;
        t.min_slack_us = t.min_slack_us.min(slack);
        t.max_wu_lat_us = t.max_wu_lat_us.max(wl);
        if slack < 0 {
            t.negative_slack_jobs += 1;
        }
    }
    if t.jobs > 0 {
        let n = t.jobs as f64;
        t.mean_run_us = run / n;
        t.mean_period_us = period / n;
        t.mean_wu_lat_us = wu / n;
        t.mean_slack_us = sl / n;
    }
    t.policy = policy;
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head of a log written by rt-app 1.0 (two threads sharing one 100-ms timer).
    const LOG: &str = "# Policy : SCHED_OTHER priority : 0
#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat
   0   100000     2044    99768     11913228161     11913327929            3962      97537      10000     100000 18446744073709451785
   0   100000     2026   199945     11913327949     11913527894          103750     -1000      10000     100000 120
   0   100000     20";

    #[test]
    fn rt_apps_log_is_read_by_its_columns() {
        let t = parse_log("a-0", LOG);
        assert_eq!(t.jobs, 2, "the cut line is skipped");
        assert_eq!(t.policy, "SCHED_OTHER priority : 0");
        assert_eq!((t.c_duration_us, t.c_period_us), (10_000, 100_000));
        assert_eq!(t.mean_run_us, 2035.0);
        assert_eq!(t.mean_period_us, (99_768.0 + 199_945.0) / 2.0);
        assert_eq!((t.min_slack_us, t.negative_slack_jobs), (-1000, 1));
        // 18446744073709451785 is -99831 printed unsigned.
        assert_eq!(t.max_wu_lat_us, 120);
        assert_eq!(t.mean_wu_lat_us, (-99_831.0 + 120.0) / 2.0);
    }

    #[test]
    fn the_file_keeps_its_order_and_gets_a_private_log_and_duration() {
        let text = r#"{ /* c */ "tasks": {"b": {"sleep": 5, "run": 7, "timer": {"ref": "t", "period": 10}},
            "a": {"instance": 3, "run": 1, "timer": {"ref": "t", "period": 10}}},
            "global": {"duration": 5, "logdir": "./"}}"#;
        let (j, notes) = prepare(text, Path::new("f.json"), "rt-app".into(), Some(1.5)).unwrap();
        assert_eq!(j.threads, 4);
        assert_eq!(j.limit_ns, 1_500_000_000);
        // rt-app's log names: the key and a thread index counting instances in file order.
        assert_eq!(j.log_names, ["b-0", "a-1", "a-2", "a-3"]);
        assert_eq!(j.min_period_us, Some(10));
        assert!(notes
            .iter()
            .any(|n| n.contains("global.duration set to 2 s")));
        let out = serde_json::to_string(&j.tree).unwrap();
        assert!(
            out.starts_with(r#"{"tasks":{"b":{"sleep":5,"run":7,"#),
            "{out}"
        );
        assert!(
            out.contains(r#""global":{"duration":2,"logdir":"./"}"#),
            "{out}"
        );
        let (_, notes) = prepare(
            r#"{"tasks": {"a": {"run": 1, "timer0": {"ref": "t", "period": 7}}},
                "global": {"log_size": "file"}}"#,
            Path::new("f.json"),
            "rt-app".into(),
            None,
        )
        .unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("global.log_size \"file\" removed")),
            "{notes:?}"
        );
        let bad = |t: &str| {
            prepare(t, Path::new("f"), "rt-app".into(), None)
                .unwrap_err()
                .0
        };
        assert_eq!(
            bad(r#"{"tasks": {"a": {"instance": 5000}}}"#),
            "tasks.a.instance: must be 1..=4096, got 5000"
        );
        assert_eq!(
            bad(r#"{"tasks": {"a": {"instance": 4000}, "b": {"instance": 97}}}"#),
            "tasks: 4097 threads with their instances; accepted 1..=4096"
        );
        assert!(bad(r#"{"tasks": {"a": {"run": 1"#).starts_with("not JSON: EOF"));
        assert!(bad(r#"{"global": {}}"#).starts_with("tasks: missing"));
    }
}
