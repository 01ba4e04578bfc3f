//! cyclictest's output formats (rt-tests 2.x), written and read.
//!
//! * The `-h N`/`-H N` histogram text: one row per µs bucket (`%06d` then per-thread `%06lu`
//!   separated by tabs, `-H` adding an all-threads column), then the `# Total/Min/Avg/Max/
//!   Histogram Overflows/Overflow at cycle number` footer.
//! * The `--json` file: `file_version`, `"cmdline:"`, `"rt_test_version:"`, `sysinfo`, `thread`
//!   map with per-thread sparse `histogram`, `cycles`, `min`, `max`, `avg`, `cpu`, `node`.
//!
//! Both are produced from and parsed into [`CtResult`], the common model; `rtscope import
//! cyclictest` turns that into a RunRecord.

use rtscope_model::limits::{checked_sum, thread_bytes, Budget, LINEAR_CELL_BYTES};
use rtscope_model::{RunRecord, ThreadResult};
use serde_json::Value;
use std::fmt::Write as _;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CtError {
    #[error("line {line}: {msg}")]
    Text { line: usize, msg: String },
    #[error("JSON: {0}")]
    Json(String),
    #[error("not a cyclictest output: {0}")]
    NotCyclictest(String),
    /// The input claims more than it can hold (rtscope_model::limits), or a count overflows.
    #[error("{0}")]
    Limit(String),
}

/// Largest histogram bucket index read, µs (cyclictest's `-h` size is a u32 there too).
pub const MAX_BUCKET_US: u64 = u32::MAX as u64 - 1;

