//! `rtscope_lab.ko`, heursch-2001's test driver for the lab's guests (module/rtscope_lab.c):
//! a device interrupt for the interrupt response time (QEMU's emulated parallel port, raised by
//! an `outb()` as the paper's wire raised it) and the driver call with N preemption points of the
//! PDLT figures 3–8.
//!
//! It is built out of tree against the kernel's own build directory (`build/<preset>/` in the
//! cache), so only kernels the lab built from source get it; the Debian images have no build
//! tree. The module is cached beside the kernel, named by a hash of its source, and the guest
//! loads it at boot when it is in the initramfs (`/dev/rtscope_lab`).

use crate::field::*;
use crate::kernel::Kernel;
use crate::{io, LabError, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The module's C source, compiled into rtscope so a lab run can build it anywhere.
pub const SOURCE: &str = include_str!("../module/rtscope_lab.c");

/// Where the guest finds the module in its initramfs.
pub const GUEST_PATH: &str = "lib/modules/rtscope_lab.ko";

/// The ISA parallel port the module drives, as QEMU places it (LPT1).
pub const PARPORT_IO: u32 = 0x378;
pub const PARPORT_IRQ: u32 = 7;

/// The QEMU arguments of the module's device: an ISA parallel port on a null character
/// device (nothing is printed anywhere; only its interrupt line is used).
pub fn qemu_device_args() -> Vec<String> {
    vec![
        "-chardev".into(),
        "null,id=rtscope-lpt".into(),
        "-device".into(),
        format!("isa-parallel,chardev=rtscope-lpt,iobase={PARPORT_IO:#x},irq={PARPORT_IRQ}"),
    ]
}

fn source_hash() -> String {
    let d = Sha256::digest(SOURCE.as_bytes());
    d.iter().take(5).map(|b| format!("{b:02x}")).collect()
}

/// Why a kernel cannot have the module (None: it can).
pub fn unavailable_reason(k: &Kernel) -> Option<String> {
    let Some(cache) = k.dir.parent() else {
        return Some("the kernel is not in a lab cache".into());
    };
    let bdir = cache.join("build").join(&k.meta.preset);
    let src = source_tree(cache);
    if matches!(k.meta.preset.as_str(), "lean" | "rt-lean") {
        return Some(format!(
            "{} is a lean kernel (the paper's untraced comparison); the test driver is built for the trace and rt-trace presets",
            k.meta.name
        ));
    }
    if !matches!(k.meta.preset.as_str(), "trace" | "rt-trace") {
        return Some(format!(
            "{} is a packaged image without a build tree",
            k.meta.name
        ));
    }
    if !src.join("Makefile").is_file() || !bdir.join("vmlinux.symvers").is_file() {
        return Some(format!(
            "the build tree of {} is gone ({}); rebuild with `rtscope lab kernel build {PRESET} {} {FORCE}`",
            k.meta.name,
            bdir.display(),
            k.meta.preset
        ));
    }
    let same = match (
        std::fs::read(bdir.join(".config")),
        std::fs::read(k.config()),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same {
        return Some(format!(
            "{} holds another configuration than {} (a later build of the preset); rebuild with `rtscope lab kernel build {PRESET} {} {FORCE}`",
            bdir.display(),
            k.meta.name,
            k.meta.preset
        ));
    }
    None
}

fn source_tree(cache: &Path) -> PathBuf {
    cache
        .join("src")
        .join(format!("linux-source-{}", crate::preset::SOURCE_SERIES))
}

/// The module for `k`, built on first use (a few seconds) and cached in the kernel's directory.
/// `Ok(Err(reason))` when this kernel cannot have it.
pub fn ensure(
    k: &Kernel,
    mut progress: impl FnMut(&str),
) -> Result<std::result::Result<PathBuf, String>> {
    if let Some(why) = unavailable_reason(k) {
        return Ok(Err(why));
    }
    let out = k.dir.join(format!("rtscope_lab-{}.ko", source_hash()));
    if out.is_file() {
        return Ok(Ok(out));
    }
    let cache = k.dir.parent().expect("checked by unavailable_reason");
    let _lock = crate::kernel::CacheLock::take(cache)?;
    if out.is_file() {
        return Ok(Ok(out));
    }
    progress(&format!(
        "lab: building rtscope_lab.ko for {} …",
        k.meta.name
    ));
    let bdir = cache.join("build").join(&k.meta.preset);
    let src = source_tree(cache);
    // An out-of-tree module needs the linker script and host tools `modules_prepare` makes; a
    // tree that built only bzImage lacks the script.
    if !bdir.join("scripts/module.lds").is_file() {
        make(&src, &bdir, &["modules_prepare"], None)?;
    }
    let tmp = k.dir.join(format!(".module-build.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(io(format!("creating {}", tmp.display())))?;
    let r = (|| {
        std::fs::write(tmp.join("rtscope_lab.c"), SOURCE)
            .map_err(io("writing the module source"))?;
        std::fs::write(tmp.join("Kbuild"), "obj-m := rtscope_lab.o\n")
            .map_err(io("writing Kbuild"))?;
        // vmlinux.symvers lists the kernel's exports (the tree built no Module.symvers).
        let extra = format!(
            "KBUILD_EXTRA_SYMBOLS={}",
            bdir.join("vmlinux.symvers").display()
        );
        make(&src, &bdir, &["modules"], Some((&tmp, &extra)))?;
        let part = out.with_extension("ko.part");
        std::fs::copy(tmp.join("rtscope_lab.ko"), &part).map_err(io("copying the module"))?;
        std::fs::rename(&part, &out).map_err(io("placing the module"))?;
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    r.map(|()| Ok(out))
}

fn make(src: &Path, bdir: &Path, targets: &[&str], ext: Option<(&Path, &str)>) -> Result<()> {
    let mut c = Command::new("make");
    c.current_dir(src)
        .arg("-s")
        .arg(format!("O={}", bdir.display()))
        .stdin(Stdio::null());
    if let Some((m, extra)) = ext {
        c.arg(format!("M={}", m.display())).arg(extra);
    }
    c.args(targets);
    let o = c.output().map_err(|e| {
        LabError::Missing(format!(
            "lab: running make for the module: {e} (apt-get install make gcc)"
        ))
    })?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        let tail: Vec<&str> = err.lines().rev().take(15).collect();
        return Err(LabError::Failed(format!(
            "lab: building rtscope_lab.ko (make {}) failed ({}):\n{}",
            targets.join(" "),
            o.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_is_lpt1_on_a_null_chardev() {
        let a = qemu_device_args().join(" ");
        assert_eq!(
            a,
            "-chardev null,id=rtscope-lpt -device isa-parallel,chardev=rtscope-lpt,iobase=0x378,irq=7"
        );
    }

    #[test]
    fn the_source_defines_the_ioctls_the_bench_uses() {
        // The user side (rtscope-bench's labdev) encodes these numbers and struct sizes.
        assert!(SOURCE.contains("#define RTL_IOC_IRT _IOWR('R', 1, struct rtl_irt)"));
        assert!(SOURCE.contains("#define RTL_IOC_RUN _IOWR('R', 2, struct rtl_run)"));
        assert!(SOURCE.contains("#define RTL_IOC_WAIT _IOWR('R', 3, struct rtl_wait)"));
        assert_eq!(source_hash().len(), 10);
    }
}
