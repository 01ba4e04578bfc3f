//! `rtscope practise` output: the human text and the boxplot figure of modify and query costs
//! per structure and number of emulated CPUs (the form of the thesis' Figs. 2.24–2.27: box from
//! the 25th to the 75th percentile, a line at the median; our whiskers run from the minimum to
//! the 99th percentile and a cross marks the maximum, because on a VM the maximum is a host
//! stall, not the structure).

use crate::svg::{esc, fmt_num, Plot, Scale, PALETTE};
use rtscope_model::practise::{PractiseMode, PractiseOp, PractiseResult, PractiseRun};
use std::fmt::Write;

fn ms(ns: u64) -> String {
    fmt_num(ns as f64 / 1e6)
}

fn mode_name(m: PractiseMode) -> &'static str {
    match m {
        PractiseMode::Test => "test",
        PractiseMode::Perf => "perf",
        PractiseMode::Replay => "replay",
    }
}

/// The operations in the order they are printed.
const ORDER: [&str; 12] = [
    "enqueue",
    "dequeue",
    "push",
    "pull",
    "push_preempt",
    "push_finish",
    "push_modify",
    "push_find",
    "pull_preempt",
    "pull_finish",
    "pull_modify",
    "pull_find",
];

fn op_table(out: &mut String, ops: &[PractiseOp]) {
    let _ = writeln!(
        out,
        "  {:<13} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>10}   ns",
        "op", "count", "min", "q1", "median", "q3", "p99", "max"
    );
    for name in ORDER {
        if let Some(o) = ops.iter().find(|o| o.op == name) {
            let _ = writeln!(
                out,
                "  {:<13} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>10}",
                o.op, o.count, o.min_ns, o.q1_ns, o.median_ns, o.q3_ns, o.p99_ns, o.max_ns
            );
        }
    }
}

fn run_text(out: &mut String, r: &PractiseRun) {
    let _ = writeln!(
        out,
        "\n{} (push {}, pull {}), {}, M = {}:",
        r.structure, r.push_structure, r.pull_structure, r.policy, r.emulated_cpus
    );
    if let Some(c) = &r.replay {
        let _ = writeln!(
            out,
            "  {} trace events: {} enqueues, {} dequeues, {} migrations, {} discovered, {} re-queued, {} sleeping migrations; an RT/DL task switched in was not its queue's top {} times",
            c.events, c.enqueues, c.dequeues, c.migrations, c.discovered, c.requeued, c.migrate_sleeping, c.top_mismatch_rt
        );
    } else {
        let c = &r.counts;
        let _ = writeln!(
            out,
            "  {} cycles ({} missed), {} activations, {} early finishes ({} on an idle CPU), {} expiries; {} pushes, {} pulls ({} / {} stale finds)",
            c.cycles, c.missed_cycles, c.activations, c.early_finishes, c.finish_on_idle, c.expiries,
            c.pushes, c.pulls, c.push_stale, c.pull_stale
        );
    }
    if let Some(k) = &r.checks {
        let _ = writeln!(
            out,
            "  checker: {} checks, no structure violation; global invariant false in {} ({:.2} %: a CPU idle while a task waited {}, a waiting task beat a running one {}; longest {} checks in a row)",
            k.checks,
            k.global_false,
            k.global_false_rate * 100.0,
            k.idle_while_waiting,
            k.waiting_beats_running,
            k.max_consecutive_false
        );
        if let Some(h) = &k.hold {
            let _ = writeln!(
                out,
                "  checker held every queue lock: median {} ns, max {} ns",
                h.median_ns, h.max_ns
            );
        }
    }
    op_table(out, &r.ops);
    if !r.final_queues.is_empty() {
        let _ = writeln!(out, "  queues at the end (id:key, highest priority first):");
        for (cpu, q) in r.final_queues.iter().enumerate() {
            let items: Vec<String> = q.iter().map(|t| format!("{}:{}", t.id, t.key)).collect();
            let _ = writeln!(out, "    cpu {cpu}: [{}]", items.join(" "));
        }
    }
}

