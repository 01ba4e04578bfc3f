//! Files as rtscope writes and reads them, in one place so every writer behaves the same.
//!
//! * **Writing** goes through [`AtomicFile`]: a temporary (tempfile's `NamedTempFile`) created in
//!   the target's directory with `O_CREAT|O_EXCL` under an unpredictable name (64 random bits), so a link planted
//!   at a guessable name in a shared directory is never followed and never overwritten; it is
//!   synced, then renamed over the target (a reader sees the old file or the new one, never half
//!   of one; `rename(2)` replaces a link at the target instead of writing through it). If
//!   anything fails, or the writer is dropped unfinished, the temporary is removed.
//! * **Checking an output before the work starts** ([`check_output`]): the directory exists, a
//!   file can really be created in it (a probe temporary, removed at once), it is not a kernel
//!   pseudo file system (`/proc`, `/sys`, tracefs, cgroupfs…, where a create can succeed and the
//!   data still go nowhere) and, when the size is known, the file system has room for it.
//! * **Reading** a file whose whole content a decoder needs ([`read_bounded`]) refuses files above
//!   the decoder's limit before reading them, and reads at most the limit from anything that does
//!   not say its size (a pipe, `/dev/zero`).
//! * **Private modes**: records, traces and the database hold command lines and host details, so
//!   they are created 0600 in directories created 0700 ([`PRIVATE_FILE`], [`create_private_dir`]).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// Mode of files that hold command lines, host details or measurements (before the umask).
pub const PRIVATE_FILE: u32 = 0o600;
/// Mode of files made to be shared (figures, CSV tables, exported text), before the umask.
pub const SHARED_FILE: u32 = 0o644;
/// Mode of directories rtscope creates for runs and the database.
pub const PRIVATE_DIR: u32 = 0o700;

/// 64 bits nobody can predict: getrandom(2); if that fails, the clock and the pid (`O_EXCL`
/// still refuses any name that exists).
pub fn random_u64() -> u64 {
    // rand's thread generator: a CSPRNG seeded from the kernel (getrandom).
    rand::random()
}

fn parent_dir(target: &Path) -> PathBuf {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// How a temporary is named beside its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TempStyle {
    /// `.<name>.<16 hex>.tmp`: hidden; removed on any failure.
    Hidden,
    /// `<name>.<16 hex>.partial`: visible, for a file written over a whole run (a trace) whose
    /// readable prefix is worth keeping when the process is killed.
    Partial,
}

/// A new, empty file beside `target`, created exclusively under an unpredictable name
/// `.<name>.<16 hex>.tmp`, never through a link.
pub fn create_temp_beside(target: &Path, mode: u32) -> io::Result<(File, PathBuf)> {
    create_temp_styled(target, mode, TempStyle::Hidden)
}

/// [`create_temp_beside`] with the name style chosen.
pub fn create_temp_styled(
    target: &Path,
    mode: u32,
    style: TempStyle,
) -> io::Result<(File, PathBuf)> {
    named_temp(target, mode, style)?.keep().map_err(|e| e.error)
}

