//! Kernels as inputs. The seeds compare kernels (stock vs PREEMPT_RT, preemption models) and the
//! ECRTS'20 bound needs events (preemptirq, osnoise/timerlat) that distribution kernels and
//! locked-down hosts do not offer. The lab builds kernels from Debian's `linux-source-6.12` with
//! a documented config fragment per preset (or takes Debian's own images), boots them under
//! QEMU/TCG (optionally `-icount`, an instruction-driven guest clock into which no host stall can
//! leak), runs one rtscope verb inside and brings its records and traces home.
//!
//! What it must not do: start a guest without a time limit, leave a QEMU process, scratch disk
//! or temporary directory behind on any exit path, or change the host's kernel settings.
//!
//! - [`preset`]: the presets and their config fragments;
//! - [`kernel`]: building, the cache (`~/.cache/rtscope/kernels`), what each kernel supports;
//! - [`initramfs`]: the guest's userland (busybox, rtscope and the libraries they need), as cpio;
//! - [`guest`]: booting, the timeout, every exit path's clean-up, and the results coming home;
//! - [`module`]: `rtscope_lab.ko`, the paper's test driver and a device interrupt, for the guests;
//! - [`nic`]: a virtio-net device fed from the host side (`lab run --nic-load`).
//! - [`verb`]: the guest verb's length and disk load, which size the guest's limit and disk.

pub mod field;
pub mod guest;
pub mod home;
pub mod initramfs;
pub mod kernel;
pub mod module;
pub mod nic;
pub mod preset;
pub mod ustar;
pub mod verb;

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// Bad input: nothing was started (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Something the lab needs is not installed or not built (exit 2): names it and how to get it.
    #[error("{0}")]
    Missing(String),
    /// The guest did not finish within the timeout and was killed.
    #[error("{0}")]
    Timeout(String),
    /// A build step, QEMU or the guest failed after it started.
    #[error("{0}")]
    Failed(String),
    /// Stopped by SIGINT/SIGTERM/SIGHUP; everything the lab started is gone.
    #[error("{0}")]
    Interrupted(String),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

impl LabError {
    /// The one exit-code table: bad input and missing prerequisites are 2 (nothing started).
    pub fn exit_code(&self) -> i32 {
        match self {
            LabError::Usage(_) | LabError::Missing(_) => 2,
            LabError::Interrupted(_) => 0,
            _ => 1,
        }
    }
}

pub type Result<T> = std::result::Result<T, LabError>;

pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> LabError {
    let w = what.into();
    move |e| LabError::Io(w, e)
}

/// The lab's cache: `$RTSCOPE_KERNELS`, else `$XDG_CACHE_HOME/rtscope/kernels`, else
/// `~/.cache/rtscope/kernels`. Sources are extracted once under `src/`, each preset builds out of
/// tree under `build/<preset>/` (a rebuild after a config change is incremental), finished
/// kernels live in `<name>/` with their config and `meta.json`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("RTSCOPE_KERNELS").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("rtscope/kernels");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/rtscope/kernels")
}

/// A host executable for the guest: a bare name through PATH (as a shell would find it), a
/// path as given.
pub fn in_path(b: &std::path::Path) -> PathBuf {
    if b.components().count() > 1 {
        return b.to_path_buf();
    }
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(b))
                .find(|c| c.is_file())
        })
        .unwrap_or_else(|| b.to_path_buf())
}

/// Whether a program is on PATH.
pub(crate) fn have(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_path_is_taken_as_given_and_a_bare_name_through_path() {
        assert_eq!(in_path(Path::new("bin/x")), PathBuf::from("bin/x"));
        let missing = Path::new("rtscope-no-such-program");
        assert_eq!(in_path(missing), missing.to_path_buf());
        if let Some(sh) = have("sh") {
            assert_eq!(in_path(Path::new("sh")), sh);
        }
    }
}
