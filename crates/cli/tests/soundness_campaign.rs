//! The soundness experiment's campaign files (bench/campaigns/soundness-*.toml, docs/bound.md):
//! together they are the matrix the experiment needs — every kernel, load and vCPU count, at
//! least 3 calibration and 3 validation boots per cell, every boot traced with the bound — and
//! their cells never share an id (they fill one campaign).

use rtscope_store::campaign::{Campaign, KernelAxis};
use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn the_soundness_files_are_one_calibrate_validate_matrix() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/campaigns");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("bench/campaigns")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("soundness") && n.ends_with(".toml"))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{files:?}");
    let mut ids = Vec::new();
    let mut matrix = BTreeSet::new();
    for f in &files {
        let name = f.display().to_string();
        let text = std::fs::read_to_string(f).expect("reading a campaign file");
        let c = Campaign::parse(&name, &text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.name, "soundness", "{name}");
        assert_eq!(
            c.tags.get("experiment").map(String::as_str),
            Some("calibrate-validate"),
            "{name}"
        );
        // Odd repetitions calibrate, even ones validate: at least 3 of each.
        assert!(
            c.repetitions >= 6 && c.repetitions.is_multiple_of(2),
            "{name}: {}",
            c.repetitions
        );
        for a in ["--trace", "--bound", "--bound-points"] {
            assert!(c.extra_args.iter().any(|x| x == a), "{name}: no {a}");
        }
        let smp = c
            .lab_args
            .windows(2)
            .find(|w| w[0] == "--smp")
            .map(|w| w[1].clone())
            .unwrap_or_else(|| panic!("{name}: no --smp"));
        assert!(c.lab_args.iter().any(|a| a == "--icount"), "{name}");
        assert_eq!(c.cell_prefix, format!("smp{smp}-"), "{name}");
        for cell in c.cells() {
            let kernel = match &cell.kernel {
                KernelAxis::Host => panic!("{name}: a host cell"),
                KernelAxis::Lab { kernel, preempt } => {
                    format!("{kernel}:{}", preempt.as_deref().unwrap_or("-"))
                }
            };
            matrix.insert((kernel, cell.load.clone(), smp.clone()));
            ids.push(cell.id);
        }
    }
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "cell ids collide between the files");
    let mut want = BTreeSet::new();
    for k in ["trace:none", "trace:voluntary", "trace:full", "rt-trace:-"] {
        for l in ["idle", "cpu-cache", "io"] {
            for s in ["1", "2"] {
                want.insert((k.to_string(), l.to_string(), s.to_string()));
            }
        }
    }
    assert_eq!(matrix, want);
}
