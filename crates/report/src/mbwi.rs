//! `rtscope mbwi` output: the simulated and the measured schedules as Gantt charts (one row per
//! task, as the thesis' Figs. 4.2–4.7), and the text summaries (runs, the side-by-side table,
//! lock/unlock overheads).

use crate::svg::{esc, fmt_num, Plot, Scale, PALETTE};
use rtscope_model::mbwi::*;
use std::collections::BTreeMap;
use std::fmt::Write;

const ROW_H: f64 = 26.0;
const LEFT: f64 = 70.0;

fn ms(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e6)
}

fn opt_ms(ns: Option<u64>) -> String {
    ns.map_or("-".into(), ms)
}

/// A Gantt canvas: rows of names, an x axis in ms.
struct Gantt {
    plot: Plot,
    rows: Vec<String>,
}

impl Gantt {
    fn new(rows: Vec<String>, span_ms: f64) -> Gantt {
        let h = 60.0 + ROW_H * rows.len() as f64 + 24.0;
        let mut plot = Plot::new(
            900.0,
            h,
            Scale::Linear {
                lo: 0.0,
                hi: span_ms.max(1e-3),
            },
            Scale::Linear { lo: 0.0, hi: 1.0 },
        );
        plot.left = LEFT;
        plot.top = 34.0;
        plot.bottom = 48.0;
        let mut g = Gantt { plot, rows };
        g.grid();
        g
    }

    /// Row lines, names and the x axis, drawn first so the bars lie on top.
    fn grid(&mut self) {
        let (x0, x1) = (self.plot.left, self.plot.w - self.plot.right);
        let y_end = self.row_y(self.rows.len());
        let mut s = String::new();
        for (r, name) in self.rows.iter().enumerate() {
            let y = self.row_y(r);
            let _ = write!(
                s,
                r##"<line x1="{x0:.1}" y1="{:.1}" x2="{x1:.1}" y2="{:.1}" stroke="#ddd" stroke-width="0.6"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"##,
                y + ROW_H,
                y + ROW_H,
                x0 - 6.0,
                y + ROW_H / 2.0 + 4.0,
                esc(name)
            );
        }
        for (v, l) in self.plot.x.ticks() {
            let x = self.plot.px(v);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{y_end:.1}" stroke="#eee" stroke-width="0.6"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="10">{}</text>"##,
                self.plot.top,
                y_end + 14.0,
                esc(&l)
            );
        }
        let _ = write!(
            s,
            r##"<line x1="{x0:.1}" y1="{y_end:.1}" x2="{x1:.1}" y2="{y_end:.1}" stroke="#444" stroke-width="0.8"/>"##
        );
        self.plot.raw(&s);
    }

    fn row_y(&self, r: usize) -> f64 {
        self.plot.top + ROW_H * r as f64
    }

    #[allow(clippy::too_many_arguments)]
    fn bar(
        &mut self,
        row: usize,
        a_ms: f64,
        b_ms: f64,
        fill: &str,
        style: &str,
        label: &str,
        tip: &str,
    ) {
        let (x0, x1) = (self.plot.px(a_ms), self.plot.px(b_ms));
        let y = self.row_y(row) + 4.0;
        let w = (x1 - x0).max(0.6);
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<rect x="{x0:.2}" y="{y:.1}" width="{w:.2}" height="{:.1}" fill="{fill}" {style}><title>{}</title></rect>"#,
            ROW_H - 8.0,
            esc(tip)
        );
        if !label.is_empty() && w > 7.0 * label.chars().count() as f64 {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="9" fill="{}">{}</text>"#,
                x0 + w / 2.0,
                y + ROW_H / 2.0,
                if style.contains("fill-opacity") {
                    "#222"
                } else {
                    "white"
                },
                esc(label)
            );
        }
        self.plot.raw(&s);
    }

    fn mark(&mut self, row: usize, t_ms: f64, text: &str, colour: &str) {
        let x = self.plot.px(t_ms);
        let y = self.row_y(row) + 2.0;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<line x1="{x:.2}" y1="{y:.1}" x2="{x:.2}" y2="{:.1}" stroke="{colour}" stroke-width="1"/><text x="{:.2}" y="{:.1}" font-size="8" fill="{colour}">{}</text>"#,
            y + ROW_H - 4.0,
            x + 1.5,
            // A miss is marked at the bottom of the row, clear of the lock marks at the top.
            if text == "✗" {
                y + ROW_H - 6.0
            } else {
                y + 7.0
            },
            esc(text)
        );
        self.plot.raw(&s);
    }

    fn finish(mut self, id: &str, title: &str, xlabel: &str, legend: &[(String, &str)]) -> String {
        let (x0, x1) = (self.plot.left, self.plot.w - self.plot.right);
        let y_end = self.row_y(self.rows.len());
        self.plot
            .text(self.plot.w / 2.0, 18.0, "middle", 13.0, title);
        self.plot
            .text((x0 + x1) / 2.0, y_end + 30.0, "middle", 11.0, xlabel);
        // Legend along the bottom.
        let mut lx = x0;
        let ly = self.plot.h - 8.0;
        for (label, colour) in legend {
            let mut l = String::new();
            let _ = write!(
                l,
                r#"<rect x="{lx:.1}" y="{:.1}" width="9" height="9" fill="{colour}"/>"#,
                ly - 8.0
            );
            self.plot.raw(&l);
            self.plot.text(lx + 12.0, ly, "start", 9.0, label);
            lx += 16.0 + 6.0 * label.chars().count() as f64;
        }
        self.plot.finish(id, title)
    }
}

