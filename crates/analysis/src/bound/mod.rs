//! The scheduling-latency bound of de Oliveira et al., "Demystifying the Real-Time Linux
//! Scheduling Latency", ECRTS'20 (seed `de-oliveira-2020-…`), §4–§5.
//!
//! Theorem 8: the latency is bounded by the least positive L with
//! `L = max(D_ST, D_POID) + D_PAIE + D_PSD + I_NMI(L) + I_IRQ(L)`,
//! and §5 lists six characterizations of the interrupt interference `I(L)`. Everything here is
//! pure integer-nanosecond arithmetic over validated inputs; readers live in [`json`] (the
//! documented interchange form), `rtscope-store::rtsl` (rtsl's SQLite databases) and [`events`]
//! (rtscope's own traces).

pub mod events;
pub mod json;
pub mod online;
pub mod render;
mod series;
pub mod source;
pub mod thread;
pub mod thread_stream;
pub mod window;

pub use online::{Grid, OnlineBound, OnlineSource};
use rtscope_model::bound::{
    BoundReport, Bounds, CharBound, Contribution, CpuBound, Iteration, NonConvergence, RawCpu,
    SourceSummary, ThreadVars, BOUND_SCHEMA_VERSION,
};
pub use source::{InterruptSource, Normalisation, RawInstance, SourceKind};
use std::collections::BTreeMap;

/// What the six characterizations of §5 need from one interrupt source: its observed
/// statistics and its worst-case arrival curves over half-open windows `[t, t+Δ)`. The one
/// fixed-point solver runs on any implementation: the exact instance list ([`InterruptSource`],
/// curves from [`window`]) or the online summary ([`OnlineSource`], curves that are exact on its
/// grid and never below the exact ones between grid points).
pub trait Interference {
    fn name(&self) -> &str;
    fn kind(&self) -> SourceKind;
    /// Instances seen.
    fn count(&self) -> u64;
    /// Observed worst-case execution time: the longest instance.
    fn owcet_ns(&self) -> u64;
    /// Observed minimum inter-arrival time; None when the source was seen at most once.
    fn omiat_ns(&self) -> Option<u64>;
    /// B_s(Δ): the largest sum of durations of instances arriving in one window of length Δ
    /// (an upper bound of it for a summary). Non-decreasing in Δ; 0 at Δ = 0.
    fn demand_ns(&self, delta_ns: u64) -> u64;
    /// The largest number of arrivals in one window of length Δ (an upper bound for a summary).
    fn arrivals(&self, delta_ns: u64) -> u64;
}

impl<T: Interference + ?Sized> Interference for &T {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn kind(&self) -> SourceKind {
        (**self).kind()
    }
    fn count(&self) -> u64 {
        (**self).count()
    }
    fn owcet_ns(&self) -> u64 {
        (**self).owcet_ns()
    }
    fn omiat_ns(&self) -> Option<u64> {
        (**self).omiat_ns()
    }
    fn demand_ns(&self, delta_ns: u64) -> u64 {
        (**self).demand_ns(delta_ns)
    }
    fn arrivals(&self, delta_ns: u64) -> u64 {
        (**self).arrivals(delta_ns)
    }
}

/// An interrupt source whose every instance also costs `e_ns` outside its handler: the
/// hard-IRQ entry and exit code that irq_handler_entry/exit and the vector events do not
/// bracket. Theorem 8 charges each arrival its whole execution, so oWCET becomes oWCET + e and
/// B(Δ) becomes B(Δ) + e · arrivals(Δ): the largest sum of (duration + e) over one window is at
/// most the largest sum of durations plus e times the largest number of arrivals (the two
/// maxima may come from different windows, so this is an upper bound, never below the exact
/// curve). NMIs do not enter through that path (their time is the handler's own delta) and are
/// given e = 0.
#[derive(Clone, Copy, Debug)]
pub struct WithEntryExit<S> {
    pub inner: S,
    pub e_ns: u64,
}

