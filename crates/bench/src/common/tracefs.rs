//! A minimal private tracefs instance (its own ring buffer, so it neither disturbs nor is
//! disturbed by a system-wide trace) and a parser for the few events the benchmarks read.
//!
//! The text trace prints timestamps in µs (6 decimals), too coarse for µs-scale latencies. The
//! ns figures therefore come from event *fields* that carry CLOCK_MONOTONIC ns: hrtimer_start's
//! `expires` and hrtimer_expire_entry's `now` (the time hrtimer_interrupt read the clock). The
//! µs line timestamps are used only where no field has ns (sched_waking → sched_switch).

use super::reaper::{Reaper, Resource};
use super::{BenchError, Result};
use std::path::{Path, PathBuf};

pub const TRACEFS: &str = "/sys/kernel/tracing";

pub struct Instance {
    path: PathBuf,
    reaper_registered: bool,
}

impl Instance {
    /// Create `instances/<name>`, trace only `cpu`, with `buffer_kb` per CPU, and enable
    /// `events` ("group/event", optional filter). Tracing starts off: call [`Instance::on`].
    pub fn create(
        reaper: &Reaper,
        name: &str,
        cpu: u32,
        buffer_kb: u32,
        events: &[(&str, Option<&str>)],
    ) -> Result<Instance> {
        let root = Path::new(TRACEFS);
        if !root.join("instances").is_dir() {
            return Err(BenchError::Unavailable(format!(
                "tracefs is not mounted at {TRACEFS} (mount -t tracefs nodev {TRACEFS})"
            )));
        }
        let path = root.join("instances").join(name);
        std::fs::create_dir(&path).map_err(|e| {
            BenchError::io(format!("creating tracefs instance {}", path.display()), e)
        })?;
        reaper.register(&Resource::TracefsInstance(path.clone()));
        let inst = Instance {
            path,
            reaper_registered: true,
        };
        inst.write("tracing_on", "0")?;
        inst.write("tracing_cpumask", &cpumask_hex(cpu))?;
        inst.write("buffer_size_kb", &buffer_kb.to_string())?;
        for (ev, filter) in events {
            let dir = inst.path.join("events").join(ev);
            if !dir.is_dir() {
                return Err(BenchError::Unavailable(format!(
                    "trace event {ev} does not exist"
                )));
            }
            if let Some(f) = filter {
                std::fs::write(dir.join("filter"), f)
                    .map_err(|e| BenchError::io(format!("setting filter on {ev}"), e))?;
            }
            std::fs::write(dir.join("enable"), "1")
                .map_err(|e| BenchError::io(format!("enabling {ev}"), e))?;
        }
        Ok(inst)
    }

    fn write(&self, file: &str, v: &str) -> Result<()> {
        std::fs::write(self.path.join(file), v)
            .map_err(|e| BenchError::io(format!("writing {}/{file}", self.path.display()), e))
    }

    pub fn on(&self) -> Result<()> {
        self.write("trace", "")?; // clear
        self.write("tracing_on", "1")
    }

    pub fn off(&self) -> Result<()> {
        self.write("tracing_on", "0")
    }

    /// The whole buffer as text, and the number of events the ring buffer dropped.
    pub fn read(&self) -> Result<(String, u64)> {
        let text = std::fs::read_to_string(self.path.join("trace"))
            .map_err(|e| BenchError::io("reading the trace buffer", e))?;
        let mut lost = 0;
        if let Ok(d) = std::fs::read_dir(self.path.join("per_cpu")) {
            for e in d.flatten() {
                if let Ok(s) = std::fs::read_to_string(e.path().join("stats")) {
                    lost += parse_overrun(&s);
                }
            }
        }
        Ok((text, lost))
    }

    /// Free the instance now (also done on drop and, after SIGKILL, by the reaper).
    pub fn remove(mut self, reaper: &Reaper) {
        let _ = self.off();
        reaper.release(&Resource::TracefsInstance(self.path.clone()));
        self.reaper_registered = false;
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if self.reaper_registered {
            let _ = std::fs::write(self.path.join("tracing_on"), "0");
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}

fn cpumask_hex(cpu: u32) -> String {
    // tracing_cpumask is comma-separated 32-bit hex words, most significant first.
    let words = (cpu / 32 + 1) as usize;
    let mut v = vec![0u32; words];
    v[words - 1 - (cpu / 32) as usize] = 1 << (cpu % 32);
    v.iter()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_overrun(stats: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| {
            l.strip_prefix("overrun:")
                .or_else(|| l.strip_prefix("dropped events:"))
        })
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .sum()
}

/// One parsed line of the text trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Line<'a> {
    pub pid: u32,
    pub cpu: u32,
    /// Line timestamp, µs resolution, in ns.
    pub ts_ns: u64,
    pub event: &'a str,
    pub fields: &'a str,
}

impl<'a> Line<'a> {
    /// The value of `name=` in the fields (up to the next space).
    pub fn field(&self, name: &str) -> Option<&'a str> {
        let fields: &'a str = self.fields;
        let mut start = 0;
        while let Some(i) = fields[start..].find(name) {
            let at = start + i;
            let before_ok = at == 0 || fields.as_bytes()[at - 1] == b' ';
            let rest = &fields[at + name.len()..];
            if before_ok && rest.starts_with('=') {
                let v = &rest[1..];
                return Some(v.split(' ').next().unwrap_or(""));
            }
            start = at + name.len();
        }
        None
    }

