//! `rtscope import [KIND] FILE…`: results from elsewhere (cyclictest's outputs, rtscope record
//! JSON such as a fallback file) read, converted (`rtscope_report::import`), tagged and stored
//! like every verb's result. A [`Tool`] with [`crate::tool::Begin::Offline`]: it starts nothing
//! and needs no privilege; every file is read and converted in its step, before its outputs
//! store the first.

use crate::input::{bad, Field, VerbError};
use crate::outputs::RecordOutputs;
use crate::tool::{run_tool, Flow, Tool, Work};
use rtscope_model::RunRecord;
use rtscope_report::import::Kind;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `args` is `[cyclictest|run] FILE…`: without the kind the content decides.
pub fn files(args: &[String], out: &RecordOutputs) -> Result<(), VerbError> {
    let (kind, files) = match args.first().and_then(|k| Kind::parse(k)) {
        Some(k) => (Some(k), &args[1..]),
        None => (None, args),
    };
    if files.is_empty() {
        return Err(bad!("import: no input file given"));
    }
    if out.json.0.is_some() && files.len() != 1 {
        return Err(bad!("{}: only with a single input file", Field::Json));
    }
    let tags = out.validate()?;
    run_tool(Import {
        kind,
        files,
        tags,
        out,
        records: Vec::new(),
    })
}

/// `import` as a tool.
struct Import<'a> {
    kind: Option<Kind>,
    files: &'a [String],
    tags: BTreeMap<String, String>,
    out: &'a RecordOutputs,
    /// Each file and its record.
    records: Vec<(PathBuf, RunRecord)>,
}

impl Tool for Import<'_> {
    type Output = ();

    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        for p in self.files.iter().map(PathBuf::from) {
            let bytes = rtscope_files::read_bounded(
                &p,
                rtscope_files::max_input_bytes(),
                "an imported result",
            )
            .map_err(|e| bad!("{}: cannot read: {e}", p.display()))?;
            let text = String::from_utf8(bytes)
                .map_err(|e| bad!("{}: not UTF-8 text: {e}", p.display()))?;
            let source = p.display().to_string();
            let id = crate::record::new_run_id();
            let now = crate::record::rfc3339(std::time::SystemTime::now());
            let mut rec = rtscope_report::import::record(&text, self.kind, &source, id, now)
                .map_err(|e| bad!("{source}: {e}"))?;
            rec.tags.extend(self.tags.clone());
            self.records.push((p, rec));
        }
        Ok(Flow::Done)
    }

    /// Each record said, stored, and written with `--json`.
    fn outputs(self, _: &Work, _: Option<RunRecord>) -> Result<(), VerbError> {
        let out = self.out;
        for (p, rec) in &self.records {
            if !out.quiet && out.text() {
                println!(
                    "{}: {} threads, {} samples, max {} us — imported as run {}",
                    p.display(),
                    rec.measurement().map_or(0, |m| m.threads.len()),
                    rec.stats().samples,
                    rec.stats().max_ns.unwrap_or(0) / 1000,
                    rec.id
                );
            }
            out.emit(rec)
                .map_err(|e| VerbError::context("storing the imported run", e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_before_anything_is_stored() {
        let out = RecordOutputs {
            no_store: true,
            ..RecordOutputs::default()
        };
        let two = RecordOutputs {
            json: crate::outputs::JsonDest(Some("-".into())),
            ..out.clone()
        };
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let rows = [
            (
                s(&["cyclictest"]),
                out.clone(),
                "import: no input file given",
            ),
            (s(&["a", "b"]), two, "⟨json⟩: only with a single input file"),
            (
                s(&["run", "/nonexistent/x"]),
                out.clone(),
                "/nonexistent/x: cannot read: ",
            ),
        ];
        for (args, out, want) in rows {
            match files(&args, &out) {
                Err(VerbError::BadInput(got)) => assert!(got.starts_with(want), "{got} / {want}"),
                other => panic!("{want}: {other:?}"),
            }
        }
    }
}
