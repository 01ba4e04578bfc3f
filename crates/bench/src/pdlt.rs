//! The PDLT scan: heursch-2001's "software monitor" (§2.5–2.7, Figs. 2–8) without a driver.
//!
//! A low-priority SCHED_FIFO *consumer* issues one long system call again and again. Before
//! each call it arms a timerfd to expire `offset` after the call's start; a high-priority
//! SCHED_FIFO *producer* blocked on that timerfd is woken by the timer interrupt and records
//! when it runs. PDLT (process dispatch latency) = timer expiry → producer running. While the
//! consumer is inside a non-preemptible stretch of the call the producer waits for its end, so
//! each such stretch shows up as a triangle: highest when the timer fires at its start, falling
//! with slope −1 to the baseline (the plain preemption time) at its end (§2.6). The offset is
//! swept in `step` increments; the call's duration is marked on the x axis.
//!
//! The PCI timer card of the paper is replaced by an hrtimer (timerfd). Its own delivery
//! latency adds to every point equally (the baseline) and does not change the triangles.

use crate::common::reaper::{Reaper, Resource};
use rtscope_sys::knob::{Knob, KnobError};

/// The preemption model of a PREEMPT_DYNAMIC kernel (debugfs).
pub const PREEMPT_FILE: &str = "/sys/kernel/debug/sched/preempt";
use crate::common::rt::{self, Pacer};
use crate::common::{mono_ns, stop_requested, BenchError, Result};
use rtscope_analysis::benchstats::{pdlt_baseline, pdlt_triangles};
use rtscope_model::bench::{PdltPoint, PdltResult, PdltScan};
use rtscope_model::{Histogram, Stats};
use rtscope_sys::mem::PrivateMap;
use rtscope_sys::timer::TimerFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

