//! The flags every verb shares (`--json`, the output and store groups, `--db`), the typed values
//! of the one grammar (durations, CPU lists, one CPU, tags) and the value parsers of the
//! libraries' typed choices; what they mean is in `rtscope_session::{input, outputs}`. Each is a
//! clap value parser, so a refusal names the flag and what it accepts.

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser, StringValueParser, TypedValueParser};
use rtscope_session::outputs::{JsonDest, RecordOutputs};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

/// A duration in the one grammar (`30s`, `1.5h`, `250ms`; a bare number is seconds) within
/// `lo..=hi` seconds.
pub fn duration(lo: f64, hi: f64) -> impl TypedValueParser<Value = Duration> {
    StringValueParser::new().try_map(move |s| {
        rtscope_model::duration::parse_secs_in(&s, lo, hi).map(Duration::from_secs_f64)
    })
}

/// [`duration`] within a library's own range.
pub fn duration_within(
    range: std::ops::RangeInclusive<Duration>,
) -> impl TypedValueParser<Value = Duration> {
    duration(range.start().as_secs_f64(), range.end().as_secs_f64())
}

/// A duration of 1 ms ..= 30 days (`-D` of every verb).
pub fn run_time() -> impl TypedValueParser<Value = Duration> {
    duration(0.001, 30.0 * 86400.0)
}

/// `START:END`, two signed durations within `-limit..=limit` seconds (`-2us:800us`), as
/// nanoseconds.
pub fn offset_range(limit: f64) -> impl TypedValueParser<Value = (i64, i64)> {
    StringValueParser::new().try_map(move |s| {
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| format!("'{s}' is not START:END (two durations, e.g. -2us:800us)"))?;
        let one = |x: &str| -> Result<i64, String> {
            let x = x.trim();
            let (sign, t) = match x.strip_prefix('-') {
                Some(t) => (-1.0, t),
                None => (1.0, x),
            };
            let secs = rtscope_model::duration::parse_secs(t)?;
            if secs > limit {
                let l = rtscope_model::duration::human(limit);
                return Err(format!("{x} is out of range (-{l} ..= {l})"));
            }
            Ok((sign * secs * 1e9).round() as i64)
        };
        Ok::<_, String>((one(a)?, one(b)?))
    })
}

/// Latencies and periods in whole microseconds, written as durations (a bare number is
/// microseconds): the value parsers of `-i`, `--dl-*`, noise's periods, ….
pub use rtscope_model::duration::{parse_micros as micros, parse_micros32 as micros32};

/// A choice's name as clap spells it (`one-cpu`), which is the name the libraries read.
pub fn value_name(v: &impl clap::ValueEnum) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// A duration as the libraries' text (`1.5ms`), which they read back to the same value.
pub fn duration_text(d: Duration) -> String {
    rtscope_model::duration::human(d.as_secs_f64())
}

/// A CPU list (`0,2-3`): syntax here; that each CPU is online is the session's check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<u32>);

impl std::str::FromStr for CpuList {
    type Err = String;
    fn from_str(s: &str) -> Result<CpuList, String> {
        match rtscope_probe::sys::parse_cpu_list(s) {
            Ok(v) if v.is_empty() => Err("empty CPU list".into()),
            Ok(v) => Ok(CpuList(v)),
            Err(e) => Err(format!("{e} (expected a list like 0,2-3)")),
        }
    }
}

impl std::fmt::Display for CpuList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&rtscope_session::input::fmt_cpus(&self.0))
    }
}

mod flags;
pub use flags::*;

impl CpuListArg {
    /// The list as the libraries' string form (`None`: all online).
    pub fn spec(&self) -> Option<String> {
        self.cpus.as_ref().map(ToString::to_string)
    }
    /// The list against the online CPUs (all of them when absent).
    pub fn resolve(&self) -> Result<Vec<u32>> {
        resolve_cpus("--cpus", self.spec().as_deref())
    }
}

impl DurationArg {
    /// The duration in the grammar's text (the libraries' string form).
    pub fn text(&self) -> Option<String> {
        self.duration.map(duration_text)
    }
}