impl<S: Interference> WithEntryExit<S> {
    /// `s` with `e_ns` added to each instance if it is an IRQ source (lines and vectors).
    pub fn irq(s: S, e_ns: u64) -> Self {
        let e_ns = if s.kind() == SourceKind::Irq { e_ns } else { 0 };
        WithEntryExit { inner: s, e_ns }
    }
}

impl<S: Interference> Interference for WithEntryExit<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn kind(&self) -> SourceKind {
        self.inner.kind()
    }
    fn count(&self) -> u64 {
        self.inner.count()
    }
    fn owcet_ns(&self) -> u64 {
        self.inner.owcet_ns().saturating_add(self.e_ns)
    }
    fn omiat_ns(&self) -> Option<u64> {
        self.inner.omiat_ns()
    }
    fn demand_ns(&self, delta_ns: u64) -> u64 {
        let d = self.inner.demand_ns(delta_ns);
        if self.e_ns == 0 {
            return d;
        }
        d.saturating_add(self.inner.arrivals(delta_ns).saturating_mul(self.e_ns))
    }
    fn arrivals(&self, delta_ns: u64) -> u64 {
        self.inner.arrivals(delta_ns)
    }
}

impl Interference for InterruptSource {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> SourceKind {
        self.kind
    }
    fn count(&self) -> u64 {
        self.len() as u64
    }
    fn owcet_ns(&self) -> u64 {
        InterruptSource::owcet_ns(self)
    }
    fn omiat_ns(&self) -> Option<u64> {
        InterruptSource::omiat_ns(self)
    }
    fn demand_ns(&self, delta_ns: u64) -> u64 {
        window::max_demand_ns(self, delta_ns)
    }
    fn arrivals(&self, delta_ns: u64) -> u64 {
        window::max_arrivals(self, delta_ns)
    }
}

/// Default cap on L: 1 s (the default; a bound beyond it is useless for RT work).
pub const DEFAULT_CAP_NS: u64 = 1_000_000_000;
/// Default guard on fixed-point steps; each step adds ≥ 1 ns and costs O(n).
pub const DEFAULT_MAX_ITERATIONS: u64 = 10_000;
/// Iterations kept in the output (the first ones, plus always the last).
const KEPT_ITERATIONS: usize = 64;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BoundError {
    /// Bad input; `origin` names the file/table, `message` the row and the problem.
    #[error("{origin}: {message}")]
    Input { origin: String, message: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub cap_ns: u64,
    pub max_iterations: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cap_ns: DEFAULT_CAP_NS,
            max_iterations: DEFAULT_MAX_ITERATIONS,
        }
    }
}

/// One CPU's analysis input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuInput {
    pub cpu: u32,
    pub thread: ThreadVars,
    /// Thread terms come from the fallback, not from preemptirq measurement.
    pub thread_estimated: bool,
    /// An IRQ arrival's hard-IRQ context outside its handler (entry and exit code, ns; thread.rs
    /// `irq_entry_exit_ns`), added to every IRQ instance ([`WithEntryExit`]); 0 when unmeasured.
    pub irq_entry_exit_ns: u64,
    pub observed_max_latency_ns: Option<u64>,
    pub sources: Vec<InterruptSource>,
}

/// A whole input: CPUs sorted by number, plus the normalisations the reader applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoundInput {
    pub cpus: Vec<CpuInput>,
    pub warnings: Vec<String>,
    /// Events the input's capture lost, per CPU (only CPUs that lost any): the bound is then
    /// not sound.
    pub lost_events: BTreeMap<u32, u64>,
}

impl CpuInput {
    /// Sorts sources the way rtsl prints them: NMI first, then IRQs by number, then by name.
    pub fn sort_sources(&mut self) {
        self.sources.sort_by_key(|s| source_order(&s.name, s.kind));
    }
}