#[derive(Clone, Debug, PartialEq, Default)]
pub struct CtThread {
    pub index: u32,
    pub tid: Option<u32>,
    pub cpu: Option<i64>,
    pub cycles: u64,
    pub min_us: u64,
    pub avg_us: f64,
    pub max_us: u64,
    /// Count per µs bucket, index = µs.
    pub counts: Vec<u64>,
    pub overflows: u64,
    pub overflow_cycles: Vec<u64>,
    pub overflow_others: u64,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct CtResult {
    pub threads: Vec<CtThread>,
    /// `-h`/`-H` size (buckets 0..size-1), when a histogram was recorded.
    pub hist_size: Option<u32>,
    pub with_total_column: bool,
    pub cmdline: Option<String>,
    pub version: Option<String>,
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    pub return_code: Option<i64>,
    /// sysinfo: sysname, nodename, release, version, machine, realtime
    pub sysinfo: Vec<(String, String)>,
    pub dma_latency_line: bool,
    /// From the status lines when only they were read (`P:` and the first thread's `I:`).
    pub summary_priority: Option<u32>,
    pub summary_interval_us: Option<u64>,
}

/// Build the cyclictest view of a run record. `hist_size` buckets are emitted; samples ≥
/// `hist_size` µs are overflows, and their cycle numbers come from the above-threshold list
/// (the caller sets the threshold to `hist_size·1000 − 1` ns in cyclictest mode). A run that is
/// not a latency measurement has no threads.
pub fn from_record(rec: &RunRecord, hist_size: u32) -> CtResult {
    let threads = rec
        .measurement()
        .map_or(&[][..], |m| &m.threads[..])
        .iter()
        .map(|t| thread_from(t, hist_size))
        .collect();
    CtResult {
        threads,
        hist_size: Some(hist_size),
        with_total_column: false,
        cmdline: Some(rec.cmdline.join(" ")),
        version: Some(format!("rtscope {}", rec.tool_version)),
        start_time: Some(rec.started_at.clone()),
        end_time: None,
        return_code: Some(0),
        sysinfo: vec![
            ("sysname".into(), "Linux".into()),
            ("nodename".into(), rec.system.hostname.clone()),
            ("release".into(), rec.system.kernel_release.clone()),
            ("version".into(), rec.system.kernel_version.clone()),
            ("machine".into(), std::env::consts::ARCH.into()),
            (
                "realtime".into(),
                if rec.system.preempt_model == "rt" {
                    "1"
                } else {
                    "0"
                }
                .into(),
            ),
        ],
        dma_latency_line: rec.hygiene.cpu_dma_latency_us.is_some(),
        ..Default::default()
    }
}

fn thread_from(t: &ThreadResult, hist_size: u32) -> CtThread {
    let lin = t.linear.counts();
    let n = hist_size as usize;
    let mut counts = vec![0u64; n];
    let mut overflows = t.linear.overflow();
    for (i, &c) in lin.iter().enumerate() {
        if i < n {
            counts[i] = c;
        } else {
            overflows += c;
        }
    }
    let limit = n; // cyclictest keeps as many overflow cycle numbers as histogram buckets
    let mut cyc: Vec<u64> = t
        .above_threshold
        .iter()
        .filter(|s| s.latency_ns / 1000 >= hist_size as u64)
        .map(|s| s.cycle)
        .collect();
    cyc.sort_unstable();
    let others = (overflows as usize).saturating_sub(cyc.len().min(limit)) as u64;
    cyc.truncate(limit);
    let h = &t.histogram;
    CtThread {
        index: t.index,
        tid: Some(t.tid),
        cpu: Some(t.cpu as i64),
        cycles: t.cycles,
        min_us: h.min_ns().unwrap_or(0) / 1000,
        avg_us: h.mean_ns().unwrap_or(0.0) / 1000.0,
        max_us: h.max_ns().unwrap_or(0) / 1000,
        counts,
        overflows,
        overflow_cycles: cyc,
        overflow_others: others,
    }
}

/// The `-h`/`-H` text block exactly as cyclictest prints it.
pub fn write_histogram(r: &CtResult) -> String {
    let mut s = String::new();
    if r.dma_latency_line {
        s.push_str("# /dev/cpu_dma_latency set to 0us\n");
    }
    s.push_str("# Histogram\n");
    let size = r.hist_size.unwrap_or(0) as usize;
    for b in 0..size {
        let _ = write!(s, "{b:06} ");
        let mut total = 0u64;
        for (i, t) in r.threads.iter().enumerate() {
            let c = t.counts.get(b).copied().unwrap_or(0);
            total += c;
            if i > 0 {
                s.push('\t');
            }
            let _ = write!(s, "{c:06}");
        }
        if r.with_total_column {
            let _ = write!(s, "\t{total:06}");
        }
        s.push('\n');
    }
    let col = |s: &mut String, label: &str, w: usize, vals: &[u64], total: Option<u64>| {
        s.push_str(label);
        for v in vals {
            let _ = write!(s, " {v:0w$}");
        }
        if let Some(t) = total {
            let _ = write!(s, " {t:0w$}");
        }
        s.push('\n');
    };
    let totals: Vec<u64> = r.threads.iter().map(|t| t.counts.iter().sum()).collect();
    let tot = r.with_total_column.then(|| totals.iter().sum());
    col(&mut s, "# Total:", 9, &totals, tot);
    let mins: Vec<u64> = r.threads.iter().map(|t| t.min_us).collect();
    col(&mut s, "# Min Latencies:", 5, &mins, None);
    let avgs: Vec<u64> = r.threads.iter().map(|t| t.avg_us as u64).collect();
    col(&mut s, "# Avg Latencies:", 5, &avgs, None);
    let maxs: Vec<u64> = r.threads.iter().map(|t| t.max_us).collect();
    let maxall = r
        .with_total_column
        .then(|| maxs.iter().copied().max().unwrap_or(0));
    col(&mut s, "# Max Latencies:", 5, &maxs, maxall);
    let ovs: Vec<u64> = r.threads.iter().map(|t| t.overflows).collect();
    let ovt = r.with_total_column.then(|| ovs.iter().sum());
    col(&mut s, "# Histogram Overflows:", 5, &ovs, ovt);
    s.push_str("# Histogram Overflow at cycle number:\n");
    for t in &r.threads {
        let _ = write!(s, "# Thread {}:", t.index);
        for c in &t.overflow_cycles {
            let _ = write!(s, " {c:05}");
        }
        if t.overflow_others > 0 {
            let _ = write!(s, " # {:05} others", t.overflow_others);
        }
        s.push('\n');
    }
    // cyclictest ends the block with an empty line.
    s.push('\n');
    s
}

/// cyclictest's per-thread status line (`T: 0 ( 1234) P:95 I:1000 C: … Min: … Act: … Avg: … Max: …`).
#[allow(clippy::too_many_arguments)]
pub fn status_line(
    index: u32,
    tid: u32,
    prio: u32,
    interval_us: u64,
    cycles: u64,
    min: u64,
    act: u64,
    avg: u64,
    max: u64,
    nsecs: bool,
) -> String {
    if nsecs {
        format!("T:{index:2} ({tid:5}) P:{prio:2} I:{interval_us} C:{cycles:7} Min:{min:7} Act:{act:8} Avg:{avg:8} Max:{max:8}")
    } else {
        format!("T:{index:2} ({tid:5}) P:{prio:2} I:{interval_us} C:{cycles:7} Min:{min:7} Act:{act:5} Avg:{avg:5} Max:{max:8}")
    }
}

/// Each thread read becomes a thread of the imported record, which costs at least
/// [`thread_bytes`] whatever the file says of it (its buckets are charged with its histogram).
fn charge_threads(budget: &mut Budget, n: u64, total: u64, whence: &str) -> Result<(), CtError> {
    budget
        .charge(n, thread_bytes(), &format!("{total} threads {whence}"))
        .map_err(|e| CtError::Limit(e.to_string()))
}

/// Parse cyclictest's histogram text (as printed with `-h`/`-H`, with or without `-q`: status
/// lines and other chatter are skipped).
pub fn parse_histogram(text: &str) -> Result<CtResult, CtError> {
    parse_histogram_within(text, &mut Budget::for_text(text.len() as u64))
}

/// [`parse_histogram`] with an explicit memory budget: the dense per-thread bucket arrays are
/// sized from the largest bucket, which a short file can set anywhere.
pub fn parse_histogram_within(text: &str, budget: &mut Budget) -> Result<CtResult, CtError> {
    let mut rows: Vec<(usize, Vec<u64>)> = Vec::new();
    let mut r = CtResult::default();
    let mut totals: Option<Vec<u64>> = None;
    let mut mins: Option<Vec<u64>> = None;
    let mut avgs: Option<Vec<u64>> = None;
    let mut maxs: Option<Vec<u64>> = None;
    let mut ovs: Option<Vec<u64>> = None;
    let mut cycles: Vec<(u32, Vec<u64>, u64)> = Vec::new();
    let mut saw_header = false;
    let nums = |line: usize, s: &str| -> Result<Vec<u64>, CtError> {
        s.split_whitespace()
            .map(|w| {
                w.parse::<u64>().map_err(|_| CtError::Text {
                    line,
                    msg: format!("expected a number, found '{w}'"),
                })
            })
            .collect()
    };
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let l = raw.trim_end();
        if l.starts_with("# /dev/cpu_dma_latency") {
            r.dma_latency_line = true;
        } else if l == "# Histogram" {
            saw_header = true;
        } else if let Some(v) = l.strip_prefix("# Total:") {
            totals = Some(nums(ln, v)?);
        } else if let Some(v) = l.strip_prefix("# Min Latencies:") {
            mins = Some(nums(ln, v)?);
        } else if let Some(v) = l.strip_prefix("# Avg Latencies:") {
            avgs = Some(nums(ln, v)?);
        } else if let Some(v) = l.strip_prefix("# Max Latencies:") {
            maxs = Some(nums(ln, v)?);
        } else if let Some(v) = l.strip_prefix("# Histogram Overflows:") {
            ovs = Some(nums(ln, v)?);
        } else if let Some(v) = l.strip_prefix("# Thread ") {
            let (idx, rest) = v.split_once(':').ok_or(CtError::Text {
                line: ln,
                msg: "expected '# Thread N:'".into(),
            })?;
            let idx: u32 = idx.trim().parse().map_err(|_| CtError::Text {
                line: ln,
                msg: format!("bad thread number '{idx}'"),
            })?;
            let (list, others) = match rest.split_once('#') {
                Some((a, b)) => {
                    let o = b.trim().trim_end_matches("others").trim();
                    let o: u64 = o.parse().map_err(|_| CtError::Text {
                        line: ln,
                        msg: format!("bad 'others' count '{o}'"),
                    })?;
                    (a, o)
                }
                None => (rest, 0),
            };
            cycles.push((idx, nums(ln, list)?, others));
        } else if saw_header && l.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            let v = nums(ln, l)?;
            if v.len() < 2 {
                return Err(CtError::Text {
                    line: ln,
                    msg: "histogram row needs a bucket and at least one count".into(),
                });
            }
            if v[0] > MAX_BUCKET_US {
                return Err(CtError::Text {
                    line: ln,
                    msg: format!("bucket {} out of range (0..={MAX_BUCKET_US} us)", v[0]),
                });
            }
            rows.push((v[0] as usize, v[1..].to_vec()));
        }
    }
    let (Some(totals), Some(mins), Some(maxs)) = (totals, mins, maxs) else {
        return Err(CtError::NotCyclictest(
            "missing '# Total:', '# Min Latencies:' or '# Max Latencies:' footer".into(),
        ));
    };
    let n = mins.len();
    if n == 0 {
        return Err(CtError::NotCyclictest("no threads in the footer".into()));
    }
    // -H adds an all-threads column to the rows, Total, Max and Overflows.
    r.with_total_column = totals.len() == n + 1;
    if !r.with_total_column && totals.len() != n {
        return Err(CtError::NotCyclictest(format!(
            "'# Total:' has {} values for {n} threads",
            totals.len()
        )));
    }
    charge_threads(budget, n as u64, n as u64, "in the footer")?;
    let size = rows.iter().map(|(b, _)| b + 1).max().unwrap_or(0);
    budget
        .take(
            (n as u64).saturating_mul(size as u64),
            LINEAR_CELL_BYTES,
            &format!(
                "a histogram of {n} threads × {size} buckets (bucket {} is the highest row)",
                size.saturating_sub(1)
            ),
        )
        .map_err(|e| CtError::Limit(e.to_string()))?;
    r.hist_size = Some(size as u32);
    let avgs = avgs.unwrap_or_else(|| vec![0; n]);
    let ovs = ovs.unwrap_or_else(|| vec![0; n]);
    for t in 0..n {
        let mut counts = vec![0u64; size];
        for (b, v) in &rows {
            counts[*b] = v.get(t).copied().ok_or(CtError::NotCyclictest(format!(
                "histogram row {b} has fewer columns than threads"
            )))?;
        }
        let (oc, oo) = cycles
            .iter()
            .find(|(i, _, _)| *i as usize == t)
            .map(|(_, c, o)| (c.clone(), *o))
            .unwrap_or_default();
        let sum = checked_sum(counts.iter().copied(), &format!("thread {t} histogram"))
            .map_err(CtError::Limit)?;
        if sum != totals[t] {
            return Err(CtError::NotCyclictest(format!(
                "thread {t}: histogram rows sum to {sum}, '# Total:' says {}",
                totals[t]
            )));
        }
        r.threads.push(CtThread {
            index: t as u32,
            tid: None,
            cpu: None,
            cycles: totals[t]
                .checked_add(ovs.get(t).copied().unwrap_or(0))
                .ok_or_else(|| {
                    CtError::Limit(format!(
                        "thread {t}: '# Total:' plus '# Histogram Overflows:' exceeds 2^64-1"
                    ))
                })?,
            min_us: mins[t],
            avg_us: avgs.get(t).copied().unwrap_or(0) as f64,
            max_us: maxs.get(t).copied().unwrap_or(0),
            counts,
            overflows: ovs.get(t).copied().unwrap_or(0),
            overflow_cycles: oc,
            overflow_others: oo,
        });
    }
    Ok(r)
}

