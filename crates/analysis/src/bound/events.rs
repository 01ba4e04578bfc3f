//! rtscope's own trace events → per-CPU interrupt-source instance lists.
//!
//! IRQ lines: `irq:irq_handler_entry/exit` (source = the IRQ number). System vectors:
//! `irq_vectors:*_entry/exit` (source = the vector's name). NMI: `nmi:nmi_handler` fires after the
//! handler with its duration, so the instance is (ts − delta, delta). Entries and exits are paired
//! by [`crate::interrupts`], the matcher the attribution uses too; an entry whose exit was lost
//! (or an exit without entry) is dropped and counted: a half-seen instance has no duration.

use super::{thread, BoundError, BoundInput, CpuInput, InterruptSource, RawInstance, SourceKind};
use crate::interrupts::{boundary, Context, ContextStack};
use rtscope_model::bound::ThreadVars;
use rtscope_model::event::{Event, EventKind, Vector};
use rtscope_model::record::RawSample;
use std::collections::BTreeMap;

/// Source name of an x86 system vector: the model's tracepoint stem (`local_timer`, …).
pub fn vector_name(v: Vector) -> String {
    v.name()
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extracted {
    /// CPU → sources, in rtsl order.
    pub cpus: BTreeMap<u32, Vec<InterruptSource>>,
    /// Entries never closed plus exits never opened (lost events or trace edges).
    pub unmatched: u64,
    pub warnings: Vec<String>,
}

/// One interrupt source of a CPU as the trace names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKey {
    Irq(u32),
    Vector(Vector),
    Nmi,
}

impl SourceKey {
    pub fn name(self) -> (String, SourceKind) {
        match self {
            SourceKey::Irq(n) => (n.to_string(), SourceKind::Irq),
            SourceKey::Vector(v) => (vector_name(v), SourceKind::Irq),
            SourceKey::Nmi => ("nmi".into(), SourceKind::Nmi),
        }
    }
}

/// One completed interrupt instance: its source and CPU, arrival and duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    pub cpu: u32,
    pub key: SourceKey,
    pub start_ns: u64,
    pub duration_ns: u64,
}

/// Pairs entry and exit events into interrupt instances, event by event (per CPU in time
/// order, any interleaving across CPUs), with the one matcher the attribution uses too
/// ([`crate::interrupts::ContextStack`]: nesting, lost exits and entries, a context switch
/// closing what is open); every half-seen instance is counted unmatched. Memory: a bounded
/// stack of open frames per CPU.
#[derive(Clone, Debug, Default)]
pub struct InstanceMatcher {
    cpus: BTreeMap<u32, ContextStack>,
    /// Exits stamped before their entry (time going backwards in a broken trace).
    inverted: u64,
}

impl InstanceMatcher {
    /// The instance `e` completes, if any. NMIs complete at their only event.
    pub fn push(&mut self, e: &Event) -> Option<Instance> {
        let (ctx, entry) = match e.kind {
            EventKind::Nmi { delta_ns } => {
                return Some(Instance {
                    cpu: e.cpu,
                    key: SourceKey::Nmi,
                    start_ns: e.ts_ns.saturating_sub(delta_ns),
                    duration_ns: delta_ns,
                })
            }
            EventKind::Switch { .. } => {
                if let Some(st) = self.cpus.get_mut(&e.cpu) {
                    st.clear();
                }
                return None;
            }
            ref k => boundary(k)?,
        };
        let key = match ctx {
            Context::Irq(n) => SourceKey::Irq(n),
            Context::Vector(v) => SourceKey::Vector(v),
            // Softirqs run in thread-like context with interrupts on: not an interrupt source.
            Context::Softirq(_) | Context::Nmi => return None,
        };
        let st = self.cpus.entry(e.cpu).or_default();
        if entry {
            st.enter(ctx, e.ts_ns);
            return None;
        }
        match st.exit(ctx) {
            Some(f) if e.ts_ns >= f.start_ns => Some(Instance {
                cpu: e.cpu,
                key,
                start_ns: f.start_ns,
                duration_ns: e.ts_ns - f.start_ns,
            }),
            Some(_) => {
                self.inverted += 1;
                None
            }
            None => None,
        }
    }

