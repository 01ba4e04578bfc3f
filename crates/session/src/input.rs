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

/// The values of a measurement request ([`crate::resolve::MeasureRequest`]) an error or a
/// warning can be about. A message refers to a field by its token (`⟨interval⟩`, the field's
/// [`Display`](std::fmt::Display)); whoever shows the message to a person renders the tokens in
/// that person's terms ([`Field::render`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Cpus,
    Interval,
    Distance,
    Aligned,
    Policy,
    Priority,
    Nice,
    DlRuntime,
    DlDeadline,
    DlPeriod,
    Duration,
    Loops,
    Timer,
    Clock,
    BreakAbove,
    RecordAbove,
    Worst,
    LinearMax,
    Json,
    HistogramFile,
    CyclictestJson,
    Raw,
    Tags,
    Load,
    LoadCpus,
    Wss,
    Trace,
    TraceFile,
    TraceFileMode,
    TraceKeep,
    Checkpoint,
    NoStore,
    Bound,
    BoundPoints,
    Preset,
    AllowUnprivileged,
    OutDir,
    Housekeeping,
    UntilStable,
    StableTolerance,
    StableWindow,
    MaxDuration,
    /// `watch`'s target: processes by id, by name, or a command to start.
    WatchPid,
    WatchComm,
    WatchCommand,
    WatchCgroup,
    /// `watch --on-threshold`: the command run when an activation exceeds `--threshold`.
    WatchOnThreshold,
}

impl Field {
    pub const ALL: [Field; 47] = [
        Field::Cpus,
        Field::Interval,
        Field::Distance,
        Field::Aligned,
        Field::Policy,
        Field::Priority,
        Field::Nice,
        Field::DlRuntime,
        Field::DlDeadline,
        Field::DlPeriod,
        Field::Duration,
        Field::Loops,
        Field::Timer,
        Field::Clock,
        Field::BreakAbove,
        Field::RecordAbove,
        Field::Worst,
        Field::LinearMax,
        Field::Json,
        Field::HistogramFile,
        Field::CyclictestJson,
        Field::Raw,
        Field::Tags,
        Field::Load,
        Field::LoadCpus,
        Field::Wss,
        Field::Trace,
        Field::TraceFile,
        Field::TraceFileMode,
        Field::TraceKeep,
        Field::Checkpoint,
        Field::NoStore,
        Field::Bound,
        Field::BoundPoints,
        Field::Preset,
        Field::AllowUnprivileged,
        Field::OutDir,
        Field::Housekeeping,
        Field::UntilStable,
        Field::StableTolerance,
        Field::StableWindow,
        Field::MaxDuration,
        Field::WatchPid,
        Field::WatchComm,
        Field::WatchCommand,
        Field::WatchCgroup,
        Field::WatchOnThreshold,
    ];

