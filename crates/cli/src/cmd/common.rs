//! Shared pieces of the verbs: value parsers that name the flag and its range, signals, atomic
//! file writes, timestamps and run ids.

use crate::usage;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Parse `30s`, `5m`, `1h`, `1d`, `250ms`, or plain seconds. Range 1 ms ..= 30 days.
pub fn parse_duration(flag: &str, s: &str) -> Result<f64> {
    parse_duration_in(flag, s, 0.001, 30.0 * 86400.0)
}

/// A duration flag in the one grammar (`rtscope_model::duration`) and its range, seconds.
pub fn parse_duration_in(flag: &str, s: &str, lo: f64, hi: f64) -> Result<f64> {
    rtscope_model::duration::parse_secs_in(s, lo, hi).map_err(|e| usage!("{flag}: {e}"))
}

/// Resolve a CPU list against the online CPUs; every listed CPU must be online.
pub fn resolve_cpus(flag: &str, spec: Option<&str>) -> Result<Vec<u32>> {
    let online =
        rtscope_probe::sys::online_cpus().context("reading /sys/devices/system/cpu/online")?;
    let Some(spec) = spec else {
        return Ok(online);
    };
    let cpus = rtscope_probe::sys::parse_cpu_list(spec)
        .map_err(|e| usage!("{flag}: {e} (expected a list like 0,2-3)"))?;
    if cpus.is_empty() {
        return Err(usage!("{flag}: empty CPU list"));
    }
    for c in &cpus {
        if !online.contains(c) {
            return Err(usage!(
                "{flag}: CPU {c} is not online (online CPUs: {})",
                fmt_cpus(&online)
            ));
        }
    }
    Ok(cpus)
}

