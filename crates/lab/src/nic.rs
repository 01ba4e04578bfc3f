//! Network traffic that raises NIC interrupts in the guest (`lab run --nic-load PPS`).
//!
//! Cerqueira & Brandenburg (OSPERT'13, §3.3) ran a wget loop over 1 Gb Ethernet in their I/O
//! scenario: its packets arrive through a NIC, so every burst is a device interrupt, then the
//! NET_RX softirq and the socket path, on the measured cores. Loopback traffic has the softirq
//! but no device interrupt. Here the guest gets a virtio-net device on QEMU's user networking
//! (slirp) with `restrict=on` (the guest can reach nothing: no route out of the VM, not even to
//! the host) and one forwarding rule, a UDP port on the host's 127.0.0.1 to the guest's port 9
//! (the discard service, RFC 863). A thread of the rtscope running `lab run` sends full-MTU
//! datagrams to that port at a fixed rate; each one crosses the virtio-net RX queue (an MSI-X
//! interrupt on `virtioN-input.0` unless NAPI is already polling the queue), the guest's IP and
//! UDP stack, and ends in a socket of `rtscope lab nic-sink` that reads and discards it.
//!
//! The guest's counters before and after the verb (`/proc/interrupts`, eth0's `rx_packets`,
//! `/proc/net/snmp`, `/proc/uptime`) come home in `lab-nic/`, with what the host sent.

use crate::field::*;
use crate::{LabError, Result};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// slirp's first guest address (its DHCP range starts there; the guest sets it statically).
pub const GUEST_ADDR: &str = "10.0.2.15";
/// The discard service's port (RFC 863).
pub const GUEST_PORT: u16 = 9;
/// One full Ethernet frame: 1500-byte MTU minus the IPv4 (20) and UDP (8) headers, the size of
/// a bulk download's packets.
pub const PAYLOAD: usize = 1472;
pub const MAX_PPS: u32 = 50_000;
/// Where the guest's snapshots and the host's count land in the results.
pub const DIR: &str = "lab-nic";

/// `--nic-load PPS`: datagrams per second of host time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NicLoad {
    pub pps: u32,
}

impl NicLoad {
    /// `2000` or `2000/s`, 1..=[`MAX_PPS`].
    pub fn parse(s: &str) -> Result<NicLoad> {
        let t = s.trim();
        let t = t.strip_suffix("/s").unwrap_or(t);
        t.parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_PPS).contains(n))
            .map(|pps| NicLoad { pps })
            .ok_or_else(|| {
                LabError::Usage(format!(
                    "{NIC_LOAD}: must be 1..={MAX_PPS} datagrams per second (e.g. 2000 or 2000/s); got '{s}'"
                ))
            })
    }
}

/// The QEMU arguments of the guest's NIC: virtio-net on slirp, isolated, one UDP forwarding
/// rule from the host's loopback. No option ROM (`romfile=`): the kernel is booted directly,
/// and iPXE would only lengthen the firmware's start.
pub fn qemu_args(host_port: u16) -> Vec<String> {
    vec![
        "-netdev".into(),
        format!(
            "user,id=nic0,restrict=on,ipv6=off,hostfwd=udp:127.0.0.1:{host_port}-{GUEST_ADDR}:{GUEST_PORT}"
        ),
        "-device".into(),
        "virtio-net-pci,netdev=nic0,romfile=".into(),
    ]
}

/// The guest's /init lines that bring eth0 up, start the sink and take the first snapshot
/// (before the verb's start marker, after which the host starts sending).
pub fn init_up() -> String {
    format!(
        r#"mkdir -p /out/{DIR}
nic_snapshot() {{
  {{ echo "== uptime"; cat /proc/uptime; echo "== rx_packets"; cat /sys/class/net/eth0/statistics/rx_packets; echo "== snmp"; cat /proc/net/snmp; echo "== interrupts"; cat /proc/interrupts; }} >/out/{DIR}/$1.txt 2>&1
}}
ip link set lo up
ip addr add {GUEST_ADDR}/24 dev eth0 && ip link set eth0 up || echo "RTSCOPE-LAB-NIC-ERROR eth0 could not be configured"
/bin/rtscope lab nic-sink {GUEST_PORT} >/out/{DIR}/sink.log 2>&1 </dev/null &
NICSINK=$!
i=0
while ! grep -q ':{GUEST_PORT:04X} ' /proc/net/udp && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
nic_snapshot before
"#
    )
}

