//! Old spellings of renamed flags. Each still works for one release: the command line is
//! rewritten to the new spelling before clap sees it, with one line on stderr per use, so
//! clap's tree (help, completions, docs/cli.md) holds only the current grammar.

/// A renamed flag: in `verb` (a verb, or `verb sub`), `old` is now `new`; `unit` is appended to
/// each bare number of the value (`10` → `10ms`; in a list `10,20` and a range `-2:30`, to
/// each element) when the old flag's number had a unit and the new flag takes a suffixed
/// duration; `keep` is a value passed unchanged (a sentinel such as the kernel's `-1`).
struct Renamed {
    verb: &'static str,
    old: &'static str,
    new: &'static str,
    unit: Option<&'static str>,
    keep: Option<&'static str>,
}

const fn r(verb: &'static str, old: &'static str, new: &'static str) -> Renamed {
    Renamed {
        verb,
        old,
        new,
        unit: None,
        keep: None,
    }
}

/// A unit-named duration flag now taking a suffixed duration.
const fn u(
    verb: &'static str,
    old: &'static str,
    new: &'static str,
    unit: &'static str,
) -> Renamed {
    Renamed {
        verb,
        old,
        new,
        unit: Some(unit),
        keep: None,
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
    u("sched-scale", "--sleep-ms", "--sleep", "ms"),
    r("taskset gen", "--cpus", "--cpu-count"),
    r("practise test", "--cpus-emulated", "--emulated-cpus"),
    r("practise perf", "--cpus-emulated", "--emulated-cpus"),
    // Durations named by their unit in taskset, mbwi, pdlt, rhealstone and doctor: each now
    // takes a suffixed duration (`--tmin 10ms`, `--periods 10ms,20ms`, `--offsets -2us:30us`).
    u("taskset gen", "--tmin-ms", "--tmin", "ms"),
    u("taskset gen", "--tmax-ms", "--tmax", "ms"),
    u("taskset gen", "--periods-ms", "--periods", "ms"),
    u("taskset gen", "--period-gran-us", "--period-gran", "us"),
    u("taskset gen", "--cmin-us", "--cmin", "us"),
    u("taskset sweep", "--tmin-ms", "--tmin", "ms"),
    u("taskset sweep", "--tmax-ms", "--tmax", "ms"),
    u("taskset sweep", "--cmin-us", "--cmin", "us"),
    u("taskset sweep", "--margin-us", "--margin-add", "us"),
    u("taskset check", "--margin-us", "--margin-add", "us"),
    u("taskset run", "--margin-us", "--margin-add", "us"),
    u("taskset check", "--inflate-us", "--inflate", "us"),
    u("taskset run", "--inflate-us", "--inflate", "us"),
    Renamed {
        keep: Some("-1"),
        ..u("taskset sweep", "--rt-runtime-us", "--rt-runtime", "us")
    },
    u("taskset sweep", "--fair-server-us", "--fair-server", "us"),
    u("mbwi run", "--tick-us", "--tick", "us"),
    u("pdlt", "--step-us", "--step", "us"),
    u("pdlt", "--offsets-us", "--offsets", "us"),
    u(
        "rhealstone",
        "--timer-interval-us",
        "--timer-interval",
        "us",
    ),
    u("rhealstone", "--medium-burst-us", "--medium-burst", "us"),
    u("doctor", "--target-us", "--target", "us"),
    // The durations of the offline verbs whose unit was in their name: the bare number keeps
    // its unit, the new flag takes any suffix.
    u("analyze", "--gap-threshold-us", "--gap-threshold", "us"),
    u(
        "analyze",
        "--busy-gap-threshold-us",
        "--busy-gap-threshold",
        "us",
    ),
    u("analyze", "--threshold-us", "--tail-threshold", "us"),
    u("bound", "--assume-thread-ns", "--assume-thread", "ns"),
];

/// `unit` appended to every bare number of `v` (an optional sign, digits, one dot) between
/// the separators of a list (`,`) and a range (`:`); anything else is left for clap to refuse.
fn with_unit(v: &str, unit: &str) -> String {
    let bare = |x: &str| {
        let d = x.strip_prefix('-').unwrap_or(x);
        !d.is_empty()
            && d != "."
            && d.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && d.bytes().filter(|&b| b == b'.').count() <= 1
    };
    let mut out = String::with_capacity(v.len() + 2 * unit.len());
    let mut piece = String::new();
    let flush = |piece: &mut String, out: &mut String| {
        out.push_str(piece);
        if bare(piece) {
            out.push_str(unit);
        }
        piece.clear();
    };
    for c in v.chars() {
        if c == ',' || c == ':' {
            flush(&mut piece, &mut out);
            out.push(c);
        } else {
            piece.push(c);
        }
    }
    flush(&mut piece, &mut out);
    out
}

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
        let value = |v: &str| match ren.unit {
            Some(_) if ren.keep == Some(v) => v.to_string(),
            Some(unit) => with_unit(v, unit),
            None => v.to_string(),
        };
        match glued {
            Some(v) => out.push(format!("{}={}", ren.new, value(&v)).into()),
            None => {
                out.push(ren.new.into());
                // The value follows; it is read only when a unit goes with it.
                if let Some(v) = ren.unit.and_then(|_| it.next()) {
                    out.push(match v.to_str() {
                        Some(t) => value(t).into(),
                        None => v.clone(),
                    });
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
