//! Pseudo-terminals as line-at-a-time pipes. glibc line-buffers a `FILE` whose descriptor is a
//! terminal (`_IO_file_doallocate`: a character device that `isatty`), and fully buffers one on
//! a regular file (a block of `st_blksize`, written when full or at `fclose`/`exit`). A program's
//! log opened on a pty's slave therefore reaches the master at each line, and what it has
//! written survives its being killed; the reader drains the master without blocking.

use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// A pty in raw mode (no output processing: `\n` stays `\n`), master non-blocking, both ends
/// close-on-exec (a child opens the slave by its path).
#[derive(Debug)]
pub struct Pty {
    master: OwnedFd,
    /// Held open until [`Pty::close_slave`], so the master reads "nothing yet" rather than EIO
    /// before the writer has opened the slave.
    slave: Option<OwnedFd>,
    path: PathBuf,
}

/// Open a pty pair in raw mode.
pub fn open_raw() -> io::Result<Pty> {
    let p = nix::pty::openpty(None, None).map_err(io::Error::from)?;
    let mut t = tcgetattr(&p.slave).map_err(io::Error::from)?;
    cfmakeraw(&mut t);
    tcsetattr(&p.slave, SetArg::TCSANOW, &t).map_err(io::Error::from)?;
    for fd in [&p.master, &p.slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(io::Error::from)?;
    }
    fcntl(&p.master, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).map_err(io::Error::from)?;
    let path = std::fs::read_link(format!("/proc/self/fd/{}", p.slave.as_raw_fd()))?;
    Ok(Pty {
        master: p.master,
        slave: Some(p.slave),
        path,
    })
}

impl Pty {
    /// The slave's device path (`/dev/pts/N`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append what the master holds to `out`, without blocking. Ok(true) once every writer has
    /// closed the slave (and ours is closed) and all is read.
    pub fn drain(&self, out: &mut Vec<u8>) -> io::Result<bool> {
        let mut buf = [0u8; 16384];
        loop {
            match nix::unistd::read(&self.master, &mut buf) {
                Ok(0) => return Ok(true),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(nix::errno::Errno::EAGAIN) => return Ok(false),
                Err(nix::errno::Errno::EINTR) => continue,
                // Linux: EIO on the master once no slave descriptor is open and the buffer is empty.
                Err(nix::errno::Errno::EIO) => return Ok(true),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Close our own slave descriptor: the master reads EIO (end) once the writers' are closed too.
    pub fn close_slave(&mut self) {
        self.slave = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_line_written_on_the_slave_is_read_at_once_from_the_master() {
        let mut p = open_raw().unwrap();
        let mut w = std::fs::OpenOptions::new()
            .write(true)
            .open(p.path())
            .unwrap();
        w.write_all(b"0 1 2\n").unwrap();
        let mut out = Vec::new();
        assert!(!p.drain(&mut out).unwrap());
        assert_eq!(out, b"0 1 2\n", "raw mode: no CR added");
        drop(w);
        p.close_slave();
        assert!(p.drain(&mut out).unwrap(), "every slave closed: the end");
    }
}
