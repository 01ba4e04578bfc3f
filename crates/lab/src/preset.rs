//! The lab's kernel presets. Built presets apply their fragments (`crates/lab/presets/*.config`,
//! documented line by line there and in docs/lab.md) over `x86_64_defconfig` and the kernel's
//! own `kernel/configs/kvm_guest.config` (virtio, 9p, serial console). Debian presets take the
//! distribution's images unchanged: the kernels users actually run.

use crate::field::*;
use crate::{LabError, Result};

pub const TRACE_FRAGMENT: &str = include_str!("../presets/trace.config");
pub const RT_FRAGMENT: &str = include_str!("../presets/rt-trace.config");
pub const LEAN_FRAGMENT: &str = include_str!("../presets/lean.config");
pub const RT_LEAN_FRAGMENT: &str = include_str!("../presets/rt-lean.config");

/// What a `lean` or `rt-lean` kernel must not have after `olddefconfig` (the fragments switch the
/// roots off; these are the options that would put tracing or its hooks on the measured paths if
/// anything selected them again): Cerqueira & Brandenburg compared kernels built without any
/// tracing or debugging option, and so must the lab's untraced comparison.
pub const LEAN_ABSENT: &[&str] = &[
    "CONFIG_FTRACE",
    "CONFIG_TRACING",
    "CONFIG_TRACEPOINTS",
    "CONFIG_FUNCTION_TRACER",
    "CONFIG_DYNAMIC_FTRACE",
    "CONFIG_IRQSOFF_TRACER",
    "CONFIG_PREEMPT_TRACER",
    "CONFIG_SCHED_TRACER",
    "CONFIG_OSNOISE_TRACER",
    "CONFIG_TIMERLAT_TRACER",
    "CONFIG_TRACE_IRQFLAGS",
    "CONFIG_TRACE_PREEMPT_TOGGLE",
    "CONFIG_PREEMPTIRQ_TRACEPOINTS",
    "CONFIG_KPROBES",
    "CONFIG_KPROBE_EVENTS",
    "CONFIG_UPROBE_EVENTS",
    "CONFIG_BPF_EVENTS",
    "CONFIG_DEBUG_INFO",
    "CONFIG_DEBUG_INFO_BTF",
    "CONFIG_SCHEDSTATS",
    "CONFIG_SCHED_DEBUG",
    "CONFIG_DEBUG_ENTRY",
    "CONFIG_DEBUG_PREEMPT",
    "CONFIG_PROVE_LOCKING",
    "CONFIG_LOCKDEP",
    "CONFIG_SLUB_DEBUG",
    "CONFIG_SOFTLOCKUP_DETECTOR",
    "CONFIG_HARDLOCKUP_DETECTOR",
    "CONFIG_DETECT_HUNG_TASK",
];

/// The source series the built presets use (Debian's `linux-source-<series>` package).
pub const SOURCE_SERIES: &str = "6.12";
/// The Debian image series (bookworm's kernel) for the `debian-*` presets.
pub const DEBIAN_SERIES: &str = "6.1";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Preset {
    /// PREEMPT_DYNAMIC, preemptirq tracepoints, osnoise/timerlat, hist triggers, BPF with BTF.
    Trace,
    /// `trace` with PREEMPT_RT.
    RtTrace,
    /// The same source without tracing or debugging options (OSPERT'13's kernels), PREEMPT_DYNAMIC.
    Lean,
    /// `lean` with PREEMPT_RT.
    RtLean,
    /// Debian's stock image (`linux-image-6.1.*-amd64-unsigned`), no build.
    DebianStock,
    /// Debian's PREEMPT_RT image (`linux-image-6.1.*-rt-amd64-unsigned`), no build.
    DebianRt,
}

impl Preset {
    pub const ALL: [Preset; 6] = [
        Preset::Trace,
        Preset::RtTrace,
        Preset::Lean,
        Preset::RtLean,
        Preset::DebianStock,
        Preset::DebianRt,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Trace => "trace",
            Preset::RtTrace => "rt-trace",
            Preset::Lean => "lean",
            Preset::RtLean => "rt-lean",
            Preset::DebianStock => "debian-stock",
            Preset::DebianRt => "debian-rt",
        }
    }

    pub fn parse(s: &str) -> Result<Preset> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                LabError::Usage(format!(
                    "{PRESET}: unknown preset '{s}' (accepted: {})",
                    Preset::names().join(", ")
                ))
            })
    }

    pub fn names() -> Vec<&'static str> {
        Preset::ALL.iter().map(|p| p.name()).collect()
    }

    /// Built from source (true) or a Debian image (false).
    pub fn is_built(self) -> bool {
        matches!(
            self,
            Preset::Trace | Preset::RtTrace | Preset::Lean | Preset::RtLean
        )
    }

    /// The fragments applied, in order, over defconfig + kvm_guest.config.
    pub fn fragments(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Preset::Trace => vec![("trace.config", TRACE_FRAGMENT)],
            Preset::RtTrace => vec![
                ("trace.config", TRACE_FRAGMENT),
                ("rt-trace.config", RT_FRAGMENT),
            ],
            Preset::Lean => vec![("lean.config", LEAN_FRAGMENT)],
            Preset::RtLean => vec![
                ("lean.config", LEAN_FRAGMENT),
                ("rt-lean.config", RT_LEAN_FRAGMENT),
            ],
            Preset::DebianStock | Preset::DebianRt => vec![],
        }
    }

    /// The Debian image package pattern (`apt-cache search --names-only`).
    pub fn debian_package_regex(self) -> Option<&'static str> {
        match self {
            Preset::DebianStock => Some(r"^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$"),
            Preset::DebianRt => Some(r"^linux-image-6\.1\.0-[0-9]+-rt-amd64-unsigned$"),
            _ => None,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Preset::Trace => {
                "6.12, PREEMPT_DYNAMIC, preemptirq tracepoints, osnoise/timerlat, BPF+BTF"
            }
            Preset::RtTrace => "6.12 PREEMPT_RT, preemptirq tracepoints, osnoise/timerlat, BPF+BTF",
            Preset::Lean => {
                "6.12, PREEMPT_DYNAMIC, no tracing or debugging options (untraced runs)"
            }
            Preset::RtLean => "6.12 PREEMPT_RT, no tracing or debugging options (untraced runs)",
            Preset::DebianStock => "Debian 6.1 stock image (PREEMPT_DYNAMIC, no preemptirq)",
            Preset::DebianRt => "Debian 6.1 PREEMPT_RT image",
        }
    }
}

