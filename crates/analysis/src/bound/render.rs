//! Human text in the shape of rtsl's output (seed Fig. 24): the thread variables, then per
//! characterization the equation's terms and, for the fixed points, each window with each
//! source's contribution ("<- new!" when it grew) and "Converged!" / "Did not converge.".
//! Pure: returns a String. (Output formats belong in `report`; this lives here until that crate
//! takes it, so that `rtscope bound` does not depend on unfinished work.)

use rtscope_model::bound::{BoundReport, CharBound, CpuBound};
use std::fmt::Write;

const ESTIMATE: &str = "ESTIMATE, NOT A SOUND BOUND";

/// "NOT A SOUND BOUND: …" when the report is not sound for a reason other than estimated
/// thread terms (which have their own label): lost events, one clause per CPU and cause.
pub fn lost_label(r: &BoundReport) -> Option<String> {
    let because: Vec<&str> = r
        .not_sound_because
        .iter()
        .map(String::as_str)
        .filter(|w| w.contains(" lost "))
        .collect();
    (!r.sound && !because.is_empty()).then(|| format!("NOT A SOUND BOUND: {}", because.join("; ")))
}

pub fn text(r: &BoundReport) -> String {
    let mut o = String::new();
    if r.estimate {
        let _ = writeln!(
            o,
            "*** {ESTIMATE}: thread terms were not measured with preemptirq tracepoints ***"
        );
    }
    if let Some(l) = lost_label(r) {
        let _ = writeln!(o, "*** {l} ***");
    }
    for w in &r.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    for c in &r.cpus {
        cpu(&mut o, c, r.estimate);
    }
    if !r.series.is_empty() {
        series(&mut o, r);
    }
    o
}

/// Time-to-bound: when the sliding-window bound first reached the run's observed maximum, and
/// the final ratio bound/observed per characterization.
fn series(o: &mut String, r: &BoundReport) {
    let _ = writeln!(o, "\nTime to bound (sliding_window vs observed maximum):");
    for (cpu, t) in crate::bound::events::time_to_bound(&r.series) {
        match t {
            Some(t) => {
                let _ = writeln!(
                    o,
                    "    CPU {cpu}: bound >= final observed maximum from t = {t:.1} s"
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "    CPU {cpu}: bound never reached the observed maximum (or nothing observed)"
                );
            }
        }
        if let Some(c) = r.cpus.iter().find(|c| c.cpu == cpu) {
            if let Some(obs) = c.observed_max_latency_ns.filter(|&x| x > 0) {
                for (name, b) in c.bounds.named() {
                    let v = b.latency_ns.map_or("did not converge".to_string(), |l| {
                        format!("{:.2}", l as f64 / obs as f64)
                    });
                    let _ = writeln!(o, "        {name:<22} bound/observed = {v}");
                }
            }
        }
    }
    let _ = writeln!(o, "    t_s        cpu  sliding_window_ns  observed_max_ns");
    for p in &r.series {
        let sw = p
            .sliding_window_ns
            .map_or("-".to_string(), |v| v.to_string());
        let ob = p.observed_max_ns.map_or("-".to_string(), |v| v.to_string());
        let _ = writeln!(o, "    {:<10.1} {:<4} {:>17}  {:>15}", p.t_s, p.cpu, sw, ob);
    }
}

