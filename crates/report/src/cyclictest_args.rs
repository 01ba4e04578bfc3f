//! cyclictest's command line (rt-tests), with getopt's syntax: read by the `rtscope cyclictest`
//! drop-in and from the command line a cyclictest JSON output records (imports). The tokens come
//! from lexopt, which follows getopt_long: `-p95`, `-p 95`, bundled `-mq`, `--json=F`,
//! `--json F`, `--` ends the flags. Optional arguments (`-t [N]`, `-a [CPUS]`) attach (`-t2`,
//! `--threads=2`) or, as cyclictest reads them, follow when the next word is not a flag.

/// The cyclictest flags rtscope understands.
#[derive(Debug, Default, PartialEq)]
pub struct CtFlags {
    pub threads: Option<Option<u32>>,
    pub affinity: Option<Option<String>>,
    pub smp: bool,
    pub prio: u32,
    pub interval: u64,
    pub distance: u64,
    pub duration: Option<String>,
    pub loops: Option<u64>,
    pub hist: Option<u32>,
    pub histofall: bool,
    pub quiet: bool,
    pub nsecs: bool,
    pub policy: Option<String>,
    pub json: Option<String>,
    pub breaktrace: Option<u64>,
    pub help: bool,
}

/// Parse cyclictest's flags; an error is one line naming the flag.
pub fn parse(argv: &[String]) -> Result<CtFlags, String> {
    let mut f = CtFlags {
        interval: 1000,
        distance: 500,
        ..Default::default()
    };
    let num = |flag: &str, v: &str| -> Result<u64, String> {
        v.trim()
            .parse::<u64>()
            .map_err(|_| format!("cyclictest {flag}: '{v}' is not a non-negative integer"))
    };
    // Narrow values are range-checked in full before they are narrowed: `-p 4294967346` is
    // refused, not run at priority 50.
    let small = |flag: &str, v: &str, lo: u64, hi: u64, unit: &str| -> Result<u32, String> {
        let n = rtscope_model::field::within(num(flag, v)?, lo, hi, unit)
            .map_err(|m| format!("cyclictest {flag}: {m}"))?;
        Ok(n as u32)
    };
    let mut p = lexopt::Parser::from_args(argv.iter().map(String::as_str));
    loop {
        let arg = match p.next() {
            Ok(Some(a)) => a,
            Ok(None) => break,
            Err(lexopt::Error::UnexpectedValue { option, .. }) => {
                return Err(format!("cyclictest {option}: takes no value"))
            }
            Err(e) => return Err(format!("cyclictest: {e}")),
        };
        let name = match arg {
            lexopt::Arg::Short(c) => format!("-{c}"),
            lexopt::Arg::Long(l) => format!("--{l}"),
            lexopt::Arg::Value(v) => {
                return Err(format!(
                    "cyclictest: unexpected argument '{}'",
                    v.to_string_lossy()
                ))
            }
        };
        let mut required = || -> Result<String, String> {
            p.value()
                .map(|v| v.to_string_lossy().into_owned())
                .map_err(|_| format!("cyclictest {name}: needs a value"))
        };
        match name.as_str() {
            "-m" | "--mlockall" => {}
            "-S" | "--smp" => f.smp = true,
            "-t" | "--threads" => {
                f.threads = Some(match optional(&mut p) {
                    Some(v) => Some(small("-t", &v, 1, 4096, " threads")?),
                    None => None,
                });
            }
            "-a" | "--affinity" => f.affinity = Some(optional(&mut p)),
            "-p" | "--priority" => f.prio = small("-p", &required()?, 0, 99, "")?,
            "-i" | "--interval" => f.interval = num("-i", &required()?)?,
            "-d" | "--distance" => f.distance = num("-d", &required()?)?,
            "-D" | "--duration" => f.duration = Some(required()?),
            "-l" | "--loops" => {
                let l = num("-l", &required()?)?;
                f.loops = (l > 0).then_some(l);
            }
            "-h" | "--histogram" => f.hist = Some(small("-h", &required()?, 1, 1_000_000, " us")?),
            "-H" | "--histofall" => {
                f.hist = Some(small("-H", &required()?, 1, 1_000_000, " us")?);
                f.histofall = true;
            }
            "-q" | "--quiet" => f.quiet = true,
            "-N" | "--nsecs" => f.nsecs = true,
            "-b" | "--breaktrace" => f.breaktrace = Some(num("-b", &required()?)?),
            "--policy" => f.policy = Some(required()?),
            "--json" => f.json = Some(required()?),
            "--help" | "-?" => f.help = true,
            other => {
                return Err(format!(
                    "cyclictest: unsupported flag '{other}' (supported: -m -S -t [N] -a [CPUS] -p -i -d -D -l -h -H -q -N -b --policy --json)"
                ))
            }
        }
    }
    Ok(f)
}

