//! `rtscope cyclictest <cyclictest flags>`: a drop-in for rt-tests' cyclictest. It accepts the
//! common flags (`-m -S -t [N] -a [CPUS] -p -i -d -D -l -h -H -q -N -b --policy --json`), with
//! getopt's syntax (`rtscope_report::cyclictest_args`), and prints cyclictest's formats, so
//! existing scripts keep working. Documented differences: threads are always pinned (thread i on
//! the i-th CPU of -a, or of the online CPUs without -a), and `-N` switches the status lines and
//! footer to ns but the `-h` buckets stay 1 µs wide.

use crate::input::{self, bad, VerbError};
use crate::resolve::MeasureRequest;
use rtscope_model::Policy;
use rtscope_report::cyclictest_args::{parse, CtFlags};
use std::io::{IsTerminal, Write};

/// Map cyclictest flags onto a measurement request; the rest is `base` (the caller's defaults).
pub fn measure_request(ct: &CtFlags, base: MeasureRequest) -> Result<MeasureRequest, VerbError> {
    let online = rtscope_probe::sys::online_cpus().map_err(VerbError::failed)?;
    let affinity: Vec<u32> = match (&ct.affinity, ct.smp) {
        (Some(Some(list)), _) => {
            rtscope_probe::sys::parse_cpu_list(list).map_err(|e| bad!("cyclictest -a: {e}"))?
        }
        _ => online.clone(),
    };
    let nthreads = match (ct.threads, ct.smp) {
        (Some(Some(n)), _) => n as usize,
        (Some(None), _) | (None, true) => affinity.len(),
        (None, false) => 1,
    };
    input::range(
        "cyclictest -t",
        nthreads,
        1,
        online.len(),
        " (one thread per CPU at most)",
    )?;
    if affinity.is_empty() {
        return Err(bad!("cyclictest -a: empty CPU list"));
    }
    let cpus: Vec<u32> = (0..nthreads)
        .map(|i| affinity[i % affinity.len()])
        .collect();
    let mut uniq = cpus.clone();
    uniq.sort_unstable();
    uniq.dedup();
    if uniq.len() != cpus.len() {
        return Err(bad!(
            "cyclictest -t/-a: {nthreads} threads need {nthreads} distinct CPUs"
        ));
    }
    let policy = match ct.policy.as_deref() {
        None => {
            if ct.prio > 0 {
                Policy::Fifo
            } else {
                Policy::Other
            }
        }
        Some("fifo") => Policy::Fifo,
        Some("rr") => Policy::Rr,
        Some("other") | Some("normal") => Policy::Other,
        Some(p) => {
            return Err(bad!(
                "cyclictest --policy: '{p}' is not supported (fifo, rr, other, normal)"
            ))
        }
    };
    let rt = matches!(policy, Policy::Fifo | Policy::Rr);
    if rt {
        input::range("cyclictest -p", ct.prio, 1, 99, "")?;
    }
    let hist = ct.hist.unwrap_or(10_000);
    input::range("cyclictest -h/-H", hist, 1, 1_000_000, " us")?;
    let duration = ct
        .duration
        .as_deref()
        .map(|d| input::duration("cyclictest -D", d));
    Ok(MeasureRequest {
        cpus: Some(cpus),
        interval_us: ct.interval,
        distance_us: ct.distance,
        policy,
        priority: rt.then_some(ct.prio),
        duration: duration
            .transpose()?
            .map(std::time::Duration::from_secs_f64),
        loops: ct.loops,
        break_above_us: ct.breaktrace,
        // Overflow cycle numbers: cyclictest lists every sample ≥ the histogram size, so keep
        // every sample above (size − 1) µs; the writer filters to ≥ size.
        record_above_us: ct.hist.map(|h| (h as u64).saturating_sub(1).max(1)),
        linear_max_us: hist.saturating_sub(1).max(1),
        quiet: true,
        // The drop-in behaves like cyclictest: it prints, it does not store.
        no_store: true,
        tags: [("compat".to_string(), "cyclictest".to_string())].into(),
        ..base
    })
}

