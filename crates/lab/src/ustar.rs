//! Reading the tar (ustar, as busybox writes it) a guest sends home. Only regular files are
//! taken, by a relative path with no `..` (no path from the guest reaches outside the directory
//! the host chose), and every size is bounded before anything is allocated.

use crate::{LabError, Result};
use std::io::Read;

/// Regular files of an archive: (relative path, contents). `max_total` bounds the sum of sizes.
/// The archive is read by the `tar` crate (ustar and GNU headers, long names, checksums); a
/// trailing piece shorter than one 512-byte block is ignored, as tar readers do.
pub fn files(buf: &[u8], max_total: u64) -> Result<Vec<(String, Vec<u8>)>> {
    let bad = |m: &str| LabError::Failed(format!("the guest's results archive: {m}"));
    let whole = &buf[..buf.len() / 512 * 512];
    let mut archive = tar::Archive::new(whole);
    let mut out = Vec::new();
    let mut total = 0u64;
    for entry in archive.entries().map_err(|e| bad(&e.to_string()))? {
        let mut entry = entry.map_err(|e| bad(&e.to_string()))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let size = entry.size();
        // Bounded before anything is allocated: the header's size against the bytes left.
        let left = whole.len() as u64 - entry.raw_file_position().min(whole.len() as u64);
        if size > left {
            return Err(bad("truncated (a file runs past the end)"));
        }
        total += size;
        if total > max_total {
            return Err(bad(&format!("more than {max_total} bytes of files")));
        }
        let name = entry
            .path()
            .map_err(|e| bad(&e.to_string()))?
            .to_string_lossy()
            .into_owned();
        let mut body = Vec::with_capacity(size as usize);
        entry
            .read_to_end(&mut body)
            .map_err(|e| bad(&e.to_string()))?;
        if let Some(rel) = safe_relative(&name) {
            out.push((rel, body));
        }
    }
    Ok(out)
}

/// `./a/b` → `a/b`; absolute paths lose their root; anything with `..` is refused.
pub fn safe_relative(name: &str) -> Option<String> {
    let parts: Vec<&str> = name
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    (!parts.is_empty() && !parts.contains(&"..")).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, size: usize, typ: u8) -> Vec<u8> {
        let mut h = vec![0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        let s = format!("{size:011o}\0");
        h[124..136].copy_from_slice(s.as_bytes());
        h[156] = typ;
        // The GNU magic and version, as busybox tar writes them.
        h[257..265].copy_from_slice(b"ustar  \0");
        checksum(&mut h);
        h
    }

    /// The header checksum (the byte sum with the field itself as spaces), which tar readers
    /// check.
    fn checksum(h: &mut [u8]) {
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| b as u32).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    }

    fn entry(name: &str, body: &[u8], typ: u8) -> Vec<u8> {
        let mut v = header(name, body.len(), typ);
        v.extend_from_slice(body);
        v.resize(v.len().div_ceil(512) * 512, 0);
        v
    }

    #[test]
    fn regular_files_by_safe_relative_path() {
        let mut t = entry("./", b"", b'5');
        t.extend(entry("./data/rtscope/results.db", b"SQLite", b'0'));
        t.extend(entry("../../etc/passwd", b"x", b'0'));
        t.extend(entry("/abs/x", b"y", b'0'));
        t.extend(vec![0u8; 1024]);
        let f = files(&t, 1 << 20).unwrap();
        assert_eq!(
            f,
            vec![
                ("data/rtscope/results.db".to_string(), b"SQLite".to_vec()),
                ("abs/x".to_string(), b"y".to_vec())
            ]
        );
    }

    #[test]
    fn sizes_are_bounded_before_allocation() {
        // A header claiming 8 GiB in a 1 KiB buffer.
        let mut t = header("big", 0, b'0');
        t[124..136].copy_from_slice(b"77777777777\0");
        checksum(&mut t[..512]);
        t.extend(vec![0u8; 512]);
        assert!(matches!(files(&t, 1 << 20), Err(LabError::Failed(m)) if m.contains("truncated")));
        let t = entry("a", &[1u8; 2000], b'0');
        assert!(
            matches!(files(&t, 1000), Err(LabError::Failed(m)) if m.contains("more than 1000"))
        );
        assert!(files(b"short", 10).unwrap().is_empty());
    }

    #[test]
    fn gnu_long_names() {
        // A GNU long-name header ('L', "././@LongLink") names the entry after it.
        let long = format!("data/{}/results.json", "d".repeat(120));
        let mut name = long.clone().into_bytes();
        name.push(0);
        let mut t = entry("././@LongLink", &name, b'L');
        t.extend(entry("data/ddd", b"{}", b'0'));
        t.extend(vec![0u8; 1024]);
        assert_eq!(files(&t, 100).unwrap(), vec![(long, b"{}".to_vec())]);
    }

    /// An archive written by the host's tar (GNU tar: long names, a directory, a symlink) reads
    /// back as its regular files.
    #[test]
    fn host_tar_reads_back() {
        let d = tempfile::tempdir().unwrap();
        let deep = d.path().join("out").join("x".repeat(110));
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("run.json"), b"{\"a\":1}").unwrap();
        std::fs::write(d.path().join("out/t.rtt"), vec![9u8; 1500]).unwrap();
        std::os::unix::fs::symlink("t.rtt", d.path().join("out/link")).unwrap();
        let Ok(o) = std::process::Command::new("tar")
            .arg("-C")
            .arg(d.path())
            .args(["-cf", "-", "out"])
            .output()
        else {
            eprintln!("no tar on this host: skipped");
            return;
        };
        assert!(o.status.success());
        let mut got = files(&o.stdout, 1 << 20).unwrap();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("out/t.rtt".to_string(), vec![9u8; 1500]),
                (
                    format!("out/{}/run.json", "x".repeat(110)),
                    b"{\"a\":1}".to_vec()
                ),
            ]
        );
    }
}
