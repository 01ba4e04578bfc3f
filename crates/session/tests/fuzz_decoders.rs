//! Seeded mutational fuzzing of every decoder of outside input (docs/reliability.md).
//!
//! Each format has a committed seed corpus (`tests/corpus/<format>/`, real files written by
//! rtscope and cyclictest). A case takes a seed and stacks 1–4 mutations: bit flips, interesting
//! bytes, deleted/inserted/duplicated ranges, truncation, a number replaced by a huge one
//! (2^32, 2^64−1, 10^20, 1e308, −1…), a huge LEB128 varint written over binary data; `.rtt` cases
//! get their section checksums recomputed half of the time so that the mutation reaches the
//! section decoders instead of stopping at the checksum. The decoder must return a value or an
//! error — never panic — and the whole run stays within an address-space limit (RLIMIT_AS) and a
//! peak RSS of 256 MiB: a decoder that believes a claimed size aborts the process or fails the
//! RSS check.
//!
//! Cases per format: `RTSCOPE_FUZZ_CASES` (default 2000; formats whose seeds average more than
//! 100 KB get fewer, about 200 MB of input decoded, at least 200 cases). The rtsl SQLite reader has its own
//! fuzzer (rtscope-store, `fuzz_rtsl_tables`).

use std::path::{Path, PathBuf};

use rtscope_model::rng::Rng;

type Decode = fn(&[u8]) -> Result<(), String>;

fn text(b: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(b).map_err(|e| e.to_string())
}

