//! The one way rtscope changes a kernel setting: [`Knob`].
//!
//! A knob is a file under /proc/sys, /sys, tracefs or a cgroup/cpuset hierarchy that holds one
//! value. [`Knob::set`] reads the original value, records `(owner, path, original)` in a journal
//! file, and only then writes the new value; [`Knob::restore`] (or drop) writes the original back
//! and removes the journal entry. A SIGKILL skips both, so the entry stays: the next rtscope run
//! calls [`repair_stale`] in its leftovers step, which writes back every value whose owner is
//! dead, newest first.
//!
//! A change the user asked to keep (`rtscope doctor --fix`) is made the same way and then
//! [`Knob::persist`]ed: its entry moves, in one rename, into the journal's `persistent/`
//! directory, which [`repair_stale`] does not read, and stays there until [`revert_persistent`]
//! writes it back. A SIGKILL between the write and the rename leaves an ordinary stale entry, so
//! a half-applied fix is rolled back by the next run.
//!
//! The journal lives in `/run/rtscope/knobs` (a tmpfs: a reboot empties it, as it resets every
//! knob), or, when /run is not writable, `$TMPDIR/rtscope-knobs`. An owner is a pid and the start
//! time of that pid (/proc/PID/stat field 22), so a recycled pid is not mistaken for a live owner.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, thiserror::Error)]
pub enum KnobError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("the kernel refused {value:?} for {}: {source}", path.display())]
    Write {
        path: PathBuf,
        value: String,
        source: io::Error,
    },
    #[error("cannot write back {value:?} to {}: {source}", path.display())]
    Restore {
        path: PathBuf,
        value: String,
        source: io::Error,
    },
    #[error("cannot record {} in the knob journal {}: {source}", path.display(), journal.display())]
    Journal {
        path: PathBuf,
        journal: PathBuf,
        source: io::Error,
    },
}

/// Where knob journal entries are kept (one file per changed knob).
#[derive(Clone, Debug)]
pub struct Journal {
    dir: PathBuf,
}

impl Journal {
    /// The journal of every rtscope run on this machine (see the module documentation).
    pub fn system() -> Journal {
        let run = Path::new("/run/rtscope/knobs");
        if std::fs::create_dir_all(run).is_ok() && writable(run) {
            return Journal { dir: run.into() };
        }
        Journal {
            dir: std::env::temp_dir().join("rtscope-knobs"),
        }
    }

    /// A journal in `dir` (tests; a lab guest's private tree).
    pub fn at(dir: impl Into<PathBuf>) -> Journal {
        Journal { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn record(&self, e: &Entry) -> io::Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)?;
        let name = format!("{}.{}.knob", e.pid, e.seq);
        let file = self.dir.join(&name);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, e.encode())?;
        std::fs::rename(&tmp, &file)?;
        Ok(file)
    }

    /// Where persistent changes are kept (see the module documentation).
    pub fn persistent_dir(&self) -> PathBuf {
        self.dir.join("persistent")
    }

    fn entries(&self) -> Vec<(PathBuf, Entry)> {
        entries_in(&self.dir)
    }
}

fn entries_in(dir: &Path) -> Vec<(PathBuf, Entry)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, Entry)> = rd
        .flatten()
        .map(|d| d.path())
        .filter(|p| p.extension().is_some_and(|x| x == "knob"))
        .filter_map(|p| {
            let e = Entry::decode(&std::fs::read_to_string(&p).ok()?)?;
            Some((p, e))
        })
        .collect();
    out.sort_by_key(|(_, e)| (e.pid, e.seq));
    out
}

fn writable(dir: &Path) -> bool {
    crate::fs::check_writable_dir(dir).is_ok()
}

/// One journal entry: who changed which file, and what to write back.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    pid: u32,
    /// Start time of `pid` in clock ticks since boot (0 if unknown).
    start: u64,
    seq: u64,
    path: PathBuf,
    original: String,
}

fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c => o.push(c),
        }
    }
    o
}

fn unescape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('n') => o.push('\n'),
                Some('t') => o.push('\t'),
                Some(c) => o.push(c),
                None => {}
            }
        } else {
            o.push(c);
        }
    }
    o
}

impl Entry {
    fn encode(&self) -> String {
        format!(
            "rtscope-knob 1\npid\t{}\nstart\t{}\nseq\t{}\npath\t{}\noriginal\t{}\n",
            self.pid,
            self.start,
            self.seq,
            escape(&self.path.to_string_lossy()),
            escape(&self.original)
        )
    }

