//! What a run shows while it goes, drawn from its figures so far
//! ([`rtscope_model::live::LiveSnapshot`]). Three views: a progress display on a terminal
//! (indicatif), one plain line a minute when stderr is not a terminal (logs, systemd), and
//! nothing with `-q`.

use rtscope_model::live::{LiveSnapshot, NoView, View};
use std::io::{IsTerminal, Write};
use std::time::Duration;

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn fmt_dur(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// The per-thread lines and the run line, shared by both visible views.
pub fn describe(s: &LiveSnapshot) -> (Vec<String>, String) {
    let lines = s
        .threads
        .iter()
        .map(|t| {
            format!(
                "CPU {:>3}  samples {:>11}  max {:>9.1} us  p99.9 {:>8} us  avg {:>7.1} us  overruns {}",
                t.cpu,
                t.samples,
                us(t.max_ns),
                t.p999_ns.map_or("-".into(), |p| format!("{:.1}", us(p))),
                us(t.avg_ns),
                t.overruns
            )
        })
        .collect();
    let mut run = String::new();
    if let Some((c, share)) = &s.dominant_tail_cause {
        run.push_str(&format!("tail: {c} {:.0}%", share * 100.0));
    }
    if let Some(l) = s.events_lost {
        if !run.is_empty() {
            run.push_str("  ");
        }
        run.push_str(&format!("events lost {l}"));
    }
    if s.ring_dropped > 0 {
        run.push_str(&format!("  stream dropped {}", s.ring_dropped));
    }
    if let Some(r) = s.rss_kib {
        run.push_str(&format!("  RSS {:.1} MiB", r as f64 / 1024.0));
    }
    if s.checkpoints > 0 {
        run.push_str(&format!("  checkpoints {}", s.checkpoints));
    }
    (lines, run.trim_start().to_string())
}

/// A progress bar with elapsed/remaining and the per-CPU lines above it (indicatif).
pub struct TtyView {
    bar: indicatif::ProgressBar,
}

impl TtyView {
    pub fn new(total: Option<Duration>) -> TtyView {
        let bar = match total {
            Some(t) => {
                let b = indicatif::ProgressBar::new(t.as_secs().max(1));
                b.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{msg}\n[{elapsed_precise}] [{bar:40}] {percent:>3}%  {eta} left",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                    .progress_chars("#>-"),
                );
                b
            }
            None => {
                let b = indicatif::ProgressBar::new_spinner();
                b.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{msg}\n{spinner} [{elapsed_precise}] until Ctrl-C",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
                );
                b
            }
        };
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
        TtyView { bar }
    }
}

impl View for TtyView {
    fn update(&mut self, s: &LiveSnapshot) {
        let (mut lines, run) = describe(s);
        if !run.is_empty() {
            lines.push(run);
        }
        self.bar.set_message(lines.join("\n"));
        self.bar.set_position(s.elapsed.as_secs());
        self.bar.tick();
    }
    fn finish(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// One line a minute on stderr (and one at the end), for logs.
pub struct PlainView {
    every: Duration,
    next: Duration,
}

impl PlainView {
    pub fn new(every: Duration) -> PlainView {
        PlainView { every, next: every }
    }
}

impl View for PlainView {
    fn update_due(&self, elapsed: Duration) -> bool {
        elapsed >= self.next
    }
    fn update(&mut self, s: &LiveSnapshot) {
        if s.elapsed < self.next {
            return;
        }
        while self.next <= s.elapsed {
            self.next += self.every;
        }
        let (lines, run) = describe(s);
        let total = s
            .total
            .map(|t| format!("/{}", fmt_dur(t)))
            .unwrap_or_default();
        let cpus: Vec<String> = s
            .threads
            .iter()
            .map(|t| {
                format!(
                    "CPU{} n={} max={:.1}us p99.9={}",
                    t.cpu,
                    t.samples,
                    us(t.max_ns),
                    t.p999_ns.map_or("-".into(), |p| format!("{:.1}us", us(p)))
                )
            })
            .collect();
        let _ = lines;
        let mut e = std::io::stderr().lock();
        let _ = writeln!(
            e,
            "rtscope: {}{total}  {}  {run}",
            fmt_dur(s.elapsed),
            cpus.join("  ")
        );
    }
}

/// The view for a run: nothing with `quiet`, a progress display on a terminal, else a line a
/// minute.
pub fn default_view(quiet: bool, total: Option<Duration>) -> Box<dyn View> {
    if quiet {
        Box::new(NoView)
    } else if std::io::stderr().is_terminal() {
        Box::new(TtyView::new(total))
    } else {
        Box::new(PlainView::new(Duration::from_secs(60)))
    }
}

/// The summary printed on SIGUSR2 (the run goes on).
pub fn snapshot_text(s: &LiveSnapshot) -> String {
    let (lines, run) = describe(s);
    let mut out = format!("rtscope: snapshot at {}\n", fmt_dur(s.elapsed));
    for l in lines {
        out.push_str("  ");
        out.push_str(&l);
        out.push('\n');
    }
    if !run.is_empty() {
        out.push_str("  ");
        out.push_str(&run);
        out.push('\n');
    }
    // Where the memory is: a long run's check that nothing grows.
    let mut mem = Vec::new();
    if let Some((a, b)) = s.analysis_heap_bytes {
        let mib = |x: u64| x as f64 / (1024.0 * 1024.0);
        mem.push(format!(
            "analysis {:.1} MiB (attribution {:.1}, bound {:.1})",
            mib(a + b),
            mib(a),
            mib(b)
        ));
    }
    if let Some(p) = s.pending_samples {
        mem.push(format!("{p} samples pending"));
    }
    if let Some((q, h)) = s.trace_backlog {
        mem.push(format!("trace backlog {q} batches + {h} events"));
    }
    if !mem.is_empty() {
        out.push_str(&format!("  memory: {}\n", mem.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::live::ThreadLive;

    #[test]
    fn plain_view_prints_once_a_minute() {
        let mut v = PlainView::new(Duration::from_secs(60));
        let mut s = LiveSnapshot {
            elapsed: Duration::from_secs(30),
            ..Default::default()
        };
        v.update(&s);
        assert_eq!(v.next, Duration::from_secs(60));
        s.elapsed = Duration::from_secs(61);
        v.update(&s);
        assert_eq!(v.next, Duration::from_secs(120));
        s.elapsed = Duration::from_secs(250);
        v.update(&s);
        assert_eq!(v.next, Duration::from_secs(300));
    }

    #[test]
    fn describe_names_every_figure() {
        let s = LiveSnapshot {
            threads: vec![ThreadLive {
                cpu: 1,
                samples: 10,
                max_ns: 12_300,
                p999_ns: Some(9_000),
                ..Default::default()
            }],
            dominant_tail_cause: Some(("no_guest_activity".into(), 0.62)),
            events_lost: Some(0),
            rss_kib: Some(31 * 1024),
            ..Default::default()
        };
        let (lines, run) = describe(&s);
        assert!(lines[0].contains("max      12.3 us") && lines[0].contains("p99.9      9.0"));
        assert_eq!(
            run,
            "tail: no_guest_activity 62%  events lost 0  RSS 31.0 MiB"
        );
    }
}
