//! Secrets never persist: command lines and configuration values pass through [`redact`] before
//! they are stored, printed or reported. What counts as a secret:
//!
//! * the password of a URL's user info: `postgres://alice:SECRET@host/db` →
//!   `postgres://alice:***@host/db` (the user name stays: it says which account was used);
//! * the value of a password-like key in a URL query, a libpq conninfo string or an environment
//!   assignment: `?password=SECRET`, `password='a b'`, `PGPASSWORD=SECRET`, `api_token=…`;
//! * the argument after a password-like flag: `--password SECRET`, `--token=SECRET`.

/// The mask that replaces a secret.
pub const MASK: &str = "***";

/// Is `key` (a query parameter, conninfo keyword, variable or flag name) password-like?
fn secret_key(key: &str) -> bool {
    let k = key.trim_start_matches('-').to_ascii_lowercase();
    k.contains("password")
        || k.contains("passwd")
        || k.contains("secret")
        || k.contains("token")
        || k == "pwd"
        || k == "pass"
        || k.ends_with("_pwd")
        || k.ends_with("_pass")
}

/// One string with its secrets masked (module docs).
pub fn redact(s: &str) -> String {
    redact_key_values(&redact_userinfo(s))
}

/// A command line with its secrets masked, including the value after a password-like flag.
pub fn redact_argv(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut mask_next = false;
    for a in args {
        if mask_next {
            out.push(MASK.to_string());
            mask_next = false;
            continue;
        }
        if a.starts_with('-') && !a.contains('=') && secret_key(a) {
            mask_next = true;
        }
        out.push(redact(a));
    }
    out
}

/// `scheme://user:PASS@host` → `scheme://user:***@host`, for every URL in `s`.
fn redact_userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        out.push_str(&rest[..i + 3]);
        rest = &rest[i + 3..];
        // The authority ends at the path, query, fragment or a space; user info before its
        // last '@' (an unescaped '@' in a password still leaves the host after the last one).
        let end = rest
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        if let Some(at) = authority.rfind('@') {
            let userinfo = &authority[..at];
            match userinfo.find(':') {
                Some(colon) => {
                    out.push_str(&userinfo[..colon + 1]);
                    out.push_str(MASK);
                }
                None => out.push_str(userinfo),
            }
            out.push_str(&authority[at..]);
        } else {
            out.push_str(authority);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `key=value` with a password-like key → `key=***`; the value ends at whitespace, `&` or `;`,
/// or at its closing quote when it starts with one.
fn redact_key_values(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'=' {
            i += 1;
            continue;
        }
        let mut k = i;
        while k > 0 && (b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_' || b[k - 1] == b'-') {
            k -= 1;
        }
        if k == i || !secret_key(&s[k..i]) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'\'' || b[j] == b'"') {
            let q = b[j];
            j += 1;
            while j < b.len() && b[j] != q {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            j = (j + 1).min(b.len());
        } else {
            while j < b.len() && !b[j].is_ascii_whitespace() && b[j] != b'&' && b[j] != b';' {
                j += 1;
            }
        }
        out.push_str(&s[copied..=i]);
        out.push_str(MASK);
        copied = j;
        i = j;
    }
    out.push_str(&s[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_passwords_are_masked_and_the_rest_kept() {
        assert_eq!(
            redact("postgres://alice:SECRET@db.lab:5432/rt"),
            "postgres://alice:***@db.lab:5432/rt"
        );
        assert_eq!(redact("postgres://alice@db/rt"), "postgres://alice@db/rt");
        assert_eq!(
            redact("--db=postgresql://u:p@ss@h/d?sslmode=require&password=X2"),
            "--db=postgresql://u:***@h/d?sslmode=require&password=***"
        );
        assert_eq!(redact("/var/lib/results.db"), "/var/lib/results.db");
        assert_eq!(redact("a=b c=d"), "a=b c=d");
    }

    #[test]
    fn conninfo_and_variables_are_masked() {
        assert_eq!(
            redact("host=h password='a b' user=u"),
            "host=h password=*** user=u"
        );
        assert_eq!(redact("PGPASSWORD=hunter2"), "PGPASSWORD=***");
        assert_eq!(redact("API_TOKEN=abc;x=1"), "API_TOKEN=***;x=1");
    }

    #[test]
    fn password_flags_mask_their_argument() {
        let argv: Vec<String> = [
            "rtscope",
            "measure",
            "--password",
            "hunter2",
            "--token=t0k",
            "-D",
            "5s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            redact_argv(&argv),
            [
                "rtscope",
                "measure",
                "--password",
                "***",
                "--token=***",
                "-D",
                "5s"
            ]
        );
    }

    #[test]
    fn nothing_secret_survives_in_any_shape() {
        for s in [
            "postgres://alice:SECRET@h/d",
            "postgres://alice:SECRET@h",
            "x postgres://:SECRET@h/d y",
            "password=SECRET",
            "PGPASSWORD=SECRET",
            "postgres://h/d?password=SECRET",
            "passwd=\"SECRET\"",
        ] {
            assert!(!redact(s).contains("SECRET"), "{s} -> {}", redact(s));
        }
    }
}
