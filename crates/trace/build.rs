//! Builds the eBPF object and its Rust skeleton.
//!
//! `vmlinux.h` (kernel type definitions for CO-RE) is generated from the build machine's BTF with
//! `bpftool btf dump file /sys/kernel/btf/vmlinux format c`, unless `RTSCOPE_VMLINUX_H` names a
//! pre-generated header (for building on a machine without kernel BTF). CO-RE relocations make the
//! object portable to other kernels that have BTF.
//! Needs: clang (>= 11), bpftool, libelf-dev, zlib1g-dev, pkg-config.

use std::env;
use std::path::PathBuf;
use std::process::Command;

const SRC: &str = "src/bpf/rtscope.bpf.c";
/// The kernel half of PRAcTISE: fentry/fexit timing of cpudl_*/cpupri_* (src/kfuncs.rs).
const KFUNCS_SRC: &str = "src/bpf/kfuncs.bpf.c";
/// ECRTS'20 Table 1's thread variables reduced in the kernel from preemptirq tracepoints
/// (src/preemptirq.rs).
const PREEMPTIRQ_SRC: &str = "src/bpf/preemptirq.bpf.c";
/// heursch-2001 Table 3's time in the scheduler: scheduler entry → sched_switch
/// (src/schedtime.rs).
const SCHEDTIME_SRC: &str = "src/bpf/schedtime.bpf.c";
/// `rtscope watch`: the scheduling events of one process's threads, filtered on its TGID
/// (src/watch.rs).
const WATCH_SRC: &str = "src/bpf/watch.bpf.c";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let vmlinux = out.join("vmlinux.h");
    println!("cargo:rerun-if-changed={SRC}");
    println!("cargo:rerun-if-changed={KFUNCS_SRC}");
    println!("cargo:rerun-if-changed={PREEMPTIRQ_SRC}");
    println!("cargo:rerun-if-changed={SCHEDTIME_SRC}");
    println!("cargo:rerun-if-changed={WATCH_SRC}");
    println!("cargo:rerun-if-env-changed=RTSCOPE_VMLINUX_H");
    if let Some(h) = env::var_os("RTSCOPE_VMLINUX_H") {
        std::fs::copy(&h, &vmlinux).unwrap_or_else(|e| {
            panic!(
                "RTSCOPE_VMLINUX_H={}: cannot copy: {e}",
                PathBuf::from(&h).display()
            )
        });
    } else {
        let btf = "/sys/kernel/btf/vmlinux";
        let o = Command::new("bpftool")
            .args(["btf", "dump", "file", btf, "format", "c"])
            .output()
            .unwrap_or_else(|e| {
                panic!("running bpftool (apt install bpftool) to generate vmlinux.h: {e}")
            });
        if !o.status.success() {
            panic!(
                "bpftool btf dump file {btf} failed ({}): {}; set RTSCOPE_VMLINUX_H to a \
                 pre-generated vmlinux.h",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::fs::write(&vmlinux, &o.stdout).expect("writing vmlinux.h to OUT_DIR");
    }
    for (src, skel) in [
        (SRC, "rtscope.skel.rs"),
        (KFUNCS_SRC, "kfuncs.skel.rs"),
        (PREEMPTIRQ_SRC, "preemptirq.skel.rs"),
        (SCHEDTIME_SRC, "schedtime.skel.rs"),
        (WATCH_SRC, "watch.skel.rs"),
    ] {
        libbpf_cargo::SkeletonBuilder::new()
            .source(src)
            // -mcpu=v3: BPF atomics (fetch-and-add, exchange) for the per-CPU lock-free slots.
            .clang_args([
                "-I",
                out.to_str().expect("OUT_DIR is UTF-8"),
                "-O2",
                "-g",
                "-mcpu=v3",
            ])
            .build_and_generate(out.join(skel))
            .unwrap_or_else(|e| {
                panic!("building {src} (needs clang and libbpf headers from libbpf-sys): {e}")
            });
    }
}
