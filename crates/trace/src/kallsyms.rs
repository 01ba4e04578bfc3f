//! Kernel code addresses as `symbol+0xoffset`, from the text of `/proc/kallsyms` ("address type
//! name [module]" a line). The kernel shows real addresses only to a reader with CAP_SYSLOG (and
//! kptr_restrict < 2); otherwise every address is 0 and nothing is symbolized.

use rtscope_model::thread_vars::{CodeSite, ThreadVarsRun};

/// Farther than this past a symbol, an address is not taken to be in it (the largest kernel
/// functions are a few tens of KiB).
const MAX_OFFSET: u64 = 1 << 20;

/// Text symbols sorted by address.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    syms: Vec<(u64, String)>,
}

impl Kallsyms {
    /// Pure: the text symbols (types t, T, w, W) with a non-zero address. Malformed lines are
    /// skipped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let addr = u64::from_str_radix(f.next()?, 16).ok()?;
                let ty = f.next()?;
                let name = f.next()?;
                let module = f.next();
                if addr == 0 || !matches!(ty, "t" | "T" | "w" | "W") {
                    return None;
                }
                Some((
                    addr,
                    match module {
                        Some(m) => format!("{name} {m}"),
                        None => name.to_string(),
                    },
                ))
            })
            .collect();
        syms.sort_by_key(|s| s.0);
        Kallsyms { syms }
    }

    /// The symbols that hold `addrs`, read from a `/proc/kallsyms` text line by line: for each
    /// address only its nearest text symbol at or below it is kept, so a [`Kallsyms::lookup`]
    /// of any of `addrs` answers as one over the whole table would, without the whole table
    /// (117 697 lines in the lab's trace kernel) held or sorted. A name is copied only when it
    /// becomes the nearest so far.
    pub fn parse_near(mut text: impl std::io::BufRead, addrs: &[u64]) -> Kallsyms {
        let mut want: Vec<u64> = addrs.iter().copied().filter(|&a| a != 0).collect();
        want.sort_unstable();
        want.dedup();
        // Per wanted address: the nearest symbol at or below it so far (0: none yet). The name
        // buffers are reused: the core kernel's lines come in address order, so the nearest
        // changes at almost every line below a wanted address.
        let mut best: Vec<(u64, String)> = vec![(0, String::new()); want.len()];
        let (Some(&lo), Some(&hi)) = (want.first(), want.last()) else {
            return Kallsyms::default();
        };
        // The kernel writes each address as 16 lowercase hex digits: a line outside the range
        // is skipped by comparing its first 17 bytes (the address and its blank), unparsed.
        let (lo_hex, hi_hex) = (
            format!("{:016x} ", lo.saturating_sub(MAX_OFFSET)),
            format!("{hi:016x} "),
        );
        let mut line = Vec::with_capacity(256);
        loop {
            line.clear();
            match text.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Some(head) = line.get(..17).filter(|h| h[16] == b' ') {
                if head < lo_hex.as_bytes() || head > hi_hex.as_bytes() {
                    continue;
                }
            }
            let mut f = line
                .split(|b| matches!(b, b' ' | b'\t' | b'\n'))
                .filter(|w| !w.is_empty());
            let Some(a) = f.next().and_then(hex) else {
                continue;
            };
            // Above every wanted address, or too far below the lowest to hold it.
            if a == 0 || a > hi || a.saturating_add(MAX_OFFSET) < lo {
                continue;
            }
            let (Some(ty), Some(name)) = (f.next(), f.next()) else {
                continue;
            };
            if !matches!(ty, b"t" | b"T" | b"w" | b"W") {
                continue;
            }
            let module = f.next();
            // The wanted addresses at or above this symbol; it is the nearer for those whose
            // nearest so far lies below it.
            let from = want.partition_point(|&w| w < a);
            for (x, n) in &mut best[from..] {
                // `<=`: of two names at one address the later, as the whole table's lookup.
                if *x <= a {
                    *x = a;
                    n.clear();
                    n.push_str(&String::from_utf8_lossy(name));
                    if let Some(m) = module {
                        n.push(' ');
                        n.push_str(&String::from_utf8_lossy(m));
                    }
                }
            }
        }
        let mut syms: Vec<(u64, String)> = best.into_iter().filter(|s| s.0 != 0).collect();
        syms.sort_by_key(|s| s.0);
        syms.dedup_by_key(|s| s.0);
        Kallsyms { syms }
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// Pure: the nearest symbol at or below `addr` as `name+0xoff` (None: 0 or below every
    /// symbol).
    pub fn lookup(&self, addr: u64) -> Option<String> {
        if addr == 0 {
            return None;
        }
        let i = self.syms.partition_point(|s| s.0 <= addr);
        let (a, name) = self.syms.get(i.checked_sub(1)?)?;
        // kallsyms gives no sizes: an address far past the nearest symbol is in code it does
        // not list (JITed BPF without bpf_jit_kallsyms, the top of the module area).
        if addr - a > MAX_OFFSET {
            return None;
        }
        let (name, module) = match name.split_once(' ') {
            Some((n, m)) => (n, Some(m)),
            None => (name.as_str(), None),
        };
        Some(match module {
            Some(m) => format!("{name}+{:#x} {m}", addr - a),
            None => format!("{name}+{:#x}", addr - a),
        })
    }

    /// Fill the symbols of every CPU's D_POID site.
    pub fn symbolize(&self, run: &mut ThreadVarsRun) {
        let fill = |s: &mut CodeSite| {
            s.symbol = self.lookup(s.ip);
            s.parent_symbol = self.lookup(s.parent_ip);
        };
        for c in &mut run.cpus {
            if let Some(at) = c.poid_at.as_mut() {
                fill(&mut at.from);
                fill(&mut at.to);
                for f in &mut at.stack {
                    f.symbol = self.lookup(f.ip);
                }
            }
        }
    }
}