    /// The field's name in the request (snake case).
    pub fn key(self) -> &'static str {
        match self {
            Field::Cpus => "cpus",
            Field::Interval => "interval",
            Field::Distance => "distance",
            Field::Aligned => "aligned",
            Field::Policy => "policy",
            Field::Priority => "priority",
            Field::Nice => "nice",
            Field::DlRuntime => "dl_runtime",
            Field::DlDeadline => "dl_deadline",
            Field::DlPeriod => "dl_period",
            Field::Duration => "duration",
            Field::Loops => "loops",
            Field::Timer => "timer",
            Field::Clock => "clock",
            Field::BreakAbove => "break_above",
            Field::RecordAbove => "record_above",
            Field::Worst => "worst",
            Field::LinearMax => "linear_max",
            Field::Json => "json",
            Field::HistogramFile => "histogram_file",
            Field::CyclictestJson => "cyclictest_json",
            Field::Raw => "raw",
            Field::Tags => "tags",
            Field::Load => "load",
            Field::LoadCpus => "load_cpus",
            Field::Wss => "wss",
            Field::Trace => "trace",
            Field::TraceFile => "trace_file",
            Field::TraceFileMode => "trace_file_mode",
            Field::TraceKeep => "trace_keep",
            Field::Checkpoint => "checkpoint",
            Field::NoStore => "no_store",
            Field::Bound => "bound",
            Field::BoundPoints => "bound_points",
            Field::Preset => "preset",
            Field::AllowUnprivileged => "allow_unprivileged",
            Field::OutDir => "out_dir",
            Field::Housekeeping => "housekeeping",
            Field::UntilStable => "until_stable",
            Field::StableTolerance => "stable_tolerance",
            Field::StableWindow => "stable_window",
            Field::MaxDuration => "max_duration",
            Field::WatchPid => "pid",
            Field::WatchComm => "comm",
            Field::WatchCommand => "command",
            Field::WatchCgroup => "cgroup",
            Field::WatchOnThreshold => "on_threshold",
        }
    }

    /// Every field token in `text` replaced by `name(field)`.
    pub fn render(text: &str, name: impl Fn(Field) -> &'static str) -> String {
        if !text.contains('⟨') {
            return text.to_string();
        }
        Field::ALL
            .iter()
            .fold(text.to_string(), |t, f| t.replace(&f.to_string(), name(*f)))
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "⟨{}⟩", self.key())
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
    if v < lo || v > hi {
        return Err(VerbError::Field {
            field,
            msg: format!("{v} is out of range ({lo}..={hi}{unit})"),
        });
    }
    Ok(v)
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

/// The one CPU a benchmark pins every thread to: `--cpu`, an online CPU, or
/// `default` (the bench crate's choice, the last online CPU).
pub fn one_cpu(spec: Option<&str>, default: impl FnOnce() -> u32) -> Result<u32, VerbError> {
    match spec {
        None => Ok(default()),
        Some(s) => match cpus("--cpu", Some(s))?.as_slice() {
            [c] => Ok(*c),
            many => Err(bad!(
                "--cpu: this benchmark runs on one CPU, got {} ({s}); give one, e.g. --cpu {}",
                many.len(),
                many[many.len() - 1]
            )),
        },
    }
}

