//! Old spellings of renamed flags. Each still works for one release: the command line is
//! rewritten to the new spelling before clap sees it, with one line on stderr per use, so
//! clap's tree (help, completions, docs/cli.md) holds only the current grammar.

/// A renamed flag: in `verb` (a verb, or `verb sub`), `old` is now `new`; `unit` is appended to
/// the value when the old flag's bare number had another unit than the new one's.
struct Renamed {
    verb: &'static str,
    old: &'static str,
    new: &'static str,
    unit: Option<&'static str>,
}

const fn r(verb: &'static str, old: &'static str, new: &'static str) -> Renamed {
    Renamed {
        verb,
        old,
        new,
        unit: None,
    }
}

/// Why each: `--threshold` had three meanings (kept samples, osnoise's tracing_thresh, the
/// regression gate); `--top` and `--worst` both meant the worst samples; `--keep` and
/// `--trace-keep` were one filter; `--cpus` means a list everywhere, `--cpu` one CPU; `-p` is
/// the priority everywhere; every duration is a typed, suffixed value; `--cpus-emulated` was
/// a second spelling of `--emulated-cpus`.
const RENAMED: &[Renamed] = &[
    r("measure", "--threshold", "--record-above"),
    r("run", "--threshold", "--record-above"),
    r("monitor", "--threshold", "--record-above"),
    r("noise", "--threshold", "--min-noise"),
    r("noise", "-p", "--period"),
    r("compare", "--threshold", "--fail-above-pct"),
    r("analyze", "--top", "--worst"),
    r("trace record", "--keep", "--trace-keep"),
    r("rhealstone", "--cpus", "--cpu"),
    r("pdlt", "--cpus", "--cpu"),
    r("sched-scale", "--cpus", "--cpu"),
    r("rhealstone", "--max-seconds", "--timeout"),
    r("pdlt", "--max-seconds", "--timeout"),
    Renamed {
        verb: "sched-scale",
        old: "--sleep-ms",
        new: "--sleep",
        unit: Some("ms"),
    },
    r("taskset gen", "--cpus", "--cpu-count"),
    r("practise test", "--cpus-emulated", "--emulated-cpus"),
    r("practise perf", "--cpus-emulated", "--emulated-cpus"),
    // The durations of the offline verbs whose unit was in their name: the bare number keeps
    // its unit, the new flag takes any suffix.
    Renamed {
        verb: "analyze",
        old: "--gap-threshold-us",
        new: "--gap-threshold",
        unit: Some("us"),
    },
    Renamed {
        verb: "analyze",
        old: "--busy-gap-threshold-us",
        new: "--busy-gap-threshold",
        unit: Some("us"),
    },
    Renamed {
        verb: "analyze",
        old: "--threshold-us",
        new: "--tail-threshold",
        unit: Some("us"),
    },
    Renamed {
        verb: "bound",
        old: "--assume-thread-ns",
        new: "--assume-thread",
        unit: Some("ns"),
    },
];

use std::ffi::OsString;

/// Flags whose value may look like a flag (it is passed on, not read).
const VERBATIM_VALUE: &[&str] = &["--load-exec"];

/// `argv` (without the program name) of `verb` with every old spelling replaced, and a notice
/// on stderr for each. Nothing after `--` is touched: it belongs to another command.
pub fn rewrite(verb: &str, args: &[OsString]) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let Some(a) = arg.to_str() else {
            out.push(arg.clone());
            continue;
        };
        if a == "--" {
            out.push(arg.clone());
            out.extend(it.by_ref().cloned());
            break;
        }
        if VERBATIM_VALUE.contains(&a) {
            out.push(arg.clone());
            out.extend(it.next().cloned());
            continue;
        }
        let Some((ren, glued)) = RENAMED.iter().filter(|x| x.verb == verb).find_map(|x| {
            let rest = a.strip_prefix(x.old)?;
            let glued = match rest {
                "" => None,
                r if r.starts_with('=') => Some(r[1..].to_string()),
                // `-p1000`: a short flag with its value attached.
                r if !x.old.starts_with("--") => Some(r.to_string()),
                _ => return None,
            };
            Some((x, glued))
        }) else {
            out.push(arg.clone());
            continue;
        };
        eprintln!(
            "rtscope: warning: {} {} is deprecated, use {} (the old spelling goes in a later release)",
            verb, ren.old, ren.new
        );
        let unit = ren.unit.unwrap_or("");
        match glued {
            Some(v) => out.push(format!("{}={v}{unit}", ren.new).into()),
            None => {
                out.push(ren.new.into());
                // The value follows; it is read only when a unit goes with it.
                if let Some(v) = ren.unit.and_then(|_| it.next()) {
                    let mut v = v.clone();
                    v.push(unit);
                    out.push(v);
                }
            }
        }
    }
    out
}

/// The verb path (`measure`, `trace record`) of a command line (without the program name).
pub fn verb_of(args: &[OsString]) -> String {
    let mut words = args
        .iter()
        .map_while(|a| a.to_str())
        .take_while(|a| !a.starts_with('-'));
    match (words.next(), words.next()) {
        (Some(v), Some(s)) if ["trace", "taskset", "mbwi", "practise", "lab"].contains(&v) => {
            format!("{v} {s}")
        }
        (Some(v), _) => v.to_string(),
        _ => String::new(),
    }
}

/// `argv` (with the program name) with every old spelling replaced.
pub fn rewrite_argv(argv: &[OsString]) -> Vec<OsString> {
    let Some((prog, args)) = argv.split_first() else {
        return argv.to_vec();
    };
    let verb = verb_of(args);
    let n = verb.split(' ').count().min(args.len());
    let mut out = vec![prog.clone()];
    out.extend(args[..n].iter().cloned());
    out.extend(rewrite(&verb, &args[n..]));
    out
}
