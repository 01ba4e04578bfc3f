//! Nothing measured is lost: when the database cannot take a run (PostgreSQL unreachable, the
//! SQLite file locked for too long, foreign or corrupt), the record is written to a local JSON
//! file and the caller prints the command that imports it later.

use crate::{redact_url, Field, Store, StoreError};
use rtscope_model::RunRecord;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

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
        /// The command that stores the file once the database is back.
        import_command: ImportCommand,
    },
}

/// `rtscope import` of a fallback file: the database it was meant for (when one was named) and
/// the file. Shown, it is a shell command whose database option is named as the binary names
/// the store's [`Field::Db`] ([`set_field_names`]; its token `⟨store.db⟩` until then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportCommand {
    /// The database's URL or path, its password elided.
    pub db: Option<String>,
    pub file: PathBuf,
}

impl ImportCommand {
    /// The shell command, the database given with `db_option`.
    pub fn render(&self, db_option: impl std::fmt::Display) -> String {
        let db = match &self.db {
            Some(u) => format!(" {db_option} '{u}'"),
            None => String::new(),
        };
        format!("rtscope import{db} '{}'", self.file.display())
    }
}

impl std::fmt::Display for ImportCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match FIELD_NAMES.get() {
            Some(name) => f.write_str(&self.render(name(Field::Db))),
            None => f.write_str(&self.render(Field::Db)),
        }
    }
}

/// How the binary names the store's fields in what the lifecycle prints for the user to run.
static FIELD_NAMES: OnceLock<fn(Field) -> &'static str> = OnceLock::new();

/// Set once by the binary before any work (the cli: its flags), as it passes the command line:
/// the lifecycle prints a fallback's [`ImportCommand`] deep inside every verb that stores.
pub fn set_field_names(names: fn(Field) -> &'static str) {
    let _ = FIELD_NAMES.set(names);
}

/// The environment variable naming the fallback directory (non-empty); else
/// `$XDG_DATA_HOME/rtscope/fallback`. A campaign worker gives each cell's measurement its own.
pub const FALLBACK_DIR_ENV: &str = "RTSCOPE_FALLBACK_DIR";

/// Where records the database did not take are kept: `$RTSCOPE_FALLBACK_DIR` when set and not
/// empty, else `$XDG_DATA_HOME/rtscope/fallback` (`~/.local/share/rtscope/fallback`).
pub fn fallback_dir() -> PathBuf {
    fallback_dir_from(std::env::var_os(FALLBACK_DIR_ENV), crate::data_dir)
}

fn fallback_dir_from(var: Option<std::ffi::OsString>, data_dir: fn() -> PathBuf) -> PathBuf {
    match var.filter(|x| !x.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => data_dir().join("fallback"),
    }
}

/// A campaign cell's own fallback directory under `root` (the worker's [`fallback_dir`]):
/// `campaign/<campaign>/<cell>`, both names reduced to `[A-Za-z0-9_-]`, so a name can neither
/// climb out of `root` nor reach another campaign's directory through a separator.
pub fn campaign_spool_dir(root: &Path, campaign: &str, cell: &str) -> PathBuf {
    root.join("campaign")
        .join(file_name_part(campaign))
        .join(file_name_part(cell))
}

/// `s` with every character but `[A-Za-z0-9_-]` replaced by `_` (never empty).
fn file_name_part(s: &str) -> String {
    let safe: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        "_".into()
    } else {
        safe
    }
}

/// Store `rec`, or keep it in `<fallback_dir()>/<id>.json`.
pub fn save_or_fallback(url: Option<&str>, rec: &RunRecord) -> Result<Saved, StoreError> {
    save_or_fallback_in(url, rec, &fallback_dir())
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
    replace_or_fallback_in(url, rec, &fallback_dir())
}

/// [`replace_or_fallback`] keeping the record in `fallback_dir` (a campaign cell's own).
pub fn replace_or_fallback_in(
    url: Option<&str>,
    rec: &RunRecord,
    fallback_dir: &Path,
) -> Result<Saved, StoreError> {
    save_in(url, rec, fallback_dir, true)
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
    Ok(Saved::Fallback {
        import_command: ImportCommand {
            db: url.map(redact_url),
            file: path.clone(),
        },
        path,
        reason: err.to_string(),
    })
}

/// Keep a record in `<fallback_dir()>/<id>.json` (a run whose output files could not be written
/// and that was not stored): returns the path.
pub fn keep_in_fallback(rec: &RunRecord) -> Result<PathBuf, StoreError> {
    write_fallback(rec, &fallback_dir())
}

fn write_fallback(rec: &RunRecord, dir: &Path) -> Result<PathBuf, StoreError> {
    let io = |path: &Path| {
        let p = path.display().to_string();
        move |source| StoreError::Io { path: p, source }
    };
    rtscope_files::create_private_dir(dir).map_err(io(dir))?;
    let path = dir.join(format!("{}.json", file_name_part(&rec.id)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_names_the_directory_unless_empty() {
        let data = || PathBuf::from("/d/rtscope");
        assert_eq!(
            fallback_dir_from(Some("/spool/x".into()), data),
            Path::new("/spool/x")
        );
        assert_eq!(
            fallback_dir_from(Some("".into()), data),
            Path::new("/d/rtscope/fallback")
        );
        assert_eq!(
            fallback_dir_from(None, data),
            Path::new("/d/rtscope/fallback")
        );
    }

    #[test]
    fn a_cell_directory_stays_under_its_root() {
        let root = Path::new("/f");
        assert_eq!(
            campaign_spool_dir(root, "qualify", "trace.full-fifo-idle-i1000-10s-r1"),
            Path::new("/f/campaign/qualify/trace_full-fifo-idle-i1000-10s-r1")
        );
        assert_eq!(
            campaign_spool_dir(root, "../..", "a/../../b"),
            Path::new("/f/campaign/_____/a_______b")
        );
        assert_eq!(
            campaign_spool_dir(root, "", "é"),
            Path::new("/f/campaign/_/_")
        );
    }

    /// The library names the database's field, never a flag, until the binary names it (the
    /// cli's flag: crates/cli/tests/unit_fields.rs).
    #[test]
    fn the_import_command_names_the_database_by_its_field() {
        let c = ImportCommand {
            db: Some("postgres://u:***@h/r".into()),
            file: "/f/x.json".into(),
        };
        assert_eq!(
            c.to_string(),
            "rtscope import ⟨store.db⟩ 'postgres://u:***@h/r' '/f/x.json'"
        );
        assert_eq!(
            c.render("-d"),
            "rtscope import -d 'postgres://u:***@h/r' '/f/x.json'"
        );
        let c = ImportCommand { db: None, ..c };
        assert_eq!(c.to_string(), "rtscope import '/f/x.json'");
    }
}