/// The temporary as tempfile's [`NamedTempFile`]: created `O_CREAT|O_EXCL` (which fails on any
/// existing name, a symbolic link included, so no link is ever followed), close-on-exec, with
/// `mode`, removed when dropped. The 64 random bits of the name come from rand's CSPRNG
/// ([`random_u64`]) rather than tempfile's non-cryptographic generator, and keep the
/// `<16 hex>` form readers of partial traces know; a taken name is retried here.
fn named_temp(target: &Path, mode: u32, style: TempStyle) -> io::Result<NamedTempFile> {
    let dir = parent_dir(target);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a file name", target.display()),
            )
        })?;
    let mut last = None;
    for _ in 0..16 {
        let (prefix, suffix) = match style {
            TempStyle::Hidden => (format!(".{name}.{:016x}", random_u64()), ".tmp"),
            TempStyle::Partial => (format!("{name}.{:016x}", random_u64()), ".partial"),
        };
        match tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(suffix)
            .rand_bytes(0)
            .permissions(std::fs::Permissions::from_mode(mode))
            .tempfile_in(&dir)
        {
            Ok(f) => return Ok(f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

/// A file written in full or not at all (module docs). Write to it, then [`AtomicFile::persist`];
/// dropping it unpersisted removes the temporary (tempfile's [`NamedTempFile`] underneath).
#[derive(Debug)]
pub struct AtomicFile {
    file: Option<NamedTempFile>,
    target: PathBuf,
}

impl AtomicFile {
    pub fn create(target: &Path, mode: u32) -> io::Result<AtomicFile> {
        AtomicFile::create_styled(target, mode, TempStyle::Hidden)
    }

    pub fn create_styled(target: &Path, mode: u32, style: TempStyle) -> io::Result<AtomicFile> {
        Ok(AtomicFile {
            file: Some(named_temp(target, mode, style)?),
            target: target.to_path_buf(),
        })
    }

    /// Where the data go until [`AtomicFile::persist`] (empty once persisted).
    pub fn temp_path(&self) -> &Path {
        self.file.as_ref().map_or(Path::new(""), |f| f.path())
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    fn file(&mut self) -> io::Result<&mut File> {
        self.file
            .as_mut()
            .map(|f| f.as_file_mut())
            .ok_or_else(|| io::Error::other("the file was already closed"))
    }

    /// Flush the data to disk (the temporary stays a temporary).
    pub fn sync(&mut self) -> io::Result<()> {
        self.file()?.sync_data()
    }

    /// Sync (data and size: a disk-full error surfaces here, before the rename), then rename
    /// over the target in the same directory. On failure the temporary is removed and the
    /// target is as it was.
    pub fn persist(mut self) -> io::Result<PathBuf> {
        let f = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("the file was already closed"))?;
        // On an error `f` (or the PersistError's file) is dropped, which removes the temporary.
        f.as_file().sync_all()?;
        f.persist(&self.target).map_err(|e| e.error)?;
        Ok(self.target.clone())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file()?.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file()?.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file()?.flush()
    }
}

/// Write `data` to `target` atomically (module docs).
pub fn write_atomic(target: &Path, data: &[u8], mode: u32) -> io::Result<()> {
    let mut f = AtomicFile::create(target, mode)?;
    f.write_all(data)?;
    f.persist().map(|_| ())
}

/// Create `dir` and its missing parents with mode 0700 (existing directories are left as they
/// are).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR)
        .create(dir)
}

/// Whether this process may write `path` (access(2) with W_OK: false on a read-only mount
/// too, where root's permission bypass does not apply).
pub fn may_write(path: &Path) -> bool {
    nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// Create `path` as a new empty file with `mode` unless it exists (so a program that then
/// opens it by name, like SQLite, does not create it with its own wider default mode).
pub fn precreate(path: &Path, mode: u32) -> io::Result<()> {
    // create_new is O_CREAT|O_EXCL, which fails on an existing link rather than following it;
    // std opens close-on-exec.
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Refuse what is not a regular file before it is opened for reading: a FIFO blocks the
/// opener until a writer comes (and then reads whatever it sends), a character device such as
/// /dev/urandom or /dev/zero never ends, a socket cannot be opened at all. The error says what
/// the path is; the caller names the flag.
pub fn check_input(path: &Path) -> io::Result<()> {
    regular(&std::fs::metadata(path)?.file_type())
}

fn regular(t: &std::fs::FileType) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let what = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "is a directory"
    } else if t.is_fifo() {
        "is a FIFO (named pipe), not a regular file: reading it would wait for a writer"
    } else if t.is_char_device() {
        "is a character device, not a regular file: reading it may never end"
    } else if t.is_block_device() {
        "is a block device, not a regular file"
    } else if t.is_socket() {
        "is a socket, not a regular file"
    } else {
        "is not a regular file"
    };
    Err(io::Error::new(io::ErrorKind::InvalidInput, what))
}

/// The regular files of `dir` (not links, directories or other kinds) whose names `keep`, in
/// the order the directory lists them; an entry that cannot be read is passed over.
pub fn regular_files(dir: &Path, keep: impl Fn(&str) -> bool) -> io::Result<Vec<PathBuf>> {
    Ok(std::fs::read_dir(dir)?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&keep))
        .collect())
}

