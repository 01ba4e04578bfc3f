//! The run summary of per-sample attributions, built online in memory that does not grow with the
//! number of samples (the streaming counterpart of `summary::summarize`, which keeps every
//! contribution and sorts every latency).
//!
//! Exact: per cause `samples_affected`, `total_ns`, `max_ns` and `tail_threshold_share` (the
//! threshold is known before the first sample, so its sums are plain sums); samples
//! attributed/unattributed; the sum check; the worst samples (kept by the caller).
//!
//! The p99 of the latency comes from the one histogram engine every latency percentile of
//! rtscope comes from, the HDR [`Histogram`] (nearest rank; exact below 2048 ns, within 1/1024
//! above), so it is the p99 the record's own statistics would give for the same samples.
//!
//! Bucketed: which samples form "the p99 tail", and the causes' `p99_contribution_ns`. The sums
//! the tail needs are kept per latency bucket (total latency and count, and per cause and per
//! CPU the contributed ns) in log-linear buckets — exact below 128 ns, then 64 sub-buckets per
//! power of two, so a bucket [lo, hi] has (hi + 1 − lo) / lo ≤ 1/64; an HDR bucket never
//! straddles one, so the p99 falls in exactly one — because the p99 is known only at the end and
//! a finer grid per cause and CPU would cost HDR's kilobytes per octave each. The tail is every
//! sample in the p99's bucket or above: the exact tail plus the samples of the p99's own bucket
//! below the p99 (all within 1/64 of it). A cause's contribution percentile is the nearest rank
//! over its own compact bucket counts (a [`LogHistogram`] of a few hundred bytes per cause, where
//! an HDR histogram would hold kilobytes): the upper edge of the bucket holding that rank,
//! clamped to the exact maximum, so in [exact, exact · (1 + 1/64)).
//! With X those extra samples and T the exact tail, a cause's tail share differs from the exact
//! one by at most latency(X) / latency(T ∪ X) (its contribution to X lies in [0, latency(X)]).
//!
//! Memory: one dense run of buckets per histogram, grown an octave (64 buckets) at a time over
//! the range of values seen (at most 59 octaves for u64; ~15 for 100 ns – 1 s), for the run, each
//! cause (at most [`MAX_CAUSES`] distinct names, then folded into [`OTHER_CAUSES`]) and each CPU ×
//! cause.

use super::summary::{per_cpu_tail_line, run_warnings, sort_causes, steal_checks, worst_sample};
use super::{AttributionOptions, AttributionResult, SampleAttribution, SumCheck};
use rtscope_model::attribution::{AttributionSummary, CauseSummary, ATTRIBUTION_SCHEMA_VERSION};
use rtscope_model::event::NameTables;
use rtscope_model::Histogram;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

/// Relative width of an online histogram bucket (64 sub-buckets per power of two).
pub const ONLINE_RELATIVE_RESOLUTION: f64 = 1.0 / SUB_BUCKETS as f64;

/// Causes beyond the first [`MAX_CAUSES`] distinct names are summed under this name.
pub const OTHER_CAUSES: &str = "other_causes";

/// Distinct cause names kept apart (irq:N, softirq:X, thread:comm, … — a real run has tens).
pub(super) const MAX_CAUSES: usize = 512;

const SUB_BITS: u32 = 6;
const SUB_BUCKETS: u64 = 1 << SUB_BITS;

