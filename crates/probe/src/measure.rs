//! The measurement loop — one loop for every admission backend and timer mode — and the
//! thread set that runs it, one thread per selected CPU.

use crate::admission::{self, Admission, Observed};
use crate::hygiene::{self, CpuDmaLatency};
use crate::recorder::Recorder;
use crate::ring::SampleRing;
use crate::timer::Timer;
use crate::{sys, ProbeError};
use rtscope_model::{ClockId, Hygiene, Policy, RawSample, RunConfig, SampleRef, TimerMode};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Stack touched before the loop so the loop never faults on it.
const PREFAULT_STACK_BYTES: usize = 256 * 1024;
const THREAD_STACK_BYTES: usize = 1024 * 1024;
/// Cap on individually stored above-threshold samples per thread.
pub const ABOVE_THRESHOLD_CAP: usize = 100_000;
/// How often a publishing thread hands over what it recorded (its own clock): the orchestrating
/// thread collects ~10 times a second, so the figures it shows lag by at most ~350 ms. Each
/// hand-over costs the orchestrator a pass over the log histogram's counters (~29 000, to add
/// them up and to empty the recorder again) whatever the samples: at 50 ms, with two CPUs at
/// 1 kHz, that was a quarter more CPU time than cyclictest's for the same samples.
const PUBLISH_EVERY_NS: u64 = 250_000_000;

/// What the measurement threads need, already validated by the caller.
#[derive(Clone, Debug)]
pub struct MeasureSpec {
    pub cpus: Vec<u32>,
    pub policy: Policy,
    pub priority: u32,
    pub nice: i32,
    pub deadline: Option<rtscope_model::DeadlineParams>,
    pub interval_ns: u64,
    pub distance_ns: u64,
    /// All threads' first expiry at one instant; otherwise staggered by interval/n.
    pub aligned: bool,
    pub duration_ns: Option<u64>,
    pub loops: Option<u64>,
    pub timer: TimerMode,
    pub clock: ClockId,
    pub hold_cpu_dma_latency: bool,
    pub break_above_ns: Option<u64>,
    pub threshold_ns: Option<u64>,
    pub worst_n: usize,
    pub linear_max_us: u32,
    /// Hand every sample to the orchestrating thread through a per-thread ring
    /// ([`Measurement::rings`]): traced runs, `--raw`, the tail model.
    pub stream: bool,
    /// Hand what each thread recorded to the orchestrating thread every ~250 ms
    /// ([`Measurement::collect`], [`Measurement::published`]): live views and checkpoints.
    pub publish: bool,
    pub mlock: bool,
}

impl MeasureSpec {
    pub fn from_config(c: &RunConfig, stream: bool) -> MeasureSpec {
        MeasureSpec {
            cpus: c.cpus.clone(),
            policy: c.policy,
            priority: c.priority,
            nice: c.nice,
            deadline: c.deadline.clone(),
            interval_ns: c.interval_us * 1000,
            distance_ns: c.distance_us * 1000,
            aligned: c.aligned,
            duration_ns: c.duration_s.map(|s| (s * 1e9) as u64),
            loops: c.loops,
            timer: c.timer,
            clock: c.clock,
            hold_cpu_dma_latency: c.hold_cpu_dma_latency,
            break_above_ns: c.break_above_us.map(|u| u * 1000),
            threshold_ns: c.threshold_us.map(|u| u * 1000),
            worst_n: c.worst_n,
            linear_max_us: c.linear_max_us,
            stream,
            publish: stream,
            mlock: true,
        }
    }
}

/// What a thread says about itself outside the loop: its tid once started and `done` once its
/// loop ended. Nothing here is written per sample (live figures come from what the thread
/// publishes every ~250 ms, [`Measurement::collect`]), so a display costs the loop nothing.
/// Padded so threads never share a cache line.
#[repr(align(128))]
#[derive(Default)]
pub struct LiveThread {
    pub tid: AtomicU32,
    pub done: AtomicBool,
}

pub struct ThreadOutcome {
    pub index: u32,
    pub cpu: u32,
    pub recorder: Recorder,
    pub observed: Observed,
    /// CPU the thread last ran on (differs from `cpu` for unpinned DEADLINE threads).
    pub last_cpu: u32,
    pub interval_ns: u64,
    pub error: Option<String>,
}