/// A hexadecimal number of at most 16 digits (None: anything else).
fn hex(w: &[u8]) -> Option<u64> {
    if w.is_empty() || w.len() > 16 {
        return None;
    }
    w.iter().try_fold(0u64, |acc, &c| {
        let d = (c as char).to_digit(16)?;
        Some(acc << 4 | u64::from(d))
    })
}

/// The code addresses of a thread-variables run: where each CPU's longest D_POID began and
/// ended, their callers, and the stack that closed it.
pub fn sites(run: &ThreadVarsRun) -> Vec<u64> {
    let mut v = Vec::new();
    for at in run.cpus.iter().filter_map(|c| c.poid_at.as_ref()) {
        v.extend([at.from.ip, at.from.parent_ip, at.to.ip, at.to.parent_ip]);
        v.extend(at.stack.iter().map(|f| f.ip));
    }
    v
}

/// This kernel's symbols for `addrs`, read from `/proc/kallsyms` as [`Kallsyms::parse_near`]
/// reads it (empty when unreadable or hidden).
pub fn load_near(addrs: &[u64]) -> Kallsyms {
    if addrs.iter().all(|&a| a == 0) {
        return Kallsyms::default();
    }
    std::fs::File::open("/proc/kallsyms")
        .map(|f| Kallsyms::parse_near(std::io::BufReader::with_capacity(1 << 16, f), addrs))
        .unwrap_or_default()
}

/// Fill the symbols of `run`'s D_POID sites from this kernel's `/proc/kallsyms`.
pub fn symbolize_run(run: &mut ThreadVarsRun) {
    load_near(&sites(run)).symbolize(run);
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = "\
ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81a3c2f0 T default_idle
ffffffff81a3c310 t default_idle_call
ffffffff81e00000 D some_data
ffffffff81b00000 T __do_softirq
garbage line
ffffffffc0200000 t helper\t[virtio_net]
";

    #[test]
    fn nearest_lower_symbol_with_offset() {
        let k = Kallsyms::parse(FIXTURE);
        // Exactly on a symbol, inside one, past the last text symbol (data is skipped).
        assert_eq!(
            k.lookup(0xffffffff81a3c2f0).as_deref(),
            Some("default_idle+0x0")
        );
        assert_eq!(
            k.lookup(0xffffffff81a3c31f).as_deref(),
            Some("default_idle_call+0xf")
        );
        assert_eq!(
            k.lookup(0xffffffff81b00010).as_deref(),
            Some("__do_softirq+0x10")
        );
        // Far past the last symbol (code kallsyms does not list): not symbolized.
        assert_eq!(k.lookup(0xffffffff81e00010), None);
        assert_eq!(
            k.lookup(0xffffffffc0200008).as_deref(),
            Some("helper+0x8 [virtio_net]")
        );
        // Below every symbol, and 0 (an address the kernel hid).
        assert_eq!(k.lookup(0xffffffff80000000), None);
        assert_eq!(k.lookup(0), None);
        // Two names at one address: either is right; the lookup is stable.
        assert!(k
            .lookup(0xffffffff81000004)
            .is_some_and(|s| s.ends_with("+0x4")));
    }

    /// Only the nearest symbol of each wanted address is kept, and every lookup of a wanted
    /// address answers as over the whole table.
    #[test]
    fn the_symbols_near_the_wanted_addresses_answer_as_the_whole_table() {
        let whole = Kallsyms::parse(FIXTURE);
        let wanted = [
            0xffffffff81a3c2f0,
            0xffffffff81a3c31f,
            0xffffffff81b00010,
            0xffffffff81e00010,
            0xffffffffc0200008,
            0xffffffff80000000,
            0xffffffff81000004,
            0,
        ];
        let near = Kallsyms::parse_near(FIXTURE.as_bytes(), &wanted);
        // One per distinct nearest symbol: 81b00010 and 81e00010 share __do_softirq.
        assert_eq!(near.syms.len(), 5, "{:?}", near.syms);
        for a in wanted {
            assert_eq!(near.lookup(a), whole.lookup(a), "{a:#x}");
        }
        assert!(Kallsyms::parse_near(FIXTURE.as_bytes(), &[]).is_empty());
    }

    #[test]
    fn hidden_addresses_give_nothing() {
        let k = Kallsyms::parse("0000000000000000 T startup_64\n0000000000000000 t x\n");
        assert!(k.is_empty());
        assert_eq!(k.lookup(0xffffffff81000000), None);
    }
}
