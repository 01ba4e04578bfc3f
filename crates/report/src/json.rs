//! rtscope's own JSON: the RunRecord, versioned (`schema_version`), described by
//! `docs/schema/run-record.schema.json`.

use rtscope_model::RunRecord;

pub fn run_record(rec: &RunRecord) -> String {
    // RunRecord is plain data (no maps with non-string keys): serialisation cannot fail.
    serde_json::to_string_pretty(rec).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not an rtscope run record: {0}")]
    Parse(String),
    #[error("schema_version {found} is newer than this rtscope understands ({supported})")]
    TooNew { found: u64, supported: u32 },
}

pub fn parse_run_record(text: &str) -> Result<RunRecord, ReadError> {
    rtscope_model::limits::check_run_record_json(
        text,
        &mut rtscope_model::limits::Budget::for_text(text.len() as u64),
    )
    .map_err(ReadError::Parse)?;
    rtscope_model::decode_run_record(text).map_err(|e| match e {
        rtscope_model::DecodeError::Parse(e) => ReadError::Parse(e),
        rtscope_model::DecodeError::TooNew { found, supported } => {
            ReadError::TooNew { found, supported }
        }
    })
}
