//! Campaigns drained by several workers from one PostgreSQL (RTSCOPE_TEST_PG_URL; CI starts one
//! on 127.0.0.1 with scripts/ci-postgres.sh). Three workers, each a "machine" of its own: a
//! network namespace joined to the root one by a veth pair, reaching PostgreSQL only through a
//! relay on the root side of its link, and a UTS namespace (its own host name); one SIGKILLed
//! mid-cell; every cell ends with exactly one completed run, nothing lost, nothing duplicated. A
//! database lost while a cell runs: the run is kept locally and stored once the database is back.
//! A worker with another file under the same campaign name is refused.

use rtscope_testkit::{need_root, tmp};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

fn pg_url() -> Option<String> {
    match std::env::var("RTSCOPE_TEST_PG_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            rtscope_testkit::skipped(
                "needs PostgreSQL: RTSCOPE_TEST_PG_URL is unset (scripts/test.sh starts one)",
            );
            None
        }
    }
}

fn campaign_file(dir: &Path, name: &str, duration: &str, repetitions: u32) -> std::path::PathBuf {
    let p = dir.join(format!("{name}-{duration}.toml"));
    std::fs::write(
        &p,
        format!(
            "name = \"{name}\"\npolicies = [\"fifo\"]\nloads = [\"idle\"]\nintervals_us = [1000]\ndurations = [\"{duration}\"]\nrepetitions = {repetitions}\nextra_args = [\"--cpus\", \"0\"]\n"
        ),
    )
    .unwrap();
    p
}

/// The host:port part of a PostgreSQL URL (`postgres://user[:pw]@host:port/db`) and where it
/// points.
fn pg_host_port(url: &str) -> (String, SocketAddr) {
    let rest = url.split_once("://").expect("a postgres:// URL").1;
    let authority = rest.split(['/', '?']).next().unwrap();
    let hp = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let with_port = if hp
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        hp.to_string()
    } else {
        format!("{hp}:5432")
    };
    let addr = with_port
        .to_socket_addrs()
        .expect("the test database's address")
        .next()
        .unwrap();
    (hp.to_string(), addr)
}

/// `url` pointing at `to` instead of its server (same user, password and database).
fn url_via(url: &str, to: SocketAddr) -> String {
    let (hp, _) = pg_host_port(url);
    let (scheme, rest) = url.split_once("://").unwrap();
    let authority = rest.split(['/', '?']).next().unwrap();
    let new_auth = format!("{}{to}", &authority[..authority.len() - hp.len()]);
    format!("{scheme}://{new_auth}{}", &rest[authority.len()..])
}

/// A TCP relay to PostgreSQL that a test can cut (the listener closed, so new connections are
/// refused, and every relayed connection shut down: the database is gone) and resume (the same
/// port listens again). It notes every client's address.
struct Relay {
    addr: SocketAddr,
    target: SocketAddr,
    shared: Arc<RelayShared>,
    accepting: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

#[derive(Default)]
struct RelayShared {
    /// Open relayed connections (client side, server side) by number.
    open: Mutex<BTreeMap<usize, (TcpStream, TcpStream)>>,
    next: AtomicUsize,
    peers: Mutex<Vec<SocketAddr>>,
}

impl Relay {
    fn start(ip: IpAddr, target: SocketAddr) -> Relay {
        let l = TcpListener::bind((ip, 0)).expect("relay: bind");
        let mut r = Relay {
            addr: l.local_addr().unwrap(),
            target,
            shared: Default::default(),
            accepting: None,
        };
        r.listen(l);
        r
    }

    fn listen(&mut self, l: TcpListener) {
        l.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (stop2, shared, target) = (stop.clone(), self.shared.clone(), self.target);
        // The listener lives in (and is closed with) this thread.
        let h = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((c, peer)) => relay_one(c, peer, target, &shared),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        self.accepting = Some((stop, h));
    }

    fn cut(&mut self) {
        if let Some((stop, h)) = self.accepting.take() {
            stop.store(true, Ordering::SeqCst);
            h.join().unwrap();
        }
        for (c, up) in self.shared.open.lock().unwrap().values() {
            let _ = c.shutdown(Shutdown::Both);
            let _ = up.shutdown(Shutdown::Both);
        }
    }

    fn resume(&mut self) {
        let t0 = Instant::now();
        let l = loop {
            match TcpListener::bind(self.addr) {
                Ok(l) => break l,
                // The port may still be held by a closing socket for a moment.
                Err(_) if t0.elapsed() < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                Err(e) => panic!("relay: binding {} again: {e}", self.addr),
            }
        };
        self.listen(l);
    }

