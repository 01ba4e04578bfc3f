//! Text of `rtscope analyze`: the run-level attribution summary, event counts, and the worst
//! samples' timelines.

use rtscope_analysis::attribution::{AttributionResult, SampleAttribution};
use rtscope_model::event::{softirq_name, Event, EventKind, NameTables};
use std::fmt::Write as _;

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

pub fn summary(r: &AttributionResult) -> String {
    let mut o = String::new();
    let s = &r.summary;
    if s.samples_attributed + s.samples_unattributed == 0 {
        let _ = writeln!(
            o,
            "no samples in this trace (trace record only): nothing to attribute"
        );
        return o;
    }
    let _ = writeln!(
        o,
        "samples: {} attributed, {} unattributed; p99 {:.1} us ({} samples in the p99 tail){}",
        s.samples_attributed,
        s.samples_unattributed,
        us(s.p99_latency_ns),
        s.tail_p99_samples,
        s.tail_threshold_ns
            .map(|t| format!(
                "; {} samples above {:.1} us",
                s.tail_threshold_samples,
                us(t)
            ))
            .unwrap_or_default()
    );
    let _ = writeln!(o,
        "parts sum to latency: {} samples checked, max error {} ns (tolerance {} ns), {} violations",
        r.sum_check.samples_checked, r.sum_check.max_abs_error_ns, r.sum_check.tolerance_ns, r.sum_check.violations
    );
    let _ = writeln!(
        o,
        "\n{:<34} {:>9} {:>12} {:>10} {:>10} {:>8} {:>8}",
        "cause", "samples", "total_us", "max_us", "p99_us", "tail99%", "tail>T%"
    );
    for c in &s.causes {
        let _ = writeln!(
            o,
            "{:<34} {:>9} {:>12.1} {:>10.1} {:>10.1} {:>8.1} {:>8}",
            c.cause,
            c.samples_affected,
            us(c.total_ns),
            us(c.max_ns),
            us(c.p99_contribution_ns),
            100.0 * c.tail_p99_share,
            c.tail_threshold_share
                .map(|x| format!("{:.1}", 100.0 * x))
                .unwrap_or_else(|| "-".into())
        );
    }
    let _ = writeln!(o);
    for (cpu, line) in &s.per_cpu_tail {
        let _ = writeln!(o, "cpu{cpu}: {line}");
    }
    for sc in &r.steal_check {
        let _ =
            writeln!(o,
            "cpu{}: eventless stretches while busy (>= {:.0} us) {:.3} ms vs steal time {:.3} ms",
            sc.cpu,
            us(r.busy_gap_threshold_ns),
            sc.no_guest_activity_ns as f64 / 1e6,
            sc.steal_ns as f64 / 1e6
        );
    }
    o
}

