//! Memory: locking, the allocator's knobs, shared anonymous mappings, resource usage.

use std::io;

/// mlockall(MCL_CURRENT | MCL_FUTURE).
pub fn lock_all() -> io::Result<()> {
    use nix::sys::mman::MlockAllFlags;
    nix::sys::mman::mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE)
        .map_err(io::Error::from)
}

/// munlockall.
pub fn unlock_all() {
    let _ = nix::sys::mman::munlockall();
}

/// Return freed heap to the kernel (glibc malloc_trim(0)).
pub fn malloc_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// glibc M_MMAP_THRESHOLD: allocations at least this large get their own mapping (and are
/// returned to the kernel when freed); setting it also stops glibc's dynamic threshold.
pub fn set_mmap_threshold(bytes: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's tunables.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

/// glibc's defaults for the knobs [`retain_freed`] changes (malloc/malloc.c: `DEFAULT_MMAP_MAX`,
/// `DEFAULT_TRIM_THRESHOLD`).
const GLIBC_MMAP_MAX: i32 = 65_536;
const GLIBC_TRIM_THRESHOLD: i32 = 128 * 1024;

/// Keep every freed byte in the process (`true`) or give large frees back again (`false`).
///
/// Retained: M_MMAP_MAX 0 (no allocation gets a mapping of its own, so no free unmaps one) and
/// M_TRIM_THRESHOLD at its maximum (the heap's top and the threads' arenas are never shrunk).
/// Unmapping populated memory runs `zap_pte_range()` under the page table's lock, i.e. with
/// preemption disabled on a non-RT kernel for up to 512 pages: the longest preempt-off section
/// of an idle stock kernel is then the measuring tool's own free. Released: glibc's defaults
/// for both. Neither moves what is already allocated.
pub fn retain_freed(retain: bool) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's tunables.
    unsafe {
        if retain {
            libc::mallopt(libc::M_MMAP_MAX, 0);
            libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        } else {
            libc::mallopt(libc::M_MMAP_MAX, GLIBC_MMAP_MAX);
            libc::mallopt(libc::M_TRIM_THRESHOLD, GLIBC_TRIM_THRESHOLD);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (retain, GLIBC_MMAP_MAX, GLIBC_TRIM_THRESHOLD);
}

/// The page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Resource usage of the whole process.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// Peak resident set size, KiB.
    pub max_rss_kib: u64,
    pub user_ns: u64,
    pub system_ns: u64,
    /// Voluntary context switches (ru_nvcsw).
    pub voluntary_switches: u64,
    /// Involuntary context switches (ru_nivcsw).
    pub involuntary_switches: u64,
}

fn tv_ns(tv: nix::sys::time::TimeVal) -> u64 {
    tv.tv_sec() as u64 * 1_000_000_000 + tv.tv_usec() as u64 * 1000
}

fn usage(who: nix::sys::resource::UsageWho) -> io::Result<Usage> {
    let u = nix::sys::resource::getrusage(who)?;
    Ok(Usage {
        max_rss_kib: u.max_rss().max(0) as u64,
        user_ns: tv_ns(u.user_time()),
        system_ns: tv_ns(u.system_time()),
        voluntary_switches: u.voluntary_context_switches().max(0) as u64,
        involuntary_switches: u.involuntary_context_switches().max(0) as u64,
    })
}

/// getrusage(RUSAGE_SELF).
pub fn usage_self() -> io::Result<Usage> {
    usage(nix::sys::resource::UsageWho::RUSAGE_SELF)
}

/// getrusage(RUSAGE_THREAD): the calling thread only.
pub fn usage_thread() -> io::Result<Usage> {
    usage(nix::sys::resource::UsageWho::RUSAGE_THREAD)
}

/// A shared anonymous mapping (MAP_SHARED | MAP_ANONYMOUS, read/write), zero-filled, that a
/// forked child shares with its parent; unmapped on drop.
pub struct SharedMap {
    base: std::ptr::NonNull<std::ffi::c_void>,
    len: usize,
}

// SAFETY: the mapping is plain memory; what lives in it is the user's to synchronise.
unsafe impl Send for SharedMap {}
unsafe impl Sync for SharedMap {}

impl SharedMap {
    pub fn new(len: usize) -> io::Result<SharedMap> {
        use nix::sys::mman::{MapFlags, ProtFlags};
        let n = std::num::NonZeroUsize::new(len).ok_or_else(crate::einval)?;
        // SAFETY: a fresh anonymous mapping aliases nothing.
        let base = unsafe {
            nix::sys::mman::mmap_anonymous(
                None,
                n,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
            )
        }?;
        Ok(SharedMap { base, len })
    }

    /// The mapping's start; valid for `len()` bytes while `self` lives.
    pub fn as_ptr(&self) -> *mut u8 {
        self.base.as_ptr().cast()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping this value created; nothing borrows it past `self`.
        let _ = unsafe { nix::sys::mman::munmap(self.base, self.len) };
    }
}

/// A private, pre-faulted (MAP_POPULATE) anonymous read/write mapping; unmapped on drop.
pub struct PrivateMap {
    base: std::ptr::NonNull<std::ffi::c_void>,
    len: usize,
}

// SAFETY: as SharedMap.
unsafe impl Send for PrivateMap {}

impl PrivateMap {
    pub fn populated(len: usize) -> io::Result<PrivateMap> {
        use nix::sys::mman::{MapFlags, ProtFlags};
        let n = std::num::NonZeroUsize::new(len).ok_or_else(crate::einval)?;
        // SAFETY: a fresh anonymous mapping aliases nothing.
        let base = unsafe {
            nix::sys::mman::mmap_anonymous(
                None,
                n,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE | MapFlags::MAP_POPULATE,
            )
        }?;
        Ok(PrivateMap { base, len })
    }

    /// munmap now, with its error (drop unmaps too, silently).
    pub fn unmap(self) -> io::Result<()> {
        let (base, len) = (self.base, self.len);
        std::mem::forget(self);
        // SAFETY: unmapping the mapping this value created; `self` is gone.
        unsafe { nix::sys::mman::munmap(base, len) }.map_err(io::Error::from)
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, readable and writable, owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr().cast(), self.len) }
    }
}

impl Drop for PrivateMap {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping this value created.
        let _ = unsafe { nix::sys::mman::munmap(self.base, self.len) };
    }
}
