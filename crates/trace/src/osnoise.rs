//! The kernel's osnoise and timerlat tracers (kernel/trace/trace_osnoise.c): their ring-buffer
//! entries decoded from the raw pages ([`crate::tracefs::walk_page`]) and summed per CPU as they
//! are read, so memory stays constant however long the run ([`TimerlatAgg`], [`NoiseAgg`]);
//! and the session that sets the tracers up in a private instance and puts every global
//! setting back ([`OsnoiseSession`]).
//!
//! What is decoded:
//! - `ftrace:timerlat` — the timerlat tracer's own entry, one per sample: `seqnum` (the
//!   activation), `context` (0 = IRQ, 1 = thread, 2 = return to a user-space workload) and
//!   `timer_latency` in ns. This is what `rtla timerlat` reads (6.12 has no separate
//!   `osnoise:timerlat_sample` tracepoint; later kernels add one with the same fields).
//! - `ftrace:osnoise` — the osnoise tracer's entry, one per period: `runtime`, `noise`,
//!   `max_sample` and the interference counts; what `rtla osnoise top` sums.
//! - `osnoise:{irq,softirq,thread,nmi}_noise` and `osnoise:sample_threshold` — each
//!   interference with its duration, and each noise above the threshold.

use crate::tracefs::{
    parse_format, rd, read_pages, read_text, walk_page, Field, Format, HeaderPage,
};
use crate::TraceError;
use rtscope_model::bench::BenchHistogram;
use rtscope_model::histogram::LinearHistogram;
use rtscope_model::noise::{NoiseCpu, NoiseResult, NoiseSource};
use rtscope_model::timerlat::{TimerlatCpu, TimerlatResult};
use rtscope_model::{Histogram, SampleRef, Stats};
use rtscope_sys::knob::{Knob, KnobError};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

// ---------- decoding ----------

/// One decoded tracer entry or event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OsnEvent {
    Timerlat {
        seqnum: u32,
        /// 0 IRQ, 1 thread, 2 return to user.
        context: i32,
        latency_ns: u64,
    },
    Osnoise {
        runtime_us: u64,
        noise_us: u64,
        max_sample_us: u64,
        hw: u64,
        nmi: u64,
        irq: u64,
        softirq: u64,
        thread: u64,
    },
    IrqNoise {
        desc: String,
        vector: u64,
        duration_ns: u64,
    },
    SoftirqNoise {
        vector: u64,
        duration_ns: u64,
    },
    ThreadNoise {
        comm: String,
        pid: u64,
        duration_ns: u64,
    },
    NmiNoise {
        duration_ns: u64,
    },
    SampleThreshold {
        duration_ns: u64,
        interference: u64,
    },
}

#[derive(Clone, Debug)]
enum Dec {
    Timerlat {
        seqnum: Field,
        context: Field,
        latency: Field,
    },
    Osnoise {
        fields: [Field; 8],
    },
    Irq {
        desc: Field,
        vector: Field,
        duration: Field,
    },
    Softirq {
        vector: Field,
        duration: Field,
    },
    Thread {
        comm: Field,
        pid: Field,
        duration: Field,
    },
    Nmi {
        duration: Field,
    },
    Threshold {
        duration: Field,
        interference: Field,
    },
}

/// The entries and events of the two tracers, as (system, name).
pub const TIMERLAT_EVENTS: &[(&str, &str)] = &[("ftrace", "timerlat")];
pub const NOISE_EVENTS: &[(&str, &str)] = &[
    ("ftrace", "osnoise"),
    ("osnoise", "irq_noise"),
    ("osnoise", "softirq_noise"),
    ("osnoise", "thread_noise"),
    ("osnoise", "nmi_noise"),
    ("osnoise", "sample_threshold"),
];

/// Decoders by entry id, built from the format files.
#[derive(Clone, Debug, Default)]
pub struct OsnDecoders {
    by_id: BTreeMap<u16, Dec>,
}

