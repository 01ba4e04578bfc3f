//! `rtscope analyze FILE.rtt`: re-run per-sample attribution on a recorded trace, offline, and
//! print the run-level view and the worst samples' timelines (text, or JSON with `--json`).

use anyhow::Context;
use rtscope_analysis::attribution::{
    self, AttributionOptions, AttributionResult, SampleAttribution,
};
use rtscope_model::event::{softirq_name, Event, EventKind, NameTables};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The trace file (.rtt) written by `measure --trace` or `trace record`.
    file: PathBuf,
    /// How many worst samples to show with their full timeline (0..=10000).
    #[arg(long = "top", default_value_t = 10)]
    top: usize,
    /// Eventless stretches at least this long (µs) count as "no guest activity" (1..=1000000).
    #[arg(long = "gap-threshold-us", default_value_t = 100)]
    gap_threshold_us: u64,
    /// The same while another thread holds the CPU after the wake-up (µs, 1..=1000000): it may
    /// run in the kernel without events, but a busy CPU gets a tick every 1/HZ (default: 1.5
    /// ticks at HZ=250).
    #[arg(long = "busy-gap-threshold-us", default_value_t = 6000)]
    busy_gap_threshold_us: u64,
    /// Also report the share of samples above this latency (µs) each cause explains.
    #[arg(long = "threshold-us")]
    threshold_us: Option<u64>,
    /// Print JSON (schema: docs/trace-format.md, "analyze JSON") instead of text.
    #[arg(long = "json")]
    json: bool,
    /// Write the JSON to this file as well as printing text.
    #[arg(long = "json-out")]
    json_out: Option<PathBuf>,
}

pub const ANALYZE_SCHEMA_VERSION: u32 = 1;