    pub fn field_u64(&self, name: &str) -> Option<u64> {
        self.field(name).and_then(|v| v.parse().ok())
    }
}

/// Pairs a thread's `hrtimer_start` lines with the next `hrtimer_expire_entry` of the same
/// hrtimer: the expiry the thread asked for and the time its timer's handler ran.
#[derive(Default)]
pub struct Expiries<'a> {
    /// Armed by the thread, not yet expired: hrtimer address → requested expiry (ns).
    pending: std::collections::HashMap<&'a str, u64>,
}

impl<'a> Expiries<'a> {
    /// Take `l`: an `hrtimer_start` by `tid` for an expiry that `wanted` is remembered; the
    /// `hrtimer_expire_entry` of a remembered timer gives `Some((expires, now))`.
    pub fn line(
        &mut self,
        l: &Line<'a>,
        tid: u32,
        wanted: impl Fn(u64) -> bool,
    ) -> Option<(u64, u64)> {
        match l.event {
            "hrtimer_start" if l.pid == tid => {
                if let (Some(p), Some(e)) = (l.field("hrtimer"), l.field_u64("expires")) {
                    if wanted(e) {
                        self.pending.insert(p, e);
                    }
                }
                None
            }
            "hrtimer_expire_entry" => {
                let (p, now) = (l.field("hrtimer")?, l.field_u64("now")?);
                self.pending.remove(p).map(|e| (e, now))
            }
            _ => None,
        }
    }
}

/// Parse `   comm-123   [001] d.h2.  4567.123456: event_name: fields…`. Comments and lines of
/// other shapes give None.
pub fn parse_line(l: &str) -> Option<Line<'_>> {
    if l.starts_with('#') {
        return None;
    }
    let open = l.find(" [")?;
    let close = open + l[open..].find(']')?;
    let cpu: u32 = l[open + 2..close].trim().parse().ok()?;
    let head = l[..open].trim_end();
    let dash = head.rfind('-')?;
    let pid: u32 = head[dash + 1..].parse().ok()?;
    let rest = &l[close + 1..];
    // After the CPU come the irq/preempt flags (optional column), then "secs.usecs: ".
    let colon = rest.find(": ")?;
    let ts_str = rest[..colon].split_whitespace().last()?;
    let (secs, usecs) = ts_str.split_once('.')?;
    let ts_ns = secs.parse::<u64>().ok()? * 1_000_000_000 + usecs.parse::<u64>().ok()? * 1000;
    let after = &rest[colon + 2..];
    let (event, fields) = match after.find(": ") {
        Some(i) => (&after[..i], &after[i + 2..]),
        None => (after.trim_end_matches(':'), ""),
    };
    Some(Line {
        pid,
        cpu,
        ts_ns,
        event,
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as kernel 6.18's tracefs prints them, `trace` file of an instance with
    // timer:hrtimer_start, timer:hrtimer_expire_entry, irq_vectors:local_timer_entry and
    // sched:sched_waking enabled.
    const FIXTURE: &str = include_str!("../../tests/fixtures/tracefs-lines.txt");

    #[test]
    fn parses_fixture_lines() {
        let lines: Vec<Line> = FIXTURE.lines().filter_map(parse_line).collect();
        assert!(lines.len() >= 4, "fixture has at least four event lines");
        let start = lines.iter().find(|l| l.event == "hrtimer_start").unwrap();
        assert!(start.field_u64("expires").is_some());
        assert!(start.field("hrtimer").is_some());
        let exp = lines
            .iter()
            .find(|l| l.event == "hrtimer_expire_entry")
            .unwrap();
        assert!(exp.field_u64("now").is_some());
        assert!(lines.iter().any(|l| l.event == "local_timer_entry"));
    }

    #[test]
    fn hand_written_line() {
        let l = parse_line(
            "          <idle>-0       [001] d.h2.   123.456789: hrtimer_expire_entry: hrtimer=00000000deadbeef function=hrtimer_wakeup now=123456789012",
        )
        .unwrap();
        assert_eq!((l.pid, l.cpu, l.ts_ns), (0, 1, 123_456_789_000));
        assert_eq!(l.event, "hrtimer_expire_entry");
        assert_eq!(l.field("hrtimer"), Some("00000000deadbeef"));
        assert_eq!(l.field("function"), Some("hrtimer_wakeup"));
        assert_eq!(l.field_u64("now"), Some(123_456_789_012));
        assert_eq!(l.field("w"), None);
        // A comm containing '-' and spaces before the pid.
        let l = parse_line(" kworker/u4:1-ev-77 [000] ..... 5.000001: sched_waking: comm=x pid=9 prio=120 target_cpu=000").unwrap();
        assert_eq!((l.pid, l.cpu, l.ts_ns), (77, 0, 5_000_001_000));
        assert_eq!(l.field_u64("pid"), Some(9));
        assert!(parse_line("# tracer: nop").is_none());
    }

    #[test]
    fn cpumask() {
        assert_eq!(cpumask_hex(0), "00000001");
        assert_eq!(cpumask_hex(1), "00000002");
        assert_eq!(cpumask_hex(33), "00000002,00000000");
    }

    #[test]
    fn overrun_sum() {
        assert_eq!(
            parse_overrun("entries: 5\noverrun: 3\ncommit overrun: 0\ndropped events: 2\n"),
            5
        );
    }
}
