//! `net`: the paper's download loop (§3.3 item 3: one wget per core fetching a file and writing
//! it to /dev/null). A local server streams data at full rate to one client per CPU, which
//! discards it.
//!
//! Loopback (default): the listener is bound by rtscope (so a busy port is reported before
//! anything starts) and inherited by the sender processes.
//!
//! veth (`--net-veth`): the server side lives in a private network namespace created with
//! `unshare(CLONE_NEWNET)` by a holder process; a veth pair joins it to ours, so the traffic
//! crosses a (virtual) NIC with NAPI and NET_RX softirqs. When the holder dies the namespace
//! goes, taking the veth pair with it: nothing is left behind even after a SIGKILL.

use crate::plan::Unit;
use crate::shm::{Shared, Slot};
use crate::supervise::Spawner;
use crate::sys;
use std::convert::Infallible;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Client counters.
pub(crate) const C_RX_BYTES: usize = 0;
pub(crate) const C_CONNECTS: usize = 1;
/// Sender counter.
pub(crate) const C_TX_BYTES: usize = 0;

const BUF: usize = 128 << 10;

fn die(code: i32) -> Infallible {
    rtscope_sys::process::exit_now(code)
}

fn sender(slot: &Slot, listener: RawFd) -> Infallible {
    // SAFETY: the inherited listening socket; this process owns its copy.
    let l = unsafe { TcpListener::from_raw_fd(listener) };
    let buf = vec![0x42u8; BUF];
    loop {
        let Ok((mut s, _)) = l.accept() else {
            sys::sleep_ms(10);
            continue;
        };
        while let Ok(n) = s.write(&buf) {
            if n == 0 {
                break;
            }
            slot.add(C_TX_BYTES, n as u64);
        }
    }
}

fn client(slot: &Slot, addr: SocketAddrV4) -> Infallible {
    let mut buf = vec![0u8; BUF];
    loop {
        let Ok(mut s) = TcpStream::connect(addr) else {
            sys::sleep_ms(10);
            continue;
        };
        slot.add(C_CONNECTS, 1);
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            slot.add(C_RX_BYTES, n as u64);
        }
    }
}

pub(crate) fn spawn(
    sp: Spawner,
    u: &Unit,
    clients: u32,
    veth: bool,
    listener: Option<&OwnedFd>,
    workers: &mut Vec<(i32, usize)>,
) -> std::io::Result<()> {
    let n = clients as usize;
    let cpus = sp.cpus().to_vec();
    let addr = if veth {
        spawn_veth_server(&sp, u, n, workers)?
    } else {
        let l = listener.ok_or_else(|| std::io::Error::other("net: no listener"))?;
        let port = local_port(l.as_raw_fd())?;
        let lfd = l.as_raw_fd();
        for k in 0..n {
            let slot = u.first_slot + k;
            let pid = sp.spawn(slot, &cpus, move |s| sender(s, lfd))?;
            workers.push((pid, slot));
        }
        SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)
    };
    // One client per CPU, pinned, like one wget loop per core.
    for (k, &cpu) in cpus.iter().enumerate().take(n) {
        let slot = u.first_slot + n + k;
        let pid = sp.spawn(slot, &[cpu], move |s| client(s, addr))?;
        workers.push((pid, slot));
    }
    Ok(())
}

fn local_port(fd: RawFd) -> std::io::Result<u16> {
    // SAFETY: a descriptor the caller holds open for the call.
    rtscope_sys::net::local_port(&unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) })
}

fn ip(args: &[&str]) -> std::io::Result<()> {
    let ipcmd = crate::validate::ip_command().ok_or_else(|| std::io::Error::other("no ip"))?;
    let st = std::process::Command::new(ipcmd)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()?;
    if st.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("ip {args:?}: {st}")))
    }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    rtscope_sys::process::pipe()
}

/// Addresses of the /30 between our namespace (`.1`) and the server's (`.2`), from the
/// supervisor's pid so concurrent rtscope instances do not collide.
pub(crate) fn veth_addrs(pid: u32) -> (Ipv4Addr, Ipv4Addr) {
    let c = ((pid >> 6) & 0xff) as u8;
    let d = ((pid & 63) * 4) as u8;
    (
        Ipv4Addr::new(10, 213, c, d + 1),
        Ipv4Addr::new(10, 213, c, d + 2),
    )
}

