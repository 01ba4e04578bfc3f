//! Machine-wide intensity counters from /proc: the independent proof that a load ran.
//!
//! Parsing and the delta arithmetic are pure (tested on fixtures); only [`Snapshot::read`]
//! touches the file system.

use std::collections::{BTreeMap, BTreeSet};

/// Cumulative counters at one instant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Sum over CPUs of /proc/stat `cpu` columns: user nice system idle iowait irq softirq steal.
    pub cpu_jiffies: [u64; 8],
    pub ctxt: u64,
    pub forks: u64,
    /// /proc/interrupts: every row summed over CPUs (device IRQs and LOC, RES, CAL, …).
    pub interrupts_total: u64,
    /// /proc/interrupts: numbered (device) rows only.
    pub interrupts_device: u64,
    /// /proc/softirqs per row (`NET_RX`, `BLOCK`, …), summed over CPUs.
    pub softirqs: BTreeMap<String, u64>,
    /// /proc/net/dev per interface.
    pub net: BTreeMap<String, NetDev>,
    /// /proc/diskstats per whole disk (partitions excluded so nothing is counted twice).
    pub disks: BTreeMap<String, DiskStat>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NetDev {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DiskStat {
    pub reads: u64,
    pub sectors_read: u64,
    pub writes: u64,
    pub sectors_written: u64,
}

fn num(tok: &str) -> u64 {
    // A counter the kernel prints is a decimal u64; anything else (column headers, names) is 0.
    tok.parse().unwrap_or(0)
}

/// /proc/stat: the aggregate `cpu` line, `ctxt`, `processes`.
pub fn parse_stat(text: &str, s: &mut Snapshot) {
    for line in text.lines() {
        let mut it = line.split_whitespace();
        match it.next() {
            Some("cpu") => {
                for (slot, tok) in s.cpu_jiffies.iter_mut().zip(it) {
                    *slot = num(tok);
                }
            }
            Some("ctxt") => s.ctxt = it.next().map(num).unwrap_or(0),
            Some("processes") => s.forks = it.next().map(num).unwrap_or(0),
            _ => {}
        }
    }
}

/// /proc/interrupts: first line names the CPUs; each row is `NAME: count count … description`.
/// Rows like `ERR:` and `MIS:` have a single system-wide count.
pub fn parse_interrupts(text: &str, s: &mut Snapshot) {
    let mut lines = text.lines();
    let ncpu = lines
        .next()
        .map(|h| h.split_whitespace().count())
        .unwrap_or(0);
    for line in lines {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let sum: u64 = rest
            .split_whitespace()
            .take(ncpu)
            .map_while(|t| t.parse::<u64>().ok())
            .sum();
        s.interrupts_total += sum;
        if name.trim().chars().all(|c| c.is_ascii_digit()) {
            s.interrupts_device += sum;
        }
    }
}

/// /proc/softirqs: header of CPU names, then `NAME: count count …`.
pub fn parse_softirqs(text: &str, s: &mut Snapshot) {
    for line in text.lines().skip(1) {
        if let Some((name, rest)) = line.split_once(':') {
            let sum: u64 = rest.split_whitespace().map(num).sum();
            s.softirqs.insert(name.trim().to_string(), sum);
        }
    }
}

/// /proc/net/dev: two header lines, then `iface: rx_bytes rx_packets … (8 rx) tx_bytes tx_packets …`.
pub fn parse_net_dev(text: &str, s: &mut Snapshot) {
    for line in text.lines().skip(2) {
        if let Some((name, rest)) = line.split_once(':') {
            let v: Vec<u64> = rest.split_whitespace().map(num).collect();
            if v.len() >= 10 {
                s.net.insert(
                    name.trim().to_string(),
                    NetDev {
                        rx_bytes: v[0],
                        rx_packets: v[1],
                        tx_bytes: v[8],
                        tx_packets: v[9],
                    },
                );
            }
        }
    }
}

/// /proc/diskstats: `major minor name reads merged sectors_read ms writes merged sectors_written …`.
/// Only names in `whole_disks` (the entries of /sys/block) are kept.
pub fn parse_diskstats(text: &str, whole_disks: &BTreeSet<String>, s: &mut Snapshot) {
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 || !whole_disks.contains(f[2]) {
            continue;
        }
        s.disks.insert(
            f[2].to_string(),
            DiskStat {
                reads: num(f[3]),
                sectors_read: num(f[5]),
                writes: num(f[7]),
                sectors_written: num(f[9]),
            },
        );
    }
}

