//! Files and mounts: open flags, mounts and namespaces, file-system facts, cache advice.

use std::ffi::CString;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Open `path` for reading without blocking (O_NONBLOCK), e.g. a tracefs pipe read by a poller.
pub fn open_read_nonblocking(path: impl AsRef<Path>) -> io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
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

/// What statvfs says of the file system holding a path.
#[derive(Clone, Copy, Debug)]
pub struct Space {
    /// Mounted read-only (ST_RDONLY).
    pub read_only: bool,
    /// Bytes an unprivileged user may still write (f_bavail × f_frsize).
    pub free_bytes: u64,
}

/// statvfs of the file system holding `path`.
pub fn space(path: &Path) -> io::Result<Space> {
    let st = nix::sys::statvfs::statvfs(path)?;
    Ok(Space {
        read_only: st.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY),
        // Both are u64 on Linux x86_64/aarch64 but c_ulong-sized elsewhere.
        #[allow(clippy::unnecessary_cast)]
        free_bytes: (st.blocks_available() as u64).saturating_mul(st.fragment_size() as u64),
    })
}

/// ioctl(fd, req, arg) for a request whose argument is a pointer to `T`.
///
/// # Safety
/// `T` must be the #[repr(C)] structure the driver expects for `req` (its size is usually
/// encoded in the request number), valid for reads and writes for the call.
pub unsafe fn ioctl<T>(fd: &impl std::os::fd::AsRawFd, req: u64, arg: &mut T) -> io::Result<()> {
    // SAFETY: the caller's contract.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), req as _, arg as *mut T) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// getdents64 on an open directory into `buf`: the bytes filled (0 at the end).
#[inline]
pub fn getdents64(dir: &std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: buf is a valid writable buffer of the given length.
    let n = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            dir.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// A path as a C string (None if it holds a NUL byte).
pub fn c_path(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_encoded_bytes()).ok()
}
