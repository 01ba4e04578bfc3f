//! The verbs that read the results store: `runs`, `show`, `compare`, `report`, `export`. They
//! never create or change a database; an unknown or ambiguous run id is bad input.
//!
//! Each is a [`Tool`] run by the one lifecycle with [`crate::tool::Begin::Offline`] (no
//! privilege, no leftovers to repair, no stop signals: they start nothing): built from its
//! query, which is checked then (bad input before any database is opened); its step reads the
//! store and makes the result; its outputs print or write it.

use crate::input::{bad, Field, VerbError};
use crate::outputs::{print, print_bytes, write_file, JsonDest};
use crate::tool::{run_tool, Flow, Tool, Work};
use rtscope_model::RunRecord;
use rtscope_report::stored as text;
use rtscope_store::{RunFilter, Store, StoreError};
use std::collections::BTreeSet;
use std::path::Path;

rtscope_model::request_fields! {
    /// The fields of the queries of the verbs that read the store, as their refusals name them
    /// (the database is the session's [`Field::Db`]).
    pub enum StoredField in "stored" {
        Policy = "policy" => POLICY,
        Campaign = "campaign" => CAMPAIGN,
        Format = "format" => FORMAT,
        Output = "output" => OUTPUT,
        Metric = "metric" => METRIC,
        FailAbovePct = "fail_above_pct" => FAIL_ABOVE_PCT,
    }
}

/// Open for a verb that stores (creating the database if needed).
pub fn open(db: Option<&str>) -> Result<Store, VerbError> {
    Ok(Store::open(db)?)
}

/// Open for a verb that only reads: never creates or changes anything.
pub fn open_read(db: Option<&str>) -> Result<Store, VerbError> {
    Ok(Store::open_read_only(db)?)
}

/// Runs by id or unique prefix, in the order given, decoded into one memory budget.
pub fn load(store: &mut Store, ids: &[String]) -> Result<Vec<RunRecord>, VerbError> {
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    Ok(store.get_runs(&ids)?)
}

/// `rtscope runs`' filters as given: the store's own filter, checked by [`runs`].
pub use rtscope_store::RunFilter as RunsQuery;

/// The stored runs that match, as a table or JSON.
pub fn runs(db: Option<&str>, q: RunsQuery, json: &JsonDest) -> Result<(), VerbError> {
    run_tool(Runs::new(db, q, json)?)
}

/// `rtscope runs` as a tool.
struct Runs<'a> {
    db: Option<&'a str>,
    q: RunsQuery,
    json: &'a JsonDest,
    /// The database's location, the runs found and (for the table) each run's state.
    found: Option<(String, Vec<rtscope_store::RunSummary>, Vec<String>)>,
}

impl<'a> Runs<'a> {
    fn new(db: Option<&'a str>, q: RunsQuery, json: &'a JsonDest) -> Result<Self, VerbError> {
        json.check()?;
        date(Field::Since, q.since.as_deref())?;
        date(Field::Until, q.until.as_deref())?;
        if let Some(p) = &q.policy {
            let names = rtscope_model::Policy::NAMES;
            if !names.contains(&p.as_str()) {
                return Err(bad!("{POLICY}: '{p}' is not one of {}", names.join(", ")));
            }
        }
        Ok(Runs {
            db,
            q,
            json,
            found: None,
        })
    }
}

