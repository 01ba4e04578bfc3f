//! Campaign files: a matrix of measurements (policies × loads × intervals × durations ×
//! repetitions, plus free tags) read from TOML. Errors point at the file, line and column.
//!
//! ```toml
//! name = "fifo-vs-deadline"
//! policies = ["fifo", "deadline"]
//! loads = ["idle", "cpu-cache", "io"]
//! intervals_us = [1000]
//! durations = ["2m"]
//! repetitions = 3
//! extra_args = ["--cpus", "0,1"]   # optional, passed to every `rtscope measure`
//! [tags]
//! kernel = "6.18-none"
//! ```
//!
//! Kernels as an axis (the kernel lab, docs/lab.md): `kernels = ["host", "trace:none",
//! "trace:full", "rt-trace"]` runs each cell on the host (`host`) or inside a lab kernel
//! (`NAME[:PREEMPT]`, PREEMPT one of none, voluntary, full) through `rtscope lab run`, with
//! `lab_args` (e.g. `["--icount", "--smp", "1"]`) passed to every lab run.
//!
//! Several files may fill one campaign (same `name`, SQLite store): each gives its cells a
//! `cell_prefix` (e.g. `"smp2-"`) when their ids would otherwise be the same, as they are for
//! two files that differ only in `lab_args` (the lab's `--smp`) or `extra_args`.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

pub const POLICIES: &[&str] = &rtscope_model::Policy::NAMES;
pub const LOADS: &[&str] = &rtscope_model::load::NAMES;

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{file}:{line}:{column}: {message}")]
pub struct CampaignError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Spanned<String>,
    policies: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    loads: Option<Spanned<Vec<Spanned<String>>>>,
    intervals_us: Spanned<Vec<Spanned<i64>>>,
    durations: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    repetitions: Option<Spanned<i64>>,
    #[serde(default)]
    extra_args: Vec<String>,
    #[serde(default)]
    kernels: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    lab_args: Vec<String>,
    #[serde(default)]
    cell_prefix: Option<Spanned<String>>,
    #[serde(default)]
    tags: BTreeMap<String, Spanned<String>>,
}

/// One entry of the kernels axis: the host, or a lab kernel with its boot-time preemption model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelAxis {
    Host,
    Lab {
        kernel: String,
        preempt: Option<String>,
    },
}