impl OsnDecoders {
    pub fn add(&mut self, name: &str, f: &Format) -> Result<(), String> {
        let g = |n: &str| f.field(name, n);
        let dec = match name {
            "timerlat" | "timerlat_sample" => Dec::Timerlat {
                seqnum: g("seqnum")?,
                context: g("context")?,
                latency: g("timer_latency")?,
            },
            "osnoise" | "osnoise_sample" => Dec::Osnoise {
                fields: [
                    g("runtime")?,
                    g("noise")?,
                    g("max_sample")?,
                    g("hw_count")?,
                    g("nmi_count")?,
                    g("irq_count")?,
                    g("softirq_count")?,
                    g("thread_count")?,
                ],
            },
            "irq_noise" => Dec::Irq {
                desc: g("desc")?,
                vector: g("vector")?,
                duration: g("duration")?,
            },
            "softirq_noise" => Dec::Softirq {
                vector: g("vector")?,
                duration: g("duration")?,
            },
            "thread_noise" => Dec::Thread {
                comm: g("comm")?,
                pid: g("pid")?,
                duration: g("duration")?,
            },
            "nmi_noise" => Dec::Nmi {
                duration: g("duration")?,
            },
            "sample_threshold" => Dec::Threshold {
                duration: g("duration")?,
                interference: g("interference")?,
            },
            n => return Err(format!("no decoder for osnoise entry {n}")),
        };
        self.by_id.insert(f.id, dec);
        Ok(())
    }

    /// Decode one payload (starting with `common_type`). None: not one of ours, or truncated.
    pub fn decode(&self, data: &[u8]) -> Option<OsnEvent> {
        let id = u16::from_le_bytes([*data.first()?, *data.get(1)?]);
        let r = |f: Field| rd(data, f);
        Some(match self.by_id.get(&id)? {
            Dec::Timerlat {
                seqnum,
                context,
                latency,
            } => OsnEvent::Timerlat {
                seqnum: r(*seqnum)? as u32,
                context: r(*context)? as u32 as i32,
                latency_ns: r(*latency)?,
            },
            Dec::Osnoise { fields: f } => OsnEvent::Osnoise {
                runtime_us: r(f[0])?,
                noise_us: r(f[1])?,
                max_sample_us: r(f[2])?,
                hw: r(f[3])?,
                nmi: r(f[4])?,
                irq: r(f[5])?,
                softirq: r(f[6])?,
                thread: r(f[7])?,
            },
            Dec::Irq {
                desc,
                vector,
                duration,
            } => OsnEvent::IrqNoise {
                desc: data_loc_str(data, *desc)?,
                vector: r(*vector)?,
                duration_ns: r(*duration)?,
            },
            Dec::Softirq { vector, duration } => OsnEvent::SoftirqNoise {
                vector: r(*vector)?,
                duration_ns: r(*duration)?,
            },
            Dec::Thread {
                comm,
                pid,
                duration,
            } => OsnEvent::ThreadNoise {
                comm: fixed_str(data, *comm)?,
                pid: r(*pid)?,
                duration_ns: r(*duration)?,
            },
            Dec::Nmi { duration } => OsnEvent::NmiNoise {
                duration_ns: r(*duration)?,
            },
            Dec::Threshold {
                duration,
                interference,
            } => OsnEvent::SampleThreshold {
                duration_ns: r(*duration)?,
                interference: r(*interference)?,
            },
        })
    }
}

fn fixed_str(data: &[u8], f: Field) -> Option<String> {
    let b = data.get(f.offset..f.offset + f.size)?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Some(String::from_utf8_lossy(&b[..end]).into_owned())
}

/// A `__data_loc char[]` field: a u32 whose low 16 bits are the string's offset in the entry and
/// whose high 16 bits its length (with the NUL).
fn data_loc_str(data: &[u8], f: Field) -> Option<String> {
    let loc = rd(data, f)? as u32;
    let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
    fixed_str(
        data,
        Field {
            offset: off,
            size: len,
        },
    )
}

/// Softirq names by vector (include/linux/interrupt.h, `softirq_to_name`).
pub fn softirq_name(vec: u64) -> String {
    const NAMES: [&str; 10] = [
        "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
        "RCU",
    ];
    NAMES
        .get(vec as usize)
        .map_or_else(|| format!("softirq{vec}"), |n| n.to_string())
}

/// Decode a page and hand each entry to `f(ts_ns, event)`; the page's statistics back.
pub fn read_page(
    page: &[u8],
    hp: &HeaderPage,
    dec: &OsnDecoders,
    mut f: impl FnMut(u64, OsnEvent),
) -> Result<crate::tracefs::PageStats, String> {
    walk_page(page, hp, |ts, payload| match dec.decode(payload) {
        Some(ev) => {
            f(ts, ev);
            true
        }
        None => false,
    })
}

// ---------- aggregation ----------

/// The worst thread samples kept per CPU.
const WORST: usize = 10;