/// cyclictest's live view: the `T:` lines refreshed in place.
struct CtView {
    prio: u32,
    intervals: Vec<u64>,
    nsecs: bool,
    lines: usize,
    /// Refresh in place on a terminal; otherwise only keep each thread's last latency.
    live: bool,
    /// Each thread's last latency (`Act:`), from the last snapshot.
    acts: Vec<u64>,
}

impl CtView {
    /// cyclictest `-q`'s final `T:` lines. The counts, minimum, mean and maximum come from the
    /// joined threads' record: the last live snapshot holds only what the threads had published
    /// (they hand their figures over every ~50 ms), so a run that ends on `-l` would print a
    /// stale `C:`.
    fn final_lines(&self, rec: &rtscope_model::RunRecord) -> String {
        let threads = rec.measurement().map_or(&[][..], |m| &m.threads[..]);
        let mut out = String::new();
        for (i, t) in threads.iter().enumerate() {
            let h = &t.histogram;
            let act = self.acts.get(i).copied().unwrap_or(0);
            let mean = h.mean_ns().unwrap_or(0.0) as u64;
            let ns = [h.min_ns().unwrap_or(0), act, mean, h.max_ns().unwrap_or(0)];
            out.push_str(&self.line(i, t.tid, t.cycles, ns));
        }
        out
    }

    /// One `T:` line and its newline; `ns` is min, act, avg and max in nanoseconds.
    fn line(&self, i: usize, tid: u32, cycles: u64, ns: [u64; 4]) -> String {
        let d = if self.nsecs { 1 } else { 1000 };
        let [min, act, avg, max] = ns.map(|v| v / d);
        let interval = self.intervals.get(i).copied().unwrap_or(0);
        let mut l = rtscope_report::cyclictest::status_line(
            i as u32, tid, self.prio, interval, cycles, min, act, avg, max, self.nsecs,
        );
        l.push('\n');
        l
    }
}

impl crate::View for CtView {
    fn update(&mut self, snap: &crate::LiveSnapshot) {
        let mut out = String::new();
        self.acts = snap.threads.iter().map(|t| t.cur_ns).collect();
        if !self.live {
            return;
        }
        for (i, t) in snap.threads.iter().enumerate() {
            let ns = [t.min_ns, t.cur_ns, t.avg_ns, t.max_ns];
            out.push_str(&self.line(i, t.tid, t.samples, ns));
        }
        let up = if self.lines > 0 {
            format!("\x1b[{}A", self.lines)
        } else {
            String::new()
        };
        self.lines = snap.threads.len();
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(up.as_bytes());
        let _ = o.write_all(out.as_bytes());
        let _ = o.flush();
    }
}

