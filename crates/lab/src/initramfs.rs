//! The guest's userland as an uncompressed cpio (`newc`, the format the kernel unpacks into its
//! rootfs; see the kernel's Documentation/driver-api/early-userspace/buffer-format.rst).
//! Uncompressed because under TCG the guest's decompressor is the slow part of a boot; QEMU
//! loads the archive into guest memory directly.
//!
//! It holds busybox (static), the rtscope binary, the shared libraries `ldd` lists for them at
//! their own paths, and an `/init` script.

use crate::{io, LabError, Result};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Default)]
pub struct Archive {
    /// Path inside the archive (no leading '/') → (mode, contents).
    files: BTreeMap<String, (u32, Entry)>,
}

enum Entry {
    Data(Vec<u8>),
    Host(PathBuf),
    Dir,
    Symlink(String),
}

impl Archive {
    pub fn new() -> Archive {
        let mut a = Archive::default();
        for d in [
            "bin", "dev", "proc", "sys", "tmp", "etc", "out", "lib", "lib64", "usr", "usr/lib",
            "var",
        ] {
            a.dir(d);
        }
        // Scratch space of the disk and io loads (`--scratch-dir` defaults to /var/tmp).
        a.files.insert("var/tmp".into(), (0o041777, Entry::Dir));
        a
    }

    pub fn dir(&mut self, path: &str) {
        let p = path.trim_start_matches('/').to_string();
        // Every parent first.
        let mut acc = String::new();
        for part in p.split('/').filter(|s| !s.is_empty()) {
            if !acc.is_empty() {
                acc.push('/');
            }
            acc.push_str(part);
            self.files
                .entry(acc.clone())
                .or_insert((0o040755, Entry::Dir));
        }
    }

    fn parent(&mut self, path: &str) {
        if let Some((d, _)) = path.rsplit_once('/') {
            self.dir(d);
        }
    }

    pub fn data(&mut self, path: &str, mode: u32, bytes: Vec<u8>) {
        let p = path.trim_start_matches('/').to_string();
        self.parent(&p);
        self.files.insert(p, (0o100000 | mode, Entry::Data(bytes)));
    }

    pub fn host_file(&mut self, path: &str, mode: u32, src: &Path) {
        let p = path.trim_start_matches('/').to_string();
        self.parent(&p);
        self.files
            .insert(p, (0o100000 | mode, Entry::Host(src.to_path_buf())));
    }

    pub fn symlink(&mut self, path: &str, target: &str) {
        let p = path.trim_start_matches('/').to_string();
        self.parent(&p);
        self.files
            .insert(p, (0o120777, Entry::Symlink(target.to_string())));
    }

    /// A host executable at `path` in the guest, with the libraries ldd lists at their paths.
    pub fn executable(&mut self, path: &str, src: &Path) -> Result<()> {
        self.host_file(path, 0o755, src);
        for lib in shared_libraries(src)? {
            let real = std::fs::canonicalize(&lib).unwrap_or_else(|_| lib.clone());
            let p = lib.to_string_lossy().to_string();
            if !self.files.contains_key(p.trim_start_matches('/')) {
                self.host_file(&p, 0o755, &real);
            }
        }
        Ok(())
    }

    /// Write the archive. Entries in path order (parents before children), then the trailer.
    pub fn write_to(&self, out: &mut impl Write) -> Result<u64> {
        let mut w = Counting { w: out, n: 0 };
        for (ino, (path, (mode, e))) in self.files.iter().enumerate() {
            let body: std::borrow::Cow<[u8]> = match e {
                Entry::Data(b) => b.into(),
                Entry::Host(p) => std::fs::read(p)
                    .map_err(io(format!("reading {}", p.display())))?
                    .into(),
                Entry::Dir => (&[][..]).into(),
                Entry::Symlink(t) => t.as_bytes().into(),
            };
            header(&mut w, ino as u32 + 1, *mode, body.len() as u32, path)?;
            w.write_all(&body).map_err(io("writing the initramfs"))?;
            pad(&mut w)?;
        }
        header(&mut w, 0, 0, 0, "TRAILER!!!")?;
        Ok(w.n)
    }
}

struct Counting<'a, W: Write> {
    w: &'a mut W,
    n: u64,
}

