//! A guest's results brought home: its files written under a host directory, the records of its
//! store tagged with where they were measured (kernel, preemption model, emulation, vCPUs) and
//! their trace paths pointing at the host copies.

use crate::guest::{GuestOutcome, RunSpec};
use crate::{io, LabError, Result};
use rtscope_model::record::RunRecord;
use rtscope_model::warning::{Warning, WarningCode};
use std::path::{Path, PathBuf};

/// The tags a lab run adds to each record it brings home.
pub fn lab_tags(spec: &RunSpec, out: &GuestOutcome) -> Vec<(String, String)> {
    let mut tags = vec![
        ("kernel".into(), spec.kernel.meta.name.clone()),
        ("kernel_preset".into(), spec.kernel.meta.preset.clone()),
        ("kernel_release".into(), out.release.clone()),
        ("preempt".into(), spec.preempt_model()),
        ("emulated".into(), spec.emulation().into()),
        ("lab_smp".into(), spec.smp.to_string()),
    ];
    if let Some(n) = spec.nic_load {
        tags.push(("lab_nic_pps".into(), n.pps.to_string()));
    }
    if spec.scratch_disk.is_some() {
        // Whether the disk load's files were on a block device (the guest says at boot).
        let mounted = out
            .console
            .contains("RTSCOPE-LAB-SCRATCH /var/tmp on /dev/vda");
        tags.push((
            "lab_scratch".into(),
            if mounted { "virtio-blk" } else { "failed" }.into(),
        ));
    }
    tags
}

/// What the emulation does to guest time, for the records measured in it. Replaces the guest's
/// own hypervisor warning, which cannot know how QEMU drove its clock.
pub fn emulation_warning(spec: &RunSpec) -> Warning {
    use crate::guest::Icount;
    let m = match spec.icount {
        None => {
            let mut m = "emulated by QEMU TCG without -icount: the guest clock is the host's, so \
                 host scheduling and stalls appear as latency with no guest cause; timings are \
                 relative to the emulation, not to hardware"
                .to_string();
            if spec.single_thread && spec.smp > 1 {
                m += &format!(
                    "; the {} vCPUs take turns on one host thread, so a vCPU whose timer expires \
                     during another's turn waits for QEMU to switch (no guest event in the \
                     window: no_guest_activity)",
                    spec.smp
                );
            }
            m
        }
        Some(Icount::Auto) => "emulated by QEMU TCG with -icount shift=auto: QEMU re-fits the \
                 time charged per instruction to the host's speed during the run, so a slowed \
                 host changes guest time (seen as no_guest_activity); a fixed shift has no such leak"
            .to_string(),
        Some(Icount::Shift(n)) => {
            let mut m = format!(
                "emulated by QEMU TCG with -icount shift={n} ({} ns per guest instruction): no host \
                 delay is visible in guest time; timings are relative to the emulation, not to hardware",
                1u64 << n
            );
            if spec.smp > 1 {
                m += &format!(
                    "; under -icount QEMU runs the {} vCPUs in turns on one host thread, so a vCPU \
                     whose timer expires during another's turn waits for it (no guest event in \
                     the window: no_guest_activity); --smp 1 has no such wait",
                    spec.smp
                );
            }
            m
        }
    };
    Warning::new(WarningCode::Hypervisor, m)
}

/// A finished lab run brought home into a new `dir/lab-<run id>/`: [`bring_home`] with the lab's
/// tags ([`lab_tags`]) then `tags`, and the emulation's warning. The directory and the records
/// (not stored).
pub fn bring_run_home(
    spec: &RunSpec,
    out: &GuestOutcome,
    tags: impl IntoIterator<Item = (String, String)>,
    dir: &Path,
) -> Result<(PathBuf, Vec<RunRecord>)> {
    let dest = dir.join(format!("lab-{}", rtscope_session::record::new_run_id()));
    let mut all = lab_tags(spec, out);
    all.extend(tags);
    let records = bring_home(out, &all, &emulation_warning(spec), &dest)?;
    Ok((dest, records))
}

/// Where a failed guest's console is kept: `dir/lab-<run id>-failed-console.log`.
pub fn failure_log(dir: &Path) -> PathBuf {
    dir.join(format!(
        "lab-{}-failed-console.log",
        rtscope_session::record::new_run_id()
    ))
}