    /// Unpartnered events so far, counting the entries still open as at the end of a trace.
    pub fn unmatched(&self) -> u64 {
        self.inverted
            + self
                .cpus
                .values()
                .map(|st| st.unmatched() + st.frames().len() as u64)
                .sum::<u64>()
    }

    /// Heap held by the open entries (approximate), for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.cpus
            .values()
            .map(|st| std::mem::size_of::<(u32, ContextStack)>() + st.heap_bytes())
            .sum()
    }
}

/// Pure: turns an event stream (any CPU interleaving; per CPU in time order, as a trace file
/// stores it) into per-CPU interrupt sources. `row` in errors is the event's index in `events`.
pub fn interrupt_sources(events: &[Event]) -> Result<Extracted, BoundError> {
    let mut matcher = InstanceMatcher::default();
    let mut inst: BTreeMap<(u32, SourceKey), Vec<RawInstance>> = BTreeMap::new();
    let mut cpus_seen = std::collections::BTreeSet::new();
    for (i, e) in events.iter().enumerate() {
        cpus_seen.insert(e.cpu);
        if let Some(x) = matcher.push(e) {
            inst.entry((x.cpu, x.key)).or_default().push(RawInstance {
                start_ns: x.start_ns,
                duration_ns: x.duration_ns,
                row: i as u64,
            });
        }
    }
    let unmatched = matcher.unmatched();
    let mut out = Extracted {
        unmatched,
        ..Default::default()
    };
    for cpu in cpus_seen {
        out.cpus.insert(cpu, Vec::new());
    }
    for ((cpu, key), raw) in inst {
        let (name, kind) = key.name();
        let origin = format!("trace CPU {cpu} source {name} (rows are event indices)");
        let (s, n) = InterruptSource::build(&name, kind, raw, &origin)?;
        if n.out_of_order > 0 {
            out.warnings.push(format!(
                "{origin}: {} instances out of order, sorted",
                n.out_of_order
            ));
        }
        out.cpus.entry(cpu).or_default().push(s);
    }
    for v in out.cpus.values_mut() {
        let mut c = CpuInput {
            cpu: 0,
            thread: ThreadVars::default(),
            thread_estimated: false,
            irq_entry_exit_ns: 0,
            observed_max_latency_ns: None,
            sources: std::mem::take(v),
        };
        c.sort_sources();
        *v = c.sources;
    }
    if unmatched > 0 {
        out.warnings.push(unmatched_warning(unmatched));
    }
    Ok(out)
}

pub(crate) fn unmatched_warning(unmatched: u64) -> String {
    format!(
        "{unmatched} interrupt entry/exit events had no partner (lost events or trace edges); \
         those instances are not counted"
    )
}

pub(crate) fn lost_warnings(lost_per_cpu: &BTreeMap<u32, u64>) -> Vec<String> {
    lost_per_cpu
        .iter()
        .filter(|(_, lost)| **lost > 0)
        .map(|(cpu, lost)| {
            format!(
                "CPU {cpu}: {lost} events lost during capture: interrupts may be missing, the bound may be low"
            )
        })
        .collect()
}

pub(crate) fn skipped_cpu_warning(cpu: u32) -> String {
    format!("CPU {cpu}: no preemptirq events and no samples: no thread terms, CPU skipped")
}

/// A CPU's thread terms and whether they are an estimate: measured from preemptirq events when
/// the CPU had any; else the fallback from the largest non-interrupt delay of its samples; else
/// the user's assumed figure; else none (the CPU cannot be analysed).
pub(crate) fn thread_terms(
    measured: Option<&thread::CpuThreadMeasure>,
    max_non_interrupt_delay_ns: Option<u64>,
    assume_thread_ns: Option<u64>,
) -> Option<(ThreadVars, bool, u64)> {
    match (
        measured.filter(|m| m.preemptirq_events > 0),
        max_non_interrupt_delay_ns,
        assume_thread_ns,
    ) {
        (Some(m), _, _) => Some((m.vars, false, m.irq_entry_exit_ns)),
        (None, Some(d), _) | (None, None, Some(d)) => Some((thread::fallback_vars(d), true, 0)),
        (None, None, None) => None,
    }
}

