//! The files of a run. Every file is written whole or not at all: into a temporary file created
//! exclusively (O_EXCL, an unpredictable name, so a link planted in a shared directory is never
//! followed) in the target's directory, synced, then renamed over the target.

use crate::input::VerbError;
use rtscope_model::RunRecord;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Which files a run writes besides the store.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// The RunRecord (rtscope JSON schema).
    pub json: Option<PathBuf>,
    /// The histogram in cyclictest's `-h` text format.
    pub histogram_file: Option<PathBuf>,
    /// rt-tests' JSON layout.
    pub cyclictest_json: Option<PathBuf>,
    /// `rtscope run`'s directory: run.json, histogram.txt, summary.txt, report.html.
    pub run_dir: Option<PathBuf>,
}

/// Write `data` to `p` atomically (see the module comment). Records and reports hold command
/// lines and host details: private (0600).
pub fn write_atomic(p: &Path, data: &[u8]) -> std::io::Result<()> {
    rtscope_files::write_atomic(p, data, rtscope_files::PRIVATE_FILE)
}

/// Write every requested file; returns what was written, and the first failure (after trying
/// every file, so one bad path does not cost the others).
pub fn write(o: &Outputs, rec: &RunRecord) -> (Vec<String>, Vec<String>) {
    use rtscope_report::export::{
        CyclictestHistogram, CyclictestJson, ExportOptions, Exporter, Html, Summary,
    };
    let json = rtscope_report::json::run_record(rec);
    if o.json.as_deref() == Some(Path::new("-")) {
        // `--json -`: the record is the command's stdout.
        let mut so = std::io::stdout().lock();
        let _ = so
            .write_all(json.as_bytes())
            .and_then(|_| so.write_all(b"\n"))
            .and_then(|_| so.flush());
    }
    // The record as `--json` writes it (no final newline), the rest by the same writers as
    // `rtscope export --format …`.
    let record: &dyn Exporter = &RecordJson(&json);
    let mut files: Vec<(&str, PathBuf, &dyn Exporter)> = Vec::new();
    if let Some(p) = o.json.as_ref().filter(|p| *p != Path::new("-")) {
        files.push(("run record JSON", p.clone(), record));
    }
    if let Some(p) = &o.histogram_file {
        files.push(("cyclictest histogram", p.clone(), &CyclictestHistogram));
    }
    if let Some(p) = &o.cyclictest_json {
        files.push(("cyclictest JSON", p.clone(), &CyclictestJson));
    }
    if let Some(dir) = &o.run_dir {
        files.push(("run record JSON", dir.join("run.json"), record));
        files.push((
            "cyclictest histogram",
            dir.join("histogram.txt"),
            &CyclictestHistogram,
        ));
        files.push(("summary", dir.join("summary.txt"), &Summary));
        files.push(("HTML report", dir.join("report.html"), &Html));
    }
    let opts = ExportOptions {
        generated_at: crate::record::rfc3339(std::time::SystemTime::now()),
    };
    let mut written = Vec::new();
    let mut failed = Vec::new();
    for (what, p, e) in files {
        match e
            .export(rec, &opts)
            .map_err(|e| e.to_string())
            .and_then(|data| write_atomic(&p, &data).map_err(|e| e.to_string()))
        {
            Ok(()) => written.push(format!("{what}: {}", p.display())),
            Err(e) => failed.push(format!("{what} {}: {e}", p.display())),
        }
    }
    (written, failed)
}

/// The record's JSON, serialised once for every file that holds it.
struct RecordJson<'a>(&'a str);

impl rtscope_report::export::Exporter for RecordJson<'_> {
    fn name(&self) -> &'static str {
        "run-record"
    }
    fn extension(&self) -> &'static str {
        "json"
    }
    fn description(&self) -> &'static str {
        "the RunRecord as the JSON output writes it"
    }
    fn export(
        &self,
        _: &RunRecord,
        _: &rtscope_report::export::ExportOptions,
    ) -> Result<Vec<u8>, rtscope_report::export::ExportError> {
        Ok(self.0.as_bytes().to_vec())
    }
}

/// Print to stdout; a closed pipe (`rtscope runs | head`) ends the output quietly.
pub fn print(s: &str) -> Result<(), VerbError> {
    print_bytes(s.as_bytes())
}

/// [`print`] of bytes (an exported file as it would be written).
pub fn print_bytes(b: &[u8]) -> Result<(), VerbError> {
    let mut o = std::io::stdout().lock();
    match o.write_all(b).and_then(|_| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(VerbError::failed),
    }
}