pub(crate) fn source_order(name: &str, kind: SourceKind) -> (u8, u64, String) {
    let k = if kind == SourceKind::Nmi { 0 } else { 1 };
    match name.parse::<u64>() {
        Ok(n) => (k, n, String::new()),
        Err(_) => (k, u64::MAX, name.to_string()),
    }
}

/// Validates readers' raw per-CPU data into an analysis input (sorting arrivals, a stated
/// normalisation reported in `warnings`; overlapping or duplicate arrivals are errors).
pub fn from_raw(cpus: Vec<RawCpu>, mut warnings: Vec<String>) -> Result<BoundInput, BoundError> {
    let mut out = Vec::with_capacity(cpus.len());
    for rc in cpus {
        let mut sources = Vec::with_capacity(rc.sources.len());
        for rs in rc.sources {
            let kind = if rs.nmi {
                SourceKind::Nmi
            } else {
                SourceKind::Irq
            };
            let (s, n) = InterruptSource::build(&rs.name, kind, rs.instances, &rs.origin)?;
            if n.out_of_order > 0 {
                warnings.push(format!(
                    "{}: CPU {} source {}: {} arrivals out of order, sorted",
                    rs.origin, rc.cpu, rs.name, n.out_of_order
                ));
            }
            sources.push(s);
        }
        let mut c = CpuInput {
            cpu: rc.cpu,
            thread: rc.thread,
            thread_estimated: rc.thread_estimated,
            irq_entry_exit_ns: rc.irq_entry_exit_ns,
            observed_max_latency_ns: rc.observed_max_latency_ns,
            sources,
        };
        c.sort_sources();
        out.push(c);
    }
    out.sort_by_key(|c| c.cpu);
    Ok(BoundInput {
        cpus: out,
        warnings,
        lost_events: BTreeMap::new(),
    })
}

/// Lemma 7: `L_IF ≤ max(D_ST, D_POID) + D_PAIE + D_PSD` (saturating: a sum beyond u64 is
/// beyond any cap anyway).
pub fn ifl_ns(t: &ThreadVars) -> u64 {
    t.dst_ns
        .max(t.poid_ns)
        .saturating_add(t.paie_ns)
        .saturating_add(t.psd_ns)
}

