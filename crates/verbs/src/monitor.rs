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
//! The HTTP side ([`Server`]) is one thread serving `GET /metrics` from the registry, every
//! connection at once under a head deadline, a connection deadline and a connection limit, so
//! that no number of idle or slow clients keeps a scraper from its answer. It answers the
//! Prometheus text format, or OpenMetrics when the scraper's `Accept` header asks for it
//! (`rtscope_report::prometheus`). Encoding holds each metric's lock only while it formats that
//! metric; the measurement threads never touch the registry, and the orchestrating thread only
//! updates atomics and short locks: the measurement does not wait for the network.

use crate::input::bad;
use crate::live::{LiveSnapshot, View};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram as PromHistogram;
use prometheus_client::registry::Registry;
use rtscope_model::duration::{human, within};
use rtscope_model::{Histogram, RawSample, RunRecord};
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::ops::RangeInclusive;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

rtscope_model::request_fields! {
    /// `rtscope monitor`'s own fields as its errors and its metrics' help texts name them (the
    /// measurement's are the session's [`crate::input::Field`]); the caller renders each token
    /// ([`rtscope_model::field::render`]).
    pub enum Field in "monitor" {
        Listen = "listen" => LISTEN,
        Window = "window" => WINDOW,
        TraceBurst = "trace_burst" => TRACE_BURST,
        ExposeNames = "expose_names" => EXPOSE_NAMES,
    }
}

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

impl Metrics {
    /// The metrics, their help texts naming the settings that govern them as `field_names`
    /// does (the cli: by the flags, so a scraper reads which flag to give).
    pub fn new(field_names: fn(Field) -> &'static str) -> Metrics {
        let help = |text: String| rtscope_model::field::render(&text, Field::ALL, field_names);
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
            help(format!(
                "Samples a cause took part in (traced runs; thread names only with {EXPOSE_NAMES})"
            )),
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
            help(format!(
                "Tracing bursts completed ({TRACE_BURST}): only samples inside one are explained"
            )),
            m.bursts.clone(),
        );
        r.register(
            "rtscope_traced_seconds",
            help(format!(
                "Time the completed tracing bursts traced ({TRACE_BURST})"
            )),
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

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    Metrics,
    NotFound,
    MethodNotAllowed,
    BadRequest,
}

/// The route of a parsed request: `GET /metrics` (with or without a query) and `GET /` (and
/// `HEAD` of both) serve the metrics; anything else is refused. The HTTP parser (hyper) has
/// already answered 400 to what is not HTTP/1.x at all.
pub fn route(method: &str, target: &str) -> Route {
    if !target.starts_with('/') {
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

/// The largest request head read (hyper's smallest buffer); a longer one is answered 431.
const MAX_HEAD: usize = 8 << 10;
/// A connection gets this long from its accept to the end of its request head: a client that
/// trickles bytes is closed then, however often it sends one.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// And this long from its accept to the last byte of the answer (a scraper reading slowly).
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);
/// Connections open at once. One more closes the oldest: every connection older than a new
/// scraper's is either near its deadline or an attacker's, so a scraper is never the one shut
/// out, whatever number of idle or slow connections are held open.
pub const MAX_CONNECTIONS: usize = 256;
/// After a failed accept (no descriptor left: `EMFILE`), wait this long before the next, so the
/// loop does not spin while the connections that hold the descriptors time out.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Bind the metrics endpoint before anything runs: an address in use or not local to this
/// machine is bad input, named with its field.
pub fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
    TcpListener::bind(addr).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => format!("{LISTEN} {addr}: the address is in use"),
        std::io::ErrorKind::AddrNotAvailable => {
            format!("{LISTEN} {addr}: not an address of this machine")
        }
        _ => format!("{LISTEN} {addr}: {e}"),
    })
}

/// The metrics endpoint, serving until dropped.
///
/// One thread of its own runs a single-threaded tokio runtime: every connection is a task of
/// that thread, so idle and slow connections cost a few kilobytes each and never hold up
/// another's answer, and the measured CPUs see one extra thread whatever the number of
/// scrapers. hyper parses each request and writes each answer.
pub struct Server {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub addr: SocketAddr,
}

