//! The bound of a run from an online summary: bounded state fed with events and samples as they
//! arrive, from which the six characterizations of ECRTS'20 §5 are computed by the same solver
//! as the exact analysis ([`super::analyze_sources`] over [`Interference`]).
//!
//! What is kept, per CPU:
//! - thread terms: the running maxima of [`super::thread::ThreadMeasurer`] (preemptirq events),
//!   and the largest latency and non-interrupt delay of the samples (the fallback) — exact;
//! - per interrupt source: count, oWCET, oMIAT, total — exact, so characterizations 1–4
//!   (no interrupts, worst single, single of each, sporadic) equal the exact ones;
//! - per source, the arrival curves of characterizations 5–6 on a geometric grid of window
//!   lengths Δ_0 < … < Δ_m (default 1 µs … 10 s, ratio 1.1): for each Δ_k the largest demand
//!   (sum of durations) and the largest count of instances arriving in one half-open window
//!   [t, t+Δ_k), with the semantics of [`super::window::max_demand_ns`] (an instance counts whole,
//!   by its arrival; nothing is clipped). Each is an exact running maximum: for every Δ_k, a
//!   pointer to the oldest instance of the current window and its running sum (two pointers, as
//!   in `window.rs`, but advanced as instances arrive: O(grid) per instance, amortised).
//!
//! Looking a curve up at any Δ ≥ 1 (B the exact curve of the data seen, v_j = B(Δ_j)):
//! `U(Δ) = min_j ⌈Δ/Δ_j⌉·v_j`, further capped by sound limits below. It is never below B(Δ):
//! - B is non-decreasing in Δ (a window of length Δ lies inside one of length Δ' ≥ Δ that starts
//!   at the same t), so the first grid Δ_g ≥ Δ gives B(Δ) ≤ v_g (the term j = g, ⌈Δ/Δ_g⌉ = 1);
//! - B is sub-additive: [t, t+a+b) is the disjoint union of [t, t+a) and [t+a, t+a+b), and each
//!   part holds at most the worst window of its length (the maximum over all t equals the one
//!   over arrival-anchored t, `window.rs`), so B(a+b) ≤ B(a) + B(b), B(n·a) ≤ n·B(a) and, with
//!   n = ⌈Δ/Δ_j⌉, B(Δ) ≤ B(n·Δ_j) ≤ n·v_j for every j — in particular beyond the grid's end.
//!
//! The same holds for counts. At a grid point U(Δ_k) = v_k exactly (the other terms are ≥ v_k by
//! the same two facts), so the summary's curves are exact there. Caps, each itself ≥ B(Δ):
//! count ≤ total count and ≤ ⌈Δ/oMIAT⌉ (k arrivals ≥ oMIAT apart span ≥ (k−1)·oMIAT < Δ); demand
//! ≤ total duration and ≤ count(Δ)·oWCET. As the run goes on every v_j and cap can only grow and
//! oMIAT shrink (and a term that stops being tracked leaves the minimum), so every looked-up
//! value is non-decreasing in time — and with it each bound, the least fixed point of a
//! non-decreasing interference.
//!
//! Tightness. Characterizations 1–4 are exact. For 5–6 the fixed point evaluates B at the first
//! grid point g(L) ≥ L instead of at L. Inside the grid g(L) ≤ ratio·L (Δ_{g−1} < L and
//! Δ_g ≤ ⌊Δ_{g−1}·ratio⌋, or Δ_g = Δ_{g−1} + 1 ≤ L), so the summary's bound is at most the exact
//! bound of the same data with every window stretched by the ratio (windows below Δ_0 are
//! looked up at Δ_0). How much that costs depends on the curves' steps near L: one more arrival
//! inside (L, ratio·L] adds up to an oWCET, amplified by 1/(1 − slope of the curves). On the 68
//! generated runs of `online_tests.rs` (a jittered 1 kHz timer, bursty device IRQs, IRQs nested
//! in softirqs, NMIs, lost events; L from 20 µs to 5 ms), with the default grid, the summary's
//! bound was at most 19.1 % (sliding window) and 12.5 % (sliding window with oWCET) above the
//! exact one, stated as [`MEASURED_MAX_EXCESS_PERCENT`] = 20 %. A finer ratio tightens it at a
//! proportional cost per instance: 1.02 (≈ 815 grid points) measured 7.8 % and 8.3 %.
//!
//! Memory. Per source the held instances are those of the current window of the largest tracked
//! Δ: at most N(Δ_max) of them, the largest number of arrivals in one window of Δ_max (about
//! rate × Δ_max), at 16 bytes each (the deque's capacity rounds up to a power of two), plus 32
//! bytes per grid point (≈ 170 points by default: 5.4 KB). A 1 kHz timer with Δ_max = 10 s holds 10 000 instances, 160 KB. So that an interrupt
//! storm cannot grow it without bound, a source holds at most `max_window_instances` (default
//! 65 536, 1 MiB): beyond that its largest tracked Δ is lowered step by step to one whose window
//! fits, and longer windows are extrapolated from the tracked ones as above — still never below
//! the exact curve, only less tight (the report names such sources). With the default cap every
//! source below 65 kHz is tracked up to 1 s, the default cap of L, so the solver's windows stay
//! on exact grid values. (The grid's end is the other knob: memory is proportional to it.) The
//! time-to-bound series keeps at most `series_points` instants by decimation. Nothing else grows
//! with the run: one open entry per (CPU, source), the per-CPU preemptirq state machine.

