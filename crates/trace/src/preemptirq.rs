//! ECRTS'20 Table 1's thread variables (D_POID, D_PAIE, D_PSD, D_ST) measured in the kernel:
//! `src/bpf/preemptirq.bpf.c` runs `rtscope_analysis::bound::thread`'s state machine on every
//! preemptirq, scheduler and interrupt tracepoint of a measured CPU and keeps only running maxima
//! and counters per CPU. No event leaves the kernel, so a run of any length costs the same
//! memory — the reason §5's latency parser parses in the kernel ("one second of trace could
//! generate more than 800 MB of data per CPU").
//!
//! Soundness: a maximum is only as good as the events it saw. Three counters say what was not
//! seen — a CPU's queue overflows and handler-nesting overflows (in the BPF state), and the
//! kernel's `recursion_misses` per program (a program skipped because it was already running on
//! that CPU). Their sum is `lost_events`; non-zero means the variables may be low.
//!
//! [`Replay`] feeds recorded events through the same BPF code (BPF_PROG_TEST_RUN on a chosen
//! CPU), so tests compare it with the pure state machine on any machine that loads BPF, with or
//! without preemptirq tracepoints.

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use rtscope_model::bound::ThreadVars;
use rtscope_model::event::{Event, EventKind, Vector};
use rtscope_model::field::{LAB_KERNEL, LAB_PRESET};
pub use rtscope_model::thread_vars::CpuThreadMeasure;
use rtscope_model::thread_vars::{CodeSite, PoidSite, ThreadVarsRun, THREAD_VARS_SCHEMA_VERSION};
use rtscope_model::warning::{Warning, WarningCode};
use std::collections::{BTreeMap, BTreeSet};
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

skeleton!("preemptirq.skel.rs");
use skel::{PreemptirqSkel, PreemptirqSkelBuilder};

// Event kinds of the BPF queue: keep in sync with preemptirq.bpf.c (K_*).
const K_PREEMPT_DISABLE: u64 = 1;
const K_PREEMPT_ENABLE: u64 = 2;
const K_IRQ_DISABLE: u64 = 3;
const K_IRQ_ENABLE: u64 = 4;
const K_SWITCH: u64 = 5;
const K_WAKEUP_HERE: u64 = 6;
const K_IRQ_ENTRY: u64 = 7;
const K_IRQ_EXIT: u64 = 8;
const K_VEC_ENTRY: u64 = 9;
const K_VEC_EXIT: u64 = 10;
const K_NMI: u64 = 11;
/// preemptirq.bpf.c SW_FROM_IDLE / SW_TO_IDLE: K_SWITCH's arg bits, prev / next is the idle task.
const SW_FROM_IDLE: u64 = 1;
const SW_TO_IDLE: u64 = 2;
/// preemptirq.bpf.c WK_KNOWN / WK_NEED_RESCHED: K_WAKEUP_HERE's arg says the running task's
/// TIF_NEED_RESCHED was read at the wake-up, and was set.
const WK_KNOWN: u64 = 1 << 8;
const WK_NEED_RESCHED: u64 = 1 << 9;
/// preemptirq.bpf.c QUEUE_ONLY: the replayed event is appended, not applied.
const QUEUE_ONLY: u64 = 1 << 32;
/// preemptirq.bpf.c NEST_IN_CLAIM: a nested program runs in the middle of the event's claim.
const NEST_IN_CLAIM: u64 = 1 << 33;
/// preemptirq.bpf.c QLEN: events one CPU's queue holds.
pub const QUEUE_LEN: usize = 8192;
/// preemptirq.bpf.c HMAX: interrupt handlers open at once per CPU.
pub const HANDLER_DEPTH: usize = 8;
/// Entries of the `traced` map (preemptirq.bpf.c MAX_CPUS).
const MAX_CPUS: usize = 1024;