/// The lines after the verb: the second snapshot, then the sink stopped.
pub fn init_down() -> String {
    "nic_snapshot after\nkill $NICSINK 2>/dev/null\nwait $NICSINK 2>/dev/null\n".to_string()
}

/// The guest's sink: a UDP socket on `port` that reads and discards until killed.
pub fn sink(port: u16) -> Result<()> {
    let s = UdpSocket::bind(("0.0.0.0", port))
        .map_err(crate::io(format!("nic-sink: binding UDP port {port}")))?;
    let mut buf = vec![0u8; 65536];
    loop {
        // Interrupted reads (a signal) are retried; the process ends by being killed.
        if let Err(e) = s.recv(&mut buf) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(LabError::Io("nic-sink: receiving".into(), e));
            }
        }
    }
}

/// The host side: a free UDP port on 127.0.0.1 for QEMU's forwarding rule, and the sending
/// thread once the guest is ready. Dropping it stops and joins the thread (every exit path of
/// `guest::run` drops it; on SIGKILL the thread dies with the process).
pub struct Feed {
    pub load: NicLoad,
    pub host_port: u16,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
    started: Option<Instant>,
    secs: f64,
}

impl Feed {
    /// A port the kernel reports free now. QEMU binds it a moment later; were another process
    /// to take it in between, QEMU exits naming the forwarding rule.
    pub fn new(load: NicLoad) -> Result<Feed> {
        let probe = UdpSocket::bind("127.0.0.1:0").map_err(crate::io(format!(
            "{NIC_LOAD}: finding a free UDP port on 127.0.0.1"
        )))?;
        let host_port = probe
            .local_addr()
            .map_err(crate::io(format!("{NIC_LOAD}: reading the port")))?
            .port();
        drop(probe);
        Ok(Feed {
            load,
            host_port,
            stop: Arc::new(AtomicBool::new(false)),
            sent: Arc::new(AtomicU64::new(0)),
            thread: None,
            started: None,
            secs: 0.0,
        })
    }

    /// Start sending (once).
    pub fn start(&mut self) -> Result<()> {
        if self.thread.is_some() {
            return Ok(());
        }
        let sock = UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.connect(("127.0.0.1", self.host_port)).map(|_| s))
            .map_err(crate::io(format!("{NIC_LOAD}: the host's sending socket")))?;
        let (stop, sent, pps) = (self.stop.clone(), self.sent.clone(), self.load.pps);
        let t = std::thread::Builder::new()
            .name("nic-load".into())
            .spawn(move || send_loop(&sock, pps, &stop, &sent))
            .map_err(crate::io(format!(
                "{NIC_LOAD}: starting the sending thread"
            )))?;
        self.thread = Some(t);
        self.started = Some(Instant::now());
        Ok(())
    }

    pub fn running(&self) -> bool {
        self.thread.is_some()
    }

    /// Stop and join the thread; the datagrams sent and the seconds it sent for.
    pub fn stop(&mut self) -> (u64, f64) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            self.secs = self.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
        }
        (self.sent.load(Ordering::SeqCst), self.secs)
    }

    /// The host's count as a results file (`lab-nic/host.txt`).
    pub fn report_file(&mut self) -> (String, Vec<u8>) {
        let (sent, secs) = self.stop();
        (
            format!("{DIR}/host.txt"),
            format!(
                "pps={}\nsent={sent}\nseconds={secs:.3}\npayload={PAYLOAD}\nhost_port={}\n",
                self.load.pps, self.host_port
            )
            .into_bytes(),
        )
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Datagram k is due at k / pps seconds after the start. A sender that fell behind (the host
/// did not run it) catches up by at most 10 ms of datagrams and skips the rest, so a stall is
/// not followed by a burst that NAPI would take in one interrupt.
fn send_loop(sock: &UdpSocket, pps: u32, stop: &AtomicBool, sent: &AtomicU64) {
    let payload = vec![0x5au8; PAYLOAD];
    let t0 = Instant::now();
    let period = 1.0 / pps as f64;
    let slack = (pps as u64 / 100).max(1);
    // The index of the next datagram on the schedule.
    let mut next: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let due = (t0.elapsed().as_secs_f64() * pps as f64) as u64 + 1;
        if due > next + slack {
            next = due - slack;
        }
        while next < due {
            // A refused send (nothing listening yet: ICMP port unreachable) is not counted.
            if sock.send(&payload).is_ok() {
                sent.fetch_add(1, Ordering::Relaxed);
            }
            next += 1;
        }
        let at = next as f64 * period;
        let now = t0.elapsed().as_secs_f64();
        if at > now {
            std::thread::sleep(Duration::from_secs_f64((at - now).min(0.05)));
        }
    }
}

/// The guest's counters at one moment (a snapshot file of [`init_up`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub uptime_s: f64,
    pub rx_packets: u64,
    /// UDP datagrams delivered to a socket (`Udp: InDatagrams`).
    pub udp_in: u64,
    /// Dropped because the socket's buffer was full (`Udp: RcvbufErrors`).
    pub udp_rcvbuf_errors: u64,
    /// Arrived for a port nobody listened on (`Udp: NoPorts`).
    pub udp_no_ports: u64,
    /// The virtio-net receive queues' interrupts over all CPUs.
    pub rx_irqs: u64,
}