fn spawn_veth_server(
    sp: &Spawner,
    u: &Unit,
    n: usize,
    workers: &mut Vec<(i32, usize)>,
) -> std::io::Result<SocketAddrV4> {
    let sup = sys::getpid();
    let (host_ip, ns_ip) = veth_addrs(sup as u32);
    let (a, b) = (format!("rts{sup}a"), format!("rts{sup}b"));
    ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
    let cleanup = |e: std::io::Error| {
        let _ = ip(&["link", "del", &b]);
        e
    };
    let host_cidr = format!("{host_ip}/30");
    ip(&["addr", "add", &host_cidr, "dev", &b]).map_err(cleanup)?;
    ip(&["link", "set", &b, "up"]).map_err(cleanup)?;

    let (ready_r, ready_w) = pipe().map_err(cleanup)?;
    let (go_r, go_w) = pipe().map_err(cleanup)?;
    let holder_slot = u.first_slot + 2 * n;
    let (rw, gr) = (ready_w.as_raw_fd(), go_r.as_raw_fd());
    let senders = u.first_slot..u.first_slot + n;
    let shm = sp.shm();
    let a2 = a.clone();
    let holder = sp
        .spawn_now(holder_slot, sp.cpus(), move |_| {
            holder_main(rw, gr, &a2, ns_ip, shm, senders)
        })
        .map_err(cleanup)?;
    workers.push((holder, holder_slot));
    drop(ready_w);
    drop(go_r);
    let mut ready = std::fs::File::from(ready_r);
    let mut go = std::fs::File::from(go_w);
    let mut byte = [0u8; 1];
    ready.read_exact(&mut byte).map_err(cleanup)?; // the holder has its own namespace now
    ip(&["link", "set", &a, "netns", &holder.to_string()]).map_err(cleanup)?;
    go.write_all(&[1]).map_err(cleanup)?;
    let mut port = [0u8; 2];
    // EOF here means the holder failed; its namespace (and the moved veth end) died with it.
    ready.read_exact(&mut port).map_err(cleanup)?;
    Ok(SocketAddrV4::new(ns_ip, u16::from_be_bytes(port)))
}

/// Runs inside the new namespace: configures its end of the veth, listens, forks the senders
/// (which die with it), reports the port, then waits.
fn holder_main(
    ready_w: RawFd,
    go_r: RawFd,
    ifname: &str,
    ns_ip: Ipv4Addr,
    shm: &Shared,
    sender_slots: std::ops::Range<usize>,
) -> Infallible {
    if rtscope_sys::fs::new_network_namespace().is_err() {
        return die(10);
    }
    // SAFETY: the inherited pipe ends, owned by this process from now on.
    let (mut ready, mut go) = unsafe {
        (
            std::fs::File::from_raw_fd(ready_w),
            std::fs::File::from_raw_fd(go_r),
        )
    };
    if ready.write_all(&[1]).is_err() {
        return die(11);
    }
    let mut b = [0u8; 1];
    if go.read_exact(&mut b).is_err() {
        return die(12);
    }
    let cidr = format!("{ns_ip}/30");
    for args in [
        vec!["link", "set", "lo", "up"],
        vec!["addr", "add", &cidr, "dev", ifname],
        vec!["link", "set", ifname, "up"],
    ] {
        if ip(&args).is_err() {
            return die(13);
        }
    }
    let Ok(l) = TcpListener::bind(SocketAddrV4::new(ns_ip, 0)) else {
        return die(14);
    };
    let Ok(port) = local_port(l.as_raw_fd()) else {
        return die(14);
    };
    let me = sys::getpid();
    for slot in sender_slots {
        // SAFETY: the child runs `sender` and never returns here.
        let pid = match unsafe { rtscope_sys::process::fork() } {
            Ok(rtscope_sys::process::Fork::Child) => 0,
            Ok(rtscope_sys::process::Fork::Parent(p)) => p,
            Err(_) => -1,
        };
        if pid == 0 {
            rtscope_sys::process::set_own_group();
            sys::die_with_parent(rtscope_sys::Signal::SIGKILL, me);
            let s = shm.slot(slot);
            s.pid
                .store(sys::getpid() as i64, std::sync::atomic::Ordering::Relaxed);
            sender(s, l.as_raw_fd());
        }
        if pid < 0 {
            return die(15);
        }
    }
    if ready.write_all(&port.to_be_bytes()).is_err() {
        return die(16);
    }
    loop {
        // Reap senders that end (they only end on error); never exit on our own.
        if rtscope_sys::process::wait(-1).is_err() {
            sys::sleep_ms(1000);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn veth_addresses_are_a_slash_30() {
        // pid 4242 = 66*64 + 18: third octet 66, fourth 18*4 = 72 -> .73 and .74.
        assert_eq!(
            veth_addrs(4242),
            (
                Ipv4Addr::new(10, 213, 66, 73),
                Ipv4Addr::new(10, 213, 66, 74)
            )
        );
        // Largest offset 63*4 = 252 -> .253/.254 stay inside the /30 (252..255).
        assert_eq!(veth_addrs(63).1, Ipv4Addr::new(10, 213, 0, 254));
    }
}
