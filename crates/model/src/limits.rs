//! What a decoder may build from its input, decided before it allocates.
//!
//! Every reader of an outside file (trace files, run records, cyclictest output, task sets,
//! campaign files, rtsl databases) takes a [`Budget`] sized from the input's length: it may
//! build `FLOOR + RATIO × input` bytes of structures, and asks the budget before each allocation
//! whose size comes from the input (a count, a length, a bucket index). A small file that claims a
//! huge content (a deflate bomb, a count of 2^40, a histogram bucket at 4·10^9 µs) is refused with
//! an error naming the field, before any memory is taken. Sums of counts taken from the input are
//! checked, so a crafted count cannot wrap a total.
//!
//! The ratio covers honest inputs with room: an `.rtt` event costs 48 bytes in memory for about 1.5
//! to 3 compressed bytes on disk (16–32×), hence [`RATIO`] for binary inputs; text and JSON
//! (cyclictest outputs, run records, bound inputs, rtsl databases) build at most a few bytes per
//! byte read once every item is charged at its real size, hence [`TEXT_RATIO`].
//!
//! What is charged is what is allocated: every parsed item that causes an allocation is charged
//! at its real size through [`Budget::charge`] — an imported thread ([`thread_bytes`]) and each
//! bucket of its histograms ([`LINEAR_CELL_BYTES`]), a CPU, an interrupt source, an arrival, an
//! event, a sample. So a small file that lists many cheap-looking items (20 000 one-line
//! threads, 300 000 CPUs) is refused the same way as one huge claim.
//!
//! The default is `FLOOR + ratio × input`, at most [`CAP_BYTES`]; `RTSCOPE_MAX_DECODE_MB` or
//! [`set_override_mb`] (for a command-line flag) replaces it for every decoder of the process.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Structures anyone may build whatever the input, bytes.
pub const FLOOR_BYTES: u64 = 64 << 20;
/// Bytes of structure per input byte, binary inputs (`.rtt`: compressed events).
pub const RATIO: u64 = 64;
/// Bytes of structure per input byte, text and JSON inputs and SQLite databases.
pub const TEXT_RATIO: u64 = 8;
/// Largest budget from the input's size alone, bytes (a larger input is refused unless the
/// user raises the limit with `RTSCOPE_MAX_DECODE_MB`).
pub const CAP_BYTES: u64 = 8 << 30;

/// An allocation refused by a [`Budget`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverBudget {
    /// The field or structure that asked ("event count", "histogram bucket").
    pub what: String,
    /// Bytes it would have needed (with what was already built).
    pub need: u64,
    pub limit: u64,
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} would need {} MiB of memory, more than this input can honestly hold (limit {} MiB; RTSCOPE_MAX_DECODE_MB raises it)",
            self.what,
            self.need.div_ceil(1 << 20),
            self.limit >> 20
        )
    }
}

impl std::error::Error for OverBudget {}

/// Memory a decoder may use for what it builds (module docs).
#[derive(Clone, Debug)]
pub struct Budget {
    limit: u64,
    used: u64,
    /// Sized from the inputs read so far ([`Budget::widen_for_text`]); false for a fixed limit
    /// (the override, or [`Budget::bytes`]).
    grows: bool,
}

impl Budget {
    /// The budget for an input of `input_len` bytes: `FLOOR + RATIO × input_len`, at most `CAP`,
    /// or exactly `override_mb` MiB when the user set one.
    pub fn for_input(input_len: u64, override_mb: Option<u64>) -> Budget {
        let limit = match override_mb {
            Some(mb) => mb.saturating_mul(1 << 20),
            None => FLOOR_BYTES
                .saturating_add(input_len.saturating_mul(RATIO))
                .min(CAP_BYTES),
        };
        Budget {
            limit,
            used: 0,
            grows: override_mb.is_none(),
        }
    }

    /// [`Budget::for_input`] with the process-wide override ([`set_override_mb`], else
    /// `RTSCOPE_MAX_DECODE_MB`), if set. For binary inputs (`.rtt`).
    pub fn for_input_env(input_len: u64) -> Budget {
        Budget::for_input(input_len, override_mb())
    }

    /// The budget of a text, JSON or SQLite input of `input_len` bytes: `FLOOR + TEXT_RATIO ×
    /// input_len`, at most `CAP`, or the process-wide override.
    pub fn for_text(input_len: u64) -> Budget {
        match override_mb() {
            Some(mb) => Budget::for_input(input_len, Some(mb)),
            None => Budget {
                limit: FLOOR_BYTES
                    .saturating_add(input_len.saturating_mul(TEXT_RATIO))
                    .min(CAP_BYTES),
                used: 0,
                grows: true,
            },
        }
    }