impl Tool for Runs<'_> {
    type Output = ();

    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        // An empty database (nothing stored yet, or a run creating it at this moment) lists no
        // runs.
        let (mut store, location) = match Store::open_read_only(self.db) {
            Ok(store) => {
                let l = store.location().to_string();
                (Some(store), l)
            }
            Err(StoreError::Empty(location)) => (None, location),
            Err(e) => return Err(e.into()),
        };
        let runs = match store.as_mut() {
            Some(s) => s.list_runs(&self.q)?,
            None => Vec::new(),
        };
        let states = match self.json.0 {
            Some(_) => Vec::new(),
            None => runs.iter().map(|r| run_state(store.as_mut(), r)).collect(),
        };
        self.found = Some((location, runs, states));
        Ok(Flow::Done)
    }

    fn outputs(self, _: &Work, _: Option<RunRecord>) -> Result<(), VerbError> {
        let (location, runs, states) = self.found.unwrap_or_default();
        if self.json.0.is_some() {
            let doc = serde_json::to_string_pretty(&runs).map_err(VerbError::failed)?;
            return self.json.write(&doc);
        }
        if runs.is_empty() {
            eprintln!("no stored runs match (database: {location})");
            return Ok(());
        }
        let mut rows: Vec<[String; 12]> = vec![[
            "ID", "STARTED", "HOST", "KERNEL", "VERB", "STATE", "POLICY", "SCENARIO", "SAMPLES",
            "AVG_US", "MAX_US", "TAGS",
        ]
        .map(String::from)];
        for (r, state) in runs.iter().zip(states) {
            rows.push([
                r.id.clone(),
                r.started_at.clone(),
                r.hostname.clone(),
                r.kernel_release.clone(),
                r.verb.clone(),
                state,
                r.policy.clone(),
                r.scenario.clone(),
                r.samples.to_string(),
                text::us(r.avg_ns),
                text::us(r.max_ns.map(|v| v as f64)),
                r.tags
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(","),
            ]);
        }
        print(&text::table(&rows))
    }
}

/// The STATE column: an interim record says whether its run is still going or died after its
/// last checkpoint (its writer's pid and host are in the record).
fn run_state(store: Option<&mut Store>, r: &rtscope_store::RunSummary) -> String {
    if !r.state.starts_with("checkpoint") {
        return r.state.clone();
    }
    let writer = store
        .and_then(|s| s.get_run(&r.id).ok())
        .and_then(|rec| rec.checkpoint);
    rtscope_store::run_state(
        &r.state,
        writer.as_ref().map(|c| (c.hostname.as_str(), c.pid)),
    )
}

/// One stored run in full (text, or the whole record as JSON).
pub fn show(db: Option<&str>, run: &str, json: &JsonDest) -> Result<(), VerbError> {
    json.check()?;
    run_tool(Show {
        db,
        run,
        json,
        found: None,
    })
}

/// `rtscope show` as a tool.
struct Show<'a> {
    db: Option<&'a str>,
    run: &'a str,
    json: &'a JsonDest,
    /// The run and its state.
    found: Option<(RunRecord, String)>,
}

impl Tool for Show<'_> {
    type Output = ();

    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        let rec = open_read(self.db)?.get_run(self.run)?;
        let state = rtscope_store::run_state(
            &rtscope_store::stored_state(&rec),
            rec.checkpoint
                .as_ref()
                .filter(|_| rec.end_reason == rtscope_model::EndReason::Checkpoint)
                .map(|c| (c.hostname.as_str(), c.pid)),
        );
        self.found = Some((rec, state));
        Ok(Flow::Done)
    }

    fn outputs(self, _: &Work, _: Option<RunRecord>) -> Result<(), VerbError> {
        let Some((rec, state)) = self.found else {
            return Ok(());
        };
        if self.json.0.is_some() {
            return self.json.write(&rtscope_report::json::run_record(&rec));
        }
        print(&text::show(&rec, &state, &rec.tags))
    }
}

/// A stored run for other tools, in one of the formats of `rtscope_report::export::exporters`
/// (`json`: the record; `csv`: its histograms; …).
pub fn export(
    db: Option<&str>,
    run: &str,
    format: &str,
    output: Option<&Path>,
) -> Result<(), VerbError> {
    use rtscope_report::export::{exporter, exporters};
    let Some(e) = exporter(format) else {
        let names: Vec<&str> = exporters().iter().map(|e| e.name()).collect();
        return Err(bad!(
            "{FORMAT}: '{format}' is not one of {}",
            names.join(", ")
        ));
    };
    if let Some(p) = output {
        crate::input::output(&OUTPUT.to_string(), p)?;
    }
    run_tool(Export {
        db,
        run,
        exporter: e,
        output,
        out: None,
    })
}

