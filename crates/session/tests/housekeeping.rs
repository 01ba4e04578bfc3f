//! The housekeeping CPUs: the default, and what a named CPU may be.

use rtscope_session::housekeeping::*;

#[test]
fn default_is_the_cpus_not_measured_else_all_with_a_warning() {
    assert_eq!(default_for(&[0, 1, 2, 3], &[1, 2]), (vec![0, 3], None));
    let (cpus, w) = default_for(&[0, 1], &[0, 1]);
    assert_eq!(cpus, vec![0, 1]);
    let w = w.unwrap_or_default();
    assert!(w.starts_with("every CPU is measured"), "{w}");
    assert!(w.contains("⟨housekeeping⟩"), "{w}");
}

#[test]
fn a_named_offline_cpu_is_refused_with_the_field() {
    let e = resolve(Some(&[4095]), &[0]).err().map(|e| e.to_string());
    let e = e.unwrap_or_default();
    assert!(
        e.starts_with("⟨housekeeping⟩: CPU 4095 is not online"),
        "{e}"
    );
}

#[test]
fn a_named_measured_cpu_is_allowed_with_a_warning() {
    let online = rtscope_sys::affinity::online_cpus().unwrap_or_default();
    let Some(&c) = online.first() else {
        panic!("no online CPU");
    };
    let (cpus, w) = match resolve(Some(&[c]), &[c]) {
        Ok(r) => r,
        Err(e) => panic!("refused: {e}"),
    };
    assert_eq!(cpus, vec![c]);
    let w = w.unwrap_or_default();
    assert!(w.contains("names measured CPU"), "{w}");
}
