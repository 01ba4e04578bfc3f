//! The stored campaigns in bench/campaigns: each file parses, `campaign --dry-run` lists its
//! cells (and creates no database), and the flags it hands to every `lab run` and `measure` are
//! flags those verbs have. A campaign that runs for hours must not fail at its first cell on a
//! typo.

use rtscope_store::campaign::{Campaign, KernelAxis};
use std::path::{Path, PathBuf};
use std::process::Command;

fn rtscope(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(args)
        .output()
        .expect("running rtscope")
}

fn campaigns() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/campaigns");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("bench/campaigns")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no campaign files in {}", dir.display());
    v
}

/// The `--flags` of `args` that `help` does not list.
fn unknown_flags(args: &[String], help: &str) -> Vec<String> {
    args.iter()
        .filter(|a| a.starts_with("--"))
        .filter(|a| {
            !help
                .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == '=')
                .any(|w| w == a.as_str())
        })
        .cloned()
        .collect()
}

#[test]
fn every_stored_campaign_parses_and_dry_runs() {
    let measure_help =
        String::from_utf8_lossy(&rtscope(&["measure", "--help"]).stdout).into_owned();
    let lab_help = String::from_utf8_lossy(&rtscope(&["lab", "run", "--help"]).stdout).into_owned();
    assert!(measure_help.contains("--duration") && lab_help.contains("--icount"));
    for f in campaigns() {
        let name = f.display().to_string();
        let text = std::fs::read_to_string(&f).expect("reading a campaign file");
        let c = Campaign::parse(&name, &text).unwrap_or_else(|e| panic!("{e}"));
        let cells = c.cells();
        assert!(!cells.is_empty(), "{name}: no cells");

        let tmp = rtscope_testkit::tmp();
        let db = tmp.path().join("dry.db");
        let o = rtscope(&[
            "campaign",
            "--dry-run",
            &name,
            "--db",
            &db.display().to_string(),
        ]);
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "{name}: {err}");
        assert!(
            err.contains(&format!("{} cells", cells.len())),
            "{name}: {err}"
        );
        // `todo  <cell id>  <the cell's full command line>`
        let rows: Vec<(&str, &str)> = out
            .lines()
            .filter_map(|l| l.strip_prefix("todo  "))
            .map(|l| l.split_once("  ").unwrap_or((l, "")))
            .collect();
        let listed: Vec<&str> = rows.iter().map(|r| r.0).collect();
        for (id, cmd) in &rows {
            assert!(
                cmd.starts_with("rtscope ") && cmd.contains(&format!("cell={id}")),
                "{name}: {id}: no full command line: {cmd:?}"
            );
        }
        let ids: Vec<&str> = cells.iter().map(|x| x.id.as_str()).collect();
        assert_eq!(listed, ids, "{name}");
        assert!(!db.exists(), "{name}: a dry run created {}", db.display());

        let bad = unknown_flags(&c.extra_args, &measure_help);
        assert!(
            bad.is_empty(),
            "{name}: extra_args not flags of measure: {bad:?}"
        );
        if c.kernels.iter().any(|k| *k != KernelAxis::Host) {
            let bad = unknown_flags(&c.lab_args, &lab_help);
            assert!(
                bad.is_empty(),
                "{name}: lab_args not flags of lab run: {bad:?}"
            );
        }
    }
}

/// The kernel comparison as the paper ran it: lean kernels × the four preemption models ×
/// idle, CPU-bound and I/O-bound, 3 repetitions of at least 5 emulated minutes, untraced,
/// under icount on one vCPU; the I/O cells with a NIC load and bonnie++.
#[test]
fn the_lean_kernel_campaign_is_the_papers_matrix() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/campaigns");
    let mut all = Vec::new();
    for file in ["kernels-lean.toml", "kernels-lean-io.toml"] {
        let p = dir.join(file);
        let text = std::fs::read_to_string(&p).expect(file);
        let c = Campaign::parse(file, &text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            c.name, "kernels-lean",
            "{file}: one campaign for both files"
        );
        assert_eq!(c.repetitions, 3, "{file}");
        assert!(
            c.durations.iter().all(|(_, s)| *s >= 300.0),
            "{file}: cells under 5 minutes"
        );
        let kernels: Vec<String> = c
            .kernels
            .iter()
            .map(|k| match k {
                KernelAxis::Host => "host".to_string(),
                KernelAxis::Lab { kernel, preempt } => match preempt {
                    Some(p) => format!("{kernel}:{p}"),
                    None => kernel.clone(),
                },
            })
            .collect();
        assert_eq!(
            kernels,
            ["lean:none", "lean:voluntary", "lean:full", "rt-lean"],
            "{file}"
        );
        assert!(
            c.lab_args
                .windows(3)
                .any(|w| w == ["--icount", "--smp", "1"]),
            "{file}: {:?}",
            c.lab_args
        );
        // Untraced, as cyclictest: no capture, no bound.
        assert!(
            !c.extra_args
                .iter()
                .any(|a| a == "--trace" || a == "--bound"),
            "{file}: {:?}",
            c.extra_args
        );
        if c.loads.iter().any(|l| l == "io") {
            assert!(c.lab_args.iter().any(|a| a == "--nic-load"), "{file}");
            assert!(c.lab_args.iter().any(|a| a == "bonnie++"), "{file}");
            assert!(
                c.extra_args
                    .windows(2)
                    .any(|w| w == ["--disk-tool", "bonnie++"]),
                "{file}"
            );
        }
        all.extend(c.cells());
    }
    let loads: std::collections::BTreeSet<&str> = all.iter().map(|c| c.load.as_str()).collect();
    assert_eq!(
        loads.into_iter().collect::<Vec<_>>(),
        ["cpu-cache", "idle", "io"]
    );
    assert_eq!(all.len(), 4 * 3 * 3, "kernels × scenarios × repetitions");
    let mut ids: Vec<&str> = all.iter().map(|c| c.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(
        ids.len(),
        all.len(),
        "cell ids collide between the two files"
    );
}