/// Bucket of a value: the value itself below 2·64 = 128, then per power of two 2^k (k ≥ 7) the
/// 64 sub-buckets of width 2^(k−6).
pub(super) fn bucket_of(v: u64) -> u32 {
    if v < 2 * SUB_BUCKETS {
        return v as u32;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    ((msb - SUB_BITS + 1) << SUB_BITS) + ((v >> shift) - SUB_BUCKETS) as u32
}

/// Smallest value of bucket `b`.
pub(super) fn bucket_low(b: u32) -> u64 {
    if u64::from(b) < 2 * SUB_BUCKETS {
        return u64::from(b);
    }
    let shift = (b >> SUB_BITS) - 1;
    (SUB_BUCKETS + u64::from(b & (SUB_BUCKETS as u32 - 1))) << shift
}

/// Largest value of bucket `b`.
pub(super) fn bucket_high(b: u32) -> u64 {
    if u64::from(b) < 2 * SUB_BUCKETS {
        return u64::from(b);
    }
    let shift = (b >> SUB_BITS) - 1;
    bucket_low(b) + ((1u64 << shift) - 1)
}

/// Nearest rank (1-based) of the p-th percentile among `n` values: ⌈p/100 · n⌉ clamped to
/// [1, n], as the batch summary computes it.
pub(super) fn nearest_rank(n: u64, p: f64) -> u64 {
    (((p / 100.0) * n as f64).ceil() as u64).clamp(1, n.max(1))
}

/// Buckets a [`BucketSums`] keeps as a sorted list before it switches to a dense array.
const SPARSE_MAX: usize = 24;

/// Sums per bucket. A cause seen in few samples (most threads of a long run: one per distinct
/// name) keeps a short sorted list of (bucket, sum); past [`SPARSE_MAX`] buckets, a dense run of
/// buckets [lo, lo + len), grown a whole octave at a time so it reallocates at most once per
/// power of two it ever sees. Hundreds of causes then cost kilobytes, not megabytes.
#[derive(Clone, Debug, Default)]
pub(super) struct BucketSums {
    sparse: Vec<(u32, u64)>,
    lo: u32,
    v: Vec<u64>,
}

impl BucketSums {
    pub(super) fn add(&mut self, b: u32, x: u64) {
        if self.v.is_empty() {
            match self.sparse.binary_search_by_key(&b, |e| e.0) {
                Ok(i) => {
                    self.sparse[i].1 += x;
                    return;
                }
                Err(i) if self.sparse.len() < SPARSE_MAX => {
                    self.sparse.insert(i, (b, x));
                    return;
                }
                Err(_) => {
                    let old = std::mem::take(&mut self.sparse);
                    for (ob, ox) in old {
                        self.add_dense(ob, ox);
                    }
                }
            }
        }
        self.add_dense(b, x);
    }

    fn add_dense(&mut self, b: u32, x: u64) {
        let octave = SUB_BUCKETS as u32;
        if self.v.is_empty() {
            self.lo = b - b % octave;
            self.v = vec![0; octave as usize];
        } else if b < self.lo {
            let lo = b - b % octave;
            let grow = (self.lo - lo) as usize;
            let mut v = Vec::with_capacity(grow + self.v.len());
            v.resize(grow, 0);
            v.extend_from_slice(&self.v);
            self.v = v;
            self.lo = lo;
        }
        let i = (b - self.lo) as usize;
        if i >= self.v.len() {
            let len = (i / octave as usize + 1) * octave as usize;
            self.v.reserve_exact(len - self.v.len());
            self.v.resize(len, 0);
        }
        self.v[i] += x;
    }

    /// Sum over buckets ≥ `b`.
    pub(super) fn sum_from(&self, b: u32) -> u64 {
        if self.v.is_empty() {
            let i = self.sparse.partition_point(|e| e.0 < b);
            return self.sparse[i..].iter().map(|e| e.1).sum();
        }
        let skip = b.saturating_sub(self.lo) as usize;
        self.v.iter().skip(skip).sum()
    }

    /// (bucket, sum) of the non-empty buckets, in bucket order.
    fn iter(&self) -> Box<dyn Iterator<Item = (u32, u64)> + '_> {
        if self.v.is_empty() {
            return Box::new(self.sparse.iter().copied().filter(|e| e.1 > 0));
        }
        let lo = self.lo;
        Box::new(
            self.v
                .iter()
                .enumerate()
                .filter(|(_, &x)| x > 0)
                .map(move |(i, &x)| (lo + i as u32, x)),
        )
    }

    fn merge(&mut self, other: &BucketSums) {
        for (b, x) in other.iter() {
            self.add(b, x);
        }
    }

    /// The bucket holding the `rank`-th unit (1-based) when the sums are counts.
    fn bucket_at_rank(&self, rank: u64) -> Option<u32> {
        let mut seen = 0u64;
        for (b, x) in self.iter() {
            seen += x;
            if seen >= rank {
                return Some(b);
            }
        }
        None
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.v.capacity() * std::mem::size_of::<u64>()
            + self.sparse.capacity() * std::mem::size_of::<(u32, u64)>()
    }
}

/// Counts of values in log-linear buckets with their exact maximum: nearest-rank percentiles
/// in bounded memory (see the module comment for the resolution).
#[derive(Clone, Debug, Default)]
pub(super) struct LogHistogram {
    counts: BucketSums,
    n: u64,
    max: u64,
}

impl LogHistogram {
    pub(super) fn record(&mut self, v: u64) {
        self.counts.add(bucket_of(v), 1);
        self.n += 1;
        self.max = self.max.max(v);
    }

    /// The bucket holding the nearest-rank p-th percentile of the recorded values together with
    /// `zeros` zero values that were counted but not recorded; None when that rank falls among
    /// the zeros or there are no values.
    fn percentile_bucket(&self, p: f64, zeros: u64) -> Option<u32> {
        let total = self.n + zeros;
        if total == 0 {
            return None;
        }
        let rank = nearest_rank(total, p);
        if rank <= zeros {
            return None;
        }
        self.counts.bucket_at_rank(rank - zeros)
    }