/// What kind of cyclictest text this is: the `-h/-H` histogram, the `-v` per-sample lines, or
/// only the `-q` summary lines (`T: 0 (…) … Min: … Avg: … Max: …`, no distribution).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextKind {
    Histogram,
    Verbose,
    SummaryOnly,
    Unknown,
}

fn verbose_line(l: &str) -> Option<(u64, u64, i64)> {
    let mut it = l.split(':').map(str::trim);
    let (t, c, v) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() {
        return None;
    }
    Some((t.parse().ok()?, c.parse().ok()?, v.parse().ok()?))
}

/// Which cyclictest text `text` is (see [`TextKind`]).
pub fn text_kind(text: &str) -> TextKind {
    let mut summary = false;
    for l in text.lines() {
        let l = l.trim();
        if l == "# Histogram" || l.starts_with("# Total:") {
            return TextKind::Histogram;
        }
        if verbose_line(l).is_some() {
            return TextKind::Verbose;
        }
        if summary_line(l).is_some() {
            summary = true;
        }
    }
    if summary {
        TextKind::SummaryOnly
    } else {
        TextKind::Unknown
    }
}

/// One thread's status line, `T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld Avg:%5ld Max:%8ld`
/// (rt-tests 2.x; `-q` prints it once at the end, otherwise it is redrawn in place with `\r` or a
/// cursor-up escape).
fn summary_line(l: &str) -> Option<Result<StatusLine, String>> {
    // Cursor movement (`ESC [ n A`) and carriage returns come before the line when redrawn.
    let l = l
        .rsplit('\x1b')
        .next()?
        .trim_start_matches(|c: char| c == '[' || c.is_ascii_digit());
    let l = l.trim_start_matches('A').trim();
    let rest = l.strip_prefix("T:")?;
    let (idx, rest) = rest.split_once('(')?;
    let (tid, rest) = rest.split_once(')')?;
    let mut kv = std::collections::HashMap::new();
    // "P:90 I:1000 C:    100 Min:     25 …": a key ends with ':', its value is the next word.
    let mut key: Option<&str> = None;
    for w in rest.split_whitespace() {
        match (key.take(), w.split_once(':')) {
            (_, Some((k, v))) if !v.is_empty() => {
                kv.insert(k, v);
            }
            (_, Some((k, _))) => key = Some(k),
            (Some(k), None) => {
                kv.insert(k, w);
            }
            (None, None) => return None,
        }
    }
    // Without its keys this is not a status line; with them, a bad value is named.
    if !["P", "I", "C", "Min", "Avg", "Max"]
        .iter()
        .all(|k| kv.contains_key(k))
    {
        return None;
    }
    let num = |k: &str, max: u64| -> Result<u64, String> {
        let v = kv.get(k).copied().unwrap_or("");
        match v.parse::<u64>() {
            Ok(n) if n <= max => Ok(n),
            _ => Err(format!("{k}: '{v}' is not a number in 0..={max}")),
        }
    };
    let field = |k: &str, v: &str| -> Result<u32, String> {
        v.trim()
            .parse::<u32>()
            .map_err(|_| format!("{k}: '{}' is not a number in 0..={}", v.trim(), u32::MAX))
    };
    Some((|| {
        let avg = kv.get("Avg").copied().unwrap_or("");
        Ok(StatusLine {
            thread: field("T", idx)?,
            tid: field("tid", tid)?,
            // SCHED_FIFO/RR priorities are 1..=99; 0 is SCHED_OTHER.
            priority: num("P", 99)? as u32,
            interval_us: num("I", u64::MAX)?,
            cycles: num("C", u64::MAX)?,
            min_us: num("Min", u64::MAX)?,
            avg_us: avg
                .parse::<f64>()
                .ok()
                .filter(|a| a.is_finite() && *a >= 0.0)
                .ok_or_else(|| format!("Avg: '{avg}' is not a non-negative number"))?,
            max_us: num("Max", u64::MAX)?,
        })
    })())
}

