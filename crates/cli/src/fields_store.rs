//! The store's typed inputs named as the user typed them.

use rtscope_store::Field;

fn flag(f: Field) -> &'static str {
    match f {
        Field::Db => "--db",
        Field::RtslDb => "--rtsl-db",
    }
}

/// Every store field token in `text` replaced by its flag.
pub fn render(text: &str) -> String {
    rtscope_model::field::render(text, Field::ALL, flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_a_flag() {
        assert!(crate::fields_check::takes(&["runs"], flag(Field::Db)));
        assert!(crate::fields_check::takes(&["bound"], flag(Field::RtslDb)));
    }

    #[test]
    fn a_refusal_reads_with_the_flag() {
        let e = rtscope_store::StoreError::BadUrl("x".into()).to_string();
        assert_eq!(render(&e), "--db: x");
    }
}