fn colour_of(names: &[String], n: &str) -> &'static str {
    names
        .iter()
        .position(|x| x == n)
        .map_or("#7f7f7f", |i| PALETTE[i % PALETTE.len()])
}

/// The simulated schedule: one row per task; a bar is coloured by the server that pays for it
/// (a task running in another's server shows that server's colour, outlined in black); a
/// spinning server is drawn pale and dashed. Marks: L lock acquired, U unlock, T throttle,
/// R replenish, ✗ deadline miss.
pub fn sim_gantt_svg(r: &SimResult, title: &str) -> String {
    let names: Vec<String> = r.tasks.iter().map(|t| t.name.clone()).collect();
    let mut g = Gantt::new(names.clone(), r.horizon_us as f64 / 1000.0);
    let row = |n: &str| names.iter().position(|x| x == n).unwrap_or(0);
    for s in &r.segments {
        let (a, b) = (s.start_us as f64 / 1000.0, s.end_us as f64 / 1000.0);
        let fill = colour_of(&names, &s.server);
        let style = if s.spinning {
            r##"fill-opacity="0.35" stroke="#333" stroke-dasharray="2 2" stroke-width="0.6""##
        } else if s.inherited_from.is_some() {
            r#"stroke="black" stroke-width="1.2""#
        } else {
            ""
        };
        let label = if s.spinning {
            format!("spin CPU{}", s.cpu)
        } else {
            format!("CPU{}", s.cpu)
        };
        let tip = format!(
            "{} on CPU{} {}–{} ms in {}'s server{}{}",
            s.task,
            s.cpu,
            fmt_num(a),
            fmt_num(b),
            s.server,
            s.inherited_from
                .as_ref()
                .map_or(String::new(), |x| format!(", inherited from {x}")),
            if s.spinning { ", busy-waiting" } else { "" }
        );
        g.bar(row(&s.task), a, b, fill, style, &label, &tip);
    }
    for e in &r.events {
        let t = e.t_us as f64 / 1000.0;
        let (txt, col) = match e.kind {
            SimEventKind::LockAcquire => ("L", "#000"),
            SimEventKind::Unlock => ("U", "#000"),
            SimEventKind::Throttle => ("T", "#8c564b"),
            SimEventKind::Replenish => ("R", "#8c564b"),
            SimEventKind::Miss => ("✗", "#d62728"),
            SimEventKind::Release => ("↑", "#555"),
            _ => continue,
        };
        g.mark(row(&e.task), t, txt, col);
    }
    let legend: Vec<(String, &str)> = names
        .iter()
        .map(|n| (format!("{n}'s server"), colour_of(&names, n)))
        .collect();
    g.finish(
        &format!("mbwi-sim-{}", r.protocol.name()),
        title,
        "time (ms); L/U lock/unlock, T/R throttle/replenish, ✗ miss, ↑ release",
        &legend,
    )
}