/// A snapshot file: `== uptime`, `== rx_packets`, `== snmp`, `== interrupts` sections.
pub fn parse_snapshot(text: &str) -> Option<Snapshot> {
    let mut sections: Vec<(&str, Vec<&str>)> = Vec::new();
    for l in text.lines() {
        if let Some(name) = l.strip_prefix("== ") {
            sections.push((name.trim(), Vec::new()));
        } else if let Some((_, v)) = sections.last_mut() {
            v.push(l);
        }
    }
    let sec = |n: &str| sections.iter().find(|(k, _)| *k == n).map(|(_, v)| v);
    let uptime_s = sec("uptime")?
        .first()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let rx_packets = sec("rx_packets")?.first()?.trim().parse().ok()?;
    let snmp = sec("snmp")?;
    let udp = snmp_row(snmp, "Udp")?;
    let field = |k: &str| udp.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
    Some(Snapshot {
        uptime_s,
        rx_packets,
        udp_in: field("InDatagrams")?,
        udp_rcvbuf_errors: field("RcvbufErrors").unwrap_or(0),
        udp_no_ports: field("NoPorts").unwrap_or(0),
        rx_irqs: rx_irqs(&sec("interrupts")?.join("\n"))?,
    })
}

/// `/proc/net/snmp` gives each protocol as a header line and a value line with the same prefix.
fn snmp_row<'a>(lines: &[&'a str], proto: &str) -> Option<Vec<(&'a str, u64)>> {
    let prefix = format!("{proto}:");
    let mut rows = lines.iter().filter(|l| l.starts_with(&prefix));
    let names = rows.next()?;
    let values = rows.next()?;
    let v: Vec<(&str, u64)> = names
        .split_whitespace()
        .skip(1)
        .zip(values.split_whitespace().skip(1))
        .filter_map(|(n, v)| Some((n, v.parse().ok()?)))
        .collect();
    Some(v)
}

/// The virtio-net receive-queue interrupts in `/proc/interrupts`, summed over CPUs: the rows
/// whose name is `virtioN-input.Q` (the MSI-X vector per receive queue). None when there is
/// none (no virtio-net device, or legacy INTx shared with the other queues).
pub fn rx_irqs(text: &str) -> Option<u64> {
    let mut lines = text.lines();
    let ncpu = lines.next()?.split_whitespace().count();
    let mut total = None;
    for l in lines {
        let mut w = l.split_whitespace();
        let Some(label) = w.next() else { continue };
        if !label.ends_with(':') {
            continue;
        }
        let rest: Vec<&str> = w.collect();
        let is_rx = rest
            .last()
            .is_some_and(|n| n.starts_with("virtio") && n.contains("-input."));
        if !is_rx {
            continue;
        }
        let sum: u64 = rest
            .iter()
            .take(ncpu)
            .map_while(|c| c.parse::<u64>().ok())
            .sum();
        *total.get_or_insert(0) += sum;
    }
    total
}