/// [`write_atomic`], its failure naming the file.
pub fn write_file(p: &Path, data: &[u8]) -> Result<(), VerbError> {
    write_atomic(p, data).map_err(|e| VerbError::context(format!("writing {}", p.display()), e))
}

/// `--json FILE|-`, the same in every verb: the verb's JSON document to FILE (written
/// atomically) or, with `-`, to stdout (then the human text is not printed: stdout stays JSON).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonDest(pub Option<PathBuf>);

impl JsonDest {
    pub fn to_stdout(&self) -> bool {
        self.0.as_deref() == Some(Path::new("-"))
    }
    /// Check the destination before any work starts.
    pub fn check(&self) -> Result<(), VerbError> {
        match &self.0 {
            Some(p) if p != Path::new("-") => {
                crate::input::output(crate::input::Field::Json.token(), p)
            }
            _ => Ok(()),
        }
    }
    /// Write `text` (a JSON document; a final newline is added on stdout).
    pub fn write(&self, text: &str) -> Result<(), VerbError> {
        match &self.0 {
            None => Ok(()),
            Some(p) if p == Path::new("-") => print(&format!("{}\n", text.trim_end())),
            Some(p) => write_file(p, text.as_bytes()),
        }
    }
}

/// Where the RunRecord of a verb goes: `--json FILE|-`, `--db`, `--no-store`, `--tag`, `-q`.
/// Every verb that produces a result stores it by default.
#[derive(Clone, Debug, Default)]
pub struct RecordOutputs {
    pub json: JsonDest,
    pub db: Option<String>,
    pub no_store: bool,
    pub tags: Vec<String>,
    pub quiet: bool,
}

impl RecordOutputs {
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
    /// Before anything starts: the JSON destination, the database's directory, the tags.
    pub fn validate(&self) -> Result<BTreeMap<String, String>, VerbError> {
        self.json.check()?;
        if !self.no_store {
            crate::input::db_writable(self.db.as_deref())?;
        }
        crate::input::tags(crate::input::Field::Tags.token(), &self.tags)
    }
    /// Store first (or keep the record in the fallback directory when the database cannot take
    /// it), then write `--json`: a failed write never loses the measurement.
    pub fn emit(&self, rec: &RunRecord) -> Result<(), VerbError> {
        let mut kept = false;
        if !self.no_store {
            match rtscope_store::save_or_fallback(self.db.as_deref(), rec) {
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
        if let Some(p) = &self.json.0 {
            let s = serde_json::to_string_pretty(rec)
                .map_err(|e| VerbError::context("serialising the RunRecord", e))?;
            if let Err(e) = self.json.write(&s) {
                if !kept {
                    if let Ok(f) = rtscope_store::fallback::keep_in_fallback(rec) {
                        return Err(VerbError::context(
                            format!("the record was kept in {}", f.display()),
                            e,
                        ));
                    }
                }
                return Err(e);
            }
            if !self.json.to_stdout() {
                eprintln!("rtscope: wrote {}", p.display());
            }
        }
        Ok(())
    }
}

/// Say where a measured run went: the database, or the fallback file and the command that
/// imports it.
pub fn print_saved(saved: Option<&rtscope_store::Saved>) {
    match saved {
        None => {}
        Some(rtscope_store::Saved::Stored { id, location }) => {
            // Status on stderr: stdout carries the result (`--json -` keeps it pure JSON).
            eprintln!("stored run {id} in {location}");
        }
        Some(rtscope_store::Saved::Fallback {
            path,
            reason,
            import_command,
        }) => {
            eprintln!(
                "rtscope: warning: the results database did not take the run ({reason}); kept in {}; store it later with: {import_command}",
                path.display()
            );
        }
    }
}

/// Print what a measured run produced: the summary (unless `--json -`), the files, where it
/// was stored; a failed output file is an error (exit 1) after everything else was done.
pub fn report_outcome(o: &crate::Outcome, summary: bool) -> Result<(), VerbError> {
    if summary {
        print!("{}", rtscope_report::text::summary(&o.record));
    }
    for w in &o.written {
        eprintln!("wrote {w}");
    }
    print_saved(o.stored.as_ref());
    if !o.failed_outputs.is_empty() {
        let stored = match &o.stored {
            Some(rtscope_store::Saved::Stored { location, .. }) => {
                format!(" (the run itself is stored in {location})")
            }
            Some(rtscope_store::Saved::Fallback { path, .. }) => {
                format!(" (the run itself is kept in {})", path.display())
            }
            None => String::new(),
        };
        return Err(VerbError::failed(format!(
            "could not write {}{stored}",
            o.failed_outputs.join("; ")
        )));
    }
    Ok(())
}

pub use rtscope_report::raw_csv::RawCsv;