/// Time an instance (start, duration) ran inside [from, to).
pub(crate) fn overlap_ns(start_ns: u64, duration_ns: u64, from: u64, to: u64) -> u64 {
    let s = start_ns.max(from);
    let e = start_ns.saturating_add(duration_ns).min(to);
    e.saturating_sub(s)
}

/// Per CPU: (the largest non-interrupt part of a sample's latency, the largest latency).
///
/// The non-interrupt part of a sample is its latency minus the time interrupt handlers on its
/// CPU ran inside [expected, expected + latency). This is the fallback for the thread terms on
/// kernels without preemptirq tracepoints: an observed value, so an ESTIMATE, NOT A SOUND BOUND.
/// (An NMI nested in an IRQ is subtracted twice, which can only lower the estimate slightly.)
pub fn non_interrupt_delay(
    samples: &[RawSample],
    sources: &BTreeMap<u32, Vec<InterruptSource>>,
) -> BTreeMap<u32, (u64, u64)> {
    let mut out: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    for smp in samples {
        let irq = irq_time_in_sample(
            smp,
            sources.get(&smp.cpu).map(|v| v.as_slice()).unwrap_or(&[]),
        );
        let e = out.entry(smp.cpu).or_default();
        e.0 = e.0.max(smp.latency_ns.saturating_sub(irq));
        e.1 = e.1.max(smp.latency_ns);
    }
    out
}

/// Time interrupt handlers of `sources` ran inside the sample's window [expected, expected + latency).
fn irq_time_in_sample(smp: &RawSample, sources: &[InterruptSource]) -> u64 {
    let from = smp.expected_ns;
    let to = smp.expected_ns.saturating_add(smp.latency_ns);
    let mut irq = 0u64;
    for src in sources {
        let (a, d) = (src.starts(), src.durations());
        let mut i = src.ended_by(from);
        while i < a.len() && a[i] < to {
            irq += overlap_ns(a[i], d[i], from, to);
            i += 1;
        }
    }
    irq
}

/// Pure: the analysis input from an rtscope trace (events + the run's samples). Per CPU, the
/// thread terms are measured from preemptirq events when the trace has them ([`thread::measure`]);
/// otherwise they fall back to the largest non-interrupt part of a sample's latency
/// ([`non_interrupt_delay`]) and the CPU is marked `thread_estimated` — an ESTIMATE, NOT A SOUND
/// BOUND. A CPU with neither uses `assume_thread_ns` (the user's own figure for the thread term,
/// also labelled an estimate) or is skipped with a warning.
pub fn trace_input(
    events: &[Event],
    samples: &[RawSample],
    assume_thread_ns: Option<u64>,
) -> Result<BoundInput, BoundError> {
    let x = interrupt_sources(events)?;
    let measured = thread::measure(events);
    let delays = non_interrupt_delay(samples, &x.cpus);
    let mut warnings = x.warnings;
    let mut cpus = Vec::new();
    let mut all: std::collections::BTreeSet<u32> = x.cpus.keys().copied().collect();
    all.extend(delays.keys().copied());
    let mut srcs = x.cpus;
    for cpu in all {
        let observed = delays.get(&cpu).map(|d| d.1);
        let Some((thread, estimated, irq_entry_exit_ns)) = thread_terms(
            measured.get(&cpu),
            delays.get(&cpu).map(|d| d.0),
            assume_thread_ns,
        ) else {
            warnings.push(skipped_cpu_warning(cpu));
            continue;
        };
        let mut c = CpuInput {
            cpu,
            thread,
            thread_estimated: estimated,
            irq_entry_exit_ns,
            observed_max_latency_ns: observed,
            sources: srcs.remove(&cpu).unwrap_or_default(),
        };
        c.sort_sources();
        cpus.push(c);
    }
    if cpus.is_empty() {
        return Err(BoundError::Input {
            origin: "trace".into(),
            message:
                "no CPU has thread terms: the trace has no preemptirq events (this kernel lacks \
                      them) and no latency samples (record with `rtscope measure --trace`), and no \
                      --assume-thread-ns was given"
                    .into(),
        });
    }
    Ok(BoundInput {
        cpus,
        warnings,
        lost_events: BTreeMap::new(),
    })
}

