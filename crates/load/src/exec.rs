//! `exec -- CMD ARGS…`: any external load, started with execv (no shell, no PATH lookup at this
//! point: the path was resolved during validation). PR_SET_PDEATHSIG survives execve, so the
//! command dies with the supervisor like every other worker.

use std::convert::Infallible;
use std::ffi::CString;

/// Counters written by the supervisor when the command ends before stop.
pub(crate) const C_EXIT_STATUS: usize = 0;
pub(crate) const C_EXIT_MS: usize = 1;

pub(crate) fn run(path: &CString, argv: &[CString]) -> Infallible {
    // Only returns (as _exit 127, like a shell's "command not found") when execv failed.
    rtscope_sys::process::exec_c(path, argv)
}

/// bonnie++ as the disk load: direct I/O (`-D`) as OSPERT'13 §3.3 ran it, on a `size_mib` file
/// in `dir`, test after test until stopped. `-f` skips the per-character tests: with `-D`,
/// bonnie++ 2.00 writes them one byte at a time through O_DIRECT, which the kernel refuses
/// (EINVAL, reported as "disk full"). `-r` at half the file size lets bonnie++ use a file
/// smaller than twice the RAM. Its CSV results (stdout) are dropped; errors stay on stderr.
pub(crate) fn bonnie_argv(program: &CString, dir: &std::path::Path, size_mib: u64) -> Vec<CString> {
    let size = size_mib.max(2);
    let c = |s: String| CString::new(s).unwrap_or_default();
    let mut v = vec![program.clone()];
    for a in [
        "-f".to_string(),
        "-D".to_string(),
        "-d".to_string(),
        dir.to_string_lossy().into_owned(),
        "-s".to_string(),
        size.to_string(),
        "-r".to_string(),
        (size / 2).to_string(),
        "-n".to_string(),
        "16".to_string(),
        "-u".to_string(),
        "0:0".to_string(),
        "-q".to_string(),
        "-x".to_string(),
        "1000000".to_string(),
    ] {
        v.push(c(a));
    }
    v
}

/// `run` with stdout on /dev/null.
pub(crate) fn run_quiet(path: &CString, argv: &[CString]) -> Infallible {
    rtscope_sys::process::stdout_to_devnull();
    run(path, argv)
}
