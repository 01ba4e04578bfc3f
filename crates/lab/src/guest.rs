//! One verb in a lab kernel: the guest is booted under QEMU/TCG with an initramfs holding
//! busybox and rtscope, runs `rtscope <verb> …` in `/out` with `HOME=/out` (so its store, its
//! run directories and traces land there), and sends `/out` home as a base64 tar on its second
//! serial port. The records come into the host's store tagged with the kernel, its preemption
//! model and how it was emulated; the files land in a host directory and the records' trace
//! paths point there.
//!
//! Everything the lab starts is gone on every exit path: QEMU dies with rtscope
//! (`PR_SET_PDEATHSIG`, also on SIGKILL), is killed at the timeout and on SIGINT/SIGTERM/SIGHUP,
//! and the temporary directory (initramfs, console, results, the scratch disk's image) is
//! removed on return; one left by a killed rtscope is removed by the next lab run (its owner's
//! pid is recorded in it).
//!
//! A verb with a disk load gets a scratch disk ([`RunSpec::scratch_disk`]): the guest's root is
//! the initramfs, in memory, where the disk load's file I/O reaches no block device and raises
//! no interrupt (and a 1 GiB file does not fit). The disk is a sparse raw image on virtio-blk,
//! formatted FAT32 by the guest's busybox (the lab kernels have vfat built in, no ext*) and
//! mounted on /var/tmp, the loads' default `--scratch-dir`.

