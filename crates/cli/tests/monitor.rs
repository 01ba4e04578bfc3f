//! `rtscope monitor` against the real Prometheus (Debian's `prometheus`, started here on
//! 127.0.0.1): what Prometheus scraped matches the monitor's own record; scrapers that send
//! nothing, garbage or a write never disturb the measurement; a port in use is bad input.

use rtscope_testkit::http::{exchange, free_port};
use rtscope_testkit::{need_root, tmp};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kill and reap a child when the test ends, passed or not.
struct Reap(Child);
impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One request to 127.0.0.1:port; the response's status line and body. The endpoint answers in
/// the request's HTTP version: the monitor's requests are HTTP/1.1.
fn http(port: u16, request: &str) -> (String, String) {
    let r = exchange(port, request.as_bytes(), Duration::from_secs(10));
    (r.status, r.body)
}

fn get(port: u16, path: &str) -> (String, String) {
    http(
        port,
        &format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"),
    )
}

/// Percent-encode a PromQL query for a URL.
fn enc(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus's instant query result: (labels, value) per series.
fn query(port: u16, q: &str) -> Vec<(serde_json::Value, f64)> {
    let (status, body) = get(port, &format!("/api/v1/query?query={}", enc(q)));
    assert!(status.contains("200"), "{q}: {status} {body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("Prometheus JSON");
    v["data"]["result"]
        .as_array()
        .expect("result")
        .iter()
        .map(|r| {
            (
                r["metric"].clone(),
                r["value"][1].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

fn prometheus_bin() -> String {
    let p = "/usr/bin/prometheus";
    assert!(
        Path::new(p).exists(),
        "{p} missing: scripts/setup.sh installs Debian's prometheus package"
    );
    p.into()
}

/// The real Prometheus on 127.0.0.1:`pport`, scraping the monitor on `mport` every second, its
/// configuration and storage under `dir`; killed when the guard drops.
fn prometheus(dir: &Path, mport: u16, pport: u16) -> Reap {
    let cfg = dir.join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: rtscope\n    static_configs:\n      - targets: ['127.0.0.1:{mport}']\n"
        ),
    )
    .unwrap();
    Reap(
        Command::new(prometheus_bin())
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus"),
    )
}

#[test]
fn prometheus_scrapes_what_the_record_holds() {
    need_root!("SCHED_FIFO measurement threads");
    let d = tmp();
    let (mport, pport) = (free_port(), free_port());
    let db = d.path().join("results.db");
    let rec = d.path().join("rec.json");
    let secs = 24.0;
    let monitor = Reap(
        Command::new(rtscope_testkit::bin!())
            .args(["monitor", "--listen", &format!("127.0.0.1:{mport}")])
            .args([
                "--window",
                "2s",
                "-D",
                &format!("{secs}s"),
                "-q",
                "--cpus",
                "0-1",
            ])
            .arg("--db")
            .arg(&db)
            .arg("--json")
            .arg(&rec)
            .env("XDG_DATA_HOME", d.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rtscope monitor"),
    );
    let _prom = prometheus(d.path(), mport, pport);
    let t0 = Instant::now();
    // The endpoint answers once the monitor runs.
    let body = loop {
        if let Ok(mut c) = TcpStream::connect(("127.0.0.1", mport)) {
            let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = c.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
            let mut s = String::new();
            let _ = c.read_to_string(&mut s);
            // Up, and the first samples drained.
            if s.starts_with("HTTP/1.1 200") && s.contains("rtscope_latency_seconds_bucket") {
                break s;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no metrics endpoint"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // Read-only, and nothing of the command line is exposed.
    assert!(!body.contains("--listen") && !body.contains("results.db"));
    assert_eq!(
        http(
            mport,
            "POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
        )
        .0,
        "HTTP/1.1 405 Method Not Allowed"
    );
    assert_eq!(
        http(mport, "\x16\x03\x01garbage\r\n\r\n").0,
        "HTTP/1.1 400 Bad Request"
    );
    assert_eq!(
        http(mport, "GET /admin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").0,
        "HTTP/1.1 404 Not Found"
    );
    // A scraper that connects and sends half a request, then holds the socket for 4 s.
    let mut slow = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    slow.write_all(b"GET /met").unwrap();
    std::thread::sleep(Duration::from_secs(4));
    drop(slow);

    let mut monitor = monitor;
    let status = monitor.0.wait().expect("monitor exit");
    let mut err = String::new();
    let _ = monitor.0.stderr.take().unwrap().read_to_string(&mut err);
    assert!(status.success(), "monitor: {status:?}\n{err}");
    let r = rtscope_testkit::read_json(&rec);
    let m = &r["kind"]["measurement"];
    let n = m["stats"]["samples"].as_u64().unwrap() as f64;
    // 2 CPUs at 1 kHz for 24 s; a host stall of the VM costs at most a few hundred samples.
    assert!(
        n > 0.9 * 2.0 * 1000.0 * secs,
        "{n} samples: the measurement stalled"
    );
    let rate = n / secs;
    // What Prometheus holds: the last value of each CPU's sample count it scraped.
    let scraped: f64 = query(pport, "max_over_time(rtscope_latency_seconds_count[2m])")
        .iter()
        .map(|(_, v)| v)
        .sum();
    // Within one scrape interval (1 s) of the record, plus the time the last scrape and the
    // record's end are apart (the final drain): 2 s of samples.
    assert!(
        scraped <= n && n - scraped <= 2.0 * rate,
        "Prometheus {scraped} vs record {n} ({rate:.0}/s)"
    );
    // Per bucket: samples at or below 100 µs, as Prometheus scraped them and as the record's
    // exact histogram counts them (HDR buckets are within 0.1 % of their value).
    let le = query(
        pport,
        "sum(max_over_time(rtscope_latency_seconds_bucket{le=\"0.0001\"}[2m]))",
    );
    let below: f64 = m["threads"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["histogram"]["buckets"].as_array().unwrap().clone())
        .filter(|b| b[0].as_u64().unwrap() <= 100_000)
        .map(|b| b[1].as_u64().unwrap() as f64)
        .sum();
    let got = le.first().map_or(0.0, |x| x.1);
    assert!(
        got <= below + 1.0 && below - got <= 2.0 * rate,
        "≤ 100 µs: Prometheus {got} vs record {below}"
    );
    println!(
        "record {n} samples, Prometheus {scraped} ({:.2} s of samples behind); at or below 100 us: record {below}, Prometheus {got}",
        (n - scraped) / rate
    );
    // Windows were published: 2 s windows over 24 s.
    let w = query(pport, "max_over_time(rtscope_windows_total[2m])");
    assert!(w.first().is_some_and(|x| x.1 >= 8.0), "{w:?}");
    // The slow scraper and the garbage cost the measurement nothing: no overrun beyond what
    // host stalls explain (a stall of 19 ms costs 19 periods on each CPU).
    let overruns = m["overruns"].as_u64().unwrap();
    assert!(overruns < 400, "{overruns} overruns");
    // The record went into the store every window.
    let o = Command::new(rtscope_testkit::bin!())
        .args(["runs", "--json", "-", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["verb"], "monitor");
    assert_eq!(runs[0]["state"], "completed");
}

/// The Grafana dashboard's queries, run by Prometheus itself against a scraped traced run: every
/// expression parses and evaluates, every metric it names is one the monitor serves, and the
/// panels that do not depend on tracing show data.
#[test]
fn the_dashboard_queries_what_the_monitor_serves() {
    need_root!("SCHED_FIFO measurement threads and the eBPF capture");
    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/grafana/rtscope-latency.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let exprs: Vec<String> = dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .collect();
    assert!(exprs.len() >= 10, "{exprs:?}");
    let d = tmp();
    let (mport, pport) = (free_port(), free_port());
    let _monitor = Reap(
        Command::new(rtscope_testkit::bin!())
            .args(["monitor", "--listen", &format!("127.0.0.1:{mport}")])
            .args(["--trace", "bpf", "--window", "2s", "-D", "30s", "-q"])
            .args(["--no-store"])
            .env("XDG_DATA_HOME", d.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("rtscope monitor"),
    );
    let _prom = prometheus(d.path(), mport, pport);
    // Enough scrapes for rate() and increase() (two points in every range) and a few windows.
    std::thread::sleep(Duration::from_secs(14));
    let (status, exposition) = get(mport, "/metrics");
    assert!(status.contains("200"), "{status}");
    let served: Vec<&str> = exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut empty = Vec::new();
    for e in &exprs {
        // The dashboard's template variables, as Grafana substitutes them.
        let q = e.replace("$cpu", ".*").replace("$__rate_interval", "1m");
        // Every rtscope_ metric the expression names is served (a family, or a family's
        // _bucket/_count/_sum/_total sample).
        for name in q
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("rtscope_"))
        {
            let family = ["_bucket", "_count", "_sum", "_total"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            // A labelled family is exposed once it has a series: the bound's once a
            // characterization converged, which takes longer than this run.
            let later = ["rtscope_bound_seconds"];
            assert!(
                served.contains(&name) || served.contains(&family) || later.contains(&name),
                "the dashboard queries {name}, which the monitor does not serve"
            );
        }
        // Prometheus parses and evaluates it (`query` asserts a 200 answer).
        if query(pport, &q).is_empty() {
            empty.push(e.clone());
        }
    }
    // What needs no cause or bound shows data after a few windows.
    for must in [
        "rtscope_latency_seconds_bucket",
        "rtscope_window_latency_max_seconds",
        "rtscope_observed_max_seconds",
        "rtscope_latency_seconds_count",
        "rtscope_info",
        "rtscope_overruns_total",
    ] {
        assert!(
            !empty.iter().any(|e| e.contains(must)),
            "no data for the panel on {must}: {empty:?}"
        );
    }
    println!(
        "{} dashboard queries evaluated; without data after 14 s: {empty:?}",
        exprs.len()
    );
}

#[test]
fn a_port_in_use_is_bad_input() {
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let d = tmp();
    let o = Command::new(rtscope_testkit::bin!())
        .args(["monitor", "--listen", &addr, "-D", "5s", "--no-store", "-q"])
        .args(["--policy", "other"])
        .env("XDG_DATA_HOME", d.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.trim(),
        format!("rtscope: error: --listen {addr}: the address is in use")
    );
}

/// The systemd unit's command line (deploy/rtscope-monitor.service) is one rtscope accepts and
/// runs: its ExecStart, on another port, for 3 s.
#[test]
fn the_unit_file_runs() {
    need_root!("SCHED_FIFO measurement threads");
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/rtscope-monitor.service"
    ))
    .expect("unit file");
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let mut argv: Vec<String> = exec.split_whitespace().map(String::from).collect();
    assert_eq!(argv[0], "/usr/local/bin/rtscope");
    assert_eq!(argv[1], "monitor");
    let port = free_port();
    let i = argv.iter().position(|a| a == "--listen").expect("--listen");
    assert!(argv[i + 1].starts_with("127.0.0.1:"), "loopback by default");
    argv[i + 1] = format!("127.0.0.1:{port}");
    let d = tmp();
    let o = Command::new(rtscope_testkit::bin!())
        .args(&argv[1..])
        .args(["-D", "3s", "-q"])
        .env("XDG_DATA_HOME", d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Stored where the unit's XDG_DATA_HOME points (here the test's directory).
    assert!(d.path().join("rtscope/results.db").exists());
    for key in [
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "StateDirectory=rtscope",
        "KillSignal=SIGTERM",
    ] {
        assert!(unit.lines().any(|l| l == key), "{key}");
    }
}

/// `--trace-burst`: the capture runs 1 s every 3 s. The endpoint counts the bursts as they end;
/// the record says the run was traced in bursts and explains only the samples inside them
/// (about a third of the run, less each burst's first moments), none outside.
#[test]
fn tracing_in_bursts_explains_only_what_a_burst_saw() {
    need_root!("SCHED_FIFO measurement and the eBPF capture");
    let d = tmp();
    let port = free_port();
    let json = d.path().join("m.json");
    let child = Command::new(rtscope_testkit::bin!())
        .args(["monitor", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--trace", "bpf", "--trace-burst", "1s/3s", "-D", "8s"])
        .args(["--window", "2s", "--no-store", "-q", "--json"])
        .arg(&json)
        .env("XDG_DATA_HOME", d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reap(child);
    // After the second burst began (3 s) the first one has ended and been counted.
    std::thread::sleep(Duration::from_millis(5000));
    let (status, body) = get(port, "/metrics");
    assert!(status.contains("200"), "{status}");
    let value = |name: &str| {
        body.lines()
            .find_map(|l| {
                l.strip_prefix(name)
                    .and_then(|v| v.trim().parse::<f64>().ok())
            })
            .unwrap_or_else(|| panic!("{name} not served:\n{body}"))
    };
    let bursts = value("rtscope_trace_bursts_total");
    assert!((1.0..=2.0).contains(&bursts), "{bursts}");
    let traced = value("rtscope_traced_seconds_total");
    assert!(traced >= 0.9 * bursts && traced <= 1.5 * bursts, "{traced}");
    let st = child.0.wait().unwrap();
    let mut err = String::new();
    let _ = child.0.stderr.take().unwrap().read_to_string(&mut err);
    assert!(st.success(), "{err}");
    let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let m = &rec["kind"]["measurement"];
    assert_eq!(
        m["config"]["trace_bursts"],
        serde_json::json!({"length_s": 1.0, "every_s": 3.0})
    );
    let notes = rec["hygiene"]["notes"].to_string();
    assert!(notes.contains("traced in bursts: 3 burst(s)"), "{notes}");
    let a = &m["attribution"];
    let explained =
        a["samples_attributed"].as_u64().unwrap() + a["samples_unattributed"].as_u64().unwrap();
    let total = m["stats"]["samples"].as_u64().unwrap();
    // Bursts at 0–1 s, 3–4 s and 6–7 s of an 8 s run: 3/8 of the samples at most.
    let share = explained as f64 / total as f64;
    assert!(share > 0.15 && share < 0.40, "{explained} of {total}");
}

#[test]
fn a_bad_burst_is_bad_input() {
    for (v, what) in [
        ("10s", "expected LENGTH/EVERY"),
        ("5s/5s", "EVERY 5s is not longer than LENGTH 5s"),
        ("0s/5s", "LENGTH 0s is out of range (1s ..= 1h)"),
        ("1s/2d", "EVERY 2d is out of range (1s ..= 1d)"),
    ] {
        let d = tmp();
        let o = Command::new(rtscope_testkit::bin!())
            .args([
                "monitor",
                "--trace-burst",
                v,
                "-D",
                "5s",
                "--no-store",
                "-q",
            ])
            .args(["--listen", "127.0.0.1:0", "--policy", "other"])
            .env("XDG_DATA_HOME", d.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{v}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.trim().lines().count() == 1
                && err.contains("'--trace-burst <LENGTH/EVERY>'")
                && err.contains(what),
            "{v}: {err}"
        );
    }
}