/// Pure: the analysis input of one traced run, as `rtscope bound --trace` and `rtscope measure
/// --trace --bound` build it. Only samples wholly inside the traced interval `[t0, t1]` (when
/// t1 > t0) are used: outside it their interrupt part cannot be subtracted and the whole latency
/// would count as thread delay. Lost events are named in the warnings (interrupts may be missing,
/// the bound may be low). `series_points` adds the time-to-bound series ([`time_series`]).
pub fn traced_run_input(
    events: &[Event],
    samples: &[RawSample],
    interval: (u64, u64),
    lost_per_cpu: &BTreeMap<u32, u64>,
    assume_thread_ns: Option<u64>,
    series_points: Option<u32>,
    opts: &super::Options,
) -> Result<(BoundInput, Vec<rtscope_model::bound::BoundSeriesPoint>), BoundError> {
    let (t0, t1) = interval;
    let inside: Vec<RawSample> = if t1 > t0 {
        samples
            .iter()
            .filter(|s| s.expected_ns >= t0 && s.expected_ns.saturating_add(s.latency_ns) <= t1)
            .copied()
            .collect()
    } else {
        samples.to_vec()
    };
    let dropped = samples.len() - inside.len();
    let mut input = trace_input(events, &inside, assume_thread_ns)?;
    if dropped > 0 {
        input.warnings.push(format!(
            "{dropped} of {} samples lie outside the traced interval and were not used",
            samples.len()
        ));
    }
    input.warnings.extend(lost_warnings(lost_per_cpu));
    input.lost_events = lost_per_cpu
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(&c, &n)| (c, n))
        .collect();
    let series = match series_points {
        Some(n) if events.iter().any(|e| is_preemptirq(&e.kind)) => {
            time_series_replay(events, &inside, assume_thread_ns, n, opts)
        }
        Some(n) => series_from_input(&input, events, &inside, assume_thread_ns, n, opts),
        None => Vec::new(),
    };
    Ok((input, series))
}

/// Time-to-bound series (the paper's practical claim, §6): at `points` evenly spaced instants of
/// the trace, the `sliding_window` bound computed from the data seen so far and the observed
/// maximum latency so far, per CPU. `events` need not be sorted. Pure.
///
/// The input is extracted once; each instant then takes, per source, the instances that had
/// ended by then, and, per CPU, the samples that had ended by then (their non-interrupt delays
/// are computed once against the whole run's instances — an instance still running at the instant
/// is not yet in the source but does count in a sample it overlaps). No prefix is copied: each
/// source is one growing view ([`super::series`]) that remembers the demand of each window length
/// the fixed point asked for and extends it by the new instances only, so the cost per event is
/// flat while the bound settles (a window length first asked at an instant where the bound grew
/// costs one pass over the prefix). Traces with preemptirq events (measured thread terms) are
/// replayed prefix by prefix ([`time_series_replay`]).
pub fn time_series(
    events: &[Event],
    samples: &[RawSample],
    assume_thread_ns: Option<u64>,
    points: u32,
    opts: &super::Options,
) -> Vec<rtscope_model::bound::BoundSeriesPoint> {
    if events.iter().any(|e| is_preemptirq(&e.kind)) {
        return time_series_replay(events, samples, assume_thread_ns, points, opts);
    }
    let Ok(full) = trace_input(events, samples, assume_thread_ns) else {
        return Vec::new();
    };
    series_from_input(&full, events, samples, assume_thread_ns, points, opts)
}