// The first words of `struct pi_state`, in order.
const RES_POID: usize = 0;
const RES_PAIE: usize = 1;
const RES_PSD: usize = 2;
const RES_DST: usize = 3;
const RES_EVENTS: usize = 4;
const RES_SECTIONS: usize = 5;
const RES_QUEUE_OVERFLOWS: usize = 6;
const RES_NEST_OVERFLOWS: usize = 7;
const RES_MAX_QUEUED: usize = 9;
/// `struct poid_site`: from ip, parent_ip, kind; to ip, parent_ip, kind; interrupt time; the
/// opening event's time; events applied inside.
const RES_POID_AT: usize = 10;
/// `poid_stack`: POID_STACK return addresses, 0 when unused.
const RES_POID_STACK: usize = 19;
const POID_STACK: usize = 16;
/// `poid_tid`, then `poid_comm` (16 bytes).
const RES_POID_TASK: usize = RES_POID_STACK + POID_STACK;
/// `irq_ctx_ns`, `irq_arrivals` (after the 2 words of `poid_comm`).
const RES_IRQ_CTX: usize = RES_POID_TASK + 3;
const RES_IRQ_ARRIVALS: usize = RES_IRQ_CTX + 1;
const RES_WORDS: usize = RES_IRQ_ARRIVALS + 1;
/// `head` and `tail` of the queue follow the results.
const HEAD_WORD: usize = RES_WORDS;
const TAIL_WORD: usize = RES_WORDS + 1;

/// Tracepoints every measurement needs: the four toggles, the scheduler's two, the IRQ lines'.
pub const REQUIRED: [&str; 8] = [
    "preempt_disable",
    "preempt_enable",
    "irq_disable",
    "irq_enable",
    "sched_switch",
    "sched_wakeup",
    "irq_handler_entry",
    "irq_handler_exit",
];

/// x86 system vectors (`irq_vectors:*`) and the NMI: a kernel without one of them has no such
/// interrupt to discount (or does not say), so its program is left out and noted.
const OPTIONAL: [&str; 19] = [
    "local_timer_entry",
    "local_timer_exit",
    "reschedule_entry",
    "reschedule_exit",
    "call_function_entry",
    "call_function_exit",
    "call_function_single_entry",
    "call_function_single_exit",
    "irq_work_entry",
    "irq_work_exit",
    "error_apic_entry",
    "error_apic_exit",
    "spurious_apic_entry",
    "spurious_apic_exit",
    "thermal_apic_entry",
    "thermal_apic_exit",
    "x86_platform_ipi_entry",
    "x86_platform_ipi_exit",
    "nmi_handler",
];

/// The tracepoint a program of preemptirq.bpf.c attaches to (None: the replay program).
fn tracepoint_of(prog: &str) -> Option<String> {
    let stem = prog.strip_prefix("pi_")?;
    Some(match stem {
        "replay" => return None,
        "irq_entry" => "irq_handler_entry".into(),
        "irq_exit" => "irq_handler_exit".into(),
        s => s.to_string(),
    })
}

