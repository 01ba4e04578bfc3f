//! The record's time stamps and its atomic writes.

use std::time::{Duration, UNIX_EPOCH};

#[test]
fn seconds_in_utc() {
    assert_eq!(
        rtscope_session::record::rfc3339(UNIX_EPOCH),
        "1970-01-01T00:00:00Z"
    );
    let leap_day = UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_723);
    assert_eq!(
        rtscope_session::record::rfc3339(leap_day),
        "2000-02-29T01:02:03Z"
    );
    // Sub-second parts are dropped: the run id reads exactly 14 digits.
    let t = UNIX_EPOCH + Duration::new(1_700_000_000, 999_999_999);
    assert_eq!(rtscope_session::record::rfc3339(t), "2023-11-14T22:13:20Z");
    assert_eq!(
        rtscope_session::record::rfc3339(UNIX_EPOCH - Duration::from_secs(5)),
        "1970-01-01T00:00:00Z"
    );
    let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 4);
    assert_eq!(
        rtscope_session::record::rfc3339(far),
        "9999-12-31T23:59:59Z"
    );
}

use rtscope_session::outputs::write_atomic;

#[test]
fn atomic_write_leaves_only_the_target() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"keep").unwrap();
    let target = d.path().join("out.json");
    write_atomic(&target, b"new").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"new");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    // Only the target is left: the temporary was renamed.
    let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
    assert_eq!(names.len(), 2);
}