    /// Nearest-rank p-th percentile (p in 0..=100) of the recorded values plus `zeros` unrecorded
    /// zeros: the upper edge of the bucket holding that rank, clamped to the exact maximum (so in
    /// [exact, exact · (1 + 1/64))); 0 when the rank is a zero or there are no values.
    pub(super) fn percentile(&self, p: f64, zeros: u64) -> u64 {
        self.percentile_bucket(p, zeros)
            .map(|b| bucket_high(b).min(self.max))
            .unwrap_or(0)
    }

    fn merge(&mut self, other: &LogHistogram) {
        self.counts.merge(&other.counts);
        self.n += other.n;
        self.max = self.max.max(other.max);
    }

    fn heap_bytes(&self) -> usize {
        self.counts.heap_bytes()
    }
}

/// One cause over the run.
#[derive(Clone, Debug, Default)]
struct CauseAgg {
    name: String,
    affected: u64,
    total_ns: u64,
    max_ns: u64,
    /// Nonzero contributions (the zeros are `n − affected`).
    contrib: LogHistogram,
    /// Contributed ns per latency bucket of the sample (for any latency tail).
    by_latency: BucketSums,
    /// Contributed ns in samples above the user threshold.
    tail_threshold_ns: u64,
}

impl CauseAgg {
    fn merge(&mut self, o: &CauseAgg) {
        self.affected += o.affected;
        self.total_ns += o.total_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
        self.contrib.merge(&o.contrib);
        self.by_latency.merge(&o.by_latency);
        self.tail_threshold_ns += o.tail_threshold_ns;
    }
}

/// One CPU over the run: its samples per latency bucket and each cause's ns per latency bucket.
#[derive(Clone, Debug, Default)]
struct CpuAgg {
    samples: u64,
    count: BucketSums,
    latency_ns: BucketSums,
    /// Indexed by cause id.
    by_cause: Vec<BucketSums>,
}

/// The online summary. Feed every explained sample to [`OnlineSummary::record`].
#[derive(Clone, Debug)]
pub(super) struct OnlineSummary {
    tail_threshold_ns: Option<u64>,
    /// Every latency (its percentiles).
    latency: Histogram,
    /// Samples and their latency per tail bucket.
    latency_count: BucketSums,
    latency_sum: BucketSums,
    unattributed: u64,
    sum_check: SumCheck,
    tail_thr_samples: u64,
    tail_thr_latency_ns: u64,
    ids: HashMap<String, u16>,
    causes: Vec<CauseAgg>,
    /// Contributions whose cause name came after the first `MAX_CAUSES` distinct ones.
    folded_parts: u64,
    cpus: BTreeMap<u32, CpuAgg>,
}

impl OnlineSummary {
    pub(super) fn new(tail_threshold_ns: Option<u64>) -> Self {
        OnlineSummary {
            tail_threshold_ns,
            latency: Histogram::new(),
            latency_count: BucketSums::default(),
            latency_sum: BucketSums::default(),
            unattributed: 0,
            sum_check: SumCheck {
                tolerance_ns: 0,
                samples_checked: 0,
                max_abs_error_ns: 0,
                violations: 0,
            },
            tail_thr_samples: 0,
            tail_thr_latency_ns: 0,
            ids: HashMap::new(),
            causes: Vec::new(),
            folded_parts: 0,
            cpus: BTreeMap::new(),
        }
    }

    /// Samples recorded.
    pub(super) fn samples(&self) -> u64 {
        self.latency.count()
    }

    pub(super) fn cause_name(&self, id: u16) -> &str {
        &self.causes[id as usize].name
    }

    fn intern(
        ids: &mut HashMap<String, u16>,
        causes: &mut Vec<CauseAgg>,
        folded: &mut u64,
        name: &str,
    ) -> u16 {
        if let Some(&id) = ids.get(name) {
            return id;
        }
        let name = if causes.len() < MAX_CAUSES {
            name
        } else {
            *folded += 1;
            if let Some(&id) = ids.get(OTHER_CAUSES) {
                return id;
            }
            OTHER_CAUSES
        };
        let id = causes.len() as u16;
        ids.insert(name.to_string(), id);
        causes.push(CauseAgg {
            name: name.to_string(),
            ..Default::default()
        });
        id
    }