/// Read a whole regular file, refusing more than `limit` bytes (larger is refused before
/// anything is read) and anything that is not a regular file ([`check_input`]). `what` names
/// the input in the error ("cyclictest output").
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    check_input(path)?;
    // Non-blocking, so that a FIFO put in the file's place after the check does not block the
    // open either; the descriptor's own type is checked again below.
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)?;
    let too_big = |size: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{size} bytes, more than the {limit} bytes this reader accepts for {what} (RTSCOPE_MAX_INPUT_MB raises it)"
            ),
        )
    };
    let meta = f.metadata()?;
    regular(&meta.file_type())?;
    if meta.len() > limit {
        return Err(too_big(meta.len().to_string()));
    }
    let mut out = Vec::with_capacity(meta.len().min(limit) as usize);
    f.take(limit.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(too_big(format!("more than {limit}")));
    }
    Ok(out)
}

/// The largest input a whole-file reader takes by default, bytes: 1 GiB, or
/// `RTSCOPE_MAX_INPUT_MB` MiB.
pub fn max_input_bytes() -> u64 {
    std::env::var("RTSCOPE_MAX_INPUT_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&m| m > 0)
        .map_or(1 << 30, |m| m.saturating_mul(1 << 20))
}

/// Kernel pseudo file systems where a file is not data on a disk (statfs f_type values from
/// include/uapi/linux/magic.h).
const PSEUDO_FS: &[(i64, &str)] = &[
    (0x9fa0, "procfs"),
    (0x6265_6572, "sysfs"),
    (0x7472_6163, "tracefs"),
    (0x6462_6720, "debugfs"),
    (0x6367_7270, "cgroup2"),
    (0x0027_e0eb, "cgroup"),
    (0xcafe_4a11, "bpffs"),
    (0x7363_6673, "securityfs"),
    (0x1cd1, "devpts"),
    (0x4249_4e4d, "binfmt_misc"),
    (0x6e73_6673, "nsfs"),
    (0x5a3c_69f0, "configfs"),
    (0xde5e_81e4, "efivarfs"),
];

/// The file system type of `dir`, when it is a kernel pseudo file system.
#[allow(clippy::unnecessary_cast)] // f_type's width differs between architectures
fn pseudo_fs(dir: &Path) -> Option<&'static str> {
    let t = nix::sys::statfs::statfs(dir).ok()?.filesystem_type().0 as i64;
    PSEUDO_FS.iter().find(|(m, _)| *m == t).map(|(_, n)| *n)
}

/// Bytes free for an unprivileged writer in the file system holding `dir` (root may use the
/// reserved blocks too, but a run should not depend on them).
#[allow(clippy::unnecessary_cast)] // statvfs field widths differ between architectures
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let s = nix::sys::statvfs::statvfs(dir).ok()?;
    Some((s.blocks_available() as u64).saturating_mul(s.fragment_size() as u64))
}

/// Can `target` be written, before any work starts? (module docs). `need_bytes`: the size when
/// it is known. The error is one line naming the path and what is wrong.
pub fn check_output(target: &Path, need_bytes: Option<u64>) -> Result<(), String> {
    if target.as_os_str().is_empty() {
        return Err("empty path".into());
    }
    let dir = parent_dir(target);
    if !dir.is_dir() {
        return Err(format!("directory {} does not exist", dir.display()));
    }
    if target.is_dir() {
        return Err(format!("{} is a directory", target.display()));
    }
    not_pseudo(&dir, &dir)?;
    let (f, probe) = create_temp_beside(target, PRIVATE_FILE)
        .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
    drop(f);
    let _ = std::fs::remove_file(&probe);
    room(&dir, need_bytes)
}

/// `at` (where `shown` will be) is not on a kernel pseudo file system.
fn not_pseudo(at: &Path, shown: &Path) -> Result<(), String> {
    match pseudo_fs(at) {
        Some(fs) => Err(format!(
            "{} is on {fs}, a kernel pseudo file system, not a place for output files",
            shown.display()
        )),
        None => Ok(()),
    }
}

/// The file system holding `dir` has `need` bytes free (when both are known).
fn room(dir: &Path, need: Option<u64>) -> Result<(), String> {
    if let (Some(need), Some(free)) = (need, free_bytes(dir)) {
        if need > free {
            return Err(format!(
                "needs about {} MiB in {}, {} MiB free",
                need.div_ceil(1 << 20),
                dir.display(),
                free >> 20
            ));
        }
    }
    Ok(())
}

