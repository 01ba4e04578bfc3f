//! Facts about the machine and the caller: uname, clock ticks, privileges, capabilities.

/// What uname(2) says.
#[derive(Clone, Debug, Default)]
pub struct Uname {
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
}

/// uname(2); None if the call fails.
pub fn uname() -> Option<Uname> {
    let u = nix::sys::utsname::uname().ok()?;
    let s = |o: &std::ffi::OsStr| o.to_string_lossy().into_owned();
    Some(Uname {
        nodename: s(u.nodename()),
        release: s(u.release()),
        version: s(u.version()),
        machine: s(u.machine()),
    })
}

/// USER_HZ: the unit of /proc/stat times (sysconf(_SC_CLK_TCK)); None if unknown.
pub fn clock_ticks_per_sec() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some(hz as u64)
}

/// Effective uid is 0.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

pub const CAP_SYS_NICE: u32 = 23;

/// Effective capability check from /proc/self/status (CapEff), so no libcap is needed.
pub fn has_capability(cap: u32) -> bool {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    s.lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .map(|bits| bits & (1u64 << cap) != 0)
        .unwrap_or(false)
}

/// Raise the I/O port permission of `from..from+n` (x86 ioperm), for the benchmarks that read a
/// port as a bus fence.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub fn ioperm(from: u64, n: u64, on: bool) -> std::io::Result<()> {
    // SAFETY: ioperm changes only this thread's permission bitmap.
    crate::check(unsafe { libc::ioperm(from as _, n as _, on as libc::c_int) }).map(|_| ())
}