/// The fast series of [`time_series`] from an input already extracted from the same events and
/// samples (no preemptirq events), so a caller that has it does not extract it twice.
fn series_from_input(
    full: &BoundInput,
    events: &[Event],
    samples: &[RawSample],
    assume_thread_ns: Option<u64>,
    points: u32,
    opts: &super::Options,
) -> Vec<rtscope_model::bound::BoundSeriesPoint> {
    let Some((t0, t1)) = span(events, samples) else {
        return Vec::new();
    };
    // Per CPU: (end, non-interrupt delay, latency) of every sample, by end time, with running
    // maxima.
    struct CpuSamples {
        ends: Vec<u64>,
        max_nid: Vec<u64>,
        max_lat: Vec<u64>,
    }
    let mut per_cpu: BTreeMap<u32, Vec<(u64, u64, u64)>> = BTreeMap::new();
    // Per CPU: each source with its cumulative durations, so a sample's interrupt time costs
    // O(log n) per source however many instances its window covers.
    let srcs: BTreeMap<u32, Vec<(&InterruptSource, Vec<u64>)>> = full
        .cpus
        .iter()
        .map(|c| {
            let s = c
                .sources
                .iter()
                .map(|s| (s, super::series::cumulative(s)))
                .collect();
            (c.cpu, s)
        })
        .collect();
    for smp in samples {
        let (from, to) = (
            smp.expected_ns,
            smp.expected_ns.saturating_add(smp.latency_ns),
        );
        let irq = srcs.get(&smp.cpu).map_or(0, |v| {
            v.iter().fold(0u64, |acc, (s, cum)| {
                acc.saturating_add(super::series::irq_time_in(s, cum, from, to))
            })
        });
        per_cpu.entry(smp.cpu).or_default().push((
            smp.expected_ns.saturating_add(smp.latency_ns),
            smp.latency_ns.saturating_sub(irq),
            smp.latency_ns,
        ));
    }
    let per_cpu: BTreeMap<u32, CpuSamples> = per_cpu
        .into_iter()
        .map(|(cpu, mut v)| {
            v.sort_by_key(|x| x.0);
            let (mut mn, mut ml) = (0u64, 0u64);
            let mut cs = CpuSamples {
                ends: Vec::with_capacity(v.len()),
                max_nid: Vec::with_capacity(v.len()),
                max_lat: Vec::with_capacity(v.len()),
            };
            for (e, n, l) in v {
                mn = mn.max(n);
                ml = ml.max(l);
                cs.ends.push(e);
                cs.max_nid.push(mn);
                cs.max_lat.push(ml);
            }
            (cpu, cs)
        })
        .collect();
    drop(srcs);
    let points = u64::from(points.max(1));
    let mut out = Vec::new();
    let mut views: Vec<Vec<super::series::PrefixSource>> = full
        .cpus
        .iter()
        .map(|c| {
            c.sources
                .iter()
                .map(super::series::PrefixSource::new)
                .collect()
        })
        .collect();
    for k in 1..=points {
        let tk = t0 + (t1 - t0) / points * k + if k == points { (t1 - t0) % points } else { 0 };
        let t_s = (tk - t0) as f64 * 1e-9;
        for (c, views) in full.cpus.iter().zip(views.iter_mut()) {
            let cs = per_cpu.get(&c.cpu);
            let ns = cs.map_or(0, |cs| cs.ends.partition_point(|&e| e <= tk));
            let thread = if !c.thread_estimated {
                c.thread
            } else if ns > 0 {
                thread::fallback_vars(cs.map_or(0, |cs| cs.max_nid[ns - 1]))
            } else if let Some(a) = assume_thread_ns {
                thread::fallback_vars(a)
            } else {
                continue; // no thread terms yet on this CPU
            };
            for v in views.iter_mut() {
                v.advance_to(tk);
            }
            let sources: Vec<&super::series::PrefixSource> =
                views.iter().filter(|v| !v.is_empty()).collect();
            let sw = super::sliding_window(&thread, &sources, opts);
            out.push(rtscope_model::bound::BoundSeriesPoint {
                t_s,
                cpu: c.cpu,
                sliding_window_ns: sw.latency_ns,
                observed_max_ns: if ns > 0 {
                    cs.map(|cs| cs.max_lat[ns - 1])
                } else {
                    None
                },
            });
        }
    }
    out
}

