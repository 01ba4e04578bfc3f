//! A flight-recorder trace file (`--trace-file-mode flight`) holds only kept windows (an
//! explained sample with its look-back) and periodic snapshots of every CPU. Each kept sample is
//! attributed on the events of the kept stretch that holds its whole window [E, E + latency] —
//! never across a stretch the file does not have, where silence would read as "no guest
//! activity" — and the view says plainly what was not kept.

use crate::analyze::{Field, TRACE_FILE_MODE};
use rtscope_analysis::attribution::{self, AttributionOptions, AttributionResult};
use rtscope_model::record::RawSample;
use rtscope_trace::rtt::{KeptKind, RttFile};
use std::collections::BTreeMap;

/// 86 400 000: digits in groups of three.
fn grouped(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// "1 s", "250 ms", "40 us".
fn span(ns: u64) -> String {
    if ns >= 1_000_000_000 && ns.is_multiple_of(1_000_000_000) {
        format!("{} s", ns / 1_000_000_000)
    } else if ns >= 1_000_000 {
        format!("{} ms", ns as f64 / 1e6)
    } else {
        format!("{} us", ns as f64 / 1e3)
    }
}

/// What a flight-recorder file holds, and the attribution of its kept samples.
pub struct FlightView {
    /// Per CPU, its kept windows [from, to] (ns, inclusive), merged, sorted.
    windows_kept: BTreeMap<u32, Vec<(u64, u64)>>,
    /// The snapshots (every CPU), merged, sorted: kept once, not once per CPU (a file can list
    /// many CPUs and many snapshots).
    snaps: Vec<(u64, u64)>,
    /// Every CPU the file names (META, samples, windows).
    cpus: Vec<u32>,
    windows: u64,
    snapshots: u64,
    /// Windows by their first reason's kind: "worst-n", "worst-of-cause", ...
    by_reason: BTreeMap<String, u64>,
    /// Kept samples whose window is wholly inside one kept stretch, grouped by it.
    groups: Vec<((u32, u64, u64), Vec<RawSample>)>,
    pub not_attributable: u64,
    /// How the caller names the analysis's fields (the recording's setting that keeps
    /// everything, in the text and the JSON).
    field_names: fn(Field) -> &'static str,
}

/// How to record every event: the recording's setting, named by `field_names`.
pub fn keep_everything(field_names: fn(Field) -> &'static str) -> String {
    let hint = format!("use {TRACE_FILE_MODE} all to keep everything");
    rtscope_model::field::render(&hint, Field::ALL, field_names)
}

/// Sorted, merged intervals (touching ones joined).
fn merged(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut m: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match m.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => m.push((a, b)),
        }
    }
    m
}

/// The interval of merged list `v` that holds or touches `[a, b]` on the left/right: the one
/// containing `p`, if any.
fn holding(v: &[(u64, u64)], p: u64) -> Option<(u64, u64)> {
    let i = v.partition_point(|&(a, _)| a <= p);
    (i > 0 && v[i - 1].1 >= p).then(|| v[i - 1])
}

/// The stretch of the union of two merged lists that contains `p`: grown left and right while
/// an interval of either list overlaps or touches it.
fn union_stretch(w: &[(u64, u64)], s: &[(u64, u64)], p: u64) -> Option<(u64, u64)> {
    let (mut a, mut b) = match (holding(w, p), holding(s, p)) {
        (None, None) => return None,
        (Some(x), None) | (None, Some(x)) => x,
        (Some(x), Some(y)) => (x.0.min(y.0), x.1.max(y.1)),
    };
    loop {
        let (a0, b0) = (a, b);
        for v in [w, s] {
            // Left: the last interval starting before a that reaches a - 1.
            let i = v.partition_point(|&(x, _)| x < a);
            if i > 0 && v[i - 1].1.saturating_add(1) >= a {
                a = a.min(v[i - 1].0);
            }
            // Right: the last interval starting at or before b + 1.
            let j = v.partition_point(|&(x, _)| x <= b.saturating_add(1));
            if j > 0 && v[j - 1].1 > b {
                b = v[j - 1].1;
            }
        }
        if (a, b) == (a0, b0) {
            return Some((a, b));
        }
    }
}

