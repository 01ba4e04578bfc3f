//! A real kernel knob through `Knob`: set, journalled, restored. printk_ratelimit_burst only
//! limits how many kernel messages pass in a burst; changing it for a moment is harmless.

use rtscope_sys::knob::{repair_stale_in, Journal, Knob};
use std::path::Path;

const KNOB: &str = "/proc/sys/kernel/printk_ratelimit_burst";

#[test]
fn real_sysctl_set_and_restored() {
    if !rtscope_sys::system::is_root() || !Path::new(KNOB).exists() {
        eprintln!("skipped: needs root and {KNOB}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::at(dir.path());
    let before = std::fs::read_to_string(KNOB).unwrap().trim().to_string();
    let new = if before == "11" { "12" } else { "11" };
    {
        let k = Knob::set_in(&j, KNOB, new).unwrap();
        assert_eq!(k.original(), before);
        assert_eq!(std::fs::read_to_string(KNOB).unwrap().trim(), new);
        assert!(
            repair_stale_in(&j).is_empty(),
            "the owner lives: nothing to repair"
        );
    }
    assert_eq!(std::fs::read_to_string(KNOB).unwrap().trim(), before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