    fn decode(text: &str) -> Option<Entry> {
        let mut lines = text.lines();
        if lines.next()? != "rtscope-knob 1" {
            return None;
        }
        let (mut pid, mut start, mut seq, mut path, mut original) = (None, None, None, None, None);
        for l in lines {
            let (k, v) = l.split_once('\t')?;
            match k {
                "pid" => pid = v.parse().ok(),
                "start" => start = v.parse().ok(),
                "seq" => seq = v.parse().ok(),
                "path" => path = Some(PathBuf::from(unescape(v))),
                "original" => original = Some(unescape(v)),
                _ => {}
            }
        }
        Some(Entry {
            pid: pid?,
            start: start?,
            seq: seq?,
            path: path?,
            original: original?,
        })
    }

    /// True while the process that made the change lives (same pid, same start time).
    fn owner_alive(&self) -> bool {
        crate::process::process_running(self.pid as i32)
            && (self.start == 0 || start_time(self.pid) == Some(self.start))
    }
}

/// Start time of `pid` in clock ticks since boot (/proc/PID/stat field 22).
fn start_time(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after `(comm)`: state is field 3, so starttime (22) is the 20th after ')'.
    s.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// A knob's whole value, each read asking for 64 KiB. Some kernel files refuse a read smaller
/// than their whole value (EINVAL) instead of returning part of it: `osnoise/cpus`
/// (kernel/trace/trace_osnoise.c, `osnoise_cpus_read`: `len >= count` is an error, at any file
/// offset). `read_to_string` follows a short first read with one sized to its buffer's spare
/// room: after `0-1\n` (4 bytes, in 8 allocated) it asks for 4, which that file refuses.
fn read_value(r: &mut impl io::Read) -> io::Result<String> {
    let out = read_large(r)?;
    String::from_utf8(out).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// All of `r`, each read asking for 64 KiB (kernel text files that refuse or truncate the small
/// reads `read_to_string` makes: see [`read_value`]).
pub fn read_large(r: &mut impl io::Read) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Write `value` to an existing file (a knob is never created: a missing one is NotFound).
fn write_existing(path: &Path, value: &str) -> io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?;
    f.write_all(value.as_bytes())
}

static SEQ: AtomicU64 = AtomicU64::new(0);

fn next_seq() -> u64 {
    // Nanoseconds since boot keep the order across processes; the counter breaks ties.
    crate::clock::monotonic_ns()
        .saturating_mul(16)
        .saturating_add(SEQ.fetch_add(1, Ordering::Relaxed) % 16)
}

/// A kernel setting changed for the life of this value. Dropping it writes the original back
/// (errors go to stderr); [`Knob::restore`] does the same and returns the error.
#[derive(Debug)]
pub struct Knob {
    path: PathBuf,
    original: String,
    value: String,
    entry: Option<PathBuf>,
    restored: bool,
}

impl Knob {
    /// Read `path`'s value (trimmed), journal it, write `value`.
    pub fn set(path: impl AsRef<Path>, value: &str) -> Result<Knob, KnobError> {
        Self::set_in(&Journal::system(), path, value)
    }

    /// As [`Knob::set`], with the journal in `journal`.
    pub fn set_in(
        journal: &Journal,
        path: impl AsRef<Path>,
        value: &str,
    ) -> Result<Knob, KnobError> {
        let path = path.as_ref();
        let original = std::fs::File::open(path)
            .and_then(|mut f| read_value(&mut f))
            .map_err(|source| KnobError::Read {
                path: path.into(),
                source,
            })?
            .trim()
            .to_string();
        Self::set_with_original_in(journal, path, &original, value)
    }

    /// Write `value` to `path`, restoring `original` later: for files whose read form is not
    /// their write form (e.g. /sys/kernel/debug/sched/preempt reads `none voluntary (full)`).
    pub fn set_with_original(
        path: impl AsRef<Path>,
        original: &str,
        value: &str,
    ) -> Result<Knob, KnobError> {
        Self::set_with_original_in(&Journal::system(), path, original, value)
    }

    pub fn set_with_original_in(
        journal: &Journal,
        path: impl AsRef<Path>,
        original: &str,
        value: &str,
    ) -> Result<Knob, KnobError> {
        let path = path.as_ref();
        let pid = std::process::id();
        let e = Entry {
            pid,
            start: start_time(pid).unwrap_or(0),
            seq: next_seq(),
            path: path.into(),
            original: original.to_string(),
        };
        let entry = journal.record(&e).map_err(|source| KnobError::Journal {
            path: path.into(),
            journal: journal.dir.clone(),
            source,
        })?;
        if let Err(source) = write_existing(path, value) {
            // Nothing was changed: the entry goes too.
            let _ = std::fs::remove_file(&entry);
            return Err(KnobError::Write {
                path: path.into(),
                value: value.to_string(),
                source,
            });
        }
        Ok(Knob {
            path: path.into(),
            original: original.to_string(),
            value: value.to_string(),
            entry: Some(entry),
            restored: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The value before [`Knob::set`].
    pub fn original(&self) -> &str {
        &self.original
    }

    /// The value written.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Write another value, keeping the original to restore.
    pub fn write(&mut self, value: &str) -> Result<(), KnobError> {
        write_existing(&self.path, value).map_err(|source| KnobError::Write {
            path: self.path.clone(),
            value: value.to_string(),
            source,
        })?;
        self.value = value.to_string();
        Ok(())
    }

    /// Write the original value back and drop the journal entry. On error the entry stays, so a
    /// later run tries again. Restoring twice does nothing.
    pub fn restore(&mut self) -> Result<(), KnobError> {
        if self.restored {
            return Ok(());
        }
        self.restored = true;
        write_existing(&self.path, &self.original).map_err(|source| KnobError::Restore {
            path: self.path.clone(),
            value: self.original.clone(),
            source,
        })?;
        if let Some(e) = self.entry.take() {
            let _ = std::fs::remove_file(e);
        }
        Ok(())
    }

    /// The journal entry of this change (None once restored): what a cleanup process that
    /// outlives us (`crate::reaper::Resource::Knob`) repairs with [`repair_entry`].
    pub fn journal_entry(&self) -> Option<&Path> {
        self.entry.as_deref()
    }

    /// Keep the new value until [`revert_persistent`]: the journal entry moves into the
    /// journal's persistent directory in one rename, so no later run's [`repair_stale`] writes
    /// it back. Err (the entry stays an ordinary one, so the change is undone on drop): the
    /// directory could not be made or the rename failed.
    pub fn persist(mut self, journal: &Journal) -> Result<PathBuf, KnobError> {
        let Some(entry) = self.entry.clone() else {
            return Err(KnobError::Journal {
                path: self.path.clone(),
                journal: journal.dir.clone(),
                source: io::Error::other("the change was already restored"),
            });
        };
        let dir = journal.persistent_dir();
        let to = dir.join(entry.file_name().unwrap_or_default());
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::rename(&entry, &to))
            .map_err(|source| KnobError::Journal {
                path: self.path.clone(),
                journal: dir.clone(),
                source,
            })?;
        self.entry = None;
        self.restored = true;
        Ok(to)
    }

    /// Keep the new value: nothing is written back, now or by a later run.
    pub fn keep(mut self) {
        self.restored = true;
        if let Some(e) = self.entry.take() {
            let _ = std::fs::remove_file(e);
        }
    }
}

impl Drop for Knob {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("rtscope: {e}");
        }
    }
}

/// Write back every knob in the system journal whose owner is dead; one line per knob repaired
/// (or that could not be). Newest change first, so a knob changed twice ends at its first value.
pub fn repair_stale() -> Vec<String> {
    repair_stale_in(&Journal::system())
}

/// Write back the one change journalled in `entry` (its owner is known to be gone) and remove
/// the entry; None when there is no such entry (already restored).
pub fn repair_entry(entry: &Path) -> Option<io::Result<()>> {
    let e = Entry::decode(&std::fs::read_to_string(entry).ok()?)?;
    let r = write_existing(&e.path, &e.original);
    if r.is_ok() {
        let _ = std::fs::remove_file(entry);
    }
    Some(r)
}

/// A change kept by [`Knob::persist`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Persistent {
    pub path: PathBuf,
    pub original: String,
    /// The pid that made it.
    pub pid: u32,
}

