//! Kernel event capture for rtscope (issue 4): eBPF (primary) and a tracefs instance (fallback),
//! decoded into `rtscope_model::event::Event`, and the `.rtt` trace file (docs/trace-format.md).
//!
//! Typical use (what `measure --trace` does):
//! ```no_run
//! # use rtscope_trace::*;
//! let mech = check(Mechanism::Auto)?;             // resolve, no side effects
//! let session = TraceSession::start(&[0, 1], mech)?;
//! // ... run the measurement ...
//! let capture = session.stop()?;                   // Drop alone also removes all tracing state
//! let file = capture.into_rtt(Vec::new());         // add the samples
//! write_rtt(std::path::Path::new("run.rtt"), &file)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bpf;
pub mod reduce;
pub mod rtt;
pub mod sys;
pub mod tracefs;

#[allow(
    clippy::all,
    clippy::pedantic,
    dead_code,
    non_snake_case,
    non_camel_case_types,
    unused
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/rtscope.skel.rs"));
}

pub use reduce::Keep;
pub use rtt::{read_rtt, write_rtt, RttError, RttFile, RttMeta};

use rtscope_model::event::{Event, NameTables};
use rtscope_model::record::RawSample;
use std::collections::BTreeMap;

/// How to capture. `Auto` prefers eBPF, then tracefs, then none (with a warning).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mechanism {
    Auto,
    Bpf,
    Tracefs,
    #[default]
    Off,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Auto => "auto",
            Mechanism::Bpf => "bpf",
            Mechanism::Tracefs => "tracefs",
            Mechanism::Off => "off",
        }
    }
}

impl std::str::FromStr for Mechanism {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Mechanism::Auto),
            "bpf" => Ok(Mechanism::Bpf),
            "tracefs" => Ok(Mechanism::Tracefs),
            "off" => Ok(Mechanism::Off),
            _ => Err(format!("must be one of auto, bpf, tracefs, off; got '{s}'")),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The mechanism cannot work on this machine (reason given); nothing was changed.
    #[error("{0}")]
    Unavailable(String),
    /// Setting up failed; whatever was set up has been removed again.
    #[error("{0}")]
    Setup(String),
    /// Reading or decoding failed during the capture.
    #[error("{0}")]
    Capture(String),
    #[error("invalid CPU list: {0}")]
    BadCpus(String),
}

/// Resolve `Auto` and check that the mechanism can work, without touching any kernel state.
/// `Auto` resolves to `Bpf`, else `Tracefs`, else `Off` (the caller warns).
pub fn check(mech: Mechanism) -> Result<Mechanism, TraceError> {
    match mech {
        Mechanism::Off => Ok(Mechanism::Off),
        Mechanism::Bpf => bpf::available()
            .map(|_| Mechanism::Bpf)
            .map_err(TraceError::Unavailable),
        Mechanism::Tracefs => tracefs::available()
            .map(|_| Mechanism::Tracefs)
            .map_err(TraceError::Unavailable),
        Mechanism::Auto => {
            if bpf::available().is_ok() {
                Ok(Mechanism::Bpf)
            } else if tracefs::available().is_ok() {
                Ok(Mechanism::Tracefs)
            } else {
                Ok(Mechanism::Off)
            }
        }
    }
}

/// Why `check(Auto)` would fall back: one line per mechanism that is not usable.
pub fn unavailable_reasons() -> Vec<String> {
    let mut v = Vec::new();
    if let Err(e) = bpf::available() {
        v.push(format!("bpf: {e}"));
    }
    if let Err(e) = tracefs::available() {
        v.push(format!("tracefs: {e}"));
    }
    v
}

/// Everything one capture produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Capture {
    pub mechanism: Mechanism,
    pub cpus: Vec<u32>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Sorted by (ts_ns, cpu).
    pub events: Vec<Event>,
    pub comms: BTreeMap<u32, String>,
    pub lost_per_cpu: BTreeMap<u32, u64>,
    pub steal_ns_per_cpu: BTreeMap<u32, u64>,
    pub kernel_bytes: u64,
    pub notes: Vec<String>,
    /// What the capture kept (`reduce` module).
    pub keep: Keep,
    /// Events seen on the traced CPUs but left out by the relevance filter.
    pub filtered: u64,
}

impl Capture {
    pub fn lost_total(&self) -> u64 {
        self.lost_per_cpu.values().sum()
    }

    /// Name tables for attribution: comms seen in the capture (plus /proc for threads that never
    /// switched out while traced) and IRQ names from /proc/interrupts.
    pub fn names(&self, extra_pids: &[u32]) -> NameTables {
        let mut comms = self.comms.clone();
        // Tasks switched to but never seen leaving the CPU (the eBPF capture learns a comm when
        // its task switches out): ask /proc while they may still exist.
        let mut switched_in: Vec<u32> = self
            .events
            .iter()
            .filter_map(|e| match e.kind {
                rtscope_model::event::EventKind::Switch { next_pid, .. } => Some(next_pid),
                _ => None,
            })
            .filter(|p| *p != 0 && !comms.contains_key(p))
            .collect();
        switched_in.sort_unstable();
        switched_in.dedup();
        for &p in extra_pids.iter().chain(switched_in.iter()) {
            if let std::collections::btree_map::Entry::Vacant(v) = comms.entry(p) {
                if let Some(c) = sys::comm_of(p) {
                    v.insert(c);
                }
            }
        }
        NameTables {
            comms,
            irqs: sys::irq_names(&sys::read_interrupts()),
        }
    }

