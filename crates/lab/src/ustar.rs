//! Reading the tar (ustar, as busybox writes it) a guest sends home. Only regular files are
//! taken, by a relative path with no `..` (no path from the guest reaches outside the directory
//! the host chose), and every size is bounded before anything is allocated.

use crate::{LabError, Result};

/// Regular files of an archive: (relative path, contents). `max_total` bounds the sum of sizes.
pub fn files(buf: &[u8], max_total: u64) -> Result<Vec<(String, Vec<u8>)>> {
    let bad = |m: &str| LabError::Failed(format!("the guest's results archive: {m}"));
    let mut out = Vec::new();
    let mut off = 0usize;
    let mut total = 0u64;
    let mut long_name: Option<String> = None;
    while off + 512 <= buf.len() {
        let h = &buf[off..off + 512];
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let field = |a: usize, b: usize| {
            let s = &h[a..b];
            let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
            String::from_utf8_lossy(&s[..end]).trim().to_string()
        };
        let size = u64::from_str_radix(&field(124, 136), 8)
            .map_err(|_| bad("a header's size is not octal"))?;
        let typ = h[156];
        let mut name = field(0, 100);
        let prefix = field(345, 500);
        if !prefix.is_empty() {
            name = format!("{prefix}/{name}");
        }
        if let Some(l) = long_name.take() {
            name = l;
        }
        let start = off + 512;
        let padded = size.div_ceil(512) * 512;
        if size > (buf.len() - start) as u64 {
            return Err(bad("truncated (a file runs past the end)"));
        }
        let body = &buf[start..start + size as usize];
        match typ {
            b'0' | 0 => {
                total += size;
                if total > max_total {
                    return Err(bad(&format!("more than {max_total} bytes of files")));
                }
                if let Some(rel) = safe_relative(&name) {
                    out.push((rel, body.to_vec()));
                }
            }
            // GNU long name: the next header's name.
            b'L' => {
                let end = body.iter().position(|&c| c == 0).unwrap_or(body.len());
                long_name = Some(String::from_utf8_lossy(&body[..end]).to_string());
            }
            _ => {}
        }
        off = (start as u64 + padded).min(buf.len() as u64) as usize;
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
        h[257..263].copy_from_slice(b"ustar\0");
        h
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
        t.extend(vec![0u8; 512]);
        assert!(matches!(files(&t, 1 << 20), Err(LabError::Failed(m)) if m.contains("truncated")));
        let t = entry("a", &[1u8; 2000], b'0');
        assert!(
            matches!(files(&t, 1000), Err(LabError::Failed(m)) if m.contains("more than 1000"))
        );
        assert!(files(b"short", 10).unwrap().is_empty());
    }
}