#[derive(Clone, Debug)]
struct CpuTl {
    irq: Histogram,
    thread: Histogram,
    last_irq_seq: Option<u32>,
    seq_gaps: u64,
    /// Sequence number of the last IRQ sample still waiting for its thread sample.
    open_irq: Option<u32>,
    irq_without_thread: u64,
    worst: Vec<SampleRef>,
    /// The thread latency in 1 µs bins (cyclictest's -h view).
    linear: LinearHistogram,
}

/// One CPU's distributions as the record wants them.
#[derive(Clone, Debug)]
pub struct CpuHistograms {
    pub cpu: u32,
    pub irq: Histogram,
    pub thread: Histogram,
    pub thread_linear: LinearHistogram,
    /// The worst thread samples, largest first (`cycle` is the activation's `seqnum`).
    pub worst: Vec<SampleRef>,
}

/// timerlat samples summed per CPU (constant memory: histograms and a few counters each).
#[derive(Clone, Debug)]
pub struct TimerlatAgg {
    cpus: BTreeMap<u32, CpuTl>,
    linear_max_us: u32,
}

impl TimerlatAgg {
    /// `linear_max_us`: size of the 1 µs thread-latency histogram.
    pub fn new(cpus: &[u32], linear_max_us: u32) -> TimerlatAgg {
        let mut a = TimerlatAgg {
            cpus: BTreeMap::new(),
            linear_max_us,
        };
        for &c in cpus {
            a.cpus.insert(c, a.cpu_state());
        }
        a
    }

    fn cpu_state(&self) -> CpuTl {
        CpuTl {
            irq: Histogram::new(),
            thread: Histogram::new(),
            last_irq_seq: None,
            seq_gaps: 0,
            open_irq: None,
            irq_without_thread: 0,
            worst: Vec::new(),
            linear: LinearHistogram::new(self.linear_max_us),
        }
    }

    /// One entry of `cpu`, in that CPU's order. Entries of other kinds are ignored.
    pub fn push(&mut self, cpu: u32, ts_ns: u64, ev: &OsnEvent) {
        let OsnEvent::Timerlat {
            seqnum,
            context,
            latency_ns,
        } = *ev
        else {
            return;
        };
        if !self.cpus.contains_key(&cpu) {
            let st = self.cpu_state();
            self.cpus.insert(cpu, st);
        }
        let Some(c) = self.cpus.get_mut(&cpu) else {
            return;
        };
        match context {
            0 => {
                if let Some(prev) = c.last_irq_seq {
                    c.seq_gaps += seq_gap(prev, seqnum);
                }
                c.last_irq_seq = Some(seqnum);
                if c.open_irq.replace(seqnum).is_some() {
                    c.irq_without_thread += 1;
                }
                c.irq.record(latency_ns);
            }
            1 => {
                if c.open_irq == Some(seqnum) {
                    c.open_irq = None;
                }
                c.thread.record(latency_ns);
                c.linear.record(latency_ns);
                let s = SampleRef {
                    cpu,
                    tid: 0,
                    cycle: u64::from(seqnum),
                    // The timer's expiry: the thread sample is stamped when the thread runs.
                    expected_ns: ts_ns.saturating_sub(latency_ns),
                    latency_ns,
                };
                if c.worst.len() < WORST {
                    c.worst.push(s);
                } else if let Some((i, m)) =
                    c.worst.iter().enumerate().min_by_key(|(_, w)| w.latency_ns)
                {
                    if m.latency_ns < latency_ns {
                        c.worst[i] = s;
                    }
                }
            }
            _ => {}
        }
    }

    /// Per CPU so far: (cpu, samples, IRQ max, thread max), for a progress line.
    pub fn maxima(&self) -> Vec<(u32, u64, Option<u64>, Option<u64>)> {
        self.cpus
            .iter()
            .map(|(&cpu, c)| (cpu, c.thread.count(), c.irq.max_ns(), c.thread.max_ns()))
            .collect()
    }

