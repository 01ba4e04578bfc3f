//! The `lean` and `rt-lean` presets, checked without compiling a kernel: their fragments are
//! configured exactly as `lab kernel build` configures them (x86_64_defconfig, then
//! kvm_guest.config and the fragments merged, then `olddefconfig`) in a scratch build directory
//! against the cached 6.12 source tree, and the resulting `.config` must have every option the
//! fragments ask for, none of the tracing or debugging options the paper's kernels lacked, and
//! the preemption model of its preset. Kconfig silently drops what it cannot satisfy, so only
//! the final `.config` says what a build would get.

use rtscope_lab::kernel::Features;
use rtscope_lab::preset::{self, Preset, LEAN_ABSENT};
use std::path::{Path, PathBuf};
use std::process::Command;

fn source_tree() -> Option<PathBuf> {
    let src = rtscope_lab::cache_dir()
        .join("src")
        .join(format!("linux-source-{}", preset::SOURCE_SERIES));
    src.join("scripts/kconfig/merge_config.sh")
        .is_file()
        .then_some(src)
}

fn run(c: &mut Command, what: &str) {
    let o = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        o.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The final `.config` of `p`, configured in `dir` as `lab kernel build` does.
fn configure(src: &Path, dir: &Path, p: Preset) -> String {
    let make = |args: &[&str]| {
        let mut c = Command::new("make");
        c.current_dir(src)
            .arg(format!("O={}", dir.display()))
            .args(args);
        c
    };
    run(&mut make(&["x86_64_defconfig"]), "make x86_64_defconfig");
    let mut frags = vec![src.join("kernel/configs/kvm_guest.config")];
    for (name, text) in p.fragments() {
        let f = dir.join(name);
        std::fs::write(&f, text).expect("writing a fragment");
        frags.push(f);
    }
    run(
        Command::new(src.join("scripts/kconfig/merge_config.sh"))
            .current_dir(src)
            .arg("-m")
            .arg("-O")
            .arg(dir)
            .arg(dir.join(".config"))
            .args(&frags),
        "merge_config.sh",
    );
    run(&mut make(&["olddefconfig"]), "make olddefconfig");
    std::fs::read_to_string(dir.join(".config")).expect("reading .config")
}

fn value<'a>(cfg: &'a str, key: &str) -> Option<&'a str> {
    cfg.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

#[test]
fn lean_presets_configure_without_tracing_or_debugging() {
    let Some(src) = source_tree() else {
        rtscope_testkit::skipped(format!(
            "no extracted linux-source-{} in {} (rtscope lab kernel build --preset trace extracts it)",
            preset::SOURCE_SERIES,
            rtscope_lab::cache_dir().display()
        ));
        return;
    };
    for p in [Preset::Lean, Preset::RtLean] {
        let dir = rtscope_testkit::tmp();
        let cfg = configure(&src, dir.path(), p);
        let frags = p.fragments();
        let unmet = preset::unmet_options(&frags, &cfg);
        assert!(
            unmet.is_empty(),
            "{}: Kconfig did not take {unmet:?}",
            p.name()
        );
        let present: Vec<String> = LEAN_ABSENT
            .iter()
            .filter_map(|k| value(&cfg, k).map(|v| format!("{k}={v}")))
            .collect();
        assert!(
            present.is_empty(),
            "{}: tracing or debugging options left on: {present:?}",
            p.name()
        );
        let f = Features::from_config(&cfg);
        assert!(
            !f.preemptirq && !f.osnoise && !f.timerlat && !f.btf && !f.fentry,
            "{f:?}"
        );
        match p {
            Preset::Lean => {
                assert!(f.preempt_dynamic && !f.preempt_rt, "lean: {f:?}");
                assert_eq!(value(&cfg, "CONFIG_PREEMPT"), Some("y"));
            }
            _ => {
                assert!(f.preempt_rt && !f.preempt_dynamic, "rt-lean: {f:?}");
                assert_eq!(value(&cfg, "CONFIG_PREEMPT"), None);
            }
        }
        // The same guest as the trace presets: serial console, initramfs, virtio, 9p, cpusets.
        for k in [
            "CONFIG_SERIAL_8250_CONSOLE",
            "CONFIG_BLK_DEV_INITRD",
            "CONFIG_VIRTIO_PCI",
            "CONFIG_VIRTIO_BLK",
            "CONFIG_VIRTIO_NET",
            "CONFIG_NET_9P_VIRTIO",
            "CONFIG_CPUSETS",
            "CONFIG_VFAT_FS",
        ] {
            assert_eq!(value(&cfg, k), Some("y"), "{}: {k}", p.name());
        }
    }
}
