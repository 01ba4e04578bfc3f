//! JSON read from outside (cyclictest `--json`, run records, bound inputs, rt-app and task-set
//! files, trace metadata) must not carry the same key twice in one object: serde keeps the last
//! value silently, so a file could say two things and be read as either. One pass over the text,
//! before the real decoder; the error names the key and its object's path.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// Deepest nesting looked into (serde_json itself stops at 128).
const MAX_DEPTH: usize = 128;

struct Walk<'a> {
    path: &'a str,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(de::Error::custom("nested more than 128 deep"));
        }
        let mut i = 0usize;
        loop {
            let path = format!("{}[{i}]", self.path);
            let seed = Walk {
                path: &path,
                depth: self.depth + 1,
            };
            if a.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(de::Error::custom("nested more than 128 deep"));
        }
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(k) = a.next_key::<String>()? {
            let path = if self.path.is_empty() {
                k.clone()
            } else {
                format!("{}.{k}", self.path)
            };
            if !seen.insert(k) {
                return Err(de::Error::custom(format!(
                    "duplicate key \"{path}\" (each key may appear once in an object)"
                )));
            }
            a.next_value_seed(Walk {
                path: &path,
                depth: self.depth + 1,
            })?;
        }
        Ok(())
    }
}

/// Refuse a JSON text whose objects repeat a key (the error names it, with its path). Other
/// syntax errors are left to the real decoder, which says them in its own words.
pub fn reject_duplicate_keys(text: &str) -> Result<(), String> {
    let mut d = serde_json::Deserializer::from_str(text);
    match (Walk { path: "", depth: 0 }).deserialize(&mut d) {
        Err(e) if e.to_string().contains("duplicate key") => Err(e.to_string()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_named_with_its_path() {
        reject_duplicate_keys(r#"{"a":1,"b":[{"c":1},{"c":2}]}"#).unwrap();
        let e = reject_duplicate_keys(r#"{"a":1,"b":[{"c":1},{"c":2,"c":3}]}"#).unwrap_err();
        assert!(e.contains("duplicate key \"b[1].c\""), "{e}");
        let e = reject_duplicate_keys(r#"{"cycles":1,"cycles":2}"#).unwrap_err();
        assert!(e.contains("\"cycles\""), "{e}");
        // Not JSON: left to the decoder.
        reject_duplicate_keys("{").unwrap();
    }
}