    /// Per CPU, in CPU order.
    pub fn histograms(&self) -> Vec<CpuHistograms> {
        self.cpus
            .iter()
            .map(|(&cpu, c)| {
                let mut worst = c.worst.clone();
                worst.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.cycle.cmp(&b.cycle)));
                CpuHistograms {
                    cpu,
                    irq: c.irq.clone(),
                    thread: c.thread.clone(),
                    thread_linear: c.linear.clone(),
                    worst,
                }
            })
            .collect()
    }

    /// The section of the record; `lost` per CPU from the ring buffer's counters.
    pub fn result(
        &self,
        period_us: u64,
        thread_priority: Option<i32>,
        lost: &BTreeMap<u32, u64>,
    ) -> TimerlatResult {
        let cpus: Vec<TimerlatCpu> = self
            .cpus
            .iter()
            .map(|(&cpu, c)| TimerlatCpu {
                cpu,
                irq_stats: Stats::from_histogram(&c.irq),
                irq: BenchHistogram(c.irq.clone()),
                thread_stats: Stats::from_histogram(&c.thread),
                thread: BenchHistogram(c.thread.clone()),
                seq_gaps: c.seq_gaps,
                // The last activation's thread sample may simply not have happened yet.
                irq_without_thread: c.irq_without_thread,
                lost_events: lost.get(&cpu).copied().unwrap_or(0),
            })
            .collect();
        TimerlatResult {
            period_us,
            thread_priority,
            lost_events: cpus.iter().map(|c| c.lost_events).sum(),
            cpus,
        }
    }
}

/// osnoise entries and noise events summed per CPU and per source.
#[derive(Clone, Debug, Default)]
pub struct NoiseAgg {
    cpus: BTreeMap<u32, NoiseCpu>,
    /// (cpu, kind, name) → source.
    sources: BTreeMap<(u32, &'static str, String), NoiseSource>,
}

impl NoiseAgg {
    pub fn new(cpus: &[u32]) -> NoiseAgg {
        NoiseAgg {
            cpus: cpus
                .iter()
                .map(|&cpu| {
                    (
                        cpu,
                        NoiseCpu {
                            cpu,
                            ..Default::default()
                        },
                    )
                })
                .collect(),
            sources: BTreeMap::new(),
        }
    }

    fn source(&mut self, cpu: u32, kind: &'static str, name: String, id: u64, d: u64) {
        let s = self
            .sources
            .entry((cpu, kind, name.clone()))
            .or_insert_with(|| NoiseSource {
                cpu,
                kind: kind.into(),
                name,
                ..Default::default()
            });
        s.id = id;
        s.count += 1;
        s.total_ns += d;
        s.max_ns = s.max_ns.max(d);
    }

    pub fn push(&mut self, cpu: u32, ev: &OsnEvent) {
        match ev {
            OsnEvent::Osnoise {
                runtime_us,
                noise_us,
                max_sample_us,
                hw,
                nmi,
                irq,
                softirq,
                thread,
            } => {
                let c = self.cpus.entry(cpu).or_insert_with(|| NoiseCpu {
                    cpu,
                    ..Default::default()
                });
                c.periods += 1;
                c.runtime_us += runtime_us;
                c.noise_us += noise_us;
                c.max_period_noise_us = c.max_period_noise_us.max(*noise_us);
                c.max_single_noise_us = c.max_single_noise_us.max(*max_sample_us);
                c.hw_count += hw;
                c.nmi_count += nmi;
                c.irq_count += irq;
                c.softirq_count += softirq;
                c.thread_count += thread;
            }
            OsnEvent::IrqNoise {
                desc,
                vector,
                duration_ns,
            } => self.source(cpu, "irq", desc.clone(), *vector, *duration_ns),
            OsnEvent::SoftirqNoise {
                vector,
                duration_ns,
            } => self.source(cpu, "softirq", softirq_name(*vector), *vector, *duration_ns),
            OsnEvent::ThreadNoise {
                comm,
                pid,
                duration_ns,
            } => self.source(cpu, "thread", comm.clone(), *pid, *duration_ns),
            OsnEvent::NmiNoise { duration_ns } => {
                self.source(cpu, "nmi", "nmi".into(), 0, *duration_ns)
            }
            OsnEvent::SampleThreshold { .. } => {
                if let Some(c) = self.cpus.get_mut(&cpu) {
                    c.threshold_samples += 1;
                }
            }
            OsnEvent::Timerlat { .. } => {}
        }
    }

    /// Per-CPU rows so far (for the live view).
    pub fn rows(&self) -> Vec<NoiseCpu> {
        self.cpus
            .values()
            .map(|c| {
                let mut c = c.clone();
                c.cpu_available_pct = available_pct(c.runtime_us, c.noise_us);
                c
            })
            .collect()
    }

