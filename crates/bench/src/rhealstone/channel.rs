//! The kernel paths a Rhealstone message goes through (intertask message passing,
//! heursch-2001 §3.1). Each carries one timestamp from the sender (low priority) to the receiver
//! (high priority) in the message body. A timestamp of 0 is the stop sentinel. (The semaphore
//! shuffle has its own round, `super::shuffle`.)

use crate::common::reaper::{Reaper, Resource};
use crate::common::{BenchError, Result};
use rtscope_sys::ipc::{PosixQueue, SysvQueue};
use rtscope_sys::process;
use std::os::fd::{AsRawFd, OwnedFd};
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

const MSG_BYTES: usize = 16;

pub struct Channel<'r> {
    kind: Kind,
    reaper: &'r Reaper,
    resource: Option<Resource>,
    msq: Option<SysvQueue>,
    mq: Option<PosixQueue>,
    pipe: (Option<OwnedFd>, Option<OwnedFd>),
    closed: AtomicBool,
}

fn as_bytes(b: &[u64; 2]) -> &[u8] {
    // SAFETY: two u64 are 16 initialised bytes.
    unsafe { std::slice::from_raw_parts(b.as_ptr() as *const u8, MSG_BYTES) }
}

fn as_bytes_mut(b: &mut [u64; 2]) -> &mut [u8] {
    // SAFETY: two u64 are 16 bytes, any bit pattern valid.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut u8, MSG_BYTES) }
}

impl<'r> Channel<'r> {
    pub fn open(kind: Kind, reaper: &'r Reaper) -> Result<Channel<'r>> {
        let mut c = Channel {
            kind,
            reaper,
            resource: None,
            msq: None,
            mq: None,
            pipe: (None, None),
            closed: AtomicBool::new(false),
        };
        match kind {
            Kind::SysvMsg => {
                let q = SysvQueue::create_private().map_err(|e| BenchError::io("msgget", e))?;
                c.msq = Some(q);
                c.resource = Some(Resource::SysvMsg(q.id()));
            }
            Kind::PosixMq => {
                let name = format!(
                    "/rtscope-bench-{}-{}",
                    std::process::id(),
                    crate::common::mono_ns()
                );
                if name.contains('\0') {
                    return Err(BenchError::Invalid("mq name".into()));
                }
                let mq = PosixQueue::create(&name, 4, MSG_BYTES as i64)
                    .map_err(|e| BenchError::io("mq_open", e))?;
                c.mq = Some(mq);
                c.resource = Some(Resource::PosixMq(name));
            }
            Kind::Pipe => {
                let (r, w) = process::pipe().map_err(|e| BenchError::io("pipe2", e))?;
                c.pipe = (Some(r), Some(w));
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
        let b = [ts, !ts];
        let r = match self.kind {
            Kind::SysvMsg => self.msq.as_ref().map(|q| q.send(b)),
            Kind::PosixMq => self.mq.as_ref().map(|q| q.send(as_bytes(&b))),
            // Pipe writes ≤ PIPE_BUF are atomic.
            Kind::Pipe => self.pipe.1.as_ref().map(|w| {
                match process::write_once(w.as_raw_fd(), as_bytes(&b)) {
                    Ok(MSG_BYTES) => Ok(()),
                    Ok(_) => Err(std::io::Error::other("short pipe write")),
                    Err(e) => Err(e),
                }
            }),
        };
        match r {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(BenchError::io(format!("{} send", self.kind.name()), e)),
            None => Err(BenchError::io(
                format!("{} send", self.kind.name()),
                rtscope_sys::einval(),
            )),
        }
    }

    /// Receiver side: block until the sender hands over; returns its timestamp (0 = stop).
    #[inline]
    pub fn recv(&self) -> Result<u64> {
        loop {
            let r: std::result::Result<u64, std::io::Error> = match self.kind {
                Kind::SysvMsg => match &self.msq {
                    Some(q) => q.recv().map(|b| b[0]),
                    None => Err(rtscope_sys::einval()),
                },
                Kind::PosixMq => {
                    let mut b = [0u64; 2];
                    match &self.mq {
                        Some(q) => q.recv(as_bytes_mut(&mut b)).map(|_| b[0]),
                        None => Err(rtscope_sys::einval()),
                    }
                }
                Kind::Pipe => {
                    let mut b = [0u64; 2];
                    let fd = self.pipe.0.as_ref().map_or(-1, |r| r.as_raw_fd());
                    match process::read_once(fd, as_bytes_mut(&mut b)) {
                        Ok(0) => Ok(0), // write end closed: stop
                        Ok(MSG_BYTES) => Ok(b[0]),
                        Ok(_) => Err(std::io::Error::other("short pipe read")),
                        Err(e) => Err(e),
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
                // Closing our own write end once.
                self.pipe.1 = None;
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
        // The queue descriptor and the pipe's ends close when their fields drop.
    }
}