/// What the NIC load did, from the results' `lab-nic/` files.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    pub pps: u32,
    pub sent: u64,
    pub host_secs: f64,
    pub guest_secs: f64,
    pub rx_packets: u64,
    pub udp_in: u64,
    pub udp_dropped: u64,
    pub rx_irqs: u64,
}

impl Figures {
    /// From the results' files; None without `lab-nic/` (no `--nic-load`), an error when the
    /// guest's snapshots are missing or unreadable (eth0 never came up).
    pub fn from_files(files: &[(String, Vec<u8>)]) -> Option<std::result::Result<Figures, String>> {
        let get = |n: &str| {
            files
                .iter()
                .find(|(p, _)| *p == format!("{DIR}/{n}"))
                .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        };
        let host = get("host.txt")?;
        let kv = |k: &str| {
            host.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
                .map(str::to_string)
        };
        let snap = |n: &str| {
            let t = get(&format!("{n}.txt"))
                .ok_or_else(|| format!("the guest's {DIR}/{n}.txt is missing"))?;
            parse_snapshot(&t).ok_or_else(|| {
                format!(
                    "the guest's {DIR}/{n}.txt is incomplete (eth0 or its virtio-net interrupts missing): {}",
                    t.lines().take(3).collect::<Vec<_>>().join(" | ")
                )
            })
        };
        let r = (|| {
            let (b, a) = (snap("before")?, snap("after")?);
            Ok(Figures {
                pps: kv("pps").and_then(|v| v.parse().ok()).unwrap_or(0),
                sent: kv("sent").and_then(|v| v.parse().ok()).unwrap_or(0),
                host_secs: kv("seconds").and_then(|v| v.parse().ok()).unwrap_or(0.0),
                guest_secs: a.uptime_s - b.uptime_s,
                rx_packets: a.rx_packets.saturating_sub(b.rx_packets),
                udp_in: a.udp_in.saturating_sub(b.udp_in),
                udp_dropped: a.udp_rcvbuf_errors.saturating_sub(b.udp_rcvbuf_errors)
                    + a.udp_no_ports.saturating_sub(b.udp_no_ports),
                rx_irqs: a.rx_irqs.saturating_sub(b.rx_irqs),
            })
        })();
        Some(r)
    }