pub fn fmt_cpus(c: &[u32]) -> String {
    c.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// `v` within `lo..=hi`; the error names the flag, the value and the range (with its unit).
pub fn range<T: PartialOrd + std::fmt::Display + Copy>(
    flag: &str,
    v: T,
    lo: T,
    hi: T,
    unit: &str,
) -> Result<T, VerbError> {
    if v < lo || v > hi {
        return Err(bad!("{flag}: {v} is out of range ({lo}..={hi}{unit})"));
    }
    Ok(v)
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

/// [`output`] for a directory the work fills (created 0700 if missing).
pub fn output_dir(flag: &str, p: &Path) -> Result<(), VerbError> {
    rtscope_files::check_output_dir(p, Some(OUTPUT_FILE_BYTES))
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
        .map_err(|e| bad!("--db {}: {e}", path.display()))
}

/// An input file read whole (task sets, campaigns, bound inputs): at most
/// `rtscope_files::max_input_bytes()`, UTF-8; any failure is bad input naming the flag.
pub fn read(flag: &str, p: &Path) -> Result<String, VerbError> {
    let bytes = rtscope_files::read_bounded(p, rtscope_files::max_input_bytes(), "an input file")
        .map_err(|e| bad!("{flag} {}: cannot read: {e}", p.display()))?;
    String::from_utf8(bytes).map_err(|e| bad!("{flag} {}: not UTF-8 text: {e}", p.display()))
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

/// A date/time filter: an RFC 3339 prefix whose every field is in its calendar range.
pub fn date(flag: &str, s: Option<&str>) -> Result<(), VerbError> {
    match s {
        Some(d) if !valid_rfc3339_prefix(d) => Err(bad!(
            "{flag}: '{d}' is not an RFC 3339 date/time prefix (e.g. 2026-11-01 or 2026-11-01T10:00:00Z)"
        )),
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

/// The session's rule for each shared value, for the jobs of the bench crate.
pub struct Rules;

impl rtscope_bench::taskset::job::Values for Rules {
    type Error = VerbError;
    fn cpus(&self, flag: &str, spec: Option<&str>) -> Result<Vec<u32>, VerbError> {
        cpus(flag, spec)
    }
    fn duration(&self, flag: &str, s: &str, lo: f64, hi: f64) -> Result<f64, VerbError> {
        duration_in(flag, s, lo, hi)
    }
    fn read(&self, flag: &str, p: &Path) -> Result<String, VerbError> {
        read(flag, p)
    }
    fn output_dir(&self, flag: &str, p: &Path) -> Result<(), VerbError> {
        output_dir(flag, p)
    }
    fn write(&self, p: &Path, data: &[u8]) -> Result<(), VerbError> {
        crate::outputs::write_file(p, data)
    }
    fn require_realtime(&self, verb: &str, why: &str) -> Result<(), VerbError> {
        crate::work::require(verb, crate::privilege::Need::RealTime, why)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("-D", "30s").unwrap(), 30.0);
        assert_eq!(duration("-D", "5m").unwrap(), 300.0);
        assert_eq!(duration("-D", "1h").unwrap(), 3600.0);
        assert_eq!(duration("-D", "250ms").unwrap(), 0.25);
        assert_eq!(duration("-D", "2").unwrap(), 2.0);
        for bad in ["abc", "-5s", "0", "31d", "nan"] {
            let e = duration("-D", bad).unwrap_err();
            assert!(
                e.is_bad_input() && e.to_string().starts_with("-D: "),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn ranges_and_tags() {
        assert_eq!(range("--worst", 5, 0, 10, "").unwrap(), 5);
        assert_eq!(
            range("--interval", 5u64, 10, 20, " us")
                .unwrap_err()
                .to_string(),
            "--interval: 5 is out of range (10..=20 us)"
        );
        let m = tags("--tag", &["kernel=6.18".into(), "a=".into()]).unwrap();
        assert_eq!(m["kernel"], "6.18");
        assert_eq!(
            tags("--tag", &["novalue".into()]).unwrap_err().to_string(),
            "--tag: 'novalue' is not key=value"
        );
        assert!(tags("--tag", &["sp ace=1".into()]).is_err());
    }

    #[test]
    fn cpu_lists_name_the_flag() {
        let online = match rtscope_probe::sys::online_cpus() {
            Ok(o) => o,
            Err(e) => {
                rtscope_testkit::skipped(format_args!("no online CPU list ({e})"));
                return;
            }
        };
        assert_eq!(cpus("--cpus", None).unwrap(), online);
        let e = cpus("--cpus", Some("4095")).unwrap_err().to_string();
        assert!(e.starts_with("--cpus: CPU 4095 is not online"), "{e}");
        let e = cpus("--load-cpus", Some("x")).unwrap_err().to_string();
        assert!(e.starts_with("--load-cpus: ") && e.ends_with("(expected a list like 0,2-3)"));
        let last = *online.last().unwrap();
        assert_eq!(one_cpu(None, || 7).unwrap(), 7);
        assert_eq!(one_cpu(Some(&last.to_string()), || 7).unwrap(), last);
    }

    #[test]
    fn context_reads_as_one_chain() {
        let e = VerbError::context("writing x", std::io::Error::other("disk full"));
        assert_eq!(e.to_string(), "writing x");
        assert_eq!(e.source().map(|s| s.to_string()), Some("disk full".into()));
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
        assert!(date("--since", None).is_ok());
        assert!(date("--until", Some("2026-04-31"))
            .unwrap_err()
            .to_string()
            .starts_with("--until: '2026-04-31' is not an RFC 3339"));
    }
}
