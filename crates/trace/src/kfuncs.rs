//! The kernel half of PRAcTISE (lelli-2014 thesis §2.3.9, Fig. 2.24): fentry/fexit programs
//! (`src/bpf/kfuncs.bpf.c`) time every call of the kernel's `cpudl_set`, `cpudl_find`,
//! `cpupri_set` and `cpupri_find` into per-CPU histograms of 10 ns buckets up to 10 µs.
//!
//! A duration runs from the fentry program's clock read to the fexit program's, so it includes
//! the trampolines' save/restore and the programs themselves, not only the kernel function.
//!
//! The kernel may refuse. A kernel in lockdown `integrity` mode (the 6.18 test VM) answers
//! EPERM to loading an fentry program while tp_btf programs load; `attach` names lockdown as the
//! cause of any EPERM while lockdown is `integrity` or `confidentiality`.

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, OpenObject};
use rtscope_model::practise::KfuncStats;
use std::mem::MaybeUninit;

skeleton!("kfuncs.skel.rs");
use skel::{KfuncsSkel, KfuncsSkelBuilder};

/// The timed functions in map-key order (`F_*` in kfuncs.bpf.c) and the PRAcTISE operation
/// each corresponds to (the thesis compares them by order of cost, §2.3.9).
pub const FUNCS: [(&str, &str); 4] = [
    ("cpudl_set", "cpudl modify"),
    ("cpudl_find", "cpudl find"),
    ("cpupri_set", "cpupri modify"),
    ("cpupri_find", "cpupri find"),
];
/// Histogram bucket width and count (`BUCKET_NS`, `BUCKETS` in kfuncs.bpf.c).
pub const BUCKET_NS: u64 = 10;
pub const BUCKETS: usize = 1000;
/// `struct fstats`: count, sum_ns, min_ns, max_ns, above, missed, then the buckets.
const HEADER_U64: usize = 6;

/// The attached programs. Dropping it detaches them.
pub struct KfuncTiming {
    // Declared before `_storage`: fields drop in order, so the skeleton (which borrows the
    // storage) is gone before the storage is freed.
    skel: KfuncsSkel<'static>,
    _storage: Box<MaybeUninit<OpenObject>>,
}

/// Build a skeleton whose open object lives in boxed storage, with libbpf's own log silenced
/// (on stderr by default it repeats a refusal over several lines with guesses such as "try
/// raising 'ulimit -l'"; `build`'s error names the cause). Returns the skeleton and its storage:
/// the caller keeps both and declares the skeleton first, so that it (which borrows the
/// storage) is dropped before the storage is freed.
pub(crate) fn build_quietly<S>(
    build: impl FnOnce(&'static mut MaybeUninit<OpenObject>) -> Result<S, String>,
) -> Result<(S, Box<MaybeUninit<OpenObject>>), String> {
    let mut storage = Box::new(MaybeUninit::<OpenObject>::uninit());
    // SAFETY: the heap address of the boxed storage never changes (moving the box moves only
    // the pointer), and the caller drops the skeleton before the box, so the borrow never
    // outlives the storage.
    let slot: &'static mut MaybeUninit<OpenObject> =
        unsafe { &mut *(storage.as_mut() as *mut MaybeUninit<OpenObject>) };
    let log = libbpf_rs::set_print(None);
    let built = build(slot);
    libbpf_rs::set_print(log);
    Ok((built?, storage))
}

/// Open, load and attach the timing programs, or say why the kernel refused.
pub fn attach() -> Result<KfuncTiming, String> {
    if let Some(f) = missing_in_btf(&FUNCS.map(|(f, _)| f)) {
        return Err(format!(
            "kernel function {f} is not in this kernel's BTF (/sys/kernel/btf/vmlinux): \
             inlined, renamed or built without CONFIG_SMP; fentry cannot attach to it"
        ));
    }
    let (skel, storage) = build_quietly(|slot| {
        KfuncsSkelBuilder::default()
            .open(slot)
            .map_err(|e| refusal("open", &e, PROGRAMS))
            .and_then(|open| open.load().map_err(|e| refusal("load", &e, PROGRAMS)))
            .and_then(|mut skel| {
                skel.attach().map_err(|e| refusal("attach", &e, PROGRAMS))?;
                Ok(skel)
            })
    })?;
    Ok(KfuncTiming {
        skel,
        _storage: storage,
    })
}

impl KfuncTiming {
    /// Per function, in `FUNCS` order: the histograms summed over the CPUs. Unreadable maps give
    /// zero counts.
    pub fn read(&self) -> Vec<KfuncStats> {
        FUNCS
            .iter()
            .enumerate()
            .map(|(i, (f, op))| {
                let key = (i as u32).to_ne_bytes();
                let per_cpu = match self.skel.maps.stats.lookup_percpu(&key, MapFlags::ANY) {
                    Ok(Some(v)) => v,
                    _ => Vec::new(),
                };
                let mut acc = Raw::default();
                for v in &per_cpu {
                    acc.add(&Raw::parse(v));
                }
                stats(f, op, &acc)
            })
            .collect()
    }
}

/// One function's counters (one CPU's, or summed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Raw {
    pub count: u64,
    pub sum_ns: u64,
    /// 0 = no call.
    pub min_ns: u64,
    pub max_ns: u64,
    pub above: u64,
    pub missed: u64,
    pub buckets: Vec<u64>,
}

