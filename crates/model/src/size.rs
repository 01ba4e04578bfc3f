//! Byte sizes as users write them: `4096`, `64K`, `20M`, `20MiB`, `1G`, `1GiB`, `2T`. Every
//! multiple is binary (K = KiB = 1024), as the kernel's own size options read them (`mem=`,
//! `hugepagesz=`); units are case-insensitive and an optional `B` / `iB` is accepted.

/// Why a size was refused; the messages name the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("expected a size like 4096, 64K, 20M or 1G, got '{0}'")]
    NotANumber(String),
    #[error("unknown size unit '{unit}' in '{input}' (use K, M, G, T)")]
    UnknownUnit { unit: String, input: String },
    #[error("size '{0}' overflows 64 bits")]
    Overflow(String),
}

/// Parse a byte size (module docs).
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| SizeError::NotANumber(s.to_string()))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(SizeError::UnknownUnit {
                unit: unit.to_string(),
                input: s.to_string(),
            })
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| SizeError::Overflow(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_multiples() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 64K "), Ok(65536));
        assert_eq!(parse_size("20MiB"), Ok(20 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("2 TB"), Ok(2 << 40));
        assert_eq!(
            parse_size("1.5G"),
            Err(SizeError::UnknownUnit {
                unit: ".5G".into(),
                input: "1.5G".into()
            })
        );
        assert_eq!(parse_size("M"), Err(SizeError::NotANumber("M".into())));
        assert_eq!(
            parse_size("99999999999T"),
            Err(SizeError::Overflow("99999999999T".into()))
        );
    }
}