use crate::field::*;
use crate::initramfs::Archive;
use crate::kernel::Kernel;
use crate::{io, LabError, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Boot-time preemption model (`preempt=` on a PREEMPT_DYNAMIC kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preempt {
    None,
    Voluntary,
    Full,
}

impl Preempt {
    pub fn name(self) -> &'static str {
        match self {
            Preempt::None => "none",
            Preempt::Voluntary => "voluntary",
            Preempt::Full => "full",
        }
    }
    pub fn parse(s: &str) -> Result<Preempt> {
        match s {
            "none" => Ok(Preempt::None),
            "voluntary" => Ok(Preempt::Voluntary),
            "full" => Ok(Preempt::Full),
            _ => Err(LabError::Usage(format!(
                "{PREEMPT}: must be none, voluntary or full; got '{s}'"
            ))),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Icount {
    Shift(u8),
    Auto,
}

impl Icount {
    /// The default shift: 2^1 = 2 ns per instruction. TCG executes a few hundred million guest
    /// instructions a second, so guest time runs a few times slower than the host's and a
    /// 1 ms guest period is still thousands of instructions of work.
    pub const DEFAULT: Icount = Icount::Shift(1);

    pub fn parse(s: &str) -> Result<Icount> {
        match s {
            "auto" => Ok(Icount::Auto),
            _ => s
                .parse::<u8>()
                .ok()
                .filter(|n| *n <= 10)
                .map(Icount::Shift)
                .ok_or_else(|| {
                    LabError::Usage(format!(
                        "{ICOUNT}: must be a shift 0..=10 (2^shift ns per instruction) or auto; got '{s}'"
                    ))
                }),
        }
    }
}

/// The guest's memory in MiB (QEMU `-m`): a size as the load flags write it (`768M`, `1G`,
/// `2GiB`); a bare number is MiB, as `-m` reads it. 128 MiB ..= 64 GiB.
pub fn mem_mib(s: &str) -> Result<u64> {
    let t = s.trim();
    let mib = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse::<u64>().ok()
    } else {
        rtscope_model::size::parse_size(t).ok().map(|b| b >> 20)
    };
    mib.filter(|m| (128..=65536).contains(m)).ok_or_else(|| {
        LabError::Usage(format!(
            "{MEM}: must be 128M..=64G (e.g. 1G, 768M); got '{s}'"
        ))
    })
}

/// Verbs that run work and store a record. The others read stored results or manage the lab
/// itself, and belong on the host.
pub const GUEST_VERBS: &[&str] = &[
    "run",
    "measure",
    "cyclictest",
    "trace",
    "load",
    "rhealstone",
    "pdlt",
    "sched-scale",
    "taskset",
    "practise",
    "mbwi",
    "noise",
];

pub fn check_verb(args: &[String]) -> Result<()> {
    let Some(verb) = args.first() else {
        return Err(LabError::Usage(format!(
            "lab run: give the verb after `--`, e.g. `rtscope lab run {KERNEL} trace -- measure -D 10s` (verbs: {})",
            GUEST_VERBS.join(", ")
        )));
    };
    if !GUEST_VERBS.contains(&verb.as_str()) {
        return Err(LabError::Usage(format!(
            "lab run: '{verb}' cannot run in a guest (it works on stored results or on the lab itself; run it on the host); guest verbs: {}",
            GUEST_VERBS.join(", ")
        )));
    }
    Ok(())
}

pub struct RunSpec {
    pub kernel: Kernel,
    pub preempt: Option<Preempt>,
    pub smp: u32,
    pub mem_mib: u64,
    /// QEMU's instruction counter as the guest clock: `Some(Icount::Shift(n))` charges 2^n ns
    /// per instruction, `Some(Icount::Auto)` lets QEMU adapt n to the host's speed.
    pub icount: Option<Icount>,
    /// Host time after which the guest is killed, whatever it is doing (`--timeout`).
    pub timeout: Duration,
    /// The limit the run sizes for itself when `--timeout` was not given ([`GuestLimit`]).
    pub guest_limit: Option<GuestLimit>,
    /// The rtscope binary the guest runs (normally this one).
    pub rtscope: PathBuf,
    /// The verb and its flags.
    pub args: Vec<String>,
    /// Extra kernel command-line words (e.g. `isolcpus=1`).
    pub cmdline: Vec<String>,
    /// Stream the guest's output while it runs.
    pub live: bool,
    /// Where the console is kept when the guest fails (a panic, a hang, a crash of the verb).
    pub failure_log: Option<PathBuf>,
    /// Host executables put into the guest's /bin with the libraries `ldd` lists for them, for
    /// `alongside` (e.g. `rtla`, an independent reference run beside the verb).
    pub guest_bins: Vec<PathBuf>,
    /// Run every vCPU in one host thread (QEMU `-accel tcg,thread=single`) without icount: guest
    /// time stays the host's, and code the guest kernel patches at run time (static keys, the
    /// tracepoints a capture switches on and off, `text_poke_bp`'s int3) is seen at once by every
    /// vCPU. With one host thread per vCPU (QEMU's default for TCG) a vCPU can still execute an
    /// int3 the patching vCPU already removed: the guest oopses in the int3 handler (docs/lab.md).
    /// Every rtscope verb attaches tracepoints, so `lab run` sets this unless `--multi-thread`.
    pub single_thread: bool,
    /// Size in bytes of a scratch disk for the verb's disk load (a sparse image in the lab's
    /// temporary directory, virtio-blk, mounted on /var/tmp in the guest); None: no disk.
    pub scratch_disk: Option<u64>,
    /// A shell command the guest starts in the background [`ALONGSIDE_LEAD_S`] before the verb;
    /// its output goes to /out/alongside.log (it comes home with the verb's files), and the
    /// guest waits for it to end before sending /out.
    pub alongside: Option<String>,
    /// A virtio-net device fed from the host side at this rate (crate::nic).
    pub nic_load: Option<crate::nic::NicLoad>,
}

/// Seconds between starting `alongside` and the verb (a tracer tool's set-up under TCG).
pub const ALONGSIDE_LEAD_S: u32 = 2;

/// Emulated seconds between the guest's progress lines (`RTSCOPE-LAB-PROGRESS uptime=…`).
pub const PROGRESS_EVERY_S: u32 = 10;

/// A time limit in the guest's own clock. Under TCG one emulated second costs anything from a
/// fraction of a host second (an idle guest under icount, whose clock skips halts) to tens
/// (every vCPU busy, one host thread for all, a loaded host): a host-time limit fitted to one
/// case kills the other (a 20 s `--smp 2 --load cpu-cache` run outlived 240 s). So the limit is
/// the verb's own length in emulated time, and a stall is measured against the speed the guest
/// showed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GuestLimit {
    /// The verb must end within this many emulated seconds of its start.
    pub verb_s: f64,
    /// vCPUs the verb keeps busy (the vCPUs when it runs a load, else 1): under single-threaded
    /// TCG each busy vCPU costs its own host time per emulated second.
    pub busy_vcpus: u32,
    /// Host seconds the boot may take before the verb starts.
    pub boot_s: f64,
}

impl GuestLimit {
    /// Host seconds with no sign of progress (a new console line or progress report) after
    /// which the guest is taken for hung: ten progress periods at the boot's speed times the
    /// busy vCPUs, at least 5 minutes.
    pub fn stall_s(&self, host_per_emulated_s: f64) -> f64 {
        (10.0 * PROGRESS_EVERY_S as f64 * host_per_emulated_s * self.busy_vcpus.max(1) as f64)
            .max(300.0)
    }

    /// The host time the verb should take at the boot's speed: its emulated length times the
    /// host seconds per emulated second, per busy vCPU.
    pub fn expected_host_s(&self, host_per_emulated_s: f64, verb_length_s: f64) -> f64 {
        verb_length_s * host_per_emulated_s * self.busy_vcpus.max(1) as f64
    }
}

/// Host seconds per emulated second from the boot: the host time until the verb started over
/// the guest's uptime then (QEMU's start and the firmware count as boot: an over-estimate).
pub fn boot_speed(host_s: f64, guest_uptime_s: f64) -> Option<f64> {
    (guest_uptime_s > 0.1 && host_s > 0.0).then(|| host_s / guest_uptime_s)
}

/// The `uptime=` of a START or PROGRESS line.
fn uptime_of(line: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("uptime="))
        .and_then(|v| v.parse().ok())
}

/// The last progress line's guest uptime in `text`.
fn last_progress(text: &str) -> Option<f64> {
    text.lines()
        .rev()
        .find(|l| l.contains("RTSCOPE-LAB-PROGRESS"))
        .and_then(uptime_of)
}

impl RunSpec {
    /// `tcg`, `tcg-icount` (fixed shift) or `tcg-icount-auto`: how the guest's CPU and clock
    /// were emulated.
    pub fn emulation(&self) -> &'static str {
        match self.icount {
            // One vCPU is one host thread either way.
            None if self.single_thread && self.smp > 1 => "tcg-single",
            None => "tcg",
            Some(Icount::Shift(_)) => "tcg-icount",
            Some(Icount::Auto) => "tcg-icount-auto",
        }
    }

    pub fn validate(&self) -> Result<()> {
        check_verb(&self.args)?;
        if let Some(b) = self.guest_bins.iter().find(|b| !b.is_file()) {
            return Err(LabError::Usage(format!(
                "{GUEST_BIN}: {} is not a file",
                b.display()
            )));
        }
        if !(1..=64).contains(&self.smp) {
            return Err(LabError::Usage(format!(
                "{SMP}: must be 1..=64; got {}",
                self.smp
            )));
        }
        if !(128..=65536).contains(&self.mem_mib) {
            return Err(LabError::Usage(format!(
                "{MEM}: must be 128M..=64G; got {} MiB",
                self.mem_mib
            )));
        }
        let f = &self.kernel.meta.features;
        if let Some(p) = self.preempt {
            if f.preempt_rt {
                return Err(LabError::Usage(format!(
                    "{PREEMPT} {}: kernel {} is PREEMPT_RT (its model is fixed); leave {PREEMPT} out",
                    p.name(),
                    self.kernel.meta.name
                )));
            }
            if !f.preempt_dynamic {
                return Err(LabError::Usage(format!(
                    "{PREEMPT} {}: kernel {} has no PREEMPT_DYNAMIC (the model is chosen at build time)",
                    p.name(),
                    self.kernel.meta.name
                )));
            }
        }
        if !self.rtscope.is_file() {
            return Err(LabError::Missing(format!(
                "lab run: the rtscope binary {} is missing",
                self.rtscope.display()
            )));
        }
        if crate::have("qemu-system-x86_64").is_none() {
            return Err(LabError::Missing(
                "lab run: qemu-system-x86_64 is missing (apt-get install qemu-system-x86; scripts/setup.sh installs it)".into(),
            ));
        }
        if busybox().is_none() {
            return Err(LabError::Missing(
                "lab run: a static busybox is missing (apt-get install busybox-static; scripts/setup.sh installs it)".into(),
            ));
        }
        Ok(())
    }

    /// The model the guest runs under, for the record's tags.
    pub fn preempt_model(&self) -> String {
        let f = &self.kernel.meta.features;
        match self.preempt {
            Some(p) => p.name().into(),
            None if f.preempt_rt => "rt".into(),
            None => "default".into(),
        }
    }
}

