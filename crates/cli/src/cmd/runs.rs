//! `rtscope runs`: list stored runs, filtered, as a table or JSON.

use super::db::{self, DbArgs};
use crate::usage;
use rtscope_store::RunFilter;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    db: DbArgs,
    /// Only runs carrying this tag (repeatable; all must match)
    #[arg(long, value_name = "K=V", value_parser = db::parse_tag)]
    tag: Vec<(String, String)>,
    /// Only runs of this campaign (same as --tag campaign=NAME)
    #[arg(long)]
    campaign: Option<String>,
    /// Only runs taken on this host
    #[arg(long)]
    host: Option<String>,
    /// Kernel release substring, or the value of a `kernel` tag
    #[arg(long)]
    kernel: Option<String>,
    /// Scenario (the load, e.g. idle, cpu-cache, io)
    #[arg(long)]
    scenario: Option<String>,
    /// Scheduling policy (fifo, rr, other, deadline)
    #[arg(long)]
    policy: Option<String>,
    /// Runs started at or after this date/time (RFC 3339 prefix, e.g. 2026-11-01)
    #[arg(long)]
    since: Option<String>,
    /// Runs started at or before this date/time (a bare date includes the whole day)
    #[arg(long)]
    until: Option<String>,
    /// Only the N most recent matches
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
    /// The matching runs as a JSON array (FILE, or stdout with `-`) instead of a table
    #[command(flatten)]
    json: super::common::JsonOut,
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
    // (separator position, field start, field end, range): each field checked when present.
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

fn check_date(flag: &str, s: &Option<String>) -> anyhow::Result<()> {
    if let Some(d) = s {
        if !valid_rfc3339_prefix(d) {
            return Err(usage!(
                "{flag}: '{d}' is not an RFC 3339 date/time prefix (e.g. 2026-11-01 or 2026-11-01T10:00:00Z)"
            ));
        }
    }
    Ok(())
}

pub fn run(a: Args) -> anyhow::Result<()> {
    a.json.check()?;
    check_date("--since", &a.since)?;
    check_date("--until", &a.until)?;
    if let Some(p) = &a.policy {
        if !["fifo", "rr", "other", "deadline"].contains(&p.as_str()) {
            return Err(usage!(
                "--policy: '{p}' is not one of fifo, rr, other, deadline"
            ));
        }
    }
    let mut tags = a.tag.clone();
    if let Some(c) = &a.campaign {
        tags.push(("campaign".into(), c.clone()));
    }
    let f = RunFilter {
        tags,
        host: a.host,
        kernel: a.kernel,
        scenario: a.scenario,
        policy: a.policy,
        since: a.since,
        until: a.until,
        limit: a.limit,
    };
    // An empty database (nothing stored yet, or a run creating it at this moment) lists no runs.
    let (mut store, location) = match rtscope_store::Store::open_read_only(a.db.db.as_deref()) {
        Ok(store) => {
            let l = store.location().to_string();
            (Some(store), l)
        }
        Err(rtscope_store::StoreError::Empty(location)) => (None, location),
        Err(e) => return Err(db::map_err(e)),
    };
    let runs = match store.as_mut() {
        Some(s) => s.list_runs(&f).map_err(db::map_err)?,
        None => Vec::new(),
    };
    if a.json.path.is_some() {
        return a.json.write(&serde_json::to_string_pretty(&runs)?);
    }
    if runs.is_empty() {
        eprintln!("no stored runs match (database: {location})");
        return Ok(());
    }
    let mut rows: Vec<[String; 12]> = vec![[
        "ID".to_string(),
        "STARTED".into(),
        "HOST".into(),
        "KERNEL".into(),
        "VERB".into(),
        "STATE".into(),
        "POLICY".into(),
        "SCENARIO".into(),
        "SAMPLES".into(),
        "AVG_US".into(),
        "MAX_US".into(),
        "TAGS".into(),
    ]];
    for r in &runs {
        rows.push([
            r.id.clone(),
            r.started_at.clone(),
            r.hostname.clone(),
            r.kernel_release.clone(),
            r.verb.clone(),
            run_state(store.as_mut(), r),
            r.policy.clone(),
            r.scenario.clone(),
            r.samples.to_string(),
            db::us(r.avg_ns),
            db::us(r.max_ns.map(|v| v as f64)),
            r.tags
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        ]);
    }
    db::out(&table(&rows))?;
    Ok(())
}

/// The STATE column: an interim record says whether its run is still going or died after its
/// last checkpoint (its writer's pid and host are in the record).
fn run_state(store: Option<&mut rtscope_store::Store>, r: &rtscope_store::RunSummary) -> String {
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

/// Left-aligned columns separated by two spaces; control characters from stored strings are
/// shown escaped so a hostile hostname cannot drive the terminal.
pub fn table<const N: usize>(rows: &[[String; N]]) -> String {
    let clean = |s: &str| s.escape_debug().to_string();
    let mut w = [0usize; N];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(clean(c).chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:<width$}", clean(c), width = w[i]))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::valid_rfc3339_prefix as ok;

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
            assert!(ok(d), "{d}");
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
            assert!(!ok(d), "{d}");
        }
    }
}