/// The persistent changes in `journal`, oldest first.
pub fn persistent_in(journal: &Journal) -> Vec<Persistent> {
    let mut v = entries_in(&journal.persistent_dir());
    v.sort_by_key(|(_, e)| e.seq);
    v.into_iter()
        .map(|(_, e)| Persistent {
            path: e.path,
            original: e.original,
            pid: e.pid,
        })
        .collect()
}

/// Write back every persistent change in the system journal, and every stale one (a change
/// whose owner died before persisting it); one line per knob.
pub fn revert_persistent() -> Vec<String> {
    revert_persistent_in(&Journal::system())
}

/// As [`revert_persistent`], in `journal`. Newest change first, so a knob changed twice ends at
/// its first value; an entry whose write-back fails stays for the next attempt.
pub fn revert_persistent_in(journal: &Journal) -> Vec<String> {
    let mut out = repair_stale_in(journal);
    let mut kept = entries_in(&journal.persistent_dir());
    kept.sort_by_key(|(_, e)| std::cmp::Reverse(e.seq));
    for (file, e) in kept {
        match write_existing(&e.path, &e.original) {
            Ok(()) => {
                out.push(format!(
                    "{} written back to {:?}",
                    e.path.display(),
                    e.original
                ));
                let _ = std::fs::remove_file(file);
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                let _ = std::fs::remove_file(file);
            }
            Err(err) => out.push(format!(
                "could not write {:?} back to {}: {err}",
                e.original,
                e.path.display()
            )),
        }
    }
    out
}