    pub fn result(
        &self,
        (period_us, runtime_us): (u64, u64),
        (threshold_us, stop_us): (Option<u64>, Option<u64>),
        stopped_by_tracer: bool,
        lost: &BTreeMap<u32, u64>,
    ) -> NoiseResult {
        let mut cpus = self.rows();
        for c in &mut cpus {
            c.lost_events = lost.get(&c.cpu).copied().unwrap_or(0);
        }
        let mut sources: Vec<NoiseSource> = self.sources.values().cloned().collect();
        sources.sort_by(|a, b| {
            a.cpu
                .cmp(&b.cpu)
                .then(b.total_ns.cmp(&a.total_ns))
                .then(a.kind.cmp(&b.kind))
                .then(a.name.cmp(&b.name))
        });
        NoiseResult {
            period_us,
            runtime_us,
            threshold_us,
            stop_us,
            stopped_by_tracer,
            lost_events: cpus.iter().map(|c| c.lost_events).sum(),
            cpus,
            sources,
        }
    }
}

/// 100 × (runtime − noise) / runtime, as `rtla osnoise top`'s "% CPU Aval" (100 when no
/// runtime was recorded).
pub fn available_pct(runtime_us: u64, noise_us: u64) -> f64 {
    if runtime_us == 0 {
        return 100.0;
    }
    100.0 * runtime_us.saturating_sub(noise_us) as f64 / runtime_us as f64
}

// ---------- the session ----------

/// Which tracer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tracer {
    Timerlat,
    Osnoise,
}

impl Tracer {
    pub fn name(self) -> &'static str {
        match self {
            Tracer::Timerlat => "timerlat",
            Tracer::Osnoise => "osnoise",
        }
    }
}

/// The tracer's settings for a run (µs; None leaves the kernel's value).
#[derive(Clone, Debug, Default)]
pub struct OsnoiseConfig {
    pub cpus: Vec<u32>,
    pub timerlat_period_us: Option<u64>,
    pub period_us: Option<u64>,
    pub runtime_us: Option<u64>,
    /// `tracing_thresh`.
    pub threshold_us: Option<u64>,
    /// `osnoise/stop_tracing_us`.
    pub stop_us: Option<u64>,
}

/// The global files a run may write (under the tracefs root), each change a journalled
/// `Knob` written back on every exit path. `osnoise/*` is shared by every instance running the tracers, and
/// `tracing_thresh` by every latency tracer.
pub const SAVED_FILES: &[&str] = &[
    "osnoise/cpus",
    "osnoise/period_us",
    "osnoise/runtime_us",
    "osnoise/stop_tracing_us",
    "osnoise/stop_tracing_total_us",
    "osnoise/timerlat_period_us",
    "osnoise/print_stack",
    "tracing_thresh",
];

/// Does this kernel offer the tracer? Err: one line naming what is missing.
pub fn check_tracer(t: Tracer) -> Result<(), String> {
    let root = Path::new(crate::tracefs::TRACEFS);
    let avail = read_text(&root.join("available_tracers")).map_err(|e| {
        format!(
            "the {} tracer is not available: {}/available_tracers cannot be read ({e})",
            t.name(),
            root.display()
        )
    })?;
    if avail.split_whitespace().any(|n| n == t.name()) {
        Ok(())
    } else {
        Err(format!(
            "the {} tracer is not available: this kernel was built without CONFIG_{}_TRACER (available: {})",
            t.name(),
            t.name().to_uppercase(),
            avail.trim()
        ))
    }
}

/// A tracer running in a private tracefs instance (`instances/rtscope-<pid>-osnoise`), read
/// page by page. Drop stops it, removes the instance and writes every saved global back.
pub struct OsnoiseSession {
    root: PathBuf,
    inst: PathBuf,
    /// The global settings changed, in the order they were written.
    knobs: Vec<Knob>,
    files: Vec<(u32, File)>,
    hp: HeaderPage,
    dec: OsnDecoders,
    page: Vec<u8>,
    missed: BTreeMap<u32, u64>,
    pub cpus: Vec<u32>,
    pub notes: Vec<String>,
    restored: bool,
}

fn wr(path: &Path, v: &str) -> Result<(), TraceError> {
    std::fs::write(path, v)
        .map_err(|e| TraceError::Setup(format!("writing '{v}' to {}: {e}", path.display())))
}

/// A CPU list (`0-1,3`) as its set; None when it does not parse.
pub fn parse_cpulist(s: &str) -> Option<std::collections::BTreeSet<u32>> {
    let mut out = std::collections::BTreeSet::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                out.extend(a.trim().parse::<u32>().ok()?..=b.trim().parse::<u32>().ok()?)
            }
            None => {
                out.insert(part.trim().parse::<u32>().ok()?);
            }
        }
    }
    Some(out)
}

