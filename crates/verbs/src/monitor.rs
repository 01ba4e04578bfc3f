//! `rtscope monitor`: a measurement that runs as long as the host does and publishes what it
//! measures as Prometheus metrics, for fleets watched by Prometheus and Grafana.
//!
//! The measurement is the ordinary streamed run (`rtscope_session::measure`), so memory stays flat for any
//! run length and the record is checkpointed into the store every window. This module is a
//! [`View`] of that run: it sees every sample the orchestrating thread drains from the rings and
//! the interim record built every window, and turns them into metrics held by the
//! `prometheus-client` crate (the Prometheus project's own Rust client: its types follow the
//! OpenMetrics data model and its text encoder is the reference one, so no exposition format is
//! written by hand here).
//!
//! The HTTP side is one thread serving `GET /metrics` from the registry. Encoding holds each
//! metric's lock only while it formats that metric; the measurement threads never touch the
//! registry, and the orchestrating thread only updates atomics and short locks. A scraper that
//! sends nothing, sends garbage or reads slowly costs at most its socket timeouts in the server
//! thread: the measurement does not wait for the network.

use crate::input::bad;
use crate::live::{LiveSnapshot, View};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram as PromHistogram;
use prometheus_client::registry::Registry;
use rtscope_model::{Histogram, RawSample, RunRecord};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Upper bounds of the latency histogram's buckets, µs: log-spaced 1-2-5 from 1 µs to 100 ms,
/// the range between a quiet PREEMPT_RT core and a host stall of a VM. Prometheus adds `+Inf`.
pub const BUCKETS_US: [f64; 16] = [
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1_000.0, 2_000.0, 5_000.0, 10_000.0,
    20_000.0, 50_000.0, 100_000.0,
];

