//! Values from the command line, resolved against this machine before anything starts: durations,
//! CPU lists, ranges, output files, the results database, tags and input files. Every refusal is
//! bad input: one line naming the flag and what it accepts (exit 2).

use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};

/// How a verb's library call fails.
#[derive(Debug, thiserror::Error)]
pub enum VerbError {
    /// One line naming the flag or file and the accepted range; nothing was started (exit 2).
    #[error("{0}")]
    BadInput(String),
    /// A value of a typed request ([`Field`]) refused; the caller names it in its own terms
    /// (the cli: the flag) and renders the fields `msg` refers to. Exit 2, nothing started.
    #[error("{field}: {msg}")]
    Field { field: Field, msg: String },
    /// The work failed: the kernel refused, an I/O error after the work started (exit 1).
    #[error(transparent)]
    Failed(Box<dyn Error + Send + Sync>),
}

impl VerbError {
    pub fn failed(e: impl Into<Box<dyn Error + Send + Sync>>) -> VerbError {
        VerbError::Failed(e.into())
    }

    /// `what` failed because of `source`: shown as `what: source`.
    pub fn context(
        what: impl Into<String>,
        source: impl Error + Send + Sync + 'static,
    ) -> VerbError {
        VerbError::Failed(Box::new(Context {
            what: what.into(),
            source: Box::new(source),
        }))
    }

    pub fn is_bad_input(&self) -> bool {
        matches!(self, VerbError::BadInput(_) | VerbError::Field { .. })
    }

    /// The error as one line, each [`Field`] named by `name` (the cli passes its flag names).
    pub fn render(&self, name: impl Fn(Field) -> &'static str) -> String {
        let line = match self {
            VerbError::Field { field, msg } => format!("{}: {msg}", name(*field)),
            e => e.to_string(),
        };
        Field::render(&line, name)
    }
}

/// A store error is bad input when it names what the user gave (an unknown or ambiguous run id,
/// a bad URL, a missing or empty database), else a failure.
impl From<rtscope_store::StoreError> for VerbError {
    fn from(e: rtscope_store::StoreError) -> VerbError {
        match e {
            rtscope_store::StoreError::UnknownRun(_)
            | rtscope_store::StoreError::Ambiguous { .. }
            | rtscope_store::StoreError::BadUrl(_)
            | rtscope_store::StoreError::Missing(_)
            | rtscope_store::StoreError::Empty(_) => VerbError::BadInput(e.to_string()),
            e => VerbError::failed(e),
        }
    }
}

/// The fields, each declared once: the enum, [`Field::ALL`] and [`Field::key`] come from it.
macro_rules! fields {
    ($(#[$em:meta])* ; $($(#[$m:meta])* $f:ident => $key:literal,)*) => {
        $(#[$em])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Field {
            $($(#[$m])* $f,)*
        }

        impl Field {
            pub const ALL: &'static [Field] = &[$(Field::$f,)*];

            /// The field's name in the request (snake case).
            pub fn key(self) -> &'static str {
                match self {
                    $(Field::$f => $key,)*
                }
            }

            /// The field's token in a message (its [`Display`](std::fmt::Display)).
            pub fn token(self) -> &'static str {
                match self {
                    $(Field::$f => concat!("⟨", $key, "⟩"),)*
                }
            }
        }
    };
}

fields! {
    /// The values of a measurement request ([`crate::resolve::MeasureRequest`]) an error or a
    /// warning can be about. A message refers to a field by its token (`⟨interval⟩`, the field's
    /// [`Display`](std::fmt::Display)); whoever shows the message to a person renders the tokens in
    /// that person's terms ([`Field::render`]).
    ;
    Cpus => "cpus",
    Interval => "interval",
    Distance => "distance",
    Aligned => "aligned",
    Policy => "policy",
    Priority => "priority",
    Nice => "nice",
    DlRuntime => "dl_runtime",
    DlDeadline => "dl_deadline",
    DlPeriod => "dl_period",
    Duration => "duration",
    Loops => "loops",
    Timer => "timer",
    Clock => "clock",
    BreakAbove => "break_above",
    RecordAbove => "record_above",
    Worst => "worst",
    LinearMax => "linear_max",
    Json => "json",
    HistogramFile => "histogram_file",
    CyclictestJson => "cyclictest_json",
    Raw => "raw",
    Tags => "tags",
    Load => "load",
    LoadCpus => "load_cpus",
    Wss => "wss",
    Trace => "trace",
    TraceFile => "trace_file",
    TraceFileMode => "trace_file_mode",
    TraceKeep => "trace_keep",
    Checkpoint => "checkpoint",
    NoStore => "no_store",
    Bound => "bound",
    BoundPoints => "bound_points",
    Preset => "preset",
    AllowUnprivileged => "allow_unprivileged",
    OutDir => "out_dir",
    Housekeeping => "housekeeping",
    UntilStable => "until_stable",
    StableTolerance => "stable_tolerance",
    StableWindow => "stable_window",
    MaxDuration => "max_duration",
    /// `watch`'s target: processes by id, by name, or a command to start.
    WatchPid => "pid",
    WatchComm => "comm",
    WatchCommand => "command",
    WatchCgroup => "cgroup",
    /// `watch --on-threshold`: the command run when an activation exceeds `--threshold`.
    WatchOnThreshold => "on_threshold",
    Since => "since",
    Until => "until",
    Db => "db",
}

impl Field {
    /// Every field token in `text` replaced by `name(field)`.
    pub fn render(text: &str, name: impl Fn(Field) -> &'static str) -> String {
        rtscope_model::field::render(text, Field::ALL, name)
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.token())
    }
}

