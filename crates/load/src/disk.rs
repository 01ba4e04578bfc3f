//! `disk`: a bonnie++-like loop on a scratch file: sequential write, sequential read and random
//! 4 KiB reads with O_DIRECT (paper §3.3 item 2: direct I/O bypasses the page cache, so every
//! access is a disk request and a completion interrupt), then create/stat/unlink of small files.
//! Where O_DIRECT is refused (EINVAL, e.g. some tmpfs), buffered I/O plus
//! POSIX_FADV_DONTNEED is used and the report says so.

use crate::shm::Slot;
use std::convert::Infallible;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

pub(crate) const C_WRITE_BYTES: usize = 0;
pub(crate) const C_READ_BYTES: usize = 1;
pub(crate) const C_RANDOM_READS: usize = 2;
pub(crate) const C_FILE_OPS: usize = 3;
/// 1 when O_DIRECT was refused and buffered I/O is used.
pub(crate) const C_BUFFERED: usize = 4;

const CHUNK: usize = 1 << 20;
const ALIGN: usize = 4096;
const SEGMENT: u64 = 64 << 20;
const RANDOM_READS_PER_SEGMENT: u64 = 256;
const SMALL_FILES_PER_SEGMENT: usize = 32;

fn die(code: i32) -> Infallible {
    rtscope_sys::process::exit_now(code)
}

fn open(path: &Path, direct: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600);
    if direct {
        rtscope_sys::fs::direct(&mut o);
    }
    o.open(path)
}

pub(crate) fn run(slot: &Slot, dir: &Path, disk_bytes: u64) -> Infallible {
    let path = dir.join("seq.dat");
    let (file, direct) = match open(&path, true) {
        Ok(f) => (f, true),
        Err(e) if rtscope_sys::is_einval(&e) => match open(&path, false) {
            Ok(f) => (f, false),
            Err(_) => return die(2),
        },
        Err(_) => return die(2),
    };
    slot.set(C_BUFFERED, u64::from(!direct));
    // O_DIRECT needs the buffer, offset and length aligned to the logical block size; 4 KiB
    // covers 512-byte and 4K-sector devices.
    let mut raw = vec![0xa5u8; CHUNK + ALIGN];
    let off = raw.as_ptr().align_offset(ALIGN);
    let buf = &mut raw[off..off + CHUNK];
    let size = (disk_bytes / ALIGN as u64).max(1) * ALIGN as u64;
    let drop_cache = || {
        if !direct {
            rtscope_sys::fs::drop_cache(&file);
        }
    };
    let mut x: u64 = 0x2545_F491_4F6C_DD1D ^ crate::sys::getpid() as u64;
    let blocks_total = size / ALIGN as u64;
    let mut written_end = 0u64; // random reads only touch data that exists
    loop {
        // The file is processed in segments so that every phase (sequential write and read,
        // seeks, metadata) recurs every fraction of a second: the load is stationary over any
        // measurement window instead of being all writes for the first seconds.
        let mut seg = 0u64;
        while seg < size {
            let seg_end = (seg + SEGMENT).min(size);
            let mut pos = seg;
            while pos < seg_end {
                let n = CHUNK.min((seg_end - pos) as usize);
                if file.write_all_at(&buf[..n], pos).is_err() {
                    return die(3);
                }
                pos += n as u64;
                slot.add(C_WRITE_BYTES, n as u64);
            }
            if file.sync_data().is_err() {
                return die(3);
            }
            drop_cache();
            written_end = written_end.max(seg_end);
            pos = seg;
            while pos < seg_end {
                let n = CHUNK.min((seg_end - pos) as usize);
                if file.read_exact_at(&mut buf[..n], pos).is_err() {
                    return die(4);
                }
                pos += n as u64;
                slot.add(C_READ_BYTES, n as u64);
            }
            drop_cache();
            // Random 4 KiB reads (bonnie++'s seeks) over everything written so far.
            let blocks = (written_end / ALIGN as u64).clamp(1, blocks_total.max(1));
            for _ in 0..RANDOM_READS_PER_SEGMENT {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let b = ((x as u128 * blocks as u128) >> 64) as u64;
                if file
                    .read_exact_at(&mut buf[..ALIGN], b * ALIGN as u64)
                    .is_err()
                {
                    return die(4);
                }
                slot.add(C_RANDOM_READS, 1);
            }
            // Metadata: create, stat, unlink (bonnie++'s small-file phase).
            for i in 0..SMALL_FILES_PER_SEGMENT {
                let p = dir.join(format!("f{i:04}"));
                if File::create(&p).is_err() || std::fs::metadata(&p).is_err() {
                    return die(5);
                }
                if std::fs::remove_file(&p).is_err() {
                    return die(5);
                }
                slot.add(C_FILE_OPS, 3);
            }
            seg = seg_end;
        }
    }
}