/// Every metric name the monitor exports (without the `_bucket`/`_sum`/`_count` and `_total`
/// suffixes the encoder adds), for the dashboard's test and docs/fleet.md.
pub const METRICS: &[&str] = &[
    "rtscope_latency_seconds",
    "rtscope_overruns",
    "rtscope_window_latency_max_seconds",
    "rtscope_window_latency_p99_seconds",
    "rtscope_window_latency_p999_seconds",
    "rtscope_windows",
    "rtscope_tail_cause_samples",
    "rtscope_tail_cause_seconds",
    "rtscope_lost_events",
    "rtscope_bound_seconds",
    "rtscope_observed_max_seconds",
    "rtscope_tail_latency_seconds",
    "rtscope_no_guest_activity_seconds",
    "rtscope_steal_seconds",
    "rtscope_trace_bursts",
    "rtscope_traced_seconds",
    "rtscope_scrapes",
    "rtscope_info",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CpuLabel {
    cpu: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabel {
    cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BoundLabel {
    cpu: String,
    characterization: String,
    /// `sound` (thread terms measured from preemptirq events) or `estimate`.
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TailLabel {
    cpu: String,
    /// The exceedance probability per sample (`1e-9`).
    p: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InfoLabel {
    version: String,
    kernel: String,
    preempt: String,
    window_s: String,
}

type GaugeF = Gauge<f64, AtomicU64>;
type CounterF = Counter<f64, AtomicU64>;

fn latency_histogram() -> PromHistogram {
    PromHistogram::new(BUCKETS_US.iter().map(|us| us / 1e6))
}

/// The metrics and the registry that encodes them.
pub struct Metrics {
    registry: Registry,
    latency: Family<CpuLabel, PromHistogram, fn() -> PromHistogram>,
    overruns: Family<CpuLabel, Counter>,
    window_max: Family<CpuLabel, GaugeF>,
    window_p99: Family<CpuLabel, GaugeF>,
    window_p999: Family<CpuLabel, GaugeF>,
    windows: Counter,
    cause_samples: Family<CauseLabel, Counter>,
    cause_seconds: Family<CauseLabel, CounterF>,
    lost: Counter,
    bound: Family<BoundLabel, GaugeF>,
    observed_max: Family<CpuLabel, GaugeF>,
    tail_latency: Family<TailLabel, GaugeF>,
    no_guest: CounterF,
    steal: Family<CpuLabel, CounterF>,
    bursts: Counter,
    traced: CounterF,
    scrapes: Counter,
    info: Family<InfoLabel, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let m = Metrics {
            registry: Registry::default(),
            latency: Family::new_with_constructor(latency_histogram),
            overruns: Family::default(),
            window_max: Family::default(),
            window_p99: Family::default(),
            window_p999: Family::default(),
            windows: Counter::default(),
            cause_samples: Family::default(),
            cause_seconds: Family::default(),
            lost: Counter::default(),
            bound: Family::default(),
            observed_max: Family::default(),
            tail_latency: Family::default(),
            no_guest: CounterF::default(),
            steal: Family::default(),
            bursts: Counter::default(),
            traced: CounterF::default(),
            scrapes: Counter::default(),
            info: Family::default(),
        };
        let mut r = Registry::default();
        r.register(
            "rtscope_latency_seconds",
            "Wake-up latency of the measurement thread per CPU (timer expiry to user space)",
            m.latency.clone(),
        );
        r.register(
            "rtscope_overruns",
            "Periods missed entirely by the measurement thread",
            m.overruns.clone(),
        );
        r.register(
            "rtscope_window_latency_max_seconds",
            "Largest latency of the last complete window",
            m.window_max.clone(),
        );
        r.register(
            "rtscope_window_latency_p99_seconds",
            "99th percentile latency of the last complete window",
            m.window_p99.clone(),
        );
        r.register(
            "rtscope_window_latency_p999_seconds",
            "99.9th percentile latency of the last complete window",
            m.window_p999.clone(),
        );
        r.register("rtscope_windows", "Windows completed", m.windows.clone());
        r.register(
            "rtscope_tail_cause_samples",
            "Samples a cause took part in (traced runs; thread names only with --expose-names)",
            m.cause_samples.clone(),
        );
        r.register(
            "rtscope_tail_cause_seconds",
            "Latency a cause explains, summed over samples (traced runs)",
            m.cause_seconds.clone(),
        );
        r.register(
            "rtscope_lost_events",
            "Kernel events the capture lost",
            m.lost.clone(),
        );
        r.register(
            "rtscope_bound_seconds",
            "Latency bound per CPU and interrupt characterization (ECRTS'20 Theorem 8), converged ones only; kind=estimate when the thread terms were not measured",
            m.bound.clone(),
        );
        r.register(
            "rtscope_observed_max_seconds",
            "Largest latency observed since the start, per CPU",
            m.observed_max.clone(),
        );
        r.register(
            "rtscope_tail_latency_seconds",
            "Tail model (GEV on block maxima, docs/tail.md): latency exceeded with probability p per sample, per CPU (cpu=\"run\": any CPU); an estimate, not a bound",
            m.tail_latency.clone(),
        );
        r.register(
            "rtscope_no_guest_activity_seconds",
            "Latency with no guest event in its window: the hypervisor held the vCPU (traced runs)",
            m.no_guest.clone(),
        );
        r.register(
            "rtscope_steal_seconds",
            "Steal time of the measured CPUs since the start (/proc/stat)",
            m.steal.clone(),
        );
        r.register(
            "rtscope_trace_bursts",
            "Tracing bursts completed (--trace-burst): only samples inside one are explained",
            m.bursts.clone(),
        );
        r.register(
            "rtscope_traced_seconds",
            "Time the completed tracing bursts traced (--trace-burst)",
            m.traced.clone(),
        );
        r.register(
            "rtscope_scrapes",
            "Scrapes of this endpoint served",
            m.scrapes.clone(),
        );
        r.register(
            "rtscope_info",
            "The monitor's version and kernel",
            m.info.clone(),
        );
        Metrics { registry: r, ..m }
    }

    /// The OpenMetrics text of every metric, as served.
    pub fn encode(&self) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail; the encoder only propagates fmt errors.
        let _ = prometheus_client::encoding::text::encode(&mut s, &self.registry);
        s
    }
}

/// Raise a counter to a cumulative value seen elsewhere (a record's totals only grow in a run).
fn raise(c: &Counter, seen: &mut u64, now: u64) {
    if now > *seen {
        c.inc_by(now - *seen);
        *seen = now;
    }
}

fn raise_f(c: &CounterF, seen: &mut f64, now: f64) {
    if now > *seen {
        c.inc_by(now - *seen);
        *seen = now;
    }
}

/// A cause as a label: a thread's name (`thread:NAME`) becomes `thread` unless names are to be
/// shown. Interrupt and softirq names are the kernel's and always shown.
pub fn cause_label(cause: &str, expose_names: bool) -> String {
    match cause.split_once(':') {
        Some(("thread", _)) if !expose_names => "thread".into(),
        _ => cause.to_string(),
    }
}

/// The most cause labels exported.
const MAX_CAUSES: usize = 64;

/// What the monitor view publishes, and how.
#[derive(Clone, Debug)]
pub struct MonitorOptions {
    pub window: Duration,
    /// Thread names in cause labels.
    pub expose_names: bool,
}

/// The monitor as a view of the run: samples into histograms, windows into gauges, interim
/// records into cause, bound and steal metrics. `inner` is the console view (log lines).
pub struct MonitorView {
    m: Arc<Metrics>,
    opts: MonitorOptions,
    inner: Box<dyn View>,
    /// Per CPU, the samples of the window under way (exact statistics, log buckets).
    window: BTreeMap<u32, Histogram>,
    next_window: Duration,
    overruns_seen: BTreeMap<u32, u64>,
    causes_seen: BTreeMap<String, (u64, f64)>,
    lost_seen: u64,
    bursts_seen: (u64, f64),
    no_guest_seen: f64,
    steal_seen: BTreeMap<u32, f64>,
    info_set: bool,
}

impl MonitorView {
    pub fn new(m: Arc<Metrics>, opts: MonitorOptions, inner: Box<dyn View>) -> MonitorView {
        MonitorView {
            m,
            next_window: opts.window,
            opts,
            inner,
            window: BTreeMap::new(),
            overruns_seen: BTreeMap::new(),
            causes_seen: BTreeMap::new(),
            lost_seen: 0,
            bursts_seen: (0, 0.0),
            no_guest_seen: 0.0,
            steal_seen: BTreeMap::new(),
            info_set: false,
        }
    }

    fn publish_window(&mut self) {
        for (cpu, h) in &mut self.window {
            let l = CpuLabel {
                cpu: cpu.to_string(),
            };
            let s = |ns: Option<u64>| ns.map_or(0.0, |v| v as f64 / 1e9);
            self.m.window_max.get_or_create(&l).set(s(h.max_ns()));
            self.m
                .window_p99
                .get_or_create(&l)
                .set(s(h.quantile_ns(0.99)));
            self.m
                .window_p999
                .get_or_create(&l)
                .set(s(h.quantile_ns(0.999)));
            *h = Histogram::new();
        }
        self.m.windows.inc();
    }
}

impl View for MonitorView {
    fn update(&mut self, s: &LiveSnapshot) {
        for t in &s.threads {
            let seen = self.overruns_seen.entry(t.cpu).or_default();
            let c = self.m.overruns.get_or_create(&CpuLabel {
                cpu: t.cpu.to_string(),
            });
            raise(&c, seen, t.overruns);
            if t.samples > 0 {
                self.m
                    .observed_max
                    .get_or_create(&CpuLabel {
                        cpu: t.cpu.to_string(),
                    })
                    .set(t.max_ns as f64 / 1e9);
            }
        }
        // The capture's own count, as it goes (the attribution learns losses at the end).
        raise(
            &self.m.lost,
            &mut self.lost_seen,
            s.events_lost.unwrap_or(0),
        );
        if let Some((n, secs)) = s.bursts {
            raise(&self.m.bursts, &mut self.bursts_seen.0, n as u64);
            raise_f(&self.m.traced, &mut self.bursts_seen.1, secs);
        }
        self.inner.update(s);
    }

    fn finish(&mut self) {
        self.inner.finish();
    }

    fn wants_samples(&self) -> bool {
        true
    }

    fn samples(&mut self, batch: &[RawSample]) {
        for s in batch {
            self.m
                .latency
                .get_or_create(&CpuLabel {
                    cpu: s.cpu.to_string(),
                })
                .observe(s.latency_ns as f64 / 1e9);
            self.window.entry(s.cpu).or_default().record(s.latency_ns);
        }
    }

    fn interim_due(&self, elapsed: Duration) -> bool {
        elapsed >= self.next_window
    }

    fn interim(&mut self, rec: &RunRecord, elapsed: Duration) {
        self.publish_window();
        while self.next_window <= elapsed {
            self.next_window += self.opts.window;
        }
        if !self.info_set {
            self.m
                .info
                .get_or_create(&InfoLabel {
                    version: rec.tool_version.clone(),
                    kernel: rec.system.kernel_release.clone(),
                    preempt: rec.system.preempt_model.clone(),
                    window_s: format!("{}", self.opts.window.as_secs_f64()),
                })
                .set(1);
            self.info_set = true;
        }
        for &(cpu, ns) in &rec.system.steal_per_cpu_ns {
            let seen = self.steal_seen.entry(cpu).or_default();
            let c = self.m.steal.get_or_create(&CpuLabel {
                cpu: cpu.to_string(),
            });
            raise_f(&c, seen, ns as f64 / 1e9);
        }
        let Some(m) = rec.measurement() else {
            return;
        };
        if let Some(a) = &m.attribution {
            raise(&self.m.lost, &mut self.lost_seen, a.lost_events);
            // Causes merged by label (every thread is `thread` unless names are shown). A run of
            // months meets ever new thread names: past MAX_CAUSES labels the rest count as
            // `other`, so the series (and the memory) stay bounded.
            let mut by_label: BTreeMap<String, (u64, u64)> = BTreeMap::new();
            for c in &a.causes {
                let mut label = cause_label(&c.cause, self.opts.expose_names);
                if !self.causes_seen.contains_key(&label)
                    && self.causes_seen.len() + by_label.len() >= MAX_CAUSES
                    && !by_label.contains_key(&label)
                {
                    label = "other".into();
                }
                let e = by_label.entry(label).or_default();
                e.0 += c.samples_affected;
                e.1 += c.total_ns;
            }
            for (label, (n, ns)) in by_label {
                let l = CauseLabel {
                    cause: label.clone(),
                };
                let seen = self.causes_seen.entry(label.clone()).or_default();
                raise(&self.m.cause_samples.get_or_create(&l), &mut seen.0, n);
                raise_f(
                    &self.m.cause_seconds.get_or_create(&l),
                    &mut seen.1,
                    ns as f64 / 1e9,
                );
                if label == rtscope_analysis::attribution::NO_GUEST {
                    raise_f(&self.m.no_guest, &mut self.no_guest_seen, ns as f64 / 1e9);
                }
            }
        }
        if let Some(t) = &m.tail {
            for f in t.cpus.iter().chain(t.run.as_ref()) {
                for l in f
                    .levels
                    .iter()
                    .filter(|l| l.per == rtscope_model::tail::TailPer::Sample)
                {
                    self.m
                        .tail_latency
                        .get_or_create(&TailLabel {
                            cpu: f.cpu.map_or("run".into(), |c| c.to_string()),
                            p: format!("{:.0e}", l.exceedance_probability),
                        })
                        .set(l.latency_ns / 1e9);
                }
            }
        }
        if let Some(b) = &m.bound {
            for c in &b.cpus {
                let kind = if c.thread_estimated || b.estimate {
                    "estimate"
                } else {
                    "sound"
                };
                for (name, ch) in c.bounds.named() {
                    let Some(ns) = ch.latency_ns.filter(|_| ch.converged) else {
                        continue;
                    };
                    self.m
                        .bound
                        .get_or_create(&BoundLabel {
                            cpu: c.cpu.to_string(),
                            characterization: name.to_string(),
                            kind: kind.into(),
                        })
                        .set(ns as f64 / 1e9);
                }
            }
        }
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    Metrics,
    NotFound,
    MethodNotAllowed,
    BadRequest,
}

/// The route of an HTTP/1.x request head (request line and headers, up to the blank line):
/// `GET /metrics` (with or without a query) and `GET /` serve the metrics; anything else is
/// refused. Nothing but the request line is read.
pub fn route(head: &[u8]) -> Route {
    let Ok(text) = std::str::from_utf8(head) else {
        return Route::BadRequest;
    };
    let line = text.split("\r\n").next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Route::BadRequest;
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return Route::BadRequest;
    }
    if method != "GET" && method != "HEAD" {
        return Route::MethodNotAllowed;
    }
    match target.split('?').next() {
        Some("/metrics") | Some("/") => Route::Metrics,
        _ => Route::NotFound,
    }
}

/// The largest request head read; a longer one is a bad request.
const MAX_HEAD: usize = 8 << 10;
/// A scraper gets this long to send its request and this long to take each write.
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// Bind the metrics endpoint before anything runs: an address in use or not local to this
/// machine is bad input, named with its flag.
pub fn bind(addr: &str) -> Result<TcpListener, String> {
    let sa: SocketAddr = addr.parse().map_err(|_| {
        format!("--listen: '{addr}' is not ADDRESS:PORT (e.g. 127.0.0.1:9464, [::1]:9464)")
    })?;
    TcpListener::bind(sa).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => format!("--listen {addr}: the address is in use"),
        std::io::ErrorKind::AddrNotAvailable => {
            format!("--listen {addr}: not an address of this machine")
        }
        _ => format!("--listen {addr}: {e}"),
    })
}

/// The metrics endpoint, serving until dropped.
pub struct Server {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub addr: SocketAddr,
}

impl Server {
    /// Serve `m` on `listener` from a thread of its own, one connection at a time.
    pub fn start(listener: TcpListener, m: Arc<Metrics>) -> std::io::Result<Server> {
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("rtscope-metrics".into())
            .spawn(move || {
                use std::os::fd::AsRawFd;
                // Wait for a connection, or 200 ms to look at the stop flag: a scrape is
                // answered at once, and dropping the server ends the thread within 200 ms.
                let mut pfd = libc::pollfd {
                    fd: listener.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                while !flag.load(Ordering::Relaxed) {
                    // SAFETY: one valid pollfd for the listener this thread owns.
                    let n = unsafe { libc::poll(&mut pfd, 1, 200) };
                    if n <= 0 {
                        continue;
                    }
                    if let Ok((conn, _)) = listener.accept() {
                        serve_one(conn, &m);
                    }
                }
            })?;
        Ok(Server {
            stop,
            thread: Some(thread),
            addr,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve_one(mut conn: TcpStream, m: &Metrics) {
    // Accepted sockets do not inherit the listener's non-blocking mode on Linux, but say so.
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(IO_TIMEOUT));
    let _ = conn.set_write_timeout(Some(IO_TIMEOUT));
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let complete = loop {
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            break true;
        }
        if head.len() > MAX_HEAD {
            break false;
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break false,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    };
    let route = if complete {
        route(&head)
    } else {
        Route::BadRequest
    };
    let head_only = head.starts_with(b"HEAD ");
    let (status, ctype, body) = match route {
        Route::Metrics => {
            m.scrapes.inc();
            (
                "200 OK",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                m.encode(),
            )
        }
        Route::NotFound => ("404 Not Found", "text/plain", "see /metrics\n".into()),
        Route::MethodNotAllowed => (
            "405 Method Not Allowed",
            "text/plain",
            "read-only: GET /metrics\n".into(),
        ),
        Route::BadRequest => ("400 Bad Request", "text/plain", "bad request\n".into()),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
    let _ = conn.write_all(&out);
}

/// `rtscope monitor`'s own flags as given (the measurement's are `measure`'s).
#[derive(Clone, Debug)]
pub struct MonitorFlags {
    pub listen: String,
    pub window: String,
    pub expose_names: bool,
    /// `LENGTH/EVERY`: trace in bursts.
    pub trace_burst: Option<String>,
}

/// `--trace-burst LENGTH/EVERY`: LENGTH 1s..=1h, EVERY up to 1d and longer than LENGTH.
pub fn trace_bursts(v: &str) -> Result<rtscope_model::TraceBursts, crate::input::VerbError> {
    let shape = || {
        bad!("--trace-burst: '{v}': expected LENGTH/EVERY, e.g. 10s/5m (LENGTH 1s..=1h, shorter than EVERY, EVERY at most 1d)")
    };
    let (l, e) = v.split_once('/').ok_or_else(shape)?;
    let length_s = crate::input::duration_in("--trace-burst LENGTH", l, 1.0, 3600.0)?;
    let every_s = crate::input::duration_in("--trace-burst EVERY", e, 1.0, 86_400.0)?;
    if every_s <= length_s {
        return Err(shape());
    }
    Ok(rtscope_model::TraceBursts { length_s, every_s })
}

/// Validate everything, bind the endpoint, then measure until stopped (or `-D`), serving the
/// metrics and checkpointing the record into the store every window.
pub fn run(
    flags: &crate::resolve::MeasureRequest,
    mf: &MonitorFlags,
) -> Result<(), crate::input::VerbError> {
    if flags.checkpoint.is_some() {
        return Err(bad!(
            "--checkpoint: a monitor stores its record every --window; give --window instead"
        ));
    }
    let window = crate::input::duration_in("--window", &mf.window, 1.0, 86_400.0)?;
    let mut f = flags.clone();
    if !f.no_store {
        f.checkpoint = Some(crate::resolve::Checkpoint::Every(Duration::from_secs_f64(
            window,
        )));
    }
    let bursts = mf.trace_burst.as_deref().map(trace_bursts).transpose()?;
    if bursts.is_some() && f.trace == rtscope_trace::Mechanism::Off {
        f.trace = rtscope_trace::Mechanism::Auto;
    }
    let mut plan = crate::resolve::measure(&f, "monitor", None)?;
    plan.config.trace_bursts = bursts;
    let listener = bind(&mf.listen).map_err(crate::input::VerbError::BadInput)?;
    let metrics = Arc::new(Metrics::new());
    let server = Server::start(listener, metrics.clone())
        .map_err(|e| crate::input::VerbError::failed(format!("--listen {}: {e}", mf.listen)))?;
    if !flags.quiet {
        eprintln!(
            "rtscope: monitor: metrics on http://{}/metrics, window {window} s{}",
            server.addr,
            if f.no_store {
                ", nothing stored (--no-store)".to_string()
            } else {
                ", the record checkpointed into the store every window".to_string()
            }
        );
    }
    let total = plan.config.duration_s.map(Duration::from_secs_f64);
    let mut view = MonitorView::new(
        metrics,
        MonitorOptions {
            window: Duration::from_secs_f64(window),
            expose_names: mf.expose_names,
        },
        crate::live::default_view(flags.quiet, total),
    );
    let outcome = crate::measure::run(&plan, &mut view)?;
    drop(server);
    crate::measure::report(&plan, &outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::attribution::{AttributionSummary, CauseSummary};

    #[test]
    fn routes() {
        let rows: [(&[u8], Route); 8] = [
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", Route::Metrics),
            (b"GET /metrics?x=1 HTTP/1.0\r\n\r\n", Route::Metrics),
            (b"GET / HTTP/1.1\r\n\r\n", Route::Metrics),
            (b"HEAD /metrics HTTP/1.1\r\n\r\n", Route::Metrics),
            (b"POST /metrics HTTP/1.1\r\n\r\n", Route::MethodNotAllowed),
            (b"GET /admin HTTP/1.1\r\n\r\n", Route::NotFound),
            (b"GET /metrics\r\n\r\n", Route::BadRequest),
            (b"\xff\xfe garbage", Route::BadRequest),
        ];
        for (req, want) in rows {
            assert_eq!(route(req), want, "{}", String::from_utf8_lossy(req));
        }
    }

    #[test]
    fn thread_names_are_hidden_unless_asked() {
        assert_eq!(cause_label("thread:kworker/0:1", false), "thread");
        assert_eq!(
            cause_label("thread:kworker/0:1", true),
            "thread:kworker/0:1"
        );
        assert_eq!(cause_label("irq:timer", false), "irq:timer");
        assert_eq!(cause_label("no_guest_activity", false), "no_guest_activity");
    }

    fn sample(cpu: u32, latency_ns: u64) -> RawSample {
        RawSample {
            cpu,
            latency_ns,
            ..Default::default()
        }
    }

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
    }

    /// Samples land in the buckets by hand: 3 µs and 40 µs on CPU 0; the window's maximum is
    /// published at the window's end; cumulative causes become counter increments.
    #[test]
    fn samples_windows_and_causes_become_metrics() {
        let m = Arc::new(Metrics::new());
        let mut v = MonitorView::new(
            m.clone(),
            MonitorOptions {
                window: Duration::from_secs(10),
                expose_names: false,
            },
            Box::new(crate::live::NoView),
        );
        v.samples(&[sample(0, 3_000), sample(0, 40_000), sample(1, 700)]);
        let t = m.encode();
        assert_eq!(
            value(
                &t,
                "rtscope_latency_seconds_bucket{le=\"0.000005\",cpu=\"0\"}"
            ),
            Some(1.0),
            "{t}"
        );
        assert_eq!(
            value(
                &t,
                "rtscope_latency_seconds_bucket{le=\"0.00005\",cpu=\"0\"}"
            ),
            Some(2.0)
        );
        assert_eq!(
            value(&t, "rtscope_latency_seconds_count{cpu=\"0\"}"),
            Some(2.0)
        );
        assert_eq!(
            value(&t, "rtscope_latency_seconds_count{cpu=\"1\"}"),
            Some(1.0)
        );
        assert!(!v.interim_due(Duration::from_secs(9)));
        assert!(v.interim_due(Duration::from_secs(10)));
        let mut rec = crate::stream::empty_record();
        let a = AttributionSummary {
            causes: vec![
                CauseSummary {
                    cause: "thread:secret-name".into(),
                    samples_affected: 4,
                    total_ns: 2_000_000,
                    ..Default::default()
                },
                CauseSummary {
                    cause: "thread:other".into(),
                    samples_affected: 1,
                    total_ns: 1_000_000,
                    ..Default::default()
                },
                CauseSummary {
                    cause: "no_guest_activity".into(),
                    samples_affected: 2,
                    total_ns: 5_000_000,
                    ..Default::default()
                },
            ],
            lost_events: 3,
            ..Default::default()
        };
        rec.measurement_mut().unwrap().attribution = Some(a.clone());
        v.interim(&rec, Duration::from_secs(10));
        assert!(!v.interim_due(Duration::from_secs(19)));
        let t = m.encode();
        assert_eq!(
            value(&t, "rtscope_window_latency_max_seconds{cpu=\"0\"}"),
            Some(0.00004),
            "{t}"
        );
        assert_eq!(value(&t, "rtscope_windows_total"), Some(1.0));
        assert_eq!(
            value(&t, "rtscope_tail_cause_samples_total{cause=\"thread\"}"),
            Some(5.0)
        );
        assert!(!t.contains("secret-name"));
        assert_eq!(value(&t, "rtscope_lost_events_total"), Some(3.0));
        assert_eq!(
            value(&t, "rtscope_no_guest_activity_seconds_total"),
            Some(0.005)
        );
        // The next window: the cumulative totals grew by 1 sample, 1 ms; the window restarted.
        let mut a2 = a;
        a2.causes[0].samples_affected += 1;
        a2.causes[0].total_ns += 1_000_000;
        rec.measurement_mut().unwrap().attribution = Some(a2);
        v.samples(&[sample(0, 1_000)]);
        v.interim(&rec, Duration::from_secs(20));
        let t = m.encode();
        assert_eq!(
            value(&t, "rtscope_tail_cause_samples_total{cause=\"thread\"}"),
            Some(6.0)
        );
        assert_eq!(
            value(&t, "rtscope_tail_cause_seconds_total{cause=\"thread\"}"),
            Some(0.004)
        );
        assert_eq!(
            value(&t, "rtscope_window_latency_max_seconds{cpu=\"0\"}"),
            Some(0.000001)
        );
        // CPU 1 had no sample in the second window: its window maximum reads 0.
        assert_eq!(
            value(&t, "rtscope_window_latency_max_seconds{cpu=\"1\"}"),
            Some(0.0)
        );
        for name in METRICS {
            if [
                "rtscope_bound_seconds",
                "rtscope_observed_max_seconds",
                "rtscope_tail_latency_seconds",
                "rtscope_overruns",
                "rtscope_steal_seconds",
                "rtscope_scrapes",
                "rtscope_info",
                "rtscope_window_latency_p99_seconds",
                "rtscope_window_latency_p999_seconds",
            ]
            .contains(name)
            {
                continue;
            }
            assert!(t.contains(&format!("# TYPE {name}")), "{name} in\n{t}");
        }
    }
}
