//! The files of a run. Every file is written whole or not at all: into a temporary file created
//! exclusively (O_EXCL, an unpredictable name, so a link planted in a shared directory is never
//! followed) in the target's directory, synced, then renamed over the target.

use rtscope_model::{RawSample, RunRecord};
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
    let mut written = Vec::new();
    let mut failed = Vec::new();
    let mut put = |what: &str, p: &Path, data: &[u8]| match write_atomic(p, data) {
        Ok(()) => written.push(format!("{what}: {}", p.display())),
        Err(e) => failed.push(format!("{what} {}: {e}", p.display())),
    };
    let json = rtscope_report::json::run_record(rec);
    let hist = || {
        let ct = rtscope_report::cyclictest::from_record(rec, rec.config.linear_max_us);
        rtscope_report::cyclictest::write_histogram(&ct)
    };
    if let Some(p) = &o.json {
        if p == Path::new("-") {
            // `--json -`: the record is the command's stdout.
            let mut so = std::io::stdout().lock();
            let _ = so
                .write_all(json.as_bytes())
                .and_then(|_| so.write_all(b"\n"))
                .and_then(|_| so.flush());
        } else {
            put("run record JSON", p, json.as_bytes());
        }
    }
    if let Some(p) = &o.histogram_file {
        put("cyclictest histogram", p, hist().as_bytes());
    }
    if let Some(p) = &o.cyclictest_json {
        let ct = rtscope_report::cyclictest::from_record(rec, rec.config.linear_max_us);
        put(
            "cyclictest JSON",
            p,
            rtscope_report::cyclictest::write_json(&ct).as_bytes(),
        );
    }
    if let Some(dir) = &o.run_dir {
        put("run record JSON", &dir.join("run.json"), json.as_bytes());
        put(
            "cyclictest histogram",
            &dir.join("histogram.txt"),
            hist().as_bytes(),
        );
        let summary = rtscope_report::text::summary(rec);
        put("summary", &dir.join("summary.txt"), summary.as_bytes());
        let report = rtscope_report::html::build(
            std::slice::from_ref(rec),
            &rtscope_report::html::ReportOptions {
                title: format!("rtscope run {}", rec.id),
                generated_at: crate::record::rfc3339(std::time::SystemTime::now()),
                command: rec.config.cmdline.join(" "),
            },
        );
        put(
            "HTML report",
            &dir.join("report.html"),
            report.html.as_bytes(),
        );
    }
    (written, failed)
}

/// `--raw`: every sample as CSV, written as the run goes (constant memory), renamed into place
/// at the end.
pub struct RawCsv {
    // The shared atomic writer: renamed into place by `finish`, removed if the run fails.
    out: Option<std::io::BufWriter<rtscope_files::AtomicFile>>,
    rows: u64,
}

impl RawCsv {
    pub fn create(target: &Path) -> std::io::Result<RawCsv> {
        let f = rtscope_files::AtomicFile::create(target, rtscope_files::PRIVATE_FILE)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, f);
        out.write_all(b"cpu,tid,cycle,expected_ns,latency_ns\n")?;
        Ok(RawCsv {
            out: Some(out),
            rows: 0,
        })
    }

    pub fn push(&mut self, samples: &[RawSample]) -> std::io::Result<()> {
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        for r in samples {
            writeln!(
                out,
                "{},{},{},{},{}",
                r.cpu, r.tid, r.cycle, r.expected_ns, r.latency_ns
            )?;
        }
        self.rows += samples.len() as u64;
        Ok(())
    }

    pub fn finish(mut self) -> std::io::Result<(PathBuf, u64)> {
        let out = self
            .out
            .take()
            .ok_or_else(|| std::io::Error::other("raw CSV already finished"))?;
        let path = out.into_inner().map_err(|e| e.into_error())?.persist()?;
        Ok((path, self.rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_leaves_only_the_target() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let target = d.path().join("out.json");
        write_atomic(&target, b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        // Only the target is left: the temporary was renamed.
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn raw_csv_streams_and_renames() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("raw.csv");
        let mut w = RawCsv::create(&target).unwrap();
        w.push(&[RawSample {
            cpu: 1,
            tid: 2,
            cycle: 3,
            expected_ns: 4,
            latency_ns: 5,
        }])
        .unwrap();
        assert!(!target.exists());
        let (_, rows) = w.finish().unwrap();
        assert_eq!(rows, 1);
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "cpu,tid,cycle,expected_ns,latency_ns\n1,2,3,4,5\n"
        );
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