/// Run cyclictest's `argv`; what cyclictest has no flag for is `base` (the caller's defaults).
pub fn run(argv: &[String], base: MeasureRequest) -> Result<(), VerbError> {
    let ct = parse(argv).map_err(VerbError::BadInput)?;
    if ct.help {
        println!("rtscope cyclictest: drop-in for rt-tests' cyclictest.\nSupported flags: -m -S -t [N] -a [CPUS] -p PRIO -i US -d US -D TIME -l LOOPS -h US -H US -q -N -b US --policy NAME --json FILE");
        return Ok(());
    }
    let mf = measure_request(&ct, base)?;
    if let Some(j) = &ct.json {
        input::output("cyclictest --json", std::path::Path::new(j))?;
    }
    let r = crate::resolve::measure(&mf, "cyclictest", None)?;
    if r.config.hold_cpu_dma_latency && ct.hist.is_none() {
        println!("# /dev/cpu_dma_latency set to 0us");
    }
    let intervals: Vec<u64> = (0..r.config.cpus.len() as u64)
        .map(|i| ct.interval + i * ct.distance)
        .collect();
    let mut view = CtView {
        prio: ct.prio,
        intervals: intervals.clone(),
        nsecs: ct.nsecs,
        lines: 0,
        live: !ct.quiet && std::io::stdout().is_terminal(),
        acts: Vec::new(),
    };
    let outcome = crate::measure::run(&r, &mut view)?;
    let rec = outcome.record;
    let hist_size = ct.hist.unwrap_or(10_000);
    let mut res = rtscope_report::cyclictest::from_record(&rec, hist_size);
    res.with_total_column = ct.histofall;
    if ct.hist.is_some() {
        print!("{}", rtscope_report::cyclictest::write_histogram(&res));
    } else if !view.live {
        // cyclictest -q prints the final status lines on exit.
        print!("{}", view.final_lines(&rec));
    } else if view.lines > 0 {
        // On a terminal the screen's last refresh is redrawn with the joined threads' figures.
        print!("\x1b[{}A{}", view.lines, view.final_lines(&rec));
    }
    if let Some(b) = rec.measurement().and_then(|m| m.break_sample.as_ref()) {
        println!("# Break thread: {}", b.tid);
        println!(
            "# Break value: {}",
            b.latency_ns / if ct.nsecs { 1 } else { 1000 }
        );
    }
    if let Some(j) = &ct.json {
        res.end_time = Some(crate::record::rfc3339(std::time::SystemTime::now()));
        res.cmdline = Some(
            argv.iter()
                .fold("cyclictest".to_string(), |s, x| s + " " + x),
        );
        crate::outputs::write_file(
            std::path::Path::new(j),
            rtscope_report::cyclictest::write_json(&res).as_bytes(),
        )?;
    }
    for w in &rec.warnings {
        eprintln!("# rtscope: {w}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    include!("../../session/tests/support/request.rs");

    fn flags(s: &str) -> Result<MeasureRequest, VerbError> {
        let argv: Vec<String> = s.split_whitespace().map(String::from).collect();
        let base = request_fixture();
        measure_request(&parse(&argv).map_err(VerbError::BadInput)?, base)
    }

    #[test]
    fn cyclictest_flags_map_onto_measure_flags() {
        let online = match rtscope_probe::sys::online_cpus() {
            Ok(o) => o,
            Err(e) => {
                rtscope_testkit::skipped(format_args!("no online CPU list ({e})"));
                return;
            }
        };
        // No -p: SCHED_OTHER, like cyclictest; one thread on the first CPU; the drop-in prints
        // and does not store.
        let m = flags("").unwrap();
        assert_eq!(
            (
                m.cpus.clone(),
                m.policy,
                m.priority,
                m.interval_us,
                m.distance_us
            ),
            (Some(vec![online[0]]), Policy::Other, None, 1000, 500)
        );
        assert_eq!((m.record_above_us, m.linear_max_us), (None, 9999));
        assert!(
            m.quiet && m.no_store && m.tags.get("compat").map(String::as_str) == Some("cyclictest")
        );
        let m = flags("-m -p 80 -i 200 -d0 -h 100 -l 1000 -b 500").unwrap();
        assert_eq!(
            (m.policy, m.priority, m.interval_us, m.distance_us),
            (Policy::Fifo, Some(80), 200, 0)
        );
        // Overflow cycles: every sample ≥ the histogram size is kept.
        assert_eq!((m.record_above_us, m.linear_max_us), (Some(99), 99));
        assert_eq!((m.loops, m.break_above_us), (Some(1000), Some(500)));
        let m = flags("-S -p 90 --policy rr").unwrap();
        assert_eq!(m.cpus, Some(online.clone()));
        assert_eq!(m.policy, Policy::Rr);
        let rows: Vec<(&str, String)> = vec![
            (
                "--policy idle",
                "cyclictest --policy: 'idle' is not supported (fifo, rr, other, normal)".into(),
            ),
            (
                "--policy fifo",
                "cyclictest -p: 0 is out of range (1..=99)".into(),
            ),
            (
                "-t 4096",
                format!(
                    "cyclictest -t: 4096 is out of range (1..={} (one thread per CPU at most))",
                    online.len()
                ),
            ),
            (
                "-p 120",
                "cyclictest -p: 120 is out of range (0..=99)".into(),
            ),
            (
                "-i x",
                "cyclictest -i: 'x' is not a non-negative integer".into(),
            ),
        ];
        for (args, want) in rows {
            match flags(args) {
                Err(VerbError::BadInput(got)) => assert_eq!(got, want, "{args}"),
                other => panic!("{args}: {:?}", other.map(|_| ())),
            }
        }
    }
}
