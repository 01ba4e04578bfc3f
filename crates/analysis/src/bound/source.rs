//! Interrupt sources: validated, sorted arrival lists (ECRTS'20 §5, "IRQ and NMI analysis").

use super::BoundError;

/// IRQ lines and system vectors are `Irq`; the NMI is its own kind (worst_single adds one of each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKind {
    Irq,
    Nmi,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Irq => "irq",
            SourceKind::Nmi => "nmi",
        }
    }
}

pub use rtscope_model::bound::RawInstance;

/// A source's instances, sorted by arrival, non-overlapping, no duplicate arrivals.
/// Struct-of-arrays: 16 bytes per instance, which is what 10 M records cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterruptSource {
    pub name: String,
    pub kind: SourceKind,
    starts: Vec<u64>,
    durations: Vec<u64>,
    owcet_ns: u64,
    omiat_ns: Option<u64>,
    total_ns: u64,
}

/// What building a source normalised (reported as a warning, never silent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Normalisation {
    /// Instances that arrived out of order and were sorted into place.
    pub out_of_order: u64,
}

impl InterruptSource {
    /// Validates and normalises `instances`: unsorted arrivals are sorted (stated normalisation,
    /// counted in the returned [`Normalisation`]); two instances of one source that overlap
    /// (`start_{i+1} < start_i + duration_i`) or share an arrival are an error naming both rows —
    /// one interrupt line cannot interrupt itself on one CPU, so such data is corrupt.
    pub fn build(
        name: &str,
        kind: SourceKind,
        mut instances: Vec<RawInstance>,
        origin: &str,
    ) -> Result<(Self, Normalisation), BoundError> {
        let mut norm = Normalisation::default();
        for w in instances.windows(2) {
            if w[1].start_ns < w[0].start_ns {
                norm.out_of_order += 1;
            }
        }
        if norm.out_of_order > 0 {
            // Stable: equal arrivals keep their input order so the error names rows predictably.
            instances.sort_by_key(|r| r.start_ns);
        }
        let mut owcet = 0u64;
        let mut omiat: Option<u64> = None;
        let mut total = 0u64;
        for (i, r) in instances.iter().enumerate() {
            owcet = owcet.max(r.duration_ns);
            total = total
                .checked_add(r.duration_ns)
                .ok_or_else(|| BoundError::Input {
                    origin: origin.to_string(),
                    message: format!(
                        "source {name}: total duration overflows u64 at row {}",
                        r.row
                    ),
                })?;
            if i > 0 {
                let p = &instances[i - 1];
                if r.start_ns == p.start_ns {
                    return Err(BoundError::Input {
                        origin: origin.to_string(),
                        message: format!(
                            "source {name}: rows {} and {} have the same arrival {} ns",
                            p.row, r.row, r.start_ns
                        ),
                    });
                }
                if r.start_ns < p.start_ns.saturating_add(p.duration_ns) {
                    return Err(BoundError::Input {
                        origin: origin.to_string(),
                        message: format!(
                            "source {name}: row {} (start {} ns, duration {} ns) overlaps row {} \
                             (start {} ns); instances of one source cannot overlap",
                            p.row, p.start_ns, p.duration_ns, r.row, r.start_ns
                        ),
                    });
                }
                let gap = r.start_ns - p.start_ns;
                omiat = Some(omiat.map_or(gap, |m| m.min(gap)));
            }
        }
        let starts = instances.iter().map(|r| r.start_ns).collect();
        let durations = instances.iter().map(|r| r.duration_ns).collect();
        Ok((
            InterruptSource {
                name: name.to_string(),
                kind,
                starts,
                durations,
                owcet_ns: owcet,
                omiat_ns: omiat,
                total_ns: total,
            },
            norm,
        ))
    }

    /// How many instances had ended by `t` (end = start + duration ≤ t). Instances of one source
    /// do not overlap, so their ends are sorted like their starts: a binary search.
    pub fn ended_by(&self, t: u64) -> usize {
        let (a, d) = (&self.starts, &self.durations);
        let (mut lo, mut hi) = (0usize, a.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if a[mid].saturating_add(d[mid]) <= t {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The source as it was after its first `n` instances (n clamped to the length).
    pub fn prefix(&self, n: usize) -> InterruptSource {
        let n = n.min(self.starts.len());
        let starts = self.starts[..n].to_vec();
        let durations = self.durations[..n].to_vec();
        let owcet_ns = durations.iter().copied().max().unwrap_or(0);
        let omiat_ns = starts.windows(2).map(|w| w[1] - w[0]).min();
        let total_ns = durations.iter().sum();
        InterruptSource {
            name: self.name.clone(),
            kind: self.kind,
            starts,
            durations,
            owcet_ns,
            omiat_ns,
            total_ns,
        }
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }
    pub fn starts(&self) -> &[u64] {
        &self.starts
    }
    pub fn durations(&self) -> &[u64] {
        &self.durations
    }
    /// Observed worst-case execution time: the longest instance.
    pub fn owcet_ns(&self) -> u64 {
        self.owcet_ns
    }
    /// Observed minimum inter-arrival time; None when the source was seen at most once.
    pub fn omiat_ns(&self) -> Option<u64> {
        self.omiat_ns
    }
    pub fn total_ns(&self) -> u64 {
        self.total_ns
    }
}