    /// One line for the lab's progress output.
    pub fn summary(&self) -> String {
        let per = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
        format!(
            "NIC load: the host sent {} datagrams in {:.1} s ({:.0}/s, {NIC_LOAD} {}); during the verb ({:.1} s of guest time) eth0 received {} packets ({:.0}/s), UDP delivered {} to the sink ({} dropped), virtio-net RX interrupts {} ({:.0}/s, {:.2} per packet)",
            self.sent,
            self.host_secs,
            per(self.sent, self.host_secs),
            self.pps,
            self.guest_secs,
            self.rx_packets,
            per(self.rx_packets, self.guest_secs),
            self.udp_in,
            self.udp_dropped,
            self.rx_irqs,
            per(self.rx_irqs, self.guest_secs),
            if self.rx_packets > 0 {
                self.rx_irqs as f64 / self.rx_packets as f64
            } else {
                0.0
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_grammar() {
        assert_eq!(NicLoad::parse("2000").unwrap().pps, 2000);
        assert_eq!(NicLoad::parse("1/s").unwrap().pps, 1);
        assert_eq!(NicLoad::parse("50000").unwrap().pps, 50_000);
        for bad in ["0", "50001", "-1", "2k", "", "1.5", "x/s"] {
            match NicLoad::parse(bad) {
                Err(LabError::Usage(m)) => {
                    assert!(m.starts_with("⟨lab.nic_load⟩: must be 1..=50000"), "{m}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn qemu_netdev_is_isolated_and_forwards_one_loopback_port() {
        let a = qemu_args(40123).join(" ");
        assert_eq!(
            a,
            "-netdev user,id=nic0,restrict=on,ipv6=off,hostfwd=udp:127.0.0.1:40123-10.0.2.15:9 -device virtio-net-pci,netdev=nic0,romfile="
        );
    }

    #[test]
    fn init_lines_wait_for_the_sink_and_snapshot() {
        let up = init_up();
        assert!(up.contains("ip addr add 10.0.2.15/24 dev eth0"));
        // Port 9 in /proc/net/udp's hex.
        assert!(up.contains("grep -q ':0009 ' /proc/net/udp"), "{up}");
        assert!(up.contains("/bin/rtscope lab nic-sink 9 "));
        assert!(up.ends_with("nic_snapshot before\n"));
        assert!(init_down().starts_with("nic_snapshot after\n"));
    }

    // /proc/interrupts of a 2-vCPU guest with a virtio-net device (MSI-X), cut to the rows that
    // matter; the counts are hand-made.
    const INTERRUPTS: &str = "            CPU0       CPU1       \n   0:         45          0   IO-APIC   2-edge      timer\n   4:        310          0   IO-APIC   4-edge      ttyS0\n  24:          0          0  PCI-MSIX-0000:00:02.0   0-edge      virtio0-config\n  25:       1200         34  PCI-MSIX-0000:00:02.0   1-edge      virtio0-input.0\n  26:          1          0  PCI-MSIX-0000:00:02.0   2-edge      virtio0-output.0\n NMI:          0          0   Non-maskable interrupts\n LOC:      52011      48876   Local timer interrupts\n";

    #[test]
    fn rx_interrupts_are_the_input_queue_rows() {
        assert_eq!(rx_irqs(INTERRUPTS), Some(1234));
        let none = "            CPU0\n   0:         45   IO-APIC   2-edge      timer\n";
        assert_eq!(rx_irqs(none), None);
    }

    fn snapshot(uptime: &str, rx: u64, udp_in: u64, irq: u64) -> String {
        format!(
            "== uptime\n{uptime} 1.00\n== rx_packets\n{rx}\n== snmp\nIp: Forwarding DefaultTTL\nIp: 2 64\nUdp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\nUdp: {udp_in} 3 0 0 2 0 0 0 0\nUdpLite: InDatagrams NoPorts\nUdpLite: 0 0\n== interrupts\n            CPU0\n  25:       {irq}   PCI-MSIX-0000:00:02.0   1-edge      virtio0-input.0\n"
        )
    }

    #[test]
    fn snapshots_and_figures() {
        let s = parse_snapshot(&snapshot("12.50", 7, 5, 40)).unwrap();
        assert_eq!(
            s,
            Snapshot {
                uptime_s: 12.5,
                rx_packets: 7,
                udp_in: 5,
                udp_rcvbuf_errors: 2,
                udp_no_ports: 3,
                rx_irqs: 40,
            }
        );
        assert!(parse_snapshot("== uptime\n1.0 1.0\n").is_none());
        let files = vec![
            (
                "lab-nic/host.txt".to_string(),
                b"pps=1000\nsent=10100\nseconds=10.100\n".to_vec(),
            ),
            (
                "lab-nic/before.txt".into(),
                snapshot("2.00", 7, 5, 40).into_bytes(),
            ),
            (
                "lab-nic/after.txt".into(),
                snapshot("12.00", 10007, 10004, 9040).into_bytes(),
            ),
        ];
        let f = Figures::from_files(&files).unwrap().unwrap();
        assert_eq!(
            f,
            Figures {
                pps: 1000,
                sent: 10100,
                host_secs: 10.1,
                guest_secs: 10.0,
                rx_packets: 10000,
                udp_in: 9999,
                udp_dropped: 0,
                rx_irqs: 9000,
            }
        );
        let s = f.summary();
        assert!(s.contains("eth0 received 10000 packets (1000/s)"), "{s}");
        assert!(
            s.contains("interrupts 9000 (900/s, 0.90 per packet)"),
            "{s}"
        );
        assert!(Figures::from_files(&files[1..]).is_none());
        let r = Figures::from_files(&files[..2]).unwrap();
        assert!(matches!(r, Err(m) if m.contains("after.txt is missing")));
    }
}