    /// One more text input of `input_len` bytes is read into what this budget already holds
    /// (several stored records read together): the limit grows by what that input's own
    /// budget would add above the floor, so records read together share one floor and one cap,
    /// not one each. A fixed budget stays as it is.
    pub fn widen_for_text(&mut self, input_len: u64) {
        if self.grows {
            self.limit = self
                .limit
                .saturating_add(input_len.saturating_mul(TEXT_RATIO))
                .min(CAP_BYTES);
        }
    }

    /// A fixed budget (tests, inner decoders).
    pub fn bytes(limit: u64) -> Budget {
        Budget {
            limit,
            used: 0,
            grows: false,
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn used(&self) -> u64 {
        self.used
    }

    /// Could `n` items of `size` bytes be built on top of what is built, without keeping them?
    /// (a temporary buffer, freed before the next request).
    pub fn check(&self, n: u64, size: u64, what: &str) -> Result<(), OverBudget> {
        let need = n.saturating_mul(size).saturating_add(self.used);
        if need > self.limit {
            return Err(OverBudget {
                what: what.to_string(),
                need,
                limit: self.limit,
            });
        }
        Ok(())
    }

    /// Charge `n` parsed items of `size` bytes each, kept for good (the name of the call every
    /// reader uses where it allocates; the same as [`Budget::take`]).
    pub fn charge(&mut self, n: u64, size: u64, what: &str) -> Result<(), OverBudget> {
        self.take(n, size, what)
    }

    /// Reserve `n` items of `size` bytes for good.
    pub fn take(&mut self, n: u64, size: u64, what: &str) -> Result<(), OverBudget> {
        self.check(n, size, what)?;
        self.used = self.used.saturating_add(n.saturating_mul(size));
        Ok(())
    }
}

/// The environment variable that sets every decoder's budget, MiB.
pub const OVERRIDE_VAR: &str = "RTSCOPE_MAX_DECODE_MB";

/// 0: no override set by the program.
static OVERRIDE_MB: AtomicU64 = AtomicU64::new(0);

/// Set every decoder's budget for this process, MiB (a command-line flag); `None` goes back to
/// `RTSCOPE_MAX_DECODE_MB` or the default from the input's size.
pub fn set_override_mb(mb: Option<u64>) {
    OVERRIDE_MB.store(mb.unwrap_or(0), Ordering::Relaxed);
}

/// The override in force: [`set_override_mb`], else `RTSCOPE_MAX_DECODE_MB`.
pub fn override_mb() -> Option<u64> {
    match OVERRIDE_MB.load(Ordering::Relaxed) {
        0 => override_from(std::env::var(OVERRIDE_VAR).ok().as_deref()),
        mb => Some(mb),
    }
}

/// What the bound's analysis builds per CPU of its input (its terms, iterations and report),
/// bytes: ~8 KB measured (300 000 CPUs took 2.4 GB).
pub const BOUND_CPU_BYTES: u64 = 8 << 10;
/// Per interrupt source (a name, its arrays, its curves and report line): ~1.5 KB measured
/// (1 M sources took 1.5 GB).
pub const BOUND_SOURCE_BYTES: u64 = 1536;
/// Per interrupt instance: the reader's row (24 bytes) and the source's two arrays (16 bytes).
pub const BOUND_INSTANCE_BYTES: u64 = 40;

/// What one imported or decoded measurement thread costs in memory before its buckets, bytes:
/// its [`crate::ThreadResult`] and the smallest allocation of its two histograms. A decoded
/// thread's HDR histogram is sparse ([`crate::Histogram::sparse`]); its buckets, like its linear
/// histogram's, are charged apart ([`LINEAR_CELL_BYTES`]). The run's merged histogram is one dense
/// array per run, inside [`FLOOR_BYTES`].
pub fn thread_bytes() -> u64 {
    (std::mem::size_of::<crate::ThreadResult>() as u64).saturating_add(64)
}

/// One µs bucket of an imported thread: its linear counter (8 bytes) and at most one sparse HDR
/// bucket (16 bytes) beside it.
pub const LINEAR_CELL_BYTES: u64 = 8 + crate::histogram::SPARSE_BUCKET_BYTES;

/// `RTSCOPE_MAX_DECODE_MB` parsed (None when unset or not a positive integer).
pub fn override_from(value: Option<&str>) -> Option<u64> {
    value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&m| m > 0)
}

/// Add counts taken from an input, refusing a total above u64 (the error names the field).
pub fn checked_sum<I: IntoIterator<Item = u64>>(it: I, what: &str) -> Result<u64, String> {
    let mut s = 0u64;
    for v in it {
        s = s
            .checked_add(v)
            .ok_or_else(|| format!("{what}: the counts add up to more than 2^64-1"))?;
    }
    Ok(s)
}

/// Before a RunRecord JSON is decoded: the dense arrays its decoding builds (each thread's linear
/// µs histogram, `max_us + 1` counters, whatever few buckets the text lists) fit the budget. A
/// record of a few KB can otherwise claim thousands of threads × 10^8 buckets.
pub fn check_run_record_json(text: &str, budget: &mut Budget) -> Result<(), String> {
    #[derive(serde::Deserialize)]
    struct Linear {
        #[serde(default)]
        max_us: u64,
    }
    #[derive(serde::Deserialize)]
    struct Thread {
        linear: Option<Linear>,
    }
    #[derive(serde::Deserialize)]
    struct Measurement {
        #[serde(default)]
        threads: Vec<Thread>,
    }
    #[derive(serde::Deserialize)]
    struct Kind {
        measurement: Option<Measurement>,
    }
    // Version 2 holds the threads in `kind.measurement`, version 1 at the top level.
    #[derive(serde::Deserialize)]
    struct Peek {
        #[serde(default)]
        threads: Vec<Thread>,
        kind: Option<Kind>,
    }
    // Parsing borrows nothing and skips every other field; what it keeps is one integer per thread.
    let p: Peek = match serde_json::from_str(text) {
        Ok(Peek {
            kind: Some(Kind {
                measurement: Some(m),
            }),
            ..
        }) => Peek {
            threads: m.threads,
            kind: None,
        },
        Ok(p) => p,
        // The real decoder reports what is malformed.
        Err(_) => return Ok(()),
    };
    let cells = p
        .threads
        .iter()
        .map(|t| t.linear.as_ref().map_or(1, |l| l.max_us.saturating_add(1)))
        .fold(0u64, u64::saturating_add);
    budget
        .take(
            cells,
            8,
            &format!(
                "the linear histograms of {} threads ({cells} buckets)",
                p.threads.len()
            ),
        )
        .map_err(|e| e.to_string())?;
    budget
        .charge(
            p.threads.len() as u64,
            thread_bytes(),
            &format!("threads: {} threads", p.threads.len()),
        )
        .map_err(|e| e.to_string())?;
    // The record's own text: parsed structures take a few times it.
    budget
        .take(text.len() as u64, 4, "the record")
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_inputs_get_the_floor_and_large_ones_a_ratio_up_to_the_cap() {
        assert_eq!(Budget::for_input(0, None).limit(), FLOOR_BYTES);
        assert_eq!(
            Budget::for_input(1 << 20, None).limit(),
            FLOOR_BYTES + (64 << 20)
        );
        assert_eq!(Budget::for_input(u64::MAX, None).limit(), CAP_BYTES);
        assert_eq!(Budget::for_input(10, Some(3)).limit(), 3 << 20);
    }

    #[test]
    fn a_claim_beyond_the_budget_is_refused_before_it_is_taken() {
        let mut b = Budget::bytes(1000);
        b.take(10, 48, "events").unwrap();
        assert_eq!(b.used(), 480);
        b.check(10, 52, "buffer").unwrap();
        let e = b.take(11, 48, "event count").unwrap_err();
        assert_eq!(e.need, 480 + 528);
        assert!(
            e.to_string().starts_with("event count would need 1 MiB"),
            "{e}"
        );
        assert_eq!(b.used(), 480, "a refused claim takes nothing");
        assert!(b.take(u64::MAX, u64::MAX, "x").is_err(), "no overflow");
    }

    #[test]
    fn a_record_claiming_huge_linear_histograms_is_refused() {
        let one = r#"{"linear":{"max_us":100000000,"overflow":0,"buckets":[]}}"#;
        let text = format!(r#"{{"threads":[{}]}}"#, vec![one; 40].join(","));
        let e = check_run_record_json(&text, &mut Budget::for_input(text.len() as u64, None))
            .unwrap_err();
        assert!(e.contains("40 threads"), "{e}");
        let small = r#"{"threads":[{"linear":{"max_us":10000,"overflow":0,"buckets":[]}}]}"#;
        check_run_record_json(small, &mut Budget::for_input(small.len() as u64, None)).unwrap();
    }

    #[test]
    fn sums_do_not_wrap() {
        assert_eq!(checked_sum([1, 2, 3], "c").unwrap(), 6);
        let e = checked_sum([u64::MAX, 1], "thread 0 histogram").unwrap_err();
        assert!(e.starts_with("thread 0 histogram"), "{e}");
        assert_eq!(override_from(Some(" 12 ")), Some(12));
        assert_eq!(override_from(Some("0")), None);
        assert_eq!(override_from(Some("x")), None);
        assert_eq!(override_from(None), None);
    }
}