impl Snapshot {
    /// Reads the five /proc files. A file that cannot be read leaves its counters at zero (the
    /// figures derived from it are then 0 and the caller says so via `missing`).
    pub fn read() -> (Snapshot, Vec<String>) {
        let mut s = Snapshot::default();
        let mut missing = Vec::new();
        let mut get = |p: &str| match std::fs::read_to_string(p) {
            Ok(t) => Some(t),
            Err(e) => {
                missing.push(format!("{p}: {e}"));
                None
            }
        };
        if let Some(t) = get("/proc/stat") {
            parse_stat(&t, &mut s);
        }
        if let Some(t) = get("/proc/interrupts") {
            parse_interrupts(&t, &mut s);
        }
        if let Some(t) = get("/proc/softirqs") {
            parse_softirqs(&t, &mut s);
        }
        if let Some(t) = get("/proc/net/dev") {
            parse_net_dev(&t, &mut s);
        }
        if let Some(t) = get("/proc/diskstats") {
            let whole: BTreeSet<String> = std::fs::read_dir("/sys/block")
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            parse_diskstats(&t, &whole, &mut s);
        }
        (s, missing)
    }
}

const MB: f64 = 1e6;
const SECTOR_BYTES: f64 = 512.0; // /proc/diskstats counts 512-byte sectors whatever the device.

