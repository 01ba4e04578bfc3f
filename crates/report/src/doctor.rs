//! `rtscope doctor`'s report: the ranked findings as text (the terminal), and as an HTML page
//! people keep (the JSON is the [`DoctorReport`] itself, through serde).

use crate::svg::esc;
use rtscope_model::doctor::{DoctorReport, Finding};
use std::fmt::Write;

fn cpus(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The terminal report: a header, then one block per finding, most important first.
pub fn text(r: &DoctorReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "rtscope doctor — {} (Linux {}), measured CPUs {}, {}",
        r.hostname,
        r.kernel_release,
        cpus(&r.cpus),
        r.taken_at
    );
    if let Some(id) = &r.run_id {
        let _ = writeln!(
            o,
            "joined with run {id}: p99 {:.1} µs over {} tail samples; the findings below explain {:.1} % of that tail",
            r.run_p99_latency_ns.unwrap_or(0) as f64 / 1e3,
            r.run_tail_p99_samples,
            (1.0 - r.run_unexplained_share.unwrap_or(1.0)) * 100.0
        );
    }
    let _ = writeln!(
        o,
        "{} findings from {} checks\n",
        r.findings.len(),
        r.checks_run.len()
    );
    for f in &r.findings {
        finding(&mut o, f);
    }
    let boot: Vec<&str> = {
        let mut v: Vec<&str> = r
            .findings
            .iter()
            .flat_map(|f| f.fix.boot_params.iter().map(String::as_str))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    if !boot.is_empty() {
        let _ = writeln!(
            o,
            "Boot parameters doctor never applies (add them to the kernel command line yourself):\n  {}",
            boot.join(" ")
        );
    }
    let fixable: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| !f.fix.writes.is_empty())
        .map(|f| f.code.as_str())
        .collect();
    if !fixable.is_empty() {
        let mut v = fixable;
        v.dedup();
        let _ = writeln!(
            o,
            "Fixable at run time by doctor (kept until reverted): {}",
            v.join(" ")
        );
    }
    o
}

fn finding(o: &mut String, f: &Finding) {
    let _ = writeln!(o, "[{}] {}  {}", f.severity.name(), f.code, f.title);
    if let Some(r) = &f.run {
        let _ = writeln!(o, "    run: {}", r.text);
    }
    for e in &f.evidence {
        let _ = writeln!(o, "    evidence: {e}");
    }
    let _ = writeln!(o, "    fix: {}", f.fix.text);
    for (path, value) in &f.fix.writes {
        let _ = writeln!(o, "      write {value:?} to {path}");
    }
    if !f.fix.boot_params.is_empty() {
        let _ = writeln!(o, "      boot with: {}", f.fix.boot_params.join(" "));
    }
    let _ = writeln!(o, "    reference: {}\n", f.reference);
}

