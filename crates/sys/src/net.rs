//! Sockets: pairs and local ports.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// A connected pair of AF_UNIX stream sockets.
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::empty(),
    )
    .map_err(io::Error::from)
}

/// The local port an IPv4 socket is bound to (getsockname).
pub fn local_port(fd: &impl AsRawFd) -> io::Result<u16> {
    let a: nix::sys::socket::SockaddrIn = nix::sys::socket::getsockname(fd.as_raw_fd())?;
    Ok(a.port())
}