    fn peers(&self) -> Vec<SocketAddr> {
        self.shared.peers.lock().unwrap().clone()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut();
    }
}

fn relay_one(c: TcpStream, peer: SocketAddr, target: SocketAddr, shared: &Arc<RelayShared>) {
    let _ = c.set_nonblocking(false);
    let Ok(up) = TcpStream::connect(target) else {
        return;
    };
    shared.peers.lock().unwrap().push(peer);
    let n = shared.next.fetch_add(1, Ordering::SeqCst);
    shared
        .open
        .lock()
        .unwrap()
        .insert(n, (c.try_clone().unwrap(), up.try_clone().unwrap()));
    // Two pumps; the second to end forgets the connection.
    let left = Arc::new(AtomicUsize::new(2));
    for (mut from, mut to) in [(c.try_clone().unwrap(), up.try_clone().unwrap()), (up, c)] {
        let (left, shared) = (left.clone(), shared.clone());
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Write);
            if left.fetch_sub(1, Ordering::SeqCst) == 1 {
                shared.open.lock().unwrap().remove(&n);
            }
        });
    }
}

/// A worker's stderr, read as it comes.
struct Stderr {
    lines: mpsc::Receiver<String>,
    all: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
}

impl Stderr {
    fn read(from: impl Read + Send + 'static) -> Stderr {
        let (tx, lines) = mpsc::channel();
        let all = Arc::new(Mutex::new(String::new()));
        let all2 = all.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(from).lines() {
                let Ok(line) = line else { break };
                let mut a = all2.lock().unwrap();
                a.push_str(&line);
                a.push('\n');
                let _ = tx.send(line);
            }
        });
        Stderr {
            lines,
            all,
            reader: Some(reader),
        }
    }

    fn wait_for(&self, needle: &str, within: Duration) {
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return,
                Ok(_) => {}
                Err(_) => panic!(
                    "no '{needle}' within {within:?}:\n{}",
                    self.all.lock().unwrap()
                ),
            }
        }
    }

    /// Everything, once the process closed its stderr.
    fn finish(mut self) -> String {
        if let Some(r) = self.reader.take() {
            r.join().unwrap();
        }
        let s = self.all.lock().unwrap().clone();
        s
    }
}