fn d_rtt(b: &[u8]) -> Result<(), String> {
    rtscope_trace::rtt::decode(b)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn d_ct_text(b: &[u8]) -> Result<(), String> {
    rtscope_report::cyclictest::parse_histogram(text(b)?)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn d_ct_verbose(b: &[u8]) -> Result<(), String> {
    rtscope_report::cyclictest::parse_verbose(text(b)?)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn d_ct_summary(b: &[u8]) -> Result<(), String> {
    rtscope_report::cyclictest::parse_summary(text(b)?)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn d_ct_json(b: &[u8]) -> Result<(), String> {
    rtscope_report::cyclictest::parse_json(text(b)?)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn d_record(b: &[u8]) -> Result<(), String> {
    rtscope_report::json::parse_run_record(text(b)?)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn d_set_json(b: &[u8]) -> Result<(), String> {
    rtscope_bench::taskset::parse_set(text(b)?, false).map(|_| ())
}
fn d_set_toml(b: &[u8]) -> Result<(), String> {
    rtscope_bench::taskset::parse_set(text(b)?, true).map(|_| ())
}
fn d_rtapp(b: &[u8]) -> Result<(), String> {
    rtscope_bench::taskset::rtapp::parse(text(b)?, &[0, 1])
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn d_campaign(b: &[u8]) -> Result<(), String> {
    rtscope_store::campaign::Campaign::parse("fuzz.toml", text(b)?)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
fn d_bound(b: &[u8]) -> Result<(), String> {
    rtscope_analysis::bound::json::parse(text(b)?, "fuzz.json")
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn formats() -> Vec<(&'static str, Decode)> {
    vec![
        ("rtt", d_rtt as Decode),
        ("cyclictest-text", d_ct_text as Decode),
        ("cyclictest-json", d_ct_json as Decode),
        ("cyclictest-verbose", d_ct_verbose as Decode),
        ("cyclictest-summary", d_ct_summary as Decode),
        ("run-record", d_record as Decode),
        ("taskset-json", d_set_json as Decode),
        ("taskset-toml", d_set_toml as Decode),
        ("rtapp", d_rtapp as Decode),
        ("campaign", d_campaign as Decode),
        ("bound-input", d_bound as Decode),
    ]
}

const HUGE: &[&str] = &[
    "4294967296",
    "4294967346",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999",
    "9223372036854775807",
    "-1",
    "0",
    "1e308",
    "4000000000",
    "100000000",
];

fn mutate(rng: &mut Rng, d: &mut Vec<u8>, binary: bool) {
    if d.is_empty() {
        d.push(b'0');
    }
    let at = rng.index(d.len());
    match rng.index(8) {
        0 => d[at] ^= 1 << rng.index(8),
        1 => {
            const I: &[u8] = &[
                0, 0xff, 0x7f, 0x80, b'9', b'-', b'"', b'{', b'}', b'[', b'\n',
            ];
            d[at] = I[rng.index(I.len())];
        }
        2 => {
            let n = (1 + rng.index(16)).min(d.len() - at);
            d.drain(at..at + n);
        }
        3 => {
            for _ in 0..1 + rng.index(16) {
                let b = rng.next_u64() as u8;
                d.insert(at, b);
            }
        }
        4 => {
            let n = (1 + rng.index(64)).min(d.len() - at);
            let chunk: Vec<u8> = d[at..at + n].to_vec();
            let to = rng.index(d.len());
            d.splice(to..to, chunk);
        }
        5 => d.truncate(at),
        6 if !binary => {
            // A number near `at` becomes a huge (or negative, or float) one.
            if let Some(s) = (at..d.len()).find(|&i| d[i].is_ascii_digit()) {
                let e = (s..d.len())
                    .find(|&i| !d[i].is_ascii_digit())
                    .unwrap_or(d.len());
                let h = HUGE[rng.index(HUGE.len())].as_bytes().to_vec();
                d.splice(s..e, h);
            }
        }
        _ => {
            // A LEB128 varint of a huge value over binary data (counts, lengths).
            let mut v = [1u64 << 40, u64::MAX, 1 << 32, 1 << 20][rng.index(4)];
            let mut i = at;
            loop {
                let byte = (v as u8 & 0x7f) | if v >= 0x80 { 0x80 } else { 0 };
                if i < d.len() {
                    d[i] = byte;
                } else {
                    d.push(byte);
                }
                i += 1;
                v >>= 7;
                if v == 0 {
                    break;
                }
            }
        }
    }
}

/// Recompute every section's CRC of an `.rtt` image (layout in docs/trace-format.md: 16-byte
/// header, then tag(4) | len u64 | body | crc32(body)).
fn fix_rtt_crcs(d: &mut [u8]) {
    let mut pos = 16usize;
    while pos + 12 <= d.len() {
        let len = u64::from_le_bytes(d[pos + 4..pos + 12].try_into().unwrap_or([0; 8]));
        let body = pos + 12;
        let Some(end) = usize::try_from(len).ok().and_then(|l| body.checked_add(l)) else {
            return;
        };
        if end + 4 > d.len() {
            return;
        }
        let c = rtscope_trace::rtt::crc32(&d[body..end]);
        d[end..end + 4].copy_from_slice(&c.to_le_bytes());
        pos = end + 4;
    }
}

fn corpus(name: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.is_file() && !p.ends_with("README.md"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "corpus {} is empty", dir.display());
    files
        .iter()
        .map(|p| std::fs::read(p).expect("corpus file"))
        .collect()
}

fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Address space allowed on top of what the process maps at the start, bytes.
const AS_HEADROOM: u64 = 1 << 30;
/// Peak RSS allowed for the whole run, KiB.
const RSS_CEILING_KIB: u64 = 256 * 1024;

#[test]
fn every_decoder_survives_mutated_inputs() {
    let cases: usize = std::env::var("RTSCOPE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    // An allocation a decoder sizes from a claim fails (and aborts) instead of being granted
    // lazily by overcommit.
    let limit = status_kib("VmSize:") * 1024 + AS_HEADROOM;
    let rl = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: plain setrlimit on this process.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &rl) }, 0);
    let fail_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    let mut panics = Vec::new();
    for (fi, (name, decode)) in formats().into_iter().enumerate() {
        let seeds = corpus(name);
        let binary = name == "rtt";
        // Every seed decodes: the corpus is valid input.
        for (i, s) in seeds.iter().enumerate() {
            if let Err(e) = decode(s) {
                panic!("{name} seed {i} does not decode: {e}");
            }
        }
        // Large seeds (a traced run's record) get fewer cases: about the same bytes decoded per
        // format (200 MB), so the suite's time does not hinge on one corpus file.
        let avg = seeds.iter().map(Vec::len).sum::<usize>() / seeds.len();
        let cases = cases.min(((200usize << 20) / avg.max(1)).max(200));
        let mut rng =
            Rng::new(0x9E37_79B9_7F4A_7C15 ^ (fi as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        let (mut ok, mut rejected) = (0usize, 0usize);
        for case in 0..cases {
            let mut d = seeds[rng.index(seeds.len())].clone();
            for _ in 0..1 + rng.index(4) {
                mutate(&mut rng, &mut d, binary);
            }
            if binary && rng.index(2) == 0 {
                fix_rtt_crcs(&mut d);
            }
            match std::panic::catch_unwind(|| decode(&d)) {
                Ok(Ok(())) => ok += 1,
                Ok(Err(e)) => {
                    rejected += 1;
                    assert!(!e.is_empty(), "{name} case {case}: an empty error");
                }
                Err(_) => {
                    let _ = std::fs::create_dir_all(&fail_dir);
                    let p = fail_dir.join(format!("{name}-{case}.bin"));
                    let _ = std::fs::write(&p, &d);
                    panics.push(format!(
                        "{name} case {case} panicked (input: {})",
                        p.display()
                    ));
                }
            }
        }
        println!(
            "fuzz {name}: {cases} cases from {} seeds, {ok} decoded, {rejected} rejected",
            seeds.len()
        );
    }
    let hwm = status_kib("VmHWM:");
    println!(
        "fuzz: peak RSS {} MiB (ceiling {} MiB), address space limit {} MiB",
        hwm / 1024,
        RSS_CEILING_KIB / 1024,
        limit >> 20
    );
    assert!(panics.is_empty(), "{}", panics.join("\n"));
    assert!(hwm < RSS_CEILING_KIB, "peak RSS {hwm} KiB");
}
