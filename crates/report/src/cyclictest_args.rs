//! cyclictest's command line (rt-tests), with getopt's syntax: read by the `rtscope cyclictest`
//! drop-in and from the command line a cyclictest JSON output records (imports). Optional
//! arguments (`-t [N]`, `-a [CPUS]`) attach (`-t2`) or follow when the next word is not a flag.

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
    let mut i = 0;
    let num = |flag: &str, v: &str| -> Result<u64, String> {
        v.trim()
            .parse::<u64>()
            .map_err(|_| format!("cyclictest {flag}: '{v}' is not a non-negative integer"))
    };
    // Narrow values are range-checked in full before they are narrowed: `-p 4294967346` is
    // refused, not run at priority 50.
    let small = |flag: &str, v: &str, lo: u64, hi: u64, unit: &str| -> Result<u32, String> {
        let n = num(flag, v)?;
        if !(lo..=hi).contains(&n) {
            return Err(format!(
                "cyclictest {flag}: {n} is out of range ({lo}..={hi}{unit})"
            ));
        }
        Ok(n as u32)
    };
    while i < argv.len() {
        let a = &argv[i];
        i += 1;
        let (name, attached): (String, Option<String>) = if let Some(l) = a.strip_prefix("--") {
            match l.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
                None => (format!("--{l}"), None),
            }
        } else if a.starts_with('-') && a.len() >= 2 {
            let (n, rest) = a.split_at(2);
            (n.to_string(), (!rest.is_empty()).then(|| rest.to_string()))
        } else {
            return Err(format!("cyclictest: unexpected argument '{a}'"));
        };
        let required = |i: &mut usize| -> Result<String, String> {
            if let Some(v) = attached.clone() {
                return Ok(v);
            }
            let v = argv
                .get(*i)
                .cloned()
                .ok_or_else(|| format!("cyclictest {name}: needs a value"))?;
            *i += 1;
            Ok(v)
        };
        let optional = |i: &mut usize| -> Option<String> {
            if attached.is_some() {
                return attached.clone();
            }
            match argv.get(*i) {
                Some(v) if !v.starts_with('-') => {
                    *i += 1;
                    Some(v.clone())
                }
                _ => None,
            }
        };
        match name.as_str() {
            "-m" | "--mlockall" => {}
            "-S" | "--smp" => f.smp = true,
            "-t" | "--threads" => {
                let v = optional(&mut i);
                f.threads = Some(match v {
                    Some(v) => Some(small("-t", &v, 1, 4096, " threads")?),
                    None => None,
                });
            }
            "-a" | "--affinity" => f.affinity = Some(optional(&mut i)),
            "-p" | "--priority" => f.prio = small("-p", &required(&mut i)?, 0, 99, "")?,
            "-i" | "--interval" => f.interval = num("-i", &required(&mut i)?)?,
            "-d" | "--distance" => f.distance = num("-d", &required(&mut i)?)?,
            "-D" | "--duration" => f.duration = Some(required(&mut i)?),
            "-l" | "--loops" => {
                let l = num("-l", &required(&mut i)?)?;
                f.loops = (l > 0).then_some(l);
            }
            "-h" | "--histogram" => {
                f.hist = Some(small("-h", &required(&mut i)?, 1, 1_000_000, " us")?)
            }
            "-H" | "--histofall" => {
                f.hist = Some(small("-H", &required(&mut i)?, 1, 1_000_000, " us")?);
                f.histofall = true;
            }
            "-q" | "--quiet" => f.quiet = true,
            "-N" | "--nsecs" => f.nsecs = true,
            "-b" | "--breaktrace" => f.breaktrace = Some(num("-b", &required(&mut i)?)?),
            "--policy" => f.policy = Some(required(&mut i)?),
            "--json" => f.json = Some(required(&mut i)?),
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
}
