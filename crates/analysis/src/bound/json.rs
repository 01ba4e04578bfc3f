//! The documented interchange input (`rtscope bound --input FILE.json`, docs/bound.md):
//! `{"cpus":[{"cpu":0, "thread":{"poid_ns","paie_ns","psd_ns","dst_ns"},
//!   "irqs":[{"source":"33","start_ns","duration_ns"}…], "nmis":[{"start_ns","duration_ns"}…],
//!   "observed_max_latency_ns": optional, "irq_entry_exit_ns": optional}]}`.
//! Unknown fields are rejected; numbers are read signed so a negative value is named, not
//! mangled; arrivals are sorted per source (stated normalisation, reported as a warning).

use super::{BoundError, BoundInput, CpuInput, InterruptSource, RawInstance, SourceKind};
use rtscope_model::bound::ThreadVars;
use rtscope_model::limits::{Budget, BOUND_CPU_BYTES, BOUND_INSTANCE_BYTES, BOUND_SOURCE_BYTES};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    #[serde(default)]
    schema_version: Option<u32>,
    cpus: Vec<Cpu>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Cpu {
    cpu: i64,
    thread: Thread,
    #[serde(default)]
    irqs: Vec<Irq>,
    #[serde(default)]
    nmis: Vec<Nmi>,
    #[serde(default)]
    observed_max_latency_ns: Option<i64>,
    #[serde(default)]
    thread_estimated: bool,
    /// An IRQ arrival's entry and exit code outside its handler (ns), added to every IRQ
    /// instance.
    #[serde(default)]
    irq_entry_exit_ns: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Thread {
    poid_ns: i64,
    paie_ns: i64,
    psd_ns: i64,
    dst_ns: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Irq {
    source: String,
    start_ns: i64,
    duration_ns: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Nmi {
    start_ns: i64,
    duration_ns: i64,
}

fn err(origin: &str, message: String) -> BoundError {
    BoundError::Input {
        origin: origin.to_string(),
        message,
    }
}

fn nonneg(origin: &str, path: &str, v: i64) -> Result<u64, BoundError> {
    u64::try_from(v).map_err(|_| err(origin, format!("{path}: must be >= 0 ns, got {v}")))
}

/// Parses and validates the interchange JSON. `origin` (the file name) prefixes every error.
pub fn parse(text: &str, origin: &str) -> Result<BoundInput, BoundError> {
    parse_within(text, origin, &mut Budget::for_text(text.len() as u64))
}

/// [`parse`] charging what the bound will build to `budget` (`rtscope_model::limits`): every
/// CPU, interrupt source and instance, at what its analysis costs.
pub fn parse_within(
    text: &str,
    origin: &str,
    budget: &mut Budget,
) -> Result<BoundInput, BoundError> {
    rtscope_model::json_keys::reject_duplicate_keys(text)
        .map_err(|e| err(origin, format!("invalid bound input JSON: {e}")))?;
    let doc: Doc = serde_json::from_str(text)
        .map_err(|e| err(origin, format!("invalid bound input JSON: {e}")))?;
    if let Some(v) = doc.schema_version {
        if v != 1 {
            return Err(err(
                origin,
                format!("schema_version: only 1 is understood, got {v}"),
            ));
        }
    }
    if doc.cpus.is_empty() {
        return Err(err(
            origin,
            "cpus: empty, at least one CPU is needed".into(),
        ));
    }
    let over = |e: rtscope_model::limits::OverBudget| err(origin, e.to_string());
    budget
        .charge(
            doc.cpus.len() as u64,
            BOUND_CPU_BYTES,
            &format!("cpus: {} CPUs", doc.cpus.len()),
        )
        .map_err(over)?;
    let instances = doc.cpus.iter().fold(0u64, |t, c| {
        t.saturating_add((c.irqs.len() + c.nmis.len()) as u64)
    });
    budget
        .charge(
            instances,
            BOUND_INSTANCE_BYTES,
            &format!("cpus[].irqs and cpus[].nmis: {instances} instances"),
        )
        .map_err(over)?;
    let mut out = BoundInput::default();
    let mut seen = BTreeMap::new();
    for (ci, c) in doc.cpus.into_iter().enumerate() {
        let p = format!("cpus[{ci}]");
        let cpu = u32::try_from(c.cpu).map_err(|_| {
            err(
                origin,
                format!("{p}.cpu: must be 0..={}, got {}", u32::MAX, c.cpu),
            )
        })?;
        if let Some(prev) = seen.insert(cpu, ci) {
            return Err(err(
                origin,
                format!("{p}.cpu: CPU {cpu} already given in cpus[{prev}]"),
            ));
        }
        let thread = ThreadVars {
            poid_ns: nonneg(origin, &format!("{p}.thread.poid_ns"), c.thread.poid_ns)?,
            paie_ns: nonneg(origin, &format!("{p}.thread.paie_ns"), c.thread.paie_ns)?,
            psd_ns: nonneg(origin, &format!("{p}.thread.psd_ns"), c.thread.psd_ns)?,
            dst_ns: nonneg(origin, &format!("{p}.thread.dst_ns"), c.thread.dst_ns)?,
        };
        let irq_entry_exit_ns = match c.irq_entry_exit_ns {
            Some(v) => nonneg(origin, &format!("{p}.irq_entry_exit_ns"), v)?,
            None => 0,
        };
        let observed = match c.observed_max_latency_ns {
            Some(v) => Some(nonneg(origin, &format!("{p}.observed_max_latency_ns"), v)?),
            None => None,
        };
        if thread == ThreadVars::default() && c.irqs.is_empty() && c.nmis.is_empty() {
            return Err(err(
                origin,
                format!("{p} (CPU {cpu}): empty — all thread variables are 0 and no interrupts were given"),
            ));
        }
        let mut by_src: BTreeMap<String, Vec<RawInstance>> = BTreeMap::new();
        for (ii, irq) in c.irqs.into_iter().enumerate() {
            let q = format!("{p}.irqs[{ii}]");
            if irq.source.is_empty() {
                return Err(err(origin, format!("{q}.source: empty name")));
            }
            if irq.source.eq_ignore_ascii_case("nmi") {
                return Err(err(
                    origin,
                    format!("{q}.source: \"nmi\" is reserved, put NMIs in \"nmis\""),
                ));
            }
            let r = RawInstance {
                start_ns: nonneg(origin, &format!("{q}.start_ns"), irq.start_ns)?,
                duration_ns: nonneg(origin, &format!("{q}.duration_ns"), irq.duration_ns)?,
                row: ii as u64,
            };
            if !by_src.contains_key(&irq.source) {
                budget
                    .charge(
                        1,
                        BOUND_SOURCE_BYTES.saturating_add(irq.source.len() as u64),
                        &format!("{q}.source: source {} of {p}", by_src.len() + 1),
                    )
                    .map_err(over)?;
            }
            by_src.entry(irq.source).or_default().push(r);
        }
        let mut nmis = Vec::with_capacity(c.nmis.len());
        for (ni, n) in c.nmis.into_iter().enumerate() {
            let q = format!("{p}.nmis[{ni}]");
            nmis.push(RawInstance {
                start_ns: nonneg(origin, &format!("{q}.start_ns"), n.start_ns)?,
                duration_ns: nonneg(origin, &format!("{q}.duration_ns"), n.duration_ns)?,
                row: ni as u64,
            });
        }
        if !nmis.is_empty() {
            budget
                .charge(1, BOUND_SOURCE_BYTES, &format!("{p}.nmis"))
                .map_err(over)?;
        }
        let mut sources = Vec::new();
        if !nmis.is_empty() {
            let o = format!("{origin} {p}.nmis[]");
            let (s, n) = InterruptSource::build("nmi", SourceKind::Nmi, nmis, &o)?;
            if n.out_of_order > 0 {
                out.warnings.push(format!(
                    "{o}: {} arrivals out of order, sorted",
                    n.out_of_order
                ));
            }
            sources.push(s);
        }
        for (name, raw) in by_src {
            let o = format!("{origin} {p}.irqs[] (indices are into irqs[])");
            let (s, n) = InterruptSource::build(&name, SourceKind::Irq, raw, &o)?;
            if n.out_of_order > 0 {
                out.warnings.push(format!(
                    "{origin} {p}: source {name}: {} arrivals out of order, sorted",
                    n.out_of_order
                ));
            }
            sources.push(s);
        }
        let mut ci = CpuInput {
            cpu,
            thread,
            thread_estimated: c.thread_estimated,
            irq_entry_exit_ns,
            observed_max_latency_ns: observed,
            sources,
        };
        ci.sort_sources();
        out.cpus.push(ci);
    }
    out.cpus.sort_by_key(|c| c.cpu);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"cpus":[{"cpu":1,"thread":{"poid_ns":100,"paie_ns":5,"psd_ns":20,"dst_ns":80},
      "irqs":[{"source":"33","start_ns":50,"duration_ns":12},{"source":"33","start_ns":0,"duration_ns":10},
              {"source":"236","start_ns":10,"duration_ns":3}],
      "nmis":[{"start_ns":1000,"duration_ns":7}], "observed_max_latency_ns": 90}]}"#;

    #[test]
    fn parses_and_sorts() {
        let i = parse(GOOD, "in.json").unwrap();
        assert_eq!(i.cpus.len(), 1);
        let c = &i.cpus[0];
        assert_eq!(c.cpu, 1);
        assert_eq!(c.observed_max_latency_ns, Some(90));
        let names: Vec<&str> = c.sources.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["nmi", "33", "236"]);
        assert_eq!(c.sources[1].starts(), &[0, 50]);
        assert_eq!(i.warnings.len(), 1, "{:?}", i.warnings);
        assert!(i.warnings[0].contains("source 33: 1 arrivals out of order"));
    }

    fn msg(t: &str) -> String {
        parse(t, "in.json").unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_place() {
        let th = r#""thread":{"poid_ns":1,"paie_ns":0,"psd_ns":0,"dst_ns":0}"#;
        assert!(msg(r#"{"cpus":[]}"#).contains("cpus: empty"));
        assert!(msg(&format!(r#"{{"cpus":[{{"cpu":0,{th},"bogus":1}}]}}"#))
            .contains("unknown field `bogus`"));
        let m = msg(&format!(
            r#"{{"cpus":[{{"cpu":0,{th},"irqs":[{{"source":"1","start_ns":0,"duration_ns":-3}}]}}]}}"#
        ));
        assert!(
            m.contains("in.json: cpus[0].irqs[0].duration_ns: must be >= 0 ns, got -3"),
            "{m}"
        );
        let m = msg(&format!(
            r#"{{"cpus":[{{"cpu":0,{th},"irqs":[{{"source":"1","start_ns":0,"duration_ns":5}},
               {{"source":"1","start_ns":3,"duration_ns":1}}]}}]}}"#
        ));
        assert!(m.contains("row 0") && m.contains("overlaps row 1"), "{m}");
        let m =
            msg(r#"{"cpus":[{"cpu":0,"thread":{"poid_ns":0,"paie_ns":0,"psd_ns":0,"dst_ns":0}}]}"#);
        assert!(m.contains("empty"), "{m}");
        assert!(msg(r#"{"cpus":[{"cpu":0}]}"#).contains("missing field `thread`"));
        assert!(msg(&format!(
            r#"{{"cpus":[{{"cpu":0,{th}}},{{"cpu":0,{th}}}]}}"#
        ))
        .contains("already given"));
        assert!(msg("{").contains("invalid bound input JSON"));
        assert!(msg(&format!(r#"{{"cpus":[{{"cpu":-1,{th}}}]}}"#)).contains("cpus[0].cpu"));
    }
}
