//! Every format one stored run can be written in, behind one trait: `rtscope export --format`
//! lists and calls [`exporters`], and `rtscope run`'s directory writes its files through the
//! same exporters. A new format is one file in this crate and one line in [`exporters`].

use crate::html::ReportOptions;
use rtscope_model::{RunKind, RunRecord};

/// What a format may need besides the record. This crate reads no clock: the caller's time goes
/// into the HTML report's header.
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// RFC 3339; shown in the HTML report's header.
    pub generated_at: String,
}

rtscope_model::request_fields! {
    /// The measurement settings the formats' descriptions and refusals name (a bound figure
    /// needs a run measured with a bound): whoever shows them renders each token.
    pub enum Field in "export" {
        Bound = "bound" => BOUND,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The run holds nothing this format shows (a figure of data the run did not collect).
    #[error("{format}: {reason}")]
    NotApplicable {
        format: &'static str,
        reason: &'static str,
    },
}

/// One output format of a single run.
pub trait Exporter {
    /// The format's name (`rtscope export`'s choice).
    fn name(&self) -> &'static str;
    /// The file extension, without the dot.
    fn extension(&self) -> &'static str;
    /// One line for `--help`.
    fn description(&self) -> &'static str;
    fn export(&self, rec: &RunRecord, opts: &ExportOptions) -> Result<Vec<u8>, ExportError>;
}

/// Every format, in the order `--help` lists them.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(Json),
        Box::new(Csv),
        Box::new(CyclictestHistogram),
        Box::new(CyclictestJson),
        Box::new(Summary),
        Box::new(Html),
        Box::new(SvgFigure::HISTOGRAM),
        Box::new(SvgFigure::CCDF),
        Box::new(SvgFigure::ATTRIBUTION),
        Box::new(SvgFigure::WORST),
        Box::new(SvgFigure::BOUND),
        Box::new(SvgFigure::BOUND_SERIES),
    ]
}

/// The format called `name`.
pub fn exporter(name: &str) -> Option<Box<dyn Exporter>> {
    exporters().into_iter().find(|e| e.name() == name)
}

/// rtscope's JSON: the RunRecord (`docs/schema/run-record.schema.json`), newline-terminated.
pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn extension(&self) -> &'static str {
        "json"
    }
    fn description(&self) -> &'static str {
        "the RunRecord (docs/schema/run-record.schema.json)"
    }
    fn export(&self, rec: &RunRecord, _: &ExportOptions) -> Result<Vec<u8>, ExportError> {
        Ok((crate::json::run_record(rec) + "\n").into_bytes())
    }
}

/// One row per non-empty histogram bucket (`stored::histogram_csv`).
pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn extension(&self) -> &'static str {
        "csv"
    }
    fn description(&self) -> &'static str {
        "a measurement's histogram buckets (scope,cpu,latency_ns,count); pdlt's and sched-scale's tables"
    }
    fn export(&self, rec: &RunRecord, _: &ExportOptions) -> Result<Vec<u8>, ExportError> {
        match &rec.kind {
            RunKind::Measurement(m) => Ok(crate::stored::histogram_csv(m).into_bytes()),
            RunKind::Pdlt(r) => Ok(crate::bench::pdlt_csv(r).into_bytes()),
            RunKind::SchedScale(r) => Ok(crate::bench::sched_scale_csv(r).into_bytes()),
            _ => Err(ExportError::NotApplicable {
                format: "csv",
                reason: "this kind of run has no table (measurements, pdlt and sched-scale do)",
            }),
        }
    }
}

/// cyclictest's `-h` histogram text (what `rtscope import` reads back).
pub struct CyclictestHistogram;

impl Exporter for CyclictestHistogram {
    fn name(&self) -> &'static str {
        "cyclictest-hist"
    }
    fn extension(&self) -> &'static str {
        "txt"
    }
    fn description(&self) -> &'static str {
        "cyclictest's -h histogram text"
    }
    fn export(&self, rec: &RunRecord, _: &ExportOptions) -> Result<Vec<u8>, ExportError> {
        let hist_size = latency(rec, self.name())?.config.linear_max_us;
        let ct = crate::cyclictest::from_record(rec, hist_size);
        Ok(crate::cyclictest::write_histogram(&ct).into_bytes())
    }
}

