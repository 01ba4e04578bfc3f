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

/// This kernel's `/proc/kallsyms` (empty when unreadable or hidden).
pub fn load() -> Kallsyms {
    std::fs::read_to_string("/proc/kallsyms")
        .map(|t| Kallsyms::parse(&t))
        .unwrap_or_default()
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

    #[test]
    fn hidden_addresses_give_nothing() {
        let k = Kallsyms::parse("0000000000000000 T startup_64\n0000000000000000 t x\n");
        assert!(k.is_empty());
        assert_eq!(k.lookup(0xffffffff81000000), None);
    }
}
