//! The cleanup reaper: a small forked process that outlives us.
//!
//! SysV IPC objects, POSIX message queues, scratch files, tracefs instances and kernel settings
//! are not freed by the kernel when a process dies, and SIGKILL leaves no chance to run
//! destructors. So before any resource exists we fork a reaper that blocks reading a pipe. Each
//! resource is announced on the pipe when created ("+msq 42") and withdrawn when we free it
//! ourselves ("-msq 42"). When we exit by any path — return, panic, SIGINT, SIGKILL — the
//! kernel closes our end of the pipe, the reaper reads EOF, frees whatever is still listed and
//! exits. It ignores SIGINT/SIGTERM/SIGHUP so a Ctrl-C to the process group cannot kill it first.

use std::io::{self, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resource {
    SysvMsg(i32),
    SysvSem(i32),
    /// POSIX message queue name ("/rtscope-…").
    PosixMq(String),
    /// A scratch file or directory (removed recursively).
    Path(PathBuf),
    /// A tracefs instance directory (rmdir).
    TracefsInstance(PathBuf),
    /// A changed kernel setting: write back what its [`crate::knob::Knob`] journal entry (this
    /// file) holds, at once instead of at the next run.
    Knob(PathBuf),
}

impl Resource {
    fn encode(&self) -> String {
        match self {
            Resource::SysvMsg(id) => format!("msq {id}"),
            Resource::SysvSem(id) => format!("sem {id}"),
            Resource::PosixMq(n) => format!("mq {n}"),
            Resource::Path(p) => format!("path {}", p.display()),
            Resource::TracefsInstance(p) => format!("inst {}", p.display()),
            Resource::Knob(p) => format!("knob {}", p.display()),
        }
    }

    fn decode(line: &str) -> Option<Resource> {
        let (kind, arg) = line.split_once(' ')?;
        Some(match kind {
            "msq" => Resource::SysvMsg(arg.parse().ok()?),
            "sem" => Resource::SysvSem(arg.parse().ok()?),
            "mq" => Resource::PosixMq(arg.to_string()),
            "path" => Resource::Path(PathBuf::from(arg)),
            "inst" => Resource::TracefsInstance(PathBuf::from(arg)),
            "knob" => Resource::Knob(PathBuf::from(arg)),
            _ => return None,
        })
    }

    /// Free the resource. Errors are ignored: it may already be gone.
    pub fn free(&self) {
        match self {
            Resource::SysvMsg(id) => crate::ipc::SysvQueue::remove(*id),
            Resource::SysvSem(id) => crate::ipc::SysvSemSet::remove(*id),
            Resource::PosixMq(n) => crate::ipc::PosixQueue::unlink(n),
            Resource::Path(p) => remove_path(p),
            Resource::TracefsInstance(p) => {
                let _ = std::fs::remove_dir(p);
            }
            Resource::Knob(entry) => {
                let _ = crate::knob::repair_entry(entry);
            }
        }
    }
}

fn remove_path(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(p);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(p);
        }
        Err(_) => {}
    }
}

pub struct Reaper {
    pipe: Option<std::fs::File>,
    pid: libc::pid_t,
}

impl Reaper {
    /// Fork the reaper. Call early, from the thread that will live for the whole run.
    pub fn start() -> io::Result<Reaper> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: fds is a valid 2-element array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the path is a valid C string; open has no other preconditions.
        let devnull = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        // SAFETY: fork has no preconditions; the child only runs `reaper_main`, which never
        // returns (it ends in _exit) and uses no lock another thread could hold except malloc,
        // which glibc makes fork-safe.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: closing fds we own.
            unsafe {
                libc::close(fds[0]);
                libc::close(fds[1]);
                if devnull >= 0 {
                    libc::close(devnull);
                }
            }
            return Err(e);
        }
        if pid == 0 {
            reaper_main(fds[0], fds[1], devnull);
        }
        // SAFETY: closing the read end (the child's) and devnull in the parent.
        unsafe {
            libc::close(fds[0]);
            if devnull >= 0 {
                libc::close(devnull);
            }
        }
        // SAFETY: fds[1] is an open fd we own from here on.
        let pipe = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fds[1]) });
        Ok(Reaper {
            pipe: Some(pipe),
            pid,
        })
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn register(&self, r: &Resource) {
        // A failed write (the reaper died) leaves cleanup to our own normal path.
        if let Some(mut p) = self.pipe.as_ref() {
            let _ = p.write_all(format!("+{}\n", r.encode()).as_bytes());
        }
    }

    /// Free the resource now and withdraw it from the reaper.
    pub fn release(&self, r: &Resource) {
        r.free();
        if let Some(mut p) = self.pipe.as_ref() {
            let _ = p.write_all(format!("-{}\n", r.encode()).as_bytes());
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // Closing the pipe makes the reaper free what is left and exit; wait for it so that
        // cleanup is complete when we return.
        drop(self.pipe.take());
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(self.pid, &mut status, 0) };
    }
}