/// The latency measurement a cyclictest format shows.
fn latency<'a>(
    rec: &'a RunRecord,
    format: &'static str,
) -> Result<&'a rtscope_model::Measurement, ExportError> {
    rec.measurement().ok_or(ExportError::NotApplicable {
        format,
        reason: "not a latency measurement (measure, run, cyclictest or an import)",
    })
}

/// rt-tests' `--json` layout.
pub struct CyclictestJson;

impl Exporter for CyclictestJson {
    fn name(&self) -> &'static str {
        "cyclictest-json"
    }
    fn extension(&self) -> &'static str {
        "json"
    }
    fn description(&self) -> &'static str {
        "rt-tests' --json layout"
    }
    fn export(&self, rec: &RunRecord, _: &ExportOptions) -> Result<Vec<u8>, ExportError> {
        let hist_size = latency(rec, self.name())?.config.linear_max_us;
        let ct = crate::cyclictest::from_record(rec, hist_size);
        Ok(crate::cyclictest::write_json(&ct).into_bytes())
    }
}

/// The text summary a measuring verb prints.
pub struct Summary;

impl Exporter for Summary {
    fn name(&self) -> &'static str {
        "summary"
    }
    fn extension(&self) -> &'static str {
        "txt"
    }
    fn description(&self) -> &'static str {
        "the text summary a measuring verb prints"
    }
    fn export(&self, rec: &RunRecord, _: &ExportOptions) -> Result<Vec<u8>, ExportError> {
        Ok(crate::text::summary(rec).into_bytes())
    }
}

/// The self-contained HTML report of this one run (as `rtscope run` writes it).
pub struct Html;

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }
    fn extension(&self) -> &'static str {
        "html"
    }
    fn description(&self) -> &'static str {
        "the self-contained HTML report of the run"
    }
    fn export(&self, rec: &RunRecord, opts: &ExportOptions) -> Result<Vec<u8>, ExportError> {
        Ok(report(rec, opts).html.into_bytes())
    }
}

fn report(rec: &RunRecord, opts: &ExportOptions) -> crate::html::Report {
    crate::html::build(
        std::slice::from_ref(rec),
        &ReportOptions {
            title: format!("rtscope run {}", rec.id),
            generated_at: opts.generated_at.clone(),
            command: rec.cmdline.join(" "),
        },
    )
}

/// One figure of the run's HTML report as a standalone SVG: the same bytes `rtscope report RUN
/// --figures DIR` writes as `<figure id>.svg`.
pub struct SvgFigure {
    name: &'static str,
    /// The figure's id in a one-run report (`html::build`).
    figure_id: &'static str,
    description: &'static str,
    /// Why a run may have no such figure.
    absent: &'static str,
}

impl SvgFigure {
    pub const HISTOGRAM: SvgFigure = SvgFigure {
        name: "svg-histogram",
        figure_id: "hist-0",
        description: "figure: latency histogram, 1 µs buckets",
        absent: "no histogram figure",
    };
    pub const CCDF: SvgFigure = SvgFigure {
        name: "svg-ccdf",
        figure_id: "ccdf",
        description: "figure: latency CCDF",
        absent: "no CCDF figure",
    };
    pub const ATTRIBUTION: SvgFigure = SvgFigure {
        name: "svg-attribution",
        figure_id: "attribution",
        description: "figure: causes of the worst samples (traced runs)",
        absent: "the run has no attribution (it was not traced)",
    };
    pub const WORST: SvgFigure = SvgFigure {
        name: "svg-worst",
        figure_id: "worst-0",
        description: "figure: timelines of the worst samples (traced runs)",
        absent: "the run has no attributed worst samples (it was not traced)",
    };
    pub const BOUND: SvgFigure = SvgFigure {
        name: "svg-bound",
        figure_id: "bound-0",
        description: "figure: the latency bound against the observed latency (⟨export.bound⟩ runs)",
        absent: "the run has no bound (measure ⟨export.bound⟩)",
    };
    pub const BOUND_SERIES: SvgFigure = SvgFigure {
        name: "svg-bound-series",
        figure_id: "bound-series-0",
        description: "figure: the bound over the run (⟨export.bound⟩ runs with a series)",
        absent: "the run has no bound series (measure ⟨export.bound⟩)",
    };
}