use super::events::{self, InstanceMatcher, SourceKey};
use super::thread::ThreadMeasurer;
use super::{BoundError, Interference, Options, SourceKind};
use rtscope_model::bound::{BoundReport, BoundSeriesPoint, CpuBound, OnlineSummaryInfo};
use rtscope_model::event::Event;
use rtscope_model::record::RawSample;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Smallest window of the default grid: 1 µs (shorter than any interrupt worth bounding).
pub const DEFAULT_GRID_START_NS: u64 = 1_000;
/// Largest window of the default grid: 10 s (ten times the default cap on L).
pub const DEFAULT_GRID_END_NS: u64 = 10_000_000_000;
/// Default ratio between consecutive window lengths.
pub const DEFAULT_GRID_RATIO: f64 = 1.1;
/// Default cap on the instances one source holds for its sliding windows (1 MiB).
pub const DEFAULT_MAX_WINDOW_INSTANCES: usize = 1 << 16;
/// Default number of instants the time-to-bound series keeps.
pub const DEFAULT_SERIES_POINTS: usize = 1024;
/// Most grid points a grid may have (each costs 32 bytes per source and work per instance).
pub const MAX_GRID_POINTS: usize = 10_000;
/// The stated largest excess of a summary bound over the exact bound with the default grid, in
/// percent: the 68 test runs of `online_tests.rs` measured 19.1 % at most (asserted there).
pub const MEASURED_MAX_EXCESS_PERCENT: f64 = 20.0;

/// A geometric grid of window lengths: Δ_0 = start, Δ_{k+1} = max(⌊Δ_k·ratio⌋, Δ_k + 1), the
/// last one clamped to end. Consecutive lengths differ by at most `ratio`, or by 1 ns where
/// Δ_k·(ratio − 1) < 1 (every integer Δ there is a grid point, so lookups there are exact).
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    start_ns: u64,
    end_ns: u64,
    ratio: f64,
    points: Arc<[u64]>,
}

impl Default for Grid {
    fn default() -> Self {
        Grid::new(
            DEFAULT_GRID_START_NS,
            DEFAULT_GRID_END_NS,
            DEFAULT_GRID_RATIO,
        )
        .expect("the default grid is valid")
    }
}