fn busybox() -> Option<PathBuf> {
    ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| crate::have("busybox"))
}

/// What came back from the guest.
#[derive(Debug)]
pub struct GuestOutcome {
    /// The verb's exit code in the guest.
    pub exit_code: i32,
    /// `uname -r` in the guest.
    pub release: String,
    pub guest_cpus: u32,
    /// The guest's output from the verb's start to its end.
    pub output: String,
    /// The whole console (kernel messages and the verb), escapes removed.
    pub console: String,
    /// Files of `/out`: relative path → contents.
    pub files: Vec<(String, Vec<u8>)>,
    pub boot_secs: f64,
    pub total_secs: f64,
}

/// Files a guest may send home, in all (the guest's memory bounds it too).
const MAX_RESULTS: u64 = 4 << 30;

/// Quote one word for the guest's `sh`.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The guest's /init; `nic`: bring up the NIC of `--nic-load` and snapshot its counters around
/// the verb.
pub fn init_script(args: &[String], alongside: Option<&str>, nic: bool) -> String {
    let cmd: Vec<String> = args.iter().map(|a| sh_quote(a)).collect();
    let (start, wait) = match alongside {
        Some(c) => (
            format!(
                "/bin/sh -c {} >/out/alongside.log 2>&1 </dev/null &\nALONGSIDE=$!\nsleep {ALONGSIDE_LEAD_S}\n",
                sh_quote(c)
            ),
            "wait $ALONGSIDE\necho \"RTSCOPE-LAB-ALONGSIDE-EXIT=$?\"\n".to_string(),
        ),
        None => (String::new(), String::new()),
    };
    let (nic_up, nic_down) = if nic {
        (crate::nic::init_up(), crate::nic::init_down())
    } else {
        (String::new(), String::new())
    };
    format!(
        r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/out XDG_DATA_HOME=/out/data TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
ulimit -l unlimited 2>/dev/null
if [ -f /{module} ]; then
  insmod /{module} && echo "RTSCOPE-LAB-MODULE loaded" || echo "RTSCOPE-LAB-MODULE failed"
fi
# The loopback interface starts down (no 127.0.0.1): the net load and anything local over TCP.
ip link set lo up 2>/dev/null
# The scratch disk, when the lab gave one (a disk load's files on a block device).
if [ -b /dev/vda ]; then
  if mkdosfs -n SCRATCH /dev/vda >/dev/null 2>&1 && mount -t vfat /dev/vda /var/tmp; then
    echo "RTSCOPE-LAB-SCRATCH /var/tmp on /dev/vda (vfat, $(df -m /var/tmp | awk 'NR==2 {{print $4}}') MiB free)"
  else
    echo "RTSCOPE-LAB-SCRATCH failed: /var/tmp stays in memory"
  fi
fi
{nic_up}read UP _ </proc/uptime
echo "RTSCOPE-LAB-START release=$(uname -r) cpus=$(nproc) uptime=$UP"
cd /out
# The guest's clock every {every} s for the host (its time limit is in emulated time): builtins
# only (read -t on a FIFO nobody writes as the sleep), so the ticker forks nothing while the
# verb measures.
mkfifo /tmp/tick
( exec 3<>/tmp/tick; while :; do read -t {every} _ <&3; read UP _ </proc/uptime; echo "RTSCOPE-LAB-PROGRESS uptime=$UP"; done ) </dev/null &
TICKER=$!
# Through a pipe: the console is a terminal, and progress displays redrawn on a serial line
# would fill the output with frames.
set -o pipefail
{start}/bin/rtscope {} </dev/null 2>&1 | cat
echo "RTSCOPE-LAB-EXIT=$?"
{nic_down}{wait}stty -F /dev/ttyS1 raw -echo 2>/dev/null
kill $TICKER 2>/dev/null
cd /out && tar cf /tmp/out.tar . && {{ echo "RTSCOPE-LAB-FILES $(wc -c </tmp/out.tar)"; base64 /tmp/out.tar; echo RTSCOPE-LAB-FILES-END; }} >/dev/ttyS1
sync
poweroff -f
"#,
        cmd.join(" "),
        module = crate::module::GUEST_PATH,
        every = PROGRESS_EVERY_S,
    )
}