/// The one CPU a benchmark pins every thread to: `--cpus` with exactly one online CPU, or
/// `default` (the bench crate's choice, the last online CPU).
pub fn one_cpu(spec: Option<&str>, default: impl FnOnce() -> u32) -> Result<u32> {
    match spec {
        None => Ok(default()),
        Some(s) => match resolve_cpus("--cpus", Some(s))?.as_slice() {
            [c] => Ok(*c),
            many => Err(usage!(
                "--cpus: this benchmark runs on one CPU, got {} ({s}); give one, e.g. --cpus {}",
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

pub fn check_range<T: PartialOrd + std::fmt::Display + Copy>(
    flag: &str,
    v: T,
    lo: T,
    hi: T,
    unit: &str,
) -> Result<T> {
    if v < lo || v > hi {
        return Err(usage!("{flag}: {v} is out of range ({lo}..={hi}{unit})"));
    }
    Ok(v)
}

/// An output file can be written (its directory exists and takes a new file, it is not on a
/// kernel pseudo file system) before anything starts.
pub fn check_output(flag: &str, p: &Path) -> Result<()> {
    rtscope_files::check_output(p, Some(OUTPUT_FILE_BYTES))
        .map_err(|e| usage!("{flag} {}: {e}", p.display()))
}

/// Room an output file (a record, a report, a table) needs: records keep bounded summaries,
/// well under this.
const OUTPUT_FILE_BYTES: u64 = 1 << 20;

/// [`check_output`] for a directory the work fills (created 0700 if missing).
pub fn check_output_dir(flag: &str, p: &Path) -> Result<()> {
    rtscope_files::check_output_dir(p, Some(OUTPUT_FILE_BYTES))
        .map_err(|e| usage!("{flag} {}: {e}", p.display()))
}

/// clap value parser for every `--db`: an empty value or an unknown scheme is refused before
/// anything runs (`rtscope_store::check_db_url`).
pub fn db_url(s: &str) -> Result<String, String> {
    rtscope_store::check_db_url(s).map(|_| s.to_string())
}

/// What SIGKILLed rtscope processes left behind (a kill skips every clean-up): their cpusets,
/// the root cpuset's `sched_load_balance` and the DEADLINE bandwidth of their killed threads
/// (`rtscope_bench::taskset::cpuset::remove_stale`), their tracefs instances. Repaired at the
/// start of every verb that runs work; each line says what was repaired, is printed, and goes
/// into the run's warnings. Unprivileged, nothing can be repaired and nothing is tried.
pub fn recover_leftovers() -> Vec<rtscope_model::Warning> {
    if !rtscope_session::privilege::Privileges::current().root {
        return Vec::new();
    }
    let mut notes = rtscope_bench::taskset::cpuset::remove_stale();
    notes.extend(rtscope_trace::remove_stale_instances());
    for n in &notes {
        eprintln!("rtscope: left by a killed run: {n}");
    }
    notes
        .into_iter()
        .map(|n| {
            rtscope_model::Warning::new(
                rtscope_model::WarningCode::System,
                format!("left by a killed run: {n}"),
            )
        })
        .collect()
}

/// An input file read whole (task sets, campaigns, bound inputs): at most
/// `rtscope_files::max_input_bytes()`, UTF-8; any failure is bad input naming the flag.
pub fn read_input(flag: &str, p: &Path) -> Result<String> {
    let bytes = rtscope_files::read_bounded(p, rtscope_files::max_input_bytes(), "an input file")
        .map_err(|e| usage!("{flag} {}: cannot read: {e}", p.display()))?;
    String::from_utf8(bytes).map_err(|e| usage!("{flag} {}: not UTF-8 text: {e}", p.display()))
}

/// Before a storing verb starts: the SQLite database's directory takes a file (it is created
/// 0700 if missing) and is not a kernel pseudo file system. A PostgreSQL URL is checked when it
/// is used (an unreachable server gives a fallback file, not a lost run).
pub fn check_db_writable(db: Option<&str>) -> Result<()> {
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
        .map_err(|e| usage!("--db {}: {e}", path.display()))
}

/// The session's one privilege rule; a refusal is a failure (exit 1), not bad input.
pub fn require(verb: &str, need: rtscope_session::privilege::Need, why: &str) -> Result<()> {
    rtscope_session::privilege::require(verb, need, why).map_err(anyhow::Error::msg)
}

/// This process's command line as it may be stored and shown: passwords masked
/// (`rtscope_model::secrets`).
pub fn cmdline() -> Vec<String> {
    rtscope_model::secrets::redact_argv(&std::env::args().collect::<Vec<_>>())
}

/// Write a file atomically: an exclusively created temporary with an unpredictable name beside
/// it, then a rename (a reader never sees half a file, a planted link is never followed).
pub fn write_atomic(p: &Path, data: &[u8]) -> Result<()> {
    rtscope_session::outputs::write_atomic(p, data)
        .with_context(|| format!("writing {}", p.display()))
}

/// Stop on SIGINT/SIGTERM/SIGHUP (and snapshot on SIGUSR2): the session crate's one set of
/// handlers, for the verbs that run work outside a measurement session.
pub fn install_signal_handlers() {
    rtscope_session::signals::install_handlers();
}

pub fn stop_requested() -> bool {
    rtscope_session::signals::stop_requested()
}

/// RFC 3339 UTC timestamp of a SystemTime.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    rtscope_session::record::rfc3339(t)
}

/// A run id: UTC time plus 32 random bits, sortable and unique across machines.
pub fn new_run_id() -> String {
    rtscope_session::record::new_run_id()
}

/// `key=value` tags.
pub fn parse_tags(
    flag: &str,
    tags: &[String],
) -> Result<std::collections::BTreeMap<String, String>> {
    let mut m = std::collections::BTreeMap::new();
    for t in tags {
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| usage!("{flag}: '{t}' is not key=value"))?;
        if k.is_empty()
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(usage!("{flag}: key '{k}' must be [A-Za-z0-9_.-]+"));
        }
        m.insert(k.to_string(), v.to_string());
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("-D", "30s").unwrap(), 30.0);
        assert_eq!(parse_duration("-D", "5m").unwrap(), 300.0);
        assert_eq!(parse_duration("-D", "1h").unwrap(), 3600.0);
        assert_eq!(parse_duration("-D", "250ms").unwrap(), 0.25);
        assert_eq!(parse_duration("-D", "2").unwrap(), 2.0);
        assert!(parse_duration("-D", "abc").is_err());
        assert!(parse_duration("-D", "-5s").is_err());
        assert!(parse_duration("-D", "0").is_err());
        assert!(parse_duration("-D", "31d").is_err());
        assert!(parse_duration("-D", "nan").is_err());
    }

    #[test]
    fn timestamps() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(std::time::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let id = new_run_id();
        assert_eq!(id.len(), 12 + 1 + 8);
    }

    #[test]
    fn tags() {
        let m = parse_tags("--tag", &["kernel=6.18".into(), "a=".into()]).unwrap();
        assert_eq!(m["kernel"], "6.18");
        assert!(parse_tags("--tag", &["novalue".into()]).is_err());
        assert!(parse_tags("--tag", &["sp ace=1".into()]).is_err());
    }
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
    pub fn to_stdout(&self) -> bool {
        self.path.as_deref() == Some(Path::new("-"))
    }
    /// Check the destination before any work starts.
    pub fn check(&self) -> Result<()> {
        match &self.path {
            Some(p) if p != Path::new("-") => check_output("--json", p),
            _ => Ok(()),
        }
    }
    /// Write `text` (a JSON document; a final newline is added on stdout).
    pub fn write(&self, text: &str) -> Result<()> {
        match &self.path {
            None => Ok(()),
            Some(p) if p == Path::new("-") => super::db::out(&format!("{}\n", text.trim_end())),
            Some(p) => write_atomic(p, text.as_bytes()),
        }
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
    #[arg(long, value_parser = crate::cmd::common::db_url, value_name = "PATH|URL")]
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
    /// Whether the human text goes to stdout (not with `--json -`).
    pub fn text(&self) -> bool {
        !self.json.to_stdout()
    }
    /// A progress line on stderr, unless `-q`.
    pub fn progress(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}

impl OutArgs {
    pub fn validate(&self) -> Result<std::collections::BTreeMap<String, String>> {
        self.json.check()?;
        if !self.no_store {
            super::common::check_db_writable(self.db.as_deref())?;
        }
        parse_tags("--tag", &self.tags)
    }
}

/// Write --json and store (--db/--store) as asked.
/// Store first (or keep the record in the fallback directory when the database cannot take it),
/// then the file: a failed write never loses the measurement.
pub fn emit(out: &OutArgs, rec: &rtscope_model::RunRecord) -> Result<()> {
    let mut kept = false;
    if !out.no_store {
        match rtscope_store::save_or_fallback(out.db.as_deref(), rec) {
            Ok(rtscope_store::Saved::Stored { id, location }) => {
                eprintln!("rtscope: stored run {id} in {location}");
                kept = true;
            }
            Ok(rtscope_store::Saved::Fallback {
                path,
                reason,
                import_command,
            }) => {
                eprintln!(
                    "rtscope: not stored ({reason}); the record is in {} — store it later with: {import_command}",
                    path.display()
                );
                kept = true;
            }
            Err(e) => eprintln!("rtscope: the run could not be stored: {e}"),
        }
    }
    if let Some(p) = &out.json.path {
        let s = serde_json::to_string_pretty(rec).context("serialising the RunRecord")?;
        if let Err(e) = out.json.write(&s) {
            if !kept {
                if let Ok(f) = rtscope_store::fallback::keep_in_fallback(rec) {
                    return Err(e.context(format!("the record was kept in {}", f.display())));
                }
            }
            return Err(e);
        }
        if !out.json.to_stdout() {
            eprintln!("rtscope: wrote {}", p.display());
        }
    }
    Ok(())
}

/// Map a bench error: bad input → exit 2, the rest → exit 1.
pub fn bench_err(e: rtscope_bench::common::BenchError) -> anyhow::Error {
    match e {
        rtscope_bench::common::BenchError::Invalid(m) => usage!("{m}"),
        e => anyhow::Error::new(e),
    }
}

pub struct RecordInfo<'a> {
    pub verb: &'a str,
    pub cpu: u32,
    pub priority: u32,
    pub started: std::time::SystemTime,
    pub wall_s: f64,
    pub interrupted: bool,
    pub warnings: Vec<rtscope_model::Warning>,
    pub tags: std::collections::BTreeMap<String, String>,
}

/// A RunRecord carrying a bench result (no probe threads: `threads` is empty).
pub fn bench_record(
    info: RecordInfo,
    bench: rtscope_model::bench::BenchResult,
) -> rtscope_model::RunRecord {
    rtscope_session::record::work_record(rtscope_session::record::WorkInfo {
        verb: info.verb.into(),
        cmdline: cmdline(),
        cpus: vec![info.cpu],
        policy: rtscope_model::Policy::Fifo,
        priority: info.priority,
        duration_s: None,
        started: info.started,
        wall_s: info.wall_s,
        interrupted: info.interrupted,
        hygiene: rtscope_model::Hygiene {
            mlockall: true,
            prefaulted_stack_bytes: rtscope_bench::common::rt::PREFAULT_STACK_BYTES as u64,
            notes: vec![
                "benchmark threads pinned, SCHED_FIFO, memory locked; RT throttling left on (drivers rest 10 ms every 100 ms)".into(),
            ],
            ..Default::default()
        },
        overruns: 0,
        warnings: info.warnings,
        tags: info.tags,
        loads: Vec::new(),
        bench: Some(bench),
    })
}
