//! Exit codes and the one-line error convention.
//!
//! 0 success · 1 the work failed (kernel refused, I/O error) · 2 bad input: nothing was started ·
//! 3 a comparison found a regression beyond the user's threshold.

/// The exit-code table, the same for every verb (`rtscope --help`, README, docs/cli.md).
pub const TABLE: &str = "Exit codes (every verb):\n  0  done (also a run stopped by SIGINT/SIGTERM/SIGHUP: partial results, marked interrupted)\n  1  the work failed (the kernel refused, an I/O error after the work started)\n  2  bad input: one line naming the flag or field and the accepted range; nothing was started\n  3  compare: a regression beyond --fail-above-pct";

pub const FAILURE: i32 = 1;
pub const USAGE: i32 = 2;
pub const REGRESSION: i32 = 3;

/// Shorthand for bad input (exit 2, one line, nothing started):
/// `return Err(usage!("--interval: must be 1..=10000000 us, got {v}"))`.
#[macro_export]
macro_rules! usage {
    ($($t:tt)*) => {
        anyhow::Error::new(rtscope_session::VerbError::BadInput(format!($($t)*)))
    };
}

/// An error carrying its own exit code (e.g. 3 for a regression verdict).
#[derive(Debug)]
pub struct ExitCode(pub i32, pub String);
impl std::fmt::Display for ExitCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}
impl std::error::Error for ExitCode {}

/// Errors quote what the user typed: passwords are masked on the way out, and the fields the
/// libraries name are shown as the flags the user typed.
fn redact(s: &str) -> String {
    rtscope_model::secrets::redact(&libraries(s))
}

/// Every library field token (`⟨pdlt.step⟩`) in `s` as its flag.
pub fn libraries(s: &str) -> String {
    let s = crate::fields_bench::render(s);
    let s = crate::fields_load::render(&s);
    let s = crate::fields_practise::render(&s);
    let s = crate::fields_lab::render(&s);
    let s = crate::fields_verbs::render(&s);
    let s = crate::fields_offline::render(&s);
    crate::fields_store::render(&s)
}

pub fn report(r: anyhow::Result<()>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => {
            if let Some(v) = e.downcast_ref::<rtscope_session::VerbError>() {
                if v.is_bad_input() {
                    eprintln!("rtscope: error: {}", redact(&v.render(crate::fields::flag)));
                    return USAGE;
                }
            }
            if let Some(c) = e.downcast_ref::<ExitCode>() {
                if !c.1.is_empty() {
                    eprintln!("rtscope: {}", redact(&c.1));
                }
                return c.0;
            }
            // anyhow's alternate format prints the context chain on one line.
            // A library failure names its fields by their tokens: the user reads the flags.
            let line =
                rtscope_session::input::Field::render(&format!("{e:#}"), crate::fields::flag);
            eprintln!("rtscope: error: {}", redact(&line));
            FAILURE
        }
    }
}

/// clap's refusal as one line: the flag, the value and what is accepted.
pub fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let line: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("For more information") && !l.starts_with("Usage:")
        })
        .collect();
    libraries(&line.join(" "))
}
