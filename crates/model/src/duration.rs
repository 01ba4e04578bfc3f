//! One grammar for every duration rtscope reads (`-D/--duration`, `--checkpoint`, campaign
//! `durations`, …): a number with an optional unit — `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`,
//! `d` — fractions allowed (`1.5h`, `0.25s`); a bare number means seconds, as in cyclictest.
//! Each caller checks its own range.

/// The units, longest suffix first so that `ms` is not read as `m` + `s`.
const UNITS: &[(&str, f64)] = &[
    ("ns", 1e-9),
    ("us", 1e-6),
    ("µs", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("m", 60.0),
    ("h", 3600.0),
    ("d", 86400.0),
];

/// Seconds, or an error saying what is wrong and what is accepted.
pub fn parse_secs(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, mult) = UNITS
        .iter()
        .find_map(|(u, m)| t.strip_suffix(u).map(|n| (n, *m)))
        .unwrap_or((t, 1.0));
    let bad = || {
        format!(
            "'{s}' is not a duration (a number with ns, us, ms, s, m, h or d; a bare number is seconds: 30s, 1.5h, 250ms)"
        )
    };
    let num = num.trim();
    // Digits, one dot: no signs, exponents, inf or NaN that f64's parser would take.
    if num.is_empty()
        || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        || num.bytes().filter(|&b| b == b'.').count() > 1
        || num == "."
    {
        return Err(bad());
    }
    let v: f64 = num.parse().map_err(|_| bad())?;
    let secs = v * mult;
    if !secs.is_finite() {
        return Err(bad());
    }
    Ok(secs)
}

/// [`parse_secs`] checked against `lo..=hi` seconds; the error names the range in the units a
/// user would write.
pub fn parse_secs_in(s: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let v = parse_secs(s)?;
    if !(lo..=hi).contains(&v) {
        return Err(format!(
            "{s} is out of range ({} ..= {})",
            human(lo),
            human(hi)
        ));
    }
    Ok(v)
}

/// A latency or period in whole microseconds, written as a duration (`50us`, `1ms`, `0.5ms`);
/// a bare number is microseconds, as cyclictest and the kernel's tracers count.
pub fn parse_micros(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    let secs = parse_secs(t)?;
    // 50e-6 s × 1e6 is 49.999…: whole means within 1e-6 of an integer, on either side.
    let us = secs * 1e6;
    if (us - us.round()).abs() > 1e-6 || us < 0.0 || us > u64::MAX as f64 {
        return Err(format!("'{s}' is not a whole number of microseconds"));
    }
    Ok(us.round() as u64)
}

/// [`parse_micros`] into a `u32`.
pub fn parse_micros32(s: &str) -> Result<u32, String> {
    let v = parse_micros(s)?;
    u32::try_from(v).map_err(|_| format!("'{s}' is out of range (at most {} us)", u32::MAX))
}

/// A typed duration checked against `range`; the error reads as [`parse_secs_in`]'s (the value
/// and the range in the units a user would write).
pub fn within(
    d: std::time::Duration,
    range: &std::ops::RangeInclusive<std::time::Duration>,
) -> Result<std::time::Duration, String> {
    if !range.contains(&d) {
        return Err(format!(
            "{} is out of range ({} ..= {})",
            human(d.as_secs_f64()),
            human(range.start().as_secs_f64()),
            human(range.end().as_secs_f64())
        ));
    }
    Ok(d)
}

/// A duration the way the grammar writes it (`1ms`, `30d`, `2.5s`).
pub fn human(secs: f64) -> String {
    for (u, m) in [
        ("d", 86400.0),
        ("h", 3600.0),
        ("m", 60.0),
        ("s", 1.0),
        ("ms", 1e-3),
        ("us", 1e-6),
    ] {
        if secs >= m {
            let v = secs / m;
            return if (v - v.round()).abs() < 1e-9 {
                format!("{}{u}", v.round())
            } else {
                format!("{v}{u}")
            };
        }
    }
    format!("{}ns", (secs * 1e9).round())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_and_bare_seconds() {
        for (s, v) in [
            ("30", 30.0),
            ("30s", 30.0),
            ("1.5h", 5400.0),
            ("2m", 120.0),
            ("1d", 86400.0),
            ("250ms", 0.25),
            ("500us", 0.0005),
            ("500µs", 0.0005),
            ("1000ns", 1e-6),
            (" 5m ", 300.0),
            ("0.5", 0.5),
        ] {
            let got = parse_secs(s).unwrap();
            assert!((got - v).abs() < 1e-12, "{s}: {got}");
        }
        for bad in [
            "",
            "s",
            "-1s",
            "1e3s",
            "inf",
            "NaN",
            "1.2.3s",
            "5 minutes",
            "1sec",
            ".",
            "+3",
        ] {
            assert!(parse_secs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn whole_microseconds() {
        for (s, v) in [
            ("1000", 1000),
            ("50us", 50),
            ("1ms", 1000),
            ("0.5ms", 500),
            ("2s", 2_000_000),
        ] {
            assert_eq!(parse_micros(s), Ok(v), "{s}");
        }
        assert_eq!(
            parse_micros("1500ns"),
            Err("'1500ns' is not a whole number of microseconds".into())
        );
        assert!(parse_micros("fast").is_err());
        assert_eq!(parse_micros32("1h"), Ok(3_600_000_000));
        assert_eq!(
            parse_micros32("2h"),
            Err(format!("'2h' is out of range (at most {} us)", u32::MAX))
        );
    }

    #[test]
    fn ranges_are_named_in_the_grammar() {
        let e = parse_secs_in("31d", 0.001, 30.0 * 86400.0).unwrap_err();
        assert_eq!(e, "31d is out of range (1ms ..= 30d)");
        assert!(parse_secs_in("0s", 0.001, 10.0).is_err());
        assert_eq!(human(0.0005), "500us");
        assert_eq!(human(1.5), "1.5s");
        use std::time::Duration;
        let r = Duration::from_micros(1)..=Duration::from_secs(1);
        assert_eq!(
            within(Duration::from_micros(1), &r),
            Ok(Duration::from_micros(1))
        );
        assert_eq!(
            within(Duration::ZERO, &r).unwrap_err(),
            "0ns is out of range (1us ..= 1s)"
        );
        assert_eq!(
            within(Duration::from_millis(1500), &r).unwrap_err(),
            "1.5s is out of range (1us ..= 1s)"
        );
    }
}