/// Where a publishing thread hands over what it recorded, without copying: it takes the `clean`
/// recorder (the orchestrating thread emptied it) and leaves the one it filled in `full`. Both
/// sides only ever `try_lock`, so nobody waits on it and the thread's unlock never has to wake a
/// waiter (no system call on a measured CPU); a thread that finds it taken tries again at its
/// next publication.
#[derive(Default)]
struct Exchange {
    clean: Option<Box<Recorder>>,
    full: Option<Box<Recorder>>,
    /// The latency of the sample recorded just before `full` was handed over.
    last_ns: u64,
}

/// What the orchestrating thread has collected of one thread so far.
pub struct Published {
    /// Every sample the thread had recorded by its last publication.
    pub recorder: Recorder,
    /// The latency of the last of them (the "current" figure of a live view).
    pub last_ns: u64,
}

pub struct MeasureOutcome {
    pub threads: Vec<ThreadOutcome>,
    pub break_sample: Option<SampleRef>,
    pub hygiene: Hygiene,
}

pub struct Measurement {
    stop: Arc<AtomicBool>,
    pub live: Arc<Vec<LiveThread>>,
    /// One ring per thread (same order as `spec.cpus`) when `spec.stream`; empty otherwise.
    /// Only the orchestrating thread may drain them.
    pub rings: Arc<Vec<SampleRing>>,
    /// One exchange per thread when `spec.publish`; empty otherwise.
    exchanges: Arc<Vec<Mutex<Exchange>>>,
    published: Vec<Published>,
    handles: Vec<JoinHandle<Result<ThreadOutcome, ProbeError>>>,
    break_sample: Arc<Mutex<Option<SampleRef>>>,
    dma: Option<CpuDmaLatency>,
    hygiene: Hygiene,
    /// CLOCK (the run's clock) ns at which the threads started.
    pub start_ns: u64,
}

enum Ready {
    Ok,
    Err(ProbeError),
}

impl Measurement {
    /// Start all threads. Returns only when every thread has been admitted and armed — or an
    /// error, in which case every thread has already been stopped and released.
    pub fn start(spec: &MeasureSpec) -> Result<Measurement, ProbeError> {
        Measurement::start_then(spec, || {})
    }