/// Write the guest's files under `dest` (created), read the records of its store, tag them and
/// point their trace files at `dest`. Records are returned, not stored.
pub fn bring_home(
    out: &GuestOutcome,
    tags: &[(String, String)],
    emulation: &Warning,
    dest: &Path,
) -> Result<Vec<RunRecord>> {
    std::fs::create_dir_all(dest).map_err(io(format!("creating {}", dest.display())))?;
    let console = dest.join("console.log");
    std::fs::write(&console, &out.console).map_err(io(format!("writing {}", console.display())))?;
    let mut dbs: Vec<PathBuf> = Vec::new();
    for (rel, bytes) in &out.files {
        // `ustar::safe_relative` already refused `..` and absolute paths.
        let p = dest.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io(format!("creating {}", parent.display())))?;
        }
        std::fs::write(&p, bytes).map_err(io(format!("writing {}", p.display())))?;
        if rel.ends_with(".db") {
            dbs.push(p);
        }
    }
    let mut records = Vec::new();
    for db in &dbs {
        let mut st = rtscope_store::Store::open_sqlite_read_only(db).map_err(|e| {
            LabError::Failed(format!("reading the guest's store {}: {e}", db.display()))
        })?;
        let recs = st
            .load_runs(&rtscope_store::RunFilter::default())
            .map_err(|e| LabError::Failed(format!("reading {}: {e}", db.display())))?;
        for mut r in recs {
            retag(&mut r, tags, dest);
            r.warnings.retain(|w| w.code != WarningCode::Hypervisor);
            r.warnings.push(emulation.clone());
            records.push(r);
        }
    }
    Ok(records)
}

/// Add the lab's tags and move the record's trace path from the guest's `/out` to `dest`.
pub fn retag(r: &mut RunRecord, tags: &[(String, String)], dest: &Path) {
    for (k, v) in tags {
        r.tags.insert(k.clone(), v.clone());
    }
    if let Some(t) = &r.trace_file {
        if let Some(rel) = t
            .strip_prefix("/out/")
            .and_then(crate::ustar::safe_relative)
        {
            r.trace_file = Some(dest.join(rel).display().to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_store_comes_home_tagged() {
        let db = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../store/tests/fixtures/records-2026-11-24.db"
        ))
        .unwrap();
        let out = GuestOutcome {
            exit_code: 0,
            release: "6.12.117".into(),
            guest_cpus: 2,
            output: String::new(),
            console: "boot\n".into(),
            files: vec![
                ("data/rtscope/results.db".into(), db),
                ("rtscope-results/x/summary.txt".into(), b"s".to_vec()),
            ],
            boot_secs: 1.0,
            total_secs: 2.0,
        };
        let d = tempfile::tempdir().unwrap();
        let tags = [("kernel".to_string(), "trace-6.12.117-k".to_string())];
        let w = Warning::new(WarningCode::Hypervisor, "emulated");
        let recs = bring_home(&out, &tags, &w, d.path()).unwrap();
        assert!(!recs.is_empty());
        for r in &recs {
            assert_eq!(r.tags["kernel"], "trace-6.12.117-k");
            let hv: Vec<&Warning> = r
                .warnings
                .iter()
                .filter(|w| w.code == WarningCode::Hypervisor)
                .collect();
            assert_eq!(hv.len(), 1);
            assert_eq!(hv[0].message, "emulated");
        }
        assert_eq!(
            std::fs::read(d.path().join("rtscope-results/x/summary.txt")).unwrap(),
            b"s"
        );
    }

    #[test]
    fn retag_moves_trace_paths_into_dest() {
        // A copy: a reader may migrate an older schema in place, and the fixture must stay as
        // it was written.
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("old.db");
        std::fs::copy(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../store/tests/fixtures/records-2026-11-24.db"
            ),
            &db,
        )
        .unwrap();
        let mut st = rtscope_store::Store::open_sqlite_read_only(&db).unwrap();
        let mut r = st
            .load_runs(&rtscope_store::RunFilter::default())
            .unwrap()
            .remove(0);
        r.trace_file = Some("/out/rtscope-results/abc/trace.rtt".into());
        retag(
            &mut r,
            &[("kernel".into(), "trace-6.12".into())],
            Path::new("/home/u/lab/x"),
        );
        assert_eq!(
            r.trace_file.as_deref(),
            Some("/home/u/lab/x/rtscope-results/abc/trace.rtt")
        );
        assert_eq!(r.tags["kernel"], "trace-6.12");
        // A path outside /out, or one climbing out of it, is left as the guest wrote it.
        r.trace_file = Some("/out/../etc/x".into());
        retag(&mut r, &[], Path::new("/d"));
        assert_eq!(r.trace_file.as_deref(), Some("/out/../etc/x"));
    }
}
