//! Plain HTTP/1.x on the loopback, for the tests of the monitor's metrics endpoint and of the
//! Prometheus that scrapes it: one request per connection, read to the end (the endpoint closes
//! every connection after one answer).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// A port free on the loopback now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One answer: its status line, its head (status line and headers), its body, and the time from
/// the connection to the answer's end.
pub struct Response {
    pub status: String,
    pub head: String,
    pub body: String,
    pub took: Duration,
}

/// A header's value in a response head (names case-insensitive).
pub fn header(head: &str, name: &str) -> Option<String> {
    head.lines().skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

/// Send `raw` to 127.0.0.1:`port` and read the answer to its end, waiting at most `timeout` for
/// each read.
pub fn exchange(port: u16, raw: &[u8], timeout: Duration) -> Response {
    let t0 = Instant::now();
    let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    c.set_read_timeout(Some(timeout)).expect("read timeout");
    c.write_all(raw).expect("send the request");
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    let took = t0.elapsed();
    let out = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    Response {
        status: head.lines().next().unwrap_or("").to_string(),
        head: head.to_string(),
        body: body.to_string(),
        took,
    }
}