/// A self-contained HTML page: the header, a bar per finding for the share of the tail it
/// explains (when a run was joined), and the findings table.
pub fn html(r: &DoctorReport) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>rtscope doctor — {}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}td,th{{border:1px solid #ccc;padding:4px;vertical-align:top}}\
         table{{border-collapse:collapse}}.high{{color:#b00}}.warning{{color:#a60}}.info{{color:#555}}</style></head><body>",
        esc(&r.hostname)
    );
    let _ = write!(
        o,
        "<h1>rtscope doctor</h1><p>{} — Linux {} — measured CPUs {} — {}</p>",
        esc(&r.hostname),
        esc(&r.kernel_release),
        esc(&cpus(&r.cpus)),
        esc(&r.taken_at)
    );
    if let Some(id) = &r.run_id {
        let _ = write!(
            o,
            "<h2>Share of the p99 tail of run {}</h2><svg width=\"640\" height=\"{}\">",
            esc(id),
            20 * r.findings.iter().filter(|f| f.run.is_some()).count() + 20
        );
        let mut y = 0;
        for f in r.findings.iter().filter(|f| f.run.is_some()) {
            let share = f.run.as_ref().map_or(0.0, |x| x.tail_p99_share).min(1.0);
            let _ = write!(
                o,
                "<rect x=\"200\" y=\"{y}\" width=\"{:.1}\" height=\"16\" fill=\"#c44\"/>\
                 <text x=\"0\" y=\"{}\" font-size=\"12\">{}</text><text x=\"{:.1}\" y=\"{}\" font-size=\"12\">{:.1} %</text>",
                share * 400.0,
                y + 12,
                esc(&f.code),
                205.0 + share * 400.0,
                y + 12,
                share * 100.0
            );
            y += 20;
        }
        let _ = write!(o, "</svg>");
    }
    let _ = write!(
        o,
        "<h2>Findings</h2><table><tr><th>severity</th><th>code</th><th>finding</th><th>evidence</th><th>fix</th><th>reference</th></tr>"
    );
    for f in &r.findings {
        let mut ev: Vec<String> = f
            .run
            .iter()
            .map(|x| format!("<b>run:</b> {}", esc(&x.text)))
            .collect();
        ev.extend(f.evidence.iter().map(|e| esc(e)));
        let mut fix = esc(&f.fix.text);
        for (p, v) in &f.fix.writes {
            let _ = write!(fix, "<br><code>{} → {}</code>", esc(v), esc(p));
        }
        if !f.fix.boot_params.is_empty() {
            let _ = write!(
                fix,
                "<br>boot: <code>{}</code>",
                esc(&f.fix.boot_params.join(" "))
            );
        }
        let _ = write!(
            o,
            "<tr><td class=\"{s}\">{s}</td><td>{}</td><td>{}</td><td>{}</td><td>{fix}</td><td>{}</td></tr>",
            esc(&f.code),
            esc(&f.title),
            ev.join("<br>"),
            esc(&f.reference),
            s = f.severity.name()
        );
    }
    let _ = writeln!(o, "</table></body></html>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::doctor::{Fix, RunEvidence, Severity};

    fn report() -> DoctorReport {
        DoctorReport {
            hostname: "h".into(),
            kernel_release: "6.1".into(),
            cpus: vec![1],
            run_id: Some("r1".into()),
            run_unexplained_share: Some(0.69),
            findings: vec![Finding {
                code: "RT001-irq-on-measured-cpu".into(),
                severity: Severity::High,
                title: "IRQ 24 <eth0>".into(),
                evidence: vec!["/proc/irq/24/smp_affinity_list = 0-1".into()],
                fix: Fix {
                    text: "move it".into(),
                    writes: vec![("/proc/irq/24/smp_affinity_list".into(), "0".into())],
                    boot_params: vec!["irqaffinity=0".into()],
                },
                reference: "Documentation/core-api/irq/irq-affinity.rst".into(),
                irqs: vec![24],
                cpus: vec![1],
                pids: vec![],
                run: Some(RunEvidence {
                    text: "IRQ 24 caused 31.0 % of the p99 tail".into(),
                    tail_p99_share: 0.31,
                    ..Default::default()
                }),
            }],
            checks_run: vec!["RT001-irq-on-measured-cpu".into()],
            ..Default::default()
        }
    }

    #[test]
    fn text_and_html_carry_every_part_of_a_finding() {
        let r = report();
        let t = text(&r);
        for want in [
            "[high] RT001-irq-on-measured-cpu",
            "run: IRQ 24 caused 31.0 %",
            "write \"0\" to /proc/irq/24/smp_affinity_list",
            "irqaffinity=0",
            "explain 31.0 % of that tail",
            "Fixable at run time by doctor (kept until reverted): RT001-irq-on-measured-cpu",
        ] {
            assert!(t.contains(want), "{want} in\n{t}");
        }
        let h = html(&r);
        assert!(
            h.contains("IRQ 24 &lt;eth0&gt;") && h.contains("31.0 %"),
            "{h}"
        );
    }
}
