//! The monitor's metrics endpoint (`rtscope_verbs::monitor::Server`) on 127.0.0.1 under the
//! requests a scraper, a confused client and an attacker send: malformed requests get their
//! status, a normal scraper is answered within 1 s while 200 clients trickle a byte every 1.5 s
//! and 200 more hold idle connections, slow and surplus connections are closed, and the format
//! follows the `Accept` header and passes `promtool check metrics`. Every loop is bounded in
//! count and time; nothing leaves the loopback.

use rtscope_testkit::http::{self, header};
use rtscope_verbs::monitor::{Server, HEAD_DEADLINE, MAX_CONNECTIONS};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

/// A server on an ephemeral loopback port, its metrics holding a series of every kind.
fn server() -> (Server, u16) {
    let m = common::metrics_of_every_kind();
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let s = Server::start(l, m).expect("server");
    let port = s.addr.port();
    (s, port)
}

/// Send `raw`, read the answer to its end (the server closes every connection after one
/// answer): (status line, head, body, time to the end of the answer).
fn exchange(port: u16, raw: &[u8]) -> (String, String, String, Duration) {
    let r = http::exchange(port, raw, Duration::from_secs(5));
    (r.status, r.head, r.body, r.took)
}

fn scrape(port: u16, accept: Option<&str>) -> (String, String, String, Duration) {
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    exchange(
        port,
        format!("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n{accept}\r\n").as_bytes(),
    )
}

/// Every request the endpoint refused or served before, each with its answer: the routes, a
/// request line without a version, bytes that are not HTTP, a TLS hello, a write method, an
/// unknown path, a head longer than 8 KiB, and a client that stops half way.
#[test]
fn malformed_requests_get_their_status() {
    let (_s, port) = server();
    let rows: [(&[u8], &str); 11] = [
        (
            b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
            "HTTP/1.1 200 OK",
        ),
        (b"GET /metrics?x=1 HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK"),
        (
            b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
            "HTTP/1.1 200 OK",
        ),
        (
            b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 405 Method Not Allowed",
        ),
        (
            b"GET /admin HTTP/1.1\r\nHost: x\r\n\r\n",
            "HTTP/1.1 404 Not Found",
        ),
        (b"GET /metrics\r\n\r\n", "HTTP/1.1 400 Bad Request"),
        (b"\xff\xfe garbage", "HTTP/1.1 400 Bad Request"),
        (b"\x16\x03\x01garbage\r\n\r\n", "HTTP/1.1 400 Bad Request"),
        (
            b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
            "HTTP/1.1 400 Bad Request",
        ),
        (
            b"POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.0 405 Method Not Allowed",
        ),
    ];
    for (raw, want) in rows {
        let (status, head, body, took) = exchange(port, raw);
        assert_eq!(status, want, "{}", String::from_utf8_lossy(raw));
        assert!(took < Duration::from_secs(1), "{took:?}");
        if raw.starts_with(b"HEAD ") {
            assert!(body.is_empty(), "HEAD with a body: {body}");
            assert!(header(&head, "content-length").is_some_and(|n| n != "0"));
        }
    }
    // A head past 8 KiB is refused, not buffered.
    let long = format!(
        "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\n\r\n",
        "a".repeat(16 << 10)
    );
    let (status, ..) = exchange(port, long.as_bytes());
    assert_eq!(status, "HTTP/1.1 431 Request Header Fields Too Large");
    // Half a request, then nothing: the connection is closed at the head deadline, without an
    // answer, and the endpoint serves meanwhile.
    let t0 = Instant::now();
    let mut half = TcpStream::connect(("127.0.0.1", port)).unwrap();
    half.set_read_timeout(Some(HEAD_DEADLINE * 3)).unwrap();
    half.write_all(b"GET /met").unwrap();
    assert_eq!(scrape(port, None).0, "HTTP/1.1 200 OK");
    let mut buf = [0u8; 64];
    let n = half.read(&mut buf).unwrap_or(0);
    let waited = t0.elapsed();
    assert!(
        waited >= HEAD_DEADLINE - Duration::from_millis(100)
            && waited < HEAD_DEADLINE + Duration::from_secs(2),
        "closed after {waited:?}"
    );
    assert!(
        !String::from_utf8_lossy(&buf[..n]).contains("200"),
        "a half request was served"
    );
}

/// A client that sends one byte every 1.5 s is closed at the head deadline, however long it
/// goes on: the deadline runs from the accept, not from the last byte.
#[test]
fn a_trickling_client_is_closed_at_the_head_deadline() {
    let (_s, port) = server();
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let t0 = Instant::now();
    let head = b"GET /metrics HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    c.set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut closed_after = None;
    // 20 bytes, 30 s at most; the read between two bytes is the 1.5 s pause.
    for &b in head.iter().cycle().take(20) {
        if c.write_all(&[b]).is_err() {
            closed_after = Some(t0.elapsed());
            break;
        }
        let mut buf = [0u8; 64];
        match c.read(&mut buf) {
            Ok(0) => {
                closed_after = Some(t0.elapsed());
                break;
            }
            Ok(n) => panic!(
                "a half request was answered: {}",
                String::from_utf8_lossy(&buf[..n])
            ),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => {
                closed_after = Some(t0.elapsed());
                break;
            }
        }
    }
    let after = closed_after.expect("the trickling client was never closed");
    assert!(
        after < HEAD_DEADLINE + Duration::from_secs(3),
        "closed after {after:?}"
    );
}

