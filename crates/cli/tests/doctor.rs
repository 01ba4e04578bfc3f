//! `rtscope doctor` on the real kernel: the report of this machine, and the fixes' journal —
//! `--fix` then SIGKILL, and the next `doctor --revert` (or any next run) writes every value
//! back. The knobs used are harmless ones this machine's doctor finds: khugepaged's
//! defragmentation (RT016) and timer migration (RT009).

use rtscope_testkit::{bin, need_root};
use std::process::Command;

const KHUGEPAGED: &str = "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag";
const TIMER_MIGRATION: &str = "/proc/sys/kernel/timer_migration";

fn read(p: &str) -> String {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn doctor(args: &[&str]) -> std::process::Output {
    Command::new(bin!())
        .arg("doctor")
        .args(args)
        .output()
        .expect("running rtscope doctor")
}

/// Both knobs as this test needs them (the checks fire only when they are on); false when the
/// machine lacks one, which the test reports as skipped.
fn knobs_on() -> bool {
    std::path::Path::new(KHUGEPAGED).exists()
        && read(KHUGEPAGED) == "1"
        && read(TIMER_MIGRATION) == "1"
        && read("/sys/kernel/mm/transparent_hugepage/enabled")
            .contains("[never]")
            .eq(&false)
}

#[test]
fn report_text_and_json_of_this_machine() {
    let out = doctor(&["--json", "-"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor JSON");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["checks_run"].as_array().map(Vec::len), Some(31));
    for f in v["findings"].as_array().unwrap() {
        let code = f["code"].as_str().unwrap();
        assert!(code.starts_with("RT") && code.len() > 6, "{code}");
        assert!(!f["reference"].as_str().unwrap().is_empty());
    }
    let text = doctor(&[]);
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(t.starts_with("rtscope doctor — "), "{t}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    for (args, want) in [
        (vec!["--fix", "RT999"], "--fix: unknown check code"),
        (vec!["--cpus", "4000"], "--cpus: CPU 4000 is not online"),
    ] {
        let out = doctor(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn fix_then_sigkill_then_revert_restores_every_value() {
    need_root!("doctor --fix writes /sys and /proc/sys");
    if !knobs_on() {
        rtscope_testkit::skipped("khugepaged defrag and timer_migration are not both on here");
        return;
    }
    let before = (read(KHUGEPAGED), read(TIMER_MIGRATION));

    // A fix that ran to its end is kept: a SIGKILL afterwards changes nothing, the values stay
    // until --revert.
    let out = doctor(&["--fix", "RT016", "RT009"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("fixed RT016-khugepaged-defrag")
            && text.contains("fixed RT009-timer-migration"),
        "{text}"
    );
    assert_eq!(
        (read(KHUGEPAGED), read(TIMER_MIGRATION)),
        ("0".into(), "0".into())
    );
    // A plain run (which repairs what killed runs left) leaves a kept fix alone.
    assert!(doctor(&["-q"]).status.success());
    assert_eq!(read(KHUGEPAGED), "0");
    let out = doctor(&["--revert"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!((read(KHUGEPAGED), read(TIMER_MIGRATION)), before);

    // SIGKILL in the middle of --fix, at several moments: whatever it had written, the next
    // --revert writes back.
    for delay_ms in [0u64, 5, 20, 60, 150] {
        let mut child = Command::new(bin!())
            .args(["doctor", "--fix", "RT016", "RT009", "-q"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        let out = doctor(&["--revert"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            (read(KHUGEPAGED), read(TIMER_MIGRATION)),
            before,
            "killed after {delay_ms} ms"
        );
    }

    // Killed between the write and the persisting (a child that journals the change and dies):
    // the next run of doctor, without --revert, writes it back.
    // SAFETY: the child only sets one knob and kills itself.
    match unsafe { rtscope_sys::process::fork() }.unwrap() {
        rtscope_sys::process::Fork::Child => {
            if let Ok(k) = rtscope_sys::knob::Knob::set(KHUGEPAGED, "0") {
                std::mem::forget(k);
            }
            let _ = rtscope_sys::process::kill(
                rtscope_sys::process::getpid(),
                rtscope_sys::Signal::SIGKILL,
            );
            rtscope_sys::process::exit_now(1);
        }
        rtscope_sys::process::Fork::Parent(pid) => {
            rtscope_sys::process::wait(pid).unwrap();
        }
    }
    assert_eq!(read(KHUGEPAGED), "0");
    let out = doctor(&["-q"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read(KHUGEPAGED), before.0);
}
