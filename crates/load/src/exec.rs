//! `exec -- CMD ARGS…`: any external load, started with execv (no shell, no PATH lookup at this
//! point: the path was resolved during validation). PR_SET_PDEATHSIG survives execve, so the
//! command dies with the supervisor like every other worker.

use std::convert::Infallible;
use std::ffi::CString;

/// Counters written by the supervisor when the command ends before stop.
pub(crate) const C_EXIT_STATUS: usize = 0;
pub(crate) const C_EXIT_MS: usize = 1;

pub(crate) fn run(path: &CString, argv: &[CString]) -> Infallible {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: NUL-terminated strings and a NULL-terminated pointer array that outlive the call.
    unsafe {
        libc::execv(path.as_ptr(), ptrs.as_ptr());
        // Only reached when execv failed; 127 like a shell's "command not found".
        libc::_exit(127)
    }
}