/// Every `btf_trace_<name>` type name in a kernel BTF blob (the type tp_btf attach needs): one
/// pass over its NUL-separated strings.
pub fn btf_tracepoints(btf: &[u8]) -> BTreeSet<String> {
    btf.split(|&b| b == 0)
        .filter_map(|s| s.strip_prefix(b"btf_trace_"))
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// Pure: can the programs attach, given the kernel's tracepoints from BTF (None: no BTF) and
/// whether tracefs shows `preemptirq:preempt_disable`?
pub fn availability(
    btf: Option<&BTreeSet<String>>,
    tracefs_has_preemptirq: bool,
) -> Result<(), String> {
    let Some(tps) = btf else {
        return Err(if tracefs_has_preemptirq {
            "the kernel has preemptirq tracepoints but no BTF (/sys/kernel/btf/vmlinux): tp_btf \
             programs need CONFIG_DEBUG_INFO_BTF"
                .into()
        } else {
            "kernel built without CONFIG_PREEMPTIRQ_TRACEPOINTS (no preemptirq:preempt_disable \
             tracepoint) and without BTF (CONFIG_DEBUG_INFO_BTF)"
                .into()
        });
    };
    let has = |t: &str| tps.contains(t);
    if !has("preempt_disable") || !has("preempt_enable") {
        return Err(if tracefs_has_preemptirq {
            "the kernel has the preemptirq:preempt_disable tracepoint but its BTF has no \
             btf_trace_preempt_disable type, so tp_btf cannot attach to it"
                .into()
        } else {
            "kernel built without CONFIG_PREEMPTIRQ_TRACEPOINTS (no preemptirq:preempt_disable \
             tracepoint: neither /sys/kernel/tracing/events/preemptirq/preempt_disable nor \
             btf_trace_preempt_disable in /sys/kernel/btf/vmlinux)"
                .into()
        });
    }
    if !has("irq_disable") || !has("irq_enable") {
        return Err(
            "the kernel has preemptirq:preempt_* but not preemptirq:irq_disable/irq_enable \
             (CONFIG_PREEMPTIRQ_TRACEPOINTS with CONFIG_TRACE_IRQFLAGS, e.g. from \
             CONFIG_IRQSOFF_TRACER)"
                .into(),
        );
    }
    if let Some(t) = REQUIRED.iter().find(|t| !has(t)) {
        return Err(format!(
            "the kernel has no {t} tracepoint (btf_trace_{t} is not in its BTF)"
        ));
    }
    Ok(())
}

fn tracefs_has_preemptirq() -> bool {
    [
        "/sys/kernel/tracing/events/preemptirq/preempt_disable",
        "/sys/kernel/debug/tracing/events/preemptirq/preempt_disable",
    ]
    .iter()
    .any(|p| std::path::Path::new(p).exists())
}

/// Does this kernel have the tracepoints? The error says why not, e.g. "kernel built without
/// CONFIG_PREEMPTIRQ_TRACEPOINTS …".
pub fn available() -> Result<(), String> {
    let btf = std::fs::read("/sys/kernel/btf/vmlinux")
        .ok()
        .map(|b| btf_tracepoints(&b));
    availability(btf.as_ref(), tracefs_has_preemptirq())
}

/// Pure: one CPU's `struct pi_state` (its leading result words) as a measure. The recursion
/// misses are the kernel's and are added by the caller.
pub fn parse_state(cpu: u32, b: &[u8]) -> CpuThreadMeasure {
    let w: Vec<u64> = b
        .chunks_exact(8)
        .take(RES_WORDS)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let at = |i: usize| w.get(i).copied().unwrap_or(0);
    let queue_overflows = at(RES_QUEUE_OVERFLOWS);
    let nest_overflows = at(RES_NEST_OVERFLOWS);
    CpuThreadMeasure {
        cpu,
        thread: ThreadVars {
            poid_ns: at(RES_POID),
            paie_ns: at(RES_PAIE),
            psd_ns: at(RES_PSD),
            dst_ns: at(RES_DST),
        },
        preemptirq_events: at(RES_EVENTS),
        sched_sections: at(RES_SECTIONS),
        lost_events: queue_overflows + nest_overflows,
        queue_overflows,
        nest_overflows,
        recursion_misses: 0,
        max_queued: at(RES_MAX_QUEUED),
        irq_entry_exit_ns: at(RES_IRQ_CTX),
        irq_arrivals: at(RES_IRQ_ARRIVALS),
        poid_at: (at(RES_POID) > 0).then(|| {
            let site = |w: usize| CodeSite {
                event: kind_name(at(w + 2)).into(),
                ip: at(w),
                parent_ip: at(w + 1),
                ..Default::default()
            };
            PoidSite {
                from: site(RES_POID_AT),
                to: site(RES_POID_AT + 3),
                irq_ns: at(RES_POID_AT + 6),
                from_ts_ns: at(RES_POID_AT + 7),
                events: at(RES_POID_AT + 8),
                stack: (RES_POID_STACK..RES_POID_TASK)
                    .map(at)
                    .take_while(|&a| a != 0)
                    .map(|ip| CodeSite {
                        ip,
                        ..Default::default()
                    })
                    .collect(),
                tid: at(RES_POID_TASK),
                comm: {
                    let c: Vec<u8> = [at(RES_POID_TASK + 1), at(RES_POID_TASK + 2)]
                        .iter()
                        .flat_map(|w| w.to_ne_bytes())
                        .take_while(|&b| b != 0)
                        .collect();
                    String::from_utf8_lossy(&c).into_owned()
                },
            }
        }),
    }
}

/// The tracepoint of a queue event kind (K_*).
fn kind_name(kind: u64) -> &'static str {
    match kind {
        K_PREEMPT_DISABLE => "preempt_disable",
        K_PREEMPT_ENABLE => "preempt_enable",
        K_IRQ_DISABLE => "irq_disable",
        K_IRQ_ENABLE => "irq_enable",
        K_SWITCH => "sched_switch",
        K_WAKEUP_HERE => "sched_wakeup",
        K_IRQ_ENTRY => "irq_handler_entry",
        K_IRQ_EXIT => "irq_handler_exit",
        K_VEC_ENTRY => "vector_entry",
        K_VEC_EXIT => "vector_exit",
        K_NMI => "nmi_handler",
        _ => "?",
    }
}

/// Skeleton plus the storage it borrows.
struct Loaded {
    // Declared before `_storage`: fields drop in order, so the skeleton (which borrows the
    // storage) is gone before the storage is freed.
    skel: PreemptirqSkel<'static>,
    _storage: Box<MaybeUninit<OpenObject>>,
}