impl<W: Write> Write for Counting<'_, W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.w.write(b)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

fn pad<W: Write>(w: &mut Counting<'_, W>) -> Result<()> {
    let n = (4 - (w.n % 4) as usize) % 4;
    w.write_all(&[0u8; 3][..n])
        .map_err(io("writing the initramfs"))
}

fn header<W: Write>(
    w: &mut Counting<'_, W>,
    ino: u32,
    mode: u32,
    size: u32,
    name: &str,
) -> Result<()> {
    let nlink = if mode & 0o170000 == 0o040000 { 2 } else { 1 };
    let h = format!(
        "070701{ino:08x}{mode:08x}{:08x}{:08x}{nlink:08x}{:08x}{size:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
        0, 0, 0, 0, 0, 0, 0, name.len() + 1, 0
    );
    w.write_all(h.as_bytes())
        .and_then(|_| w.write_all(name.as_bytes()))
        .and_then(|_| w.write_all(&[0]))
        .map_err(io("writing the initramfs"))?;
    pad(w)
}

/// The shared libraries of a dynamically linked executable (`ldd`), none for a static one.
pub fn shared_libraries(exe: &Path) -> Result<Vec<PathBuf>> {
    let o = Command::new("ldd")
        .arg(exe)
        .output()
        .map_err(|e| LabError::Missing(format!("ldd (libc-bin) is needed: {e}")))?;
    let text = String::from_utf8_lossy(&o.stdout);
    Ok(parse_ldd(&text))
}

/// `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)` and `/lib64/ld-linux-x86-64.so.2 (0x…)`
/// → the absolute paths; `linux-vdso.so.1` and "not a dynamic executable" → nothing.
pub fn parse_ldd(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, r)) => r.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_lines() {
        let t = "\tlinux-vdso.so.1 (0x00007ffc)\n\tlibelf.so.1 => /lib/x86_64-linux-gnu/libelf.so.1 (0x1)\n\t/lib64/ld-linux-x86-64.so.2 (0x2)\n";
        assert_eq!(
            parse_ldd(t),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libelf.so.1"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
        assert!(parse_ldd("\tnot a dynamic executable\n").is_empty());
    }

    /// The archive read back with the host's cpio: names, modes, contents.
    #[test]
    fn newc_archive_reads_back() {
        let mut a = Archive::new();
        a.data("init", 0o755, b"#!/bin/sh\necho hi\n".to_vec());
        a.data("etc/deep/x.txt", 0o644, b"abc".to_vec());
        a.symlink("bin/sh", "busybox");
        let mut buf = Vec::new();
        let n = a.write_to(&mut buf).unwrap();
        assert_eq!(n as usize, buf.len());
        assert_eq!(buf.len() % 4, 0);
        assert!(buf.starts_with(b"070701"));
        // Parse it back by the format's own rules.
        let mut off = 0;
        let mut names = Vec::new();
        loop {
            let h = std::str::from_utf8(&buf[off..off + 110]).unwrap();
            let field = |i: usize| u32::from_str_radix(&h[6 + 8 * i..14 + 8 * i], 16).unwrap();
            let (mode, size, namesize) = (field(1), field(6), field(11));
            let name =
                std::str::from_utf8(&buf[off + 110..off + 110 + namesize as usize - 1]).unwrap();
            off = (off + 110 + namesize as usize).div_ceil(4) * 4;
            let body = &buf[off..off + size as usize];
            off = (off + size as usize).div_ceil(4) * 4;
            if name == "TRAILER!!!" {
                break;
            }
            if name == "etc/deep/x.txt" {
                assert_eq!(body, b"abc");
                assert_eq!(mode, 0o100644);
            }
            if name == "bin/sh" {
                assert_eq!(body, b"busybox");
                assert_eq!(mode & 0o170000, 0o120000);
            }
            names.push(name.to_string());
        }
        assert_eq!(off, buf.len());
        let pos = |n: &str| names.iter().position(|x| x == n).unwrap();
        assert!(pos("etc") < pos("etc/deep") && pos("etc/deep") < pos("etc/deep/x.txt"));
        assert!(names.contains(&"init".to_string()) && names.contains(&"out".to_string()));
    }
}