/// ns covered by merged list `w`, merged list `s`, or both (each counted once).
fn span_ns(v: &[(u64, u64)]) -> u64 {
    v.iter().fold(0u64, |t, (a, b)| t.saturating_add(b - a + 1))
}

/// `s_len` is `span_ns(s)`, summed once by the caller: the snapshots are the same for every CPU,
/// and summing them per CPU costs CPUs × snapshots (10^9 steps for a crafted META).
fn union_ns(w: &[(u64, u64)], s: &[(u64, u64)], s_len: u64) -> u64 {
    let mut overlap = 0u64;
    for &(a, b) in w {
        let from = s.partition_point(|&(_, y)| y < a);
        for &(x, y) in s[from..].iter().take_while(|&&(x, _)| x <= b) {
            overlap = overlap.saturating_add(b.min(y) - a.max(x) + 1);
        }
    }
    span_ns(w).saturating_add(s_len).saturating_sub(overlap)
}

impl FlightView {
    pub fn of(f: &RttFile, field_names: fn(Field) -> &'static str) -> FlightView {
        let mut cpus: Vec<u32> = f.meta.cpus.clone();
        cpus.extend(f.samples.iter().map(|s| s.cpu));
        cpus.extend(f.windows.iter().filter_map(|w| w.cpu));
        cpus.sort_unstable();
        cpus.dedup();
        let mut raw: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
        let mut snaps = Vec::new();
        let (mut windows, mut snapshots) = (0u64, 0u64);
        let mut by_reason: BTreeMap<String, u64> = BTreeMap::new();
        for w in &f.windows {
            match (w.kind, w.cpu) {
                (KeptKind::Window, Some(c)) => {
                    windows += 1;
                    raw.entry(c).or_default().push((w.from_ns, w.to_ns));
                    let kind = match w.reasons.first().map(String::as_str) {
                        Some("worst-n") => "worst-n".to_string(),
                        Some(r) if r.starts_with("worst-of:") => "worst-of-cause".to_string(),
                        Some(r) => r.split(':').next().unwrap_or(r).to_string(),
                        None => "unspecified".to_string(),
                    };
                    *by_reason.entry(kind).or_default() += 1;
                }
                _ => {
                    snapshots += 1;
                    snaps.push((w.from_ns, w.to_ns));
                }
            }
        }
        let snaps = merged(snaps);
        let windows_kept: BTreeMap<u32, Vec<(u64, u64)>> =
            raw.into_iter().map(|(c, v)| (c, merged(v))).collect();
        let mut groups: BTreeMap<(u32, u64, u64), Vec<RawSample>> = BTreeMap::new();
        let mut not_attributable = 0u64;
        for s in &f.samples {
            let end = s.expected_ns.saturating_add(s.latency_ns);
            let w = windows_kept.get(&s.cpu).map_or(&[][..], |v| v.as_slice());
            let stretch = union_stretch(w, &snaps, s.expected_ns).filter(|&(_, b)| end <= b);
            match stretch {
                Some((a, b)) => groups.entry((s.cpu, a, b)).or_default().push(*s),
                None => not_attributable += 1,
            }
        }
        FlightView {
            windows_kept,
            snaps,
            cpus,
            windows,
            snapshots,
            by_reason,
            groups: groups.into_iter().collect(),
            not_attributable,
            field_names,
        }
    }