/// The human summary.
pub fn text(res: &PractiseResult) -> String {
    let mut out = String::new();
    let clock = match res.clock.tsc_hz {
        Some(hz) => format!("tsc at {:.1} MHz", hz / 1e6),
        None => res.clock.source.clone(),
    };
    let _ = write!(
        out,
        "rtscope practise {}: durations from {clock} (an empty timed region costs {} ns, included in every figure)",
        mode_name(res.mode),
        res.clock.overhead_ns
    );
    match res.mode {
        PractiseMode::Replay => {
            let _ = writeln!(
                out,
                "\ntrace {}, queues: {}",
                res.trace_file.as_deref().unwrap_or("-"),
                res.queue
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "\n{}{}; cycle {} ms, arrival {:.2}, early finish {:.2}, {} s per run, queues: {}, policy {}, seed {}",
                if res.pinned { "threads pinned" } else { "threads unpinned" },
                if res.memory_locked { ", memory locked" } else { "" },
                ms(res.cycle_ns),
                res.p_arrival,
                res.p_finish,
                fmt_num(res.duration_per_run_ns as f64 / 1e9),
                res.queue,
                res.policy,
                res.seed
            );
        }
    }
    if let Some(f) = &res.fault {
        let _ = writeln!(out, "injected fault: {f} (a deliberately broken structure)");
    }
    for r in &res.runs {
        run_text(&mut out, r);
    }
    if let Some(v) = &res.violation {
        let _ = writeln!(
            out,
            "\nCHECKER FAILED ({}, M = {}): {}\n  state: {}",
            v.structure, v.emulated_cpus, v.invariant, v.state
        );
    }
    for n in &res.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// One box series of the figure: a structure in one role, taken from one configuration's runs.
struct Series {
    label: &'static str,
    structure: &'static str,
    prefix: &'static str,
}

const SERIES: [Series; 6] = [
    Series {
        label: "cpudl",
        structure: "cpudl",
        prefix: "push",
    },
    Series {
        label: "cpupri",
        structure: "cpupri",
        prefix: "push",
    },
    Series {
        label: "pull heap",
        structure: "pullheap",
        prefix: "pull",
    },
    Series {
        label: "flat (push)",
        structure: "flat",
        prefix: "push",
    },
    Series {
        label: "flat (pull)",
        structure: "flat",
        prefix: "pull",
    },
    Series {
        label: "scan (pull)",
        structure: "cpudl",
        prefix: "pull",
    },
];

fn find_op<'a>(res: &'a PractiseResult, s: &Series, m: u32, kind: &str) -> Option<&'a PractiseOp> {
    let op = format!("{}_{kind}", s.prefix);
    res.runs
        .iter()
        .find(|r| r.structure == s.structure && r.emulated_cpus == m)?
        .ops
        .iter()
        .find(|o| o.op == op)
}

fn panel(res: &PractiseResult, kind: &str, title: &str, ms: &[u32]) -> Option<String> {
    let present: Vec<(usize, &Series)> = SERIES
        .iter()
        .enumerate()
        .filter(|(_, s)| ms.iter().any(|&m| find_op(res, s, m, kind).is_some()))
        .collect();
    if present.is_empty() {
        return None;
    }
    let all: Vec<&PractiseOp> = present
        .iter()
        .flat_map(|(_, s)| ms.iter().filter_map(|&m| find_op(res, s, m, kind)))
        .collect();
    let lo = all.iter().map(|o| o.min_ns.max(1)).min().unwrap_or(1) as f64;
    let hi = all.iter().map(|o| o.max_ns.max(2)).max().unwrap_or(2) as f64;
    let y = Scale::Log {
        lo: 10f64.powf(lo.log10().floor()),
        hi: 10f64.powf(hi.log10().ceil()),
    };
    let mut p = Plot::new(560.0, 360.0, Scale::Linear { lo: 0.0, hi: 0.0 }, y);
    p.bottom = 56.0;
    let (x0, x1) = (p.left, p.w - p.right);
    let group = (x1 - x0) / ms.len() as f64;
    let bw = (group * 0.8 / present.len() as f64).min(26.0);
    for (gi, &m) in ms.iter().enumerate() {
        let gx = x0 + group * (gi as f64 + 0.5);
        p.text(gx, p.h - p.bottom + 15.0, "middle", 10.0, &m.to_string());
        for (si, (ci, s)) in present.iter().enumerate() {
            let Some(o) = find_op(res, s, m, kind) else {
                continue;
            };
            let cx = gx + (si as f64 - (present.len() as f64 - 1.0) / 2.0) * bw;
            let c = PALETTE[*ci % PALETTE.len()];
            let (ymin, yq1, ymed, yq3, yp99, ymax) = (
                p.py(o.min_ns.max(1) as f64),
                p.py(o.q1_ns.max(1) as f64),
                p.py(o.median_ns.max(1) as f64),
                p.py(o.q3_ns.max(1) as f64),
                p.py(o.p99_ns.max(1) as f64),
                p.py(o.max_ns.max(1) as f64),
            );
            let half = bw * 0.4;
            let mut svg = String::new();
            let _ = write!(
                svg,
                r#"<g><title>{}</title><line x1="{cx:.1}" y1="{ymin:.1}" x2="{cx:.1}" y2="{yp99:.1}" stroke="{c}" stroke-width="1"/><rect x="{:.1}" y="{yq3:.1}" width="{:.1}" height="{:.1}" fill="{c}" fill-opacity="0.25" stroke="{c}" stroke-width="1"/><line x1="{:.1}" y1="{ymed:.1}" x2="{:.1}" y2="{ymed:.1}" stroke="{c}" stroke-width="2"/><path d="M{:.1} {:.1}l4 4m0 -4l-4 4" stroke="{c}" stroke-width="1"/></g>"#,
                esc(&format!(
                    "{} {kind}, M = {m}: min {} q1 {} median {} q3 {} p99 {} max {} ns ({} samples)",
                    s.label, o.min_ns, o.q1_ns, o.median_ns, o.q3_ns, o.p99_ns, o.max_ns, o.count
                )),
                cx - half,
                2.0 * half,
                (yq1 - yq3).max(0.5),
                cx - half,
                cx + half,
                cx - 2.0,
                ymax - 2.0,
            );
            p.raw(&svg);
        }
    }
    p.axes(title, "emulated CPUs (M)", "ns (log)");
    let legend: Vec<(String, &str)> = present
        .iter()
        .map(|(ci, s)| (s.label.to_string(), PALETTE[*ci % PALETTE.len()]))
        .collect();
    p.legend(&legend);
    Some(p.finish(&format!("practise-{kind}"), title))
}