rtscope_model::request_fields! {
    /// The fields of a scan request ([`Flags`]) as its errors name them.
    pub enum Field in "pdlt" {
        Priority = "priority" => PRIORITY,
        ConsumerPriority = "consumer_priority" => CONSUMER_PRIORITY,
        Syscall = "syscall" => SYSCALL,
        Size = "size" => SIZE,
        Step = "step" => STEP,
        Offsets = "offsets" => OFFSETS,
        Repeats = "repeats" => REPEATS,
        ScratchDir = "scratch_dir" => SCRATCH_DIR,
        Timeout = "timeout" => TIMEOUT,
        Points = "points" => POINTS,
        ComparePreempt = "compare_preempt" => COMPARE_PREEMPT,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syscall {
    /// pread() of a page-cached file of `size` bytes into a locked buffer.
    Read,
    /// munmap() of a populated anonymous mapping of `size` bytes.
    Munmap,
    /// One getdents64() over a directory of `size` entries.
    Getdents,
    /// mmap(MAP_POPULATE) of `size` anonymous bytes (page allocation and zeroing).
    MmapPopulate,
    /// The paper's own test driver (`/dev/rtscope_lab`, the kernel lab's module): a loop of
    /// `size` iterations with `points` preemption points; the interrupt is the driver's device
    /// interrupt, raised at a chosen iteration.
    Driver,
}

pub const SYSCALLS: [(&str, Syscall); 5] = [
    ("read", Syscall::Read),
    ("munmap", Syscall::Munmap),
    ("getdents", Syscall::Getdents),
    ("mmap_populate", Syscall::MmapPopulate),
    ("driver", Syscall::Driver),
];

impl Syscall {
    pub fn parse(s: &str) -> std::result::Result<Syscall, String> {
        SYSCALLS
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, k)| *k)
            .ok_or_else(|| {
                format!(
                    "{SYSCALL}: unknown '{s}' (one of {})",
                    SYSCALLS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
    pub fn name(self) -> &'static str {
        SYSCALLS
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }
    /// Default size: a call of a few hundred µs on current hardware.
    pub fn default_size(self) -> u64 {
        match self {
            Syscall::Read => 8 << 20,
            Syscall::Munmap | Syscall::MmapPopulate => 16 << 20,
            Syscall::Getdents => 20_000,
            Syscall::Driver => DRIVER_LOOPS,
        }
    }
    fn size_range(self) -> (u64, u64) {
        match self {
            Syscall::Getdents => (1, 1_000_000),
            Syscall::Driver => (2, crate::labdev::MAX_LOOPS as u64),
            _ => (4096, 1 << 30),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub cpu: u32,
    pub producer_priority: u32,
    pub consumer_priority: u32,
    pub syscall: Syscall,
    pub size: u64,
    pub step_ns: u64,
    /// Offsets [start, end] in ns; None = from −2 µs to 1.25 × the calibrated call duration.
    pub range_ns: Option<(i64, i64)>,
    pub repeats: u32,
    pub scratch_dir: PathBuf,
    pub compare_preempt: bool,
    pub max_duration_ns: u64,
    /// The test driver's preemption points (`driver` only).
    pub points: u32,
}

/// The test driver's default loop: 50 000 iterations, ~1 ms in the lab's guests under
/// `-icount shift=1` (the paper's 1200 took ~43 µs on a 400 MHz K6; a longer call spreads each
/// triangle over more points of the scan).
pub const DRIVER_LOOPS: u64 = 50_000;

/// At most this many points per scan (offsets × repeats).
pub const MAX_POINTS: u64 = 2_000_000;

impl Config {
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(BenchError::Invalid(m));
        if !(2..=99).contains(&self.producer_priority)
            || self.consumer_priority == 0
            || self.consumer_priority >= self.producer_priority
        {
            return bad(format!(
                "{PRIORITY}/{CONSUMER_PRIORITY}: need 1 <= consumer < producer <= 99, got consumer {} producer {}",
                self.consumer_priority, self.producer_priority
            ));
        }
        let (lo, hi) = self.syscall.size_range();
        if !(lo..=hi).contains(&self.size) {
            return bad(format!(
                "{SIZE}: {} accepts {lo}..={hi}, got {}",
                self.syscall.name(),
                self.size
            ));
        }
        if !(10..=1_000_000_000).contains(&self.step_ns) {
            return bad(format!(
                "{STEP}: must be in 10ns ..= 1s, got {}",
                rtscope_model::duration::human(self.step_ns as f64 / 1e9)
            ));
        }
        if !(1..=10_000).contains(&self.repeats) {
            return bad(format!(
                "{REPEATS}: must be 1..=10000, got {}",
                self.repeats
            ));
        }
        if let Some((a, b)) = self.range_ns {
            if a > b || a < -1_000_000_000 || b > 10_000_000_000 {
                return bad(format!("{OFFSETS}: need START <= END within -1s ..= 10s"));
            }
            let points = ((b - a) as u64 / self.step_ns + 1) * self.repeats as u64;
            if points > MAX_POINTS {
                return bad(format!(
                    "{OFFSETS}/{STEP}/{REPEATS}: {points} points exceed the limit of {MAX_POINTS}"
                ));
            }
        }
        if !self.scratch_dir.is_dir() {
            return bad(format!(
                "{SCRATCH_DIR}: {} is not a directory",
                self.scratch_dir.display()
            ));
        }
        if !(100_000_000..=86_400_000_000_000).contains(&self.max_duration_ns) {
            return bad(format!("{TIMEOUT}: must be 0.1s..=1d"));
        }
        if self.points > 0 && self.syscall != Syscall::Driver {
            return bad(format!(
                "{POINTS}: preemption points belong to the test driver ({SYSCALL} driver), not to {}",
                self.syscall.name()
            ));
        }
        if self.syscall == Syscall::Driver && self.points as u64 >= self.size {
            return bad(format!(
                "{POINTS}: must be 0..={} for a loop of {} iterations, got {}",
                self.size - 1,
                self.size,
                self.points
            ));
        }
        crate::common::check_cpu(self.cpu)
    }
}

/// Read the live preemption model from debugfs: ("full", ["none","voluntary","full","lazy"]).
pub fn read_preempt_models() -> std::io::Result<(String, Vec<String>)> {
    let s = std::fs::read_to_string(PREEMPT_FILE)?;
    let all: Vec<String> = s
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
        .collect();
    let cur = rtscope_probe::system::parse_debugfs_preempt(&s).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("unexpected content of {PREEMPT_FILE}: {s}"),
        )
    })?;
    Ok((cur, all))
}

/// Whether `--compare-preempt` can work here; the error says why not (checked before anything
/// starts).
pub fn check_compare_preempt() -> Result<(String, Vec<String>)> {
    let (cur, all) = read_preempt_models().map_err(|e| {
        BenchError::Unavailable(format!(
            "{COMPARE_PREEMPT}: the preemption model cannot be switched on this machine: reading {PREEMPT_FILE} failed ({e}); \
             it needs a PREEMPT_DYNAMIC kernel with debugfs mounted and writable (before 6.13 also CONFIG_SCHED_DEBUG, which creates the file; kernel lockdown blocks debugfs writes); no scan was run"
        ))
    })?;
    // Writing the current value back is a no-op that proves we may write.
    std::fs::write(PREEMPT_FILE, &cur).map_err(|e| {
        BenchError::Unavailable(format!(
            "{COMPARE_PREEMPT}: the preemption model cannot be switched on this machine: writing {PREEMPT_FILE} failed ({e}; \
             kernel lockdown blocks debugfs writes); no scan was run"
        ))
    })?;
    Ok((cur, all))
}

/// Whether the scan can work on this kernel's timers (checked before anything starts). Under
/// PREEMPT_RT a timerfd's hrtimer is a soft one: it expires in softirq context, which RT runs
/// in a per-CPU thread (`ksoftirqd/N`, SCHED_OTHER, in 6.12; `ktimers/N`, SCHED_FIFO 1, later),
/// not in the interrupt, so the producer is woken only when that thread runs — never while the
/// SCHED_FIFO consumer holds the CPU (in its call or spinning after it).
pub fn check_timers(preempt_rt: bool) -> Result<()> {
    if preempt_rt {
        return Err(BenchError::Unavailable(
            "pdlt cannot scan a PREEMPT_RT kernel: its timerfd expires in a softirq thread (ksoftirqd or ktimers), which the SCHED_FIFO consumer keeps off the CPU, so the producer would wait for the consumer, not for the kernel; no scan was run".into(),
        ));
    }
    Ok(())
}

/// Whether this scan can run on this kernel, checked before anything starts: the driver scan
/// needs the lab's device (missing: bad input); the others a kernel whose timers can drive
/// them ([`check_timers`]). The driver's device interrupt wakes the producer from the hard
/// interrupt itself, so a PREEMPT_RT kernel can be scanned with it.
pub fn check_kernel(cfg: &Config) -> Result<()> {
    if cfg.syscall == Syscall::Driver {
        return match crate::labdev::unavailable() {
            Some(why) => Err(BenchError::Invalid(format!("{SYSCALL} driver: {why}"))),
            None => Ok(()),
        };
    }
    check_timers(rtscope_probe::system::running_preempt_rt())
}

/// The prepared system call and its scratch resources.
struct Prepared {
    kind: Syscall,
    size: usize,
    file: Option<std::fs::File>,
    buf: Vec<u8>,
    dir_fd: Option<std::fs::File>,
    map: Option<PrivateMap>,
}

impl Prepared {
    fn new(cfg: &Config, dir: &Path) -> Result<Prepared> {
        let size = cfg.size as usize;
        let mut p = Prepared {
            kind: cfg.syscall,
            size,
            file: None,
            buf: Vec::new(),
            dir_fd: None,
            map: None,
        };
        match cfg.syscall {
            Syscall::Read => {
                let path = dir.join("data");
                {
                    use std::io::Write;
                    let mut f = std::fs::File::create(&path)
                        .map_err(|e| BenchError::io(format!("creating {}", path.display()), e))?;
                    let chunk = vec![0x5au8; 1 << 20];
                    let mut left = size;
                    while left > 0 {
                        let n = left.min(chunk.len());
                        f.write_all(&chunk[..n]).map_err(|e| {
                            BenchError::io(format!("writing {}", path.display()), e)
                        })?;
                        left -= n;
                    }
                }
                p.file = Some(
                    std::fs::File::open(&path)
                        .map_err(|e| BenchError::io(format!("opening {}", path.display()), e))?,
                );
                p.buf = vec![1u8; size];
            }
            Syscall::Getdents => {
                let d = dir.join("entries");
                std::fs::create_dir(&d)
                    .map_err(|e| BenchError::io(format!("creating {}", d.display()), e))?;
                for i in 0..cfg.size {
                    if stop_requested() {
                        return Err(BenchError::Unavailable(
                            "interrupted while creating the directory".into(),
                        ));
                    }
                    std::fs::File::create(d.join(format!("e{i:07}")))
                        .map_err(|e| BenchError::io("creating directory entries", e))?;
                }
                p.dir_fd = Some(
                    std::fs::File::open(&d)
                        .map_err(|e| BenchError::io(format!("opening {}", d.display()), e))?,
                );
                // ~24 bytes of header + name per entry; room for all in one call.
                p.buf = vec![0u8; (cfg.size as usize * 48).clamp(64 << 10, 256 << 20)];
            }
            Syscall::Munmap | Syscall::MmapPopulate | Syscall::Driver => {}
        }
        Ok(p)
    }

    /// Work outside the timed region before the call.
    #[inline]
    fn before(&mut self) -> Result<()> {
        match self.kind {
            Syscall::Munmap => {
                let m = PrivateMap::populated(self.size)
                    .map_err(|e| BenchError::io("mmap (preparing munmap)", e))?;
                self.map = Some(m);
            }
            Syscall::Getdents => {
                if let Some(mut d) = self.dir_fd.as_ref() {
                    // Rewinding our own directory fd (lseek).
                    let _ = std::io::Seek::seek(&mut d, std::io::SeekFrom::Start(0));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The measured system call.
    #[inline]
    fn call(&mut self) -> Result<()> {
        match self.kind {
            // The driver's scan calls the device itself (scan_driver).
            Syscall::Driver => {}
            Syscall::Read => {
                // pread(2) of `size` bytes at offset 0.
                let f = self
                    .file
                    .as_ref()
                    .ok_or_else(|| BenchError::io("pread", rtscope_sys::einval()))?;
                let size = self.size;
                std::os::unix::fs::FileExt::read_at(f, &mut self.buf[..size], 0)
                    .map_err(|e| BenchError::io("pread", e))?;
            }
            Syscall::Munmap => {
                if let Some(m) = self.map.take() {
                    m.unmap().map_err(|e| BenchError::io("munmap", e))?;
                }
            }
            Syscall::Getdents => {
                let d = self
                    .dir_fd
                    .as_ref()
                    .ok_or_else(|| BenchError::io("getdents64", rtscope_sys::einval()))?;
                rtscope_sys::fs::getdents64(d, &mut self.buf)
                    .map_err(|e| BenchError::io("getdents64", e))?;
            }
            Syscall::MmapPopulate => {
                let m = PrivateMap::populated(self.size)
                    .map_err(|e| BenchError::io("mmap(MAP_POPULATE)", e))?;
                self.map = Some(m);
            }
        }
        Ok(())
    }

    #[inline]
    fn after(&mut self) {
        if self.kind == Syscall::MmapPopulate {
            // Unmapping the mapping the call made.
            self.map = None;
        }
    }
}

/// Offsets of one sweep: monotone non-decreasing, `step` apart.
pub fn sweep(start_ns: i64, end_ns: i64, step_ns: u64) -> Vec<i64> {
    let mut v = Vec::new();
    let mut o = start_ns;
    while o <= end_ns {
        v.push(o);
        o += step_ns as i64;
    }
    v
}

fn arm(tfd: &TimerFd, at_ns: u64) -> Result<()> {
    tfd.arm_at(at_ns)
        .map_err(|e| BenchError::io("timerfd_settime", e))
}

/// One scan under the current preemption model.
fn scan(cfg: &Config, prep: &mut Prepared, model: &str) -> Result<PdltScan> {
    if cfg.syscall == Syscall::Driver {
        return scan_driver(cfg, model);
    }
    let tfd = TimerFd::unarmed(rtscope_sys::clock::Clock::MONOTONIC)
        .map_err(|e| BenchError::io("timerfd_create", e))?;
    let tfd = &tfd;
    let p_run = AtomicU64::new(0);
    let p_seq = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let barrier = std::sync::Barrier::new(2);
    let res = std::thread::scope(|s| {
        let producer = s.spawn(|| -> Result<()> {
            rt::become_fifo(cfg.cpu, cfg.producer_priority)?;
            barrier.wait();
            loop {
                // The 8-byte expiration count.
                let n = tfd.read_once();
                let now = mono_ns();
                if done.load(Ordering::Acquire) {
                    return Ok(());
                }
                if n.is_ok() {
                    p_run.store(now, Ordering::Relaxed);
                    p_seq.fetch_add(1, Ordering::Release);
                }
            }
        });
        let consumer = s.spawn(|| -> Result<(Stats, Vec<PdltPoint>)> {
            let r = (|| {
                rt::become_fifo(cfg.cpu, cfg.consumer_priority)?;
                barrier.wait();
                // Calibrate: the call alone, no timer.
                let mut cal = Histogram::new();
                for _ in 0..20 {
                    prep.before()?;
                    let t1 = mono_ns();
                    prep.call()?;
                    let t2 = mono_ns();
                    prep.after();
                    cal.record((t2 - t1).max(1));
                }
                let cal_stats = Stats::from_histogram(&cal);
                let dur = cal_stats.median_ns.unwrap_or(0);
                let plan = plan(cfg, dur, -2_000, i64::MIN)?;
                let mut points = Vec::with_capacity(plan.len());
                let mut pacer = Pacer::new(cfg.max_duration_ns);
                for (rep, o) in plan {
                    if !paced(&mut pacer) {
                        break;
                    }
                    {
                        prep.before()?;
                        let seq = p_seq.load(Ordering::Acquire);
                        let t0 = mono_ns();
                        let expiry = (t0 as i64 + o).max(1) as u64;
                        arm(tfd, expiry)?;
                        let t1 = mono_ns();
                        prep.call()?;
                        let t2 = mono_ns();
                        await_producer(&p_seq, seq, expiry.max(t2), "of its timer")?;
                        let run = p_run.load(Ordering::Relaxed);
                        prep.after();
                        points.push(PdltPoint {
                            requested_offset_ns: o.max(0) as u64,
                            offset_ns: expiry as i64 - t1 as i64,
                            pdlt_ns: run.saturating_sub(expiry),
                            syscall_ns: t2 - t1,
                            repeat: rep,
                            irt_ns: None,
                        });
                    }
                }
                Ok((cal_stats, points))
            })();
            // Release the producer: arm the timer for "now".
            done.store(true, Ordering::Release);
            let _ = arm(tfd, mono_ns().max(1));
            r
        });
        let c = rt::join(consumer, "pdlt consumer");
        let p = rt::join(producer, "pdlt producer");
        (c, p)
    });
    let (c, p) = res;
    p?;
    let (cal, points) = c?;
    Ok(finish_scan(model, cal, points))
}

fn finish_scan(model: &str, cal: Stats, points: Vec<PdltPoint>) -> PdltScan {
    let baseline = pdlt_baseline(&points);
    let triangles = match baseline {
        // A triangle is at least 2 µs (or 20 % of the baseline) above it and 3 points long.
        Some(b) => pdlt_triangles(&points, b, (b / 5).max(2_000), 3),
        None => Vec::new(),
    };
    PdltScan {
        preempt_model: model.to_string(),
        syscall_calibration: cal,
        max_pdlt_ns: points.iter().map(|p| p.pdlt_ns).max(),
        baseline_pdlt_ns: baseline,
        triangles,
        points,
    }
}

/// A scan's points in order, (repeat, offset ns): from `first_ns` (or `--offsets`, never
/// below `floor_ns`) to 1.25 × the call's calibrated duration + 2 µs in `--step` steps,
/// `--repeats` times; more than [`MAX_POINTS`] is refused.
fn plan(cfg: &Config, call_ns: u64, first_ns: i64, floor_ns: i64) -> Result<Vec<(u32, i64)>> {
    let dur = call_ns as i64;
    let (a, b) = cfg.range_ns.unwrap_or((first_ns, dur + dur / 4 + 2_000));
    let offsets = sweep(a.max(floor_ns), b, cfg.step_ns);
    let total = offsets.len() as u64 * cfg.repeats as u64;
    if total > MAX_POINTS {
        return Err(BenchError::Invalid(format!(
            "the default sweep for a {} µs call at this step is {total} points (> {MAX_POINTS}): raise {STEP} or set {OFFSETS}",
            dur / 1000
        )));
    }
    Ok((0..cfg.repeats)
        .flat_map(|r| offsets.iter().map(move |&o| (r, o)))
        .collect())
}

/// Spin in user space until the producer has recorded a point (`p_seq` moved past `seq`): when
/// the interrupt is still to come, this is the user-space preemption the baseline measures.
/// Bounded: an error when it has not run 50 ms after `from_ns` (`after` says after what).
fn await_producer(p_seq: &AtomicU64, seq: u64, from_ns: u64, after: &str) -> Result<()> {
    let give_up = from_ns + 50_000_000;
    while p_seq.load(Ordering::Acquire) == seq {
        if mono_ns() > give_up {
            return Err(BenchError::Invalid(format!(
                "the producer did not run within 50 ms {after}"
            )));
        }
        std::hint::spin_loop();
    }
    Ok(())
}

/// Whether the scan goes on (its duration cap not reached), after the rest RT throttling needs.
fn paced(pacer: &mut Pacer) -> bool {
    let now = mono_ns();
    if pacer.expired(now) {
        return false;
    }
    pacer.rest_if_due(now);
    true
}

/// The iteration at which a raise `offset_ns` after the loop's start falls, for a loop that
/// takes `call_ns` for `loops` iterations; None past the loop (the raise then comes from user
/// space after the call).
pub fn raise_iteration(offset_ns: i64, call_ns: u64, loops: u32) -> Option<u32> {
    if call_ns == 0 || loops < 2 || offset_ns < 0 || offset_ns as u64 >= call_ns {
        return None;
    }
    let it = (offset_ns as u128 * loops as u128 / call_ns as u128) as u32;
    Some(it.clamp(1, loops - 1))
}

/// The scan with the paper's own driver (§2.7): the consumer runs the driver's loop; the
/// driver raises its device interrupt at the iteration the offset falls on (the paper's PCI
/// timer card hit the call at a controlled time; here the call hits itself at a controlled
/// iteration); the handler wakes the producer, blocked in the driver. PDLT = the raise → the
/// producer back in user space (its first clock read, as the paper's producer stopped its timer
/// first); each point also has the interrupt response (raise → handler). Offsets past the call
/// raise the interrupt from user space after it: the baseline of preempting a user process.
fn scan_driver(cfg: &Config, model: &str) -> Result<PdltScan> {
    use crate::labdev::{Device, PortAccess};
    let dev = Device::open()?;
    let port = PortAccess::get()?;
    let loops = cfg.size as u32;
    let p_user = AtomicU64::new(0);
    let p_isr = AtomicU64::new(0);
    let p_seq = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let barrier = std::sync::Barrier::new(2);
    let (c, p) = std::thread::scope(|s| {
        let producer = s.spawn(|| -> Result<()> {
            rt::become_fifo(cfg.cpu, cfg.producer_priority)?;
            barrier.wait();
            loop {
                let w = dev.wait()?;
                let now = mono_ns();
                if done.load(Ordering::Acquire) {
                    return Ok(());
                }
                if w.timed_out == 0 {
                    p_user.store(now, Ordering::Relaxed);
                    p_isr.store(w.t_isr, Ordering::Relaxed);
                    p_seq.fetch_add(1, Ordering::Release);
                }
            }
        });
        let consumer = s.spawn(|| -> Result<(Stats, Vec<PdltPoint>)> {
            let r = (|| {
                rt::become_fifo(cfg.cpu, cfg.consumer_priority)?;
                barrier.wait();
                // The producer is above us on our CPU: we run only once it is blocked.
                let mut cal = Histogram::new();
                for _ in 0..20 {
                    let r = dev.run(loops, cfg.points, 0)?;
                    cal.record(r.t_end.saturating_sub(r.t_start).max(1));
                }
                let cal_stats = Stats::from_histogram(&cal);
                let dur = cal_stats.median_ns.unwrap_or(0);
                // The driver raises its interrupt itself: nothing before the call's start.
                let plan = plan(cfg, dur, 0, 0)?;
                let mut points = Vec::with_capacity(plan.len());
                let mut pacer = Pacer::new(cfg.max_duration_ns);
                for (rep, o) in plan {
                    if !paced(&mut pacer) {
                        break;
                    }
                    {
                        let seq = p_seq.load(Ordering::Acquire);
                        let (r, t_raise) = match raise_iteration(o, dur, loops) {
                            Some(it) => {
                                let r = dev.run(loops, cfg.points, it)?;
                                (r, r.t_raise)
                            }
                            None => {
                                let r = dev.run(loops, cfg.points, 0)?;
                                let at = r.t_start + o as u64;
                                while mono_ns() < at {
                                    std::hint::spin_loop();
                                }
                                let t = mono_ns();
                                port.raise();
                                (r, t)
                            }
                        };
                        await_producer(&p_seq, seq, mono_ns(), "of the device interrupt")?;
                        let user = p_user.load(Ordering::Relaxed);
                        let isr = p_isr.load(Ordering::Relaxed);
                        points.push(PdltPoint {
                            requested_offset_ns: o.max(0) as u64,
                            offset_ns: t_raise as i64 - r.t_start as i64,
                            pdlt_ns: user.saturating_sub(t_raise),
                            syscall_ns: r.t_end.saturating_sub(r.t_start),
                            repeat: rep,
                            irt_ns: Some(isr.saturating_sub(t_raise)),
                        });
                    }
                }
                Ok((cal_stats, points))
            })();
            // Release the producer: one more interrupt.
            done.store(true, Ordering::Release);
            port.raise();
            r
        });
        (
            rt::join(consumer, "pdlt consumer"),
            rt::join(producer, "pdlt producer"),
        )
    });
    p?;
    let (cal, points) = c?;
    Ok(finish_scan(model, cal, points))
}

/// `progress` is told the preemption model as each scan starts.
pub fn run(cfg: &Config, reaper: &Reaper, mut progress: impl FnMut(&str)) -> Result<PdltResult> {
    cfg.validate()?;
    check_kernel(cfg)?;
    let models = if cfg.compare_preempt {
        Some(check_compare_preempt()?)
    } else {
        None
    };
    rt::lock_memory()?;
    let dir = cfg
        .scratch_dir
        .join(format!("rtscope-pdlt-{}", std::process::id()));
    reaper.register(&Resource::Path(dir.clone()));
    let out = (|| {
        std::fs::create_dir(&dir)
            .map_err(|e| BenchError::io(format!("creating {}", dir.display()), e))?;
        let mut prep = Prepared::new(cfg, &dir)?;
        // Warm the page cache and the buffer.
        prep.before()?;
        prep.call()?;
        prep.after();
        let mut scans = Vec::new();
        let mut notes = Vec::new();
        match &models {
            None => {
                let sys = rtscope_probe::system::capture(&[cfg.cpu]);
                notes.push(format!(
                    "preemption model {} (from {})",
                    sys.preempt_model, sys.preempt_model_source
                ));
                progress(&sys.preempt_model);
                scans.push(scan(cfg, &mut prep, &sys.preempt_model)?);
            }
            Some((orig, all)) => {
                // The model is a journalled Knob; the reaper writes it back at once if we die.
                let mut knob: Option<(Knob, Resource)> = None;
                let r = (|| {
                    for m in all {
                        if stop_requested() {
                            break;
                        }
                        let err = |e: KnobError| match e {
                            KnobError::Write { source, .. } => {
                                BenchError::io(format!("writing {m} to {PREEMPT_FILE}"), source)
                            }
                            other => BenchError::io(
                                format!("writing {m} to {PREEMPT_FILE}"),
                                std::io::Error::other(other.to_string()),
                            ),
                        };
                        match &mut knob {
                            Some((k, _)) => k.write(m).map_err(err)?,
                            None => {
                                let k =
                                    Knob::set_with_original(PREEMPT_FILE, orig, m).map_err(err)?;
                                let entry = k.journal_entry().map(|e| Resource::Knob(e.into()));
                                if let Some(res) = &entry {
                                    reaper.register(res);
                                }
                                knob = entry.map(|res| (k, res));
                            }
                        }
                        progress(m);
                        scans.push(scan(cfg, &mut prep, m)?);
                    }
                    Ok::<(), BenchError>(())
                })();
                if let Some((mut k, res)) = knob {
                    let _ = k.restore();
                    reaper.release(&res);
                }
                notes.push(format!("preemption model restored to {orig}"));
                r?;
            }
        }
        Ok(PdltResult {
            syscall: cfg.syscall.name().to_string(),
            size: cfg.size,
            cpu: cfg.cpu,
            producer_priority: cfg.producer_priority,
            consumer_priority: cfg.consumer_priority,
            step_ns: cfg.step_ns,
            scans,
            notes,
            preemption_points: (cfg.syscall == Syscall::Driver).then_some(cfg.points),
        })
    })();
    reaper.release(&Resource::Path(dir));
    out
}

/// `rtscope pdlt`'s flags as given.
#[derive(Clone, Debug, PartialEq)]
pub struct Flags {
    pub cpus: Option<String>,
    pub priority: u32,
    pub consumer_priority: u32,
    /// read | munmap | getdents | mmap_populate
    pub syscall: String,
    /// Bytes with an optional K/M/G suffix, or directory entries (getdents).
    pub size: Option<String>,
    /// The offset step (10 ns ..= 1 s).
    pub step: Duration,
    /// The offsets scanned, START..=END in ns from the start of the call (signed: a scan
    /// starts before the call; -1 s ..= 10 s).
    pub offsets_ns: Option<(i64, i64)>,
    pub repeats: u32,
    pub scratch_dir: Option<PathBuf>,
    pub compare_preempt: bool,
    /// Cap on each scan's duration (100 ms ..= 1 d).
    pub timeout: Duration,
    /// The test driver's preemption points.
    pub points: u32,
}

impl Flags {
    /// The scan's configuration, checked; bad input names its flag.
    pub fn resolve<V: crate::common::Values>(
        &self,
        v: &V,
    ) -> std::result::Result<Config, V::Error> {
        let syscall = Syscall::parse(&self.syscall).map_err(BenchError::Invalid)?;
        let size = match &self.size {
            Some(s) => parse_size(s)?,
            None => syscall.default_size(),
        };
        let human = |d: Duration| rtscope_model::duration::human(d.as_secs_f64());
        if !(Duration::from_millis(100)..=Duration::from_secs(86_400)).contains(&self.timeout) {
            return Err(BenchError::Invalid(format!(
                "{TIMEOUT}: must be in 100ms ..= 1d, got {}",
                human(self.timeout)
            ))
            .into());
        }
        let cfg = Config {
            cpu: crate::common::one_cpu(v, self.cpus.as_deref())?,
            producer_priority: self.priority,
            consumer_priority: self.consumer_priority,
            syscall,
            size,
            step_ns: u64::try_from(self.step.as_nanos()).unwrap_or(u64::MAX),
            range_ns: self.offsets_ns,
            repeats: self.repeats,
            scratch_dir: self.scratch_dir.clone().unwrap_or_else(std::env::temp_dir),
            compare_preempt: self.compare_preempt,
            max_duration_ns: self.timeout.as_nanos() as u64,
            points: self.points,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// `--size`: a whole number with an optional binary K/M/G/T suffix
/// ([`rtscope_model::size::parse_size`], the one size parser).
pub fn parse_size(s: &str) -> Result<u64> {
    use rtscope_model::size::SizeError;
    rtscope_model::size::parse_size(s).map_err(|e| {
        BenchError::Invalid(match e {
            SizeError::Overflow(_) => format!("{SIZE}: '{s}' is too large"),
            _ => format!("{SIZE}: '{s}' is not a size (a whole number, optional K/M/G suffix)"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_is_monotone_and_stepped() {
        let v = sweep(-2000, 3000, 1000);
        assert_eq!(v, vec![-2000, -1000, 0, 1000, 2000, 3000]);
        assert!(sweep(5, 4, 1).is_empty());
    }

    #[test]
    fn preempt_rt_is_refused() {
        // Which kernels are PREEMPT_RT: rtscope_probe::system::is_preempt_rt's tests.
        assert!(check_timers(false).is_ok());
        let e = check_timers(true).unwrap_err().to_string();
        assert!(e.starts_with("pdlt cannot scan a PREEMPT_RT kernel"), "{e}");
    }

    #[test]
    fn syscall_names() {
        for (n, k) in SYSCALLS {
            assert_eq!(Syscall::parse(n).unwrap(), k);
            assert_eq!(k.name(), n);
        }
        assert!(Syscall::parse("fsync")
            .unwrap_err()
            .contains("read, munmap"));
    }

    #[test]
    fn raise_iterations_follow_the_offset() {
        // A 1000 µs call of 50 000 iterations: 20 ns each.
        assert_eq!(raise_iteration(0, 1_000_000, 50_000), Some(1));
        assert_eq!(raise_iteration(500_000, 1_000_000, 50_000), Some(25_000));
        assert_eq!(raise_iteration(999_999, 1_000_000, 50_000), Some(49_999));
        // Past the call (and before it) the raise is not the driver's.
        assert_eq!(raise_iteration(1_000_000, 1_000_000, 50_000), None);
        assert_eq!(raise_iteration(-1, 1_000_000, 50_000), None);
        assert_eq!(raise_iteration(10, 0, 50_000), None);
    }

    #[test]
    fn validation() {
        let c = Config {
            cpu: 0,
            producer_priority: 80,
            consumer_priority: 70,
            syscall: Syscall::Read,
            size: 1 << 20,
            step_ns: 1000,
            range_ns: None,
            repeats: 1,
            scratch_dir: std::env::temp_dir(),
            compare_preempt: false,
            max_duration_ns: 1_000_000_000,
            points: 0,
        };
        assert!(c.validate().is_ok());
        // Preemption points belong to the driver, and fewer than its iterations.
        let e = Config {
            points: 3,
            ..c.clone()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("⟨pdlt.points⟩:") && e.contains("⟨pdlt.syscall⟩ driver"),
            "{e}"
        );
        let d = Config {
            syscall: Syscall::Driver,
            size: 1200,
            points: 23,
            ..c.clone()
        };
        assert!(d.validate().is_ok());
        let e = Config {
            points: 1200,
            ..d.clone()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "⟨pdlt.points⟩: must be 0..=1199 for a loop of 1200 iterations, got 1200"
        );
        assert!(Config { size: 1, ..d }.validate().is_err());
        assert!(Config {
            consumer_priority: 80,
            ..c.clone()
        }
        .validate()
        .is_err());
        assert!(Config {
            size: 10,
            ..c.clone()
        }
        .validate()
        .is_err());
        assert!(Config {
            step_ns: 0,
            ..c.clone()
        }
        .validate()
        .is_err());
        assert!(Config {
            range_ns: Some((10, 0)),
            ..c.clone()
        }
        .validate()
        .is_err());
        assert!(Config {
            range_ns: Some((0, 9_000_000_000)),
            step_ns: 10,
            ..c.clone()
        }
        .validate()
        .is_err());
        assert!(Config {
            scratch_dir: "/nonexistent/x".into(),
            ..c
        }
        .validate()
        .is_err());
    }

    #[test]
    fn sizes_and_offsets() {
        assert_eq!(parse_size("8M").unwrap(), 8 << 20);
        assert_eq!(parse_size("20000").unwrap(), 20000);
        assert_eq!(
            parse_size("x").unwrap_err().to_string(),
            "⟨pdlt.size⟩: 'x' is not a size (a whole number, optional K/M/G suffix)"
        );
        assert_eq!(
            parse_size("99999999999G").unwrap_err().to_string(),
            "⟨pdlt.size⟩: '99999999999G' is too large"
        );
    }

    #[test]
    fn flags_resolve_to_a_config_or_name_the_flag() {
        let f = Flags {
            cpus: None,
            priority: 80,
            consumer_priority: 70,
            syscall: "munmap".into(),
            size: None,
            step: Duration::from_nanos(1500),
            offsets_ns: Some((-2000, 100_000)),
            repeats: 1,
            scratch_dir: None,
            compare_preempt: false,
            timeout: Duration::from_secs(300),
            points: 0,
        };
        let c = f.resolve(&crate::common::tests::NoMachine).unwrap();
        assert_eq!(c.cpu, crate::common::default_cpu());
        assert_eq!(
            (c.syscall, c.size, c.step_ns),
            (Syscall::Munmap, 16 << 20, 1500)
        );
        assert_eq!(c.range_ns, Some((-2000, 100_000)));
        let rows: Vec<(Flags, &str)> = vec![
            (Flags { step: Duration::ZERO, ..f.clone() }, "⟨pdlt.step⟩: must be in 10ns ..= 1s, got 0ns"),
            (Flags { timeout: Duration::ZERO, ..f.clone() }, "⟨pdlt.timeout⟩: must be in 100ms ..= 1d, got 0ns"),
            (
                Flags { offsets_ns: Some((0, 20_000_000_000)), ..f.clone() },
                "⟨pdlt.offsets⟩: need START <= END within -1s ..= 10s",
            ),
            (
                Flags { cpus: Some("0-1".into()), ..f.clone() },
                "⟨bench.cpu⟩: this benchmark runs on one CPU, got 2 (0-1); give one, e.g. ⟨bench.cpu⟩ 1",
            ),
            (
                Flags { consumer_priority: 90, ..f.clone() },
                "⟨pdlt.priority⟩/⟨pdlt.consumer_priority⟩: need 1 <= consumer < producer <= 99, got consumer 90 producer 80",
            ),
        ];
        for (f, want) in rows {
            let e = f.resolve(&crate::common::tests::NoMachine).unwrap_err();
            assert!(matches!(&e, BenchError::Invalid(_)));
            assert_eq!(e.to_string(), want);
        }
    }
}