/// The kernel's schedule of one run (sched_switch), one row per task plus `other`; marks from
/// the threads' own timestamps: ↑ release, r lock requested, L acquired, U unlock, ✗ miss.
pub fn kernel_gantt_svg(run: &MbwiKernelRun, title: &str) -> String {
    let mut names: Vec<String> = run.tasks.iter().map(|t| t.name.clone()).collect();
    if run.schedule.iter().any(|s| s.task == "other") {
        names.push("other".into());
    }
    let span_ns = if run.schedule_window_ns > 0 {
        run.schedule_window_ns
    } else {
        run.duration_ns.min(250_000_000)
    };
    let mut g = Gantt::new(names.clone(), span_ns as f64 / 1e6);
    let row = |n: &str| names.iter().position(|x| x == n).unwrap_or(0);
    for s in &run.schedule {
        let (a, b) = (s.start_ns as f64 / 1e6, s.end_ns as f64 / 1e6);
        let tip = format!(
            "{} on CPU{} {}–{} ms",
            s.task,
            s.cpu,
            fmt_num(a),
            fmt_num(b)
        );
        g.bar(
            row(&s.task),
            a,
            b,
            colour_of(&names, &s.task),
            "",
            &format!("CPU{}", s.cpu),
            &tip,
        );
    }
    for t in &run.tasks {
        let r = row(&t.name);
        let spec = run.taskset.tasks.iter().find(|x| x.name == t.name);
        let d_ns = spec.map_or(0, |x| x.deadline() * 1000);
        for j in t.first_jobs.iter().filter(|j| j.release_ns < span_ns) {
            g.mark(r, j.release_ns as f64 / 1e6, "↑", "#555");
            if let Some(x) = j.lock_request_ns.filter(|_| j.blocked_ns > 50_000) {
                g.mark(r, x as f64 / 1e6, "r", "#9467bd");
            }
            if let Some(x) = j.lock_acquire_ns {
                g.mark(r, x as f64 / 1e6, "L", "#000");
            }
            if let Some(x) = j.unlock_ns {
                g.mark(r, x as f64 / 1e6, "U", "#000");
            }
            if j.missed {
                g.mark(r, (j.release_ns + d_ns) as f64 / 1e6, "✗", "#d62728");
            }
        }
    }
    let legend: Vec<(String, &str)> = names
        .iter()
        .map(|n| (n.clone(), colour_of(&names, n)))
        .collect();
    g.finish(
        &format!("mbwi-kernel-{}-{}", run.scenario, run.mutex),
        title,
        &format!(
            "time since the run's epoch (ms); schedule from {}; ↑ release, r lock requested, L acquired, U unlock, ✗ deadline missed",
            run.schedule_source
        ),
        &legend,
    )
}

/// Every figure of a result: (file stem, SVG).
pub fn figures(res: &MbwiResult) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for r in &res.runs {
        v.push((
            format!("mbwi-kernel-{}-{}", r.scenario, r.mutex),
            kernel_gantt_svg(
                r,
                &format!(
                    "kernel {}: {} mutex, CPU(s) {:?} ({})",
                    res.kernel_release, r.mutex, r.cpus, r.scenario
                ),
            ),
        ));
    }
    for s in &res.simulations {
        let stem = if s.name.is_empty() {
            format!("{}cpu", s.cpus)
        } else {
            s.name.clone()
        };
        v.push((
            format!("mbwi-sim-{stem}-{}", s.protocol.name()),
            sim_gantt_svg(
                s,
                &format!(
                    "simulated {}: {} on {} CPU(s)",
                    s.name,
                    s.protocol.name(),
                    s.cpus
                ),
            ),
        ));
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Text

/// One simulation: per task jobs, misses, worst blocking and response.
pub fn sim_text(r: &SimResult) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "simulated {} {} on {} CPU(s), {} ms{}:",
        r.name,
        r.protocol.name(),
        r.cpus,
        fmt_num(r.horizon_us as f64 / 1000.0),
        if r.tick_us > 0 {
            format!(", budgets enforced every {} µs", r.tick_us)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        o,
        "  {:<10} {:>5} {:>6} {:>7} {:>14} {:>15}",
        "task", "jobs", "misses", "skipped", "max blocked ms", "max response ms"
    );
    for t in &r.tasks {
        let _ = writeln!(
            o,
            "  {:<10} {:>5} {:>6} {:>7} {:>14} {:>15}{}",
            t.name,
            t.jobs.len(),
            t.misses,
            t.skipped,
            fmt_num(t.max_blocked_us as f64 / 1000.0),
            t.max_response_us
                .map_or("-".into(), |x| fmt_num(x as f64 / 1000.0)),
            if t.interacts { "" } else { "  (independent)" }
        );
    }
    o
}

