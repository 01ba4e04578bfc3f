//! One file per verb. Each exposes `Args` (clap) and `run(Args) -> anyhow::Result<()>`.
pub mod analyze;
pub mod bound;
pub mod campaign;
pub mod common;
pub mod compare;
pub mod cyclictest;
pub mod db;
pub mod export;
pub mod import;
pub mod load;
pub mod mbwi;
pub mod measure;
pub mod pdlt;
pub mod practise;
pub mod report;
pub mod rhealstone;
pub mod run;
pub mod runs;
pub mod sched_scale;
pub mod show;
pub mod taskset;
pub mod trace;

/// Say where a run went: the database, or the fallback file and the command that imports it.
pub fn print_saved(saved: Option<&rtscope_store::Saved>) {
    match saved {
        None => {}
        Some(rtscope_store::Saved::Stored { id, location }) => {
            // Status on stderr: stdout carries the result (`--json -` keeps it pure JSON).
            eprintln!("stored run {id} in {location}");
        }
        Some(rtscope_store::Saved::Fallback {
            path,
            reason,
            import_command,
        }) => {
            eprintln!(
                "rtscope: warning: the results database did not take the run ({reason}); kept in {}; store it later with: {import_command}",
                path.display()
            );
        }
    }
}
