//! The Prometheus exposition formats of the metrics endpoint (`rtscope monitor`).
//!
//! The registry's encoder (`prometheus-client`) writes OpenMetrics 1.0. A scraper that does not
//! ask for OpenMetrics in its `Accept` header gets the Prometheus text format 0.0.4, the format
//! every Prometheus-compatible scraper reads. The two differ only in what is converted here:
//!
//! * OpenMetrics names a counter family without its `_total` suffix (`# TYPE x counter`, samples
//!   `x_total`); in 0.0.4 the TYPE and HELP lines name the sample (`# TYPE x_total counter`), else
//!   the samples read as untyped. A counter's `_created` sample has no 0.0.4 meaning: dropped.
//! * An OpenMetrics `info` family `x` has samples `x_info`: a 0.0.4 gauge `x_info`. `unknown` is
//!   0.0.4's `untyped`. `# UNIT` lines, exemplars (` # {…}` after a sample) and the closing
//!   `# EOF` do not exist in 0.0.4.
//! * HELP escapes: OpenMetrics may escape `"`, which 0.0.4 refuses (only `\\` and `\n`).

use std::collections::BTreeMap;

/// The content type of the Prometheus text format, the default answer.
pub const TEXT_0_0_4: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The content type of OpenMetrics text, served when the `Accept` header asks for it.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Which exposition format a request's `Accept` header asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposition {
    Text004,
    OpenMetrics,
}

impl Exposition {
    pub fn content_type(self) -> &'static str {
        match self {
            Exposition::Text004 => TEXT_0_0_4,
            Exposition::OpenMetrics => OPENMETRICS,
        }
    }
}

/// Content negotiation (RFC 9110 §12.5.1) between the two formats: OpenMetrics when the header
/// names `application/openmetrics-text` with a quality above 0 and at least that of anything
/// matching `text/plain` (`text/plain`, `text/*`, `*/*`); the text format otherwise, also without
/// a header. Prometheus itself sends `application/openmetrics-text;version=1.0.0,…,text/plain;
/// version=0.0.4;q=0.5,*/*;q=0.1` when its scrape protocols allow OpenMetrics.
pub fn negotiate(accept: Option<&str>) -> Exposition {
    let Some(accept) = accept else {
        return Exposition::Text004;
    };
    let (mut om, mut text) = (0.0f64, 0.0f64);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .map_or(Some(1.0), |(_, v)| v.trim().parse::<f64>().ok())
            .filter(|q| (0.0..=1.0).contains(q))
            .unwrap_or(0.0);
        match media.as_str() {
            "application/openmetrics-text" => om = om.max(q),
            "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    if om > 0.0 && om >= text {
        Exposition::OpenMetrics
    } else {
        Exposition::Text004
    }
}

/// The Prometheus text format 0.0.4 of an OpenMetrics exposition (see the module's comment).
pub fn text_0_0_4(openmetrics: &str) -> String {
    // A family's HELP comes before its TYPE: learn every family's type first.
    let types: BTreeMap<&str, &str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .collect();
    let renamed = |name: &str| -> String {
        match types.get(name) {
            Some(&"counter") => format!("{name}_total"),
            Some(&"info") => format!("{name}_info"),
            _ => name.to_string(),
        }
    };
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push_str(&format!(
                "# HELP {} {}\n",
                renamed(name),
                help.replace("\\\"", "\"")
            ));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let kind = match kind {
                "counter" | "gauge" | "histogram" | "summary" => kind,
                "info" => "gauge",
                _ => "untyped",
            };
            out.push_str(&format!("# TYPE {} {kind}\n", renamed(name)));
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        // A sample: `name{labels} value [timestamp] [# {exemplar} value]`.
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let name = &line[..name_end];
        if let Some(family) = name.strip_suffix("_created") {
            if types.get(family) == Some(&"counter") {
                continue;
            }
        }
        let sample = match line.find(" # {") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(sample);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers() {
        let rows: [(Option<&str>, Exposition); 9] = [
            (None, Exposition::Text004),
            (Some(""), Exposition::Text004),
            (Some("*/*"), Exposition::Text004),
            (Some("text/plain;version=0.0.4"), Exposition::Text004),
            // Prometheus 2.x/3.x with OpenMetrics enabled.
            (
                Some("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
                Exposition::OpenMetrics,
            ),
            (Some("application/openmetrics-text"), Exposition::OpenMetrics),
            (
                Some("text/plain;q=0.9, application/OpenMetrics-Text;q=0.3"),
                Exposition::Text004,
            ),
            (
                Some("application/openmetrics-text;q=0"),
                Exposition::Text004,
            ),
            (
                Some("application/openmetrics-text;q=banana"),
                Exposition::Text004,
            ),
        ];
        for (h, want) in rows {
            assert_eq!(negotiate(h), want, "{h:?}");
        }
    }

    #[test]
    fn openmetrics_becomes_text_0_0_4() {
        let om = "# HELP a_seconds Latency \\\"quoted\\\".\n# TYPE a_seconds histogram\n# UNIT a_seconds seconds\na_seconds_bucket{le=\"1.0\"} 1\na_seconds_bucket{le=\"+Inf\"} 2\na_seconds_sum 3.5\na_seconds_count 2\n# HELP c Things.\n# TYPE c counter\nc_total{x=\"y\"} 4 # {id=\"1\"} 1.0\nc_created{x=\"y\"} 1700000000.0\n# HELP i Build.\n# TYPE i info\ni_info{version=\"1\"} 1\n# HELP u Odd.\n# TYPE u unknown\nu 1\n# EOF\n";
        let t = text_0_0_4(om);
        assert_eq!(
            t,
            "# HELP a_seconds Latency \"quoted\".\n# TYPE a_seconds histogram\na_seconds_bucket{le=\"1.0\"} 1\na_seconds_bucket{le=\"+Inf\"} 2\na_seconds_sum 3.5\na_seconds_count 2\n# HELP c_total Things.\n# TYPE c_total counter\nc_total{x=\"y\"} 4\n# HELP i_info Build.\n# TYPE i_info gauge\ni_info{version=\"1\"} 1\n# HELP u Odd.\n# TYPE u untyped\nu 1\n"
        );
    }
}