/// An optional argument: attached (`-t2`, `--threads=2`), or the next word when it is not a
/// flag (`-a 0-1`; getopt itself only takes the attached form, cyclictest looks ahead).
fn optional(p: &mut lexopt::Parser) -> Option<String> {
    if let Some(v) = p.optional_value() {
        return Some(v.to_string_lossy().into_owned());
    }
    let mut raw = p.raw_args().ok()?;
    raw.next_if(|v| !v.to_string_lossy().starts_with('-'))
        .map(|v| v.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn getopt_forms() {
        let f = parse(&v(
            "-m -S -p95 -i 500 -d0 -D 10s -h 100 -q --json=/tmp/x.json",
        ))
        .unwrap();
        assert!(f.smp && f.quiet);
        assert_eq!(
            (f.prio, f.interval, f.distance, f.hist),
            (95, 500, 0, Some(100))
        );
        assert_eq!(f.duration.as_deref(), Some("10s"));
        assert_eq!(f.json.as_deref(), Some("/tmp/x.json"));
        let f = parse(&v("-t -a -p 80 -l 1000")).unwrap();
        assert_eq!(f.threads, Some(None));
        assert_eq!(f.affinity, Some(None));
        assert_eq!(f.loops, Some(1000));
        let f = parse(&v("-t2 -a 0-1 --policy fifo -N -b 300 -H 50")).unwrap();
        assert_eq!(f.threads, Some(Some(2)));
        assert_eq!(f.affinity, Some(Some("0-1".into())));
        assert!(f.nsecs && f.histofall);
        assert_eq!(f.breaktrace, Some(300));
        assert!(parse(&v("-x")).is_err());
        assert!(parse(&v("-p")).is_err());
        assert!(parse(&v("-i abc")).is_err());
    }

    #[test]
    fn refusals_name_the_flag() {
        let rows = [
            ("-p 120", "cyclictest -p: 120 is out of range (0..=99)"),
            // Range-checked before narrowing: not priority 50.
            ("-p4294967346", "cyclictest -p: 4294967346 is out of range (0..=99)"),
            ("-h 0", "cyclictest -h: 0 is out of range (1..=1000000 us)"),
            ("-t 5000", "cyclictest -t: 5000 is out of range (1..=4096 threads)"),
            ("-i x", "cyclictest -i: 'x' is not a non-negative integer"),
            ("-D", "cyclictest -D: needs a value"),
            ("x", "cyclictest: unexpected argument 'x'"),
            (
                "--bogus",
                "cyclictest: unsupported flag '--bogus' (supported: -m -S -t [N] -a [CPUS] -p -i -d -D -l -h -H -q -N -b --policy --json)",
            ),
        ];
        for (args, want) in rows {
            assert_eq!(parse(&v(args)).unwrap_err(), want, "{args}");
        }
        assert_eq!(parse(&v("-l 0")).unwrap().loops, None);
        assert!(parse(&v("-?")).unwrap().help);
    }

    #[test]
    fn getopt_long_forms() {
        // Bundled short flags, `=` on long ones, an attached optional argument.
        let f = parse(&v("-mSq --threads=3 --affinity=2 --priority=70 -t")).unwrap();
        assert!(f.smp && f.quiet);
        assert_eq!(f.threads, Some(None), "the last -t wins, with no count");
        assert_eq!(f.affinity, Some(Some("2".into())));
        assert_eq!(f.prio, 70);
        // As getopt reads an optional argument: the rest of the word is the value.
        assert_eq!(
            parse(&v("-tq")).unwrap_err(),
            "cyclictest -t: 'q' is not a non-negative integer"
        );
        let f = parse(&v("-t 4 -a -q")).unwrap();
        assert_eq!((f.threads, f.affinity), (Some(Some(4)), Some(None)));
        assert!(f.quiet);
        assert_eq!(
            parse(&v("--quiet=1")).unwrap_err(),
            "cyclictest --quiet: takes no value"
        );
        assert_eq!(
            parse(&v("--interval")).unwrap_err(),
            "cyclictest --interval: needs a value"
        );
    }
}