/// The figure: modify (preempt + finish) and query (find) costs side by side, one box per
/// structure and M. Empty when no run measured either.
pub fn boxplot_svg(res: &PractiseResult) -> String {
    let mut ms: Vec<u32> = res.runs.iter().map(|r| r.emulated_cpus).collect();
    ms.sort_unstable();
    ms.dedup();
    let mode = mode_name(res.mode);
    let panels: Vec<String> = [
        (
            "modify",
            format!("modify (data_preempt + data_finish), {mode} mode"),
        ),
        ("find", format!("query (data_find), {mode} mode")),
    ]
    .iter()
    .filter_map(|(k, t)| panel(res, k, t, &ms))
    .collect();
    let w = 560.0 * panels.len().max(1) as f64;
    let mut body = String::new();
    for (i, s) in panels.iter().enumerate() {
        let _ = write!(body, r#"<g transform="translate({} 0)">{s}</g>"#, 560 * i);
    }
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} 360" width="{w}" height="360" role="img"><title>{}</title><rect width="{w}" height="360" fill="white"/>{body}</svg>"#,
        esc(&format!(
            "PRAcTISE {mode} mode: modify and query costs per structure and M (box q1–q3, line median, whisker min–p99, cross max)"
        ))
    )
}

/// `practise kernel`: per kernel function, its calls and duration quantiles beside the PRAcTISE
/// operation it corresponds to.
pub fn kernel_text(r: &rtscope_model::practise::PractiseKernelResult) -> String {
    use std::fmt::Write as _;
    let mut o = String::from("function     practise op      count  median_ns  p99_ns  max_ns\n");
    for f in &r.functions {
        let _ = writeln!(
            o,
            "{:<12} {:<14} {:>7} {:>10} {:>7} {:>7}",
            f.function, f.practise_op, f.count, f.median_ns, f.p99_ns, f.max_ns
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::practise::*;

    fn op(name: &str, base: u64) -> PractiseOp {
        PractiseOp {
            op: name.into(),
            count: 10,
            min_ns: base,
            q1_ns: base + 1,
            median_ns: base + 2,
            q3_ns: base + 3,
            p99_ns: base + 4,
            max_ns: base * 10,
            mean_ns: base as f64 + 2.0,
        }
    }

    fn run(structure: &str, m: u32) -> PractiseRun {
        PractiseRun {
            structure: structure.into(),
            push_structure: "cpudl".into(),
            pull_structure: "scan".into(),
            policy: "edf".into(),
            emulated_cpus: m,
            wall_ns: 1,
            counts: Default::default(),
            ops: vec![
                op("push_modify", 100),
                op("push_find", 20),
                op("pull_find", 30),
            ],
            checks: None,
            replay: None,
            final_queues: vec![],
        }
    }

    fn result() -> PractiseResult {
        PractiseResult {
            mode: PractiseMode::Perf,
            policy: "auto".into(),
            queue: "heap".into(),
            cycle_ns: 10_000_000,
            p_arrival: 0.2,
            p_finish: 0.1,
            duration_per_run_ns: 1_000_000_000,
            check_every_ns: None,
            seed: 1,
            clock: PractiseClock {
                source: "tsc".into(),
                tsc_hz: Some(2.6e9),
                overhead_ns: 12,
                why: String::new(),
            },
            pinned: true,
            memory_locked: true,
            online_cpus: 2,
            fault: None,
            trace_file: None,
            runs: vec![run("cpudl", 1), run("cpudl", 2), run("cpupri", 2)],
            violation: None,
            notes: vec![],
        }
    }

    #[test]
    fn text_lists_every_run_and_op() {
        let t = text(&result());
        assert!(t.contains("tsc at 2600.0 MHz"), "{t}");
        assert!(
            t.contains("cpupri (push cpudl, pull scan), edf, M = 2:"),
            "{t}"
        );
        assert!(
            t.contains(
                "push_modify          10      100      101      102      103      104       1000"
            ),
            "{t}"
        );
    }

    #[test]
    fn figure_has_a_box_per_structure_and_m() {
        let s = boxplot_svg(&result());
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        // modify: cpudl at M 1 and 2, cpupri at 2; find: the same three push finds plus the
        // scan pull finds of the two cpudl runs.
        assert_eq!(s.matches("<title>cpudl modify").count(), 2, "{s}");
        assert_eq!(s.matches("<title>cpupri modify, M = 2").count(), 1);
        assert_eq!(s.matches("<title>scan (pull) find").count(), 2);
        assert!(s.contains("min 100 q1 101 median 102 q3 103 p99 104 max 1000 ns (10 samples)"));
    }
}
