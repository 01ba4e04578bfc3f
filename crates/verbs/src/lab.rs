//! `rtscope lab kernel list` (also `lab list`): the kernels built or fetched into the lab's
//! cache, as a table or JSON. An offline [`Tool`]: it reads the cache directory, starts
//! nothing and needs no privilege. (Building a kernel and running a verb in one are
//! `rtscope_lab`'s.)

use crate::input::VerbError;
use crate::outputs::JsonDest;
use crate::tool::{run_tool, Flow, Tool, Work};
use rtscope_lab::kernel::{self, Kernel};

/// List the kernels in the lab's cache: JSON to `json`, the table otherwise; an empty cache
/// says so, and `build` (the command that builds one, in the caller's words).
pub fn list(json: &JsonDest, build: &str) -> Result<(), VerbError> {
    json.check()?;
    run_tool(List {
        json,
        build,
        kernels: Vec::new(),
    })
}

/// `lab kernel list` as a tool.
struct List<'a> {
    json: &'a JsonDest,
    build: &'a str,
    kernels: Vec<Kernel>,
}

impl Tool for List<'_> {
    type Output = ();

    fn step(&mut self, _: &Work) -> Result<Flow, VerbError> {
        self.kernels = kernel::list(&rtscope_lab::cache_dir());
        Ok(Flow::Done)
    }

    fn outputs(self, _: &Work, _: Option<rtscope_model::RunRecord>) -> Result<(), VerbError> {
        let ks = self.kernels;
        if self.json.0.is_some() {
            let metas: Vec<&kernel::KernelMeta> = ks.iter().map(|k| &k.meta).collect();
            let doc = serde_json::to_string_pretty(&metas).map_err(VerbError::failed)?;
            return self.json.write(&doc);
        }
        if ks.is_empty() {
            println!(
                "no kernels in {} (build one: {})",
                rtscope_lab::cache_dir().display(),
                self.build
            );
            return Ok(());
        }
        let rows: Vec<Vec<String>> = ks
            .iter()
            .map(|k| {
                vec![
                    k.meta.name.clone(),
                    k.meta.release.clone(),
                    k.meta.features.summary(),
                    k.meta.built_at.clone(),
                ]
            })
            .collect();
        print!(
            "{}",
            rtscope_report::table::render(&["kernel", "release", "supports", "built"], &rows)
        );
        Ok(())
    }
}