fn is_preemptirq(k: &EventKind) -> bool {
    matches!(
        k,
        EventKind::IrqDisable
            | EventKind::IrqEnable
            | EventKind::PreemptDisable
            | EventKind::PreemptEnable
    )
}

/// First and last instant of a trace (events and sample windows).
fn span(events: &[Event], samples: &[RawSample]) -> Option<(u64, u64)> {
    let first = events
        .iter()
        .map(|e| e.ts_ns)
        .chain(samples.iter().map(|s| s.expected_ns))
        .min()?;
    let last = events
        .iter()
        .map(|e| e.ts_ns)
        .chain(
            samples
                .iter()
                .map(|s| s.expected_ns.saturating_add(s.latency_ns)),
        )
        .max()?;
    Some((first, last))
}

/// The time-to-bound series by replaying the analysis on every prefix of the trace (events and
/// samples up to each instant). Exact for every kind of input, O(points × events × …): used for
/// traces with preemptirq events, and as the reference the fast [`time_series`] is tested against.
pub fn time_series_replay(
    events: &[Event],
    samples: &[RawSample],
    assume_thread_ns: Option<u64>,
    points: u32,
    opts: &super::Options,
) -> Vec<rtscope_model::bound::BoundSeriesPoint> {
    let mut ev: Vec<Event> = events.to_vec();
    ev.sort_by_key(|e| e.ts_ns);
    let mut sm: Vec<RawSample> = samples.to_vec();
    sm.sort_by_key(|s| s.expected_ns.saturating_add(s.latency_ns));
    let first = ev
        .first()
        .map(|e| e.ts_ns)
        .into_iter()
        .chain(sm.first().map(|s| s.expected_ns))
        .min();
    let last = ev
        .last()
        .map(|e| e.ts_ns)
        .into_iter()
        .chain(
            sm.last()
                .map(|s| s.expected_ns.saturating_add(s.latency_ns)),
        )
        .max();
    let (Some(t0), Some(t1)) = (first, last) else {
        return Vec::new();
    };
    let points = points.max(1);
    let mut out = Vec::new();
    for k in 1..=u64::from(points) {
        let tk = t0
            + (t1 - t0) / u64::from(points) * k
            + if k == u64::from(points) {
                (t1 - t0) % u64::from(points)
            } else {
                0
            };
        let ne = ev.partition_point(|e| e.ts_ns <= tk);
        let ns = sm.partition_point(|s| s.expected_ns.saturating_add(s.latency_ns) <= tk);
        let t_s = (tk - t0) as f64 * 1e-9;
        // A prefix can cut an IRQ between entry and exit: that instance is simply not seen yet.
        let Ok(input) = trace_input(&ev[..ne], &sm[..ns], assume_thread_ns) else {
            continue;
        };
        for c in &input.cpus {
            let sw = super::sliding_window(&c.thread, &c.sources, opts);
            out.push(rtscope_model::bound::BoundSeriesPoint {
                t_s,
                cpu: c.cpu,
                sliding_window_ns: sw.latency_ns,
                observed_max_ns: c.observed_max_latency_ns,
            });
        }
    }
    out
}

