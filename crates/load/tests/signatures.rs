//! Each load runs 2 s and its signature must rise clearly over an idle baseline measured the same
//! way (the machine is shared, so thresholds compare with the baseline and with the load's own
//! counters rather than with absolute numbers). Needs root (veth) and a disk-backed /var/tmp.

mod common;

use rtscope_load::{parse_kinds, start, LoadOptions};
use rtscope_model::LoadReport;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

const RUN: Duration = Duration::from_secs(2);

fn run(spec: &str, opts: &LoadOptions) -> LoadReport {
    let kinds = parse_kinds(spec).expect("kind");
    let loads = start(&kinds, opts).unwrap_or_else(|e| panic!("start {spec}: {e}"));
    std::thread::sleep(RUN);
    let mut reports = loads.stop();
    assert_eq!(reports.len(), 1);
    let r = reports.remove(0);
    eprintln!("{spec}: {:?}\nwarnings: {:?}", r.figures, r.warnings);
    r
}

/// Idle baseline, measured once (under the serial lock) and reused.
fn idle() -> &'static BTreeMap<String, f64> {
    static IDLE: OnceLock<BTreeMap<String, f64>> = OnceLock::new();
    IDLE.get_or_init(|| run("idle", &LoadOptions::default()).figures)
}

fn fig(r: &LoadReport, k: &str) -> f64 {
    *r.figures
        .get(k)
        .unwrap_or_else(|| panic!("{}: no figure {k}", r.kind))
}

#[test]
fn idle_reports_machine_figures_only() {
    let _g = common::serial();
    let r = run("idle", &LoadOptions::default());
    assert_eq!(r.kind, "idle");
    assert!(r.figures.contains_key("sys_ctx_switches_per_s"));
    assert!(!r.figures.contains_key("workers"));
    assert!((r.duration_s - 2.0).abs() < 0.5, "{}", r.duration_s);
}

#[test]
fn cpu_cache_makes_random_accesses() {
    let _g = common::serial();
    let idle = idle();
    let opts = LoadOptions {
        wss_bytes: Some(32 << 20),
        ..LoadOptions::default()
    };
    let r = run("cpu-cache", &opts);
    let ncpu = fig(&r, "workers");
    assert!(ncpu >= 1.0);
    // A debug build does about 1.5 M random accesses/s per worker even on the shared 2-vCPU VM
    // at load average 30, where SCHED_OTHER workers get only ~15 % of a CPU each; idle does
    // none. The thresholds leave room for a machine busier still.
    assert!(fig(&r, "accesses_per_s") > 1e5 * ncpu);
    assert!(fig(&r, "worker_cpu_pct") > 5.0);
    assert!(fig(&r, "sys_cpu_busy_pct") >= idle["sys_cpu_busy_pct"].min(90.0));
    assert_eq!(r.params["wss_bytes"], (32u64 << 20).to_string());
}

#[test]
fn hackbench_raises_context_switches() {
    let _g = common::serial();
    let idle = idle();
    let r = run("hackbench", &LoadOptions::default());
    assert_eq!(fig(&r, "workers"), 400.0); // 10 groups x (20 senders + 20 receivers)
    assert!(fig(&r, "messages_per_s") > 10_000.0);
    assert!(fig(&r, "worker_ctx_switches_per_s") > 5_000.0);
    // Machine-wide: /proc/stat's ctxt counts every switch, ours included, whatever else runs.
    let load = fig(&r, "sys_ctx_switches_per_s");
    let own = fig(&r, "worker_ctx_switches_per_s");
    assert!(
        load >= 0.5 * own,
        "machine {load}/s < half of the workers' {own}/s"
    );
    // Against idle only when the machine is quiet (a quiet 2-vCPU VM idles at ~1 k switches/s;
    // other users' builds push it to 20 k/s, which says nothing about hackbench).
    let fresh = run("idle", &LoadOptions::default()).figures["sys_ctx_switches_per_s"];
    let base = idle["sys_ctx_switches_per_s"].max(fresh);
    if base > 5_000.0 {
        println!(
            "note: machine busy (idle {base:.0} ctx switches/s): comparison with idle skipped"
        );
    } else {
        assert!(
            load > 3.0 * base && load > base + 5_000.0,
            "ctx switches {load}/s vs idle {base}/s"
        );
    }
}

#[test]
fn disk_reaches_the_device() {
    let _g = common::serial();
    let idle = idle();
    let opts = LoadOptions {
        disk_bytes: 64 << 20,
        ..LoadOptions::default()
    };
    let r = run("disk", &opts);
    let own_w = fig(&r, "write_mb_per_s");
    let sys_w = fig(&r, "sys_disk_write_mb_per_s");
    assert!(own_w > 5.0, "own write {own_w} MB/s");
    assert!(fig(&r, "read_mb_per_s") > 5.0);
    assert!(fig(&r, "random_reads_per_s") > 100.0);
    assert!(fig(&r, "file_ops_per_s") > 100.0);
    if r.params["direct_io"] == "true" {
        // Direct I/O bypasses the page cache: what we wrote is what the disk saw (within noise
        // from other writers, which only adds).
        assert!(
            sys_w >= 0.5 * own_w,
            "diskstats {sys_w} MB/s vs own {own_w} MB/s"
        );
    } else {
        println!("note: O_DIRECT refused on /var/tmp; buffered fallback checked only");
    }
    assert!(
        sys_w > idle["sys_disk_write_mb_per_s"] + 2.0,
        "diskstats write {sys_w} vs idle {}",
        idle["sys_disk_write_mb_per_s"]
    );
    assert!(fig(&r, "sys_disk_ios_per_s") > idle["sys_disk_ios_per_s"]);
}