/// `rtscope export` as a tool.
struct Export<'a> {
    db: Option<&'a str>,
    run: &'a str,
    exporter: Box<dyn rtscope_report::export::Exporter>,
    output: Option<&'a Path>,
    /// The exported bytes.
    out: Option<Vec<u8>>,
}

impl Tool for Export<'_> {
    type Output = ();

    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        use rtscope_report::export::{ExportError, ExportOptions};
        let rec = open_read(self.db)?.get_run(self.run)?;
        let opts = ExportOptions {
            generated_at: crate::record::rfc3339(std::time::SystemTime::now()),
        };
        let out = self.exporter.export(&rec, &opts).map_err(|err| match err {
            ExportError::NotApplicable { .. } => bad!("{FORMAT} {err}"),
        })?;
        self.out = Some(out);
        Ok(Flow::Done)
    }

    fn outputs(self, _: &Work, _: Option<RunRecord>) -> Result<(), VerbError> {
        let out = self.out.unwrap_or_default();
        match self.output {
            Some(p) => write_file(p, &out),
            None => print_bytes(&out),
        }
    }
}

/// `rtscope compare`'s choices as given.
pub struct CompareQuery<'a> {
    pub runs: &'a [String],
    pub baseline: Option<&'a str>,
    /// Percent: a regression beyond it on `metric` is reported.
    pub threshold: Option<f64>,
    pub metric: &'a str,
}

/// Side-by-side statistics and a verdict per pair against the baseline; `Some` names the
/// regressions beyond the threshold (significant at 99 %).
pub fn compare(
    db: Option<&str>,
    q: &CompareQuery,
    json: &JsonDest,
) -> Result<Option<String>, VerbError> {
    use rtscope_analysis::compare::Metric;
    json.check()?;
    let metric = Metric::parse(q.metric).ok_or_else(|| {
        bad!(
            "{METRIC}: '{}' is not one of avg, median, p99, p99.99, max",
            q.metric
        )
    })?;
    if let Some(t) = q.threshold {
        if !(0.0..=10_000.0).contains(&t) {
            return Err(bad!("{FAIL_ABOVE_PCT}: must be 0..=10000 percent, got {t}"));
        }
    }
    let mut ids = q.runs.to_vec();
    if let Some(b) = q.baseline {
        ids.retain(|x| x != b);
        ids.insert(0, b.to_string());
    }
    if ids.len() < 2 {
        return Err(bad!("compare: give at least two runs (got {})", ids.len()));
    }
    run_tool(Compare {
        db,
        ids,
        metric,
        threshold: q.threshold,
        json,
        out: None,
    })
}

/// `rtscope compare` as a tool: the runs read and compared in its step, the verdicts its output.
struct Compare<'a> {
    db: Option<&'a str>,
    /// The baseline first.
    ids: Vec<String>,
    metric: rtscope_analysis::compare::Metric,
    threshold: Option<f64>,
    json: &'a JsonDest,
    out: Option<rtscope_report::compare::Out>,
}

