//! Values from the command line resolved before anything starts.

use rtscope_session::input::*;
use std::error::Error;

#[test]
fn durations() {
    assert_eq!(duration("-D", "30s").unwrap(), 30.0);
    assert_eq!(duration("-D", "5m").unwrap(), 300.0);
    assert_eq!(duration("-D", "1h").unwrap(), 3600.0);
    assert_eq!(duration("-D", "250ms").unwrap(), 0.25);
    assert_eq!(duration("-D", "2").unwrap(), 2.0);
    for bad in ["abc", "-5s", "0", "31d", "nan"] {
        let e = duration("-D", bad).unwrap_err();
        assert!(
            e.is_bad_input() && e.to_string().starts_with("-D: "),
            "{bad}: {e}"
        );
    }
}

#[test]
fn tags_are_key_value() {
    let m = tags("--tag", &["kernel=6.18".into(), "a=".into()]).unwrap();
    assert_eq!(m["kernel"], "6.18");
    assert_eq!(
        tags("--tag", &["novalue".into()]).unwrap_err().to_string(),
        "--tag: 'novalue' is not key=value"
    );
    assert!(tags("--tag", &["sp ace=1".into()]).is_err());
}

#[test]
fn cpu_lists_name_the_flag() {
    let online = match rtscope_probe::sys::online_cpus() {
        Ok(o) => o,
        Err(e) => {
            rtscope_testkit::skipped(format_args!("no online CPU list ({e})"));
            return;
        }
    };
    assert_eq!(cpus("--cpus", None).unwrap(), online);
    let e = cpus("--cpus", Some("4095")).unwrap_err().to_string();
    assert!(e.starts_with("--cpus: CPU 4095 is not online"), "{e}");
    let e = cpus("--load-cpus", Some("x")).unwrap_err().to_string();
    assert!(e.starts_with("--load-cpus: ") && e.ends_with("(expected a list like 0,2-3)"));
}

#[test]
fn context_reads_as_one_chain() {
    let e = VerbError::context("writing x", std::io::Error::other("disk full"));
    assert_eq!(e.to_string(), "writing x");
    assert_eq!(e.source().map(|s| s.to_string()), Some("disk full".into()));
}