/// Open and load the object; `keep(prog)` says which programs to load. libbpf's own log is
/// silenced: the error returned names the step and the cause.
fn load(keep: impl Fn(&str) -> bool) -> Result<Loaded, String> {
    let (skel, storage) = crate::kfuncs::build_quietly(|slot| {
        PreemptirqSkelBuilder::default()
            .open(slot)
            .map_err(|e| format!("bpf open of the preemptirq programs failed: {e}"))
            .and_then(|mut open| {
                for mut p in open.open_object_mut().progs_mut() {
                    let name = p.name().to_string_lossy().into_owned();
                    if !keep(&name) {
                        p.set_autoload(false);
                    }
                }
                open.load().map_err(|e| {
                    format!("bpf load (verifier) of the preemptirq programs failed: {e}")
                })
            })
    })?;
    Ok(Loaded {
        skel,
        _storage: storage,
    })
}

/// Per CPU (index = CPU), the raw `struct pi_state`; empty if the map cannot be read.
fn read_states(skel: &PreemptirqSkel<'_>) -> Vec<Vec<u8>> {
    match skel
        .maps
        .state
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
    {
        Ok(Some(v)) => v,
        _ => Vec::new(),
    }
}

/// The kernel's `recursion_misses` of every loaded program: the total and "name count" of
/// each program that has some.
fn recursion_misses(skel: &PreemptirqSkel<'_>) -> (u64, Vec<String>) {
    let mut total = 0;
    let mut by = Vec::new();
    for p in skel.object().progs() {
        if !p.autoload() {
            continue;
        }
        // Loaded (autoload was kept), so its fd is valid.
        let n = crate::bpf::recursion_misses_of(p.as_fd());
        if n > 0 {
            total += n;
            by.push(format!("{} {n}", p.name().to_string_lossy()));
        }
    }
    (total, by)
}

/// The attached programs measuring some CPUs. Dropping it detaches them.
pub struct Reducer {
    l: Loaded,
    cpus: Vec<u32>,
    notes: Vec<String>,
    started: Instant,
    started_ns: u64,
}

impl Reducer {
    /// Load and attach the programs, then switch the CPUs on (all programs are in place before
    /// any CPU counts). Needs root and [`available`].
    pub fn start(cpus: &[u32]) -> Result<Reducer, String> {
        let mut r = Reducer::attach(cpus)?;
        r.switch_on()?;
        Ok(r)
    }

    /// Load and attach the programs with every CPU off: nothing is measured until
    /// [`Reducer::switch_on`]. The loading (the kernel's BTF read, maps created, programs
    /// verified) is set-up that allocates and frees megabytes; a caller that must not perturb
    /// the window it measures does it first.
    pub fn attach(cpus: &[u32]) -> Result<Reducer, String> {
        available()?;
        let possible = libbpf_rs::num_possible_cpus()
            .unwrap_or(MAX_CPUS)
            .min(MAX_CPUS);
        if let Some(&c) = cpus.iter().find(|&&c| c as usize >= possible) {
            return Err(format!(
                "CPU {c} is beyond the {possible} possible CPUs of this kernel"
            ));
        }
        let tps = std::fs::read("/sys/kernel/btf/vmlinux")
            .map(|b| btf_tracepoints(&b))
            .unwrap_or_default();
        let missing: Vec<&str> = OPTIONAL
            .iter()
            .copied()
            .filter(|tp| !tps.contains(*tp))
            .collect();
        let mut l =
            load(|prog| tracepoint_of(prog).is_some_and(|tp| !missing.contains(&tp.as_str())))?;
        let notes = missing
            .iter()
            .map(|tp| {
                format!(
                    "tracepoint {tp} not in this kernel: that interrupt's time is not discounted"
                )
            })
            .collect();
        l.skel
            .attach()
            .map_err(|e| format!("bpf attach of the preemptirq programs failed: {e}"))?;
        Ok(Reducer {
            l,
            cpus: cpus.to_vec(),
            notes,
            started: Instant::now(),
            started_ns: crate::sys::monotonic_ns(),
        })
    }

    /// Switch the CPUs on (every program is already attached, so no CPU sees a disable whose
    /// enable program is missing); the run's clock starts here.
    pub fn switch_on(&mut self) -> Result<(), String> {
        for &c in &self.cpus {
            self.l
                .skel
                .maps
                .traced
                .update(&c.to_ne_bytes(), &1u32.to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| format!("bpf: switching CPU {c} on failed: {e}"))?;
        }
        self.started = Instant::now();
        self.started_ns = crate::sys::monotonic_ns();
        Ok(())
    }