impl Grid {
    /// Errors name the parameter and its range; the caller adds the flag.
    pub fn new(start_ns: u64, end_ns: u64, ratio: f64) -> Result<Grid, BoundError> {
        let bad = |message: String| BoundError::Input {
            origin: "online bound grid".into(),
            message,
        };
        if start_ns == 0 {
            return Err(bad(
                "start must be >= 1 ns (an empty window holds nothing)".into()
            ));
        }
        if end_ns < start_ns {
            return Err(bad(format!(
                "end {end_ns} ns must be >= start {start_ns} ns"
            )));
        }
        if !(ratio.is_finite() && ratio > 1.0) {
            return Err(bad(format!("ratio must be a number > 1, got {ratio}")));
        }
        let mut points = vec![start_ns];
        let mut v = start_ns;
        while v < end_ns {
            // f64 holds every integer below 2^53 exactly; above it the floor may round, which
            // only moves a grid point, never soundness.
            let next = ((v as f64) * ratio).floor() as u64;
            v = next.max(v + 1).min(end_ns);
            points.push(v);
            if points.len() > MAX_GRID_POINTS {
                return Err(bad(format!(
                    "{start_ns}..{end_ns} ns at ratio {ratio} needs more than {MAX_GRID_POINTS} \
                     window lengths; raise the ratio or narrow the range"
                )));
            }
        }
        Ok(Grid {
            start_ns,
            end_ns,
            ratio,
            points: points.into(),
        })
    }

    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }
    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }
    pub fn ratio(&self) -> f64 {
        self.ratio
    }
    /// The window lengths, increasing.
    pub fn points(&self) -> &[u64] {
        &self.points
    }
}

/// One interrupt source of one CPU, summarised online (see the module doc).
#[derive(Clone, Debug)]
pub struct OnlineSource {
    name: String,
    kind: SourceKind,
    grid: Arc<[u64]>,
    max_window_instances: usize,
    count: u64,
    owcet_ns: u64,
    omiat_ns: Option<u64>,
    total_ns: u64,
    /// Previous accepted instance: (arrival, end).
    last: Option<(u64, u64)>,
    /// Instances that overlapped the previous one or shared its arrival (not counted).
    rejected: u64,
    /// (arrival, duration) of instances `base..count`, the current window of the largest
    /// tracked Δ.
    held: VecDeque<(u64, u64)>,
    base: u64,
    /// Grid points `0..tracked` are maintained; the others stopped at the memory cap.
    tracked: usize,
    /// Per grid point: index of the current window's first instance, and the window's demand.
    lo: Vec<u64>,
    sum_ns: Vec<u64>,
    /// Per grid point: the largest demand and count of any window of that length so far.
    best_demand_ns: Vec<u64>,
    best_count: Vec<u64>,
}

impl OnlineSource {
    /// `max_window_instances` is clamped to ≥ 1.
    pub fn new(name: &str, kind: SourceKind, grid: &Grid, max_window_instances: usize) -> Self {
        let n = grid.points.len();
        OnlineSource {
            name: name.to_string(),
            kind,
            grid: Arc::clone(&grid.points),
            max_window_instances: max_window_instances.max(1),
            count: 0,
            owcet_ns: 0,
            omiat_ns: None,
            total_ns: 0,
            last: None,
            rejected: 0,
            held: VecDeque::new(),
            base: 0,
            tracked: n,
            lo: vec![0; n],
            sum_ns: vec![0; n],
            best_demand_ns: vec![0; n],
            best_count: vec![0; n],
        }
    }