impl Tool for Compare<'_> {
    /// The regressions beyond the threshold, if any.
    type Output = Option<String>;

    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        use rtscope_analysis::compare::{self as cmp, Options};
        use rtscope_report::compare::{Out, PairOut, RunOut, CAVEAT};
        let loaded = load(&mut open_read(self.db)?, &self.ids)?;
        // Latency distributions compare; other kinds of run have their own figures (`show`).
        let mut recs: Vec<(&RunRecord, &rtscope_model::Measurement)> = Vec::new();
        for r in &loaded {
            match r.measurement() {
                Some(m) => recs.push((r, m)),
                None => {
                    return Err(bad!(
                        "compare: run {} is a {} run, not a latency measurement (measure, run, cyclictest, import); `rtscope show {}` shows its result",
                        r.id,
                        r.kind.name(),
                        r.id
                    ))
                }
            }
        }
        let opts = Options::default();
        // Samples without a histogram: a run that kept only summary statistics.
        let has_distribution =
            |m: &rtscope_model::Measurement| m.histogram.count() > 0 || m.stats.samples == 0;
        // Runs of several machines (a fleet's campaign): each label says which host it is.
        let hosts: BTreeSet<&str> = recs
            .iter()
            .map(|(r, _)| r.system.hostname.as_str())
            .collect();
        let runs: Vec<RunOut> = recs
            .iter()
            .map(|(r, m)| RunOut {
                id: r.id.clone(),
                label: if hosts.len() > 1 {
                    format!("{} {}", r.system.hostname, label(r))
                } else {
                    label(r)
                },
                stats: if has_distribution(m) {
                    cmp::side(&m.histogram, &opts)
                } else {
                    cmp::side_from_stats(&m.stats)
                },
            })
            .collect();
        let (base, base_m) = recs[0];
        let notes = recs
            .iter()
            .filter(|(_, m)| !has_distribution(m))
            .map(|(r, _)| format!(
                "{}: no latency distribution stored (imported from cyclictest status lines): only samples, min, avg and max are shown; it takes part in no test",
                r.id
            ))
            .collect();
        let pairs: Vec<PairOut> = recs[1..]
            .iter()
            .filter(|(_, m)| has_distribution(base_m) && has_distribution(m))
            .map(|(c, m)| {
                let comparison = cmp::compare(&base_m.histogram, &m.histogram, &opts);
                let regression = self
                    .threshold
                    .and_then(|t| comparison.regression(self.metric, t));
                fn tail_of(
                    m: &rtscope_model::Measurement,
                ) -> Option<&rtscope_model::tail::TailFit> {
                    m.tail.as_ref().and_then(rtscope_analysis::tail::run_fit)
                }
                let tail_maxima = tail_of(base_m).zip(tail_of(m)).and_then(|(b, c)| {
                    rtscope_analysis::tail::compare_maxima(
                        b,
                        base_m.stats.samples,
                        c,
                        m.stats.samples,
                    )
                });
                PairOut {
                    baseline: base.id.clone(),
                    candidate: c.id.clone(),
                    comparison,
                    regression,
                    tail_maxima,
                }
            })
            .collect();
        self.out = Some(Out {
            baseline: base.id.clone(),
            runs,
            pairs,
            notes,
            caveat: CAVEAT,
        });
        Ok(Flow::Done)
    }

    fn outputs(self, _: &Work, _: Option<RunRecord>) -> Result<Option<String>, VerbError> {
        let Some(out) = self.out else {
            return Ok(None);
        };
        if self.json.0.is_some() {
            let doc = serde_json::to_string_pretty(&out).map_err(VerbError::failed)?;
            self.json.write(&doc)?;
        }
        if !self.json.to_stdout() {
            print(&rtscope_report::compare::render(&out))?;
        }
        let regressions: Vec<String> = out
            .pairs
            .iter()
            .filter_map(|p| {
                let r = p.regression.as_ref()?;
                Some(format!("{}: {r}", p.candidate))
            })
            .collect();
        Ok((!regressions.is_empty()).then(|| format!("regression: {}", regressions.join("; "))))
    }
}

/// A short label for a run: policy/scenario.
fn label(r: &RunRecord) -> String {
    let s = rtscope_store::Summary::of(r);
    format!("{}/{}", s.policy, s.scenario)
}

/// `rtscope report`'s choices as given.
pub struct ReportQuery<'a> {
    /// Run ids; none (and no campaign): the latest stored run.
    pub runs: &'a [String],
    pub campaign: Option<&'a str>,
    pub output: &'a Path,
    pub figures: Option<&'a Path>,
    pub title: Option<&'a str>,
}

/// One self-contained HTML report (inline SVG, no network), and optionally every figure as SVG
/// and PNG.
pub fn report(db: Option<&str>, q: &ReportQuery) -> Result<(), VerbError> {
    run_tool(Report { db, q, made: None })
}