    /// Per measured CPU, the maxima and counters so far (each CPU's `lost_events` includes the
    /// programs' recursion misses, whose CPU the kernel does not record).
    pub fn read(&self) -> BTreeMap<u32, CpuThreadMeasure> {
        self.read_with_misses().0
    }

    /// [`Reducer::read`] and the recursion misses it included (total, per program), from one
    /// reading of the programs' counters.
    fn read_with_misses(&self) -> (BTreeMap<u32, CpuThreadMeasure>, u64, Vec<String>) {
        let states = read_states(&self.l.skel);
        let (missed, missed_by) = recursion_misses(&self.l.skel);
        let cpus =
            self.cpus
                .iter()
                .map(|&c| {
                    let mut m = states.get(c as usize).map(|b| parse_state(c, b)).unwrap_or(
                        CpuThreadMeasure {
                            cpu: c,
                            ..Default::default()
                        },
                    );
                    m.recursion_misses = missed;
                    m.lost_events += missed;
                    (c, m)
                })
                .collect();
        (cpus, missed, missed_by)
    }

    /// Switch the CPUs off: the programs stay attached but change nothing, so every later
    /// reading gives the maxima of the window up to here (an interval still open is left out).
    pub fn stop(&self) -> Result<(), String> {
        for &c in &self.cpus {
            self.l
                .skel
                .maps
                .traced
                .update(&c.to_ne_bytes(), &0u32.to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| format!("bpf: switching CPU {c} off failed: {e}"))?;
        }
        Ok(())
    }

    /// Tracepoints left out on this kernel, one sentence each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The whole result so far, as `trace thread-vars` reports it.
    pub fn summary(&self, interrupted: bool) -> ThreadVarsRun {
        let (cpus, missed, missed_by) = self.read_with_misses();
        let cpus: Vec<CpuThreadMeasure> = cpus.into_values().collect();
        let lost_events = cpus
            .iter()
            .map(|c| c.queue_overflows + c.nest_overflows)
            .sum::<u64>()
            + missed;
        ThreadVarsRun {
            started_ns: self.started_ns,
            mechanism: "bpf".into(),
            ..summarize(
                cpus,
                self.started.elapsed().as_nanos() as u64,
                lost_events,
                missed_by,
                self.notes.clone(),
                interrupted,
            )
        }
    }
}

/// Pure: the run document with its warnings.
pub fn summarize(
    cpus: Vec<CpuThreadMeasure>,
    duration_ns: u64,
    lost_events: u64,
    missed_by: Vec<String>,
    notes: Vec<String>,
    interrupted: bool,
) -> ThreadVarsRun {
    let mut warnings = Vec::new();
    if lost_events > 0 {
        warnings.push(Warning::new(
            WarningCode::LostEvents,
            format!(
                "{lost_events} events were not seen by the in-kernel reduction (queue or \
                 handler-nesting overflows, or programs the kernel skipped{}): the thread \
                 variables may be low — not a sound measurement",
                if missed_by.is_empty() {
                    String::new()
                } else {
                    format!(": {}", missed_by.join(", "))
                }
            ),
        ));
    }
    for c in cpus.iter().filter(|c| c.preemptirq_events == 0) {
        warnings.push(Warning::new(
            WarningCode::Trace,
            format!(
                "cpu {}: no preemptirq event arrived; its variables are not measured",
                c.cpu
            ),
        ));
    }
    if !notes.is_empty() {
        warnings.push(Warning::new(
            WarningCode::Trace,
            format!(
                "{} interrupt tracepoint(s) missing: their handlers' time stays inside the \
                 intervals (the variables may be high)",
                notes.len()
            ),
        ));
    }
    if interrupted {
        warnings.push(Warning::new(
            WarningCode::Interrupted,
            "interrupted by a signal: the maxima cover the shorter run",
        ));
    }
    ThreadVarsRun {
        schema_version: THREAD_VARS_SCHEMA_VERSION,
        kernel_release: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        duration_ns,
        cpus,
        lost_events,
        missed_by,
        started_ns: 0,
        notes,
        warnings,
        interrupted,
        mechanism: String::new(),
        reader: None,
    }
}

/// Why `measure` did not measure.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The kernel or the privileges do not allow it; nothing was started.
    #[error("{0}")]
    Unavailable(String),
    /// Loading or attaching failed.
    #[error("{0}")]
    Failed(String),
}