    /// Add one explained sample. The ids of the causes whose largest contribution it now holds
    /// (strictly larger than any before) are appended to `new_max`.
    pub(super) fn record(&mut self, a: &SampleAttribution, new_max: &mut Vec<u16>) {
        let lat = a.latency_ns;
        let b = bucket_of(lat);
        self.latency.record(lat);
        self.latency_count.add(b, 1);
        self.latency_sum.add(b, lat);
        if a.unattributed_reason.is_some() {
            self.unattributed += 1;
        }
        let sum: u64 = a.parts.iter().map(|p| p.1).sum();
        let err = sum.abs_diff(lat);
        self.sum_check.samples_checked += 1;
        self.sum_check.max_abs_error_ns = self.sum_check.max_abs_error_ns.max(err);
        if err > self.sum_check.tolerance_ns {
            self.sum_check.violations += 1;
        }
        let in_thr = self.tail_threshold_ns.is_some_and(|t| lat > t);
        if in_thr {
            self.tail_thr_samples += 1;
            self.tail_thr_latency_ns += lat;
        }
        let cpu = self.cpus.entry(a.cpu).or_default();
        cpu.samples += 1;
        cpu.count.add(b, 1);
        cpu.latency_ns.add(b, lat);
        for (cause, ns) in &a.parts {
            if *ns == 0 {
                continue;
            }
            let id = Self::intern(
                &mut self.ids,
                &mut self.causes,
                &mut self.folded_parts,
                cause,
            );
            let g = &mut self.causes[id as usize];
            g.affected += 1;
            g.total_ns += ns;
            if *ns > g.max_ns {
                g.max_ns = *ns;
                if !new_max.contains(&id) {
                    new_max.push(id);
                }
            }
            g.contrib.record(*ns);
            g.by_latency.add(b, *ns);
            if in_thr {
                g.tail_threshold_ns += ns;
            }
            if cpu.by_cause.len() <= id as usize {
                cpu.by_cause.resize(id as usize + 1, BucketSums::default());
            }
            cpu.by_cause[id as usize].add(b, *ns);
        }
    }

    /// The p99 of the latency (nearest rank, HDR), None without samples.
    fn p99(&self) -> Option<u64> {
        self.latency.quantile_ns(0.99)
    }

    /// The tail bucket holding the p99: the p99 tail is that bucket and above.
    fn p99_bucket(&self) -> Option<u32> {
        self.p99().map(bucket_of)
    }

