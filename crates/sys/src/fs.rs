//! Files and mounts: open flags, mounts and namespaces, file-system facts, cache advice.

use std::ffi::CString;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Open without blocking (O_NONBLOCK), e.g. a tracefs pipe read by a poller.
pub fn nonblocking(o: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    o.custom_flags(libc::O_NONBLOCK)
}

/// Bypass the page cache (O_DIRECT); the file system may refuse it with EINVAL on open.
pub fn direct(o: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    o.custom_flags(libc::O_DIRECT)
}

/// Drop the file's cached pages (posix_fadvise POSIX_FADV_DONTNEED).
pub fn drop_cache(f: &impl std::os::fd::AsRawFd) {
    // SAFETY: advisory call on an open descriptor.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// Mount file system `fstype` from `source` at `target`, no flags, no data.
pub fn mount(source: &str, target: &Path, fstype: &str) -> io::Result<()> {
    nix::mount::mount(
        Some(source),
        target,
        Some(fstype),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .map_err(io::Error::from)
}

/// Detach the mount at `target` (umount2 MNT_DETACH).
pub fn unmount_detach(target: &Path) -> io::Result<()> {
    nix::mount::umount2(target, nix::mount::MntFlags::MNT_DETACH).map_err(io::Error::from)
}

/// A private mount namespace for the calling thread, with every mount made private so nothing
/// mounted in it propagates back (unshare CLONE_NEWNS, then MS_REC|MS_PRIVATE on /).
pub fn private_mount_namespace() -> io::Result<()> {
    use nix::mount::MsFlags;
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)?;
    nix::mount::mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(io::Error::from)
}

/// A new network namespace for the calling process (unshare CLONE_NEWNET).
pub fn new_network_namespace() -> io::Result<()> {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
}

/// The statfs magic number of the file system holding `path` (linux/magic.h).
pub fn fs_magic(path: &Path) -> io::Result<u64> {
    let st = nix::sys::statfs::statfs(path)?;
    Ok(st.filesystem_type().0 as u64)
}

/// True if the caller may write and search `dir` (access W_OK|X_OK). Err carries the reason.
pub fn check_writable_dir(dir: &Path) -> io::Result<()> {
    use nix::unistd::AccessFlags;
    nix::unistd::access(dir, AccessFlags::W_OK | AccessFlags::X_OK).map_err(io::Error::from)
}

/// True if `path` lives on a read-only mount (statvfs ST_RDONLY).
pub fn read_only(path: &Path) -> io::Result<bool> {
    let st = nix::sys::statvfs::statvfs(path)?;
    Ok(st.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY))
}

/// A path as a C string (None if it holds a NUL byte).
pub fn c_path(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_encoded_bytes()).ok()
}