/// Recorded events per kind and CPU (per second in brackets when `dur_s` is the time they
/// cover), one line per kind.
pub fn event_counts(events: &[Event], dur_s: Option<f64>) -> String {
    let mut o = String::new();
    let m = rtscope_model::event::count_by_kind(events);
    let mut kinds: Vec<&str> = m.values().flat_map(|k| k.keys().copied()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let cpus: Vec<u32> = m.keys().copied().collect();
    let _ = write!(o, "events by kind      ");
    for c in &cpus {
        let _ = write!(o, " {:>18}", format!("cpu{c}"));
    }
    let _ = writeln!(o);
    for k in kinds {
        let _ = write!(o, "  {k:<18}");
        for c in &cpus {
            let n = m[c].get(k).copied().unwrap_or(0);
            let _ = match dur_s {
                Some(d) => write!(
                    o,
                    " {:>18}",
                    format!("{n} ({:.0}/s)", n as f64 / d.max(1e-9))
                ),
                None => write!(o, " {n:>18}"),
            };
        }
        let _ = writeln!(o);
    }
    o
}

pub fn sample(rank: usize, s: &SampleAttribution, names: &NameTables) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n#{rank} cpu{} tid {} ({}) cycle {}: latency {:.1} us at {} ns",
        s.cpu,
        s.tid,
        names.comm(s.tid),
        s.cycle,
        us(s.latency_ns),
        s.expected_ns
    );
    if let Some(r) = &s.unattributed_reason {
        let _ = writeln!(o, "  unattributed: {r}");
    }
    let parts: Vec<String> = s
        .parts
        .iter()
        .map(|(c, ns)| format!("{c} {:.1}", us(*ns)))
        .collect();
    let _ = writeln!(o, "  parts (us): {}", parts.join(", "));
    for t in &s.threads {
        let _ = writeln!(
            o,
            "  ran meanwhile: {}:{} prio {} for {:.1} us ({})",
            t.comm,
            t.pid,
            t.prio,
            us(t.ran_ns),
            t.relation
        );
    }
    let _ = writeln!(o, "  timeline (us from the planned wake-up):");
    for g in &s.segments {
        let _ = writeln!(
            o,
            "    {:>10.3} .. {:>10.3}  {:<30} {}",
            us(g.start_ns),
            us(g.end_ns),
            g.cause,
            g.detail
        );
    }
    if !s.events.is_empty() {
        let _ = writeln!(o, "  events:");
        for e in s.events.iter().take(200) {
            let rel = e.ts_ns as i64 - s.expected_ns as i64;
            let _ = writeln!(
                o,
                "    {:>+10.3}  {}",
                rel as f64 / 1000.0,
                ev_text(e, names)
            );
        }
        if s.events.len() > 200 {
            let _ = writeln!(o, "    ... {} more events", s.events.len() - 200);
        }
    }
    o
}

pub fn ev_text(e: &Event, names: &NameTables) -> String {
    match e.kind {
        EventKind::IrqEntry { irq } => format!("irq_handler_entry irq={irq} ({})", names.irq(irq)),
        EventKind::IrqExit { irq, handled } => format!("irq_handler_exit irq={irq} handled={handled}"),
        EventKind::SoftirqRaise { vec } => format!("softirq_raise {}", softirq_name(vec)),
        EventKind::SoftirqEntry { vec } => format!("softirq_entry {}", softirq_name(vec)),
        EventKind::SoftirqExit { vec } => format!("softirq_exit {}", softirq_name(vec)),
        EventKind::VectorEntry { vector } => format!("{}_entry", vector.name()),
        EventKind::VectorExit { vector } => format!("{}_exit", vector.name()),
        EventKind::Nmi { delta_ns } => format!("nmi_handler delta={delta_ns} ns"),
        EventKind::HrtimerEntry { function, .. } => format!("hrtimer_expire_entry fn={function:#x}"),
        EventKind::HrtimerExit { .. } => "hrtimer_expire_exit".into(),
        EventKind::Waking { pid, prio, target_cpu } => {
            format!("sched_waking {}:{pid} prio={prio} target_cpu={target_cpu}", names.comm(pid))
        }
        EventKind::Wakeup { pid, prio, target_cpu } => {
            format!("sched_wakeup {}:{pid} prio={prio} target_cpu={target_cpu}", names.comm(pid))
        }
        EventKind::Switch { prev_pid, prev_prio, prev_state, next_pid, next_prio } => format!(
            "sched_switch {}:{prev_pid} [{prev_prio}] state={prev_state:#x} ==> {}:{next_pid} [{next_prio}]",
            names.comm(prev_pid),
            names.comm(next_pid)
        ),
        EventKind::Migrate { pid, orig_cpu, dest_cpu } => {
            format!("sched_migrate_task {}:{pid} {orig_cpu} -> {dest_cpu}", names.comm(pid))
        }
        EventKind::CpuIdle { state } => {
            if state == u32::MAX {
                "cpu_idle exit".into()
            } else {
                format!("cpu_idle state={state}")
            }
        }
        EventKind::Background { len_ns, events } => {
            format!("[{events} SCHED_OTHER switches/wake-ups or hrtimer expiries left out by the filter over {len_ns} ns]")
        }
        other => format!("{other:?}"),
    }
}
