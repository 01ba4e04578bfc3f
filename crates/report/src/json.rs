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
    // Parsed straight from the text (not through serde_json::Value, which cannot hold the
    // histograms' u128 sums).
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: Option<u64>,
    }
    let v: Version = serde_json::from_str(text).map_err(|e| ReadError::Parse(e.to_string()))?;
    let found = v
        .schema_version
        .ok_or_else(|| ReadError::Parse("no schema_version".into()))?;
    if found > rtscope_model::SCHEMA_VERSION as u64 {
        return Err(ReadError::TooNew {
            found,
            supported: rtscope_model::SCHEMA_VERSION,
        });
    }
    rtscope_model::limits::check_run_record_json(
        text,
        &mut rtscope_model::limits::Budget::for_input_env(text.len() as u64),
    )
    .map_err(ReadError::Parse)?;
    serde_json::from_str(text).map_err(|e| ReadError::Parse(e.to_string()))
}