/// The fields of one status line (µs).
struct StatusLine {
    thread: u32,
    tid: u32,
    priority: u32,
    interval_us: u64,
    cycles: u64,
    min_us: u64,
    avg_us: f64,
    max_us: u64,
}

/// Parse cyclictest's status lines alone (`-q`, or the screen output redrawn in place): per
/// thread the last line's cycles, min, average and max, µs. No distribution: `hist_size` stays
/// None and every thread's `counts` is empty.
pub fn parse_summary(text: &str) -> Result<CtResult, CtError> {
    parse_summary_within(text, &mut Budget::for_text(text.len() as u64))
}

/// [`parse_summary`] with an explicit memory budget: each thread becomes a thread of the record
/// ([`thread_bytes`]), however short its line.
pub fn parse_summary_within(text: &str, budget: &mut Budget) -> Result<CtResult, CtError> {
    let mut threads: std::collections::BTreeMap<u32, CtThread> = Default::default();
    let mut prio = None;
    let mut interval = None;
    for (n, l) in text.split(['\n', '\r']).enumerate() {
        let Some(line) = summary_line(l) else {
            continue;
        };
        let StatusLine {
            thread: idx,
            tid,
            priority: p,
            interval_us: i,
            cycles: c,
            min_us: min,
            avg_us: avg,
            max_us: max,
        } = line.map_err(|msg| CtError::Text { line: n + 1, msg })?;
        if idx as usize > threads.len() + 1024 {
            return Err(CtError::Text {
                line: n + 1,
                msg: format!("thread index {idx} out of range"),
            });
        }
        prio.get_or_insert(p);
        interval.get_or_insert(i);
        let t = CtThread {
            index: idx,
            tid: Some(tid),
            cpu: None,
            cycles: c,
            min_us: min,
            avg_us: avg,
            max_us: max,
            ..Default::default()
        };
        // Redrawn screens repeat each thread: the last line holds the final values.
        if !threads.contains_key(&idx) {
            charge_threads(budget, 1, threads.len() as u64 + 1, "of the status lines")?;
        }
        threads.insert(idx, t);
    }
    if threads.is_empty() {
        return Err(CtError::NotCyclictest(
            "no `T: n (tid) P:… I:… C:… Min:… Avg:… Max:…` status line".into(),
        ));
    }
    Ok(CtResult {
        threads: threads.into_values().collect(),
        dma_latency_line: text.contains("/dev/cpu_dma_latency set to"),
        cmdline: None,
        summary_priority: prio,
        summary_interval_us: interval,
        ..Default::default()
    })
}