fn cpu(o: &mut String, c: &CpuBound, estimate: bool) {
    let t = &c.thread;
    let _ = writeln!(o, "\n=== CPU {} ===", c.cpu);
    let _ = writeln!(o, "Interference Free Latency:");
    if c.thread_estimated {
        let _ = writeln!(
            o,
            "    (fallback: observed max non-interrupt delay in place of max(poid, dst) + paie + psd — {ESTIMATE})"
        );
    }
    if t.paie_ns < 1000 {
        let _ = writeln!(o, "    paie is lower than 1 us -> neglectable");
    }
    let _ = writeln!(o, "    latency = max(poid, dst) + paie + psd");
    let _ = writeln!(
        o,
        "    {:>8} = max({}, {}) + {} + {}",
        c.ifl_ns, t.poid_ns, t.dst_ns, t.paie_ns, t.psd_ns
    );
    if let Some(obs) = c.observed_max_latency_ns {
        let _ = writeln!(o, "Observed:\n    Latency = {obs:>10} observed maximum");
    }
    if !c.sources.is_empty() {
        let _ = writeln!(
            o,
            "Sources:                    count       oWCET       oMIAT"
        );
        for s in &c.sources {
            let omiat = s.omiat_ns.map_or("-".to_string(), |m| m.to_string());
            let flag = if s.omiat_ns.is_some_and(|m| s.owcet_ns >= m) {
                " <- oWCET >= oMIAT"
            } else {
                ""
            };
            let _ = writeln!(
                o,
                "    {:>20}: {:>8} {:>11} {:>11}{flag}",
                s.source, s.count, s.owcet_ns, omiat
            );
        }
    }
    if c.irq_entry_exit_ns > 0 {
        let _ = writeln!(
            o,
            "IRQ entry/exit: {:>10} per arrival (hard-IRQ context outside the handler), added to every IRQ instance",
            c.irq_entry_exit_ns
        );
    }
    for (name, b) in c.bounds.named() {
        charb(o, name, b, c.observed_max_latency_ns, estimate);
    }
}

fn title(name: &str) -> &'static str {
    match name {
        "no_interrupts" => "No Interrupts",
        "worst_single" => "Worst single interrupt",
        "single_of_each" => "Single (worst) of each interrupt",
        "sporadic" => "Sporadic",
        "sliding_window" => "Sliding window",
        _ => "Sliding window with oWCET",
    }
}

fn charb(o: &mut String, name: &str, b: &CharBound, observed: Option<u64>, estimate: bool) {
    let _ = writeln!(o, "{}:", title(name));
    let iterative = matches!(name, "sporadic" | "sliding_window" | "sliding_window_owcet");
    if iterative {
        for (k, it) in b.iterations.iter().enumerate() {
            let _ = writeln!(o, "    Window: {}", it.window_ns);
            for c in &it.contributions {
                let new = if k > 0 { " <- new!" } else { "" };
                let _ = writeln!(o, "        {:>20}: {:>10}{new}", c.source, c.ns);
            }
        }
        if b.iteration_count > b.iterations.len() as u64 {
            let _ = writeln!(
                o,
                "    ({} iterations, {} shown)",
                b.iteration_count,
                b.iterations.len()
            );
        }
        if b.converged {
            let _ = writeln!(o, "    Converged!");
        }
    } else if let Some(it) = b.iterations.first() {
        for c in &it.contributions {
            let _ = writeln!(o, "        {:>20}: {:>10}", c.source, c.ns);
        }
    }
    match (b.latency_ns, &b.reason) {
        (Some(l), _) => {
            let est = if estimate {
                format!(" ({ESTIMATE})")
            } else {
                String::new()
            };
            let ratio = observed.filter(|&x| x > 0).map_or(String::new(), |x| {
                format!(", {:.2}x observed", l as f64 / x as f64)
            });
            let dom = b
                .dominant
                .as_deref()
                .map_or(String::new(), |d| format!(", dominant: {d}"));
            let _ = writeln!(
                o,
                "    Latency = {l:>10} with {}{est}{dom}{ratio}",
                title(name)
            );
        }
        (None, Some(r)) => {
            let _ = writeln!(o, "    Did not converge: {r}");
        }
        (None, None) => {
            let _ = writeln!(o, "    Did not converge.");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bound::{analyze, json, Options};

    #[test]
    fn looks_like_rtsl() {
        let i = json::parse(
            r#"{"cpus":[{"cpu":0,"thread":{"poid_ns":22510,"paie_ns":0,"psd_ns":19702,"dst_ns":19312},
            "irqs":[{"source":"236","start_ns":0,"duration_ns":20728},{"source":"236","start_ns":60000,"duration_ns":301}],
            "observed_max_latency_ns":27000}]}"#,
            "t.json",
        )
        .unwrap();
        let s = text(&analyze(&i, &Options::default(), "json"));
        assert!(s.contains("42212 = max(22510, 19312) + 0 + 19702"), "{s}");
        assert!(s.contains("paie is lower than 1 us -> neglectable"));
        assert!(s.contains("Window: 62940"));
        assert!(s.contains("21029 <- new!"));
        assert!(s.contains("Converged!"));
        assert!(s.contains("Latency =      63241 with Sliding window"));
        assert!(!s.contains("ESTIMATE"));
    }
}