/// Like [`check_output`] for a directory the work will create files in (created 0700 with its
/// parents if missing).
pub fn check_output_dir(dir: &Path, need_bytes: Option<u64>) -> Result<(), String> {
    if dir.as_os_str().is_empty() {
        return Err("empty path".into());
    }
    if dir.exists() && !dir.is_dir() {
        return Err(format!("{} exists and is not a directory", dir.display()));
    }
    // Check the nearest existing ancestor before creating anything in a pseudo file system.
    let mut probe_at = dir.to_path_buf();
    while !probe_at.exists() {
        match probe_at.parent() {
            Some(p) if !p.as_os_str().is_empty() => probe_at = p.to_path_buf(),
            _ => {
                probe_at = PathBuf::from(".");
                break;
            }
        }
    }
    not_pseudo(&probe_at, dir)?;
    room(&probe_at, need_bytes)?;
    // The directories this creates, deepest first: removed again if the check fails after.
    let mut created = Vec::new();
    let mut p = dir.to_path_buf();
    while !p.exists() {
        created.push(p.clone());
        match p.parent() {
            Some(q) if !q.as_os_str().is_empty() => p = q.to_path_buf(),
            _ => break,
        }
    }
    create_private_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let r = check_output(&dir.join("run.json"), need_bytes);
    if r.is_err() {
        for d in &created {
            let _ = std::fs::remove_dir(d);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_a_planted_link_instead_of_following_it() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let target = d.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        write_atomic(&target, b"new", SHARED_FILE).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert!(!std::fs::symlink_metadata(&target)
            .unwrap()
            .file_type()
            .is_symlink());
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "only the victim and the target remain");
    }

    #[test]
    fn temporaries_are_exclusive_unpredictable_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("x");
        let (_a, pa) = create_temp_beside(&t, PRIVATE_FILE).unwrap();
        let (_b, pb) = create_temp_beside(&t, PRIVATE_FILE).unwrap();
        assert_ne!(pa, pb);
        let mode = std::fs::metadata(&pa).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "no access for group or others: {mode:o}");
    }

    #[test]
    fn an_unfinished_or_failed_write_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("o.json");
        {
            let mut f = AtomicFile::create(&target, PRIVATE_FILE).unwrap();
            f.write_all(b"half").unwrap();
            assert!(f.temp_path().exists());
        }
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        // Rename onto a directory fails: the temporary goes, the directory stays.
        let dir_target = d.path().join("sub");
        std::fs::create_dir(&dir_target).unwrap();
        std::fs::write(dir_target.join("f"), b"x").unwrap();
        let mut f = AtomicFile::create(&dir_target, PRIVATE_FILE).unwrap();
        f.write_all(b"data").unwrap();
        assert!(f.persist().is_err());
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("sub")]);
    }

    #[test]
    fn output_checks_refuse_pseudo_file_systems_and_missing_directories() {
        let e = check_output(Path::new("/proc/x.json"), None).unwrap_err();
        assert!(e.contains("procfs"), "{e}");
        let e = check_output(Path::new("/sys/kernel/x.json"), None).unwrap_err();
        assert!(e.contains("sysfs"), "{e}");
        let e = check_output(Path::new("/nonexistent-dir-rtscope/x.json"), None).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        let e = check_output_dir(Path::new("/proc/rtscope-run"), None).unwrap_err();
        assert!(e.contains("procfs"), "{e}");
        let d = tempfile::tempdir().unwrap();
        check_output(&d.path().join("ok.json"), Some(1)).unwrap();
        let e = check_output(&d.path().join("big"), Some(u64::MAX / 2)).unwrap_err();
        assert!(e.contains("MiB free"), "{e}");
        assert_eq!(
            std::fs::read_dir(d.path()).unwrap().count(),
            0,
            "probe removed"
        );
    }

    #[test]
    fn private_directories_are_0700() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/b");
        check_output_dir(&p, None).unwrap();
        for q in [d.path().join("a"), p] {
            let m = std::fs::metadata(&q).unwrap().permissions().mode() & 0o777;
            assert_eq!(m & 0o077, 0, "{}: {m:o}", q.display());
        }
    }

    #[test]
    fn bounded_reads_refuse_before_reading() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![b'x'; 4096]).unwrap();
        assert_eq!(read_bounded(&p, 4096, "test").unwrap().len(), 4096);
        let e = read_bounded(&p, 4095, "test").unwrap_err();
        assert!(e.to_string().contains("4096 bytes"), "{e}");
        // A device that never ends is refused before a byte is read.
        let e = read_bounded(Path::new("/dev/zero"), 1 << 20, "test").unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
    }
}