/// Does the file already hold `v`? CPU lists compare as sets (`0-1` is `0,1`).
fn holds(path: &Path, v: &str) -> bool {
    let Ok(cur) = read_text(path) else {
        return false;
    };
    let cur = cur.trim();
    cur == v.trim()
        || (path.ends_with("osnoise/options") && cur.split_whitespace().any(|w| w == v.trim()))
        || (path.ends_with("osnoise/cpus")
            && parse_cpulist(cur).is_some()
            && parse_cpulist(cur) == parse_cpulist(v))
}

/// Write only a changed value: a write to `osnoise/cpus` restarts the tracer's threads, and so
/// cuts the period under way for every instance running it (another tool's too). A change is a
/// journalled [`Knob`] (written back on every exit path, by the next run after a SIGKILL).
fn wr_changed(knobs: &mut Vec<Knob>, path: &Path, v: &str) -> Result<(), TraceError> {
    if holds(path, v) {
        return Ok(());
    }
    knobs.push(Knob::set(path, v).map_err(knob_err)?);
    Ok(())
}

fn knob_err(e: KnobError) -> TraceError {
    match e {
        KnobError::Write {
            path,
            value,
            source,
        } => TraceError::Setup(format!("writing '{value}' to {}: {source}", path.display())),
        other => TraceError::Setup(other.to_string()),
    }
}

impl OsnoiseSession {
    pub fn start(t: Tracer, cfg: &OsnoiseConfig) -> Result<OsnoiseSession, TraceError> {
        check_tracer(t).map_err(TraceError::Unavailable)?;
        let root = PathBuf::from(crate::tracefs::TRACEFS);
        let _ = crate::tracefs::remove_stale_instances(&root);
        let _ = restore_stale(&root);
        let inst = root
            .join("instances")
            .join(format!("rtscope-{}-osnoise", std::process::id()));
        std::fs::create_dir(&inst).map_err(|e| {
            TraceError::Setup(format!("creating tracefs instance {}: {e}", inst.display()))
        })?;
        let mut s = OsnoiseSession {
            root,
            inst,
            knobs: Vec::new(),
            files: Vec::new(),
            hp: HeaderPage {
                commit_offset: 8,
                commit_size: 8,
                data_offset: 16,
            },
            dec: OsnDecoders::default(),
            page: Vec::new(),
            missed: BTreeMap::new(),
            cpus: cfg.cpus.clone(),
            notes: Vec::new(),
            restored: false,
        };
        // On any error below, dropping `s` puts everything back.
        s.setup(t, cfg)?;
        Ok(s)
    }