    /// The cause with the largest share of the p99 tail's latency, and that share.
    pub(super) fn dominant_tail_cause(&self) -> Option<(String, f64)> {
        let b = self.p99_bucket()?;
        let tail = self.latency_sum.sum_from(b);
        if tail == 0 {
            return None;
        }
        let (g, ns) = self
            .causes
            .iter()
            .map(|g| (g, g.by_latency.sum_from(b)))
            .filter(|(_, ns)| *ns > 0)
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.name.cmp(&a.0.name)))?;
        Some((g.name.clone(), ns as f64 / tail as f64))
    }

    /// The run-level result, as the batch `summarize` builds it. Causes named `thread:pid<N>`
    /// (the thread's name was not known yet when its samples were explained) are renamed from
    /// `names` and merged with that name's cause.
    pub(super) fn result(
        &self,
        opts: &AttributionOptions,
        mut worst: Vec<SampleAttribution>,
        gaps: Vec<(u32, u64)>,
        names: &NameTables,
    ) -> AttributionResult {
        let n = self.latency.count();
        let b99 = self.p99_bucket();
        let p99 = self.p99().unwrap_or(0);
        let (tail_n, tail_lat) = b99
            .map(|b| (self.latency_count.sum_from(b), self.latency_sum.sum_from(b)))
            .unwrap_or((0, 0));
        let thr = self.tail_threshold_ns;

        let mut groups: BTreeMap<Cow<'_, str>, Vec<usize>> = BTreeMap::new();
        for (id, g) in self.causes.iter().enumerate() {
            groups
                .entry(current_name(&g.name, names))
                .or_default()
                .push(id);
        }
        let mut causes: Vec<CauseSummary> = groups
            .iter()
            .map(|(name, ids)| {
                let g: Cow<'_, CauseAgg> = match ids.as_slice() {
                    [id] => Cow::Borrowed(&self.causes[*id]),
                    _ => {
                        let mut m = CauseAgg::default();
                        for &id in ids {
                            m.merge(&self.causes[id]);
                        }
                        Cow::Owned(m)
                    }
                };
                let tail = b99.map(|b| g.by_latency.sum_from(b)).unwrap_or(0);
                CauseSummary {
                    cause: name.to_string(),
                    samples_affected: g.affected,
                    total_ns: g.total_ns,
                    max_ns: g.max_ns,
                    p99_contribution_ns: g.contrib.percentile(99.0, n - g.affected),
                    tail_p99_share: if tail_lat > 0 {
                        tail as f64 / tail_lat as f64
                    } else {
                        0.0
                    },
                    tail_threshold_share: (thr.is_some() && self.tail_thr_latency_ns > 0)
                        .then(|| g.tail_threshold_ns as f64 / self.tail_thr_latency_ns as f64),
                }
            })
            .collect();
        sort_causes(&mut causes);

        let lost: BTreeMap<u32, u64> = opts.lost_per_cpu.iter().copied().collect();
        let mut per_cpu_tail = Vec::new();
        if let Some(b) = b99 {
            for (&cpu, c) in &self.cpus {
                let cnt = c.count.sum_from(b);
                if cnt == 0 {
                    continue;
                }
                let mut per: BTreeMap<Cow<'_, str>, u64> = BTreeMap::new();
                for (id, h) in c.by_cause.iter().enumerate() {
                    let ns = h.sum_from(b);
                    if ns > 0 {
                        *per.entry(current_name(&self.causes[id].name, names))
                            .or_default() += ns;
                    }
                }
                let per = per.into_iter().map(|(k, v)| (k.into_owned(), v)).collect();
                let line = per_cpu_tail_line(cnt, c.latency_ns.sum_from(b), p99, per, &lost, cpu);
                per_cpu_tail.push((cpu, line));
            }
        }
        let samples_on_lossy_cpus = self
            .cpus
            .iter()
            .filter(|(cpu, _)| lost.get(cpu).is_some_and(|&l| l > 0))
            .map(|(_, c)| c.samples)
            .sum();
        let lost_events: u64 = lost.values().sum();
        let mut warnings = run_warnings(
            lost_events,
            samples_on_lossy_cpus,
            self.unattributed,
            n,
            self.sum_check.violations,
        );
        if self.folded_parts > 0 {
            warnings.push(format!(
                "more than {MAX_CAUSES} distinct causes: {} contributions of the further ones are summed as {OTHER_CAUSES}",
                self.folded_parts
            ));
        }
        for w in &mut worst {
            rename_threads(w, names);
        }
        AttributionResult {
            summary: AttributionSummary {
                schema_version: ATTRIBUTION_SCHEMA_VERSION,
                causes,
                per_cpu_tail,
                lost_events,
                samples_attributed: n - self.unattributed,
                samples_unattributed: self.unattributed,
                p99_latency_ns: p99,
                tail_p99_samples: tail_n,
                tail_threshold_ns: thr,
                tail_threshold_samples: self.tail_thr_samples,
                gap_threshold_ns: opts.gap_threshold_ns,
                sum_tolerance_ns: self.sum_check.tolerance_ns,
                worst: worst.iter().map(worst_sample).collect(),
                p99_relative_resolution: Some(ONLINE_RELATIVE_RESOLUTION),
            },
            worst,
            sum_check: self.sum_check.clone(),
            steal_check: steal_checks(&gaps, opts),
            gap_threshold_ns: opts.gap_threshold_ns,
            busy_gap_threshold_ns: opts.busy_gap_threshold_ns,
            samples_on_lossy_cpus,
            warnings,
        }
    }

    /// Approximate heap bytes held.
    pub(super) fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let causes: usize = self
            .causes
            .iter()
            .map(|g| g.name.capacity() + g.contrib.heap_bytes() + g.by_latency.heap_bytes())
            .sum::<usize>()
            + self.causes.capacity() * size_of::<CauseAgg>();
        let ids = self.ids.capacity() * (size_of::<(String, u16)>() + 1)
            + self.ids.keys().map(|k| k.capacity()).sum::<usize>();
        let cpus: usize = self
            .cpus
            .values()
            .map(|c| {
                size_of::<(u32, CpuAgg)>()
                    + c.count.heap_bytes()
                    + c.latency_ns.heap_bytes()
                    + c.by_cause.capacity() * size_of::<BucketSums>()
                    + c.by_cause.iter().map(|h| h.heap_bytes()).sum::<usize>()
            })
            .sum();
        self.latency.heap_bytes() as usize
            + self.latency_count.heap_bytes()
            + self.latency_sum.heap_bytes()
            + causes
            + ids
            + cpus
    }
}

/// The thread's name for `pid<N>` (what `NameTables::comm` gives a pid it does not know) once
/// `names` knows it.
fn known_comm<'n>(fallback: &str, names: &'n NameTables) -> Option<&'n String> {
    fallback
        .strip_prefix("pid")
        .filter(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|d| d.parse::<u32>().ok())
        .and_then(|pid| names.comms.get(&pid))
}