/// Per CPU: the first series time at which the sliding-window bound reached the run's final
/// observed maximum (None when it never did or nothing was observed).
pub fn time_to_bound(
    series: &[rtscope_model::bound::BoundSeriesPoint],
) -> BTreeMap<u32, Option<f64>> {
    let mut final_obs: BTreeMap<u32, Option<u64>> = BTreeMap::new();
    for p in series {
        let e = final_obs.entry(p.cpu).or_default();
        *e = (*e).max(p.observed_max_ns);
    }
    final_obs
        .into_iter()
        .map(|(cpu, obs)| {
            let t = obs.and_then(|o| {
                series
                    .iter()
                    .filter(|p| p.cpu == cpu)
                    .find(|p| p.sliding_window_ns.is_some_and(|b| b >= o))
                    .map(|p| p.t_s)
            });
            (cpu, t)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, cpu: u32, kind: EventKind) -> Event {
        Event {
            ts_ns: ts,
            cpu,
            kind,
        }
    }

    /// Fixture: hand-written stream, two CPUs, one lost exit, an NMI nested in an IRQ.
    fn fixture() -> Vec<Event> {
        use EventKind::*;
        vec![
            ev(100, 0, IrqEntry { irq: 33 }),
            ev(130, 0, Nmi { delta_ns: 10 }), // NMI ran 120..130, nested in IRQ 33
            ev(
                150,
                0,
                IrqExit {
                    irq: 33,
                    handled: true,
                },
            ), // IRQ 33: (100, 50)
            ev(
                160,
                1,
                VectorEntry {
                    vector: Vector::LocalTimer,
                },
            ),
            ev(
                165,
                1,
                VectorExit {
                    vector: Vector::LocalTimer,
                },
            ), // local_timer: (160, 5)
            ev(400, 0, IrqEntry { irq: 33 }),
            ev(
                420,
                0,
                IrqExit {
                    irq: 33,
                    handled: true,
                },
            ), // IRQ 33: (400, 20)
            ev(
                500,
                1,
                IrqExit {
                    irq: 9,
                    handled: true,
                },
            ), // exit without entry: unmatched
            ev(
                600,
                1,
                VectorEntry {
                    vector: Vector::Other(236),
                },
            ), // never closed: unmatched
            ev(
                700,
                1,
                Switch {
                    prev_pid: 1,
                    prev_prio: 120,
                    prev_state: 0,
                    next_pid: 2,
                    next_prio: 9,
                },
            ),
        ]
    }

    #[test]
    fn extracts_per_cpu_sources() {
        let x = interrupt_sources(&fixture()).unwrap();
        assert_eq!(x.unmatched, 2);
        let c0 = &x.cpus[&0];
        assert_eq!(c0.len(), 2);
        assert_eq!(c0[0].name, "nmi");
        assert_eq!(c0[0].starts(), &[120]);
        assert_eq!(c0[0].durations(), &[10]);
        assert_eq!(c0[1].name, "33");
        assert_eq!(c0[1].starts(), &[100, 400]);
        assert_eq!(c0[1].durations(), &[50, 20]);
        assert_eq!(c0[1].omiat_ns(), Some(300)); // 400 − 100
        let c1 = &x.cpus[&1];
        assert_eq!(c1.len(), 1);
        assert_eq!(c1[0].name, "local_timer");
        assert_eq!(c1[0].owcet_ns(), 5);
        assert_eq!(vector_name(Vector::Other(0xec)), "vector_0xec");
    }

    #[test]
    fn non_interrupt_part_of_samples() {
        let x = interrupt_sources(&fixture()).unwrap();
        let smp = |cpu, expected_ns, latency_ns| RawSample {
            cpu,
            tid: 1,
            cycle: 0,
            expected_ns,
            latency_ns,
        };
        // CPU 0, window [90, 190): IRQ 33 (100..150) = 50 and the NMI (120..130) = 10 inside
        // → 100 − 60 = 40. Window [410, 430): IRQ 33 (400..420) overlaps 410..420 = 10 → 20 − 10 = 10.
        // CPU 1, [0, 30): nothing → 30.
        let v = vec![smp(0, 90, 100), smp(0, 410, 20), smp(1, 0, 30)];
        let m = non_interrupt_delay(&v, &x.cpus);
        assert_eq!(m[&0], (40, 100));
        assert_eq!(m[&1], (30, 30));
    }

    #[test]
    fn trace_input_falls_back_and_labels() {
        let smp = |cpu, expected_ns, latency_ns| RawSample {
            cpu,
            tid: 1,
            cycle: 0,
            expected_ns,
            latency_ns,
        };
        let i = trace_input(&fixture(), &[smp(0, 90, 100), smp(1, 0, 30)], None).unwrap();
        assert_eq!(i.cpus.len(), 2);
        // CPU 0: no preemptirq events → fallback poid = 40 (see non_interrupt_part_of_samples).
        assert!(i.cpus[0].thread_estimated);
        assert_eq!(i.cpus[0].thread.poid_ns, 40);
        assert_eq!(i.cpus[0].observed_max_latency_ns, Some(100));
        let r = crate::bound::analyze(&i, &crate::bound::Options::default(), "trace");
        assert!(r.estimate);
        assert!(r
            .warnings
            .iter()
            .any(|w| w.contains("ESTIMATE, NOT A SOUND BOUND")));
        // CPU 0 single_of_each: 40 + NMI 10 + IRQ 33 50 = 100.
        assert_eq!(r.cpus[0].bounds.single_of_each.latency_ns, Some(100));
    }

    #[test]
    fn trace_input_without_samples() {
        // No samples, no preemptirq: an error unless the user supplies the thread term.
        assert!(trace_input(&fixture(), &[], None).is_err());
        let i = trace_input(&fixture(), &[], Some(1000)).unwrap();
        assert_eq!(i.cpus.len(), 2);
        assert!(i
            .cpus
            .iter()
            .all(|c| c.thread_estimated && c.thread.poid_ns == 1000));
    }

    #[test]
    fn series_and_time_to_bound() {
        let smp = |cpu, expected_ns, latency_ns| RawSample {
            cpu,
            tid: 1,
            cycle: 0,
            expected_ns,
            latency_ns,
        };
        // Trace spans 90..700 (first event 100, first sample expected 90; last event 700).
        // Two points: t = 90 + 305 = 395 and t = 700.
        // At 395: CPU 0 has sample (90, +100) → non-irq 40 (see non_interrupt_part_of_samples);
        //   sources up to 395: IRQ 33 (100, 50) and NMI (120, 10) → sliding window
        //   L0 = 40, B_33(40) = 50, B_nmi = 10 → 100; at 100 the same → 100. Observed max 100.
        // At 700: the sample (410, +20) adds no larger delay; IRQ 33 (400, 20) joins:
        //   L0 = 40 → 33's windows of 40 hold one instance (50) → 100; at 100 still one
        //   (arrivals 300 apart) → 100.
        let v = vec![smp(0, 90, 100), smp(0, 410, 20)];
        let s = time_series(&fixture(), &v, None, 2, &crate::bound::Options::default());
        let cpu0: Vec<_> = s.iter().filter(|p| p.cpu == 0).collect();
        assert_eq!(cpu0.len(), 2);
        assert!((cpu0[0].t_s - 305e-9).abs() < 1e-12);
        assert_eq!(cpu0[0].sliding_window_ns, Some(100));
        assert_eq!(cpu0[0].observed_max_ns, Some(100));
        assert_eq!(cpu0[1].sliding_window_ns, Some(100));
        let ttb = time_to_bound(&s);
        assert_eq!(ttb[&0], Some(cpu0[0].t_s));
    }

    /// The fast series agrees with the prefix-by-prefix replay on a trace where no interrupt
    /// instance straddles a series instant (then the two definitions coincide).
    #[test]
    fn fast_series_matches_replay() {
        let smp = |cpu: u32, expected_ns: u64, latency_ns: u64| RawSample {
            cpu,
            tid: 1,
            cycle: 0,
            expected_ns,
            latency_ns,
        };
        let v = vec![smp(0, 90, 100), smp(0, 410, 20), smp(1, 200, 30)];
        let o = crate::bound::Options::default();
        for points in [1, 2, 3] {
            let fast = time_series(&fixture(), &v, None, points, &o);
            let slow = time_series_replay(&fixture(), &v, None, points, &o);
            assert_eq!(fast, slow, "points = {points}");
        }
    }
}
