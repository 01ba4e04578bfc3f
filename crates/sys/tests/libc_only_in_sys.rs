//! libc is called from `sys` only (and the eBPF glue): every other crate goes through
//! `rtscope_sys`'s typed functions. Fails listing each `libc::`, `use libc` or `extern crate libc`
//! found elsewhere in crates/*/src.

use std::path::{Path, PathBuf};

/// Files allowed to name libc, and why.
const ALLOWED: &[(&str, &str)] = &[
    // The eBPF glue: the libbpf ring-buffer and perf-event calls of the BPF loader.
    ("crates/trace/src/bpf.rs", "eBPF glue"),
];

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn libc_only_in_sys() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for c in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        if c.file_name() == "sys" {
            continue;
        }
        rs_files(&c.path().join("src"), &mut files);
    }
    assert!(
        files.len() > 50,
        "crates/*/src not found from {}",
        root.display()
    );
    let mut found = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if ALLOWED.iter().any(|(a, _)| rel.starts_with(a)) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, l) in text.lines().enumerate() {
            let code = l.split("//").next().unwrap_or("");
            if code.contains("libc::")
                || code.contains("use libc")
                || code.contains("extern crate libc")
            {
                found.push(format!("{rel}:{}: {}", i + 1, l.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "libc used outside crates/sys ({} lines); call rtscope_sys instead:\n{}",
        found.len(),
        found.join("\n")
    );
}