    /// Adds the next instance (arrivals must increase). An instance that arrives at or before
    /// the previous one, or before the previous one ended, is rejected and counted — one line
    /// cannot interrupt itself on one CPU, the exact reader refuses such data
    /// ([`super::InterruptSource::build`]). Returns whether it was counted.
    pub fn push(&mut self, start_ns: u64, duration_ns: u64) -> bool {
        // Every window no longer than the gap since the previous arrival has dropped all earlier
        // instances (each arrived at or before the previous one, so its window ended by now).
        let gap = self.last.map_or(u64::MAX, |(prev_start, _)| {
            start_ns.saturating_sub(prev_start)
        });
        if let Some((prev_start, prev_end)) = self.last {
            if start_ns <= prev_start || start_ns < prev_end {
                self.rejected += 1;
                return false;
            }
            let gap = start_ns - prev_start;
            self.omiat_ns = Some(self.omiat_ns.map_or(gap, |m| m.min(gap)));
        }
        self.last = Some((start_ns, start_ns.saturating_add(duration_ns)));
        self.owcet_ns = self.owcet_ns.max(duration_ns);
        // Instances do not overlap, so any sum of their durations is below the span they
        // cover: the additions cannot overflow; saturating only documents it.
        self.total_ns = self.total_ns.saturating_add(duration_ns);
        let idx = self.count;
        self.count += 1;
        self.held.push_back((start_ns, duration_ns));
        // Those windows hold the new instance alone: no walk through the held instances. On a
        // source arriving every few ms this is about half of the grid, and the bound's cost per
        // interrupt event is mostly this loop.
        let alone = self.grid[..self.tracked].partition_point(|&delta| delta <= gap);
        for k in 0..alone {
            self.lo[k] = idx;
            self.sum_ns[k] = duration_ns;
            self.best_demand_ns[k] = self.best_demand_ns[k].max(duration_ns);
            self.best_count[k] = self.best_count[k].max(1);
        }
        for k in alone..self.tracked {
            let delta = self.grid[k];
            let (mut lo, mut sum) = (self.lo[k], self.sum_ns[k]);
            // The window anchored at instance `lo` is [a_lo, a_lo + Δ): it is complete once an
            // arrival reaches its end (its best was taken as it grew).
            while lo < idx {
                let (s, d) = self.held[(lo - self.base) as usize];
                if s.saturating_add(delta) > start_ns {
                    break;
                }
                sum -= d;
                lo += 1;
            }
            sum = sum.saturating_add(duration_ns);
            self.lo[k] = lo;
            self.sum_ns[k] = sum;
            // Any later-anchored window over the instances seen holds a suffix of this one.
            self.best_demand_ns[k] = self.best_demand_ns[k].max(sum);
            self.best_count[k] = self.best_count[k].max(idx + 1 - lo);
        }
        while self.tracked > 1
            && self.count - self.lo[self.tracked - 1] > self.max_window_instances as u64
        {
            self.tracked -= 1;
        }
        let keep_from = self.lo[self.tracked - 1];
        while self.base < keep_from {
            self.held.pop_front();
            self.base += 1;
        }
        true
    }