/// Past the connection limit, a new connection closes the oldest: the first connections of a
/// flood of idle ones are closed at once, and a scraper arriving after the flood is answered.
#[test]
fn the_oldest_connection_gives_way_past_the_limit() {
    let (_s, port) = server();
    let extra = 20;
    let mut idle: Vec<TcpStream> = (0..MAX_CONNECTIONS + extra)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    let (status, _, _, took) = scrape(port, None);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // The first `extra` (and one more for the scraper) were closed; the newest are open.
    let t0 = Instant::now();
    let mut buf = [0u8; 1];
    for c in idle.iter_mut().take(extra) {
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert!(
            matches!(c.read(&mut buf), Ok(0)),
            "an old connection stayed open past the limit"
        );
    }
    assert!(
        t0.elapsed() < HEAD_DEADLINE,
        "closed by the deadline, not the limit"
    );
    let newest = idle.last_mut().unwrap();
    newest.set_nonblocking(true).unwrap();
    assert!(
        matches!(newest.read(&mut buf), Err(e) if e.kind() == ErrorKind::WouldBlock),
        "the newest connection was closed"
    );
}

/// The attack of the audit: 200 clients each send one byte every 1.5 s and reconnect when
/// closed, 200 more hold idle connections and reconnect when closed, for 12 s; a scraper asks
/// every 300 ms meanwhile. Every answer is complete and within 1 s.
#[test]
fn a_scraper_is_answered_within_1s_under_200_slow_and_200_idle_clients() {
    let (_s, port) = server();
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicBool::new(false));
    let attacker = {
        let (stop, ready) = (stop.clone(), ready.clone());
        std::thread::spawn(move || {
            let connect = || {
                let c = TcpStream::connect(("127.0.0.1", port)).ok()?;
                c.set_nonblocking(true).ok()?;
                Some(c)
            };
            let head = b"GET /metrics HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
            let mut slow: Vec<(Option<TcpStream>, usize)> =
                (0..200).map(|_| (connect(), 0)).collect();
            let mut idle: Vec<Option<TcpStream>> = (0..200).map(|_| connect()).collect();
            ready.store(true, Ordering::Relaxed);
            let (mut reconnects, t0) = (0u32, Instant::now());
            // Bounded: the scraper stops it after its probes, 30 s at most.
            while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(30) {
                for (c, i) in slow.iter_mut() {
                    let sent = c.as_mut().is_some_and(|s| {
                        s.write(&head[*i % head.len()..][..1]).is_ok_and(|n| n == 1)
                    });
                    *i += 1;
                    if !sent {
                        *c = connect();
                        reconnects += 1;
                    }
                }
                for c in idle.iter_mut() {
                    let mut b = [0u8; 64];
                    let open = c.as_mut().is_some_and(
                        |s| matches!(s.read(&mut b), Err(e) if e.kind() == ErrorKind::WouldBlock),
                    );
                    if !open {
                        *c = connect();
                        reconnects += 1;
                    }
                }
                for _ in 0..15 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            reconnects
        })
    };
    while !ready.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(1));
    let (t0, mut times) = (Instant::now(), Vec::new());
    // 12 s: longer than the head deadline, so the attackers are closed and come back.
    while t0.elapsed() < Duration::from_secs(12) {
        let (status, head, body, took) = scrape(port, None);
        assert_eq!(status, "HTTP/1.1 200 OK", "after {:?}", t0.elapsed());
        let len: usize = header(&head, "content-length")
            .and_then(|v| v.parse().ok())
            .expect("content-length");
        assert_eq!(body.len(), len, "a truncated answer");
        assert!(body.contains("rtscope_latency_seconds_bucket"));
        times.push(took);
        std::thread::sleep(Duration::from_millis(300));
    }
    stop.store(true, Ordering::Relaxed);
    let reconnects = attacker.join().expect("attacker");
    let worst = times.iter().max().copied().unwrap_or_default();
    println!(
        "{} scrapes under attack, slowest {worst:?}; the attackers reconnected {reconnects} times",
        times.len()
    );
    assert!(times.len() >= 20, "{} scrapes", times.len());
    assert!(worst < Duration::from_secs(1), "slowest answer {worst:?}");
    // The attack reached the limit and the deadline: its connections were closed.
    assert!(reconnects >= 200, "{reconnects} reconnects");
}

/// Content negotiation: the Prometheus text format unless the scraper asks for OpenMetrics;
/// each format as its content type says (`# EOF` only in OpenMetrics), and the text format as
/// `promtool check metrics` (Prometheus's own parser and linter) reads it.
#[test]
fn the_format_follows_the_accept_header_and_promtool_reads_it() {
    let (_s, port) = server();
    let (status, head, text, _) = scrape(port, None);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        header(&head, "content-type").as_deref(),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(!text.contains("# EOF"), "{text}");
    assert!(
        text.contains("# TYPE rtscope_overruns_total counter\n"),
        "{text}"
    );
    let prometheus_accept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let (_, head, om, _) = scrape(port, Some(prometheus_accept));
    assert_eq!(
        header(&head, "content-type").as_deref(),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# TYPE rtscope_overruns counter\n"), "{om}");
    // The same series in both (but the scrape count, one more in the second).
    let samples = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("rtscope_scrapes_total"))
            .map(String::from)
            .collect()
    };
    assert_eq!(samples(&text), samples(&om));
    let promtool = "/usr/bin/promtool";
    if !std::path::Path::new(promtool).exists() {
        rtscope_testkit::skipped(format_args!(
            "{promtool} missing: Debian's prometheus package has it"
        ));
        return;
    }
    let mut p = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool");
    p.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = p.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool check metrics: {:?}\n{}{}\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
