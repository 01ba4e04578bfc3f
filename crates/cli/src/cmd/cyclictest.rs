//! `rtscope cyclictest <cyclictest flags>`: a drop-in for rt-tests' cyclictest. It accepts the
//! common flags (`-m -S -t [N] -a [CPUS] -p -i -d -D -l -h -H -q -N -b --policy --json`), with
//! getopt's syntax (`-p95`, `-p 95`, `--json=FILE`, `--json FILE`), and prints cyclictest's
//! formats, so existing scripts keep working. Documented differences: threads are always pinned
//! (thread i on the i-th CPU of -a, or of the online CPUs without -a), and `-N` switches the status
//! lines and footer to ns but the `-h` buckets stay 1 µs wide.

use super::common::{self, check_range};
use super::measure::{self, MeasureFlags, PolicyArg};
use crate::usage;
use anyhow::Result;
use std::io::{IsTerminal, Write};

#[derive(clap::Args)]
pub struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    argv: Vec<String>,
}

#[derive(Debug, Default, PartialEq)]
pub struct CtFlags {
    pub threads: Option<Option<u32>>,
    pub affinity: Option<Option<String>>,
    pub smp: bool,
    pub prio: u32,
    pub interval: u64,
    pub distance: u64,
    pub duration: Option<String>,
    pub loops: Option<u64>,
    pub hist: Option<u32>,
    pub histofall: bool,
    pub quiet: bool,
    pub nsecs: bool,
    pub policy: Option<String>,
    pub json: Option<String>,
    pub breaktrace: Option<u64>,
    pub help: bool,
}

/// getopt-style parsing of cyclictest's flags. Optional arguments (`-t [N]`, `-a [CPUS]`)
/// attach (`-t2`) or follow when the next word is not a flag.
pub fn parse(argv: &[String]) -> Result<CtFlags> {
    let mut f = CtFlags {
        interval: 1000,
        distance: 500,
        ..Default::default()
    };
    let mut i = 0;
    let num = |flag: &str, v: &str| -> Result<u64> {
        v.trim()
            .parse::<u64>()
            .map_err(|_| usage!("cyclictest {flag}: '{v}' is not a non-negative integer"))
    };
    // Narrow values are range-checked in full before they are narrowed: `-p 4294967346` is
    // refused, not run at priority 50.
    let small = |flag: &str, v: &str, lo: u64, hi: u64, unit: &str| -> Result<u32> {
        let n = num(flag, v)?;
        common::check_range(&format!("cyclictest {flag}"), n, lo, hi, unit)?;
        Ok(n as u32)
    };
    while i < argv.len() {
        let a = &argv[i];
        i += 1;
        let (name, attached): (String, Option<String>) = if let Some(l) = a.strip_prefix("--") {
            match l.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
                None => (format!("--{l}"), None),
            }
        } else if a.starts_with('-') && a.len() >= 2 {
            let (n, rest) = a.split_at(2);
            (n.to_string(), (!rest.is_empty()).then(|| rest.to_string()))
        } else {
            return Err(usage!("cyclictest: unexpected argument '{a}'"));
        };
        let required = |i: &mut usize| -> Result<String> {
            if let Some(v) = attached.clone() {
                return Ok(v);
            }
            let v = argv
                .get(*i)
                .cloned()
                .ok_or_else(|| usage!("cyclictest {name}: needs a value"))?;
            *i += 1;
            Ok(v)
        };
        let optional = |i: &mut usize| -> Option<String> {
            if attached.is_some() {
                return attached.clone();
            }
            match argv.get(*i) {
                Some(v) if !v.starts_with('-') => {
                    *i += 1;
                    Some(v.clone())
                }
                _ => None,
            }
        };
        match name.as_str() {
            "-m" | "--mlockall" => {}
            "-S" | "--smp" => f.smp = true,
            "-t" | "--threads" => {
                let v = optional(&mut i);
                f.threads = Some(match v {
                    Some(v) => Some(small("-t", &v, 1, 4096, " threads")?),
                    None => None,
                });
            }
            "-a" | "--affinity" => f.affinity = Some(optional(&mut i)),
            "-p" | "--priority" => f.prio = small("-p", &required(&mut i)?, 0, 99, "")?,
            "-i" | "--interval" => f.interval = num("-i", &required(&mut i)?)?,
            "-d" | "--distance" => f.distance = num("-d", &required(&mut i)?)?,
            "-D" | "--duration" => f.duration = Some(required(&mut i)?),
            "-l" | "--loops" => {
                let l = num("-l", &required(&mut i)?)?;
                f.loops = (l > 0).then_some(l);
            }
            "-h" | "--histogram" => {
                f.hist = Some(small("-h", &required(&mut i)?, 1, 1_000_000, " us")?)
            }
            "-H" | "--histofall" => {
                f.hist = Some(small("-H", &required(&mut i)?, 1, 1_000_000, " us")?);
                f.histofall = true;
            }
            "-q" | "--quiet" => f.quiet = true,
            "-N" | "--nsecs" => f.nsecs = true,
            "-b" | "--breaktrace" => f.breaktrace = Some(num("-b", &required(&mut i)?)?),
            "--policy" => f.policy = Some(required(&mut i)?),
            "--json" => f.json = Some(required(&mut i)?),
            "--help" | "-?" => f.help = true,
            other => {
                return Err(usage!(
                    "cyclictest: unsupported flag '{other}' (supported: -m -S -t [N] -a [CPUS] -p -i -d -D -l -h -H -q -N -b --policy --json)"
                ))
            }
        }
    }
    Ok(f)
}