/// The QEMU command line (without the program); `scratch` is the scratch disk's image.
pub fn qemu_args(
    spec: &RunSpec,
    initrd: &Path,
    console: &Path,
    results: &Path,
    scratch: Option<&Path>,
) -> Vec<String> {
    let mut append = vec![
        "console=ttyS0".to_string(),
        "quiet".into(),
        "loglevel=3".into(),
        "panic=-1".into(),
        "rdinit=/init".into(),
    ];
    if let Some(p) = spec.preempt {
        append.push(format!("preempt={}", p.name()));
    }
    append.extend(spec.cmdline.iter().cloned());
    // icount needs one TCG thread; QEMU picks it by itself there.
    let accel = if spec.single_thread && spec.icount.is_none() {
        "tcg,thread=single"
    } else {
        "tcg"
    };
    let mut a: Vec<String> = vec!["-accel".into(), accel.into()];
    if let Some(ic) = spec.icount {
        // The guest clock advances with executed instructions, 2^shift ns each, and with
        // sleep=off an idle guest jumps to its next timer. With a fixed shift no host delay is
        // ever visible as guest time; `auto` re-fits the shift to the host's speed as it goes,
        // so a slowed host changes the guest's time scale mid-run (docs/lab.md).
        let shift = match ic {
            Icount::Shift(n) => n.to_string(),
            Icount::Auto => "auto".into(),
        };
        a.extend(["-icount".into(), format!("shift={shift},sleep=off")]);
    }
    a.extend([
        "-cpu".into(),
        "max".into(),
        "-smp".into(),
        spec.smp.to_string(),
        "-m".into(),
        format!("{}M", spec.mem_mib),
        "-kernel".into(),
        spec.kernel.image().display().to_string(),
        "-initrd".into(),
        initrd.display().to_string(),
        "-append".into(),
        append.join(" "),
        "-nographic".into(),
        "-monitor".into(),
        "none".into(),
        "-nodefaults".into(),
        "-no-reboot".into(),
        "-serial".into(),
        format!("file:{}", console.display()),
        "-serial".into(),
        format!("file:{}", results.display()),
    ]);
    a.extend(crate::module::qemu_device_args());
    if let Some(img) = scratch {
        // cache=unsafe: the guest's flushes stop at the host's page cache. The image is thrown
        // away after the run, and guest time under -icount does not depend on the host's I/O.
        a.extend([
            "-drive".into(),
            format!("file={},if=virtio,format=raw,cache=unsafe", img.display()),
        ]);
    }
    a
}

/// A temporary directory that records its owner and is removed on drop.
pub struct Work {
    pub dir: PathBuf,
}