impl Exporter for SvgFigure {
    fn name(&self) -> &'static str {
        self.name
    }
    fn extension(&self) -> &'static str {
        "svg"
    }
    fn description(&self) -> &'static str {
        self.description
    }
    fn export(&self, rec: &RunRecord, opts: &ExportOptions) -> Result<Vec<u8>, ExportError> {
        report(rec, opts)
            .figures
            .into_iter()
            .find(|f| f.id == self.figure_id)
            .map(|f| f.svg.into_bytes())
            .ok_or(ExportError::NotApplicable {
                format: self.name,
                reason: self.absent,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measured run with threads, a histogram, percentiles and warnings.
    fn fixture() -> RunRecord {
        let mut spec = rtscope_store::fixture::Spec::new("260101000000-0000abcd", 7);
        spec.with_analysis = true;
        rtscope_store::fixture::record(&spec)
    }

    #[test]
    fn names_are_unique_and_every_format_is_found_by_its_name() {
        let all = exporters();
        let mut names: Vec<&str> = all.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate format names: {names:?}");
        for e in &all {
            assert_eq!(exporter(e.name()).map(|x| x.name()), Some(e.name()));
            assert!(!e.extension().is_empty() && !e.extension().starts_with('.'));
            assert!(!e.description().is_empty());
        }
        assert!(exporter("nope").is_none());
    }

    /// The figures' texts are constants: they spell the field's token as the field writes it.
    #[test]
    fn the_bound_figures_name_the_bound_field() {
        assert_eq!(BOUND.to_string(), "⟨export.bound⟩");
        for f in [SvgFigure::BOUND, SvgFigure::BOUND_SERIES] {
            assert!(f.description.contains(&BOUND.to_string()), "{}", f.name);
            assert!(
                f.absent.ends_with(&format!("(measure {BOUND})")),
                "{}",
                f.name
            );
        }
    }

    /// Every format writes something for a measured run, and what has a parser parses.
    #[test]
    fn every_format_writes_a_measured_run_in_its_own_syntax() {
        let rec = fixture();
        let opts = ExportOptions {
            generated_at: "2026-01-01T00:00:00Z".into(),
        };
        for e in exporters() {
            let out = match e.export(&rec, &opts) {
                Ok(out) => out,
                // Figures of data the fixture did not collect (no trace, no bound).
                Err(ExportError::NotApplicable { .. }) if e.extension() == "svg" => {
                    assert!(
                        !["svg-histogram", "svg-ccdf"].contains(&e.name()),
                        "{}: a measured run has this figure",
                        e.name()
                    );
                    continue;
                }
                Err(err) => panic!("{}: {err}", e.name()),
            };
            assert!(!out.is_empty(), "{}: empty", e.name());
            let text = String::from_utf8(out).unwrap_or_else(|_| panic!("{}: not UTF-8", e.name()));
            match e.extension() {
                "json" => {
                    serde_json::from_str::<serde_json::Value>(&text)
                        .unwrap_or_else(|err| panic!("{}: not JSON: {err}", e.name()));
                }
                "csv" => {
                    let mut lines = text.lines();
                    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
                    assert_eq!(header, ["scope", "cpu", "latency_ns", "count"]);
                    assert!(lines.clone().count() > 0, "csv: no rows");
                    for l in lines {
                        assert_eq!(l.split(',').count(), header.len(), "csv row {l:?}");
                    }
                }
                "svg" => {
                    assert!(text.contains("<svg") && text.trim_end().ends_with("</svg>"));
                }
                "html" => {
                    assert!(text.starts_with("<!DOCTYPE html>") || text.contains("<html"));
                    assert!(text.trim_end().ends_with("</html>"));
                }
                _ => {}
            }
            // Readers of the formats rtscope also imports take its output back.
            match e.name() {
                "json" => {
                    let back = crate::json::parse_run_record(&text).unwrap();
                    assert_eq!(back.id, rec.id);
                }
                "cyclictest-hist" => {
                    let back = crate::cyclictest::parse_histogram(&text).unwrap();
                    assert_eq!(back.threads.len(), rec.measurement().unwrap().threads.len());
                }
                "cyclictest-json" => {
                    let back = crate::cyclictest::parse_json(&text).unwrap();
                    assert_eq!(back.threads.len(), rec.measurement().unwrap().threads.len());
                }
                _ => {}
            }
        }
    }
}