pub fn repair_stale_in(journal: &Journal) -> Vec<String> {
    let mut stale: Vec<(PathBuf, Entry)> = journal
        .entries()
        .into_iter()
        .filter(|(_, e)| !e.owner_alive())
        .collect();
    stale.sort_by_key(|(_, e)| std::cmp::Reverse(e.seq));
    let mut out = Vec::new();
    for (file, e) in stale {
        match write_existing(&e.path, &e.original) {
            Ok(()) => {
                out.push(format!(
                    "{} written back to {:?} (changed by pid {})",
                    e.path.display(),
                    e.original,
                    e.pid
                ));
                let _ = std::fs::remove_file(file);
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                // The file is gone with what held it (a removed cpuset, a torn-down instance).
                let _ = std::fs::remove_file(file);
            }
            Err(err) => out.push(format!(
                "could not write {:?} back to {} (changed by pid {}): {err}",
                e.original,
                e.path.display(),
                e.pid
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file read as `osnoise_cpus_read` answers: EINVAL for a read whose buffer is not
    /// larger than the whole value, whatever the offset.
    struct OsnoiseCpus {
        value: &'static [u8],
        pos: usize,
    }

    impl io::Read for OsnoiseCpus {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.value.len() >= buf.len() {
                return Err(io::Error::from_raw_os_error(22));
            }
            let n = (self.value.len() - self.pos).min(buf.len());
            buf[..n].copy_from_slice(&self.value[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    #[test]
    fn a_value_is_read_whole_from_a_file_that_refuses_short_reads() {
        for value in [&b"0\n"[..], b"0-1\n", b"0-3,8-11\n"] {
            let file = || OsnoiseCpus { value, pos: 0 };
            assert_eq!(read_value(&mut file()).unwrap().as_bytes(), value);
        }
    }

    fn scratch() -> (tempfile::TempDir, Journal, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let j = Journal::at(d.path().join("journal"));
        let f = d.path().join("knob");
        std::fs::write(&f, "5\n").unwrap();
        (d, j, f)
    }

    #[test]
    fn set_restores_on_drop_and_journals_while_set() {
        let (_d, j, f) = scratch();
        {
            let k = Knob::set_in(&j, &f, "7").unwrap();
            assert_eq!(k.original(), "5");
            assert_eq!(std::fs::read_to_string(&f).unwrap(), "7");
            assert_eq!(j.entries().len(), 1);
            // The owner (this process) lives: nothing is repaired.
            assert!(repair_stale_in(&j).is_empty());
            assert_eq!(std::fs::read_to_string(&f).unwrap(), "7");
        }
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "5");
        assert!(j.entries().is_empty());
    }

    #[test]
    fn explicit_restore_and_keep() {
        let (_d, j, f) = scratch();
        let mut k = Knob::set_in(&j, &f, "8").unwrap();
        k.restore().unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "5");
        std::fs::write(&f, "9").unwrap();
        drop(k); // already restored: drop writes nothing
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "9");
        let k = Knob::set_in(&j, &f, "3").unwrap();
        k.keep();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "3");
        assert!(j.entries().is_empty());
    }

    #[test]
    fn journal_of_a_dead_pid_is_repaired_newest_first() {
        let (d, j, f) = scratch();
        // A child that changes the knob twice and dies without restoring (as under SIGKILL).
        // SAFETY: the child only sets knobs and exits.
        match unsafe { crate::process::fork() }.unwrap() {
            crate::process::Fork::Child => {
                let a = Knob::set_in(&j, &f, "6").unwrap();
                let b = Knob::set_in(&j, &f, "7").unwrap();
                std::mem::forget((a, b));
                crate::process::exit_now(0);
            }
            crate::process::Fork::Parent(pid) => {
                crate::process::wait(pid).unwrap();
            }
        }
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "7");
        assert_eq!(j.entries().len(), 2);
        // An entry whose file is gone is dropped silently.
        let gone = d.path().join("gone");
        std::fs::write(&gone, "1").unwrap();
        let g = Knob::set_in(&j, &gone, "2").unwrap();
        std::mem::forget(g);
        let mine = j.entries();
        // Pretend that entry's owner was the dead child too.
        let (file, e) = mine.iter().find(|(_, e)| e.path == gone).unwrap().clone();
        let dead = j.entries().iter().find(|(_, e)| e.path == f).unwrap().1.pid;
        std::fs::write(&file, Entry { pid: dead, ..e }.encode()).unwrap();
        std::fs::remove_file(&gone).unwrap();

        let notes = repair_stale_in(&j);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains(&format!("changed by pid {dead}")));
        // 7 → 6 (newest entry) then 6 → 5: the first original wins.
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "5");
        assert!(j.entries().is_empty());
    }

    #[test]
    fn recycled_pid_is_not_a_live_owner() {
        let e = Entry {
            pid: std::process::id(),
            start: start_time(std::process::id()).unwrap() + 1,
            seq: 1,
            path: "/nonexistent".into(),
            original: "x".into(),
        };
        assert!(!e.owner_alive());
        assert!(Entry {
            start: e.start - 1,
            ..e.clone()
        }
        .owner_alive());
    }

    #[test]
    fn refused_value_is_reported_and_nothing_changes() {
        let (d, j, _f) = scratch();
        // A directory reads as an error: nothing journalled, nothing written.
        let err = Knob::set_in(&j, d.path(), "1").unwrap_err();
        assert!(matches!(err, KnobError::Read { .. }), "{err}");
        assert!(j.entries().is_empty());
        // A value the kernel refuses (a sysctl that only takes integers).
        let p = Path::new("/proc/sys/kernel/printk_ratelimit_burst");
        if crate::system::is_root() && p.exists() {
            let before = std::fs::read_to_string(p).unwrap();
            let err = Knob::set_in(&j, p, "not-a-number").unwrap_err();
            assert!(matches!(err, KnobError::Write { .. }), "{err}");
            assert!(err.to_string().contains("printk_ratelimit_burst"), "{err}");
            assert_eq!(std::fs::read_to_string(p).unwrap(), before);
            assert!(j.entries().is_empty());
        }
    }

    #[test]
    fn persistent_changes_survive_repair_and_are_reverted() {
        let (d, j, f) = scratch();
        let g = d.path().join("other");
        std::fs::write(&g, "a").unwrap();
        let k = Knob::set_in(&j, &f, "6").unwrap();
        k.persist(&j).unwrap();
        let k = Knob::set_in(&j, &f, "7").unwrap();
        k.persist(&j).unwrap();
        // A second change left unpersisted by a killed owner: a stale entry.
        let h = Knob::set_in(&j, &g, "b").unwrap();
        std::mem::forget(h);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "7");
        assert_eq!(persistent_in(&j).len(), 2);
        // Our own pid lives: the repair of stale entries leaves both kinds alone.
        assert!(repair_stale_in(&j).is_empty());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "7");
        // Pretend the owner of the unpersisted entry died.
        let (file, e) = j.entries().into_iter().next().unwrap();
        std::fs::write(
            &file,
            Entry {
                pid: u32::MAX - 1,
                start: 1,
                ..e
            }
            .encode(),
        )
        .unwrap();
        let notes = revert_persistent_in(&j);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "5");
        assert_eq!(std::fs::read_to_string(&g).unwrap(), "a");
        assert!(persistent_in(&j).is_empty() && j.entries().is_empty());
    }

    #[test]
    fn escapes_roundtrip() {
        let e = Entry {
            pid: 1,
            start: 2,
            seq: 3,
            path: "/a\tb\\c".into(),
            original: "x\ny\\z\t".into(),
        };
        assert_eq!(Entry::decode(&e.encode()), Some(e));
        assert_eq!(Entry::decode("garbage"), None);
    }
}