/// Machine-wide rates between two snapshots `dt_s` seconds apart, units in the names.
pub fn figures(before: &Snapshot, after: &Snapshot, dt_s: f64) -> BTreeMap<String, f64> {
    let mut f = BTreeMap::new();
    if dt_s <= 0.0 {
        return f;
    }
    let d = |a: u64, b: u64| b.saturating_sub(a) as f64;
    let rate = |a: u64, b: u64| d(a, b) / dt_s;

    f.insert(
        "sys_ctx_switches_per_s".into(),
        rate(before.ctxt, after.ctxt),
    );
    f.insert("sys_forks_per_s".into(), rate(before.forks, after.forks));
    f.insert(
        "sys_interrupts_per_s".into(),
        rate(before.interrupts_total, after.interrupts_total),
    );
    f.insert(
        "sys_device_interrupts_per_s".into(),
        rate(before.interrupts_device, after.interrupts_device),
    );

    let jd: Vec<f64> = (0..8)
        .map(|i| d(before.cpu_jiffies[i], after.cpu_jiffies[i]))
        .collect();
    let total: f64 = jd.iter().sum();
    if total > 0.0 {
        let pct = |x: f64| 100.0 * x / total;
        // Columns: user nice system idle iowait irq softirq steal.
        f.insert("sys_cpu_busy_pct".into(), pct(total - jd[3] - jd[4]));
        f.insert("sys_cpu_user_pct".into(), pct(jd[0] + jd[1]));
        f.insert("sys_cpu_system_pct".into(), pct(jd[2]));
        f.insert("sys_cpu_iowait_pct".into(), pct(jd[4]));
        f.insert("sys_cpu_irq_pct".into(), pct(jd[5]));
        f.insert("sys_cpu_softirq_pct".into(), pct(jd[6]));
        f.insert("sys_cpu_steal_pct".into(), pct(jd[7]));
    }

    for (name, key) in [
        ("NET_RX", "sys_softirq_net_rx_per_s"),
        ("NET_TX", "sys_softirq_net_tx_per_s"),
        ("BLOCK", "sys_softirq_block_per_s"),
        ("SCHED", "sys_softirq_sched_per_s"),
        ("TIMER", "sys_softirq_timer_per_s"),
    ] {
        let a = before.softirqs.get(name).copied().unwrap_or(0);
        let b = after.softirqs.get(name).copied().unwrap_or(0);
        f.insert(key.into(), rate(a, b));
    }

    let net_sum = |s: &Snapshot, lo: bool| {
        s.net
            .iter()
            .filter(|(n, _)| (n.as_str() == "lo") == lo)
            .fold(NetDev::default(), |acc, (_, v)| NetDev {
                rx_bytes: acc.rx_bytes + v.rx_bytes,
                rx_packets: acc.rx_packets + v.rx_packets,
                tx_bytes: acc.tx_bytes + v.tx_bytes,
                tx_packets: acc.tx_packets + v.tx_packets,
            })
    };
    for (lo, prefix) in [(true, "sys_net_lo"), (false, "sys_net_other")] {
        let (a, b) = (net_sum(before, lo), net_sum(after, lo));
        f.insert(
            format!("{prefix}_rx_mb_per_s"),
            rate(a.rx_bytes, b.rx_bytes) / MB,
        );
        f.insert(
            format!("{prefix}_rx_packets_per_s"),
            rate(a.rx_packets, b.rx_packets),
        );
        f.insert(
            format!("{prefix}_tx_mb_per_s"),
            rate(a.tx_bytes, b.tx_bytes) / MB,
        );
    }

    let disk_sum = |s: &Snapshot| {
        s.disks
            .values()
            .fold(DiskStat::default(), |acc, v| DiskStat {
                reads: acc.reads + v.reads,
                sectors_read: acc.sectors_read + v.sectors_read,
                writes: acc.writes + v.writes,
                sectors_written: acc.sectors_written + v.sectors_written,
            })
    };
    let (a, b) = (disk_sum(before), disk_sum(after));
    f.insert(
        "sys_disk_read_mb_per_s".into(),
        rate(a.sectors_read, b.sectors_read) * SECTOR_BYTES / MB,
    );
    f.insert(
        "sys_disk_write_mb_per_s".into(),
        rate(a.sectors_written, b.sectors_written) * SECTOR_BYTES / MB,
    );
    f.insert(
        "sys_disk_ios_per_s".into(),
        rate(a.reads + a.writes, b.reads + b.writes),
    );
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn snap(dir: &str) -> Snapshot {
        let mut s = Snapshot::default();
        parse_stat(&fixture(&format!("{dir}/stat")), &mut s);
        parse_interrupts(&fixture(&format!("{dir}/interrupts")), &mut s);
        parse_softirqs(&fixture(&format!("{dir}/softirqs")), &mut s);
        parse_net_dev(&fixture(&format!("{dir}/net_dev")), &mut s);
        let whole: BTreeSet<String> = ["vda".to_string()].into();
        parse_diskstats(&fixture(&format!("{dir}/diskstats")), &whole, &mut s);
        s
    }

    #[test]
    fn parses_a_real_snapshot() {
        let s = snap("proc-a");
        // /proc/stat `cpu  9950 0 3138 69286 1775 0 93 418 0 0`
        assert_eq!(s.cpu_jiffies, [9950, 0, 3138, 69286, 1775, 0, 93, 418]);
        assert_eq!(s.ctxt, 382923);
        assert_eq!(s.forks, 5321);
        // Device rows: 1+1+17+84+51+19+1+56284+4038+2903+902+2400+1 = 66702.
        assert_eq!(s.interrupts_device, 66702);
        // Named rows: LOC 25243+28597=53840, IWI 1, RES 9129+8692=17821, CAL 39458+30498=69956,
        // TLB 8497+7727=16224, HYP 32+86=118; total = 66702+53840+1+17821+69956+16224+118 = 224662.
        assert_eq!(s.interrupts_total, 224662);
        assert_eq!(s.softirqs["NET_RX"], 2578 + 3923);
        assert_eq!(s.softirqs["BLOCK"], 56281);
        assert_eq!(s.net["lo"].rx_bytes, 3193);
        assert_eq!(s.net["eth0"].tx_packets, 3397);
        // loop0 and partitions are not in the whole-disk set; vda is.
        assert_eq!(s.disks.len(), 1);
        assert_eq!(
            s.disks["vda"],
            DiskStat {
                reads: 39504,
                sectors_read: 3107330,
                writes: 22066,
                sectors_written: 3178488
            }
        );
    }

    #[test]
    fn rates_between_snapshots() {
        let (a, b) = (snap("proc-a"), snap("proc-b"));
        let f = figures(&a, &b, 2.0);
        // ctxt 382923 -> 482923: 100000 / 2 s.
        assert_eq!(f["sys_ctx_switches_per_s"], 50000.0);
        // lo rx bytes 3193 -> 20003193: 20e6 B / 2 s = 10 MB/s; packets 29 -> 1029: 500/s.
        assert_eq!(f["sys_net_lo_rx_mb_per_s"], 10.0);
        assert_eq!(f["sys_net_lo_rx_packets_per_s"], 500.0);
        // vda sectors written 3178488 -> 3373800: 195312 × 512 B = 100 MB over 2 s = 50 MB/s.
        assert!((f["sys_disk_write_mb_per_s"] - 49.999872).abs() < 1e-9);
        // reads 39504->39604, writes 22066->22466: 500 I/Os / 2 s.
        assert_eq!(f["sys_disk_ios_per_s"], 250.0);
        // CAL row +2000 on CPU0, device row 36 +1000 on CPU1: total +3000, device +1000.
        assert_eq!(f["sys_interrupts_per_s"], 1500.0);
        assert_eq!(f["sys_device_interrupts_per_s"], 500.0);
        // NET_RX +400 over 2 s.
        assert_eq!(f["sys_softirq_net_rx_per_s"], 200.0);
        // cpu: user +150, system +50, idle +200, others 0 -> total 400; busy = 200/400.
        assert_eq!(f["sys_cpu_busy_pct"], 50.0);
        assert_eq!(f["sys_cpu_user_pct"], 37.5);
    }

    #[test]
    fn zero_interval_gives_nothing() {
        let a = snap("proc-a");
        assert!(figures(&a, &a, 0.0).is_empty());
    }
}