    fn setup(&mut self, t: Tracer, cfg: &OsnoiseConfig) -> Result<(), TraceError> {
        let (root, inst) = (self.root.clone(), self.inst.clone());
        wr(&inst.join("tracing_on"), "0")?;
        wr(&inst.join("trace_clock"), "mono")?;
        wr(&inst.join("options/overwrite"), "0")?;
        wr(&inst.join("buffer_size_kb"), "2048")?;
        let list = self
            .cpus
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let knobs = &mut self.knobs;
        wr_changed(knobs, &root.join("osnoise/cpus"), &list)?;
        let mut set = |f: &str, v: Option<u64>| match v {
            Some(v) => wr_changed(knobs, &root.join(f), &v.to_string()),
            None => Ok(()),
        };
        // period before runtime: the kernel refuses a runtime above the current period.
        if let (Some(p), Some(r)) = (cfg.period_us, cfg.runtime_us) {
            let cur = read_text(&root.join("osnoise/period_us"))
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .unwrap_or(0);
            if r > cur {
                set("osnoise/period_us", Some(p))?;
                set("osnoise/runtime_us", Some(r))?;
            } else {
                set("osnoise/runtime_us", Some(r))?;
                set("osnoise/period_us", Some(p))?;
            }
        } else {
            set("osnoise/period_us", cfg.period_us)?;
            set("osnoise/runtime_us", cfg.runtime_us)?;
        }
        set("osnoise/timerlat_period_us", cfg.timerlat_period_us)?;
        set("tracing_thresh", cfg.threshold_us)?;
        set("osnoise/stop_tracing_us", Some(cfg.stop_us.unwrap_or(0)))?;
        set("osnoise/stop_tracing_total_us", Some(0))?;
        set("osnoise/print_stack", Some(0))?;
        // Without OSNOISE_WORKLOAD (left off by a user-space timerlat workload, `rtla -u`) the
        // kernel starts no threads of its own and nothing is measured.
        let opts = root.join("osnoise/options");
        if read_text(&opts).is_ok_and(|o| o.split_whitespace().any(|w| w == "NO_OSNOISE_WORKLOAD"))
        {
            let k = Knob::set_with_original(&opts, "NO_OSNOISE_WORKLOAD", "OSNOISE_WORKLOAD")
                .map_err(knob_err)?;
            self.knobs.push(k);
        }
        let hp_text = read_text(&root.join("events/header_page"))
            .map_err(|e| TraceError::Setup(format!("reading events/header_page: {e}")))?;
        self.hp = crate::tracefs::parse_header_page(&hp_text).map_err(TraceError::Setup)?;
        let events = match t {
            Tracer::Timerlat => TIMERLAT_EVENTS,
            Tracer::Osnoise => NOISE_EVENTS,
        };
        for (sys, name) in events {
            let dir = inst.join("events").join(sys).join(name);
            let text = read_text(&dir.join("format")).map_err(|e| {
                TraceError::Setup(format!("tracefs: {sys}:{name} has no format file: {e}"))
            })?;
            let f = parse_format(&text).map_err(TraceError::Setup)?;
            self.dec.add(name, &f).map_err(TraceError::Setup)?;
            // The tracer writes its own entries; only real events have an enable switch.
            if *sys != "ftrace" {
                wr(&dir.join("enable"), "1")?;
            }
        }
        let subbuf_kb = read_text(&inst.join("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(4);
        self.page = vec![0u8; subbuf_kb * 1024];
        wr(&inst.join("tracing_on"), "1")?;
        // Setting the tracer starts its per-CPU threads. The kernel refuses a tracer change
        // while a reader holds the instance's pipes (EBUSY): the pipes are opened after.
        wr(&inst.join("current_tracer"), t.name())?;
        for &c in &self.cpus {
            let p = inst.join(format!("per_cpu/cpu{c}/trace_pipe_raw"));
            let f = rtscope_sys::fs::open_read_nonblocking(&p)
                .map_err(|e| TraceError::Setup(format!("opening {}: {e}", p.display())))?;
            self.files.push((c, f));
        }
        Ok(())
    }

    /// Read everything committed so far; `f(cpu, ts_ns, event)` per entry, each CPU in order.
    pub fn poll(&mut self, f: impl FnMut(u32, u64, OsnEvent)) -> Result<(), TraceError> {
        self.poll_for(None, &|| false, f).map(|_| ())
    }

    /// Read what is committed, a page of each CPU in turn, until every CPU's buffer is empty
    /// (true), or `budget` has passed or `stop()` says so (false: pages are left). While the
    /// tracer writes faster than its entries are read, a read to the empty buffer does not
    /// end: in the lab's TCG guest the osnoise tracer's sampling loop is slow enough that
    /// nearly every sample passes its 1-µs threshold (`tracing_thresh` 0), and the
    /// `sample_threshold` events (~280 000 a guest second) outran a debug build's decoding for
    /// 13.7 s (docs/reliability.md).
    pub fn poll_for(
        &mut self,
        budget: Option<std::time::Duration>,
        stop: &dyn Fn() -> bool,
        mut f: impl FnMut(u32, u64, OsnEvent),
    ) -> Result<bool, TraceError> {
        let t0 = std::time::Instant::now();
        let (hp, dec, missed) = (&self.hp, &self.dec, &mut self.missed);
        let mut pending: Vec<bool> = vec![true; self.files.len()];
        while pending.iter().any(|&p| p) {
            if budget.is_some_and(|b| t0.elapsed() >= b) || stop() {
                return Ok(false);
            }
            for (i, (cpu, file)) in self.files.iter_mut().enumerate() {
                if !pending[i] {
                    continue;
                }
                let c = *cpu;
                let mut got = false;
                read_pages(c, file, &mut self.page, |p| {
                    got = true;
                    let st = read_page(p, hp, dec, |ts, ev| f(c, ts, ev))?;
                    *missed.entry(c).or_default() += st.missed;
                    // One page, then the next CPU's.
                    Ok(false)
                })
                .map_err(TraceError::Capture)?;
                pending[i] = got;
            }
        }
        Ok(true)
    }

    /// The tracer turned its instance's tracing off itself (`stop_tracing_us` reached).
    pub fn stopped_by_tracer(&self) -> bool {
        read_text(&self.inst.join("tracing_on"))
            .map(|s| s.trim() == "0")
            .unwrap_or(false)
    }

    /// Stop recording, read what is left, then stop the tracer (its threads end); lost events
    /// per CPU.
    pub fn stop(
        &mut self,
        f: impl FnMut(u32, u64, OsnEvent),
    ) -> Result<BTreeMap<u32, u64>, TraceError> {
        // Recording off, then the rest read: changing the tracer empties the buffer.
        let _ = std::fs::write(self.inst.join("tracing_on"), "0");
        self.poll(f)?;
        let lost = self.lost();
        // The kernel refuses a tracer change while the instance's pipes are open (EBUSY).
        self.files.clear();
        let _ = std::fs::write(self.inst.join("current_tracer"), "nop");
        Ok(lost)
    }

    /// Lost events per CPU: the instance's overrun + dropped counts, or the missed counts the
    /// pages carried, whichever is larger.
    pub fn lost(&self) -> BTreeMap<u32, u64> {
        let mut lost = BTreeMap::new();
        for &c in &self.cpus {
            let stats =
                read_text(&self.inst.join(format!("per_cpu/cpu{c}/stats"))).unwrap_or_default();
            let n: u64 = stats
                .lines()
                .filter_map(|l| {
                    l.strip_prefix("overrun:")
                        .or_else(|| l.strip_prefix("dropped events:"))
                })
                .filter_map(|v| v.trim().parse::<u64>().ok())
                .sum();
            lost.insert(c, n.max(self.missed.get(&c).copied().unwrap_or(0)));
        }
        lost
    }

    /// Pids of the tracer's per-CPU kernel threads (`timerlat/N`, `osnoise/N`), by CPU.
    pub fn threads(t: Tracer) -> BTreeMap<u32, u32> {
        let mut out = BTreeMap::new();
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return out;
        };
        let prefix = format!("{}/", t.name());
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if let Some(cpu) = comm
                .trim()
                .strip_prefix(&prefix)
                .and_then(|c| c.parse::<u32>().ok())
            {
                out.insert(cpu, pid);
            }
        }
        out
    }

