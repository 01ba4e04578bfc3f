//! Kernels in the lab's cache: building a preset, fetching a Debian image, listing what is there
//! and what each kernel supports.
//!
//! Layout under [`crate::cache_dir`]:
//! - `src/linux-source-<series>/`: Debian's source tree, extracted once (a stamp names the
//!   package version; a new version re-extracts);
//! - `build/<preset>/`: the out-of-tree build (`make O=`), kept so a rebuild is incremental;
//! - `debs/`: downloaded Debian images;
//! - `<name>/`: a finished kernel: `bzImage`, `config`, `meta.json`. The name is
//!   `<preset>-<version>-<key>`, the key a hash of the source package version and every config
//!   input, so a changed fragment builds a new kernel and an unchanged one is a cache hit.

use crate::field::*;
use crate::preset::{self, Preset};
use crate::{have, io, LabError, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a kernel can do for rtscope, read from its config.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Features {
    /// `CONFIG_PREEMPTIRQ_TRACEPOINTS`: preempt/irq disable/enable events (the bound's thread
    /// variables).
    pub preemptirq: bool,
    pub osnoise: bool,
    pub timerlat: bool,
    pub preempt_rt: bool,
    /// `preempt=none|voluntary|full` at boot.
    pub preempt_dynamic: bool,
    /// BTF: rtscope's eBPF capture (tp_btf) and fentry.
    pub btf: bool,
    /// fentry/fexit need the ftrace trampolines.
    pub fentry: bool,
    pub hz: Option<u32>,
}

impl Features {
    pub fn from_config(cfg: &str) -> Features {
        let on = |k: &str| {
            cfg.lines()
                .any(|l| l.strip_prefix(k).is_some_and(|r| r == "=y"))
        };
        let hz = cfg
            .lines()
            .find_map(|l| l.strip_prefix("CONFIG_HZ="))
            .and_then(|v| v.trim().parse().ok());
        Features {
            preemptirq: on("CONFIG_PREEMPTIRQ_TRACEPOINTS"),
            osnoise: on("CONFIG_OSNOISE_TRACER"),
            timerlat: on("CONFIG_TIMERLAT_TRACER"),
            preempt_rt: on("CONFIG_PREEMPT_RT"),
            preempt_dynamic: on("CONFIG_PREEMPT_DYNAMIC"),
            btf: on("CONFIG_DEBUG_INFO_BTF"),
            fentry: on("CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS") && on("CONFIG_BPF_JIT"),
            hz,
        }
    }

    /// Short list for `lab list`.
    pub fn summary(&self) -> String {
        let mut v = Vec::new();
        if self.preempt_rt {
            v.push("PREEMPT_RT".to_string());
        }
        if self.preempt_dynamic {
            v.push("preempt=".to_string());
        }
        for (on, n) in [
            (self.preemptirq, "preemptirq"),
            (self.osnoise, "osnoise"),
            (self.timerlat, "timerlat"),
            (self.btf, "btf"),
            (self.fentry, "fentry"),
        ] {
            if on {
                v.push(n.to_string());
            }
        }
        if let Some(hz) = self.hz {
            v.push(format!("HZ={hz}"));
        }
        v.join(" ")
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelMeta {
    pub name: String,
    pub preset: String,
    /// The kernel release (`6.12.117`, `6.1.0-56-rt-amd64`).
    pub release: String,
    /// The Debian package the kernel came from, with its version.
    pub source: String,
    pub key: String,
    pub built_at: String,
    /// Wall-clock seconds of the build (0 for a Debian image).
    pub build_secs: f64,
    pub jobs: u32,
    pub features: Features,
}

#[derive(Clone, Debug)]
pub struct Kernel {
    pub dir: PathBuf,
    pub meta: KernelMeta,
}

impl Kernel {
    pub fn image(&self) -> PathBuf {
        self.dir.join("bzImage")
    }
    pub fn config(&self) -> PathBuf {
        self.dir.join("config")
    }
}

/// Every finished kernel in the cache, newest first.
pub fn list(cache: &Path) -> Vec<Kernel> {
    let mut v: Vec<Kernel> = std::fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let dir = e.path();
            let meta: KernelMeta =
                serde_json::from_slice(&std::fs::read(dir.join("meta.json")).ok()?).ok()?;
            dir.join("bzImage")
                .is_file()
                .then_some(Kernel { dir, meta })
        })
        .collect();
    v.sort_by(|a, b| {
        b.meta
            .built_at
            .cmp(&a.meta.built_at)
            .then(a.meta.name.cmp(&b.meta.name))
    });
    v
}

/// A kernel by exact name, or the newest of a preset.
pub fn find(cache: &Path, name: &str) -> Result<Kernel> {
    let all = list(cache);
    if let Some(k) = all.iter().find(|k| k.meta.name == name) {
        return Ok(k.clone());
    }
    if let Some(k) = all.iter().find(|k| k.meta.preset == name) {
        return Ok(k.clone());
    }
    let how = match Preset::parse(name) {
        Ok(p) => format!("rtscope lab kernel build {PRESET} {}", p.name()),
        Err(_) => format!(
            "a preset ({}) or a name from `rtscope lab list`",
            Preset::names().join(", ")
        ),
    };
    Err(LabError::Missing(format!(
        "{KERNEL}: no kernel '{name}' in {} (get it with: {how})",
        cache.display()
    )))
}

pub struct BuildOpts {
    pub jobs: u32,
    /// Rebuild even when the cache has the kernel.
    pub force: bool,
    pub progress: bool,
}

impl BuildOpts {
    /// `jobs` parallel compile jobs, one per online CPU when not given.
    pub fn new(jobs: Option<u32>, force: bool, progress: bool) -> BuildOpts {
        let jobs = jobs.unwrap_or_else(|| {
            rtscope_sys::affinity::online_cpus()
                .map(|c| c.len() as u32)
                .unwrap_or(1)
                .max(1)
        });
        BuildOpts {
            jobs,
            force,
            progress,
        }
    }
}

/// The cache key: the source package version and every config input, hashed.
pub fn cache_key(source_version: &str, fragments: &[(&str, &str)]) -> String {
    let mut h = Sha256::new();
    h.update(b"rtscope-lab-kernel-1\0");
    h.update(source_version.as_bytes());
    h.update(b"\0x86_64_defconfig\0kvm_guest.config\0");
    for (n, t) in fragments {
        h.update(n.as_bytes());
        h.update(b"\0");
        h.update(t.as_bytes());
        h.update(b"\0");
    }
    let d = h.finalize();
    d.iter().take(5).map(|b| format!("{b:02x}")).collect()
}

fn missing_tools(tools: &[(&str, &str)]) -> Result<()> {
    let absent: Vec<String> = tools
        .iter()
        .filter(|(t, _)| have(t).is_none())
        .map(|(t, pkg)| format!("{t} (apt-get install {pkg})"))
        .collect();
    if absent.is_empty() {
        Ok(())
    } else {
        Err(LabError::Missing(format!(
            "lab kernel build: missing {}; scripts/setup.sh installs them",
            absent.join(", ")
        )))
    }
}

fn dpkg_version(pkg: &str) -> Option<String> {
    let o = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", pkg])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !v.is_empty()).then_some(v)
}

/// Build (or find in the cache) a preset's kernel.
pub fn build(p: Preset, o: &BuildOpts) -> Result<Kernel> {
    let cache = crate::cache_dir();
    if p.is_built() {
        build_from_source(&cache, p, o)
    } else {
        fetch_debian(&cache, p, o)
    }
}

fn now_rfc3339() -> String {
    rtscope_session::record::rfc3339(std::time::SystemTime::now())
}

fn build_from_source(cache: &Path, p: Preset, o: &BuildOpts) -> Result<Kernel> {
    let series = preset::SOURCE_SERIES;
    let pkg = format!("linux-source-{series}");
    let tarball = PathBuf::from(format!("/usr/src/{pkg}.tar.xz"));
    let Some(pkg_version) = dpkg_version(&pkg).filter(|_| tarball.is_file()) else {
        return Err(LabError::Missing(format!(
            "lab kernel build: {} not found (apt-get install {pkg}; scripts/setup.sh does it)",
            tarball.display()
        )));
    };
    missing_tools(&[
        ("make", "make"),
        ("gcc", "gcc"),
        ("flex", "flex"),
        ("bison", "bison"),
        ("bc", "bc"),
        ("pahole", "dwarves"),
        ("xz", "xz-utils"),
        ("perl", "perl"),
    ])?;
    for (h, pkg) in [
        ("/usr/include/libelf.h", "libelf-dev"),
        ("/usr/include/openssl/ssl.h", "libssl-dev"),
    ] {
        if !Path::new(h).is_file() {
            return Err(LabError::Missing(format!(
                "lab kernel build: missing {h} (apt-get install {pkg}; scripts/setup.sh installs it)"
            )));
        }
    }
    let frags = p.fragments();
    let key = cache_key(&pkg_version, &frags);
    let release = pkg_version
        .split('-')
        .next()
        .unwrap_or(&pkg_version)
        .to_string();
    let name = format!("{}-{release}-{key}", p.name());
    let out = cache.join(&name);
    if !o.force {
        if let Ok(k) = find(cache, &name) {
            return Ok(k);
        }
    }
    std::fs::create_dir_all(cache).map_err(io(format!("creating {}", cache.display())))?;
    let _lock = CacheLock::take(cache)?;
    let _signals = rtscope_probe::signals::Guard::install(&[]);
    let t0 = Instant::now();

    // The source tree, extracted once per package version.
    let src_root = cache.join("src");
    let src = src_root.join(&pkg);
    let stamp = src.join(".rtscope-source");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(pkg_version.as_str()) {
        status(o, &format!("extracting {} …", tarball.display()));
        let tmp = src_root.join(".extract");
        let _ = std::fs::remove_dir_all(&tmp);
        let _ = std::fs::remove_dir_all(&src);
        std::fs::create_dir_all(&tmp).map_err(io("creating the source directory"))?;
        let mut c = Command::new("tar");
        c.arg("xf").arg(&tarball).arg("-C").arg(&tmp);
        run_step(c, None, o, "extract")?;
        std::fs::rename(tmp.join(&pkg), &src).map_err(io("moving the source tree"))?;
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::write(&stamp, &pkg_version).map_err(io("writing the source stamp"))?;
    }

    // Configure: defconfig, then kvm_guest.config and the preset's fragments merged, then
    // olddefconfig resolves what the fragments imply.
    let bdir = cache.join("build").join(p.name());
    std::fs::create_dir_all(&bdir).map_err(io(format!("creating {}", bdir.display())))?;
    let log = bdir.join("rtscope-build.log");
    let _ = std::fs::remove_file(&log);
    let make = |args: &[&str]| {
        let mut c = Command::new("make");
        c.current_dir(&src).arg(format!("O={}", bdir.display()));
        c.args(args);
        c
    };
    status(
        o,
        &format!("configuring {} in {} …", p.name(), bdir.display()),
    );
    run_step(make(&["x86_64_defconfig"]), Some(&log), o, "defconfig")?;
    let mut frag_paths = vec![src.join("kernel/configs/kvm_guest.config")];
    for (n, t) in &frags {
        let f = bdir.join(n);
        std::fs::write(&f, t).map_err(io(format!("writing {}", f.display())))?;
        frag_paths.push(f);
    }
    let mut merge = Command::new(src.join("scripts/kconfig/merge_config.sh"));
    merge
        .current_dir(&src)
        .arg("-m")
        .arg("-O")
        .arg(&bdir)
        .arg(bdir.join(".config"))
        .args(&frag_paths);
    run_step(merge, Some(&log), o, "merge_config")?;
    run_step(make(&["olddefconfig"]), Some(&log), o, "olddefconfig")?;
    let cfg = std::fs::read_to_string(bdir.join(".config")).map_err(io("reading .config"))?;
    let unmet = preset::unmet_options(&frags, &cfg);
    if !unmet.is_empty() {
        return Err(LabError::Failed(format!(
            "lab kernel build: Kconfig did not take {} (dependencies unmet in {pkg} {pkg_version})",
            unmet.join(", ")
        )));
    }

    let jobs = o.jobs.max(1);
    status(
        o,
        &format!(
            "building bzImage with {jobs} jobs (log: {}) …",
            log.display()
        ),
    );
    run_step(
        make(&[&format!("-j{jobs}"), "bzImage"]),
        Some(&log),
        o,
        "make bzImage",
    )?;
    // The linker script and host tools out-of-tree modules need (the lab's own test driver,
    // crate::module), made while the tree is locked.
    run_step(
        make(&["modules_prepare"]),
        Some(&log),
        o,
        "make modules_prepare",
    )?;
    let build_secs = t0.elapsed().as_secs_f64();

    let tmp = cache.join(format!(".{name}.tmp"));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(io("creating the kernel directory"))?;
    std::fs::copy(bdir.join("arch/x86/boot/bzImage"), tmp.join("bzImage"))
        .map_err(io("copying bzImage"))?;
    std::fs::write(tmp.join("config"), &cfg).map_err(io("writing config"))?;
    let meta = KernelMeta {
        name: name.clone(),
        preset: p.name().into(),
        release,
        source: format!("{pkg} {pkg_version}"),
        key,
        built_at: now_rfc3339(),
        build_secs,
        jobs,
        features: Features::from_config(&cfg),
    };
    finish(&tmp, &out, &meta)
}

fn finish(tmp: &Path, out: &Path, meta: &KernelMeta) -> Result<Kernel> {
    let j = serde_json::to_vec_pretty(meta).expect("meta serialises");
    std::fs::write(tmp.join("meta.json"), j).map_err(io("writing meta.json"))?;
    let _ = std::fs::remove_dir_all(out);
    std::fs::rename(tmp, out).map_err(io(format!("installing {}", out.display())))?;
    Ok(Kernel {
        dir: out.to_path_buf(),
        meta: meta.clone(),
    })
}

/// Newest Debian image package of a preset that apt knows (or that is already downloaded).
fn debian_package(p: Preset, debs: &[PathBuf]) -> Result<String> {
    let re = p.debian_package_regex().expect("debian preset");
    let mut names: Vec<String> = Vec::new();
    if have("apt-cache").is_some() {
        if let Ok(o) = Command::new("apt-cache")
            .args(["search", "--names-only", re])
            .stderr(Stdio::null())
            .output()
        {
            names.extend(
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .filter_map(|l| l.split_whitespace().next())
                    .map(String::from),
            );
        }
    }
    for d in debs {
        if let Some(n) = d.file_name().and_then(|n| n.to_str()) {
            if let Some((pkg, _)) = n.split_once('_') {
                names.push(pkg.to_string());
            }
        }
    }
    let rt = p == Preset::DebianRt;
    names.retain(|n| {
        n.starts_with("linux-image-6.1.0-")
            && n.ends_with("-amd64-unsigned")
            && n.contains("-rt-") == rt
            && !n.contains("cloud")
    });
    names.sort_by_key(|n| abi_number(n));
    names.pop().ok_or_else(|| {
        LabError::Missing(format!(
            "lab kernel build {PRESET} {}: no {} package known to apt (apt-get update)",
            p.name(),
            re
        ))
    })
}

/// `linux-image-6.1.0-56-amd64-unsigned` → 56.
fn abi_number(pkg: &str) -> u32 {
    pkg.trim_start_matches("linux-image-6.1.0-")
        .split('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn fetch_debian(cache: &Path, p: Preset, o: &BuildOpts) -> Result<Kernel> {
    let debs_dir = cache.join("debs");
    // setup.sh's QEMU cache holds the same packages.
    let qemu_cache = cache.parent().map(|d| d.join("qemu")).unwrap_or_default();
    let known: Vec<PathBuf> = [&debs_dir, &qemu_cache]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    let pkg = debian_package(p, &known)?;
    let abi = pkg
        .trim_start_matches("linux-image-")
        .trim_end_matches("-unsigned")
        .to_string();
    let key = cache_key(&pkg, &[]);
    let name = format!("{}-{abi}", p.name());
    if !o.force {
        if let Ok(k) = find(cache, &name) {
            return Ok(k);
        }
    }
    std::fs::create_dir_all(&debs_dir).map_err(io(format!("creating {}", debs_dir.display())))?;
    let _lock = CacheLock::take(cache)?;
    let t0 = Instant::now();
    let deb = match known.iter().find(|d| {
        d.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(&format!("{pkg}_")))
    }) {
        Some(d) => d.clone(),
        None => {
            if have("apt-get").is_none() {
                return Err(LabError::Missing(format!(
                    "lab kernel build {PRESET} {}: apt-get is needed to download {pkg}",
                    p.name()
                )));
            }
            status(o, &format!("downloading {pkg} …"));
            let mut c = Command::new("apt-get");
            c.current_dir(&debs_dir).args(["download", &pkg]);
            run_step(c, None, o, "apt-get download")?;
            std::fs::read_dir(&debs_dir)
                .map_err(io("listing the downloads"))?
                .flatten()
                .map(|e| e.path())
                .find(|d| {
                    d.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&format!("{pkg}_")))
                })
                .ok_or_else(|| LabError::Failed(format!("apt-get download {pkg}: no .deb")))?
        }
    };
    let tmp = cache.join(format!(".{name}.tmp"));
    let _ = std::fs::remove_dir_all(&tmp);
    let x = tmp.join("x");
    std::fs::create_dir_all(&x).map_err(io("creating the kernel directory"))?;
    let mut c = Command::new("dpkg-deb");
    c.arg("-x").arg(&deb).arg(&x);
    run_step(c, None, o, "dpkg-deb -x")?;
    let boot = x.join("boot");
    let pick = |prefix: &str| -> Result<PathBuf> {
        std::fs::read_dir(&boot)
            .map_err(io(format!("reading {}", boot.display())))?
            .flatten()
            .map(|e| e.path())
            .find(|f| {
                f.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix))
            })
            .ok_or_else(|| LabError::Failed(format!("{}: no {prefix}* in /boot", deb.display())))
    };
    let vmlinuz = pick("vmlinuz-")?;
    let config = pick("config-")?;
    let release = vmlinuz
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .trim_start_matches("vmlinuz-")
        .to_string();
    std::fs::rename(&vmlinuz, tmp.join("bzImage")).map_err(io("moving vmlinuz"))?;
    let cfg = std::fs::read_to_string(&config).map_err(io("reading the image's config"))?;
    std::fs::write(tmp.join("config"), &cfg).map_err(io("writing config"))?;
    let _ = std::fs::remove_dir_all(&x);
    let version = deb
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split('_').nth(1))
        .unwrap_or("")
        .to_string();
    let meta = KernelMeta {
        name: name.clone(),
        preset: p.name().into(),
        release,
        source: format!("{pkg} {version}"),
        key,
        built_at: now_rfc3339(),
        build_secs: t0.elapsed().as_secs_f64(),
        jobs: 0,
        features: Features::from_config(&cfg),
    };
    finish(&tmp, &cache.join(&name), &meta)
}