    /// [`Measurement::start`], calling `before_go` once every thread is admitted, armed and
    /// parked, just before they are let go: the set-up is over (memory locked, stacks
    /// pre-faulted, buffers allocated) and no sample has been taken yet.
    pub fn start_then(
        spec: &MeasureSpec,
        before_go: impl FnOnce(),
    ) -> Result<Measurement, ProbeError> {
        let mut hyg = Hygiene::default();
        if spec.mlock {
            hygiene::mlockall()?;
            hyg.mlockall = true;
        }
        let dma = if spec.hold_cpu_dma_latency {
            let g = CpuDmaLatency::hold(0)?;
            hyg.cpu_dma_latency_us = Some(0);
            if let Some(prev) = g.previous_us {
                hyg.notes.push(format!(
                    "/dev/cpu_dma_latency held at 0 us for the run (was {prev} us); released on exit"
                ));
            }
            Some(g)
        } else {
            hyg.notes.push(
                "/dev/cpu_dma_latency not held (the run did not ask for it): deep C-states allowed"
                    .into(),
            );
            None
        };
        if spec.policy == Policy::Other {
            hyg.timer_slack_ns = Some(1);
            hyg.notes.push(
                "SCHED_OTHER threads: timer slack set to 1 ns (default 50 us would delay every wake-up; Cerqueira & Brandenburg 2013 §2.4)".into(),
            );
        }
        let n = spec.cpus.len();
        let stop = Arc::new(AtomicBool::new(false));
        let live: Arc<Vec<LiveThread>> = Arc::new((0..n).map(|_| LiveThread::default()).collect());
        // Two seconds of samples of the fastest thread (at least 1024, at most 1 Mi slots): the
        // orchestrating thread drains ~10 times a second, so only a stall of seconds drops any.
        let ring_slots = (2_000_000_000 / spec.interval_ns.max(1)).clamp(1024, 1 << 20) as usize;
        let rings: Arc<Vec<SampleRing>> = Arc::new(if spec.stream {
            (0..n).map(|_| SampleRing::new(ring_slots)).collect()
        } else {
            Vec::new()
        });
        let recorder = |cpu: u32| {
            Recorder::new(
                cpu,
                0,
                spec.linear_max_us,
                spec.worst_n,
                spec.threshold_ns,
                ABOVE_THRESHOLD_CAP,
            )
        };
        // Allocated here, before memory is locked and the threads are let go: the spare each
        // thread swaps in, and the recorder the collected pieces add up in.
        let (exchanges, published): (Vec<_>, Vec<_>) = if spec.publish {
            spec.cpus
                .iter()
                .map(|&cpu| {
                    let ex = Exchange {
                        clean: Some(Box::new(recorder(cpu))),
                        ..Default::default()
                    };
                    let p = Published {
                        recorder: recorder(cpu),
                        last_ns: 0,
                    };
                    (Mutex::new(ex), p)
                })
                .unzip()
        } else {
            (Vec::new(), Vec::new())
        };
        let exchanges = Arc::new(exchanges);
        let break_sample = Arc::new(Mutex::new(None));
        let go = Arc::new(Gate::default());
        let start_at = Arc::new(AtomicU64::new(0));
        let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
        let backend: Arc<dyn Admission> = Arc::from(admission::backend(
            spec.policy,
            spec.priority,
            spec.nice,
            spec.deadline.as_ref(),
        ));
        if !backend.may_pin() {
            hyg.notes.push(
                "SCHED_DEADLINE threads are not pinned: the kernel refuses a DEADLINE task whose affinity is narrower than its root domain; each thread's last CPU is reported".into(),
            );
        }
        let mut handles = Vec::with_capacity(n);
        for (idx, &cpu) in spec.cpus.iter().enumerate() {
            let ctx = ThreadCtx {
                idx: idx as u32,
                cpu,
                spec: spec.clone(),
                stop: stop.clone(),
                live: live.clone(),
                rings: rings.clone(),
                exchanges: exchanges.clone(),
                break_sample: break_sample.clone(),
                go: go.clone(),
                start_at: start_at.clone(),
                backend: backend.clone(),
                ready: ready_tx.clone(),
            };
            let h = std::thread::Builder::new()
                .name(format!("rtscope-m{idx}"))
                .stack_size(THREAD_STACK_BYTES)
                .spawn(move || thread_main(ctx));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Threads already spawned are parked on the gate: open it with "stop" set,
                    // they release their admission and end without measuring.
                    stop.store(true, Relaxed);
                    go.open();
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(ProbeError::Spawn(e));
                }
            }
        }
        drop(ready_tx);
        let mut first_err = None;
        for _ in 0..n {
            match ready_rx.recv() {
                Ok(Ready::Ok) => {}
                Ok(Ready::Err(e)) => {
                    if first_err.is_none() {
                        first_err = Some(e)
                    }
                }
                Err(_) => break,
            }
        }
        if let Some(e) = first_err {
            stop.store(true, Relaxed);
            go.open();
            for h in handles {
                let _ = h.join();
            }
            return Err(e);
        }
        before_go();
        // Common start: a few ms ahead so every thread's first expiry is in the future.
        let clk = sys::clock_raw(spec.clock);
        let start_ns = sys::now_ns(clk) + 5_000_000;
        start_at.store(start_ns, Relaxed);
        go.open();
        Ok(Measurement {
            stop,
            live,
            rings,
            exchanges,
            published,
            handles,
            break_sample,
            dma,
            hygiene: hyg,
            start_ns,
        })
    }

    pub fn request_stop(&self) {
        self.stop.store(true, Relaxed);
    }

    pub fn stop_requested(&self) -> bool {
        self.stop.load(Relaxed)
    }

    pub fn all_done(&self) -> bool {
        self.live.iter().all(|l| l.done.load(Relaxed))
    }

    /// Take what each publishing thread handed over since the last call and add it to
    /// [`Measurement::published`]; the emptied recorder goes back for the thread's next
    /// publication. A thread whose exchange is busy this instant is collected next time.
    pub fn collect(&mut self) {
        for (ex, p) in self.exchanges.iter().zip(self.published.iter_mut()) {
            let mut g = match ex.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => continue,
            };
            if let Some(mut full) = g.full.take() {
                p.recorder.absorb(&full);
                p.last_ns = g.last_ns;
                full.clear();
                g.clean = Some(full);
            }
        }
    }

    /// Each thread's figures as of its last publication that [`Measurement::collect`] took
    /// (same order as `spec.cpus`); empty unless `spec.publish`.
    pub fn published(&self) -> &[Published] {
        &self.published
    }

    /// Wait for every thread (they stop on their own at the end, or at the next wake-up after
    /// `request_stop`), release the cpu_dma_latency request and collect results.
    pub fn join(mut self) -> Result<MeasureOutcome, ProbeError> {
        let mut threads = Vec::new();
        let mut err = None;
        let mut published = std::mem::take(&mut self.published).into_iter();
        for (i, h) in std::mem::take(&mut self.handles).into_iter().enumerate() {
            let p = published.next();
            match h.join() {
                Ok(Ok(mut t)) => {
                    // A publishing thread's record is what it handed over plus what it kept.
                    if let Some(p) = p {
                        let mut whole = p.recorder;
                        if let Some(ex) = self.exchanges.get(i) {
                            let mut g = ex.lock().unwrap_or_else(|p| p.into_inner());
                            if let Some(full) = g.full.take() {
                                whole.absorb(&full);
                            }
                        }
                        whole.absorb(&t.recorder);
                        t.recorder = whole;
                    }
                    threads.push(t)
                }
                Ok(Err(e)) => err = err.or(Some(e)),
                Err(_) => err = err.or(Some(ProbeError::ThreadPanic(i as u32))),
            }
        }
        self.dma.take();
        hygiene::munlockall();
        if let Some(e) = err {
            return Err(e);
        }
        let mut hyg = self.hygiene.clone();
        hyg.prefaulted_stack_bytes = PREFAULT_STACK_BYTES as u64;
        // A publishing thread holds two recorders (the one it fills, the one it swaps in).
        let recorders_per_thread = if self.exchanges.is_empty() { 1 } else { 2 };
        hyg.prefaulted_heap_bytes = threads
            .iter()
            .map(|t| recorders_per_thread * t.recorder.footprint_bytes())
            .sum::<u64>()
            + self
                .rings
                .iter()
                .map(|r| (r.capacity() * std::mem::size_of::<RawSample>()) as u64)
                .sum::<u64>();
        let break_sample = *self.break_sample.lock().unwrap_or_else(|p| p.into_inner());
        Ok(MeasureOutcome {
            threads,
            break_sample,
            hygiene: hyg,
        })
    }
}