    /// Put everything back: the tracer off, the instance removed, the changed globals written back.
    /// Errors are collected as lines (one per file that could not be restored).
    pub fn restore(&mut self) -> Vec<String> {
        if self.restored {
            return Vec::new();
        }
        self.restored = true;
        let mut errs = Vec::new();
        let _ = std::fs::write(self.inst.join("tracing_on"), "0");
        self.files.clear();
        let _ = std::fs::write(self.inst.join("current_tracer"), "nop");
        for _ in 0..100 {
            match std::fs::remove_dir(&self.inst) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        if self.inst.exists() {
            errs.push(format!("could not remove {}", self.inst.display()));
        }
        // Last changed first: the reverse of a sequence the kernel accepted (runtime ≤ period at
        // every step) is accepted too.
        for k in self.knobs.iter_mut().rev() {
            if let Err(e) = k.restore() {
                errs.push(e.to_string());
            }
        }
        errs
    }
}

/// The settings of osnoise/timerlat runs that were killed outright, written back: the knob
/// journal's repair ([`rtscope_sys::knob::repair_stale`]); what was done, one line each. Their
/// instances are removed first by [`crate::tracefs::remove_stale_instances`].
pub fn restore_stale(_root: &Path) -> Vec<String> {
    rtscope_sys::knob::repair_stale()
}

impl Drop for OsnoiseSession {
    fn drop(&mut self) {
        for e in self.restore() {
            eprintln!("rtscope: {e}");
        }
    }
}

/// Timer activations missing between two IRQ entries of one CPU. The kernel numbers them per
/// CPU in a u32; a number that goes back is not a loss but a new count: the timerlat tracer
/// keeps one per-CPU state for all its instances, and another instance starting (rtla beside
/// us) resets it to 0. Only a step back from near u32::MAX to near 0 is the counter wrapping.
fn seq_gap(prev: u32, seqnum: u32) -> u64 {
    const NEAR: u32 = 1 << 20;
    if seqnum > prev {
        u64::from(seqnum - prev - 1)
    } else if prev > u32::MAX - NEAR && seqnum < NEAR {
        u64::from(seqnum.wrapping_sub(prev).saturating_sub(1))
    } else {
        0
    }
}

#[cfg(test)]
mod tests;