fn status(o: &BuildOpts, s: &str) {
    if o.progress {
        eprintln!("lab: {s}");
    }
}

/// One build step. Its output goes to `log` (appended) and, with a progress display, the
/// latest compiled file and a count are shown. The step runs in its own process group so a stop
/// request (SIGINT/SIGTERM) ends every compiler it started; `PR_SET_PDEATHSIG` ends `make`
/// itself if rtscope is killed outright.
fn run_step(mut c: Command, log: Option<&Path>, o: &BuildOpts, what: &str) -> Result<()> {
    use std::os::unix::process::CommandExt;
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c.process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(|| {
            let _ = rtscope_sys::process::set_parent_death_signal(rtscope_sys::Signal::SIGKILL);
            Ok(())
        });
    }
    let mut child = c
        .spawn()
        .map_err(|e| LabError::Failed(format!("{what}: cannot start: {e}")))?;
    let pid = child.id() as i32;
    let logf = match log {
        Some(l) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(l)
                .map_err(io(format!("opening {}", l.display())))?,
        ),
        None => None,
    };
    let tail = std::sync::Arc::new(std::sync::Mutex::new(
        std::collections::VecDeque::<String>::new(),
    ));
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let last = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut readers = Vec::new();
    for r in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let mut logf = logf.as_ref().and_then(|f| f.try_clone().ok());
        let (tail, count, last) = (tail.clone(), count.clone(), last.clone());
        readers.push(std::thread::spawn(move || {
            use std::io::Write;
            for line in BufReader::new(r).lines().map_while(|l| l.ok()) {
                if let Some(f) = logf.as_mut() {
                    let _ = writeln!(f, "{line}");
                }
                let t = line.trim_start();
                if t.starts_with("CC ") || t.starts_with("LD ") || t.starts_with("AR ") {
                    count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    *last.lock().unwrap() = t.to_string();
                }
                let mut q = tail.lock().unwrap();
                q.push_back(line);
                if q.len() > 20 {
                    q.pop_front();
                }
            }
        }));
    }
    let bar = if o.progress && what == "make bzImage" {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                .expect("template"),
        );
        Some(b)
    } else {
        None
    };
    let status = loop {
        if let Some(s) = child
            .try_wait()
            .map_err(|e| LabError::Failed(format!("{what}: {e}")))?
        {
            break s;
        }
        if rtscope_probe::signals::stop_requested() {
            // The process group this step created.
            let _ = rtscope_sys::process::kill(-pid, rtscope_sys::Signal::SIGTERM);
            let _ = child.wait();
            // Stragglers that ignored SIGTERM.
            let _ = rtscope_sys::process::kill(-pid, rtscope_sys::Signal::SIGKILL);
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            return Err(LabError::Interrupted(format!(
                "{what}: stopped by {}; the partial build stays for an incremental rebuild",
                rtscope_probe::signals::stop_signal_name()
            )));
        }
        if let Some(b) = &bar {
            b.set_message(format!(
                "{} objects · {}",
                count.load(std::sync::atomic::Ordering::Relaxed),
                last.lock().unwrap()
            ));
            b.tick();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    for r in readers {
        let _ = r.join();
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if !status.success() {
        let t: Vec<String> = tail.lock().unwrap().iter().cloned().collect();
        return Err(LabError::Failed(format!(
            "{what} failed ({status}){}:\n{}",
            log.map(|l| format!("; full log {}", l.display()))
                .unwrap_or_default(),
            t.join("\n")
        )));
    }
    Ok(())
}

/// One build at a time per cache (two `make O=` in one tree would corrupt it): an flock on
/// `cache/.lock`, released when the holder exits however it exits.
pub(crate) struct CacheLock(#[allow(dead_code)] std::fs::File);

impl CacheLock {
    pub(crate) fn take(cache: &Path) -> Result<CacheLock> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(cache.join(".lock"))
            .map_err(io("opening the cache lock"))?;
        if !rtscope_sys::process::lock_exclusive(&f, false).unwrap_or(false) {
            eprintln!(
                "lab: another build holds {}; waiting",
                cache.join(".lock").display()
            );
            let _ = rtscope_sys::process::lock_exclusive(&f, true);
        }
        Ok(CacheLock(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_from_config() {
        let cfg = "CONFIG_PREEMPTIRQ_TRACEPOINTS=y\nCONFIG_OSNOISE_TRACER=y\n# CONFIG_TIMERLAT_TRACER is not set\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=250\nCONFIG_PREEMPT_RT_X=y\n";
        let f = Features::from_config(cfg);
        assert!(f.preemptirq && f.osnoise && f.preempt_dynamic);
        assert!(!f.timerlat && !f.preempt_rt && !f.btf);
        assert_eq!(f.hz, Some(250));
        assert_eq!(f.summary(), "preempt= preemptirq osnoise HZ=250");
    }

    #[test]
    fn key_changes_with_every_input() {
        let a = cache_key("6.12.117-1", &[("f", "CONFIG_A=y\n")]);
        assert_eq!(a.len(), 10);
        assert_eq!(a, cache_key("6.12.117-1", &[("f", "CONFIG_A=y\n")]));
        assert_ne!(a, cache_key("6.12.118-1", &[("f", "CONFIG_A=y\n")]));
        assert_ne!(a, cache_key("6.12.117-1", &[("f", "CONFIG_A=m\n")]));
        assert_ne!(a, cache_key("6.12.117-1", &[("g", "CONFIG_A=y\n")]));
    }

    #[test]
    fn abi_numbers_sort_numerically() {
        let mut v = [
            "linux-image-6.1.0-9-amd64-unsigned",
            "linux-image-6.1.0-56-amd64-unsigned",
            "linux-image-6.1.0-47-amd64-unsigned",
        ];
        v.sort_by_key(|n| abi_number(n));
        assert_eq!(v[2], "linux-image-6.1.0-56-amd64-unsigned");
    }

    #[test]
    fn find_names_the_build_command() {
        let d = tempfile::tempdir().unwrap();
        match find(d.path(), "rt-trace") {
            Err(LabError::Missing(m)) => {
                assert!(
                    m.contains("rtscope lab kernel build ⟨lab.preset⟩ rt-trace"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
        match find(d.path(), "mykernel") {
            Err(LabError::Missing(m)) => assert!(m.contains("rtscope lab list"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn list_reads_finished_kernels_only() {
        let d = tempfile::tempdir().unwrap();
        let k = d.path().join("trace-6.12.117-abc");
        std::fs::create_dir_all(&k).unwrap();
        let meta = KernelMeta {
            name: "trace-6.12.117-abc".into(),
            preset: "trace".into(),
            release: "6.12.117".into(),
            source: "linux-source-6.12 6.12.117-1".into(),
            key: "abc".into(),
            built_at: "2026-11-24T03:00:00Z".into(),
            build_secs: 1000.0,
            jobs: 2,
            features: Features::default(),
        };
        std::fs::write(k.join("meta.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
        assert!(list(d.path()).is_empty(), "no bzImage yet");
        std::fs::write(k.join("bzImage"), b"x").unwrap();
        let l = list(d.path());
        assert_eq!(l.len(), 1);
        assert_eq!(find(d.path(), "trace").unwrap().meta, meta);
        // A half-written directory (no meta) is not a kernel.
        std::fs::create_dir_all(d.path().join(".x.tmp")).unwrap();
        assert_eq!(list(d.path()).len(), 1);
    }
}