/// A one-shot start signal: threads park on it after admission; the caller opens it once every
/// thread is ready (or to abort, with `stop` already set).
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_all();
    }
    fn wait(&self) {
        let mut g = self.open.lock().unwrap_or_else(|p| p.into_inner());
        while !*g {
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}

struct ThreadCtx {
    idx: u32,
    cpu: u32,
    spec: MeasureSpec,
    stop: Arc<AtomicBool>,
    live: Arc<Vec<LiveThread>>,
    rings: Arc<Vec<SampleRing>>,
    exchanges: Arc<Vec<Mutex<Exchange>>>,
    break_sample: Arc<Mutex<Option<SampleRef>>>,
    go: Arc<Gate>,
    start_at: Arc<AtomicU64>,
    backend: Arc<dyn Admission>,
    ready: mpsc::Sender<Ready>,
}

/// Measurement threads block every asynchronous signal: SIGINT/SIGTERM are for the
/// orchestrating thread, and a signal handler running on a measured CPU's thread would show up
/// as latency.
fn block_async_signals() {
    use rtscope_sys::Signal;
    rtscope_sys::signals::SignalMask::all_except(&[
        Signal::SIGSEGV,
        Signal::SIGBUS,
        Signal::SIGFPE,
        Signal::SIGILL,
        Signal::SIGTRAP,
    ])
    .block();
}

fn thread_main(ctx: ThreadCtx) -> Result<ThreadOutcome, ProbeError> {
    block_async_signals();
    let tid = sys::gettid();
    let live = &ctx.live[ctx.idx as usize];
    live.tid.store(tid as u32, Relaxed);
    let setup = (|| -> Result<(Box<Recorder>, Observed), ProbeError> {
        if ctx.backend.may_pin() {
            sys::set_affinity(0, &[ctx.cpu]).map_err(|e| ProbeError::Affinity {
                cpu: ctx.cpu,
                source: e,
            })?;
        }
        hygiene::prefault_stack(PREFAULT_STACK_BYTES);
        let s = &ctx.spec;
        let rec = Box::new(Recorder::new(
            ctx.cpu,
            tid as u32,
            s.linear_max_us,
            s.worst_n,
            s.threshold_ns,
            ABOVE_THRESHOLD_CAP,
        ));
        ctx.backend.admit()?;
        let observed = admission::observe(0)?;
        Ok((rec, observed))
    })();
    let (mut rec, observed) = match setup {
        Ok(v) => {
            let _ = ctx.ready.send(Ready::Ok);
            v
        }
        Err(e) => {
            let msg = e.to_string();
            let _ = ctx.ready.send(Ready::Err(e));
            ctx.go.wait();
            live.done.store(true, Relaxed);
            let _ = ctx.backend.release();
            return Err(ProbeError::Sched {
                what: "admission",
                source: std::io::Error::other(msg),
            });
        }
    };
    ctx.go.wait();
    let interval_ns = ctx.spec.interval_ns + ctx.idx as u64 * ctx.spec.distance_ns;
    let result = if ctx.stop.load(Relaxed) {
        Ok(())
    } else {
        measure_loop(&ctx, &mut rec, interval_ns)
    };
    live.done.store(true, Relaxed);
    let last_cpu = sys::current_cpu();
    // Exit restores the thread to SCHED_OTHER whatever happened in the loop.
    let released = ctx.backend.release();
    let error = result.err().map(|e| e.to_string());
    released?;
    Ok(ThreadOutcome {
        index: ctx.idx,
        cpu: ctx.cpu,
        recorder: *rec,
        observed,
        last_cpu,
        interval_ns,
        error,
    })
}

/// The one measurement loop. A sample costs: the timer wait, one clock read, a subtraction, the
/// recorder update, one comparison (is a publication due) and, when streaming, one slot write
/// plus a release store into the thread's own ring. Nothing here allocates, waits on a lock or
/// copies a recorder: a publication (every ~50 ms) swaps two pointers under a `try_lock`.
fn measure_loop(
    ctx: &ThreadCtx,
    rec: &mut Box<Recorder>,
    interval_ns: u64,
) -> Result<(), ProbeError> {
    let s = &ctx.spec;
    let clk = sys::clock_raw(s.clock);
    let start = ctx.start_at.load(Relaxed);
    // Staggered start: thread i's wake-ups fall i/n of the base interval after thread 0's.
    let n = s.cpus.len().max(1) as u64;
    let offset = if s.aligned {
        0
    } else {
        ctx.idx as u64 * s.interval_ns / n
    };
    let first = start + interval_ns + offset;
    let end_ns = s.duration_ns.map(|d| start + offset + d);
    let loops = s.loops.unwrap_or(u64::MAX);
    let break_ns = s.break_above_ns.unwrap_or(u64::MAX);
    let mut timer = Timer::new(s.timer, clk, first, interval_ns)?;
    // Unpinned (SCHED_DEADLINE) threads: each sample carries the CPU it resumed on, so that a
    // traced run attributes it against that CPU's events (one vDSO/rseq read per sample).
    let track_cpu = s.deadline.is_some();
    let ring = ctx.rings.get(ctx.idx as usize);
    let exchange = ctx.exchanges.get(ctx.idx as usize);
    let mut publish_at = if exchange.is_some() { first } else { u64::MAX };
    loop {
        let wake = timer.wait()?;
        if let Some(end) = end_ns {
            if wake.expected_ns > end {
                break;
            }
        }
        let now = sys::now_ns(clk);
        let lat = now.saturating_sub(wake.expected_ns);
        if track_cpu {
            rec.cpu = sys::current_cpu();
        }
        rec.overruns += wake.missed;
        let cycle = rec.cycles;
        rec.record(wake.expected_ns, lat);
        if let Some(r) = ring {
            r.push(RawSample {
                cpu: rec.cpu,
                tid: rec.tid,
                cycle,
                expected_ns: wake.expected_ns,
                latency_ns: lat,
            });
        }
        rec.overruns += timer.advance(now);
        if now >= publish_at {
            publish_at = now + PUBLISH_EVERY_NS;
            publish(exchange, rec, lat);
        }
        if lat > break_ns {
            on_break(ctx, rec, wake.expected_ns, lat);
            break;
        }
        if rec.cycles >= loops || ctx.stop.load(Relaxed) {
            break;
        }
    }
    Ok(())
}

/// Hand the filled recorder over and continue in the emptied one, if the orchestrating thread
/// has given one back; otherwise keep recording into this one until the next publication.
#[cold]
#[inline(never)]
fn publish(exchange: Option<&Mutex<Exchange>>, rec: &mut Box<Recorder>, last_ns: u64) {
    let Some(ex) = exchange else {
        return;
    };
    let Ok(mut g) = ex.try_lock() else {
        return;
    };
    if g.full.is_some() {
        return;
    }
    if let Some(mut next) = g.clean.take() {
        next.continue_from(rec);
        std::mem::swap(rec, &mut next);
        g.full = Some(next);
        g.last_ns = last_ns;
    }
}

#[cold]
fn on_break(ctx: &ThreadCtx, rec: &Recorder, expected_ns: u64, lat: u64) {
    let mut b = ctx.break_sample.lock().unwrap_or_else(|p| p.into_inner());
    if b.is_none() {
        *b = Some(SampleRef {
            cpu: rec.cpu,
            tid: rec.tid,
            cycle: rec.cycles - 1,
            expected_ns,
            latency_ns: lat,
        });
    }
    ctx.stop.store(true, Relaxed);
}
