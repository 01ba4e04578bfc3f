//! `hackbench`: groups of `fds` senders and `fds` receivers; every sender writes 100-byte messages
//! to every receiver of its group over UNIX stream sockets, receivers read them one by one
//! (hackbench's socket mode, looping until stopped). Blocking reads and writes make this a
//! scheduler and system-call stress: paper §3.3 item 1.

use crate::plan::Unit;
use crate::shm::Slot;
use crate::supervise::Spawner;
use std::convert::Infallible;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// hackbench's DATASIZE.
const MSG_BYTES: usize = 100;

/// Receiver counters.
pub(crate) const C_MESSAGES: usize = 0;
pub(crate) const C_BYTES: usize = 1;
/// Sender counter (messages written).
pub(crate) const C_SENT: usize = 0;

fn socketpair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    rtscope_sys::net::socket_pair()
}

pub(crate) fn spawn_group(
    sp: Spawner,
    u: &Unit,
    fds: u32,
    workers: &mut Vec<(i32, usize)>,
) -> std::io::Result<()> {
    let pairs: Vec<(OwnedFd, OwnedFd)> =
        (0..fds).map(|_| socketpair()).collect::<Result<_, _>>()?;
    let cpus = sp.cpus().to_vec();
    for (r, pair) in pairs.iter().enumerate() {
        let rfd = pair.0.as_raw_fd();
        let slot = u.first_slot + r;
        let pid = sp.spawn(slot, &cpus, move |s| receiver(s, rfd))?;
        workers.push((pid, slot));
    }
    let wfds: Vec<RawFd> = pairs.iter().map(|p| p.1.as_raw_fd()).collect();
    for k in 0..fds as usize {
        let slot = u.first_slot + fds as usize + k;
        let w = wfds.clone();
        let pid = sp.spawn(slot, &cpus, move |s| sender(s, &w))?;
        workers.push((pid, slot));
    }
    // The supervisor's copies close here; the group's processes hold theirs.
    drop(pairs);
    Ok(())
}

fn receiver(slot: &Slot, fd: RawFd) -> Infallible {
    let mut buf = [0u8; MSG_BYTES];
    let (mut msgs, mut bytes) = (0u64, 0u64);
    loop {
        let n = rtscope_sys::process::read_once(fd, &mut buf);
        if let Ok(n @ 1..) = n {
            bytes += n as u64;
            // A stream socket may split a message; count whole messages delivered.
            msgs = bytes / MSG_BYTES as u64;
            slot.set(C_MESSAGES, msgs);
            slot.set(C_BYTES, bytes);
        } else if n
            .as_ref()
            .map_or_else(|e| !rtscope_sys::is_eintr(e), |_| true)
        {
            // The peer is gone: nothing left to do in this process.
            rtscope_sys::process::exit_now(if msgs > 0 { 0 } else { 1 });
        }
    }
}

fn sender(slot: &Slot, fds: &[RawFd]) -> Infallible {
    let buf = [0x5au8; MSG_BYTES];
    let mut sent = 0u64;
    loop {
        for &fd in fds {
            let mut off = 0;
            while off < MSG_BYTES {
                match rtscope_sys::process::write_once(fd, &buf[off..]) {
                    Ok(n) if n > 0 => off += n,
                    Err(e) if rtscope_sys::is_eintr(&e) => {}
                    // Receiver gone.
                    _ => rtscope_sys::process::exit_now(1),
                }
            }
            sent += 1;
        }
        slot.set(C_SENT, sent);
    }
}
