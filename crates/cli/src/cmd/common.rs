//! The flags every verb shares (`--json`, the output group, `--db`) and the value parsers of the
//! libraries' typed choices; what they mean is in `rtscope_session::{input, outputs}`.

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser, StringValueParser, TypedValueParser};
use rtscope_session::outputs::{JsonDest, RecordOutputs};
use std::ffi::OsStr;
use std::path::PathBuf;

pub use rtscope_session::signals::{install_handlers as install_signal_handlers, stop_requested};

/// A duration flag in the one grammar, within `lo..=hi` seconds.
pub fn parse_duration_in(flag: &str, s: &str, lo: f64, hi: f64) -> Result<f64> {
    Ok(rtscope_session::input::duration_in(flag, s, lo, hi)?)
}

/// A duration flag of 1 ms ..= 30 days.
pub fn parse_duration(flag: &str, s: &str) -> Result<f64> {
    Ok(rtscope_session::input::duration(flag, s)?)
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

/// `--json FILE|-`, the same in every verb: the verb's JSON document to FILE (written atomically)
/// or, with `-` or no value, to stdout (then the human text is not printed: stdout stays JSON).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct JsonOut {
    /// Write the result as JSON to FILE, or to stdout with `-` (or no value)
    #[arg(long = "json", value_name = "FILE|-", num_args = 0..=1, default_missing_value = "-")]
    pub path: Option<PathBuf>,
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

/// The output flags of every verb that produces a run: `--json FILE|-`, `--db`, `--no-store`,
/// `--tag`, `-q`. Every such verb stores by default.
#[derive(clap::Args, Debug, Clone)]
pub struct OutArgs {
    /// The RunRecord as JSON: FILE, or stdout with `-` (the text is then not printed)
    #[command(flatten)]
    pub json: JsonOut,
    /// Results database: a SQLite file path or postgres://user@host/db [default:
    /// $XDG_DATA_HOME/rtscope/results.db]
    #[arg(long, value_parser = db_url, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Do not store the run in the results database
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// Storing is the default; kept so that older scripts still run
    #[arg(long, hide = true)]
    pub store: bool,
    /// key=value tag stored with the run (repeatable)
    #[arg(long = "tag", value_name = "K=V")]
    pub tags: Vec<String>,
    /// No progress lines (the result and errors are still printed)
    #[arg(short, long)]
    pub quiet: bool,
}

impl OutArgs {
    pub fn lib(&self) -> RecordOutputs {
        RecordOutputs {
            json: self.json.dest(),
            db: self.db.clone(),
            no_store: self.no_store,
            tags: self.tags.clone(),
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
