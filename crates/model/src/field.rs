//! Typed fields of a request, as a library's errors name them. A library never spells a flag:
//! its message refers to a field by a token (`⟨pdlt.step⟩`, the field's `Display`), and
//! whoever shows the message to a person renders each token in that person's terms (the cli: the
//! flag) with [`render`].

/// Declares the fields of one request: an enum with `ALL`, `key()` and a `Display` that is the
/// field's token, `⟨family.key⟩`, and one constant per field so that a message can name it
/// inline (`format!("{STEP_US}: must be …")`).
///
/// ```
/// rtscope_model::request_fields! {
///     /// The fields of a scan.
///     pub enum Field in "scan" { Step = "step_us" => STEP_US, Repeats = "repeats" => REPEATS }
/// }
/// assert_eq!(Field::Step.to_string(), "⟨scan.step_us⟩");
/// assert_eq!(format!("{STEP_US}: too small"), "⟨scan.step_us⟩: too small");
/// ```
#[macro_export]
macro_rules! request_fields {
    ($(#[$m:meta])* $vis:vis enum $name:ident in $family:literal {
        $($(#[$vm:meta])* $v:ident = $key:literal => $c:ident),* $(,)?
    }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name { $($(#[$vm])* $v),* }

        #[allow(dead_code)]
        impl $name {
            /// Every field, for whoever maps them to its own names.
            pub const ALL: &'static [$name] = &[$($name::$v),*];
            /// The field's name in the request (snake case, with its unit).
            pub fn key(self) -> &'static str {
                match self { $($name::$v => $key),* }
            }
        }

        $(
            #[allow(dead_code)]
            $vis const $c: $name = $name::$v;
        )*

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "⟨{}.{}⟩", $family, self.key())
            }
        }
    };
}

crate::request_fields! {
    /// Flags of the lab's verbs that another crate's advice names ("a lab kernel has them:
    /// rtscope lab run ⟨advice.lab_kernel⟩ trace …"), for crates that do not depend on the lab.
    pub enum Advice in "advice" {
        LabKernel = "lab_kernel" => LAB_KERNEL,
        LabPreset = "lab_preset" => LAB_PRESET,
    }
}

/// Every token of `all` in `text` replaced by `name(field)`.
pub fn render<F: Copy + std::fmt::Display>(
    text: &str,
    all: &[F],
    name: impl Fn(F) -> &'static str,
) -> String {
    if !text.contains('⟨') {
        return text.to_string();
    }
    all.iter()
        .fold(text.to_string(), |t, f| t.replace(&f.to_string(), name(*f)))
}

/// `v` within `lo..=hi`, or the message that says the value and the range (with its unit,
/// e.g. `" us"`): `5 is out of range (10..=20 us)`. The caller puts the field or flag before it.
pub fn within<T: PartialOrd + std::fmt::Display + Copy>(
    v: T,
    lo: T,
    hi: T,
    unit: &str,
) -> Result<T, String> {
    if v < lo || v > hi {
        return Err(format!("{v} is out of range ({lo}..={hi}{unit})"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    crate::request_fields! {
        enum F in "t" { A = "a_us" => A_US, B = "b" => B }
    }

    #[test]
    fn tokens_render_by_the_callers_names() {
        assert_eq!(F::ALL, [F::A, F::B]);
        assert_eq!(F::B.to_string(), "⟨t.b⟩");
        let msg = format!("{A_US}: must be below {B}");
        let line = super::render(&msg, F::ALL, |f| match f {
            F::A => "--a-us",
            F::B => "--b",
        });
        assert_eq!(line, "--a-us: must be below --b");
        assert_eq!(super::render("plain", F::ALL, |_| "x"), "plain");
    }

    #[test]
    fn within_names_the_value_and_the_range() {
        assert_eq!(super::within(5, 0, 10, ""), Ok(5));
        assert_eq!(super::within(10u64, 10, 20, " us"), Ok(10));
        assert_eq!(
            super::within(21u64, 10, 20, " us"),
            Err("21 is out of range (10..=20 us)".to_string())
        );
    }
}