    /// U(Δ) = min_j ⌈Δ/Δ_j⌉·v_j over the tracked grid points (module doc). Terms past the
    /// first Δ_g ≥ Δ are ≥ v_g (curves are non-decreasing), so the scan stops there; the
    /// terms before it matter where Δ is close to a multiple of a shorter Δ_j.
    fn curve(&self, delta_ns: u64, best: &[u64]) -> u64 {
        let tracked = &self.grid[..self.tracked];
        let g = tracked.partition_point(|&d| d < delta_ns);
        let upto = (g + 1).min(self.tracked);
        (0..upto)
            .map(|j| delta_ns.div_ceil(tracked[j]).saturating_mul(best[j]))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Interrupt time of this source's held instances inside [from, to) (each clipped to it).
    pub fn interrupt_time_ns(&self, from_ns: u64, to_ns: u64) -> u64 {
        // Ends are sorted like arrivals since instances do not overlap.
        let i = self
            .held
            .partition_point(|&(s, d)| s.saturating_add(d) <= from_ns);
        self.held
            .range(i..)
            .take_while(|&&(s, _)| s < to_ns)
            .map(|&(s, d)| events::overlap_ns(s, d, from_ns, to_ns))
            .sum()
    }

    /// Arrival of the oldest held instance: interrupt time before it is no longer known.
    pub fn held_from_ns(&self) -> Option<u64> {
        self.held.front().map(|&(s, _)| s)
    }

    /// The largest window length still maintained exactly (the grid's end unless the memory
    /// cap lowered it).
    pub fn tracked_end_ns(&self) -> u64 {
        self.grid[self.tracked - 1]
    }

    pub fn is_shortened(&self) -> bool {
        self.tracked < self.grid.len()
    }

    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    pub fn total_ns(&self) -> u64 {
        self.total_ns
    }

    /// Instances held now for the sliding windows.
    pub fn held_len(&self) -> usize {
        self.held.len()
    }

    pub fn heap_bytes(&self) -> usize {
        self.held.capacity() * std::mem::size_of::<(u64, u64)>()
            + (self.lo.capacity()
                + self.sum_ns.capacity()
                + self.best_demand_ns.capacity()
                + self.best_count.capacity())
                * std::mem::size_of::<u64>()
            + self.name.capacity()
    }

    fn set_max_window_instances(&mut self, n: usize) {
        self.max_window_instances = n.max(1);
    }
}

impl Interference for OnlineSource {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> SourceKind {
        self.kind
    }
    fn count(&self) -> u64 {
        self.count
    }
    fn owcet_ns(&self) -> u64 {
        self.owcet_ns
    }
    fn omiat_ns(&self) -> Option<u64> {
        self.omiat_ns
    }
    fn demand_ns(&self, delta_ns: u64) -> u64 {
        if delta_ns == 0 || self.count == 0 {
            return 0;
        }
        self.curve(delta_ns, &self.best_demand_ns)
            .min(self.total_ns)
            .min(self.arrivals(delta_ns).saturating_mul(self.owcet_ns))
    }
    fn arrivals(&self, delta_ns: u64) -> u64 {
        if delta_ns == 0 || self.count == 0 {
            return 0;
        }
        let by_gap = self.omiat_ns.map_or(1, |m| delta_ns.div_ceil(m));
        self.curve(delta_ns, &self.best_count)
            .min(self.count)
            .min(by_gap)
    }
}

#[derive(Clone, Debug, Default)]
struct CpuState {
    sources: BTreeMap<SourceKey, OnlineSource>,
    max_non_interrupt_delay_ns: Option<u64>,
    max_latency_ns: Option<u64>,
}

/// The time-to-bound series, decimated: instants recorded at calls 0, s, 2s, … (s doubles
/// whenever the store is full, dropping every other instant), plus always the latest call.
#[derive(Clone, Debug)]
struct Series {
    max_points: usize,
    stride: u64,
    calls: u64,
    kept: Vec<Vec<BoundSeriesPoint>>,
    latest: Option<Vec<BoundSeriesPoint>>,
    /// The values of the last computed instant, with the state version and options they are for.
    cache: Option<(u64, Options, Vec<CpuPoint>)>,
}

/// One CPU's series values: (cpu, sliding-window bound, observed maximum).
type CpuPoint = (u32, Option<u64>, Option<u64>);

/// A run's bound, summarised online. See the module doc for what is kept, the soundness
/// argument and the memory bound.
#[derive(Clone, Debug)]
pub struct OnlineBound {
    grid: Grid,
    max_window_instances: usize,
    cpus: BTreeMap<u32, CpuState>,
    matcher: InstanceMatcher,
    thread: ThreadMeasurer,
    /// Thread terms measured in the kernel (the eBPF preemptirq reduction) with the events it
    /// lost; they take precedence over [`Self::thread`] for their CPU.
    kernel_thread: BTreeMap<u32, (super::thread::CpuThreadMeasure, u64)>,
    lost: BTreeMap<u32, u64>,
    assume_thread_ns: Option<u64>,
    /// Series time 0.
    origin_ns: Option<u64>,
    first_event_ns: Option<u64>,
    /// Bumped on every change that can move a bound (the series' cache key).
    version: u64,
    series: Series,
}

impl OnlineBound {
    /// `cpus` are reported even before their first event (skipped with a warning while they
    /// have no thread terms); CPUs seen in events or samples are added.
    pub fn new(cpus: &[u32], grid: Grid) -> Self {
        OnlineBound {
            grid,
            max_window_instances: DEFAULT_MAX_WINDOW_INSTANCES,
            cpus: cpus.iter().map(|&c| (c, CpuState::default())).collect(),
            matcher: InstanceMatcher::default(),
            thread: ThreadMeasurer::default(),
            kernel_thread: BTreeMap::new(),
            lost: BTreeMap::new(),
            assume_thread_ns: None,
            origin_ns: None,
            first_event_ns: None,
            version: 0,
            series: Series {
                max_points: DEFAULT_SERIES_POINTS,
                stride: 1,
                calls: 0,
                kept: Vec::new(),
                latest: None,
                cache: None,
            },
        }
    }

    /// Caps the instances one source holds (clamped to ≥ 1; see the module doc on memory).
    pub fn with_max_window_instances(mut self, n: usize) -> Self {
        self.max_window_instances = n.max(1);
        for c in self.cpus.values_mut() {
            for s in c.sources.values_mut() {
                s.set_max_window_instances(n);
            }
        }
        self
    }

    /// Caps the instants the time-to-bound series keeps (clamped to ≥ 2: the first and the
    /// latest).
    pub fn with_series_points(mut self, max_points: usize) -> Self {
        self.series.max_points = max_points.max(2);
        self
    }

