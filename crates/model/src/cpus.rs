//! Kernel CPU lists (`0-3,5,7-8`), as in /sys/devices/system/cpu/online, cpuset files and every
//! `--cpus` flag: one parser that refuses what it cannot read.

/// Highest CPU number accepted + 1 (the kernel's default NR_CPUS range on x86_64 is 8192 at most;
/// a larger number in a flag is a typo).
pub const MAX_CPUS: u32 = 4096;

/// Parse a CPU list, sorted and without duplicates. Empty input is an empty list; anything
/// unreadable (`x`, `3-1`, `5000`, `1,,2`, `-3`) is an error naming the part.
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    let s = s.trim();
    if s.is_empty() {
        return Ok(out);
    }
    for part in s.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let num = |x: &str| -> Result<u32, String> {
            x.trim()
                .parse()
                .map_err(|_| format!("bad CPU number '{part}'"))
        };
        let (a, b) = (num(a)?, num(b)?);
        if a > b || b >= MAX_CPUS {
            return Err(format!("bad CPU range '{part}' (CPUs 0..{MAX_CPUS})"));
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_ranges_and_what_is_refused() {
        assert_eq!(
            parse_cpu_list("0-3,5,7-8").unwrap(),
            vec![0, 1, 2, 3, 5, 7, 8]
        );
        assert_eq!(parse_cpu_list(" 1\n").unwrap(), vec![1]);
        assert_eq!(parse_cpu_list("2,0-1,1").unwrap(), vec![0, 1, 2]);
        assert!(parse_cpu_list("").unwrap().is_empty());
        for bad in ["3-1", "x", "1,,2", "-3", "5000", "0-99999", "1-"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad}");
        }
    }
}