impl KernelAxis {
    /// `host`, `NAME`, `NAME:PREEMPT`.
    pub fn parse(s: &str) -> Result<KernelAxis, String> {
        if s == "host" {
            return Ok(KernelAxis::Host);
        }
        let (k, p) = match s.split_once(':') {
            Some((k, p)) => (k, Some(p)),
            None => (s, None),
        };
        if k.is_empty()
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(format!(
                "kernels: '{s}' is not host, NAME or NAME:PREEMPT (NAME: a preset or a kernel from `rtscope lab list`)"
            ));
        }
        if let Some(p) = p {
            if !["none", "voluntary", "full"].contains(&p) {
                return Err(format!(
                    "kernels: '{s}': the preemption model must be none, voluntary or full"
                ));
            }
        }
        Ok(KernelAxis::Lab {
            kernel: k.to_string(),
            preempt: p.map(String::from),
        })
    }

    /// The cell id's prefix: empty for the host (ids of campaigns without kernels unchanged).
    pub fn id_prefix(&self) -> String {
        match self {
            KernelAxis::Host => String::new(),
            KernelAxis::Lab { kernel, preempt } => match preempt {
                Some(p) => format!("{kernel}.{p}-"),
                None => format!("{kernel}-"),
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Campaign {
    pub name: String,
    pub policies: Vec<String>,
    pub loads: Vec<String>,
    pub intervals_us: Vec<u64>,
    /// As written (passed to `measure -D`), with the parsed seconds.
    pub durations: Vec<(String, f64)>,
    pub repetitions: u32,
    pub extra_args: Vec<String>,
    /// The kernels axis (`[Host]` when the file has none).
    pub kernels: Vec<KernelAxis>,
    /// Passed to every `rtscope lab run`.
    pub lab_args: Vec<String>,
    /// Put before every cell id (empty when the file has none): lets several files that differ
    /// only in their arguments fill one campaign.
    pub cell_prefix: String,
    pub tags: BTreeMap<String, String>,
}

/// One run of the matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Stable id, stored as tag `cell=`: `<policy>-<load>-i<us>-<duration>-r<rep>`.
    pub id: String,
    pub policy: String,
    pub load: String,
    pub interval_us: u64,
    pub duration: String,
    pub duration_s: f64,
    pub repetition: u32,
    pub kernel: KernelAxis,
}

/// `30s`, `2m`, `1h`, `1d`, or bare seconds.
/// A cell's duration in the one grammar (`rtscope_model::duration`), 1 ms ..= 30 days.
pub fn parse_duration_s(s: &str) -> Option<f64> {
    rtscope_model::duration::parse_secs_in(s, 0.001, MAX_DURATION_S).ok()
}

/// Most cells one campaign may have.
pub const MAX_CELLS: usize = 100_000;

/// Longest duration of one cell, s (30 days, as `-D` of every run verb).
pub const MAX_DURATION_S: f64 = 30.0 * 86400.0;

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl Campaign {
    pub fn parse(file: &str, text: &str) -> Result<Campaign, CampaignError> {
        let err_at = |span: std::ops::Range<usize>, message: String| {
            let (line, column) = line_col(text, span.start);
            CampaignError {
                file: file.to_string(),
                line,
                column,
                message,
            }
        };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            err_at(span, e.message().trim().replace('\n', "; "))
        })?;
        let name = raw.name.get_ref().trim().to_string();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(err_at(
                raw.name.span(),
                "name: must be non-empty and use only letters, digits, '-', '_', '.'".into(),
            ));
        }
        let nonempty = |span: std::ops::Range<usize>, len: usize, field: &str| {
            if len == 0 {
                Err(err_at(
                    span,
                    format!("{field}: must list at least one value"),
                ))
            } else {
                Ok(())
            }
        };
        nonempty(
            raw.policies.span(),
            raw.policies.get_ref().len(),
            "policies",
        )?;
        let mut policies = Vec::new();
        for p in raw.policies.get_ref() {
            if !POLICIES.contains(&p.get_ref().as_str()) {
                return Err(err_at(
                    p.span(),
                    format!(
                        "policies: unknown policy '{}' (accepted: {})",
                        p.get_ref(),
                        POLICIES.join(", ")
                    ),
                ));
            }
            policies.push(p.get_ref().clone());
        }
        let mut loads = Vec::new();
        match &raw.loads {
            None => loads.push("idle".to_string()),
            Some(ls) => {
                nonempty(ls.span(), ls.get_ref().len(), "loads")?;
                for l in ls.get_ref() {
                    for part in l.get_ref().split('+') {
                        if !LOADS.contains(&part) {
                            return Err(err_at(
                                l.span(),
                                format!(
                                    "loads: unknown load '{part}' (accepted: {}; combine with '+')",
                                    LOADS.join(", ")
                                ),
                            ));
                        }
                    }
                    loads.push(l.get_ref().clone());
                }
            }
        }
        nonempty(
            raw.intervals_us.span(),
            raw.intervals_us.get_ref().len(),
            "intervals_us",
        )?;
        let mut intervals_us = Vec::new();
        for i in raw.intervals_us.get_ref() {
            let v = *i.get_ref();
            if !(1..=10_000_000).contains(&v) {
                return Err(err_at(
                    i.span(),
                    format!("intervals_us: must be 1..=10000000 us, got {v}"),
                ));
            }
            intervals_us.push(v as u64);
        }
        nonempty(
            raw.durations.span(),
            raw.durations.get_ref().len(),
            "durations",
        )?;
        let mut durations = Vec::new();
        for d in raw.durations.get_ref() {
            let s = parse_duration_s(d.get_ref()).ok_or_else(|| {
                err_at(
                    d.span(),
                    format!(
                        "durations: '{}' is not a duration in 1ms..=30d (e.g. 30s, 2m, 1h, 1d)",
                        d.get_ref()
                    ),
                )
            })?;
            durations.push((d.get_ref().clone(), s));
        }
        let repetitions = match &raw.repetitions {
            None => 1,
            Some(r) => {
                let v = *r.get_ref();
                if !(1..=10_000).contains(&v) {
                    return Err(err_at(
                        r.span(),
                        format!("repetitions: must be 1..=10000, got {v}"),
                    ));
                }
                v as u32
            }
        };
        let mut kernels = Vec::new();
        match &raw.kernels {
            None => kernels.push(KernelAxis::Host),
            Some(ks) => {
                nonempty(ks.span(), ks.get_ref().len(), "kernels")?;
                for k in ks.get_ref() {
                    kernels.push(KernelAxis::parse(k.get_ref()).map_err(|m| err_at(k.span(), m))?);
                }
            }
        }
        let cell_prefix = match &raw.cell_prefix {
            None => String::new(),
            Some(p) => {
                let v = p.get_ref();
                if v.is_empty()
                    || !v
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                {
                    return Err(err_at(
                        p.span(),
                        "cell_prefix: must be non-empty and use only letters, digits, '-', '_', '.'"
                            .into(),
                    ));
                }
                v.clone()
            }
        };
        let mut tags = BTreeMap::new();
        for (k, v) in raw.tags {
            if k == "campaign" || k == "cell" {
                return Err(err_at(
                    v.span(),
                    format!("tags: '{k}' is set by rtscope itself"),
                ));
            }
            tags.insert(k, v.into_inner());
        }
        // The matrix is built in memory (and listed by --dry-run): a short file must not name
        // billions of cells.
        let cells = [
            kernels.len(),
            policies.len(),
            loads.len(),
            intervals_us.len(),
            durations.len(),
            repetitions as usize,
        ]
        .iter()
        .fold(1usize, |a, &n| a.saturating_mul(n));
        if cells > MAX_CELLS {
            return Err(err_at(
                0..0,
                format!(
                    "the matrix has {cells} cells (kernels × policies × loads × intervals_us × durations × repetitions); at most {MAX_CELLS}"
                ),
            ));
        }
        Ok(Campaign {
            name,
            policies,
            loads,
            intervals_us,
            durations,
            repetitions,
            extra_args: raw.extra_args,
            kernels,
            lab_args: raw.lab_args,
            cell_prefix,
            tags,
        })
    }

    /// Cells in execution order. Repetitions are the outer loop, so slow drift of the machine
    /// (thermal, host load) spreads over every configuration instead of biasing one.
    pub fn cells(&self) -> Vec<Cell> {
        let mut out = Vec::new();
        for rep in 1..=self.repetitions {
            for k in &self.kernels {
                for p in &self.policies {
                    for l in &self.loads {
                        for &i in &self.intervals_us {
                            for (d, ds) in &self.durations {
                                out.push(Cell {
                                    id: format!(
                                        "{}{}{p}-{l}-i{i}-{d}-r{rep}",
                                        self.cell_prefix,
                                        k.id_prefix()
                                    ),
                                    policy: p.clone(),
                                    load: l.clone(),
                                    interval_us: i,
                                    duration: d.clone(),
                                    duration_s: *ds,
                                    repetition: rep,
                                    kernel: k.clone(),
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// Whether a stored run counts for its campaign cell: complete, not interrupted.
pub fn is_complete(r: &rtscope_model::RunRecord) -> bool {
    !r.interrupted && r.end_reason == rtscope_model::EndReason::Completed
}

/// Cell ids of `campaign` already stored complete among `runs` (resumption skips these).
pub fn finished_cells(
    campaign: &str,
    runs: &[rtscope_model::RunRecord],
) -> std::collections::BTreeSet<String> {
    runs.iter()
        .filter(|r| is_complete(r))
        .map(|r| &r.tags)
        .filter(|t| t.get("campaign").map(String::as_str) == Some(campaign))
        .filter_map(|t| t.get("cell").cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"name = "fifo-vs-dl"
policies = ["fifo", "deadline"]
loads = ["idle", "cpu-cache", "io"]
intervals_us = [1000]
durations = ["2m"]
repetitions = 3
[tags]
kernel = "6.18-none"
"#;

    #[test]
    fn matrix_size_and_order() {
        let c = Campaign::parse("c.toml", GOOD).unwrap();
        let cells = c.cells();
        // 2 policies × 3 loads × 1 interval × 1 duration × 3 repetitions = 18
        assert_eq!(cells.len(), 18);
        assert_eq!(cells[0].id, "fifo-idle-i1000-2m-r1");
        assert_eq!(cells[5].id, "deadline-io-i1000-2m-r1");
        assert_eq!(cells[6].id, "fifo-idle-i1000-2m-r2");
        assert_eq!(cells[0].duration_s, 120.0);
        assert_eq!(c.tags["kernel"], "6.18-none");
    }

    #[test]
    fn kernels_axis() {
        let text = GOOD.replace(
            "repetitions = 3\n",
            "repetitions = 1\nkernels = [\"host\", \"trace:full\", \"rt-trace\"]\nlab_args = [\"--icount\", \"--smp\", \"1\"]\n",
        );
        let c = Campaign::parse("c.toml", &text).unwrap();
        let cells = c.cells();
        // 3 kernels × 2 policies × 3 loads = 18; the host's ids are those of a campaign
        // without kernels (stored runs keep counting after the axis is added).
        assert_eq!(cells.len(), 18);
        assert_eq!(cells[0].id, "fifo-idle-i1000-2m-r1");
        assert_eq!(cells[0].kernel, KernelAxis::Host);
        assert_eq!(cells[6].id, "trace.full-fifo-idle-i1000-2m-r1");
        assert_eq!(
            cells[6].kernel,
            KernelAxis::Lab {
                kernel: "trace".into(),
                preempt: Some("full".into())
            }
        );
        assert_eq!(cells[12].id, "rt-trace-fifo-idle-i1000-2m-r1");
        assert_eq!(c.lab_args, ["--icount", "--smp", "1"]);
        for (bad, needle) in [
            ("\"trace:lazy\"", "none, voluntary or full"),
            ("\"a b\"", "NAME:PREEMPT"),
        ] {
            let t = text.replace("\"rt-trace\"", bad);
            let e = Campaign::parse("c.toml", &t).unwrap_err();
            assert_eq!(e.line, 7, "{e}");
            assert!(e.message.contains(needle), "{e}");
        }
        let e = Campaign::parse(
            "c.toml",
            &text.replace("[\"host\", \"trace:full\", \"rt-trace\"]", "[]"),
        )
        .unwrap_err();
        assert!(e.message.contains("kernels: must list"), "{e}");
    }

    #[test]
    fn a_cell_prefix_goes_before_every_id() {
        let text = GOOD.replace(
            "repetitions = 3\n",
            "repetitions = 1\ncell_prefix = \"smp2-\"\n",
        );
        let c = Campaign::parse("c.toml", &text).unwrap();
        assert_eq!(c.cell_prefix, "smp2-");
        assert_eq!(c.cells()[0].id, "smp2-fifo-idle-i1000-2m-r1");
        assert_eq!(Campaign::parse("c.toml", GOOD).unwrap().cell_prefix, "");
        let e = Campaign::parse("c.toml", &text.replace("smp2-", "smp 2")).unwrap_err();
        assert_eq!(e.line, 7, "{e}");
        assert!(e.message.starts_with("cell_prefix: "), "{e}");
    }

    #[test]
    fn errors_have_line_and_column() {
        let bad = GOOD.replace("\"deadline\"", "\"edf\"");
        let e = Campaign::parse("c.toml", &bad).unwrap_err();
        // line 2 `policies = ["fifo", "edf"]`: the "edf" string starts at column 21.
        assert_eq!((e.line, e.column), (2, 21), "{e}");
        assert!(e.message.contains("unknown policy 'edf'"), "{e}");

        let e = Campaign::parse("c.toml", &GOOD.replace("2m", "2 minutes")).unwrap_err();
        assert_eq!(e.line, 5);
        assert!(e.message.contains("durations"));

        let e = Campaign::parse("c.toml", &format!("bogus = 1\n{GOOD}")).unwrap_err();
        assert!(e.message.contains("bogus"), "{e}");

        // Unterminated array: reported where the parser ran out, line 3 column 1.
        let e = Campaign::parse("c.toml", "name = \"x\"\npolicies = [\"fifo\"\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 1), "{e}");
        assert!(!e.to_string().contains('\n'));

        let e = Campaign::parse("c.toml", &GOOD.replace("[1000]", "[0]")).unwrap_err();
        assert_eq!((e.line, e.column), (4, 17));
        assert_eq!(
            e.to_string(),
            "c.toml:4:17: intervals_us: must be 1..=10000000 us, got 0"
        );
    }

    #[test]
    fn resumption_skips_only_complete_runs_of_this_campaign() {
        use crate::fixture::{record, Spec};
        let tagged = |id: &str, campaign: &str, cell: &str| {
            let mut s = Spec::new(id, 1);
            s.samples_per_cpu = 10;
            s.tags.insert("campaign".into(), campaign.into());
            s.tags.insert("cell".into(), cell.into());
            record(&s)
        };
        let mut interrupted = tagged("r3", "c", "fifo-io-i1000-2m-r1");
        interrupted.interrupted = true;
        interrupted.end_reason = rtscope_model::EndReason::Interrupted;
        let runs = vec![
            tagged("r1", "c", "fifo-idle-i1000-2m-r1"),
            tagged("r2", "other", "fifo-cpu-cache-i1000-2m-r1"),
            interrupted,
        ];
        let done = finished_cells("c", &runs);
        assert_eq!(
            done.into_iter().collect::<Vec<_>>(),
            ["fifo-idle-i1000-2m-r1"]
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_s("90"), Some(90.0));
        assert_eq!(parse_duration_s("1.5h"), Some(5400.0));
        assert_eq!(parse_duration_s("0s"), None);
        assert_eq!(parse_duration_s("m"), None);
    }
}