#[test]
fn net_loopback_bytes_and_interrupts() {
    let _g = common::serial();
    let idle = idle();
    let r = run("net", &LoadOptions::default());
    let own = fig(&r, "rx_mb_per_s");
    let lo = fig(&r, "sys_net_lo_rx_mb_per_s");
    assert!(own > 50.0, "own rx {own} MB/s");
    assert!(lo >= 0.9 * own, "lo {lo} MB/s vs own {own} MB/s");
    assert!(lo > idle["sys_net_lo_rx_mb_per_s"] + 50.0);
    assert!(fig(&r, "sys_softirq_net_rx_per_s") > idle["sys_softirq_net_rx_per_s"] + 1_000.0);
    assert!(
        fig(&r, "sys_interrupts_per_s") > 1.5 * idle["sys_interrupts_per_s"],
        "interrupts {} vs idle {}",
        fig(&r, "sys_interrupts_per_s"),
        idle["sys_interrupts_per_s"]
    );
    // One connection per client at least (a client reconnects if its stream ever breaks).
    assert!(fig(&r, "connections") >= fig(&r, "workers") / 2.0);
}

#[test]
fn net_over_veth_crosses_a_virtual_nic() {
    let _g = common::serial();
    if !common::is_root() {
        rtscope_testkit::skipped("--net-veth needs root");
        return;
    }
    let idle = idle();
    let opts = LoadOptions {
        net_veth: true,
        ..LoadOptions::default()
    };
    let r = run("net", &opts);
    let own = fig(&r, "rx_mb_per_s");
    assert!(own > 20.0, "own rx {own} MB/s");
    // The traffic arrives on our end of the veth pair, not on lo.
    let other = fig(&r, "sys_net_other_rx_mb_per_s");
    assert!(other >= 0.9 * own, "veth rx {other} MB/s vs own {own}");
    assert!(fig(&r, "sys_softirq_net_rx_per_s") > idle["sys_softirq_net_rx_per_s"] + 1_000.0);
    // The namespace died with its holder, taking the veth pair along.
    std::thread::sleep(Duration::from_millis(200));
    let left: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("rts") && (n.ends_with('a') || n.ends_with('b')))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "veth left behind: {left:?}");
}

#[test]
fn exec_runs_a_command_and_reports_an_early_end() {
    let _g = common::serial();
    let opts = LoadOptions {
        exec_argv: vec!["/bin/sh".into(), "-c".into(), "while :; do :; done".into()],
        ..LoadOptions::default()
    };
    let r = run("exec", &opts);
    // A busy loop gets its share of a CPU (tens of % even on a heavily shared machine).
    assert!(fig(&r, "worker_cpu_pct") > 5.0);
    assert!(r.warnings.iter().all(|w| !w.contains("ended on its own")));

    let opts = LoadOptions {
        exec_argv: vec!["false".into()],
        ..LoadOptions::default()
    };
    let r = run("exec", &opts);
    assert!(fig(&r, "exited_after_s") < 2.0);
    assert!(
        r.warnings.iter().any(|w| w.contains("exit status 1")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn io_runs_its_three_parts() {
    let _g = common::serial();
    let opts = LoadOptions {
        disk_bytes: 64 << 20,
        hackbench_groups: 2,
        ..LoadOptions::default()
    };
    let r = run("io", &opts);
    assert_eq!(r.kind, "io");
    assert!(fig(&r, "hackbench_messages_per_s") > 1_000.0);
    assert!(fig(&r, "disk_write_mb_per_s") > 1.0);
    assert!(fig(&r, "net_rx_mb_per_s") > 10.0);
    assert_eq!(fig(&r, "hackbench_workers"), 80.0);
}

/// `--disk-tool bonnie++`: the real bonnie++ with direct I/O (OSPERT'13 §3.3) in the scratch
/// directory; its own figures stay inside it, the disk's counters show its traffic, and neither
/// the process nor its files outlive the load.
#[test]
fn bonnie_reaches_the_device_and_leaves_nothing() {
    let _g = common::serial();
    if !std::path::Path::new("/usr/sbin/bonnie++").exists() {
        rtscope_testkit::skipped("bonnie++ is not installed (scripts/setup.sh installs it)");
        return;
    }
    let idle = idle();
    let scratch = tempfile::tempdir_in("/var/tmp").unwrap();
    let opts = LoadOptions {
        disk_bytes: 64 << 20,
        disk_tool: rtscope_load::DiskTool::Bonnie,
        scratch_dir: scratch.path().to_path_buf(),
        ..LoadOptions::default()
    };
    let r = run("disk", &opts);
    assert_eq!(r.params["tool"], "bonnie++");
    assert!(r.params["argv"].contains("\"-D\""), "{:?}", r.params);
    let sys_w = fig(&r, "sys_disk_write_mb_per_s");
    assert!(
        sys_w > idle["sys_disk_write_mb_per_s"] + 2.0,
        "diskstats write {sys_w} vs idle {}",
        idle["sys_disk_write_mb_per_s"]
    );
    assert!(fig(&r, "worker_cpu_pct") > 1.0);
    assert!(
        !r.warnings.iter().any(|w| w.contains("exited")),
        "{:?}",
        r.warnings
    );
    std::thread::sleep(Duration::from_millis(300));
    let left: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().collect();
    assert!(left.is_empty(), "scratch left: {left:?}");
    let ps = std::process::Command::new("pgrep")
        .arg("-x")
        .arg("bonnie++")
        .output()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "bonnie++ still runs: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
}
