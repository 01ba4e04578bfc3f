//! The session's input rules ([`rtscope_session::input`]), and those of files and ranges only
//! verbs use.

pub use rtscope_session::input::*;
use std::path::Path;

/// `v` within `lo..=hi`; the error names the flag, the value and the range (with its unit).
pub fn range<T: PartialOrd + std::fmt::Display + Copy>(
    flag: &str,
    v: T,
    lo: T,
    hi: T,
    unit: &str,
) -> Result<T, VerbError> {
    rtscope_model::field::within(v, lo, hi, unit).map_err(|m| bad!("{flag}: {m}"))
}

/// [`output`] for a directory the work fills (created 0700 if missing).
pub fn output_dir(flag: &str, p: &Path) -> Result<(), VerbError> {
    rtscope_files::check_output_dir(p, Some(OUTPUT_FILE_BYTES))
        .map_err(|e| bad!("{flag} {}: {e}", p.display()))
}

/// An input file read whole (task sets, campaigns, bound inputs): at most
/// `rtscope_files::max_input_bytes()`, UTF-8; any failure is bad input naming the flag.
pub fn read(flag: &str, p: &Path) -> Result<String, VerbError> {
    let bytes = rtscope_files::read_bounded(p, rtscope_files::max_input_bytes(), "an input file")
        .map_err(|e| bad!("{flag} {}: cannot read: {e}", p.display()))?;
    String::from_utf8(bytes).map_err(|e| bad!("{flag} {}: not UTF-8 text: {e}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(range("--worst", 5, 0, 10, "").unwrap(), 5);
        assert_eq!(
            range("--interval", 5u64, 10, 20, " us")
                .unwrap_err()
                .to_string(),
            "--interval: 5 is out of range (10..=20 us)"
        );
    }
}