impl Work {
    fn new() -> Result<Work> {
        sweep_stale(&std::env::temp_dir());
        let dir = std::env::temp_dir().join(format!(
            "rtscope-lab.{}.{:08x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
        std::fs::write(dir.join("owner.pid"), std::process::id().to_string())
            .map_err(io("writing owner.pid"))?;
        Ok(Work { dir })
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Remove lab directories whose owner is gone (rtscope killed with SIGKILL).
pub fn sweep_stale(tmp: &Path) {
    for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("rtscope-lab.") {
            continue;
        }
        let pid: Option<i32> = std::fs::read_to_string(e.path().join("owner.pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let alive = pid.is_some_and(rtscope_sys::process::exists);
        if !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The rtscope binary for the guest, without debug sections when `strip` is there (a debug
/// build is ~200 MB, ~35 MB stripped: the guest loads it into RAM at every boot).
fn guest_binary(src: &Path, work: &Path) -> PathBuf {
    let dst = work.join("rtscope");
    if crate::have("strip").is_some() {
        let ok = Command::new("strip")
            .arg("-o")
            .arg(&dst)
            .arg(src)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return dst;
        }
    }
    src.to_path_buf()
}

/// Boot, run, collect. Returns when the guest powered off, or errors at the timeout or a stop.
/// On a failure after the boot began, the whole console is kept at `spec.failure_log`.
pub fn run(spec: &RunSpec) -> Result<GuestOutcome> {
    spec.validate()?;
    let work = Work::new()?;
    let r = run_in(spec, &work);
    if let (Err(e), Some(log)) = (&r, &spec.failure_log) {
        if !matches!(e, LabError::Usage(_) | LabError::Missing(_)) {
            if let Ok(c) = std::fs::read(work.dir.join("console.log")) {
                if let Some(d) = log.parent() {
                    let _ = std::fs::create_dir_all(d);
                }
                if std::fs::write(log, clean_console(&c)).is_ok() {
                    return r.map_err(|e| with_log(e, log));
                }
            }
        }
    }
    r
}

fn with_log(e: LabError, log: &Path) -> LabError {
    let add = |m: String| format!("{m}\n(whole console: {})", log.display());
    match e {
        LabError::Timeout(m) => LabError::Timeout(add(m)),
        LabError::Failed(m) => LabError::Failed(add(m)),
        LabError::Interrupted(m) => LabError::Interrupted(m),
        other => other,
    }
}

fn run_in(spec: &RunSpec, work: &Work) -> Result<GuestOutcome> {
    use std::os::unix::process::CommandExt;
    let bin = guest_binary(&spec.rtscope, &work.dir);
    let mut arch = Archive::new();
    arch.executable("bin/busybox", &busybox().expect("validated"))?;
    arch.executable("bin/rtscope", &bin)?;
    for b in &spec.guest_bins {
        let name = b.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.ok_or_else(|| {
            LabError::Usage(format!("{GUEST_BIN} {}: not a file name", b.display()))
        })?;
        arch.executable(&format!("bin/{name}"), b)?;
    }
    match crate::module::ensure(&spec.kernel, |m| eprintln!("{m}"))? {
        Ok(ko) => arch.host_file(crate::module::GUEST_PATH, 0o644, &ko),
        Err(why) => {
            if spec.live {
                eprintln!("lab: no rtscope_lab module in the guest: {why}");
            }
        }
    }
    arch.data(
        "init",
        0o755,
        init_script(
            &spec.args,
            spec.alongside.as_deref(),
            spec.nic_load.is_some(),
        )
        .into_bytes(),
    );
    // The kernel's config where rtscope's system capture reads it (/boot/config-<release>): the
    // record then names the preemption model and the options the kernel was built with.
    if let Ok(cfg) = std::fs::read(spec.kernel.config()) {
        arch.data(
            &format!("boot/config-{}", spec.kernel.meta.release),
            0o644,
            cfg,
        );
    }
    let initrd = work.dir.join("initrd.cpio");
    {
        let f = std::fs::File::create(&initrd).map_err(io("creating the initramfs"))?;
        let mut w = std::io::BufWriter::new(f);
        arch.write_to(&mut w)?;
        std::io::Write::flush(&mut w).map_err(io("writing the initramfs"))?;
    }
    let _ = std::fs::remove_file(work.dir.join("rtscope"));
    let console = work.dir.join("console.log");
    let results = work.dir.join("results.b64");
    let scratch = match spec.scratch_disk {
        Some(bytes) => Some(scratch_image(&work.dir, bytes)?),
        None => None,
    };
    let _signals = rtscope_probe::signals::Guard::install(&[]);
    let t0 = Instant::now();
    let mut feed = spec.nic_load.map(crate::nic::Feed::new).transpose()?;
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(qemu_args(
        spec,
        &initrd,
        &console,
        &results,
        scratch.as_deref(),
    ))
    .args(
        feed.as_ref()
            .map_or(Vec::new(), |f| crate::nic::qemu_args(f.host_port)),
    )
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; QEMU dies with its parent, also on SIGKILL.
    unsafe {
        cmd.pre_exec(|| {
            let _ = rtscope_sys::process::set_parent_death_signal(rtscope_sys::Signal::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| LabError::Failed(format!("lab run: cannot start QEMU: {e}")))?;
    let mut stderr = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.take(64 * 1024).read_to_string(&mut s);
        }
        s
    });
    let mut shown = 0usize;
    let mut started: Option<f64> = None;
    // The guest's speed and clock: host s per emulated s from the boot, its uptime at the
    // verb's start, the last progress report seen; the console's length and when it last grew.
    let mut speed: Option<f64> = None;
    let mut start_uptime: Option<f64> = None;
    let mut progress_seen: Option<f64> = None;
    let (mut console_len, mut last_activity) = (0usize, Instant::now());
    let status = loop {
        if let Some(s) = child
            .try_wait()
            .map_err(|e| LabError::Failed(format!("lab run: waiting for QEMU: {e}")))?
        {
            break s;
        }
        let text = clean_console(&std::fs::read(&console).unwrap_or_default());
        if text.len() != console_len {
            console_len = text.len();
            last_activity = Instant::now();
        }
        if started.is_none() && text.contains("RTSCOPE-LAB-START") {
            let host_s = t0.elapsed().as_secs_f64();
            started = Some(host_s);
            start_uptime = text
                .lines()
                .find(|l| l.contains("RTSCOPE-LAB-START"))
                .and_then(uptime_of);
            speed = start_uptime.and_then(|u| boot_speed(host_s, u));
            if let (true, Some(l), Some(r), Some(u)) =
                (spec.live, spec.guest_limit, speed, start_uptime)
            {
                let verb = crate::verb::length_of(&l);
                eprintln!(
                    "lab: booted in {host_s:.0} s of host time for {u:.1} s of guest time ({r:.2} host s per emulated s); \
                     the verb's {verb:.0} s should take about {:.0} s of host time ({} busy vCPU(s)); it is stopped past \
                     {:.0} s of guest time or after {:.0} s without output",
                    l.expected_host_s(r, verb),
                    l.busy_vcpus,
                    l.verb_s,
                    l.stall_s(r)
                );
            }
            // The guest's NIC is up and its sink listening: the host starts sending.
            if let Some(Err(e)) = feed.as_mut().map(|f| f.start()) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        }
        if text.contains("RTSCOPE-LAB-EXIT=") {
            if let Some(f) = feed.as_mut().filter(|f| f.running()) {
                f.stop();
            }
        }
        if spec.live {
            shown = stream_new(&text, shown);
        }
        if rtscope_probe::signals::stop_requested() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(LabError::Interrupted(format!(
                "lab run: stopped by {}; QEMU killed, nothing stored",
                rtscope_probe::signals::stop_signal_name()
            )));
        }
        let progress = start_uptime.zip(last_progress(&text));
        if let Some((u0, u)) = progress.filter(|p| Some(p.1) != progress_seen) {
            progress_seen = Some(u);
            let emulated = u - u0;
            let host = t0.elapsed().as_secs_f64() - started.unwrap_or(0.0);
            if spec.live && emulated > 0.0 {
                eprintln!(
                    "lab: the verb has run {emulated:.0} s of guest time ({host:.0} s of host time, {:.1} host s per emulated s)",
                    host / emulated
                );
            }
            if let Some(l) = spec.guest_limit.filter(|l| emulated > l.verb_s) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(LabError::Timeout(format!(
                    "lab run: the verb ran {emulated:.0} s of guest time, past its limit of {:.0} s (3 × its length + 3 min), and was killed; last console lines:\n{}",
                    l.verb_s,
                    last_lines(&text, 8)
                )));
            }
        }
        if let Some(l) = spec.guest_limit {
            let (limit, what) = match started {
                None => (l.boot_s, "finish booting"),
                Some(_) => (
                    l.stall_s(speed.unwrap_or(1.0)),
                    "show any output or progress",
                ),
            };
            let waited = match started {
                None => t0.elapsed(),
                Some(_) => last_activity.elapsed(),
            };
            if waited.as_secs_f64() > limit {
                let _ = child.kill();
                let _ = child.wait();
                return Err(LabError::Timeout(format!(
                    "lab run: the guest did not {what} for {limit:.0} s of host time and was killed; last console lines:\n{}",
                    last_lines(&text, 8)
                )));
            }
        }
        if t0.elapsed() > spec.timeout {
            let _ = child.kill();
            let _ = child.wait();
            let tail: Vec<&str> = text.lines().rev().take(8).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(LabError::Timeout(format!(
                "lab run: the guest did not finish within {} s ({TIMEOUT}) and was killed ({}); last console lines:\n{}",
                spec.timeout.as_secs(),
                if started.is_some() { "the verb was running" } else { "it never finished booting" },
                tail.join("\n")
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let qemu_err = err_reader.join().unwrap_or_default();
    let text = clean_console(&std::fs::read(&console).unwrap_or_default());
    if spec.live {
        stream_new(&text, shown);
    }
    let total_secs = t0.elapsed().as_secs_f64();
    // The marker can share a line with a kernel message printed at the same moment.
    let start = text
        .lines()
        .find_map(|l| l.find("RTSCOPE-LAB-START").map(|i| &l[i..]));
    let Some(start) = start else {
        return Err(LabError::Failed(format!(
            "lab run: the guest never reached the verb (QEMU {status}{}); console:\n{}",
            if qemu_err.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", qemu_err.trim())
            },
            last_lines(&text, 15)
        )));
    };
    let field = |k: &str| {
        start
            .split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .unwrap_or("")
            .to_string()
    };
    let release = field("release=");
    let guest_cpus = field("cpus=").parse().unwrap_or(0);
    let exit_code = text
        .lines()
        .find_map(|l| l.find("RTSCOPE-LAB-EXIT=").map(|i| &l[i + 17..]))
        .and_then(|c| c.split_whitespace().next()?.parse().ok());
    let Some(exit_code) = exit_code else {
        return Err(LabError::Failed(format!(
            "lab run: the verb did not finish in the guest (a panic or crash; QEMU {status}); console:\n{}",
            last_lines(&text, 15)
        )));
    };
    let output = verb_output(&text);
    let raw = std::fs::read(&results).unwrap_or_default();
    let mut files = decode_results(&raw)?;
    if let Some(f) = feed.as_mut() {
        files.push(f.report_file());
    }
    Ok(GuestOutcome {
        exit_code,
        release,
        guest_cpus,
        output,
        console: text.clone(),
        files,
        boot_secs: started.unwrap_or(total_secs),
        total_secs,
    })
}

/// A sparse raw image of `bytes` in the lab's temporary directory (removed with it on every exit
/// path): it takes host disk space only for what the guest writes.
fn scratch_image(dir: &Path, bytes: u64) -> Result<PathBuf> {
    let p = dir.join("scratch.img");
    let f = std::fs::File::create(&p).map_err(io(format!("creating {}", p.display())))?;
    f.set_len(bytes)
        .map_err(io(format!("sizing {}", p.display())))?;
    Ok(p)
}

fn last_lines(text: &str, n: usize) -> String {
    let v: Vec<&str> = text.lines().collect();
    v[v.len().saturating_sub(n)..].join("\n")
}

/// Print the verb's lines not shown yet; returns how many lines of the verb are shown.
fn stream_new(text: &str, shown: usize) -> usize {
    let Some(pos) = text.find("RTSCOPE-LAB-START") else {
        return shown;
    };
    let body = &text[pos..];
    // Only complete lines; the marker line itself is not the verb's.
    let complete = match body.rfind('\n') {
        Some(i) => &body[..i],
        None => return shown,
    };
    let lines: Vec<&str> = complete
        .lines()
        .skip(1)
        .take_while(|l| !l.contains("RTSCOPE-LAB-EXIT="))
        .collect();
    for l in lines.iter().skip(shown) {
        if let Some(l) = without_progress(l) {
            println!("{l}");
        }
    }
    lines.len().max(shown)
}

/// The guest's console without the firmware's terminal escapes and carriage returns.
pub fn clean_console(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\x1b' => {
                if it.peek() == Some(&'[') {
                    it.next();
                    while let Some(&n) = it.peek() {
                        it.next();
                        if n.is_ascii_alphabetic() {
                            break;
                        }
                    }
                } else {
                    it.next();
                }
            }
            '\r' => {}
            _ => out.push(c),
        }
    }
    out
}

/// The verb's own output: the lines between the start and exit markers.
pub fn verb_output(text: &str) -> String {
    let mut on = false;
    let mut v = Vec::new();
    for l in text.lines() {
        if l.contains("RTSCOPE-LAB-START") {
            on = true;
            continue;
        }
        if l.contains("RTSCOPE-LAB-EXIT=") {
            break;
        }
        if on {
            if let Some(l) = without_progress(l) {
                v.push(l);
            }
        }
    }
    v.join("\n")
}

/// A console line without the guest's progress report in it (the ticker's line can land in the
/// middle of one of the verb's, both writing to the console); None when nothing else is left.
fn without_progress(l: &str) -> Option<String> {
    let Some(i) = l.find("RTSCOPE-LAB-PROGRESS") else {
        return Some(l.to_string());
    };
    let rest = &l[i + "RTSCOPE-LAB-PROGRESS".len()..];
    let rest = rest.trim_start();
    let after = rest.strip_prefix("uptime=").map_or(rest, |r| {
        r.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
    });
    let kept = format!("{}{}", &l[..i], after);
    (!kept.trim().is_empty()).then_some(kept)
}

/// The second serial port's contents: `RTSCOPE-LAB-FILES <bytes>`, base64 lines,
/// `RTSCOPE-LAB-FILES-END`. A missing end marker or a length mismatch means the transfer was
/// cut: an error, never a silently partial result.
pub fn decode_results(raw: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    use base64::Engine;
    let text = String::from_utf8_lossy(raw);
    let Some(begin) = text.find("RTSCOPE-LAB-FILES ") else {
        return Err(LabError::Failed(
            "lab run: the guest sent no results (its /out was not archived)".into(),
        ));
    };
    let rest = &text[begin + "RTSCOPE-LAB-FILES ".len()..];
    let (len_s, body) = rest.split_once('\n').unwrap_or((rest, ""));
    let len: u64 = len_s
        .trim()
        .parse()
        .map_err(|_| LabError::Failed("lab run: the results header has no length".into()))?;
    if len > MAX_RESULTS {
        return Err(LabError::Failed(format!(
            "lab run: the guest announced {len} bytes of results (limit {MAX_RESULTS})"
        )));
    }
    let Some(end) = body.find("RTSCOPE-LAB-FILES-END") else {
        return Err(LabError::Failed(
            "lab run: the results transfer was cut (no end marker)".into(),
        ));
    };
    let b64: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
    let tar = base64::engine::general_purpose::STANDARD
        .decode(b64.as_bytes())
        .map_err(|e| LabError::Failed(format!("lab run: the results are not base64: {e}")))?;
    if tar.len() as u64 != len {
        return Err(LabError::Failed(format!(
            "lab run: {} of {len} result bytes arrived",
            tar.len()
        )));
    }
    crate::ustar::files(&tar, MAX_RESULTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_the_guest_shell() {
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        let s = init_script(
            &["measure".into(), "--tag".into(), "k=v w".into()],
            None,
            false,
        );
        assert!(s.contains("/bin/rtscope 'measure' '--tag' 'k=v w' </dev/null 2>&1 | cat"));
        assert!(s.starts_with("#!/bin/busybox sh\n"));
        assert!(s.contains("\nip link set lo up "), "{s}");
        assert!(s.contains("mount -t vfat /dev/vda /var/tmp"), "{s}");
        assert!(!s.contains("alongside"));
        assert!(!s.contains("nic"));
        let s = init_script(&["noise".into()], Some("rtla osnoise top -d 5 -c 0"), false);
        assert!(
            s.contains("/bin/sh -c 'rtla osnoise top -d 5 -c 0' >/out/alongside.log 2>&1 </dev/null &\nALONGSIDE=$!\nsleep 2\n/bin/rtscope 'noise'"),
            "{s}"
        );
        assert!(
            s.contains("wait $ALONGSIDE\necho \"RTSCOPE-LAB-ALONGSIDE-EXIT=$?\"\nstty"),
            "{s}"
        );
    }

    #[test]
    fn the_nic_comes_up_before_the_start_marker_and_is_read_after_the_exit() {
        let s = init_script(&["measure".into()], None, true);
        let at = |n: &str| s.find(n).unwrap_or_else(|| panic!("{n}: {s}"));
        assert!(at("ip link set eth0 up") < at("nic_snapshot before\n"));
        assert!(at("nic_snapshot before\n") < at("echo \"RTSCOPE-LAB-START"));
        assert!(at("RTSCOPE-LAB-EXIT=$?\"\nnic_snapshot after\n") < at("kill $NICSINK"));
        assert!(at("kill $NICSINK") < at("tar cf"));
    }

    #[test]
    fn guest_memory_sizes() {
        assert_eq!(mem_mib("1G").unwrap(), 1024);
        assert_eq!(mem_mib("768M").unwrap(), 768);
        assert_eq!(mem_mib("512").unwrap(), 512);
        assert_eq!(mem_mib("2GiB").unwrap(), 2048);
        for bad in ["64M", "1T", "x", ""] {
            match mem_mib(bad) {
                Err(LabError::Usage(m)) => assert!(m.starts_with("⟨lab.mem⟩: must be"), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn verbs_the_guest_cannot_run_are_refused() {
        assert!(check_verb(&["measure".into()]).is_ok());
        for v in ["report", "lab", "compare", "db"] {
            match check_verb(&[v.into()]) {
                Err(LabError::Usage(m)) => assert!(m.contains(v) && m.contains("host"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(check_verb(&[]), Err(LabError::Usage(m)) if m.contains("after `--`")));
    }

    #[test]
    fn console_escapes_and_markers() {
        let raw = b"\x1bc\x1b[?7lSeaBIOS\r\nboot\r\nRTSCOPE-LAB-START release=6.12.117 cpus=2\r\nline 1\r\nline 2\r\nRTSCOPE-LAB-EXIT=0\r\n";
        let t = clean_console(raw);
        assert!(t.starts_with("SeaBIOS\nboot\n"), "{t:?}");
        assert_eq!(verb_output(&t), "line 1\nline 2");
    }

    #[test]
    fn results_transfer_checked_end_to_end() {
        use base64::Engine;
        // A one-file ustar.
        let mut tar = vec![0u8; 512];
        tar[..9].copy_from_slice(b"./rec.txt");
        tar[124..136].copy_from_slice(b"00000000003\0");
        tar[156] = b'0';
        // The header checksum tar readers check: the byte sum, the field counted as spaces.
        tar[148..156].copy_from_slice(b"        ");
        let sum: u32 = tar.iter().map(|&b| u32::from(b)).sum();
        tar[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        tar.extend_from_slice(b"abc");
        tar.resize(1024 + 1024, 0);
        let b = base64::engine::general_purpose::STANDARD.encode(&tar);
        let wrapped: Vec<String> = b
            .as_bytes()
            .chunks(76)
            .map(|c| String::from_utf8(c.to_vec()).unwrap())
            .collect();
        let ok = format!(
            "noise\r\nRTSCOPE-LAB-FILES {}\r\n{}\r\nRTSCOPE-LAB-FILES-END\r\n",
            tar.len(),
            wrapped.join("\r\n")
        );
        let f = decode_results(ok.as_bytes()).unwrap();
        assert_eq!(f, vec![("rec.txt".to_string(), b"abc".to_vec())]);
        // Cut transfers are errors.
        let cut = &ok[..ok.len() - 30];
        assert!(
            matches!(decode_results(cut.as_bytes()), Err(LabError::Failed(m)) if m.contains("cut"))
        );
        let wrong = ok.replace(&format!("FILES {}", tar.len()), "FILES 10");
        assert!(
            matches!(decode_results(wrong.as_bytes()), Err(LabError::Failed(m)) if m.contains("of 10"))
        );
        assert!(decode_results(b"").is_err());
    }

    #[test]
    fn qemu_command_line() {
        let k = Kernel {
            dir: "/k".into(),
            meta: crate::kernel::KernelMeta {
                name: "trace-x".into(),
                preset: "trace".into(),
                release: "6.12.117".into(),
                source: String::new(),
                key: String::new(),
                built_at: String::new(),
                build_secs: 0.0,
                jobs: 0,
                features: crate::kernel::Features {
                    preempt_dynamic: true,
                    ..Default::default()
                },
            },
        };
        let mut s = RunSpec {
            kernel: k,
            preempt: Some(Preempt::Full),
            smp: 2,
            mem_mib: 1024,
            icount: Some(Icount::Auto),
            timeout: Duration::from_secs(60),
            guest_limit: None,
            rtscope: "/nonexistent".into(),
            args: vec!["measure".into()],
            cmdline: vec!["isolcpus=1".into()],
            live: false,
            failure_log: None,
            guest_bins: Vec::new(),
            alongside: None,
            single_thread: false,
            scratch_disk: None,
            nic_load: None,
        };
        let a = qemu_args(
            &s,
            Path::new("/w/i"),
            Path::new("/w/c"),
            Path::new("/w/r"),
            None,
        );
        let j = a.join(" ");
        assert!(!j.contains("-drive"), "{j}");
        let d = qemu_args(
            &s,
            Path::new("/w/i"),
            Path::new("/w/c"),
            Path::new("/w/r"),
            Some(Path::new("/w/scratch.img")),
        )
        .join(" ");
        assert!(
            d.ends_with("-drive file=/w/scratch.img,if=virtio,format=raw,cache=unsafe"),
            "{d}"
        );
        assert!(j.contains("-icount shift=auto,sleep=off"), "{j}");
        assert!(j.contains("preempt=full isolcpus=1"), "{j}");
        assert!(j.contains("-serial file:/w/c -serial file:/w/r"), "{j}");
        assert_eq!(s.emulation(), "tcg-icount-auto");
        s.icount = None;
        s.single_thread = true;
        assert_eq!(s.emulation(), "tcg-single");
        s.smp = 1;
        assert_eq!(
            s.emulation(),
            "tcg",
            "one vCPU is one host thread either way"
        );
        s.smp = 2;
        let j = qemu_args(
            &s,
            Path::new("/w/i"),
            Path::new("/w/c"),
            Path::new("/w/r"),
            None,
        )
        .join(" ");
        assert!(j.starts_with("-accel tcg,thread=single "), "{j}");
        s.icount = Some(Icount::Auto);
        s.single_thread = false;
        assert_eq!(s.preempt_model(), "full");
        // A missing binary is named (after the kernel checks pass).
        assert!(matches!(s.validate(), Err(LabError::Missing(m)) if m.contains("/nonexistent")));
        s.smp = 0;
        assert!(matches!(s.validate(), Err(LabError::Usage(m)) if m.contains("⟨lab.smp⟩")));
        s.smp = 2;
        s.kernel.meta.features.preempt_dynamic = false;
        assert!(matches!(s.validate(), Err(LabError::Usage(m)) if m.contains("PREEMPT_DYNAMIC")));
    }
}
