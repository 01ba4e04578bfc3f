//! Small readers of /proc files the capture needs: IRQ names and counts (/proc/interrupts), steal
//! time (/proc/stat), and the clock (from `rtscope_sys`).

use std::collections::BTreeMap;

/// CLOCK_MONOTONIC now, ns (the clock samples and kernel event timestamps are on).
pub use rtscope_sys::clock::monotonic_ns;

/// One row of /proc/interrupts: the label (`11` or `LOC`), per-CPU counts, and the description
/// (for numbered IRQs the last word is the action name, e.g. `virtio0-input.0`).
#[derive(Clone, Debug, PartialEq)]
pub struct InterruptRow {
    pub label: String,
    pub per_cpu: Vec<u64>,
    pub desc: String,
}

/// Parse /proc/interrupts text. Rows without per-CPU counts (ERR, MIS) get an empty `per_cpu`.
pub fn parse_interrupts(text: &str) -> Vec<InterruptRow> {
    let mut lines = text.lines();
    let ncpu = match lines.next() {
        Some(h) => h
            .split_whitespace()
            .filter(|w| w.starts_with("CPU"))
            .count(),
        None => return Vec::new(),
    };
    let mut rows = Vec::new();
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else {
            continue;
        };
        let mut words = rest.split_whitespace().peekable();
        let mut per_cpu = Vec::with_capacity(ncpu);
        while per_cpu.len() < ncpu {
            match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                Some(v) => {
                    per_cpu.push(v);
                    words.next();
                }
                None => break,
            }
        }
        let desc = words.collect::<Vec<_>>().join(" ");
        rows.push(InterruptRow {
            label: label.trim().to_string(),
            per_cpu,
            desc,
        });
    }
    rows
}

pub fn read_interrupts() -> Vec<InterruptRow> {
    std::fs::read_to_string("/proc/interrupts")
        .map(|t| parse_interrupts(&t))
        .unwrap_or_default()
}

/// IRQ number → action name (last word of the description, as irq_handler_entry's `name`).
pub fn irq_names(rows: &[InterruptRow]) -> BTreeMap<u32, String> {
    rows.iter()
        .filter_map(|r| {
            let n = r.label.parse::<u32>().ok()?;
            let name = r.desc.split_whitespace().last().unwrap_or("").to_string();
            Some((n, name))
        })
        .collect()
}

/// Steal time per CPU in ns (8th value of `cpuN` lines in /proc/stat, in USER_HZ ticks).
pub fn steal_ns() -> BTreeMap<u32, u64> {
    let hz = rtscope_sys::system::clock_ticks_per_sec().unwrap_or(100);
    let mut out = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string("/proc/stat") else {
        return out;
    };
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let Some(name) = w.next() else { continue };
        let Some(cpu) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(steal) = w.nth(7).and_then(|v| v.parse::<u64>().ok()) {
            out.insert(cpu, steal * (1_000_000_000 / hz));
        }
    }
    out
}

pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Thread names for pids still alive (fills gaps in the comm table at the end of a capture).
pub fn comm_of(pid: u32) -> Option<String> {
    // A thread id may not be a process id: /proc/<tid>/comm still resolves for threads.
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_interrupts() {
        // The shape of a 2-vCPU KVM guest's /proc/interrupts (kernel 6.18, trimmed).
        let t = "           CPU0       CPU1       \n  4:        371          0   IO-APIC   4-edge      ttyS0\n  9:          0          0   IO-APIC   9-fasteoi   acpi\nLOC:      49231      51422   Local timer interrupts\nERR:          0\n";
        let r = parse_interrupts(t);
        assert_eq!(r.len(), 4);
        assert_eq!(
            r[0],
            InterruptRow {
                label: "4".into(),
                per_cpu: vec![371, 0],
                desc: "IO-APIC 4-edge ttyS0".into()
            }
        );
        assert_eq!(r[2].per_cpu, vec![49231, 51422]);
        assert_eq!(r[3].per_cpu, vec![0]);
        let n = irq_names(&r);
        assert_eq!(n.get(&4).map(String::as_str), Some("ttyS0"));
        assert_eq!(n.len(), 2);
    }
}