/// `rtscope trace thread-vars`: measure `cpus` for `duration` (or until `stop()` says so).
pub fn measure(
    cpus: &[u32],
    duration: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<ThreadVarsRun, MeasureError> {
    available().map_err(|e| {
        MeasureError::Unavailable(format!(
            "{e}; a lab kernel has them: rtscope lab kernel build {LAB_PRESET} trace, then \
             rtscope lab run {LAB_KERNEL} trace -- trace thread-vars -D 10s"
        ))
    })?;
    if !rtscope_sys::system::is_root() {
        return Err(MeasureError::Unavailable(
            "tp_btf programs need root (CAP_BPF and CAP_PERFMON)".into(),
        ));
    }
    let r = Reducer::start(cpus).map_err(MeasureError::Failed)?;
    let t0 = Instant::now();
    while t0.elapsed() < duration && !stop() {
        std::thread::sleep(Duration::from_millis(20).min(duration.saturating_sub(t0.elapsed())));
    }
    Ok(r.summary(t0.elapsed() < duration))
}

/// The BPF queue's event for a recorded event on its CPU (None: the state machine ignores it).
pub fn queue_event(e: &Event) -> Option<(u64, u64)> {
    let vec_id = |v: Vector| -> u64 {
        match v {
            Vector::LocalTimer => 1,
            Vector::Reschedule => 2,
            Vector::CallFunction => 3,
            Vector::CallFunctionSingle => 4,
            Vector::IrqWork => 5,
            Vector::ErrorApic => 6,
            Vector::SpuriousApic => 7,
            Vector::ThermalApic => 8,
            Vector::X86PlatformIpi => 9,
            Vector::Other(n) => 1000 + u64::from(n),
        }
    };
    Some(match e.kind {
        EventKind::PreemptDisable => (K_PREEMPT_DISABLE, 0),
        EventKind::PreemptEnable => (K_PREEMPT_ENABLE, 0),
        EventKind::IrqDisable => (K_IRQ_DISABLE, 0),
        EventKind::IrqEnable => (K_IRQ_ENABLE, 0),
        EventKind::Switch {
            prev_pid,
            next_pid,
            next_prio,
            ..
        } => (
            K_SWITCH,
            if prev_pid == 0 { SW_FROM_IDLE } else { 0 }
                | if next_pid == 0 { SW_TO_IDLE } else { 0 }
                | ((next_prio.wrapping_add(2) as u64 & 0xff) << 8),
        ),
        EventKind::Wakeup {
            target_cpu, prio, ..
        } if target_cpu == e.cpu => (K_WAKEUP_HERE, prio.wrapping_add(2) as u64 & 0xff),
        EventKind::IrqEntry { irq } => (K_IRQ_ENTRY, u64::from(irq)),
        EventKind::IrqExit { irq, .. } => (K_IRQ_EXIT, u64::from(irq)),
        EventKind::VectorEntry { vector } => (K_VEC_ENTRY, vec_id(vector)),
        EventKind::VectorExit { vector } => (K_VEC_EXIT, vec_id(vector)),
        EventKind::Nmi { delta_ns } => (K_NMI, delta_ns),
        _ => return None,
    })
}

/// The BPF state machine without tracepoints: recorded events go through the same queue and
/// `pi_apply` as live ones (BPF_PROG_TEST_RUN of the replay program, pinned to the event's
/// CPU). Needs root; works on kernels without preemptirq tracepoints.
pub struct Replay {
    l: Loaded,
}

impl Replay {
    pub fn load() -> Result<Replay, String> {
        Ok(Replay {
            l: load(|prog| prog == "pi_replay")?,
        })
    }

    /// One event on its CPU; `nested` appends it without applying it, as a program that
    /// interrupted an application does (the next non-nested event applies it).
    pub fn push(&self, e: &Event, nested: bool) -> Result<(), String> {
        self.push_at(e, nested, 0, 0)
    }

    /// `push` with the tracepoint's `ip` and `parent_ip` (a preemptirq event's code address).
    pub fn push_at(&self, e: &Event, nested: bool, ip: u64, parent_ip: u64) -> Result<(), String> {
        let Some((kind, arg)) = queue_event(e) else {
            return Ok(());
        };
        let kind = if nested { kind | QUEUE_ONLY } else { kind };
        self.run(e.cpu, [e.ts_ns, kind, arg, ip, parent_ip])
    }

    /// A `sched_wakeup` of this CPU as the live program records it: with the running task's
    /// TIF_NEED_RESCHED as read at the tracepoint (`push` leaves it unknown: thread.rs's rule).
    pub fn push_wakeup_read(&self, e: &Event, need_resched: bool) -> Result<(), String> {
        match queue_event(e) {
            Some((K_WAKEUP_HERE, arg)) => {
                let flag = if need_resched { WK_NEED_RESCHED } else { 0 };
                self.run(e.cpu, [e.ts_ns, K_WAKEUP_HERE, arg | WK_KNOWN | flag, 0, 0])
            }
            _ => Err("push_wakeup_read: not a wake-up of its own CPU".into()),
        }
    }

    /// `push` (applied) with another program interrupting its claim of a queue slot between
    /// the loads of the queue's tail and head, and claiming, committing and applying an event
    /// there that changes no state (an NMI of 0 ns).
    pub fn push_nested_in_claim(&self, e: &Event) -> Result<(), String> {
        let Some((kind, arg)) = queue_event(e) else {
            return Ok(());
        };
        self.run(e.cpu, [e.ts_ns, kind | NEST_IN_CLAIM, arg, 0, 0])
    }

    /// Apply what waits in `cpu`'s queue: an event the state machine ignores (kind 0).
    pub fn flush(&self, cpu: u32) -> Result<(), String> {
        self.run(cpu, [0; 5])
    }

    fn run(&self, cpu: u32, words: [u64; 5]) -> Result<(), String> {
        let mut ctx = [0u8; 40];
        for (i, w) in words.iter().enumerate() {
            ctx[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
        let input = libbpf_rs::ProgramInput {
            context_in: Some(&mut ctx),
            cpu,
            flags: libbpf_rs::libbpf_sys::BPF_F_TEST_RUN_ON_CPU,
            ..Default::default()
        };
        let out = self
            .l
            .skel
            .progs
            .pi_replay
            .test_run(input)
            .map_err(|err| format!("bpf test run on cpu {cpu}: {err}"))?;
        if out.return_value != 0 {
            return Err(format!("replay program returned {}", out.return_value));
        }
        Ok(())
    }

    /// Every CPU with at least one applied event.
    pub fn read(&self) -> BTreeMap<u32, CpuThreadMeasure> {
        read_states(&self.l.skel)
            .iter()
            .enumerate()
            .filter(|(_, b)| {
                b.get(8 * 8..9 * 8)
                    .is_some_and(|w| w.iter().any(|&x| x != 0))
            })
            .map(|(c, b)| (c as u32, parse_state(c as u32, b)))
            .collect()
    }

    /// Zero every CPU's state machine and results. The queue's `head` and `tail` are kept:
    /// its slots still carry their sequence numbers (the queue is empty after a flush).
    pub fn reset(&self) -> Result<(), String> {
        let n = read_states(&self.l.skel);
        let zero: Vec<Vec<u8>> = n
            .iter()
            .map(|b| {
                let mut z = vec![0u8; b.len()];
                let keep = HEAD_WORD * 8..(TAIL_WORD + 1) * 8;
                if let (Some(dst), Some(src)) = (z.get_mut(keep.clone()), b.get(keep.clone())) {
                    dst.copy_from_slice(src);
                }
                z
            })
            .collect();
        self.l
            .skel
            .maps
            .state
            .update_percpu(&0u32.to_ne_bytes(), &zero, MapFlags::ANY)
            .map_err(|e| format!("bpf: resetting the state: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn availability_names_the_missing_config() {
        let e =
            availability(Some(&set(&["sched_switch", "irq_handler_entry"])), false).unwrap_err();
        assert!(e.contains("CONFIG_PREEMPTIRQ_TRACEPOINTS"), "{e}");
        let e = availability(None, false).unwrap_err();
        assert!(e.contains("CONFIG_PREEMPTIRQ_TRACEPOINTS"), "{e}");
        let e = availability(None, true).unwrap_err();
        assert!(e.contains("CONFIG_DEBUG_INFO_BTF"), "{e}");
        let e =
            availability(Some(&set(&["preempt_disable", "preempt_enable"])), false).unwrap_err();
        assert!(e.contains("CONFIG_TRACE_IRQFLAGS"), "{e}");
        let mut all = set(&REQUIRED);
        assert_eq!(availability(Some(&all), false), Ok(()));
        all.remove("sched_wakeup");
        let e = availability(Some(&all), true).unwrap_err();
        assert!(e.contains("sched_wakeup"), "{e}");
    }

    #[test]
    fn btf_strings_give_tracepoints() {
        let blob = b"\0int\0btf_trace_preempt_disable\0btf_trace_irq_enable\0trace_x\0";
        assert_eq!(
            btf_tracepoints(blob),
            set(&["preempt_disable", "irq_enable"])
        );
    }

    #[test]
    fn programs_name_their_tracepoints() {
        assert_eq!(
            tracepoint_of("pi_irq_entry").as_deref(),
            Some("irq_handler_entry")
        );
        assert_eq!(
            tracepoint_of("pi_local_timer_exit").as_deref(),
            Some("local_timer_exit")
        );
        assert_eq!(
            tracepoint_of("pi_nmi_handler").as_deref(),
            Some("nmi_handler")
        );
        assert_eq!(tracepoint_of("pi_replay"), None);
        for t in OPTIONAL {
            assert!(!REQUIRED.contains(&t));
        }
    }

    #[test]
    fn state_words() {
        let mut b = Vec::new();
        for w in [
            90u64, 30, 70, 50, 8, 1, 2, 3, 14, 4, 0x10, 0x11, 3, 0x20, 0x21, 4, 7, 500, 6, 0xa0,
            0xa1, 0, 0xa3,
        ] {
            b.extend_from_slice(&w.to_ne_bytes());
        }
        b.resize(RES_POID_TASK * 8, 0);
        b.extend_from_slice(&42u64.to_ne_bytes());
        b.extend_from_slice(b"rtscope-m\0\0\0\0\0\0\0");
        b.extend_from_slice(&1234u64.to_ne_bytes());
        b.extend_from_slice(&56u64.to_ne_bytes());
        let m = parse_state(3, &b);
        assert_eq!((m.irq_entry_exit_ns, m.irq_arrivals), (1234, 56));
        assert_eq!(
            m.thread,
            ThreadVars {
                poid_ns: 90,
                paie_ns: 30,
                psd_ns: 70,
                dst_ns: 50
            }
        );
        assert_eq!((m.cpu, m.preemptirq_events, m.sched_sections), (3, 8, 1));
        assert_eq!(
            (m.queue_overflows, m.nest_overflows, m.lost_events),
            (2, 3, 5)
        );
        assert_eq!(m.max_queued, 4);
        let at = m.poid_at.expect("poid_at");
        assert_eq!(
            (at.from.event.as_str(), at.from.ip, at.from.parent_ip),
            ("irq_disable", 0x10, 0x11)
        );
        assert_eq!(
            (at.to.event.as_str(), at.to.ip, at.to.parent_ip),
            ("irq_enable", 0x20, 0x21)
        );
        assert_eq!((at.irq_ns, at.from_ts_ns, at.events), (7, 500, 6));
        // The stack ends at its first unused (0) frame.
        let stack: Vec<u64> = at.stack.iter().map(|f| f.ip).collect();
        assert_eq!(stack, [0xa0, 0xa1]);
        assert_eq!((at.tid, at.comm.as_str()), (42, "rtscope-m"));
        // A full stack of POID_STACK frames stops before the task's words.
        let mut full = b.clone();
        for (i, w) in full[RES_POID_STACK * 8..RES_POID_TASK * 8]
            .chunks_exact_mut(8)
            .enumerate()
        {
            w.copy_from_slice(&(0xb0 + i as u64).to_ne_bytes());
        }
        let at = parse_state(3, &full).poid_at.expect("poid_at");
        assert_eq!(at.stack.len(), POID_STACK);
        assert_eq!(
            at.stack.last().map(|f| f.ip),
            Some(0xb0 + POID_STACK as u64 - 1)
        );
        // A short value reads as zeros, never a panic.
        assert_eq!(parse_state(0, &[1, 2, 3]).thread, ThreadVars::default());
    }

    #[test]
    fn lost_events_are_said() {
        let cpu = CpuThreadMeasure {
            cpu: 0,
            preemptirq_events: 10,
            ..Default::default()
        };
        let ok = summarize(vec![cpu.clone()], 1, 0, vec![], vec![], false);
        assert!(ok.warnings.is_empty(), "{:?}", ok.warnings);
        let bad = summarize(
            vec![cpu],
            1,
            3,
            vec!["pi_irq_disable 3".into()],
            vec![],
            false,
        );
        assert_eq!(bad.lost_events, 3);
        assert!(bad
            .warnings
            .iter()
            .any(|w| w.code == WarningCode::LostEvents && w.message.contains("pi_irq_disable 3")));
        let none = summarize(
            vec![CpuThreadMeasure::default()],
            1,
            0,
            vec![],
            vec![],
            true,
        );
        assert!(none.warnings.iter().any(|w| w.code == WarningCode::Trace));
        assert!(none.interrupted);
    }
}