/// `key=value` for every `--tag`: keys are `[A-Za-z0-9_.-]+`.
pub fn parse_tag(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not key=value"))?;
    if k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(format!("key '{k}' must be [A-Za-z0-9_.-]+"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// A CPU list against the online CPUs (all of them when absent).
pub fn resolve_cpus(flag: &str, spec: Option<&str>) -> Result<Vec<u32>> {
    Ok(rtscope_session::input::cpus(flag, spec)?)
}

/// clap value parser for every `--db`: an empty value or an unknown scheme is refused before
/// anything runs (`rtscope_store::check_db_url`).
pub fn db_url(s: &str) -> Result<String, String> {
    rtscope_store::check_db_url(s).map(|_| s.to_string())
}

impl JsonOut {
    pub fn dest(&self) -> JsonDest {
        JsonDest(self.path.clone())
    }
    pub fn to_stdout(&self) -> bool {
        self.dest().to_stdout()
    }
    /// Check the destination before any work starts.
    pub fn check(&self) -> Result<()> {
        Ok(self.dest().check()?)
    }
    /// Write `text` (a JSON document; a final newline is added on stdout).
    pub fn write(&self, text: &str) -> Result<()> {
        Ok(self.dest().write(text)?)
    }
}

impl StoreArgs {
    /// The tags as `key=value` text.
    pub fn tag_texts(&self) -> Vec<String> {
        self.tags.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }
}

impl OutArgs {
    pub fn lib(&self) -> RecordOutputs {
        RecordOutputs {
            json: self.json.dest(),
            db: self.store.db.db.clone(),
            no_store: self.store.no_store,
            tags: self.store.tag_texts(),
            quiet: self.quiet,
        }
    }
    /// Whether the human text goes to stdout (not with `--json -`).
    pub fn text(&self) -> bool {
        self.lib().text()
    }
    /// A progress line on stderr, unless `-q`.
    pub fn progress(&self, line: &str) {
        self.lib().progress(line)
    }
    pub fn validate(&self) -> Result<std::collections::BTreeMap<String, String>> {
        Ok(self.lib().validate()?)
    }
}

/// Store (or keep in the fallback directory), then write `--json`.
pub fn emit(out: &OutArgs, rec: &rtscope_model::RunRecord) -> Result<()> {
    Ok(out.lib().emit(rec)?)
}

/// A library's typed choice as a clap value: its names are listed in `--help` and the
/// completions, and a typo gets clap's "similar value" tip. A value that starts like a
/// parametrised name (`fifo:PRIO`) is refused with the library's reason.
#[derive(Clone, Copy)]
pub struct Choice<T> {
    pub names: &'static [&'static str],
    pub parse: fn(&str) -> Result<T, String>,
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Choice<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let s = StringValueParser::new().parse_ref(cmd, arg, value)?;
        let s = s.trim();
        let reason = match (self.parse)(s) {
            Ok(v) => return Ok(v),
            Err(reason) => reason,
        };
        let parametrised = self
            .names
            .iter()
            .filter_map(|n| n.split_once(':'))
            .any(|(p, _)| s.strip_prefix(p).is_some_and(|r| r.starts_with(':')));
        if !parametrised {
            PossibleValuesParser::new(self.names).parse_ref(cmd, arg, OsStr::new(s))?;
        }
        let refuse = move |_: String| Err::<T, String>(reason.clone());
        StringValueParser::new()
            .try_map(refuse)
            .parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.names.iter().map(PossibleValue::new)))
    }
}

/// `--load-policy`: other, fifo or fifo:PRIO.
pub fn load_policy() -> Choice<rtscope_load::LoadPolicy> {
    Choice {
        names: &rtscope_load::LoadPolicy::NAMES,
        parse: |s| {
            s.parse().map_err(|e| match e {
                rtscope_load::LoadError::Invalid { msg, .. } => msg,
                e => e.to_string(),
            })
        },
    }
}

/// Load kinds, comma-separated (`cpu-cache,io`); overlaps are the load crate's to refuse.
#[derive(Clone, Debug)]
pub struct LoadKinds(pub Vec<rtscope_load::LoadKind>);

#[derive(Clone, Copy)]
pub struct LoadKindsParser;

impl TypedValueParser for LoadKindsParser {
    type Value = LoadKinds;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<LoadKinds, clap::Error> {
        let one = Choice {
            names: &rtscope_load::LoadKind::NAMES,
            parse: |s| {
                s.parse()
                    .map_err(|e: rtscope_load::LoadError| e.to_string())
            },
        };
        let s = StringValueParser::new().parse_ref(cmd, arg, value)?;
        s.split(',')
            .map(|k| one.parse_ref(cmd, arg, OsStr::new(k)))
            .collect::<Result<_, _>>()
            .map(LoadKinds)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            rtscope_load::LoadKind::NAMES.iter().map(PossibleValue::new),
        ))
    }
}