    /// A CPU's thread terms as measured so far in the kernel (running maxima of the in-kernel
    /// preemptirq reduction, `rtscope_trace::preemptirq`), with the events it did not see. They
    /// replace those of the event stream for this CPU; the caller passes each new reading (the
    /// maxima only grow). Lost events make the terms possibly low: the report says so.
    pub fn set_kernel_thread(
        &mut self,
        cpu: u32,
        m: super::thread::CpuThreadMeasure,
        lost_events: u64,
    ) {
        if self.kernel_thread.get(&cpu) != Some(&(m.clone(), lost_events)) {
            self.kernel_thread.insert(cpu, (m, lost_events));
            self.cpus.entry(cpu).or_default();
            self.version += 1;
        }
    }

    /// The thread term for CPUs with neither preemptirq events nor samples (an estimate), as
    /// `rtscope bound --assume-thread-ns`.
    pub fn set_assume_thread_ns(&mut self, ns: Option<u64>) {
        self.assume_thread_ns = ns;
        self.version += 1;
    }

    /// Series time 0 (the run's start); by default the first event's or first point's instant.
    /// Takes effect for points recorded afterwards.
    pub fn set_origin(&mut self, t0_ns: u64) {
        self.origin_ns = Some(t0_ns);
    }

    /// Kernel events as they arrive: per CPU in time order, any interleaving across CPUs.
    /// Interrupt instances are paired by [`events::InstanceMatcher`], as the exact analysis
    /// pairs them; preemptirq events feed the thread terms.
    pub fn push_events(&mut self, events: &[Event]) {
        for e in events {
            self.first_event_ns = Some(self.first_event_ns.map_or(e.ts_ns, |f| f.min(e.ts_ns)));
            self.thread.push(e);
            let cpu = self.cpus.entry(e.cpu).or_default();
            if let Some(x) = self.matcher.push(e) {
                let (grid, cap) = (&self.grid, self.max_window_instances);
                cpu.sources
                    .entry(x.key)
                    .or_insert_with(|| {
                        let (name, kind) = x.key.name();
                        OnlineSource::new(&name, kind, grid, cap)
                    })
                    .push(x.start_ns, x.duration_ns);
            }
        }
        if !events.is_empty() {
            self.version += 1;
        }
    }

    /// A sample's latency and its non-interrupt delay, for the fallback thread terms (used on
    /// CPUs without preemptirq events). The non-interrupt delay must be what the exact analysis
    /// subtracts ([`events::non_interrupt_delay`]): the latency minus the time IRQ handlers,
    /// vectors and NMIs of the sample's CPU ran inside [expected, expected + latency) — not
    /// softirqs or threads, which attribution also names. [`Self::push_raw_sample`] computes it
    /// from the instances held here; a caller with its own figure of that quantity uses this.
    pub fn push_sample(&mut self, cpu: u32, latency_ns: u64, non_interrupt_delay_ns: u64) {
        let c = self.cpus.entry(cpu).or_default();
        c.max_latency_ns = Some(c.max_latency_ns.map_or(latency_ns, |m| m.max(latency_ns)));
        c.max_non_interrupt_delay_ns = Some(
            c.max_non_interrupt_delay_ns
                .map_or(non_interrupt_delay_ns, |m| m.max(non_interrupt_delay_ns)),
        );
        self.version += 1;
    }

    /// A sample, its non-interrupt delay computed from the held instances
    /// ([`Self::interrupt_time_ns`]). Equal to the exact analysis' figure when the events up
    /// to the sample's end were pushed first and its window lies within the held history (the
    /// last Δ_max); otherwise interrupt time is missed and the delay comes out larger — the
    /// thread term, and the bound, can then only be higher than the exact one.
    pub fn push_raw_sample(&mut self, s: &RawSample) {
        let to = s.expected_ns.saturating_add(s.latency_ns);
        let irq = self.interrupt_time_ns(s.cpu, s.expected_ns, to);
        self.push_sample(s.cpu, s.latency_ns, s.latency_ns.saturating_sub(irq));
    }

    /// Time the interrupt handlers of `cpu` held here ran inside [from, to), each instance
    /// clipped to the window and each source counted apart (an NMI nested in an IRQ counts in
    /// both, as in the exact analysis).
    pub fn interrupt_time_ns(&self, cpu: u32, from_ns: u64, to_ns: u64) -> u64 {
        self.cpus.get(&cpu).map_or(0, |c| {
            c.sources
                .values()
                .map(|s| s.interrupt_time_ns(from_ns, to_ns))
                .sum()
        })
    }