/// Parse cyclictest's verbose output (`-v`): one `thread: cycle: latency` line per sample
/// (`%8d:%8lu:%8ld`, µs), with the `Thread N using cpu C.` lines giving each thread's CPU. Every
/// sample is there, so the histogram (1 µs buckets up to the largest latency), min, max and
/// average are exact.
pub fn parse_verbose(text: &str) -> Result<CtResult, CtError> {
    parse_verbose_within(text, &mut Budget::for_text(text.len() as u64))
}

/// [`parse_verbose`] with an explicit memory budget (the dense buckets go up to the largest
/// latency, which one line can set anywhere).
pub fn parse_verbose_within(text: &str, budget: &mut Budget) -> Result<CtResult, CtError> {
    use std::collections::BTreeMap;
    // Per thread: latency µs → count (sparse while reading), and its CPU when said.
    let mut per: BTreeMap<u32, BTreeMap<u64, u64>> = BTreeMap::new();
    let mut cpus: BTreeMap<u32, i64> = BTreeMap::new();
    let mut r = CtResult::default();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.starts_with("# /dev/cpu_dma_latency") {
            r.dma_latency_line = true;
            continue;
        }
        if let Some(rest) = l.strip_prefix("Thread ") {
            if let Some((t, c)) = rest.split_once(" using cpu ") {
                if let Ok(t) = t.trim().parse::<u32>() {
                    let c = c.trim_end_matches('.');
                    let c = c
                        .parse::<i64>()
                        .ok()
                        .filter(|c| (-1..=i64::from(u32::MAX)).contains(c))
                        .ok_or_else(|| CtError::Text {
                            line: i + 1,
                            msg: format!("cpu '{c}' is not a CPU number (-1..={})", u32::MAX),
                        })?;
                    cpus.insert(t, c);
                }
            }
            continue;
        }
        let Some((t, _cycle, v)) = verbose_line(l) else {
            continue;
        };
        let line = i + 1;
        if t > 4095 {
            return Err(CtError::Text {
                line,
                msg: format!("thread {t} out of range (0..=4095)"),
            });
        }
        if v < 0 || v as u64 > MAX_BUCKET_US {
            return Err(CtError::Text {
                line,
                msg: format!("latency {v} us out of range (0..={MAX_BUCKET_US})"),
            });
        }
        let slot = per
            .entry(t as u32)
            .or_default()
            .entry(v as u64)
            .or_insert(0);
        *slot += 1;
    }
    if per.is_empty() {
        return Err(CtError::NotCyclictest(
            "no 'thread: cycle: latency' lines (cyclictest -v output)".into(),
        ));
    }
    let size = per
        .values()
        .filter_map(|m| m.keys().next_back())
        .max()
        .map_or(1, |&m| m + 1);
    let n = per.len() as u64;
    charge_threads(budget, n, n, "of the 'thread: cycle: latency' lines")?;
    budget
        .take(
            n.saturating_mul(size),
            LINEAR_CELL_BYTES,
            &format!(
                "a histogram of {n} threads × {size} buckets (the largest latency is {} us)",
                size - 1
            ),
        )
        .map_err(|e| CtError::Limit(e.to_string()))?;
    r.hist_size = Some(size as u32);
    for (t, m) in per {
        let mut counts = vec![0u64; size as usize];
        let (mut cycles, mut sum) = (0u64, 0u128);
        for (&v, &c) in &m {
            counts[v as usize] = c;
            cycles += c;
            sum += v as u128 * c as u128;
        }
        r.threads.push(CtThread {
            index: t,
            tid: None,
            cpu: cpus.get(&t).copied(),
            cycles,
            min_us: m.keys().next().copied().unwrap_or(0),
            avg_us: if cycles > 0 {
                sum as f64 / cycles as f64
            } else {
                0.0
            },
            max_us: m.keys().next_back().copied().unwrap_or(0),
            counts,
            ..Default::default()
        });
    }
    Ok(r)
}