fn run_text(o: &mut String, r: &MbwiKernelRun) {
    let _ = writeln!(
        o,
        "kernel, {} with a {} mutex on CPU(s) {:?}, {} s:",
        r.scenario,
        r.mutex,
        r.cpus,
        fmt_num(r.duration_ns as f64 / 1e9)
    );
    let _ = writeln!(
        o,
        "  {:<8} {:>5} {:>6} {:>7} {:>9} {:>17} {:>13} {:>16} {:>8}",
        "task",
        "jobs",
        "misses",
        "skipped",
        "contended",
        "blocked p50/max ms",
        "response p50",
        "holder off-CPU p50",
        "setprio"
    );
    for t in &r.tasks {
        let _ = writeln!(
            o,
            "  {:<8} {:>5} {:>6} {:>7} {:>9} {:>17} {:>13} {:>16} {:>8}",
            t.name,
            t.jobs,
            t.misses,
            t.skipped,
            t.contended_jobs,
            format!(
                "{}/{}",
                opt_ms(t.blocked.quantile_ns(0.5)),
                opt_ms(t.blocked.max_ns())
            ),
            opt_ms(t.response.quantile_ns(0.5)),
            opt_ms(t.cs_off_cpu.quantile_ns(0.5)),
            t.pi_setprio_events.map_or("-".into(), |x| x.to_string())
        );
    }
    for n in &r.notes {
        let _ = writeln!(o, "  note: {n}");
    }
}

/// The side-by-side table: the kernel today (measured, PI and plain) against the simulator's
/// mainline and full M-BWI on the same set.
pub fn comparison_text(rows: &[MbwiComparisonRow]) -> String {
    let mut o = String::new();
    if rows.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "the kernel today (measured) vs the simulator: misses/jobs, median (kernel) or worst (simulated) blocking ms"
    );
    let _ = writeln!(
        o,
        "  {:<16} {:<6} {:<12} {:>16} {:>16} {:>16} {:>16}",
        "scenario", "task", "", "kernel PI", "kernel plain", "sim mainline", "sim M-BWI"
    );
    let cell = |m: u64, j: u64, b: Option<u64>| {
        if j == 0 {
            "-".to_string()
        } else {
            format!("{m}/{j} {}", opt_ms(b))
        }
    };
    for r in rows {
        let _ = writeln!(
            o,
            "  {:<16} {:<6} {:<12} {:>16} {:>16} {:>16} {:>16}",
            r.scenario,
            r.task,
            if r.interacts {
                "shares A"
            } else {
                "independent"
            },
            cell(
                r.kernel_pi_misses,
                r.kernel_pi_jobs,
                r.kernel_pi_blocked_median_ns
            ),
            cell(
                r.kernel_plain_misses,
                r.kernel_plain_jobs,
                r.kernel_plain_blocked_median_ns
            ),
            format!(
                "{}/{} {}",
                r.sim_mainline_misses,
                r.sim_mainline_jobs,
                fmt_num(r.sim_mainline_max_blocked_us as f64 / 1000.0)
            ),
            format!(
                "{}/{} {}",
                r.sim_mbwi_misses,
                r.sim_mbwi_jobs,
                fmt_num(r.sim_mbwi_max_blocked_us as f64 / 1000.0)
            ),
        );
    }
    // Per scenario, the independent tasks' misses: kernel PI, kernel plain, simulated M-BWI,
    // simulated mainline, and their kernel jobs.
    let mut iso: BTreeMap<&str, [u64; 5]> = BTreeMap::new();
    for r in rows.iter().filter(|r| !r.interacts) {
        let e = iso.entry(r.scenario.as_str()).or_default();
        e[0] += r.kernel_pi_misses;
        e[1] += r.kernel_plain_misses;
        e[2] += u64::from(r.sim_mbwi_misses);
        e[3] += u64::from(r.sim_mainline_misses);
        e[4] += r.kernel_pi_jobs.max(r.kernel_plain_jobs);
    }
    for (s, [pi, plain, mbwi, ml, jobs]) in iso {
        let verdict = if pi + plain + mbwi + ml == 0 {
            "kept every deadline: isolated"
        } else if mbwi + ml == 0 {
            "isolated in simulation; the kernel misses are few enough to check against host stalls"
        } else {
            "missed deadlines in simulation too: not isolated"
        };
        let _ = writeln!(
            o,
            "  {s}: independent tasks missed {pi} (PI) and {plain} (plain) of ~{jobs} kernel jobs, {ml} (mainline) and {mbwi} (M-BWI) simulated — {verdict}"
        );
    }
    o
}