    /// Events lost per CPU during capture (named in the report's warnings).
    pub fn set_lost(&mut self, lost_per_cpu: &BTreeMap<u32, u64>) {
        self.lost = lost_per_cpu.clone();
    }

    /// The CPU's sources in rtsl order (NMI first, then IRQs by number, then by name).
    pub fn sources(&self, cpu: u32) -> Vec<&OnlineSource> {
        let mut v: Vec<&OnlineSource> = self
            .cpus
            .get(&cpu)
            .map(|c| c.sources.values().collect())
            .unwrap_or_default();
        v.sort_by_key(|s| super::source_order(&s.name, s.kind));
        v
    }

    /// A CPU's thread terms (and whether estimated) and observed maximum, or None while it has
    /// none — the choice the exact analysis makes ([`events::trace_input`]).
    fn cpu_terms(
        &self,
        cpu: u32,
        c: &CpuState,
    ) -> Option<(rtscope_model::bound::ThreadVars, bool, u64)> {
        let measured = match self.kernel_thread.get(&cpu) {
            Some((m, _)) if m.preemptirq_events > 0 => Some(m),
            _ => self.thread.get(cpu),
        };
        events::thread_terms(
            measured,
            c.max_non_interrupt_delay_ns,
            self.assume_thread_ns,
        )
    }

    fn analyze_cpus(&self, opts: &Options, warnings: &mut Vec<String>) -> Vec<CpuBound> {
        let mut out = Vec::new();
        for (&cpu, c) in &self.cpus {
            if let Some((m, lost)) = self.kernel_thread.get(&cpu) {
                if *lost > 0 && m.preemptirq_events > 0 {
                    warnings.push(format!(
                        "CPU {cpu}: the in-kernel preemptirq reduction missed {lost} events: its \
                         thread terms may be low, so this CPU's bound is not sound"
                    ));
                }
            }
            let Some((thread, estimated, irq_entry_exit_ns)) = self.cpu_terms(cpu, c) else {
                warnings.push(events::skipped_cpu_warning(cpu));
                continue;
            };
            out.push(super::analyze_sources(
                cpu,
                &thread,
                estimated,
                irq_entry_exit_ns,
                c.max_latency_ns,
                &self.sources(cpu),
                opts,
            ));
        }
        out
    }

    /// What the report says about how it was summarised.
    pub fn info(&self) -> OnlineSummaryInfo {
        OnlineSummaryInfo {
            input_kind: "summary".into(),
            grid_start_ns: self.grid.start_ns,
            grid_end_ns: self.grid.end_ns,
            grid_ratio: self.grid.ratio,
            grid_points: self.grid.points.len() as u64,
            max_window_instances: self.max_window_instances as u64,
            shortened_sources: self
                .cpus
                .values()
                .flat_map(|c| c.sources.values())
                .filter(|s| s.is_shortened())
                .count() as u64,
        }
    }

    /// The bound so far: all six characterizations per CPU, an estimate unless the CPU's thread
    /// terms came from preemptirq events (as [`super::analyze`] labels it), with the series.
    pub fn report(&self, opts: &Options) -> BoundReport {
        let mut warnings = Vec::new();
        let unmatched = self.matcher.unmatched();
        if unmatched > 0 {
            warnings.push(events::unmatched_warning(unmatched));
        }
        for (cpu, c) in &self.cpus {
            for s in c.sources.values() {
                if s.rejected > 0 {
                    warnings.push(format!(
                        "CPU {cpu} source {}: {} instances overlap the previous instance of the \
                         same source or share its arrival (one line cannot interrupt itself on \
                         one CPU: corrupt data); not counted",
                        s.name, s.rejected
                    ));
                }
                if s.is_shortened() {
                    warnings.push(format!(
                        "CPU {cpu} source {}: more than {} instances in one window of {} ns; \
                         windows longer than {} ns are extrapolated (never below the exact \
                         curve, less tight)",
                        s.name,
                        self.max_window_instances,
                        s.grid[s.tracked],
                        s.tracked_end_ns()
                    ));
                }
            }
        }
        let cpus = self.analyze_cpus(opts, &mut warnings);
        warnings.extend(events::lost_warnings(&self.lost));
        let mut r = super::report_from(cpus, warnings, opts, "trace");
        let reduction: BTreeMap<u32, u64> = self
            .kernel_thread
            .iter()
            .filter(|(_, (m, _))| m.preemptirq_events > 0)
            .map(|(&c, (_, lost))| (c, *lost))
            .collect();
        super::label_losses(&mut r, &self.lost, &reduction);
        r.online_summary = Some(self.info());
        r.series = self.series();
        r
    }