/// rt-tests' JSON layout (as `cyclictest --json=FILE` writes it).
pub fn write_json(r: &CtResult) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let mut s = String::from("{\n  \"file_version\": 1,\n");
    let _ = writeln!(
        s,
        "  \"cmdline:\": {},",
        q(r.cmdline.as_deref().unwrap_or(""))
    );
    let _ = writeln!(
        s,
        "  \"rt_test_version:\": {},",
        q(r.version.as_deref().unwrap_or(""))
    );
    let _ = writeln!(
        s,
        "  \"start_time\": {},",
        q(r.start_time.as_deref().unwrap_or(""))
    );
    let _ = writeln!(
        s,
        "  \"end_time\": {},",
        q(r.end_time.as_deref().unwrap_or(""))
    );
    let _ = writeln!(s, "  \"return_code\": {},", r.return_code.unwrap_or(0));
    s.push_str("  \"sysinfo\": {\n");
    for (i, (k, v)) in r.sysinfo.iter().enumerate() {
        let val = if k == "realtime" { v.clone() } else { q(v) };
        let comma = if i + 1 < r.sysinfo.len() { "," } else { "" };
        let _ = writeln!(s, "    {}: {val}{comma}", q(k));
    }
    s.push_str("  },\n");
    let _ = writeln!(s, "  \"num_threads\": {},", r.threads.len());
    s.push_str("  \"resolution_in_ns\": 0,\n  \"thread\": {\n");
    for (i, t) in r.threads.iter().enumerate() {
        let _ = writeln!(s, "    \"{}\": {{", t.index);
        let nz: Vec<(usize, u64)> = t
            .counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(b, &c)| (b, c))
            .collect();
        if nz.is_empty() {
            s.push_str("      \"histogram\": {      },\n");
        } else {
            s.push_str("      \"histogram\": {\n");
            for (j, (b, c)) in nz.iter().enumerate() {
                let comma = if j + 1 < nz.len() { "," } else { "" };
                let _ = writeln!(s, "        \"{b}\": {c}{comma}");
            }
            s.push_str("      },\n");
        }
        let _ = writeln!(s, "      \"cycles\": {},", t.cycles);
        let _ = writeln!(s, "      \"min\": {},", t.min_us);
        let _ = writeln!(s, "      \"max\": {},", t.max_us);
        let _ = writeln!(s, "      \"avg\": {:.2},", t.avg_us);
        let _ = writeln!(s, "      \"cpu\": {},", t.cpu.unwrap_or(-1));
        s.push_str("      \"node\": 0\n");
        let comma = if i + 1 < r.threads.len() { "," } else { "" };
        let _ = writeln!(s, "    }}{comma}");
    }
    s.push_str("  }\n}\n");
    s
}

pub fn parse_json(text: &str) -> Result<CtResult, CtError> {
    parse_json_within(text, &mut Budget::for_text(text.len() as u64))
}