/// The exit status of `c`, killed (and the test failed) when it takes longer than `limit`.
fn wait_at_most(c: &mut Child, limit: Duration) -> ExitStatus {
    let end = Instant::now() + limit;
    loop {
        if let Some(st) = c.try_wait().unwrap() {
            return st;
        }
        if Instant::now() > end {
            let _ = c.kill();
            let _ = c.wait();
            panic!("the worker did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Worker processes, killed if the test ends before they do (a failed assertion): none is left
/// retrying a relay that is gone.
struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("ip");
    assert!(
        o.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A network namespace and the veth pair joining it to the root namespace; both are deleted
/// when this is dropped, on every exit path of the test (a panic included).
struct Netns {
    name: String,
    /// The root side of the veth pair (deleting it deletes its peer).
    veth: String,
}

impl Drop for Netns {
    fn drop(&mut self) {
        let quiet = |args: &[&str]| {
            let _ = Command::new("ip")
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        };
        quiet(&["link", "del", &self.veth]);
        quiet(&["netns", "del", &self.name]);
    }
}

/// A worker's "machine": its own network namespace, joined by a veth pair (`10.251.X.4n+1/30`
/// on the root side, `.4n+2` inside), from which PostgreSQL (listening on the root namespace's
/// loopback only) is reached through a relay on the root side of the link.
struct Machine {
    host: String,
    inside: IpAddr,
    url: String,
    relay: Relay,
    // Dropped after the relay: the namespace goes last.
    netns: Netns,
}

impl Machine {
    fn new(n: u8, pg_url: &str) -> Machine {
        let pid = std::process::id();
        let host = format!("w{n}");
        let netns = Netns {
            name: format!("rtscope-{pid}-{host}"),
            // IFNAMSIZ: at most 15 characters.
            veth: format!("rt{}{host}r", pid % 10_000_000),
        };
        let peer = format!("rt{}{host}n", pid % 10_000_000);
        // Leftovers of a killed run with the same pid.
        drop(Netns {
            name: netns.name.clone(),
            veth: netns.veth.clone(),
        });
        // A /24 of its own per test process, a /30 per machine.
        let net = format!("10.251.{}", pid % 256);
        let (root_ip, inside) = (
            format!("{net}.{}", 4 * n + 1),
            format!("{net}.{}", 4 * n + 2),
        );
        ip(&["netns", "add", &netns.name]);
        ip(&[
            "link",
            "add",
            &netns.veth,
            "type",
            "veth",
            "peer",
            "name",
            &peer,
            "netns",
            &netns.name,
        ]);
        ip(&["addr", "add", &format!("{root_ip}/30"), "dev", &netns.veth]);
        ip(&["link", "set", &netns.veth, "up"]);
        let ns = netns.name.as_str();
        ip(&[
            "-n",
            ns,
            "addr",
            "add",
            &format!("{inside}/30"),
            "dev",
            &peer,
        ]);
        ip(&["-n", ns, "link", "set", &peer, "up"]);
        ip(&["-n", ns, "link", "set", "lo", "up"]);
        let (_, pg) = pg_host_port(pg_url);
        let relay = Relay::start(root_ip.parse().unwrap(), pg);
        Machine {
            url: url_via(pg_url, relay.addr),
            host,
            inside: inside.parse().unwrap(),
            relay,
            netns,
        }
    }

    /// `rtscope ARGS` inside this machine's network namespace, in a UTS namespace of its own
    /// named after the machine.
    fn rtscope(&self, args: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args([
            "netns",
            "exec",
            &self.netns.name,
            "unshare",
            "--uts",
            "sh",
            "-c",
        ])
        .arg(format!("hostname {} && exec \"$0\" {args}", self.host))
        .arg(rtscope_testkit::bin!());
        cmd
    }

    /// A worker of the campaign in `file`.
    fn worker(&self, file: &Path, data: &Path) -> Child {
        self.rtscope("campaign \"$1\" --db \"$2\" --lease 5s")
            .arg(file)
            .arg(&self.url)
            .env("XDG_DATA_HOME", data)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("worker")
    }
}

fn runs(url: &str, name: &str) -> Vec<serde_json::Value> {
    let o = Command::new(rtscope_testkit::bin!())
        .args([
            "runs",
            "--db",
            url,
            "--tag",
            &format!("campaign={name}"),
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice::<serde_json::Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn three_workers_one_killed_every_cell_once() {
    need_root!("SCHED_FIFO measurement, network and UTS namespaces");
    let Some(url) = pg_url() else { return };
    let d = tmp();
    let name = format!("q{:08x}", rand_suffix());
    let cells = 6;
    let file = campaign_file(d.path(), &name, "2s", cells);
    let machines: Vec<Machine> = (1..=3).map(|n| Machine::new(n, &url)).collect();
    // Inside a machine, PostgreSQL's own address is another namespace's loopback: nothing there
    // reaches it but through the relay.
    let o = machines[0]
        .rtscope("runs --db \"$1\" --limit 1")
        .arg(&url)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("cannot reach PostgreSQL"),
        "{err}"
    );
    let t0 = Instant::now();
    let mut ws = Workers(machines.iter().map(|m| m.worker(&file, d.path())).collect());
    // w1 dies 1 s into its first cell: its in-process measurement dies with it and its
    // lease runs out 5 s later, when another worker takes the cell.
    let w1 = Stderr::read(ws.0[0].stderr.take().unwrap());
    w1.wait_for("(attempt 1)", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(1000));
    ws.0[0].kill().unwrap();
    let _ = ws.0[0].wait();
    let w1 = w1.finish();
    for w in &mut ws.0[1..] {
        let st = wait_at_most(w, Duration::from_secs(50));
        let mut err = String::new();
        let _ = w.stderr.take().unwrap().read_to_string(&mut err);
        assert!(st.success(), "worker: {st:?}\n{err}");
        assert!(
            err.contains("queue: 6 done, 0 failed, 0 todo, 0 running"),
            "{err}"
        );
    }
    let wall = t0.elapsed().as_secs_f64();
    let rs = runs(&url, &name);
    let mut completed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &rs {
        if r["state"] == "completed" {
            completed
                .entry(r["tags"]["cell"].as_str().unwrap().to_string())
                .or_default()
                .push(r["tags"]["host"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(completed.len(), cells as usize, "{completed:?}");
    for (cell, hosts) in &completed {
        assert_eq!(hosts.len(), 1, "{cell}: {hosts:?}");
        assert_ne!(
            hosts[0], "w1",
            "{cell}: the killed worker completed nothing"
        );
    }
    // Each run records its machine's view: the host tag, the recorded host name and the worker's
    // name agree (`runs --host` and `compare` tell workers, i.e. boards, apart).
    for r in rs.iter().filter(|r| r["state"] == "completed") {
        assert_eq!(r["tags"]["host"], r["hostname"]);
        let host = r["tags"]["host"].as_str().unwrap();
        assert!(
            r["tags"]["worker"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{host}:")),
            "{r}"
        );
    }
    // Every worker reached PostgreSQL through its own link only: each relay saw connections, all
    // from the inside address of its machine.
    for m in &machines {
        let peers = m.relay.peers();
        assert!(!peers.is_empty(), "{}: no connection", m.host);
        assert!(
            peers.iter().all(|p| p.ip() == m.inside),
            "{}: {peers:?}",
            m.host
        );
    }
    // The killed worker's cell: the worker measures in its own process, so SIGKILL leaves no
    // record of the unfinished attempt; the queue counts it (two attempts on that cell, one
    // on every other) and nothing of w1's is stored as completed.
    let o = Command::new("psql")
        .arg(&url)
        .args(["-tAc"])
        .arg(format!(
            "SELECT attempts FROM campaign_cells WHERE campaign = '{name}' ORDER BY cell"
        ))
        .output()
        .expect("psql");
    let attempts: Vec<u64> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(attempts.len(), cells as usize, "{attempts:?}\nw1: {w1}");
    assert_eq!(
        attempts.iter().filter(|&&a| a == 2).count(),
        1,
        "{attempts:?}\nw1: {w1}"
    );
    assert!(attempts.iter().all(|&a| a == 1 || a == 2), "{attempts:?}");
    // compare names the host of each run when they come from several.
    let by = |h: &str| {
        rs.iter()
            .find(|r| r["state"] == "completed" && r["hostname"] == h)
            .map(|r| r["id"].as_str().unwrap().to_string())
            .unwrap()
    };
    let o = Command::new(rtscope_testkit::bin!())
        .args(["compare", "--db", &url, &by("w2"), &by("w3")])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("w2 fifo/idle") && out.contains("w3 fifo/idle"),
        "{out}"
    );
    println!(
        "6 cells of 2 s, 3 workers in network namespaces (one killed 1 s into its first cell), lease 5 s: {wall:.1} s wall"
    );
}

/// Every file under `dir` (none when it does not exist).
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The database goes away while a cell runs and comes back 10 s later: the worker's
/// measurement ends meanwhile and keeps its record in the cell's own fallback directory; the
/// worker says so, retries with backoff, stores the record once the database is back (the cell
/// is not run again) and removes the file.
#[test]
fn a_lost_database_keeps_the_run_and_stores_it_when_back() {
    need_root!("SCHED_FIFO measurement");
    let Some(url) = pg_url() else { return };
    let d = tmp();
    let name = format!("q{:08x}", rand_suffix());
    let file = campaign_file(d.path(), &name, "5s", 2);
    let (_, pg) = pg_host_port(&url);
    let mut relay = Relay::start("127.0.0.1".parse().unwrap(), pg);
    // A password that must appear in no message (the test server trusts local connections and
    // never asks for it); a URL that has one already keeps its own.
    let mut db = url_via(&url, relay.addr);
    let secret = match db.split_once("://").unwrap().1.split_once('@') {
        Some((user, _)) if user.contains(':') => user.split_once(':').unwrap().1.to_string(),
        Some((user, _)) => {
            let secret = "never-printed-7f3a".to_string();
            db = db.replacen(&format!("{user}@"), &format!("{user}:{secret}@"), 1);
            secret
        }
        None => String::new(),
    };
    let spool = d.path().join("spool");
    let t0 = Instant::now();
    let mut w = Workers(vec![Command::new(rtscope_testkit::bin!())
        .arg("campaign")
        .arg(&file)
        .args(["--db", &db, "--lease", "60s"])
        .env("XDG_DATA_HOME", d.path())
        .env("RTSCOPE_FALLBACK_DIR", &spool)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()]);
    let err = Stderr::read(w.0[0].stderr.take().unwrap());
    err.wait_for("(attempt 1)", Duration::from_secs(20));
    std::thread::sleep(Duration::from_secs(1));
    relay.cut();
    std::thread::sleep(Duration::from_secs(10));
    relay.resume();
    let st = wait_at_most(&mut w.0[0], Duration::from_secs(40));
    let wall = t0.elapsed().as_secs_f64();
    let err = err.finish();
    drop(relay);
    assert!(st.success(), "{st:?}\n{err}");
    let cell_dir = spool.join("campaign").join(&name);
    assert!(
        err.lines().any(|l| l.contains("its record is kept in")
            && l.contains(&cell_dir.display().to_string())
            && l.ends_with("storing it when the database is back")),
        "{err}"
    );
    assert!(err.contains("the database is retried in"), "{err}");
    assert!(
        err.contains("the kept run") && err.contains("is stored"),
        "{err}"
    );
    assert!(
        err.contains("queue: 2 done, 0 failed, 0 todo, 0 running"),
        "{err}"
    );
    assert!(secret.is_empty() || !err.contains(&secret), "{err}");
    // Each cell once: the kept run was stored, the cell not run again.
    let rs = runs(&url, &name);
    let mut completed: BTreeMap<String, usize> = BTreeMap::new();
    for r in &rs {
        if r["state"] == "completed" {
            *completed
                .entry(r["tags"]["cell"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    assert_eq!(completed.len(), 2, "{rs:?}");
    assert!(completed.values().all(|&n| n == 1), "{completed:?}");
    assert_eq!(rs.len(), 2, "{rs:?}");
    assert_eq!(files_under(&spool), Vec::<std::path::PathBuf>::new());
    println!("2 cells of 5 s, the database away for 10 s during the first: {wall:.1} s wall");
}

#[test]
fn another_file_under_the_same_name_is_refused() {
    need_root!("SCHED_FIFO measurement");
    let Some(url) = pg_url() else { return };
    let d = tmp();
    let name = format!("q{:08x}", rand_suffix());
    let a = campaign_file(d.path(), &name, "1s", 1);
    let o = Command::new(rtscope_testkit::bin!())
        .args(["campaign", a.to_str().unwrap(), "--db", &url])
        .env("XDG_DATA_HOME", d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let b = campaign_file(d.path(), &name, "2s", 1);
    let o = Command::new(rtscope_testkit::bin!())
        .args(["campaign", b.to_str().unwrap(), "--db", &url])
        .env("XDG_DATA_HOME", d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.trim().starts_with(&format!(
            "rtscope: error: campaign '{name}' in the database was started from another file"
        )) && err.trim().lines().count() == 1,
        "{err}"
    );
    // The same file again: nothing left to run, nothing run twice.
    let o = Command::new(rtscope_testkit::bin!())
        .args(["campaign", a.to_str().unwrap(), "--db", &url])
        .env("XDG_DATA_HOME", d.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(runs(&url, &name).len(), 1);
}

/// A campaign name of its own for each test run (the database outlives the test).
fn rand_suffix() -> u32 {
    rand::random()
}

/// A worker logged in with only the role docs/fleet.md documents (rows of the tables, no DDL)
/// runs its cells: the schema was made by the administrator's connection before.
#[test]
fn a_worker_with_the_least_privilege_role_works() {
    need_root!("SCHED_FIFO measurement");
    let Some(url) = pg_url() else { return };
    let role = format!("rtscope_worker_{:08x}", rand_suffix());
    let psql = |sql: &str| {
        let o = Command::new("psql")
            .args([url.as_str(), "-v", "ON_ERROR_STOP=1", "-qc", sql])
            .output()
            .expect("psql");
        assert!(
            o.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    // The schema exists (an administrator's rtscope opened the database once).
    let o = Command::new(rtscope_testkit::bin!())
        .args(["runs", "--db", &url, "--limit", "1"])
        .output()
        .unwrap();
    assert!(o.status.success());
    psql(&format!(
        "CREATE ROLE {role} LOGIN;
         GRANT USAGE ON SCHEMA public TO {role};
         GRANT SELECT ON rtscope_meta TO {role};
         GRANT SELECT, INSERT, UPDATE, DELETE ON runs, run_tags TO {role};
         GRANT SELECT, INSERT, UPDATE ON campaigns, campaign_cells TO {role};"
    ));
    let worker_url = url.replacen("postgres@", &format!("{role}@"), 1);
    assert_ne!(worker_url, url, "the test URL names its user: {url}");
    let d = tmp();
    let name = format!("q{:08x}", rand_suffix());
    let f = campaign_file(d.path(), &name, "1s", 2);
    let o = Command::new(rtscope_testkit::bin!())
        .args(["campaign", f.to_str().unwrap(), "--db", &worker_url])
        .env("XDG_DATA_HOME", d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    psql(&format!("DROP OWNED BY {role}; DROP ROLE {role};"));
    assert!(o.status.success(), "{err}");
    assert!(err.contains("queue: 2 done"), "{err}");
    assert_eq!(runs(&url, &name).len(), 2);
}