/// `rtscope report` as a tool: the runs read and the report built in its step, the files
/// written as its outputs.
struct Report<'a> {
    db: Option<&'a str>,
    q: &'a ReportQuery<'a>,
    /// The number of runs, and the report.
    made: Option<(usize, rtscope_report::html::Report)>,
}

impl Tool for Report<'_> {
    type Output = ();

    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        use rtscope_report::html::{build, ReportOptions};
        let q = self.q;
        let mut store = open_read(self.db)?;
        // No ids and no campaign: the latest stored run, as a user expects.
        let ids: Vec<String> = if q.runs.is_empty() && q.campaign.is_none() {
            let latest = store.list_runs(&RunFilter {
                limit: Some(1),
                ..Default::default()
            })?;
            match latest.last() {
                Some(r) => vec![r.id.clone()],
                None => {
                    return Err(bad!(
                        "report: no stored runs in {} (give run ids, {CAMPAIGN} NAME or {})",
                        store.location(),
                        Field::Db
                    ))
                }
            }
        } else {
            q.runs.to_vec()
        };
        let mut runs = load(&mut store, &ids)?;
        if let Some(c) = q.campaign {
            let found = store.load_runs(&RunFilter {
                campaign: Some(c.to_string()),
                ..Default::default()
            })?;
            // A campaign report shows what the campaign measured: complete runs only (an
            // interrupted cell was measured again on resumption).
            let total = found.len();
            let found: Vec<_> = found
                .into_iter()
                .filter(rtscope_store::campaign::is_complete)
                .collect();
            if found.len() < total {
                eprintln!(
                    "report: {} interrupted/partial run(s) of campaign '{c}' left out",
                    total - found.len()
                );
            }
            if found.is_empty() {
                return Err(bad!(
                    "{CAMPAIGN}: no stored runs of campaign '{c}' (see `rtscope runs {CAMPAIGN} {c}`)"
                ));
            }
            runs.extend(found);
        }
        let title = q
            .title
            .map(String::from)
            .unwrap_or_else(|| match q.campaign {
                Some(c) => format!("rtscope campaign {c}"),
                None => "rtscope latency report".into(),
            });
        let opts = ReportOptions {
            title,
            generated_at: crate::record::rfc3339(std::time::SystemTime::now()),
            command: crate::record::cmdline().join(" "),
        };
        self.made = Some((runs.len(), build(&runs, &opts)));
        Ok(Flow::Done)
    }

    fn outputs(self, _: &Work, _: Option<RunRecord>) -> Result<(), VerbError> {
        let (q, Some((runs, report))) = (self.q, self.made) else {
            return Ok(());
        };
        write_file(q.output, report.html.as_bytes())?;
        eprintln!(
            "report: {} ({} runs, {} figures)",
            q.output.display(),
            runs,
            report.figures.len()
        );
        if let Some(dir) = q.figures {
            let files = rtscope_report::html::write_figures(&report.figures, dir)
                .map_err(VerbError::failed)?;
            eprintln!("figures: {} files in {}", files.len(), dir.display());
        }
        Ok(())
    }
}

/// A date/time filter: an RFC 3339 prefix whose every field is in its calendar range.
fn date(field: Field, s: Option<&str>) -> Result<(), VerbError> {
    match s {
        Some(d) if !valid_rfc3339_prefix(d) => Err(VerbError::Field {
            field,
            msg: format!(
                "'{d}' is not an RFC 3339 date/time prefix (e.g. 2026-11-01 or 2026-11-01T10:00:00Z)"
            ),
        }),
        _ => Ok(()),
    }
}

