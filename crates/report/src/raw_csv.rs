//! `--raw`: every sample of a run as CSV (`cpu,tid,cycle,expected_ns,latency_ns`), written as
//! the run goes (constant memory) and renamed into place at the end.

use rtscope_model::RawSample;
use std::io::Write;
use std::path::{Path, PathBuf};

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