/// `v` within `lo..=hi`, or a [`VerbError::Field`] naming the field, the value and the range.
pub fn field_range<T: PartialOrd + std::fmt::Display + Copy>(
    field: Field,
    v: T,
    lo: T,
    hi: T,
    unit: &str,
) -> Result<T, VerbError> {
    rtscope_model::field::within(v, lo, hi, unit).map_err(|msg| VerbError::Field { field, msg })
}

/// `field!(Field::Nice, "only applies to {} other", Field::Policy)`: a [`VerbError::Field`].
macro_rules! field {
    ($f:expr, $($t:tt)*) => { $crate::input::VerbError::Field { field: $f, msg: format!($($t)*) } };
}
pub(crate) use field;

#[derive(Debug)]
struct Context {
    what: String,
    source: Box<dyn Error + Send + Sync>,
}

impl std::fmt::Display for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

impl Error for Context {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.source)
    }
}

/// `bad!("--flag: {v} is out of range")`: a [`VerbError::BadInput`].
#[macro_export]
macro_rules! bad {
    ($($t:tt)*) => { $crate::input::VerbError::BadInput(format!($($t)*)) };
}
pub use crate::bad;

/// A duration flag in the one grammar (`rtscope_model::duration`) within `lo..=hi` seconds.
pub fn duration_in(flag: &str, s: &str, lo: f64, hi: f64) -> Result<f64, VerbError> {
    rtscope_model::duration::parse_secs_in(s, lo, hi).map_err(|e| bad!("{flag}: {e}"))
}

/// A duration flag of 1 ms ..= 30 days.
pub fn duration(flag: &str, s: &str) -> Result<f64, VerbError> {
    duration_in(flag, s, 0.001, 30.0 * 86400.0)
}

fn online() -> Result<Vec<u32>, VerbError> {
    rtscope_probe::sys::online_cpus()
        .map_err(|e| VerbError::context("reading /sys/devices/system/cpu/online", e))
}

/// A parsed CPU list checked against the online CPUs (all of them when absent).
pub fn online_cpus(field: Field, list: Option<&[u32]>) -> Result<Vec<u32>, VerbError> {
    let online = online()?;
    let Some(list) = list else {
        return Ok(online);
    };
    if list.is_empty() {
        return Err(field!(field, "empty CPU list"));
    }
    if let Some(c) = list.iter().find(|c| !online.contains(c)) {
        return Err(field!(
            field,
            "CPU {c} is not online (online CPUs: {})",
            fmt_cpus(&online)
        ));
    }
    Ok(list.to_vec())
}

/// A CPU list resolved against the online CPUs (all of them when absent); every listed CPU must
/// be online.
pub fn cpus(flag: &str, spec: Option<&str>) -> Result<Vec<u32>, VerbError> {
    let online = online()?;
    let Some(spec) = spec else {
        return Ok(online);
    };
    let cpus = rtscope_probe::sys::parse_cpu_list(spec)
        .map_err(|e| bad!("{flag}: {e} (expected a list like 0,2-3)"))?;
    if cpus.is_empty() {
        return Err(bad!("{flag}: empty CPU list"));
    }
    for c in &cpus {
        if !online.contains(c) {
            return Err(bad!(
                "{flag}: CPU {c} is not online (online CPUs: {})",
                fmt_cpus(&online)
            ));
        }
    }
    Ok(cpus)
}

pub fn fmt_cpus(c: &[u32]) -> String {
    c.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Room an output file (a record, a report, a table) needs: records keep bounded summaries,
/// well under this.
pub const OUTPUT_FILE_BYTES: u64 = 1 << 20;

/// An output file can be written (its directory exists and takes a new file, it is not on a
/// kernel pseudo file system) before anything starts.
pub fn output(flag: &str, p: &Path) -> Result<(), VerbError> {
    rtscope_files::check_output(p, Some(OUTPUT_FILE_BYTES))
        .map_err(|e| bad!("{flag} {}: {e}", p.display()))
}

/// Before a storing verb starts: the SQLite database's directory takes a file (it is created
/// 0700 if missing) and is not a kernel pseudo file system. A PostgreSQL URL is checked when it
/// is used (an unreachable server gives a fallback file, not a lost run).
pub fn db_writable(db: Option<&str>) -> Result<(), VerbError> {
    let path = match db {
        Some(u) if rtscope_store::is_postgres_url(u) => return Ok(()),
        Some(p) => PathBuf::from(p.strip_prefix("sqlite://").unwrap_or(p)),
        None => rtscope_store::default_db_path(),
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    rtscope_files::check_output_dir(&dir, Some(OUTPUT_FILE_BYTES))
        .map_err(|e| bad!("{} {}: {e}", Field::Db, path.display()))
}

/// `key=value` tags; keys are `[A-Za-z0-9_.-]+`.
pub fn tags(flag: &str, tags: &[String]) -> Result<BTreeMap<String, String>, VerbError> {
    let mut m = BTreeMap::new();
    for t in tags {
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| bad!("{flag}: '{t}' is not key=value"))?;
        if k.is_empty()
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(bad!("{flag}: key '{k}' must be [A-Za-z0-9_.-]+"));
        }
        m.insert(k.to_string(), v.to_string());
    }
    Ok(m)
}

impl From<rtscope_bench::taskset::TasksetError> for VerbError {
    fn from(e: rtscope_bench::taskset::TasksetError) -> VerbError {
        match e {
            rtscope_bench::taskset::TasksetError::Invalid(m) => VerbError::BadInput(m),
            e => VerbError::failed(e),
        }
    }
}

impl From<rtscope_bench::common::BenchError> for VerbError {
    fn from(e: rtscope_bench::common::BenchError) -> VerbError {
        match e {
            rtscope_bench::common::BenchError::Invalid(m) => VerbError::BadInput(m),
            e => VerbError::failed(e),
        }
    }
}