    /// Attribute each group's samples on the events of its stretch only, then summarise them
    /// together (no whole-run steal cross-check: the file does not hold the whole run).
    pub fn attribute(&self, f: &RttFile, opts: &AttributionOptions) -> AttributionResult {
        let samples: Vec<RawSample> = self
            .groups
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        let (idx, keep) = attribution::worst_samples(&samples, opts.top_n);
        let mut all = Vec::with_capacity(samples.len());
        let mut base = 0usize;
        for ((_, from, to), v) in &self.groups {
            // Events of every CPU in the stretch: wakings of this CPU's tasks issued elsewhere
            // carry the other CPU's number.
            let lo = f.events.partition_point(|e| e.ts_ns < *from);
            let hi = f.events.partition_point(|e| e.ts_ns <= *to);
            let (got, _) =
                attribution::attribute_samples(&f.events[lo..hi], v, &f.names, opts, &|k| {
                    keep.contains(&(base + k))
                });
            all.extend(got);
            base += v.len();
        }
        let mut r = attribution::summarize(&samples, all, &idx, Vec::new(), opts);
        r.warnings.push(format!(
            "flight recorder: only the kept samples are attributed ({} of {} in the run); the run's summary (histogram, every sample's cause) is in its stored record",
            samples.len(),
            if f.meta.samples_in_run > 0 { grouped(f.meta.samples_in_run) } else { "?".into() }
        ));
        r
    }

    fn snapshot_len(&self, f: &RttFile) -> u64 {
        if f.meta.snapshot_len_ns > 0 {
            return f.meta.snapshot_len_ns;
        }
        f.windows
            .iter()
            .filter(|w| w.kind == KeptKind::Snapshot)
            .map(|w| w.to_ns - w.from_ns + 1)
            .max()
            .unwrap_or(0)
    }

    /// The one-line account of what the file holds and what it does not.
    pub fn line(&self, f: &RttFile) -> String {
        let reasons: Vec<String> = self
            .by_reason
            .iter()
            .map(|(k, n)| format!("{} {k}", grouped(*n)))
            .collect();
        let snaps = match self.snapshots {
            0 => "no snapshots".to_string(),
            1 => format!("1 snapshot of {}", span(self.snapshot_len(f))),
            n => format!("{} snapshots of {}", grouped(n), span(self.snapshot_len(f))),
        };
        let samples = if f.meta.samples_in_run > 0 {
            format!(
                "{} samples in the run, {} kept",
                grouped(f.meta.samples_in_run),
                grouped(f.samples.len() as u64)
            )
        } else {
            format!("{} samples kept", grouped(f.samples.len() as u64))
        };
        format!(
            "flight recorder: {} window{}{} and {snaps}; {samples}; events outside these windows and snapshots were not recorded ({})",
            grouped(self.windows),
            if self.windows == 1 { "" } else { "s" },
            if reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", reasons.join(", "))
            },
            keep_everything(self.field_names)
        )
    }

    pub fn json(&self, f: &RttFile) -> serde_json::Value {
        // Every CPU with something kept: its windows and the snapshots.
        let snaps_ns = span_ns(&self.snaps);
        let kept_ns: BTreeMap<u32, u64> = self
            .cpus
            .iter()
            .filter(|c| !self.snaps.is_empty() || self.windows_kept.contains_key(c))
            .map(|c| {
                let w = self.windows_kept.get(c).map_or(&[][..], |v| v.as_slice());
                (*c, union_ns(w, &self.snaps, snaps_ns))
            })
            .collect();
        serde_json::json!({
            "windows": self.windows,
            "windows_by_reason": self.by_reason,
            "snapshots": self.snapshots,
            "snapshot_len_ns": self.snapshot_len(f),
            "snapshot_every_ns": f.meta.snapshot_every_ns,
            "samples_in_run": f.meta.samples_in_run,
            "samples_kept": f.samples.len(),
            "samples_attributed": f.samples.len() as u64 - self.not_attributable,
            "samples_not_attributable": self.not_attributable,
            "kept_ns_per_cpu": kept_ns,
            "not_recorded": format!(
                "events outside the kept windows and snapshots ({})",
                keep_everything(self.field_names)
            ),
            "kept": f.windows,
        })
    }
}

#[cfg(test)]
mod tests {
    /// The hint names the recording's setting by the caller's names, never by a flag (the
    /// cli's: crates/cli/tests/unit_fields.rs).
    #[test]
    fn the_keep_everything_hint_names_a_field() {
        let hint = super::keep_everything(super::Field::key);
        assert_eq!(hint, "use trace_file_mode all to keep everything");
    }
}
