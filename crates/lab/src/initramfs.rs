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
    /// Each entry's header comes from the `cpio` crate's newc builder: inode numbers 1.. in
    /// that order, owner root, mtime 0, nlink 2 for a directory and 1 otherwise.
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
            // newc's sizes are 32-bit.
            let size = u32::try_from(body.len()).map_err(|_| {
                LabError::Failed(format!(
                    "initramfs: {path} is {} bytes, more than newc's 4 GiB limit",
                    body.len()
                ))
            })?;
            let nlink = if mode & 0o170000 == 0o040000 { 2 } else { 1 };
            let mut f = cpio::newc::Builder::new(path)
                .ino(ino as u32 + 1)
                .mode(*mode)
                .nlink(nlink)
                .write(&mut w, size);
            f.write_all(&body).map_err(io("writing the initramfs"))?;
            f.finish().map_err(io("writing the initramfs"))?;
        }
        cpio::newc::trailer(&mut w).map_err(io("writing the initramfs"))?;
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

    /// The bytes, field by field, as the kernel's initramfs unpacker (init/initramfs.c) reads
    /// them: per entry a 110-byte header `070701` + 13 eight-digit hex fields (ino, mode, uid,
    /// gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor, namesize, check),
    /// the NUL-terminated name padded to 4, the data padded to 4; then `TRAILER!!!` (ino 0, mode
    /// 0, nlink 1). Directories have nlink 2, everything else 1; inodes count from 1 in path
    /// order; owner, times and devices are 0.
    #[test]
    fn newc_bytes_follow_the_kernel_format() {
        let mut a = Archive::new();
        a.data("init", 0o755, b"#!/bin/sh\n".to_vec());
        a.data("etc/x", 0o600, vec![7u8; 5]);
        a.symlink("bin/sh", "busybox");
        let mut got = Vec::new();
        a.write_to(&mut got).unwrap();

        let mut want = Vec::new();
        let pad = |v: &mut Vec<u8>| v.resize(v.len().div_ceil(4) * 4, 0);
        let entry = |v: &mut Vec<u8>, ino: u32, mode: u32, name: &str, body: &[u8]| {
            let nlink = if mode & 0o170000 == 0o040000 { 2 } else { 1 };
            let fields = [
                ino,
                mode,
                0,
                0,
                nlink,
                0,
                body.len() as u32,
                0,
                0,
                0,
                0,
                name.len() as u32 + 1,
                0,
            ];
            v.extend_from_slice(b"070701");
            for f in fields {
                v.extend_from_slice(format!("{f:08x}").as_bytes());
            }
            v.extend_from_slice(name.as_bytes());
            v.push(0);
            pad(v);
            v.extend_from_slice(body);
            pad(v);
        };
        let entries: Vec<(&str, u32, &[u8])> = vec![
            ("bin", 0o040755, b""),
            ("bin/sh", 0o120777, b"busybox"),
            ("dev", 0o040755, b""),
            ("etc", 0o040755, b""),
            ("etc/x", 0o100600, &[7u8; 5]),
            ("init", 0o100755, b"#!/bin/sh\n"),
            ("lib", 0o040755, b""),
            ("lib64", 0o040755, b""),
            ("out", 0o040755, b""),
            ("proc", 0o040755, b""),
            ("sys", 0o040755, b""),
            ("tmp", 0o040755, b""),
            ("usr", 0o040755, b""),
            ("usr/lib", 0o040755, b""),
            ("var", 0o040755, b""),
            ("var/tmp", 0o041777, b""),
        ];
        for (i, (name, mode, body)) in entries.iter().enumerate() {
            entry(&mut want, i as u32 + 1, *mode, name, body);
        }
        entry(&mut want, 0, 0, "TRAILER!!!", b"");
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        );
        assert_eq!(got, want);
    }
}