impl Raw {
    fn parse(b: &[u8]) -> Raw {
        let w: Vec<u64> = b
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        let at = |i: usize| w.get(i).copied().unwrap_or(0);
        Raw {
            count: at(0),
            sum_ns: at(1),
            min_ns: at(2),
            max_ns: at(3),
            above: at(4),
            missed: at(5),
            buckets: w.get(HEADER_U64..).unwrap_or(&[]).to_vec(),
        }
    }

    fn add(&mut self, o: &Raw) {
        self.count += o.count;
        self.sum_ns += o.sum_ns;
        if o.min_ns != 0 && (self.min_ns == 0 || o.min_ns < self.min_ns) {
            self.min_ns = o.min_ns;
        }
        self.max_ns = self.max_ns.max(o.max_ns);
        self.above += o.above;
        self.missed += o.missed;
        if self.buckets.len() < o.buckets.len() {
            self.buckets.resize(o.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
    }
}

/// Summary of one function's counters. Quantile q is the bucket holding the call of rank
/// ⌈q·count⌉ (1-based), reported as the bucket's middle clamped to [min, max]; a rank beyond
/// the buckets (a call above the range) gives `max_ns`.
pub fn stats(function: &str, op: &str, r: &Raw) -> KfuncStats {
    let q = |p: f64| -> u64 {
        if r.count == 0 {
            return 0;
        }
        let rank = ((p * r.count as f64).ceil() as u64).clamp(1, r.count);
        let mut seen = 0;
        for (i, n) in r.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let mid = i as u64 * BUCKET_NS + BUCKET_NS / 2;
                return mid.clamp(r.min_ns, r.max_ns.max(r.min_ns));
            }
        }
        r.max_ns
    };
    KfuncStats {
        function: function.to_string(),
        practise_op: op.to_string(),
        count: r.count,
        mean_ns: if r.count == 0 {
            0.0
        } else {
            r.sum_ns as f64 / r.count as f64
        },
        min_ns: r.min_ns,
        max_ns: r.max_ns,
        q1_ns: q(0.25),
        median_ns: q(0.5),
        q3_ns: q(0.75),
        p99_ns: q(0.99),
        bucket_ns: BUCKET_NS,
        above_range: r.above,
        missed: r.missed,
    }
}