/// `thread:pid<N>` named after the thread once `names` knows it; any other cause unchanged.
fn current_name<'a>(cause: &'a str, names: &NameTables) -> Cow<'a, str> {
    cause
        .strip_prefix("thread:")
        .and_then(|c| known_comm(c, names))
        .map(|comm| Cow::Owned(format!("thread:{comm}")))
        .unwrap_or(Cow::Borrowed(cause))
}

/// The same renaming inside one kept sample: its parts (merged when two now share a name, largest
/// first as `attribute_one` orders them), its timeline (causes, and details naming the task on
/// the CPU) and its threads.
pub(super) fn rename_threads(a: &mut SampleAttribution, names: &NameTables) {
    if a.parts
        .iter()
        .any(|(c, _)| matches!(current_name(c, names), Cow::Owned(_)))
    {
        let mut parts: Vec<(String, u64)> = Vec::with_capacity(a.parts.len());
        for (c, ns) in a.parts.drain(..) {
            let c = current_name(&c, names).into_owned();
            match parts.iter_mut().find(|p| p.0 == c) {
                Some(p) => p.1 += ns,
                None => parts.push((c, ns)),
            }
        }
        parts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        a.parts = parts;
    }
    for s in &mut a.segments {
        if let Cow::Owned(c) = current_name(&s.cause, names) {
            s.cause = c;
        }
        if let Some(comm) = known_comm(&s.detail, names) {
            s.detail.clone_from(comm);
        }
    }
    for t in &mut a.threads {
        if let Some(comm) = names.comms.get(&t.pid) {
            t.comm.clone_from(comm);
        }
    }
}