/// The thread terms of the equation as (name, ns), for the dominant-term search.
fn thread_terms(t: &ThreadVars) -> [(&'static str, u64); 3] {
    let first = if t.dst_ns > t.poid_ns {
        ("dst", t.dst_ns)
    } else {
        ("poid", t.poid_ns)
    };
    [first, ("paie", t.paie_ns), ("psd", t.psd_ns)]
}

fn dominant(t: &ThreadVars, contribs: &[(String, u64)]) -> (String, u64) {
    let mut best: (String, u64) = (String::new(), 0);
    for (n, v) in thread_terms(t) {
        if v > best.1 || best.0.is_empty() {
            best = (n.to_string(), v);
        }
    }
    for (n, v) in contribs {
        if *v > best.1 {
            best = (n.clone(), *v);
        }
    }
    best
}

/// A closed-form characterization: `IFL + Σ contributions`.
fn closed_form(t: &ThreadVars, contribs: Vec<(String, u64)>, cap_ns: u64) -> CharBound {
    let ifl = ifl_ns(t);
    let total = contribs
        .iter()
        .fold(ifl, |acc, (_, v)| acc.saturating_add(*v));
    let (dom, dom_ns) = dominant(t, &contribs);
    let it = Iteration {
        window_ns: ifl,
        contributions: contribs
            .into_iter()
            .map(|(source, ns)| Contribution { source, ns })
            .collect(),
        latency_ns: total,
    };
    let (latency_ns, converged, reason) = if total > cap_ns {
        (
            None,
            false,
            Some(NonConvergence::ExceedsCap {
                cap_ns,
                last_ns: total,
            }),
        )
    } else {
        (Some(total), true, None)
    };
    CharBound {
        latency_ns,
        converged,
        reason,
        dominant: Some(dom),
        dominant_ns: Some(dom_ns),
        iterations: vec![it],
        iteration_count: 1,
    }
}

/// The least fixed point of `L = IFL + Σ_s f(s, L)` for a non-decreasing `f`, iterated from
/// `max(IFL, 1)`: Theorem 8 asks for the least *positive* L, and over an empty window [t, t)
/// nothing can arrive. Monotone and bounded by the cap, so either it converges or it is cut off.
fn fixed_point<S: Interference>(
    t: &ThreadVars,
    sources: &[S],
    opts: &Options,
    f: impl Fn(&S, u64) -> u64,
) -> CharBound {
    let ifl = ifl_ns(t);
    let mut l = ifl.max(1);
    let mut prev: Vec<u64> = vec![u64::MAX; sources.len()];
    let mut kept: Vec<Iteration> = Vec::new();
    let mut last: Option<Iteration> = None;
    let mut count = 0u64;
    let mut contribs: Vec<(String, u64)>;
    let reason;
    loop {
        count += 1;
        let vals: Vec<u64> = sources.iter().map(|s| f(s, l)).collect();
        let next = vals.iter().fold(ifl, |acc, v| acc.saturating_add(*v));
        let changed: Vec<Contribution> = sources
            .iter()
            .zip(vals.iter())
            .zip(prev.iter())
            .filter(|((_, v), p)| *v != *p)
            .map(|((s, v), _)| Contribution {
                source: s.name().to_string(),
                ns: *v,
            })
            .collect();
        let it = Iteration {
            window_ns: l,
            contributions: changed,
            latency_ns: next,
        };
        if kept.len() < KEPT_ITERATIONS {
            kept.push(it);
        } else {
            last = Some(it);
        }
        contribs = sources
            .iter()
            .zip(vals.iter())
            .map(|(s, v)| (s.name().to_string(), *v))
            .collect();
        prev = vals;
        // The cap first: a fixed point above it (thread terms alone past the cap) is no bound.
        if next > opts.cap_ns {
            reason = Some(NonConvergence::ExceedsCap {
                cap_ns: opts.cap_ns,
                last_ns: next,
            });
            break;
        }
        if next == l {
            reason = None;
            break;
        }
        if count >= opts.max_iterations {
            reason = Some(NonConvergence::IterationLimit {
                iterations: count,
                last_ns: next,
            });
            break;
        }
        l = next;
    }
    if let Some(it) = last {
        kept.push(it);
    }
    let (dom, dom_ns) = dominant(t, &contribs);
    let converged = reason.is_none();
    CharBound {
        latency_ns: if converged { Some(l) } else { None },
        converged,
        reason,
        dominant: Some(dom),
        dominant_ns: Some(dom_ns),
        iterations: kept,
        iteration_count: count,
    }
}

/// Characterization 1 — No interrupts: L = IFL.
pub fn no_interrupts(t: &ThreadVars, opts: &Options) -> CharBound {
    closed_form(t, Vec::new(), opts.cap_ns)
}

/// Characterization 2 — Worst single interrupt: IFL + the largest IRQ oWCET + the NMI oWCET (if any NMI).
pub fn worst_single<S: Interference>(t: &ThreadVars, sources: &[S], opts: &Options) -> CharBound {
    let mut c = Vec::new();
    if let Some(nmi) = sources
        .iter()
        .filter(|s| s.kind() == SourceKind::Nmi)
        .max_by_key(|s| s.owcet_ns())
    {
        c.push((nmi.name().to_string(), nmi.owcet_ns()));
    }
    // Ties go to the first source in rtsl order, so the output is deterministic.
    let mut worst: Option<&S> = None;
    for s in sources.iter().filter(|s| s.kind() == SourceKind::Irq) {
        worst = match worst {
            Some(w) if w.owcet_ns() >= s.owcet_ns() => Some(w),
            _ => Some(s),
        };
    }
    if let Some(w) = worst {
        c.push((w.name().to_string(), w.owcet_ns()));
    }
    closed_form(t, c, opts.cap_ns)
}

/// Characterization 3 — Single (worst) of each interrupt: IFL + Σ_s oWCET_s.
pub fn single_of_each<S: Interference>(t: &ThreadVars, sources: &[S], opts: &Options) -> CharBound {
    let c = sources
        .iter()
        .map(|s| (s.name().to_string(), s.owcet_ns()))
        .collect();
    closed_form(t, c, opts.cap_ns)
}

/// Characterization 4 — Sporadic: L = IFL + Σ_s ⌈L / oMIAT_s⌉·oWCET_s; a source seen once counts once. Does not
/// converge when some source has oWCET ≥ oMIAT (its demand grows at least as fast as L).
pub fn sporadic<S: Interference>(t: &ThreadVars, sources: &[S], opts: &Options) -> CharBound {
    if let Some(s) = sources
        .iter()
        .find(|s| s.omiat_ns().is_some_and(|m| s.owcet_ns() >= m))
    {
        let omiat_ns = s.omiat_ns().unwrap_or(0);
        let mut r = fixed_point(
            t,
            sources,
            &Options {
                max_iterations: 1,
                ..*opts
            },
            sporadic_demand,
        );
        r.latency_ns = None;
        r.converged = false;
        r.reason = Some(NonConvergence::OwcetGeOmiat {
            source: s.name().to_string(),
            owcet_ns: s.owcet_ns(),
            omiat_ns,
        });
        r.dominant = Some(s.name().to_string());
        r.dominant_ns = None;
        return r;
    }
    fixed_point(t, sources, opts, sporadic_demand)
}

fn sporadic_demand<S: Interference>(s: &S, l: u64) -> u64 {
    match s.omiat_ns() {
        None => {
            if s.count() == 0 {
                0
            } else {
                s.owcet_ns()
            }
        }
        Some(m) => l.div_ceil(m).saturating_mul(s.owcet_ns()),
    }
}

/// Characterization 5 — Sliding window: L = IFL + Σ_s B_s(L), B_s(Δ) the largest sum of durations of the source's
/// instances arriving in one window [t, t+Δ) — the worst observed arrival pattern with each
/// instance's own execution time.
pub fn sliding_window<S: Interference>(t: &ThreadVars, sources: &[S], opts: &Options) -> CharBound {
    fixed_point(t, sources, opts, |s, l| s.demand_ns(l))
}

/// Characterization 6 — Sliding window with oWCET: B_s(Δ) = oWCET_s × the largest number of arrivals in a window.
pub fn sliding_window_owcet<S: Interference>(
    t: &ThreadVars,
    sources: &[S],
    opts: &Options,
) -> CharBound {
    fixed_point(t, sources, opts, |s, l| {
        s.arrivals(l).saturating_mul(s.owcet_ns())
    })
}

pub fn summarize_sources<S: Interference>(sources: &[S]) -> Vec<SourceSummary> {
    sources
        .iter()
        .map(|s| SourceSummary {
            source: s.name().to_string(),
            kind: s.kind().as_str().to_string(),
            count: s.count(),
            owcet_ns: s.owcet_ns(),
            omiat_ns: s.omiat_ns(),
        })
        .collect()
}

/// All six characterizations for one CPU.
pub fn analyze_cpu(c: &CpuInput, opts: &Options) -> CpuBound {
    analyze_sources(
        c.cpu,
        &c.thread,
        c.thread_estimated,
        c.irq_entry_exit_ns,
        c.observed_max_latency_ns,
        &c.sources,
        opts,
    )
}

/// All six characterizations for one CPU from its thread terms and any kind of source
/// (`sources` in rtsl order, see [`CpuInput::sort_sources`]); every IRQ instance also costs
/// `irq_entry_exit_ns` ([`WithEntryExit`]). The source summaries keep the handlers' own times.
pub fn analyze_sources<S: Interference>(
    cpu: u32,
    t: &ThreadVars,
    thread_estimated: bool,
    irq_entry_exit_ns: u64,
    observed_max_latency_ns: Option<u64>,
    raw_sources: &[S],
    opts: &Options,
) -> CpuBound {
    let sources: Vec<WithEntryExit<&S>> = raw_sources
        .iter()
        .map(|s| WithEntryExit::irq(s, irq_entry_exit_ns))
        .collect();
    let sources = sources.as_slice();
    CpuBound {
        cpu,
        ifl_ns: ifl_ns(t),
        thread: *t,
        thread_estimated,
        irq_entry_exit_ns,
        observed_max_latency_ns,
        sources: summarize_sources(raw_sources),
        bounds: Bounds {
            no_interrupts: no_interrupts(t, opts),
            worst_single: worst_single(t, sources, opts),
            single_of_each: single_of_each(t, sources, opts),
            sporadic: sporadic(t, sources, opts),
            sliding_window: sliding_window(t, sources, opts),
            sliding_window_owcet: sliding_window_owcet(t, sources, opts),
        },
    }
}

/// The whole report. `input` names the kind of input (`json`, `rtsl-db`, `trace`).
pub fn analyze(input: &BoundInput, opts: &Options, input_kind: &str) -> BoundReport {
    let cpus: Vec<CpuBound> = input.cpus.iter().map(|c| analyze_cpu(c, opts)).collect();
    let mut r = report_from(cpus, input.warnings.clone(), opts, input_kind);
    label_losses(&mut r, &input.lost_events, &BTreeMap::new());
    r
}

/// Marks `r` not sound for every event lost: by the capture (`capture`: interrupts or switches
/// may be missing) or by the in-kernel preemptirq reduction (`reduction`: an interval may have
/// been cut or never seen). Any loss at all, however small: a maximum is only as good as the
/// events it saw.
pub fn label_losses(
    r: &mut BoundReport,
    capture: &BTreeMap<u32, u64>,
    reduction: &BTreeMap<u32, u64>,
) {
    for (cpu, n) in capture.iter().filter(|(_, n)| **n > 0) {
        r.not_sound_because
            .push(format!("CPU {cpu}: the capture lost {n} events"));
    }
    for (cpu, n) in reduction.iter().filter(|(_, n)| **n > 0) {
        r.not_sound_because.push(format!(
            "CPU {cpu}: the in-kernel preemptirq reduction lost {n} events"
        ));
    }
    r.sound = r.not_sound_because.is_empty();
}

/// Assembles a report from analysed CPUs, labelling it an estimate when any CPU's thread terms
/// were not measured.
pub(crate) fn report_from(
    cpus: Vec<CpuBound>,
    mut warnings: Vec<String>,
    opts: &Options,
    input_kind: &str,
) -> BoundReport {
    let estimate = cpus.iter().any(|c| c.thread_estimated);
    if estimate {
        warnings.push(
            "thread terms (POID/PAIE/PSD/DST) were not measured with preemptirq tracepoints: \
             every bound is an ESTIMATE, NOT A SOUND BOUND"
                .to_string(),
        );
    }
    BoundReport {
        schema_version: BOUND_SCHEMA_VERSION,
        cpus,
        estimate,
        sound: !estimate,
        not_sound_because: if estimate {
            vec!["thread terms estimated (no preemptirq tracepoints)".to_string()]
        } else {
            Vec::new()
        },
        input: input_kind.to_string(),
        cap_ns: opts.cap_ns,
        warnings,
        series: Vec::new(),
        online_summary: None,
    }
}

#[cfg(test)]
mod online_tests;
#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