/// The options a fragment requests: `CONFIG_X=value` lines, and `# CONFIG_X is not set` as the
/// value `n`.
pub fn requested_options(fragment: &str) -> Vec<(String, String)> {
    fragment
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            if let Some(k) = l
                .strip_prefix("# ")
                .and_then(|r| r.strip_suffix(" is not set"))
                .filter(|k| k.starts_with("CONFIG_"))
            {
                return Some((k.to_string(), "n".to_string()));
            }
            l.starts_with("CONFIG_")
                .then(|| l.split_once('='))
                .flatten()
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// The requested options a final `.config` does not have as asked (a later fragment overrides
/// an earlier one): Kconfig drops options whose dependencies are unmet without a word, so a
/// build must check.
pub fn unmet_options(fragments: &[(&str, &str)], final_config: &str) -> Vec<String> {
    let have: std::collections::BTreeMap<&str, &str> = final_config
        .lines()
        .filter(|l| l.starts_with("CONFIG_"))
        .filter_map(|l| l.split_once('='))
        .collect();
    let mut want: Vec<(String, String)> = Vec::new();
    for (_, text) in fragments {
        for (k, v) in requested_options(text) {
            want.retain(|(k2, _)| *k2 != k);
            want.push((k, v));
        }
    }
    let mut out = Vec::new();
    for (k, v) in want {
        let got = have.get(k.as_str()).copied();
        let ok = if v == "n" {
            got.is_none() || got == Some("n")
        } else {
            got == Some(v.as_str())
        };
        if !ok {
            out.push(format!("{k}={v} (got {})", got.unwrap_or("not set")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_usage() {
        for p in Preset::ALL {
            assert_eq!(Preset::parse(p.name()).unwrap(), p);
        }
        match Preset::parse("rt") {
            Err(LabError::Usage(m)) => {
                assert!(
                    m.contains("⟨lab.preset⟩")
                        && m.contains("rt-trace, lean, rt-lean, debian-stock"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn trace_fragment_asks_for_the_bound_events() {
        let opts: Vec<String> = requested_options(TRACE_FRAGMENT)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        for k in [
            "CONFIG_PREEMPT_DYNAMIC",
            "CONFIG_IRQSOFF_TRACER",
            "CONFIG_PREEMPT_TRACER",
            "CONFIG_OSNOISE_TRACER",
            "CONFIG_TIMERLAT_TRACER",
            "CONFIG_DEBUG_INFO_BTF",
        ] {
            assert!(opts.iter().any(|o| o == k), "{k}");
        }
        assert!(RT_FRAGMENT.contains("CONFIG_PREEMPT_RT=y"));
    }

    #[test]
    fn lean_fragments_switch_the_tracing_roots_off() {
        let lean: std::collections::BTreeMap<String, String> =
            requested_options(LEAN_FRAGMENT).into_iter().collect();
        for k in [
            "CONFIG_FTRACE",
            "CONFIG_KPROBES",
            "CONFIG_SCHEDSTATS",
            "CONFIG_DEBUG_ENTRY",
        ] {
            assert_eq!(lean.get(k).map(String::as_str), Some("n"), "{k}");
        }
        assert_eq!(lean["CONFIG_PREEMPT_DYNAMIC"], "y");
        assert_eq!(lean["CONFIG_DEBUG_INFO_NONE"], "y");
        // Nothing the lean preset asks for is on the must-be-absent list.
        for (k, v) in &lean {
            assert!(v == "n" || !LEAN_ABSENT.contains(&k.as_str()), "{k}={v}");
        }
        let rt = Preset::RtLean.fragments();
        assert_eq!(rt[0].1, LEAN_FRAGMENT);
        assert!(rt[1].1.contains("CONFIG_PREEMPT_RT=y"));
        assert!(Preset::Lean.is_built() && Preset::RtLean.is_built());
    }

    #[test]
    fn unmet_options_names_what_kconfig_dropped() {
        let frag = [(
            "f",
            "# c\nCONFIG_A=y\nCONFIG_B=y\nCONFIG_C=m\n# CONFIG_D is not set\n",
        )];
        let cfg = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=y\nCONFIG_D=y\n";
        assert_eq!(
            unmet_options(&frag, cfg),
            vec![
                "CONFIG_B=y (got not set)",
                "CONFIG_C=m (got y)",
                "CONFIG_D=n (got y)"
            ]
        );
        assert!(unmet_options(&frag, "CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=m\n").is_empty());
        // A later fragment overrides an earlier one.
        let two = [
            ("a", "CONFIG_PREEMPT=y\n"),
            ("b", "# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_RT=y\n"),
        ];
        assert!(unmet_options(&two, "CONFIG_PREEMPT_RT=y\n").is_empty());
    }
}