/// Approximate heap bytes of one kept sample.
pub(super) fn attribution_heap_bytes(a: &SampleAttribution) -> usize {
    use std::mem::size_of;
    a.parts.capacity() * size_of::<(String, u64)>()
        + a.parts.iter().map(|p| p.0.capacity()).sum::<usize>()
        + a.segments.capacity() * size_of::<rtscope_model::attribution::Segment>()
        + a.segments
            .iter()
            .map(|s| s.cause.capacity() + s.detail.capacity())
            .sum::<usize>()
        + a.threads.capacity() * size_of::<rtscope_model::attribution::ThreadRan>()
        + a.threads
            .iter()
            .map(|t| t.comm.capacity() + t.relation.capacity())
            .sum::<usize>()
        + a.events.capacity() * size_of::<rtscope_model::event::Event>()
        + a.anchors.handler.capacity()
        + a.unattributed_reason.as_ref().map_or(0, |r| r.capacity())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::record::RawSample;

    /// Bucket edges by hand: exact below 128; [128, 256) in width-2 buckets; [1024, 2048) in
    /// width-16 buckets (1024/64); the top bucket ends at u64::MAX.
    #[test]
    fn bucket_edges() {
        for v in [0u64, 1, 63, 64, 127] {
            assert_eq!(bucket_of(v), v as u32);
            assert_eq!((bucket_low(v as u32), bucket_high(v as u32)), (v, v));
        }
        assert_eq!(bucket_of(128), 128);
        assert_eq!(bucket_of(129), 128);
        assert_eq!((bucket_low(128), bucket_high(128)), (128, 129));
        assert_eq!(bucket_of(255), 191);
        assert_eq!(bucket_of(256), 192);
        // 1000 = 0b1111101000: msb 9, width 8, 1000 >> 3 = 125 → sub-bucket 61 of octave 4.
        assert_eq!(bucket_of(1000), (4 << 6) + 61);
        assert_eq!((bucket_low(317), bucket_high(317)), (1000, 1007));
        // 1030: msb 10, width 16, [1024, 1039].
        assert_eq!(
            (bucket_low(bucket_of(1030)), bucket_high(bucket_of(1030))),
            (1024, 1039)
        );
        let top = bucket_of(u64::MAX);
        assert_eq!(top, (58 << 6) + 63);
        assert_eq!(bucket_high(top), u64::MAX);
        // Every bucket is contiguous with the next and no wider than 1/64 of its low edge.
        for b in 0..top {
            assert_eq!(bucket_high(b) + 1, bucket_low(b + 1), "bucket {b}");
            let width = bucket_high(b) - bucket_low(b) + 1;
            assert!(width == 1 || width * 64 <= bucket_low(b), "bucket {b}");
            assert_eq!(bucket_of(bucket_low(b)), b);
            assert_eq!(bucket_of(bucket_high(b)), b);
        }
    }

    /// Nearest rank by hand on ten values 10, 20, …, 90, 1030 (+ zeros).
    #[test]
    fn percentile_by_hand() {
        let mut h = LogHistogram::default();
        assert_eq!(h.percentile(99.0, 0), 0);
        for v in [10u64, 20, 30, 40, 50, 60, 70, 80, 90, 1030] {
            h.record(v);
        }
        assert_eq!(h.n, 10);
        assert_eq!(h.max, 1030);
        // p50: rank ⌈5⌉ = 5 → 50 (exact region).
        assert_eq!(h.percentile(50.0, 0), 50);
        // p90: rank 9 → 90; p91: rank ⌈9.1⌉ = 10 → 1030's bucket [1024, 1039], clamped to the
        // max 1030.
        assert_eq!(h.percentile(90.0, 0), 90);
        assert_eq!(h.percentile(91.0, 0), 1030);
        // With 90 zeros (100 values): p90 = rank 90 is a zero; p95 = rank 95 → the 5th
        // recorded value, 50; p99 = rank 99 → the 9th, 90.
        assert_eq!(h.percentile(90.0, 90), 0);
        assert_eq!(h.percentile(95.0, 90), 50);
        assert_eq!(h.percentile(99.0, 90), 90);
        // Adding 1035 and 2000: p99 of 12 values = rank ⌈11.88⌉ = 12 → 2000's bucket
        // [2000, 2015], clamped to the max 2000; p90 = rank ⌈10.8⌉ = 11 → 1035 in [1024, 1039] → upper edge 1039,
        // 0.4 % above the exact value (within 1/64).
        h.record(1035);
        h.record(2000);
        assert_eq!(h.percentile(99.0, 0), 2000);
        assert_eq!(h.percentile(90.0, 0), 1039);
    }

    fn sample(cpu: u32, parts: &[(&str, u64)]) -> SampleAttribution {
        SampleAttribution {
            cpu,
            tid: 1,
            cycle: 0,
            expected_ns: 0,
            latency_ns: parts.iter().map(|p| p.1).sum(),
            unattributed_reason: None,
            parts: parts.iter().map(|&(c, ns)| (c.to_string(), ns)).collect(),
            anchors: Default::default(),
            threads: Vec::new(),
            segments: Vec::new(),
            events: Vec::new(),
        }
    }

    /// The p99 tail by hand, online and exact. 100 samples: 97 × 500 ns ("ret"), then 1030
    /// ("irq"), 1035 ("ret"), 1038 ("nmi" 38 + "ret" 1000); the last three share the bucket
    /// [1024, 1039]. Exact: p99 = rank 99 = 1035, tail {1035, 1038} = 2073 ns, "ret" 2035 of it.
    /// Online: p99 = 1035 (the HDR histogram's, exact below 2048 ns); the tail is the whole
    /// bucket {1030, 1035, 1038} = 3103 ns: "irq" 1030/3103, "ret" 2035/3103, "nmi" 38/3103 —
    /// each within latency(X)/latency(T ∪ X) = 1030/3103 of its exact share ("irq" exactly
    /// that far). "ret"'s p99 contribution: 99 nonzero + 1 zero, rank 99 → the 98th nonzero,
    /// 1000, in [1000, 1007] → 1007 (exact: 1000).
    #[test]
    fn tail_by_hand() {
        let mut all: Vec<SampleAttribution> = (0..97).map(|_| sample(0, &[("ret", 500)])).collect();
        all.push(sample(1, &[("irq", 1030)]));
        all.push(sample(1, &[("ret", 1035)]));
        all.push(sample(0, &[("nmi", 38), ("ret", 1000)]));
        let opts = AttributionOptions {
            tail_threshold_ns: Some(1032),
            ..Default::default()
        };
        let mut online = OnlineSummary::new(opts.tail_threshold_ns);
        let mut new_max = Vec::new();
        let mut rises = 0;
        for a in &all {
            new_max.clear();
            online.record(a, &mut new_max);
            rises += new_max.len();
        }
        // "ret" rose to 500, then 1035; "irq" and "nmi" once each.
        assert_eq!(rises, 4);
        let r = online.result(&opts, Vec::new(), Vec::new(), &NameTables::default());
        let s = &r.summary;
        assert_eq!((s.p99_latency_ns, s.tail_p99_samples), (1035, 3));
        let c = |n: &str| s.causes.iter().find(|c| c.cause == n).expect(n).clone();
        assert_eq!(c("irq").tail_p99_share, 1030.0 / 3103.0);
        assert_eq!(c("ret").tail_p99_share, 2035.0 / 3103.0);
        assert_eq!(c("nmi").tail_p99_share, 38.0 / 3103.0);
        assert_eq!(c("ret").p99_contribution_ns, 1007);
        assert_eq!(
            (c("ret").samples_affected, c("ret").total_ns),
            (99, 97 * 500 + 2035)
        );
        // Above the threshold 1032 (exact): {1035, 1038}.
        assert_eq!(c("ret").tail_threshold_share, Some(2035.0 / 2073.0));
        assert_eq!(c("irq").tail_threshold_share, Some(0.0));
        assert_eq!(
            online.dominant_tail_cause(),
            Some(("ret".into(), 2035.0 / 3103.0))
        );
        // The batch summary of the same attributions: the exact figures.
        let samples: Vec<RawSample> = all
            .iter()
            .map(|a| RawSample {
                cpu: a.cpu,
                tid: a.tid,
                cycle: a.cycle,
                expected_ns: a.expected_ns,
                latency_ns: a.latency_ns,
            })
            .collect();
        let b = super::super::summarize(&samples, all, &[], Vec::new(), &opts);
        let bc = |n: &str| {
            b.summary
                .causes
                .iter()
                .find(|c| c.cause == n)
                .expect(n)
                .clone()
        };
        assert_eq!(
            (b.summary.p99_latency_ns, b.summary.tail_p99_samples),
            (1035, 2)
        );
        assert_eq!(bc("ret").tail_p99_share, 2035.0 / 2073.0);
        assert_eq!(bc("ret").p99_contribution_ns, 1000);
        let tol = 1030.0 / 3103.0 + 1e-12;
        for n in ["irq", "ret", "nmi"] {
            assert!(
                (c(n).tail_p99_share - bc(n).tail_p99_share).abs() <= tol,
                "{n}"
            );
            assert_eq!(c(n).tail_threshold_share, bc(n).tail_threshold_share, "{n}");
        }
        // Per CPU: CPU 0 holds {1038}, CPU 1 {1030, 1035} ("ret" 1035 ns first).
        assert_eq!(
            r.summary.per_cpu_tail,
            vec![
                (
                    0,
                    "p99 tail (1 samples >= 1.0 us): ret 96%, nmi 4%".to_string()
                ),
                (
                    1,
                    "p99 tail (2 samples >= 1.0 us): ret 50%, irq 50%".to_string()
                )
            ]
        );
    }

    /// The sparse list and the dense array answer alike, across the switch.
    #[test]
    fn bucket_sums_sparse_then_dense() {
        let values: Vec<u64> = (0..200u64).map(|i| (i * 7919) % 5_000_000 + 1).collect();
        let mut s = BucketSums::default();
        let mut reference: BTreeMap<u32, u64> = BTreeMap::new();
        for (k, &v) in values.iter().enumerate() {
            s.add(bucket_of(v), k as u64 + 1);
            *reference.entry(bucket_of(v)).or_default() += k as u64 + 1;
            if k == 10 {
                assert!(s.v.is_empty(), "few buckets stay sparse");
                assert!(s.heap_bytes() < 1024);
            }
            let got: Vec<(u32, u64)> = s.iter().collect();
            let want: Vec<(u32, u64)> = reference.iter().map(|(&b, &x)| (b, x)).collect();
            assert_eq!(got, want, "after {k} values");
            for probe in [0, bucket_of(v), bucket_of(v) + 1, u32::MAX] {
                let want: u64 = reference.range(probe..).map(|(_, &x)| x).sum();
                assert_eq!(s.sum_from(probe), want);
            }
        }
        assert!(!s.v.is_empty(), "many buckets go dense");
        let total: u64 = reference.values().sum();
        assert_eq!(
            s.bucket_at_rank(total),
            reference.keys().next_back().copied()
        );
    }

    #[test]
    fn bucket_sums_grow_both_ways() {
        let mut s = BucketSums::default();
        s.add(bucket_of(5_000), 7);
        s.add(bucket_of(10), 1);
        s.add(bucket_of(3_000_000), 2);
        assert_eq!(s.sum_from(0), 10);
        assert_eq!(s.sum_from(bucket_of(5_000)), 9);
        assert_eq!(s.sum_from(bucket_of(5_001) + 1), 2);
        assert_eq!(s.sum_from(u32::MAX), 0);
        assert_eq!(s.bucket_at_rank(2), Some(bucket_of(5_000)));
        assert_eq!(s.bucket_at_rank(10), Some(bucket_of(3_000_000)));
        assert_eq!(s.bucket_at_rank(11), None);
    }

    #[test]
    fn thread_names_resolved_late() {
        let mut names = NameTables::default();
        names.comms.insert(77, "stress".into());
        assert_eq!(current_name("thread:pid77", &names), "thread:stress");
        assert_eq!(current_name("thread:pid78", &names), "thread:pid78");
        assert_eq!(current_name("thread:pid+77", &names), "thread:pid+77");
        assert_eq!(current_name("irq:11:virtio0", &names), "irq:11:virtio0");
    }
}