    /// Records the time-to-bound series at `t_ns` (each CPU's sliding-window bound and observed
    /// maximum so far). Call at any instants, in time order; at most `series_points` instants
    /// are kept (every other instant is dropped and the spacing doubled when full): memory does
    /// not grow with the number of calls.
    pub fn record_point(&mut self, t_ns: u64, opts: &Options) {
        let origin = *self
            .origin_ns
            .get_or_insert(self.first_event_ns.map_or(t_ns, |f| f.min(t_ns)));
        let t_s = t_ns.saturating_sub(origin) as f64 * 1e-9;
        let values = match &self.series.cache {
            Some((v, o, vals)) if *v == self.version && o == opts => vals.clone(),
            _ => {
                let vals: Vec<CpuPoint> = self
                    .cpus
                    .iter()
                    .filter_map(|(&cpu, c)| {
                        let (thread, _, e) = self.cpu_terms(cpu, c)?;
                        let srcs: Vec<_> = self
                            .sources(cpu)
                            .into_iter()
                            .map(|s| super::WithEntryExit::irq(s, e))
                            .collect();
                        let sw = super::sliding_window(&thread, &srcs, opts);
                        Some((cpu, sw.latency_ns, c.max_latency_ns))
                    })
                    .collect();
                self.series.cache = Some((self.version, *opts, vals.clone()));
                vals
            }
        };
        let points: Vec<BoundSeriesPoint> = values
            .into_iter()
            .map(|(cpu, sw, obs)| BoundSeriesPoint {
                t_s,
                cpu,
                sliding_window_ns: sw,
                observed_max_ns: obs,
            })
            .collect();
        let s = &mut self.series;
        let call = s.calls;
        s.calls += 1;
        // The stride is a power of two: `call` is one of its multiples when its low bits are 0.
        if call & (s.stride - 1) == 0 {
            if s.kept.len() + 1 >= s.max_points {
                // kept[i] was recorded at call i·stride: keep the even ones.
                let mut i = 0usize;
                s.kept.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                s.stride *= 2;
            }
            // The stride is a power of two: `call` is one of its multiples when its low bits are 0.
            if call & (s.stride - 1) == 0 {
                s.kept.push(points);
                s.latest = None;
                return;
            }
        }
        s.latest = Some(points);
    }

    /// The recorded series: the kept instants in time order, then the latest call's.
    pub fn series(&self) -> Vec<BoundSeriesPoint> {
        self.series
            .kept
            .iter()
            .chain(self.series.latest.iter())
            .flatten()
            .cloned()
            .collect()
    }

    /// Heap held (approximate: container capacities and map entries).
    pub fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(SourceKey, OnlineSource)>();
        let cpus: usize = self
            .cpus
            .values()
            .map(|c| {
                std::mem::size_of::<(u32, CpuState)>()
                    + c.sources
                        .values()
                        .map(|s| entry + s.heap_bytes())
                        .sum::<usize>()
            })
            .sum();
        let point = std::mem::size_of::<BoundSeriesPoint>();
        let series = self.series.kept.capacity() * std::mem::size_of::<Vec<BoundSeriesPoint>>()
            + self
                .series
                .kept
                .iter()
                .chain(self.series.latest.iter())
                .map(|v| v.capacity() * point)
                .sum::<usize>()
            + self
                .series
                .cache
                .as_ref()
                .map_or(0, |c| c.2.capacity() * std::mem::size_of::<CpuPoint>());
        self.grid.points.len() * std::mem::size_of::<u64>()
            + cpus
            + self.matcher.heap_bytes()
            + self.thread.heap_bytes()
            + self.lost.len() * std::mem::size_of::<(u32, u64)>()
            + series
    }
}
