//! The kernel paths a Rhealstone message goes through (intertask message passing,
//! heursch-2001 §3.1). Each carries one timestamp from the sender (low priority) to the receiver
//! (high priority) in the message body. A timestamp of 0 is the stop sentinel. (The semaphore
//! shuffle has its own round, `super::shuffle`.)

use crate::common::reaper::{Reaper, Resource};
use crate::common::{BenchError, Result};
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    SysvMsg,
    PosixMq,
    Pipe,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::SysvMsg => "sysv_msg",
            Kind::PosixMq => "posix_mq",
            Kind::Pipe => "pipe",
        }
    }
}

#[repr(C)]
struct SysvMsg {
    mtype: libc::c_long,
    /// Timestamp and a second word: Rhealstone asks for a message of non-zero length.
    body: [u64; 2],
}

const MSG_BYTES: usize = 16;

pub struct Channel<'r> {
    kind: Kind,
    reaper: &'r Reaper,
    resource: Option<Resource>,
    msq: i32,
    mq: libc::mqd_t,
    pipe: [i32; 2],
    closed: AtomicBool,
}

impl<'r> Channel<'r> {
    pub fn open(kind: Kind, reaper: &'r Reaper) -> Result<Channel<'r>> {
        let mut c = Channel {
            kind,
            reaper,
            resource: None,
            msq: -1,
            mq: -1,
            pipe: [-1, -1],
            closed: AtomicBool::new(false),
        };
        match kind {
            Kind::SysvMsg => {
                // SAFETY: plain syscall.
                let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
                if id < 0 {
                    return Err(BenchError::last_os("msgget"));
                }
                c.msq = id;
                c.resource = Some(Resource::SysvMsg(id));
            }
            Kind::PosixMq => {
                let name = format!(
                    "/rtscope-bench-{}-{}",
                    std::process::id(),
                    crate::common::mono_ns()
                );
                let cname = std::ffi::CString::new(name.clone())
                    .map_err(|_| BenchError::Invalid("mq name".into()))?;
                // SAFETY: mq_attr is plain data.
                let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
                attr.mq_maxmsg = 4;
                attr.mq_msgsize = MSG_BYTES as _;
                // SAFETY: valid name and attr pointers.
                let mq = unsafe {
                    libc::mq_open(
                        cname.as_ptr(),
                        libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
                        0o600 as libc::mode_t,
                        &attr as *const libc::mq_attr,
                    )
                };
                if mq < 0 {
                    return Err(BenchError::last_os("mq_open"));
                }
                c.mq = mq;
                c.resource = Some(Resource::PosixMq(name));
            }
            Kind::Pipe => {
                // SAFETY: valid 2-element array.
                if unsafe { libc::pipe2(c.pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                    return Err(BenchError::last_os("pipe2"));
                }
            }
        }
        if let Some(r) = &c.resource {
            reaper.register(r);
        }
        Ok(c)
    }

    /// Sender side: hand `ts` (ns, non-zero; 0 = stop) to the receiver.
    #[inline]
    pub fn send(&self, ts: u64) -> Result<()> {
        let rc = match self.kind {
            Kind::SysvMsg => {
                let m = SysvMsg {
                    mtype: 1,
                    body: [ts, !ts],
                };
                // SAFETY: m is a valid message of MSG_BYTES body bytes.
                unsafe {
                    libc::msgsnd(
                        self.msq,
                        &m as *const SysvMsg as *const libc::c_void,
                        MSG_BYTES,
                        0,
                    )
                }
            }
            Kind::PosixMq => {
                let b = [ts, !ts];
                // SAFETY: b is MSG_BYTES long.
                unsafe { libc::mq_send(self.mq, b.as_ptr() as *const libc::c_char, MSG_BYTES, 0) }
            }
            Kind::Pipe => {
                let b = [ts, !ts];
                // SAFETY: b is MSG_BYTES long; pipe writes ≤ PIPE_BUF are atomic.
                let n = unsafe {
                    libc::write(self.pipe[1], b.as_ptr() as *const libc::c_void, MSG_BYTES)
                };
                if n == MSG_BYTES as isize {
                    0
                } else {
                    -1
                }
            }
        };
        if rc != 0 {
            return Err(BenchError::last_os(format!("{} send", self.kind.name())));
        }
        Ok(())
    }

    /// Receiver side: block until the sender hands over; returns its timestamp (0 = stop).
    #[inline]
    pub fn recv(&self) -> Result<u64> {
        loop {
            let r: std::result::Result<u64, std::io::Error> = match self.kind {
                Kind::SysvMsg => {
                    let mut m = SysvMsg {
                        mtype: 0,
                        body: [0; 2],
                    };
                    // SAFETY: m has room for MSG_BYTES of body.
                    let n = unsafe {
                        libc::msgrcv(
                            self.msq,
                            &mut m as *mut SysvMsg as *mut libc::c_void,
                            MSG_BYTES,
                            0,
                            0,
                        )
                    };
                    if n < 0 {
                        Err(std::io::Error::last_os_error())
                    } else {
                        Ok(m.body[0])
                    }
                }
                Kind::PosixMq => {
                    let mut b = [0u64; 2];
                    // SAFETY: b is MSG_BYTES long, equal to mq_msgsize.
                    let n = unsafe {
                        libc::mq_receive(
                            self.mq,
                            b.as_mut_ptr() as *mut libc::c_char,
                            MSG_BYTES,
                            std::ptr::null_mut(),
                        )
                    };
                    if n < 0 {
                        Err(std::io::Error::last_os_error())
                    } else {
                        Ok(b[0])
                    }
                }
                Kind::Pipe => {
                    let mut b = [0u64; 2];
                    // SAFETY: b is MSG_BYTES long.
                    let n = unsafe {
                        libc::read(self.pipe[0], b.as_mut_ptr() as *mut libc::c_void, MSG_BYTES)
                    };
                    match n {
                        0 => Ok(0), // write end closed: stop
                        n if n == MSG_BYTES as isize => Ok(b[0]),
                        n if n < 0 => Err(std::io::Error::last_os_error()),
                        _ => Err(std::io::Error::other("short pipe read")),
                    }
                }
            };
            match r {
                Ok(v) => return Ok(v),
                Err(e)
                    if e.kind() == std::io::ErrorKind::Interrupted
                        && !self.closed.load(Ordering::Relaxed) =>
                {
                    continue
                }
                // EIDRM/EBADF after `abort`: the sender is gone.
                Err(_) if self.closed.load(Ordering::Relaxed) => return Ok(0),
                Err(e) => return Err(BenchError::io(format!("{} receive", self.kind.name()), e)),
            }
        }
    }

    /// Unblock a receiver whose sender could not send the sentinel: remove the queue (msgrcv
    /// returns EIDRM), close the pipe's write end, or send the sentinel to the POSIX queue.
    pub fn abort(&mut self) {
        self.closed.store(true, Ordering::Relaxed);
        match self.kind {
            Kind::SysvMsg => {
                if let Some(r) = self.resource.take() {
                    self.reaper.release(&r);
                }
            }
            Kind::Pipe => {
                if self.pipe[1] >= 0 {
                    // SAFETY: closing our own fd once.
                    unsafe { libc::close(self.pipe[1]) };
                    self.pipe[1] = -1;
                }
            }
            Kind::PosixMq => {
                let _ = self.send(0);
            }
        }
    }
}

impl Drop for Channel<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.resource.take() {
            self.reaper.release(&r);
        }
        // SAFETY: closing the fds we opened, once.
        unsafe {
            if self.mq >= 0 {
                libc::mq_close(self.mq);
            }
            for fd in self.pipe {
                if fd >= 0 {
                    libc::close(fd);
                }
            }
        }
    }
}