/// [`parse_json`] with an explicit memory budget: every thread's dense bucket array is as long
/// as the largest bucket of any thread, which one short entry can set anywhere.
pub fn parse_json_within(text: &str, budget: &mut Budget) -> Result<CtResult, CtError> {
    // serde_json's Value takes a few times the text.
    budget
        .take(text.len() as u64, 8, "the JSON document")
        .map_err(|e| CtError::Limit(e.to_string()))?;
    rtscope_model::json_keys::reject_duplicate_keys(text).map_err(CtError::Json)?;
    let v: Value = serde_json::from_str(text).map_err(|e| CtError::Json(e.to_string()))?;
    let obj = v
        .as_object()
        .ok_or_else(|| CtError::NotCyclictest("top level is not an object".into()))?;
    let threads = obj
        .get("thread")
        .and_then(Value::as_object)
        .ok_or_else(|| CtError::NotCyclictest("no \"thread\" object".into()))?;
    let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
    let mut r = CtResult {
        cmdline: s("cmdline:").or_else(|| s("cmdline")),
        version: s("rt_test_version:").or_else(|| s("rt_test_version")),
        start_time: s("start_time"),
        end_time: s("end_time"),
        return_code: obj.get("return_code").and_then(Value::as_i64),
        ..Default::default()
    };
    if let Some(si) = obj.get("sysinfo").and_then(Value::as_object) {
        for (k, v) in si {
            let val = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            r.sysinfo.push((k.clone(), val));
        }
    }
    // The largest bucket first: the dense arrays of every thread are sized from it, and must fit
    // before any is allocated.
    let mut max_bucket = 0usize;
    for (k, t) in threads {
        if let Some(h) = t.get("histogram").and_then(Value::as_object) {
            for b in h.keys() {
                let b: u64 = b.parse().map_err(|_| {
                    CtError::Json(format!(
                        "thread {k}: histogram bucket '{b}' is not a number"
                    ))
                })?;
                if b > MAX_BUCKET_US {
                    return Err(CtError::Json(format!(
                        "thread {k}: histogram bucket {b} out of range (0..={MAX_BUCKET_US} us)"
                    )));
                }
                max_bucket = max_bucket.max(b as usize + 1);
            }
        }
    }
    let n_threads = threads.len() as u64;
    charge_threads(budget, n_threads, n_threads, "of the \"thread\" object")?;
    budget
        .take(
            n_threads.saturating_mul(max_bucket as u64),
            LINEAR_CELL_BYTES,
            &format!(
                "a histogram of {n_threads} threads × {max_bucket} buckets (bucket {} is the highest)",
                max_bucket.saturating_sub(1)
            ),
        )
        .map_err(|e| CtError::Limit(e.to_string()))?;
    for (k, t) in threads {
        let index: u32 = k
            .parse()
            .map_err(|_| CtError::Json(format!("thread key '{k}' is not a number")))?;
        let num = |f: &str| -> Result<f64, CtError> {
            t.get(f)
                .and_then(Value::as_f64)
                .ok_or_else(|| CtError::Json(format!("thread {k}: missing number \"{f}\"")))
        };
        let mut counts = vec![0u64; max_bucket];
        if let Some(h) = t.get("histogram").and_then(Value::as_object) {
            for (b, c) in h {
                // Checked in the first pass: a number below max_bucket.
                let b: usize = b.parse().unwrap_or(0);
                let c = c.as_u64().ok_or_else(|| {
                    CtError::Json(format!("thread {k}: bucket {b} count is not a number"))
                })?;
                counts[b] = c;
            }
        }
        checked_sum(counts.iter().copied(), &format!("thread {k} histogram"))
            .map_err(CtError::Limit)?;
        let (min, max, avg) = (num("min")?, num("max")?, num("avg")?);
        for (f, v) in [("min", min), ("max", max), ("avg", avg)] {
            if v < 0.0 {
                return Err(CtError::Json(format!(
                    "thread {k}: {f}: negative value {v}"
                )));
            }
        }
        // A count: a whole number a u64 holds (1e300 is not a number of cycles).
        let cycles = match t.get("cycles") {
            Some(c) => c.as_u64().ok_or_else(|| {
                CtError::Json(format!(
                    "thread {k}: cycles: must be an integer 0..={}, got {c}",
                    u64::MAX
                ))
            })?,
            None => {
                return Err(CtError::Json(format!(
                    "thread {k}: missing number \"cycles\""
                )))
            }
        };
        let cpu = match t.get("cpu") {
            None | Some(Value::Null) => None,
            Some(c) => Some(
                c.as_i64()
                    .filter(|&c| (-1..=i64::from(u32::MAX)).contains(&c))
                    .ok_or_else(|| {
                        CtError::Json(format!(
                            "thread {k}: cpu: must be an integer -1..={}, got {c}",
                            u32::MAX
                        ))
                    })?,
            ),
        };
        r.threads.push(CtThread {
            index,
            tid: None,
            cpu,
            cycles,
            min_us: min as u64,
            avg_us: avg,
            max_us: max as u64,
            counts,
            ..Default::default()
        });
    }
    r.threads.sort_by_key(|t| t.index);
    for t in &mut r.threads {
        // Checked above: the sum fits.
        let inhist: u64 = t.counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
        if max_bucket > 0 {
            t.overflows = t.cycles.saturating_sub(inhist);
        }
    }
    r.hist_size = (max_bucket > 0).then_some(max_bucket as u32);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real rt-tests 2.40 `-v` output (fixtures/README.md): 50 samples of thread 0 on CPU 0 and
    /// 33 of thread 1 on CPU 1. Expected values counted from the file with awk: thread 0 min 19,
    /// max 45, sum 1666 (avg 33.32); thread 1 min 14, max 60, sum 1111 (avg 33.67).
    #[test]
    fn parses_real_cyclictest_verbose_output() {
        let text = include_str!("../tests/fixtures/cyclictest-v-l50.txt");
        assert_eq!(text_kind(text), TextKind::Verbose);
        let r = parse_verbose(text).unwrap();
        assert_eq!(r.hist_size, Some(61));
        assert!(r.dma_latency_line);
        let t0 = &r.threads[0];
        assert_eq!((t0.index, t0.cpu, t0.cycles), (0, Some(0), 50));
        assert_eq!((t0.min_us, t0.max_us), (19, 45));
        assert!((t0.avg_us - 33.32).abs() < 1e-9);
        assert_eq!(t0.counts.iter().sum::<u64>(), 50);
        let t1 = &r.threads[1];
        assert_eq!((t1.index, t1.cpu, t1.cycles), (1, Some(1), 33));
        assert_eq!((t1.min_us, t1.max_us), (14, 60));
        assert!((t1.avg_us - 1111.0 / 33.0).abs() < 1e-9);
        assert_eq!(t1.counts[60], 1);
    }

    #[test]
    fn status_lines_are_read_from_q_and_from_the_redrawn_screen() {
        let q = include_str!("../tests/fixtures/cyclictest-q.txt");
        let r = parse_summary(q).unwrap();
        assert_eq!(r.threads.len(), 2);
        let t1 = &r.threads[1];
        assert_eq!(
            (t1.index, t1.tid, t1.cycles, t1.min_us, t1.avg_us, t1.max_us),
            (1, Some(16876), 74, 13, 24.0, 52)
        );
        assert_eq!(
            (r.summary_priority, r.summary_interval_us),
            (Some(90), Some(1000))
        );
        assert!(r.hist_size.is_none() && r.dma_latency_line);
        // The screen redraws each thread's line after a cursor-up escape: the last one counts.
        let screen = "policy: fifo: loadavg: 0.1 0.1 0.1 1/80 1\n\nT: 0 ( 7) P:80 I:1000 C:      1 Min:1000000 Act:    0 Avg:    0 Max:       0\n\x1b[2AT: 0 ( 7) P:80 I:1000 C:    999 Min:      5 Act:    9 Avg:    8 Max:     70\n";
        assert_eq!(text_kind(screen), TextKind::SummaryOnly);
        let r = parse_summary(screen).unwrap();
        assert_eq!(r.threads.len(), 1);
        assert_eq!((r.threads[0].cycles, r.threads[0].max_us), (999, 70));
        assert!(parse_summary("hello\n").is_err());
    }

    #[test]
    fn summary_lines_alone_are_recognised_and_verbose_claims_are_bounded() {
        let q = include_str!("../tests/fixtures/cyclictest-q.txt");
        assert_eq!(text_kind(q), TextKind::SummaryOnly);
        assert_eq!(text_kind(REAL), TextKind::Histogram);
        // One line claims a latency of 4e9 us: the dense buckets would take 32 GB.
        let e = parse_verbose("       0:       0:  4000000000\n").unwrap_err();
        assert!(e.to_string().contains("MiB of memory"), "{e}");
        let e = parse_verbose("       0:       0:  -5\n").unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
    }

    const REAL: &str = include_str!("../tests/fixtures/cyclictest-h20-H.txt");
    const REAL_JSON: &str = include_str!("../tests/fixtures/cyclictest-h20-H.json");

    #[test]
    fn parses_real_cyclictest_text_and_round_trips() {
        let r = parse_histogram(REAL).unwrap();
        assert_eq!(r.threads.len(), 2);
        assert!(r.with_total_column);
        assert_eq!(r.hist_size, Some(20));
        assert_eq!(r.threads[1].counts[19], 9);
        assert_eq!(r.threads[0].max_us, 569);
        assert_eq!(r.threads[1].overflows, 1967);
        assert_eq!(r.threads[0].overflow_others, 1980);
        assert!(r.dma_latency_line);
        // Writing it back gives cyclictest's bytes exactly.
        assert_eq!(write_histogram(&r), REAL);
    }

    #[test]
    fn parses_real_cyclictest_json() {
        let r = parse_json(REAL_JSON).unwrap();
        assert_eq!(r.threads.len(), 2);
        assert_eq!(r.threads[1].counts[18], 4);
        assert_eq!(r.threads[1].cycles, 1981);
        assert_eq!(r.threads[1].overflows, 1981 - 14);
        assert_eq!(r.threads[0].avg_us, 45.83);
        assert!(r.cmdline.unwrap().starts_with("cyclictest"));
        let again = parse_json(&write_json(&parse_json(REAL_JSON).unwrap())).unwrap();
        assert_eq!(again.threads, parse_json(REAL_JSON).unwrap().threads);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse_histogram("hello").is_err());
        assert!(parse_histogram("# Histogram\n000000 x\n").is_err());
        assert!(parse_histogram(
            "# Histogram\n# Total: 1\n# Min Latencies: 1\n# Max Latencies: 1\n"
        )
        .is_err());
        assert!(parse_json("{").is_err());
        assert!(parse_json("{\"thread\":{\"0\":{\"min\":1}}}").is_err());
        assert!(parse_json("[]").is_err());
    }

    #[test]
    fn status_line_matches_cyclictest() {
        assert_eq!(
            status_line(0, 13662, 95, 1000, 984, 14, 27, 41, 4837, false),
            "T: 0 (13662) P:95 I:1000 C:    984 Min:     14 Act:   27 Avg:   41 Max:    4837"
        );
    }
}