pub fn overhead_text(ov: &MbwiOverhead) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "lock/unlock under SCHED_DEADLINE, CPU(s) {:?} (ns; includes one clock read):",
        ov.cpus
    );
    let _ = writeln!(
        o,
        "  {:<6} {:<20} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "mutex", "operation", "count", "min", "median", "p99", "max", "mean"
    );
    for r in &ov.rows {
        let h = &r.histogram;
        let f = |v: Option<u64>| v.map_or("-".into(), |x| x.to_string());
        let _ = writeln!(
            o,
            "  {:<6} {:<20} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}",
            r.mutex,
            r.op,
            h.count(),
            f(h.min_ns()),
            f(h.quantile_ns(0.5)),
            f(h.quantile_ns(0.99)),
            f(h.max_ns()),
            h.mean_ns().map_or("-".into(), |m| format!("{m:.0}"))
        );
    }
    for n in &ov.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    o
}

/// Everything `rtscope mbwi` prints for a result.
pub fn text(res: &MbwiResult) -> String {
    let mut o = String::new();
    if !res.kernel_release.is_empty() {
        let _ = writeln!(
            o,
            "kernel {}{}",
            res.kernel_release,
            res.load_avg.map_or(String::new(), |l| format!(
                ", load average {:.2} {:.2} {:.2}",
                l[0], l[1], l[2]
            ))
        );
    }
    for r in &res.runs {
        run_text(&mut o, r);
    }
    if res.runs.is_empty() {
        for s in &res.simulations {
            o.push_str(&sim_text(s));
        }
    }
    o.push_str(&comparison_text(&res.comparison));
    if let Some(ov) = &res.overhead {
        o.push_str(&overhead_text(ov));
    }
    for n in &res.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim() -> SimResult {
        SimResult {
            name: "ex".into(),
            protocol: MbwiProtocol::Mbwi,
            cpus: 1,
            horizon_us: 10_000,
            tick_us: 0,
            segments: vec![
                SimSegment {
                    cpu: 0,
                    task: "a".into(),
                    server: "a".into(),
                    start_us: 0,
                    end_us: 2000,
                    inherited_from: None,
                    spinning: false,
                },
                SimSegment {
                    cpu: 0,
                    task: "a".into(),
                    server: "b".into(),
                    start_us: 2000,
                    end_us: 5000,
                    inherited_from: Some("b".into()),
                    spinning: false,
                },
            ],
            events: vec![SimEvent {
                t_us: 6000,
                task: "b".into(),
                kind: SimEventKind::Miss,
                mutex: None,
                server: None,
            }],
            tasks: ["a", "b"]
                .iter()
                .map(|n| SimTaskResult {
                    name: n.to_string(),
                    interacts: true,
                    jobs: vec![],
                    misses: u32::from(*n == "b"),
                    skipped: 0,
                    max_blocked_us: 3000,
                    max_response_us: Some(6000),
                })
                .collect(),
        }
    }

    #[test]
    fn gantt_has_a_bar_per_segment_and_rows() {
        let svg = sim_gantt_svg(&sim(), "t <x>");
        assert!(svg.starts_with("<svg"));
        assert_eq!(
            svg.matches("<rect x=").count() - 2,
            2,
            "2 bars + 2 legend boxes"
        );
        assert!(svg.contains("t &lt;x&gt;"));
        assert!(svg.contains("in b&#39;s server, inherited from b"));
        assert!(svg.contains(">✗<"));
    }

    #[test]
    fn sim_text_lists_tasks() {
        let t = sim_text(&sim());
        assert!(t.contains("simulated ex mbwi on 1 CPU(s), 10 ms"), "{t}");
        let b = t
            .lines()
            .find(|l| l.trim_start().starts_with("b "))
            .unwrap();
        assert!(
            b.contains(" 1 ") && b.contains(" 3 ") && b.contains(" 6"),
            "{b}"
        );
    }
}