pub fn run(a: Args) -> anyhow::Result<()> {
    if a.top > 10_000 {
        return Err(crate::usage!("--top: must be 0..=10000, got {}", a.top));
    }
    if !(1..=1_000_000).contains(&a.gap_threshold_us) {
        return Err(crate::usage!(
            "--gap-threshold-us: must be 1..=1000000, got {}",
            a.gap_threshold_us
        ));
    }
    if !(1..=1_000_000).contains(&a.busy_gap_threshold_us) {
        return Err(crate::usage!(
            "--busy-gap-threshold-us: must be 1..=1000000, got {}",
            a.busy_gap_threshold_us
        ));
    }
    if !a.file.is_file() {
        return Err(crate::usage!(
            "FILE: {} is not a readable file",
            a.file.display()
        ));
    }
    let t_read = Instant::now();
    let f = rtscope_trace::read_rtt(&a.file)
        .with_context(|| format!("reading {}", a.file.display()))?;
    let read_s = t_read.elapsed().as_secs_f64();
    let opts = AttributionOptions {
        gap_threshold_ns: a.gap_threshold_us * 1000,
        busy_gap_threshold_ns: a.busy_gap_threshold_us * 1000,
        tail_threshold_ns: a.threshold_us.map(|t| t * 1000),
        top_n: a.top,
        lost_per_cpu: f.meta.lost_per_cpu.iter().map(|(c, n)| (*c, *n)).collect(),
        steal_ns_per_cpu: f
            .meta
            .steal_ns_per_cpu
            .iter()
            .map(|(c, n)| (*c, *n))
            .collect(),
    };
    let t0 = Instant::now();
    let mut r = attribution::attribute(&f.events, &f.samples, &f.names, &opts);
    // The relevance filter keeps every eventless stretch of 10 µs or more exactly; shorter gap
    // thresholds could see gaps the full stream did not have.
    if f.meta.keep == "relevant" && opts.gap_threshold_ns < rtscope_trace::reduce::SPLIT_NS {
        r.warnings.push(format!(
            "--gap-threshold-us {}: below the relevance filter's 10 us split, \"no guest activity\" may include stretches where left-out SCHED_OTHER events ran (record with --trace-keep all for finer gaps)",
            a.gap_threshold_us
        ));
    }
    let analyse_s = t0.elapsed().as_secs_f64();
    let throughput = f.events.len() as f64 / analyse_s.max(1e-9);
    let doc = serde_json::json!({
        "schema_version": ANALYZE_SCHEMA_VERSION,
        "file": a.file.display().to_string(),
        "meta": f.meta,
        "events": f.events.len(),
        "samples": f.samples.len(),
        "analysis_seconds": analyse_s,
        "analysis_events_per_second": throughput,
        "event_counts": rtscope_model::event::count_by_kind(&f.events),
        "attribution": r,
    });
    if let Some(p) = &a.json_out {
        std::fs::write(p, serde_json::to_vec_pretty(&doc)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    let m = &f.meta;
    let dur = m.end_ns.saturating_sub(m.start_ns) as f64 / 1e9;
    println!(
        "{}: {} events, {} samples, mechanism {}, cpus {:?}, {:.2} s, kernel {}",
        a.file.display(),
        f.events.len(),
        f.samples.len(),
        m.mechanism,
        m.cpus,
        dur,
        m.kernel
    );
    if m.keep == "relevant" {
        println!(
            "relevance filter: {} SCHED_OTHER switches/wake-ups and hrtimer expiries left out (kept: every interrupt, real-time/DEADLINE/idle switch, and their activity as background records)",
            m.filtered_events
        );
    }
    let lost: u64 = m.lost_per_cpu.values().sum();
    if lost > 0 {
        println!(
            "WARNING: {lost} events lost ({:?}); attribution on those CPUs is incomplete",
            m.lost_per_cpu
        );
    }
    for w in &r.warnings {
        println!("warning: {w}");
    }
    for n in &m.notes {
        println!("note: {n}");
    }
    print_event_counts(&f.events, dur);
    print_summary(&r);
    for (i, s) in r.worst.iter().enumerate() {
        print_sample(i + 1, s, &f.names);
    }
    eprintln!(
        "rtscope: read in {:.3} s; attribution of {} events in {:.3} s ({:.2} M events/s)",
        read_s,
        f.events.len(),
        analyse_s,
        throughput / 1e6
    );
    Ok(())
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn print_summary(r: &AttributionResult) {
    let s = &r.summary;
    if s.samples_attributed + s.samples_unattributed == 0 {
        println!("no samples in this trace (trace record only): nothing to attribute");
        return;
    }
    println!(
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
    println!(
        "parts sum to latency: {} samples checked, max error {} ns (tolerance {} ns), {} violations",
        r.sum_check.samples_checked, r.sum_check.max_abs_error_ns, r.sum_check.tolerance_ns, r.sum_check.violations
    );
    println!(
        "\n{:<34} {:>9} {:>12} {:>10} {:>10} {:>8} {:>8}",
        "cause", "samples", "total_us", "max_us", "p99_us", "tail99%", "tail>T%"
    );
    for c in &s.causes {
        println!(
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
    println!();
    for (cpu, line) in &s.per_cpu_tail {
        println!("cpu{cpu}: {line}");
    }
    for sc in &r.steal_check {
        println!(
            "cpu{}: eventless stretches while busy (>= {:.0} us) {:.3} ms vs steal time {:.3} ms",
            sc.cpu,
            us(r.busy_gap_threshold_ns),
            sc.no_guest_activity_ns as f64 / 1e6,
            sc.steal_ns as f64 / 1e6
        );
    }
}

/// Recorded events per kind and CPU (per second in brackets), one line per kind.
fn print_event_counts(events: &[Event], dur_s: f64) {
    let m = rtscope_model::event::count_by_kind(events);
    let mut kinds: Vec<&str> = m.values().flat_map(|k| k.keys().copied()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let cpus: Vec<u32> = m.keys().copied().collect();
    print!("events by kind      ");
    for c in &cpus {
        print!(" {:>18}", format!("cpu{c}"));
    }
    println!();
    for k in kinds {
        print!("  {k:<18}");
        for c in &cpus {
            let n = m[c].get(k).copied().unwrap_or(0);
            print!(
                " {:>18}",
                format!("{n} ({:.0}/s)", n as f64 / dur_s.max(1e-9))
            );
        }
        println!();
    }
}

fn ev_text(e: &Event, names: &NameTables) -> String {
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

fn print_sample(rank: usize, s: &SampleAttribution, names: &NameTables) {
    println!(
        "\n#{rank} cpu{} tid {} ({}) cycle {}: latency {:.1} us at {} ns",
        s.cpu,
        s.tid,
        names.comm(s.tid),
        s.cycle,
        us(s.latency_ns),
        s.expected_ns
    );
    if let Some(r) = &s.unattributed_reason {
        println!("  unattributed: {r}");
    }
    let parts: Vec<String> = s
        .parts
        .iter()
        .map(|(c, ns)| format!("{c} {:.1}", us(*ns)))
        .collect();
    println!("  parts (us): {}", parts.join(", "));
    for t in &s.threads {
        println!(
            "  ran meanwhile: {}:{} prio {} for {:.1} us ({})",
            t.comm,
            t.pid,
            t.prio,
            us(t.ran_ns),
            t.relation
        );
    }
    println!("  timeline (us from the planned wake-up):");
    for g in &s.segments {
        println!(
            "    {:>10.3} .. {:>10.3}  {:<30} {}",
            us(g.start_ns),
            us(g.end_ns),
            g.cause,
            g.detail
        );
    }
    if !s.events.is_empty() {
        println!("  events:");
        for e in s.events.iter().take(200) {
            let rel = e.ts_ns as i64 - s.expected_ns as i64;
            println!("    {:>+10.3}  {}", rel as f64 / 1000.0, ev_text(e, names));
        }
        if s.events.len() > 200 {
            println!("    ... {} more events", s.events.len() - 200);
        }
    }
}