impl Server {
    /// Serve `m` on `listener` until dropped.
    pub fn start(listener: TcpListener, m: Arc<Metrics>) -> std::io::Result<Server> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("rtscope-metrics".into())
            .spawn(move || rt.block_on(serve(listener, m, stopped)))?;
        Ok(Server {
            stop: Some(stop),
            thread: Some(thread),
            addr,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The accept loop ends at once; the runtime, dropped with its thread, closes every
        // connection still open.
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accept until `stopped`, each connection a task under its deadlines; past
/// [`MAX_CONNECTIONS`], the oldest connection is closed.
async fn serve(
    listener: TcpListener,
    m: Arc<Metrics>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::Poll;
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEAD_DEADLINE)
        .keep_alive(false)
        .max_buf_size(MAX_HEAD);
    // Open connections by age (accept order): dropping a sender closes that connection.
    let mut open: BTreeMap<u64, tokio::sync::oneshot::Sender<()>> = BTreeMap::new();
    let mut next_id = 0u64;
    loop {
        let accepted = std::future::poll_fn(|cx| {
            if Pin::new(&mut stopped).poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            listener.poll_accept(cx).map(Some)
        })
        .await;
        let stream = match accepted {
            None => return,
            Some(Ok((stream, _))) => stream,
            Some(Err(_)) => {
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        open.retain(|_, closer| !closer.is_closed());
        while open.len() >= MAX_CONNECTIONS {
            open.pop_first();
        }
        let (closer, mut closed) = tokio::sync::oneshot::channel::<()>();
        open.insert(next_id, closer);
        next_id += 1;
        let m = m.clone();
        let service = hyper::service::service_fn(move |req| {
            let answer = answer(&req, &m);
            async move { Ok::<_, std::convert::Infallible>(answer) }
        });
        let conn = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        tokio::spawn(async move {
            let mut conn = std::pin::pin!(conn);
            let served = std::future::poll_fn(|cx| {
                if Pin::new(&mut closed).poll(cx).is_ready() {
                    return Poll::Ready(());
                }
                conn.as_mut().poll(cx).map(|_| ())
            });
            // Past the deadline, or closed for a newer connection: the socket is dropped.
            let _ = tokio::time::timeout(CONNECTION_DEADLINE, served).await;
        });
    }
}

/// The answer to one parsed request.
fn answer<B>(
    req: &hyper::Request<B>,
    m: &Metrics,
) -> hyper::Response<http_body_util::Full<hyper::body::Bytes>> {
    use rtscope_report::prometheus::{negotiate, text_0_0_4, Exposition};
    let target = req
        .uri()
        .path_and_query()
        .map_or(req.uri().path(), |p| p.as_str());
    let (status, ctype, body) = match route(req.method().as_str(), target) {
        Route::Metrics => {
            m.scrapes.inc();
            let accept = req
                .headers()
                .get(hyper::header::ACCEPT)
                .and_then(|v| v.to_str().ok());
            let format = negotiate(accept);
            let om = m.encode();
            let body = match format {
                Exposition::OpenMetrics => om,
                Exposition::Text004 => text_0_0_4(&om),
            };
            (hyper::StatusCode::OK, format.content_type(), body)
        }
        Route::NotFound => (
            hyper::StatusCode::NOT_FOUND,
            "text/plain",
            "see /metrics\n".into(),
        ),
        Route::MethodNotAllowed => (
            hyper::StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "read-only: GET /metrics\n".into(),
        ),
        Route::BadRequest => (
            hyper::StatusCode::BAD_REQUEST,
            "text/plain",
            "bad request\n".into(),
        ),
    };
    let mut r = hyper::Response::new(http_body_util::Full::new(hyper::body::Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(ctype),
    );
    r
}

/// `rtscope monitor`'s own request, typed (the measurement's is `measure`'s).
#[derive(Clone, Debug)]
pub struct MonitorFlags {
    /// Where `GET /metrics` is served.
    pub listen: SocketAddr,
    /// The gauges' window and the checkpoint interval ([`WINDOW_RANGE`]).
    pub window: Duration,
    pub expose_names: bool,
    /// Trace in bursts ([`trace_bursts`]).
    pub trace_burst: Option<rtscope_model::TraceBursts>,
    /// How the caller names each field: the metrics' help texts name fields through it.
    pub field_names: fn(Field) -> &'static str,
}

/// A window: at least a second (a scrape interval), at most a day.
pub const WINDOW_RANGE: RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(86_400);

/// A tracing burst's length: long enough to catch a tail, short enough to stay a burst.
pub const BURST_LENGTH_RANGE: RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(3600);

/// The interval between the bursts' starts (also longer than the length).
pub const BURST_EVERY_RANGE: RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(86_400);

/// Bursts of `length` every `every`: each within its range, `every` longer than `length`; the
/// error names LENGTH or EVERY, the caller the field.
pub fn trace_bursts(
    length: Duration,
    every: Duration,
) -> Result<rtscope_model::TraceBursts, String> {
    let length = within(length, &BURST_LENGTH_RANGE).map_err(|e| format!("LENGTH {e}"))?;
    let every = within(every, &BURST_EVERY_RANGE).map_err(|e| format!("EVERY {e}"))?;
    if every <= length {
        return Err(format!(
            "EVERY {} is not longer than LENGTH {}",
            human(every.as_secs_f64()),
            human(length.as_secs_f64())
        ));
    }
    Ok(rtscope_model::TraceBursts {
        length_s: length.as_secs_f64(),
        every_s: every.as_secs_f64(),
    })
}

/// The line said once the endpoint listens; `field_names` names the measurement's fields.
pub fn started_line(
    addr: SocketAddr,
    window_s: f64,
    no_store: bool,
    field_names: fn(crate::input::Field) -> &'static str,
) -> String {
    let stored = if no_store {
        format!(", nothing stored ({})", crate::input::Field::NoStore)
    } else {
        ", the record checkpointed into the store every window".to_string()
    };
    crate::input::Field::render(
        &format!("rtscope: monitor: metrics on http://{addr}/metrics, window {window_s} s{stored}"),
        field_names,
    )
}

/// Validate everything, bind the endpoint, then measure until stopped (or `-D`), serving the
/// metrics and checkpointing the record into the store every window.
pub fn run(
    flags: &crate::resolve::MeasureRequest,
    mf: &MonitorFlags,
) -> Result<(), crate::input::VerbError> {
    if flags.checkpoint.is_some() {
        return Err(bad!(
            "{checkpoint}: a monitor stores its record every {WINDOW}; give {WINDOW} instead",
            checkpoint = crate::input::Field::Checkpoint
        ));
    }
    let window = within(mf.window, &WINDOW_RANGE).map_err(|e| bad!("{WINDOW}: {e}"))?;
    let mut f = flags.clone();
    if !f.no_store {
        f.checkpoint = Some(crate::resolve::Checkpoint::Every(window));
    }
    let bursts = mf
        .trace_burst
        .map(|b| {
            let d = Duration::from_secs_f64;
            trace_bursts(d(b.length_s), d(b.every_s)).map_err(|e| bad!("{TRACE_BURST}: {e}"))
        })
        .transpose()?;
    if bursts.is_some() && f.trace == rtscope_trace::Mechanism::Off {
        f.trace = rtscope_trace::Mechanism::Auto;
    }
    let mut plan = crate::resolve::measure(&f, "monitor", None)?;
    plan.config.trace_bursts = bursts;
    let listener = bind(mf.listen).map_err(crate::input::VerbError::BadInput)?;
    let metrics = Arc::new(Metrics::new(mf.field_names));
    let server = Server::start(listener, metrics.clone())
        .map_err(|e| crate::input::VerbError::failed(format!("{LISTEN} {}: {e}", mf.listen)))?;
    if !flags.quiet {
        eprintln!(
            "{}",
            started_line(
                server.addr,
                window.as_secs_f64(),
                f.no_store,
                flags.field_names
            )
        );
    }
    let total = plan.config.duration_s.map(Duration::from_secs_f64);
    let mut view = MonitorView::new(
        metrics,
        MonitorOptions {
            window,
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

    /// The routes of parsed requests; the raw requests, those hyper refuses before a route
    /// (a request line without a version, bytes that are not HTTP) included, are sent to a
    /// real server in tests/metrics_endpoint.rs.
    #[test]
    fn routes() {
        let rows = [
            ("GET", "/metrics", Route::Metrics),
            ("GET", "/metrics?x=1", Route::Metrics),
            ("GET", "/", Route::Metrics),
            ("HEAD", "/metrics", Route::Metrics),
            ("POST", "/metrics", Route::MethodNotAllowed),
            ("GET", "/admin", Route::NotFound),
            ("OPTIONS", "*", Route::BadRequest),
        ];
        for (method, target, want) in rows {
            assert_eq!(route(method, target), want, "{method} {target}");
        }
    }

    #[test]
    fn bursts_within_their_ranges_and_every_longer_than_length() {
        let s = Duration::from_secs;
        let b = trace_bursts(s(10), s(300)).unwrap();
        assert_eq!((b.length_s, b.every_s), (10.0, 300.0));
        for (l, e, want) in [
            (s(0), s(5), "LENGTH 0ns is out of range (1s ..= 1h)"),
            (s(1), s(2 * 86_400), "EVERY 2d is out of range (1s ..= 1d)"),
            (s(5), s(5), "EVERY 5s is not longer than LENGTH 5s"),
        ] {
            assert_eq!(trace_bursts(l, e).unwrap_err(), want);
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
        let m = Arc::new(Metrics::new(Field::key));
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

    /// The help texts and the start-up line name the settings by the caller's names, never by
    /// a flag (the cli's names: crates/cli/tests/unit_fields.rs).
    #[test]
    fn help_texts_and_the_start_line_name_fields() {
        let m = Metrics::new(Field::key);
        // A family is encoded once it holds a series.
        m.cause_samples
            .get_or_create(&CauseLabel {
                cause: "irq:timer".into(),
            })
            .inc();
        let t = m.encode();
        assert!(
            t.contains("# HELP rtscope_trace_bursts Tracing bursts completed (trace_burst):"),
            "{t}"
        );
        assert!(t.contains("thread names only with expose_names)"), "{t}");
        assert!(!t.contains("--"), "{t}");
        let addr: SocketAddr = ([127, 0, 0, 1], 9464).into();
        let line = started_line(addr, 10.0, true, crate::input::Field::key);
        assert_eq!(
            line,
            "rtscope: monitor: metrics on http://127.0.0.1:9464/metrics, window 10 s, nothing stored (no_store)"
        );
        assert!(started_line(addr, 10.0, false, crate::input::Field::key)
            .ends_with(", the record checkpointed into the store every window"));
    }
}