/// Map cyclictest flags onto rtscope's measurement flags.
pub fn to_measure_flags(ct: &CtFlags) -> Result<MeasureFlags> {
    let online = rtscope_probe::sys::online_cpus()?;
    let affinity: Vec<u32> = match (&ct.affinity, ct.smp) {
        (Some(Some(list)), _) => {
            rtscope_probe::sys::parse_cpu_list(list).map_err(|e| usage!("cyclictest -a: {e}"))?
        }
        _ => online.clone(),
    };
    let nthreads = match (ct.threads, ct.smp) {
        (Some(Some(n)), _) => n as usize,
        (Some(None), _) | (None, true) => affinity.len(),
        (None, false) => 1,
    };
    check_range(
        "cyclictest -t",
        nthreads,
        1,
        online.len(),
        " (one thread per CPU at most)",
    )?;
    if affinity.is_empty() {
        return Err(usage!("cyclictest -a: empty CPU list"));
    }
    let cpus: Vec<u32> = (0..nthreads)
        .map(|i| affinity[i % affinity.len()])
        .collect();
    let mut uniq = cpus.clone();
    uniq.sort_unstable();
    uniq.dedup();
    if uniq.len() != cpus.len() {
        return Err(usage!(
            "cyclictest -t/-a: {nthreads} threads need {nthreads} distinct CPUs"
        ));
    }
    let policy = match ct.policy.as_deref() {
        None => {
            if ct.prio > 0 {
                PolicyArg::Fifo
            } else {
                PolicyArg::Other
            }
        }
        Some("fifo") => PolicyArg::Fifo,
        Some("rr") => PolicyArg::Rr,
        Some("other") | Some("normal") => PolicyArg::Other,
        Some(p) => {
            return Err(usage!(
                "cyclictest --policy: '{p}' is not supported (fifo, rr, other, normal)"
            ))
        }
    };
    let rt = matches!(policy, PolicyArg::Fifo | PolicyArg::Rr);
    if rt {
        check_range("cyclictest -p", ct.prio, 1, 99, "")?;
    }
    let hist = ct.hist.unwrap_or(10_000);
    check_range("cyclictest -h/-H", hist, 1, 1_000_000, " us")?;
    let mut m = measure::default_flags();
    m.cpus = Some(common::fmt_cpus(&cpus));
    m.interval = ct.interval;
    m.distance = ct.distance;
    m.policy = policy;
    m.priority = rt.then_some(ct.prio);
    m.duration = ct.duration.clone();
    m.loops = ct.loops;
    m.break_above = ct.breaktrace;
    // Overflow cycle numbers: cyclictest lists every sample ≥ the histogram size, so keep every
    // sample above (size − 1) µs; the writer filters to ≥ size.
    m.threshold = ct.hist.map(|h| (h as u64).saturating_sub(1).max(1));
    m.linear_max = hist.saturating_sub(1).max(1);
    m.quiet = true;
    // The drop-in behaves like cyclictest: it prints, it does not store.
    m.no_store = true;
    m.tags = vec!["compat=cyclictest".into()];
    Ok(m)
}