/// `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, then optionally `THH`, `:MM`, `:SS`, fraction and zone:
/// every field present is in its calendar range (no month 13, no 31 April, no hour 25).
fn valid_rfc3339_prefix(d: &str) -> bool {
    let b = d.as_bytes();
    if !(b.len() >= 4
        && b.iter()
            .all(|c| c.is_ascii_digit() || b"-:TZ.+".contains(c))
        && b[..4].iter().all(u8::is_ascii_digit))
    {
        return false;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        d.get(from..to)
            .filter(|s| s.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|s| s.parse().ok())
    };
    let year = num(0, 4).unwrap_or(0);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if b.len() > 4 {
        let Some(month) = (b[4] == b'-').then(|| num(5, 7)).flatten() else {
            return false;
        };
        if !(1..=12).contains(&month) {
            return false;
        }
        if b.len() > 7 {
            let Some(day) = (b[7] == b'-').then(|| num(8, 10)).flatten() else {
                return false;
            };
            let days = match month {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            if !(1..=days).contains(&day) {
                return false;
            }
            if b.len() > 10 {
                if b[10] != b'T' {
                    return false;
                }
                let Some(h) = num(11, 13) else { return false };
                if h > 23 {
                    return false;
                }
                for (sep, lim) in [(13usize, 59u32), (16, 60)] {
                    if b.len() > sep && b[sep] == b':' {
                        match num(sep + 1, sep + 3) {
                            Some(v) if v <= lim => {}
                            _ => return false,
                        }
                    }
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(r: Result<impl std::fmt::Debug, VerbError>) -> String {
        match r {
            Err(e) if e.is_bad_input() => e.to_string(),
            other => panic!("not bad input: {other:?}"),
        }
    }

    /// Filters and choices are checked before a database is opened (`--db` names none here).
    #[test]
    fn queries_are_checked_before_the_store_is_opened() {
        let none = Some("/nonexistent/none.db");
        let q = |f: fn(&mut RunsQuery)| {
            let mut q = RunsQuery::default();
            f(&mut q);
            refused(runs(none, q, &JsonDest(None)))
        };
        assert!(q(|q| q.since = Some("2027-13-45".into())).starts_with("⟨since⟩: '2027-13-45'"));
        assert!(q(|q| q.until = Some("2026-04-31".into())).starts_with("⟨until⟩: '2026-04-31'"));
        assert_eq!(
            q(|q| q.policy = Some("batch".into())),
            format!("{POLICY}: 'batch' is not one of fifo, rr, other, deadline")
        );
        let ids = ["a".to_string(), "b".to_string()];
        let c = |metric, threshold, runs: &[String]| {
            let q = CompareQuery {
                runs,
                baseline: None,
                threshold,
                metric,
            };
            refused(compare(none, &q, &JsonDest(None)))
        };
        assert_eq!(
            c("p42", None, &ids),
            format!("{METRIC}: 'p42' is not one of avg, median, p99, p99.99, max")
        );
        assert_eq!(
            c("p99", Some(-1.0), &ids),
            format!("{FAIL_ABOVE_PCT}: must be 0..=10000 percent, got -1")
        );
        assert_eq!(
            c("p99", None, &ids[..1]),
            "compare: give at least two runs (got 1)"
        );
        assert!(c("p99", None, &ids).starts_with("no results database at /nonexistent/none.db"));
        assert!(refused(show(none, "x", &JsonDest(None))).starts_with("no results database"));
    }

    #[test]
    fn dates_are_checked_field_by_field() {
        for d in [
            "2026",
            "2026-11",
            "2026-11-01",
            "2024-02-29",
            "2026-11-01T10",
            "2026-11-01T10:00:00Z",
            "2026-11-01T23:59:60.5+01:00",
        ] {
            assert!(valid_rfc3339_prefix(d), "{d}");
        }
        for d in [
            "2027-13-45",
            "2026-00",
            "2026-04-31",
            "2025-02-29",
            "2026-11-01T25",
            "2026-11-01T10:61",
            "2026/11/01",
            "20",
            "2026-1",
            "2026-11-01X10",
        ] {
            assert!(!valid_rfc3339_prefix(d), "{d}");
        }
        assert!(date(Field::Since, None).is_ok());
        assert!(date(Field::Until, Some("2026-04-31"))
            .unwrap_err()
            .to_string()
            .starts_with("⟨until⟩: '2026-04-31' is not an RFC 3339"));
    }
}
