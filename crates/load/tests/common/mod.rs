//! Helpers shared by the load crate's real-kernel tests.
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};

/// Loads measure machine-wide /proc deltas: run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn is_root() -> bool {
    rtscope_sys::system::is_root()
}

/// Running = exists and is not a zombie (PID 1 in some containers never reaps orphans, and a
/// zombie holds no CPU, file or port).
pub fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X"),
        Err(_) => false,
    }
}

/// Live processes whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(d) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in d.filter_map(|e| e.ok()) {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            if let Some((_, rest)) = s.rsplit_once(')') {
                let f: Vec<&str> = rest.split_whitespace().collect();
                // rest: state ppid pgrp …
                if f.len() > 2 && f[2].parse::<i32>() == Ok(pgid) && f[0] != "Z" {
                    out.push(pid);
                }
            }
        }
    }
    out
}

/// True if some socket in /proc/net/tcp listens on `port`.
pub fn port_listening(port: u16) -> bool {
    let Ok(t) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    t.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3
            && f[3] == "0A"
            && f[1]
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
                == Some(port)
    })
}
