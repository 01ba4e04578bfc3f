//! Real-kernel tests of `--housekeeping`: where rtscope's own session and trace reader threads
//! run while it measures, as an outside observer sees it in /proc/<pid>/task/*/status.

use rtscope_testkit::{bin, need_root, read_json, tmp};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn online() -> Vec<u32> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
            v.extend(a..=b);
        }
    }
    v
}

/// Each thread of `pid` by name (comm) → its Cpus_allowed_list, once the measurement threads
/// exist (they start after the session thread moved); empty if they never appear in `wait`.
fn threads_once_measuring(pid: u32, wait: Duration) -> BTreeMap<String, String> {
    let t0 = Instant::now();
    while t0.elapsed() < wait {
        let mut seen = BTreeMap::new();
        if let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in rd.flatten() {
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
                let allowed = status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .unwrap_or("")
                    .trim()
                    .to_string();
                seen.insert(comm.trim().to_string(), allowed);
            }
        }
        if seen.keys().any(|c| c.starts_with("rtscope-m")) {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    BTreeMap::new()
}

#[test]
fn session_and_reader_threads_run_on_the_housekeeping_cpu() {
    need_root!("measures at SCHED_FIFO and loads eBPF");
    let cpus = online();
    if cpus.len() < 2 {
        rtscope_testkit::skipped("needs 2 online CPUs (one measured, one housekeeping)");
        return;
    }
    let (measured, hk) = (cpus[0].to_string(), cpus[1].to_string());
    let d = tmp();
    let json = d.path().join("r.json");
    let child = Command::new(bin!())
        .args(["measure", "-D", "4s", "-q", "--no-store", "--trace", "bpf"])
        .args(["--cpus", &measured, "--housekeeping", &hk, "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rtscope");
    let seen = threads_once_measuring(child.id(), Duration::from_secs(60));
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(seen.get("rtscope-m0"), Some(&measured), "{seen:?}");
    assert_eq!(seen.get("rtscope"), Some(&hk), "session thread: {seen:?}");
    assert_eq!(seen.get("rtscope-bpf"), Some(&hk), "trace reader: {seen:?}");
    let v = read_json(&json);
    assert_eq!(
        v["kind"]["measurement"]["config"]["housekeeping_cpus"],
        serde_json::json!([cpus[1]])
    );
    let warnings = v["warnings"].to_string();
    assert!(!warnings.contains("housekeeping"), "{warnings}");
}

#[test]
fn every_cpu_measured_warns_and_still_runs() {
    need_root!("measures at SCHED_FIFO");
    let d = tmp();
    let json = d.path().join("r.json");
    let out = Command::new(bin!())
        .args(["measure", "-D", "1s", "-q", "--no-store", "--json"])
        .arg(&json)
        .output()
        .expect("run rtscope");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&json);
    let cpus = online();
    assert_eq!(
        v["kind"]["measurement"]["config"]["housekeeping_cpus"],
        serde_json::json!(cpus)
    );
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("every CPU is measured: rtscope's session and trace reader share the measured CPUs (measure fewer CPUs with --cpus or name others with --housekeeping)"),
        "{warnings}"
    );
}

#[test]
fn a_measured_housekeeping_cpu_is_allowed_with_a_warning() {
    need_root!("measures at SCHED_FIFO");
    let c = online().first().copied().unwrap_or(0).to_string();
    let d = tmp();
    let json = d.path().join("r.json");
    let out = Command::new(bin!())
        .args(["measure", "-D", "1s", "-q", "--no-store", "--cpus", &c])
        .args(["--housekeeping", &c, "--json"])
        .arg(&json)
        .output()
        .expect("run rtscope");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let warnings = read_json(&json)["warnings"].to_string();
    assert!(
        warnings.contains(&format!("--housekeeping names measured CPU(s) {c}")),
        "{warnings}"
    );
}

#[test]
fn an_offline_housekeeping_cpu_is_exit_2_with_one_line() {
    let out = Command::new(bin!())
        .args([
            "measure",
            "-D",
            "1s",
            "--no-store",
            "--housekeeping",
            "4095",
        ])
        .output()
        .expect("run rtscope");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--housekeeping: CPU 4095 is not online"),
        "{err}"
    );
}