/// The first of `funcs` whose name is not in the kernel's BTF string section (a `FUNC` type
/// carries its name there; fentry resolves its target through it). None when all are there or
/// the BTF cannot be read (then load reports it).
pub(crate) fn missing_in_btf(funcs: &[&'static str]) -> Option<&'static str> {
    let btf = std::fs::read("/sys/kernel/btf/vmlinux").ok()?;
    funcs.iter().copied().find(|f| {
        let pat = [b"\0", f.as_bytes(), b"\0"].concat();
        !btf.windows(pat.len()).any(|w| w == pat.as_slice())
    })
}

/// The kernel's lockdown mode: `none`, `integrity` or `confidentiality`. Read from securityfs;
/// when it is not mounted (as in a minimal VM), from a private mount of it in a thread-local
/// mount namespace (unshare(CLONE_NEWNS) on a short-lived thread: the process's mounts are
/// untouched). None if neither works.
pub fn lockdown_mode() -> Option<String> {
    const FILE: &str = "/sys/kernel/security/lockdown";
    if let Ok(s) = std::fs::read_to_string(FILE) {
        return selected(&s);
    }
    std::thread::spawn(|| {
        // The new mount namespace belongs to this thread only and ends with it; its mounts are
        // private, so nothing propagates back to the shared parent.
        rtscope_sys::fs::private_mount_namespace().ok()?;
        rtscope_sys::fs::mount(
            "none",
            std::path::Path::new("/sys/kernel/security"),
            "securityfs",
        )
        .ok()?;
        std::fs::read_to_string(FILE)
            .ok()
            .and_then(|s| selected(&s))
    })
    .join()
    .ok()
    .flatten()
}

/// The bracketed word of securityfs' lockdown file: `none [integrity] confidentiality`.
pub fn selected(s: &str) -> Option<String> {
    let a = s.find('[')?;
    let b = a + s[a..].find(']')?;
    Some(s[a + 1..b].to_string())
}

const PROGRAMS: &str = "the cpudl/cpupri timing programs";

/// Why the kernel refused fentry/fexit programs (`what`): lockdown, no root, or libbpf's error.
pub(crate) fn refusal(step: &str, e: &libbpf_rs::Error, what: &str) -> String {
    let denied = matches!(e.kind(), libbpf_rs::ErrorKind::PermissionDenied)
        || e.to_string().contains("Operation not permitted");
    if denied {
        match lockdown_mode().as_deref() {
            Some(m @ ("integrity" | "confidentiality")) => {
                return format!(
                    "kernel lockdown ({m}) forbids fentry/fexit; run in a kernel without \
                     lockdown, e.g. the kernel lab (bpf {step}: {e})"
                )
            }
            _ if !rtscope_sys::system::is_root() => {
                return format!(
                    "fentry/fexit needs root (CAP_BPF and CAP_PERFMON) (bpf {step}: {e})"
                )
            }
            _ => {}
        }
    }
    format!("bpf {step} of {what} failed: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(count: u64, sum: u64, min: u64, max: u64, above: u64, at: &[(usize, u64)]) -> Raw {
        let mut buckets = vec![0; BUCKETS];
        for &(i, n) in at {
            buckets[i] = n;
        }
        Raw {
            count,
            sum_ns: sum,
            min_ns: min,
            max_ns: max,
            above,
            missed: 0,
            buckets,
        }
    }

    #[test]
    fn quantiles_from_buckets() {
        // 100 calls: 50 in [20, 30) ns, 49 in [100, 110), 1 at 25 us (above the range).
        // Ranks: q1 → 25 (bucket 2, middle 25), median → 50 (bucket 2), q3 → 75 (bucket 10,
        // middle 105), p99 → 99 (bucket 10), the 100th is above.
        let r = raw(100, 30_000, 21, 25_000, 1, &[(2, 50), (10, 49)]);
        let s = stats("cpudl_set", "cpudl modify", &r);
        assert_eq!(
            (s.q1_ns, s.median_ns, s.q3_ns, s.p99_ns),
            (25, 25, 105, 105)
        );
        assert_eq!((s.min_ns, s.max_ns, s.above_range), (21, 25_000, 1));
        assert_eq!(s.mean_ns, 300.0);
        // The middle is clamped into [min, max]: one call of 103 ns.
        let one = stats("x", "y", &raw(1, 103, 103, 103, 0, &[(10, 1)]));
        assert_eq!((one.median_ns, one.p99_ns), (103, 103));
        // Everything above the range: quantiles are the max.
        let hi = stats("x", "y", &raw(2, 40_000, 15_000, 25_000, 2, &[]));
        assert_eq!(hi.median_ns, 25_000);
        // No calls: zeros, not a division by zero.
        let none = stats("x", "y", &raw(0, 0, 0, 0, 0, &[]));
        assert_eq!((none.count, none.mean_ns, none.median_ns), (0, 0.0, 0));
    }

    #[test]
    fn per_cpu_sum() {
        let mut a = raw(2, 50, 20, 30, 0, &[(2, 1), (3, 1)]);
        a.add(&raw(0, 0, 0, 0, 0, &[]));
        a.add(&raw(1, 15, 15, 15, 0, &[(1, 1)]));
        assert_eq!((a.count, a.sum_ns, a.min_ns, a.max_ns), (3, 65, 15, 30));
        assert_eq!(&a.buckets[..4], &[0, 1, 1, 1]);
        // The map value layout: header words then buckets.
        let mut bytes = Vec::new();
        for w in [4u64, 100, 10, 40, 1, 2, 7, 8] {
            bytes.extend_from_slice(&w.to_ne_bytes());
        }
        let p = Raw::parse(&bytes);
        assert_eq!((p.count, p.sum_ns, p.min_ns, p.max_ns), (4, 100, 10, 40));
        assert_eq!((p.above, p.missed, p.buckets), (1, 2, vec![7, 8]));
    }

    #[test]
    fn lockdown_word() {
        assert_eq!(
            selected("none [integrity] confidentiality\n").as_deref(),
            Some("integrity")
        );
        assert_eq!(
            selected("[none] integrity confidentiality").as_deref(),
            Some("none")
        );
        assert_eq!(selected(""), None);
    }
}
