//! The store's typed inputs named as the user typed them.

use rtscope_store::Field;

/// The flag of each field.
pub fn flag(f: Field) -> &'static str {
    match f {
        Field::Db => "--db",
        Field::RtslDb => "--rtsl-db",
    }
}

/// Every store field token in `text` replaced by its flag.
pub fn render(text: &str) -> String {
    rtscope_model::field::render(text, Field::ALL, flag)
}