fn reaper_main(read_fd: RawFd, write_fd: RawFd, devnull: RawFd) -> ! {
    // SAFETY: plain syscalls on our own fds and signal dispositions.
    unsafe {
        libc::close(write_fd);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(s, libc::SIG_IGN);
        }
        // Do not hold the caller's stdout/stderr open (a test harness would wait for EOF).
        if devnull >= 0 {
            for fd in 0..=2 {
                libc::dup2(devnull, fd);
            }
        }
        let fd = if read_fd != 3 {
            libc::dup2(read_fd, 3)
        } else {
            3
        };
        libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32);
        let mut live: Vec<String> = Vec::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len());
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                break;
            }
            pending.extend_from_slice(&buf[..n as usize]);
            while let Some(pos) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=pos).collect();
                let line = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
                if let Some(rest) = line.strip_prefix('+') {
                    live.push(rest.to_string());
                } else if let Some(rest) = line.strip_prefix('-') {
                    if let Some(i) = live.iter().rposition(|l| l == rest) {
                        live.remove(i);
                    }
                }
            }
        }
        // Free in reverse order of creation (an instance before its parent directory, …).
        for l in live.iter().rev() {
            if let Some(r) = Resource::decode(l) {
                r.free();
            }
        }
        libc::_exit(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_roundtrip() {
        for r in [
            Resource::SysvMsg(7),
            Resource::SysvSem(0),
            Resource::PosixMq("/rtscope-x".into()),
            Resource::Path("/tmp/a b".into()),
            Resource::TracefsInstance("/sys/kernel/tracing/instances/x".into()),
            Resource::Knob("/run/rtscope/knobs/1.2.knob".into()),
        ] {
            assert_eq!(Resource::decode(&r.encode()), Some(r));
        }
        assert_eq!(Resource::decode("bogus 1"), None);
    }

    #[test]
    fn reaper_frees_what_is_left_on_exit() {
        let dir = std::env::temp_dir().join(format!("rtscope-reaper-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let kept = std::env::temp_dir().join(format!("rtscope-reaper-kept-{}", std::process::id()));
        std::fs::write(&kept, b"x").unwrap();
        {
            let r = Reaper::start().unwrap();
            r.register(&Resource::Path(dir.clone()));
            r.register(&Resource::Path(kept.clone()));
            // Withdrawn without freeing is not possible through the API; release frees now.
            r.release(&Resource::Path(kept.clone()));
            std::fs::write(&kept, b"recreated").unwrap();
        } // drop: pipe closed, reaper frees `dir` (still registered) but not `kept` (withdrawn)
        assert!(!dir.exists(), "registered directory must be removed");
        assert!(kept.exists(), "withdrawn path must be left alone");
        let _ = std::fs::remove_file(&kept);
    }

    #[test]
    fn reaper_writes_back_a_knob_its_owner_left() {
        let d = tempfile::tempdir().unwrap();
        let j = crate::knob::Journal::at(d.path().join("journal"));
        let f = d.path().join("knob");
        std::fs::write(&f, "1").unwrap();
        {
            let r = Reaper::start().unwrap();
            let k = crate::knob::Knob::set_in(&j, &f, "2").unwrap();
            r.register(&Resource::Knob(k.journal_entry().unwrap().into()));
            // As under SIGKILL: the knob is never restored by its owner.
            std::mem::forget(k);
            assert_eq!(std::fs::read_to_string(&f).unwrap(), "2");
        } // drop: pipe closed, the reaper writes the original back
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "1");
        assert_eq!(std::fs::read_dir(j.dir()).unwrap().count(), 0);
    }
}