    /// Package with samples into a trace file.
    pub fn into_rtt(self, samples: Vec<RawSample>) -> RttFile {
        let mut tids: Vec<u32> = samples.iter().map(|s| s.tid).collect();
        tids.sort_unstable();
        tids.dedup();
        let names = self.names(&tids);
        self.into_rtt_named(samples, names)
    }

    /// [`Capture::into_rtt`] with name tables the caller already has from [`Capture::names`]
    /// (which scans every event and reads /proc).
    pub fn into_rtt_named(self, samples: Vec<RawSample>, names: NameTables) -> RttFile {
        let meta = RttMeta {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            mechanism: self.mechanism.name().to_string(),
            cpus: self.cpus,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            kernel: sys::kernel_release(),
            hostname: sys::hostname(),
            lost_per_cpu: self.lost_per_cpu,
            steal_ns_per_cpu: self.steal_ns_per_cpu,
            kernel_bytes: self.kernel_bytes,
            notes: self.notes,
            keep: self.keep.name().to_string(),
            filtered_events: self.filtered,
        };
        RttFile {
            meta,
            names,
            events: self.events,
            samples,
        }
    }
}

enum Inner {
    Bpf(bpf::BpfSession),
    Tracefs(tracefs::TracefsSession, Keep),
    Off { cpus: Vec<u32>, start_ns: u64 },
}

/// A running capture. `stop` returns what was captured; dropping it without `stop` removes all
/// tracing state as well (BPF links, the tracefs instance).
pub struct TraceSession {
    inner: Inner,
}

impl TraceSession {
    /// Start capturing on `cpus` (online CPU numbers). `Auto` is resolved as in [`check`].
    /// Start with the default filter ([`Keep::Relevant`]).
    pub fn start(cpus: &[u32], mech: Mechanism) -> Result<Self, TraceError> {
        Self::start_with(cpus, mech, Keep::default())
    }

    /// Start a capture on `cpus` that keeps `keep` (see the `reduce` module).
    pub fn start_with(cpus: &[u32], mech: Mechanism, keep: Keep) -> Result<Self, TraceError> {
        if cpus.is_empty() {
            return Err(TraceError::BadCpus("no CPUs given".into()));
        }
        // SAFETY: sysconf has no preconditions.
        let ncpu = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
        if let Some(&c) = cpus
            .iter()
            .find(|&&c| (c as i64) >= ncpu.max(1) as i64 || c >= 1024)
        {
            return Err(TraceError::BadCpus(format!(
                "cpu {c} does not exist (0..={})",
                ncpu.max(1) - 1
            )));
        }
        let inner = match check(mech)? {
            Mechanism::Bpf => Inner::Bpf(bpf::BpfSession::start(cpus, keep)?),
            Mechanism::Tracefs => Inner::Tracefs(tracefs::TracefsSession::start(cpus)?, keep),
            _ => Inner::Off {
                cpus: cpus.to_vec(),
                start_ns: sys::monotonic_ns(),
            },
        };
        Ok(TraceSession { inner })
    }

    pub fn mechanism(&self) -> Mechanism {
        match self.inner {
            Inner::Bpf(_) => Mechanism::Bpf,
            Inner::Tracefs(..) => Mechanism::Tracefs,
            Inner::Off { .. } => Mechanism::Off,
        }
    }

    pub fn stop(self) -> Result<Capture, TraceError> {
        match self.inner {
            Inner::Bpf(s) => s.stop(),
            Inner::Tracefs(s, keep) => {
                let mut c = s.stop()?;
                // The tracefs instance records everything; the relevance filter runs here.
                if keep == Keep::Relevant {
                    if reduce::needs_all(&c.events) {
                        c.notes.push(
                            "kept every event: the trace has preemptirq events (rtsl's thread analysis needs every switch)".into(),
                        );
                    } else {
                        let (ev, dropped) = reduce::reduce(std::mem::take(&mut c.events));
                        c.events = ev;
                        c.filtered = dropped;
                        c.keep = Keep::Relevant;
                    }
                }
                Ok(c)
            }
            Inner::Off { cpus, start_ns } => Ok(Capture {
                mechanism: Mechanism::Off,
                cpus,
                start_ns,
                end_ns: sys::monotonic_ns(),
                ..Default::default()
            }),
        }
    }
}

/// Tracefs instances this process (or a dead rtscope) left behind; empty after a clean stop.
pub fn leftover_instances() -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(std::path::Path::new(tracefs::TRACEFS).join("instances")) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rtscope-"))
        .collect()
}
