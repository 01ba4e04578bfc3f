//! Nothing measured is lost: when the database cannot take a run (PostgreSQL unreachable, the
//! SQLite file locked for too long, foreign or corrupt), the record is written to a local JSON
//! file and the caller prints the command that imports it later.

use crate::{redact_url, Store, StoreError};
use rtscope_model::RunRecord;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum Saved {
    Stored {
        id: String,
        location: String,
    },
    Fallback {
        path: PathBuf,
        /// Why the database did not take the run.
        reason: String,
        /// Shell command that stores the file once the database is back.
        import_command: String,
    },
}

/// Store `rec`, or keep it in `$XDG_DATA_HOME/rtscope/fallback/<id>.json`.
pub fn save_or_fallback(url: Option<&str>, rec: &RunRecord) -> Result<Saved, StoreError> {
    save_or_fallback_in(url, rec, &crate::data_dir().join("fallback"))
}

pub fn save_or_fallback_in(
    url: Option<&str>,
    rec: &RunRecord,
    fallback_dir: &Path,
) -> Result<Saved, StoreError> {
    save_in(url, rec, fallback_dir, false)
}

/// [`save_or_fallback`] for a run that may already have a checkpoint stored under its id: the
/// record replaces it.
pub fn replace_or_fallback(url: Option<&str>, rec: &RunRecord) -> Result<Saved, StoreError> {
    save_in(url, rec, &crate::data_dir().join("fallback"), true)
}

fn save_in(
    url: Option<&str>,
    rec: &RunRecord,
    fallback_dir: &Path,
    replace: bool,
) -> Result<Saved, StoreError> {
    let err = match Store::open(url).and_then(|mut s| {
        let id = if replace {
            s.upsert_run(rec)?
        } else {
            s.insert_run(rec)?
        };
        Ok((id, s.location().to_string()))
    }) {
        Ok((id, location)) => return Ok(Saved::Stored { id, location }),
        // A second insert of the same run is a caller bug, not a reason to write a file.
        Err(e @ StoreError::Duplicate(_)) => return Err(e),
        Err(e) => e,
    };
    let path = write_fallback(rec, fallback_dir).map_err(|e| {
        StoreError::Other(format!(
            "{err}; and the fallback file could not be written either: {e}"
        ))
    })?;
    let db = match url {
        Some(u) => format!(" --db '{}'", redact_url(u)),
        None => String::new(),
    };
    Ok(Saved::Fallback {
        import_command: format!("rtscope import{db} '{}'", path.display()),
        path,
        reason: err.to_string(),
    })
}

/// Keep a record in `$XDG_DATA_HOME/rtscope/fallback/<id>.json` (a run whose output files could
/// not be written and that was not stored): returns the path.
pub fn keep_in_fallback(rec: &RunRecord) -> Result<PathBuf, StoreError> {
    write_fallback(rec, &crate::data_dir().join("fallback"))
}

fn write_fallback(rec: &RunRecord, dir: &Path) -> Result<PathBuf, StoreError> {
    let io = |path: &Path| {
        let p = path.display().to_string();
        move |source| StoreError::Io { path: p, source }
    };
    rtscope_files::create_private_dir(dir).map_err(io(dir))?;
    let safe: String = rec
        .id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(format!("{safe}.json"));
    let mut rec = rec.clone();
    rec.cmdline = rtscope_model::secrets::redact_argv(&rec.cmdline);
    let json = serde_json::to_vec_pretty(&rec).map_err(|e| StoreError::Other(e.to_string()))?;
    // Whole or absent, private, never through a planted link.
    rtscope_files::write_atomic(&path, &json, rtscope_files::PRIVATE_FILE).map_err(io(&path))?;
    Ok(path)
}

/// The largest run record JSON read: records keep bounded summaries (histograms, worst-N with
/// their windows), a few MB even for a day-long run.
pub const RECORD_FILE_MAX: u64 = 256 << 20;

/// Read a RunRecord JSON file (a fallback file or `rtscope export --format json` output).
pub fn read_record_file(path: &Path) -> Result<RunRecord, StoreError> {
    let bytes = rtscope_files::read_bounded(path, RECORD_FILE_MAX, "a run record JSON").map_err(
        |source| StoreError::Io {
            path: path.display().to_string(),
            source,
        },
    )?;
    let text = String::from_utf8(bytes).map_err(|e| StoreError::BadRecord {
        id: path.display().to_string(),
        detail: format!("not UTF-8 text: {e}"),
    })?;
    crate::decode_record(&path.display().to_string(), &text)
}