/// cyclictest's live view: the `T:` lines refreshed in place.
struct CtView {
    prio: u32,
    intervals: Vec<u64>,
    nsecs: bool,
    lines: usize,
    /// Refresh in place on a terminal; otherwise only keep the last state for the final print.
    live: bool,
    last: String,
}

impl rtscope_session::View for CtView {
    fn update(&mut self, snap: &rtscope_session::LiveSnapshot) {
        let mut out = String::new();
        let d = if self.nsecs { 1 } else { 1000 };
        for (i, t) in snap.threads.iter().enumerate() {
            out.push_str(&rtscope_report::cyclictest::status_line(
                i as u32,
                t.tid,
                self.prio,
                self.intervals.get(i).copied().unwrap_or(0),
                t.samples,
                t.min_ns / d,
                t.cur_ns / d,
                t.avg_ns / d,
                t.max_ns / d,
                self.nsecs,
            ));
            out.push('\n');
        }
        if self.live {
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
        self.last = out;
    }
}

pub fn run(a: Args) -> Result<()> {
    let ct = parse(&a.argv)?;
    if ct.help {
        println!("rtscope cyclictest: drop-in for rt-tests' cyclictest.\nSupported flags: -m -S -t [N] -a [CPUS] -p PRIO -i US -d US -D TIME -l LOOPS -h US -H US -q -N -b US --policy NAME --json FILE");
        return Ok(());
    }
    let mf = to_measure_flags(&ct)?;
    if let Some(j) = &ct.json {
        common::check_output("cyclictest --json", std::path::Path::new(j))?;
    }
    let mut r = measure::resolve(&mf, "cyclictest", None)?;
    r.warnings.extend(common::recover_leftovers());
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
        last: String::new(),
    };
    let outcome = rtscope_session::execute(&r, &mut view)?;
    let rec = outcome.record;
    let hist_size = ct.hist.unwrap_or(10_000);
    let mut res = rtscope_report::cyclictest::from_record(&rec, hist_size);
    res.with_total_column = ct.histofall;
    if ct.hist.is_some() {
        print!("{}", rtscope_report::cyclictest::write_histogram(&res));
    } else if !view.live {
        // cyclictest -q prints the final status lines on exit.
        print!("{}", view.last);
    }
    if let Some(b) = &rec.break_sample {
        println!("# Break thread: {}", b.tid);
        println!(
            "# Break value: {}",
            b.latency_ns / if ct.nsecs { 1 } else { 1000 }
        );
    }
    if let Some(j) = &ct.json {
        res.end_time = Some(common::rfc3339(std::time::SystemTime::now()));
        res.cmdline = Some(
            a.argv
                .iter()
                .fold("cyclictest".to_string(), |s, x| s + " " + x),
        );
        common::write_atomic(
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
    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn getopt_forms() {
        let f = parse(&v(
            "-m -S -p95 -i 500 -d0 -D 10s -h 100 -q --json=/tmp/x.json",
        ))
        .unwrap();
        assert!(f.smp && f.quiet);
        assert_eq!(
            (f.prio, f.interval, f.distance, f.hist),
            (95, 500, 0, Some(100))
        );
        assert_eq!(f.duration.as_deref(), Some("10s"));
        assert_eq!(f.json.as_deref(), Some("/tmp/x.json"));
        let f = parse(&v("-t -a -p 80 -l 1000")).unwrap();
        assert_eq!(f.threads, Some(None));
        assert_eq!(f.affinity, Some(None));
        assert_eq!(f.loops, Some(1000));
        let f = parse(&v("-t2 -a 0-1 --policy fifo -N -b 300 -H 50")).unwrap();
        assert_eq!(f.threads, Some(Some(2)));
        assert_eq!(f.affinity, Some(Some("0-1".into())));
        assert!(f.nsecs && f.histofall);
        assert_eq!(f.breaktrace, Some(300));
        assert!(parse(&v("-x")).is_err());
        assert!(parse(&v("-p")).is_err());
        assert!(parse(&v("-i abc")).is_err());
    }
}
