//! `rtscope doctor`: what on this machine stands between it and real-time, with the evidence of
//! a traced run when there is one, and the run-time fixes kept until `--revert`.
//!
//! The machine is read once (`rtscope_probe::tuning`), judged by the pure checks
//! (`rtscope_analysis::doctor`), and, with `--run` (a `measure --trace bpf` through the session's
//! measurement) or `--from` (a stored traced run), joined to that run's attribution by IRQ number,
//! CPU and thread id. `--fix` writes each chosen finding's files through the one knob journal
//! (`rtscope_sys::knob`): every write of one finding is made, then all are persisted together; a
//! write the kernel refuses undoes that finding's other writes and reports it not applied. A
//! SIGKILL before the persisting leaves ordinary journal entries, which the next run of any verb
//! writes back; persisted ones stay until `--revert`.

use crate::input::{bad, VerbError};
use crate::privilege::Need;
use crate::tool::{Begin, Work};
use rtscope_analysis::doctor as checks;
use rtscope_model::doctor::{DoctorReport, Finding, DOCTOR_SCHEMA_VERSION};
use rtscope_model::{Policy, RunRecord};
use rtscope_session::tool::{run_tool, Flow, Tool};
use std::path::PathBuf;

/// Where the run joined to the findings comes from.
pub enum RunSource {
    /// The machine only.
    None,
    /// A traced measurement made now (a resolved `measure --trace bpf` plan).
    Run(Box<rtscope_session::Plan>),
    /// A stored run.
    From { db: Option<String>, id: String },
}

/// `rtscope doctor`, resolved.
pub struct DoctorPlan {
    /// None: [`checks::default_cpus`], or the joined run's CPUs.
    pub cpus: Option<Vec<u32>>,
    pub source: RunSource,
    /// `-`: standard output.
    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// Full check codes to fix (the cli has checked them against `checks::CHECKS`, the CPUs
    /// against the online ones, and root and a writable /sys for a fix or a revert).
    pub fix: Vec<String>,
    pub revert: bool,
    /// The idle-state exit latency above which a state is a finding (sysfs counts whole µs:
    /// the fraction below one is not compared).
    pub target: std::time::Duration,
    pub quiet: bool,
}

/// What one `--fix` code came to.
#[derive(Debug, PartialEq)]
pub enum FixResult {
    Applied {
        code: String,
        writes: Vec<(String, String)>,
    },
    NotApplied {
        code: String,
        why: String,
    },
    NotFixable {
        code: String,
        why: String,
    },
    NothingToFix {
        code: String,
    },
}

/// Apply the fixes of `codes` among `findings` through `journal`, one finding at a time: all of
/// a finding's writes are made and then persisted, or none is kept.
pub fn apply_fixes(
    findings: &[Finding],
    codes: &[String],
    journal: &rtscope_sys::knob::Journal,
) -> Vec<FixResult> {
    let mut out = Vec::new();
    for code in codes {
        let mine: Vec<&Finding> = findings.iter().filter(|f| &f.code == code).collect();
        if mine.is_empty() {
            out.push(FixResult::NothingToFix { code: code.clone() });
            continue;
        }
        if mine.iter().all(|f| f.fix.writes.is_empty()) {
            let boot: Vec<String> = mine
                .iter()
                .flat_map(|f| f.fix.boot_params.clone())
                .collect();
            out.push(FixResult::NotFixable {
                code: code.clone(),
                why: if boot.is_empty() {
                    mine[0].fix.text.clone()
                } else {
                    format!("{}; boot with: {}", mine[0].fix.text, boot.join(" "))
                },
            });
            continue;
        }
        for f in mine.iter().filter(|f| !f.fix.writes.is_empty()) {
            out.push(apply_one(f, journal));
        }
    }
    out
}

fn apply_one(f: &Finding, journal: &rtscope_sys::knob::Journal) -> FixResult {
    let code = format!("{} ({})", f.code, f.title);
    let mut knobs = Vec::new();
    for (path, value) in &f.fix.writes {
        match rtscope_sys::knob::Knob::set_in(journal, path, value) {
            Ok(k) => knobs.push(k),
            // Dropping the knobs writes back what this finding had changed so far.
            Err(e) => {
                drop(knobs);
                return FixResult::NotApplied {
                    code,
                    why: e.to_string(),
                };
            }
        }
    }
    let mut failed = None;
    for k in knobs {
        if let Err(e) = k.persist(journal) {
            if failed.is_none() {
                failed = Some(e.to_string());
            }
        }
    }
    match failed {
        None => FixResult::Applied {
            code,
            writes: f.fix.writes.clone(),
        },
        Some(why) => FixResult::NotApplied { code, why },
    }
}

fn fix_lines(r: &[FixResult]) -> String {
    let mut o = String::new();
    for x in r {
        let line = match x {
            FixResult::Applied { code, writes } => format!(
                "fixed {code}: {} (kept until doctor reverts it)",
                writes
                    .iter()
                    .map(|(p, v)| format!("{v:?} → {p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            FixResult::NotApplied { code, why } => {
                format!("NOT applied {code}: {why} (nothing of it was changed)")
            }
            FixResult::NotFixable { code, why } => {
                format!("not fixable at run time {code}: {why}")
            }
            FixResult::NothingToFix { code } => {
                format!("nothing to fix for {code}: the check did not fire")
            }
        };
        o.push_str(&line);
        o.push('\n');
    }
    o
}

struct DoctorTool {
    plan: DoctorPlan,
    codes: Vec<String>,
    report: Option<DoctorReport>,
    fixes: Vec<FixResult>,
    reverted: Option<Vec<String>>,
}

impl Tool for DoctorTool {
    type Output = ();

    fn begin(&self) -> Begin {
        // Leftovers first: a fix half-applied by a killed doctor is written back here.
        Begin::live("doctor", Need::Nothing, "")
    }

    fn start(&mut self, _w: &Work) -> Result<(), VerbError> {
        self.codes = self.plan.fix.clone();
        Ok(())
    }

    fn step(&mut self, _w: &Work) -> Result<Flow, VerbError> {
        if self.plan.revert {
            self.reverted = Some(rtscope_sys::knob::revert_persistent());
            return Ok(Flow::Done);
        }
        let record: Option<RunRecord> = match &self.plan.source {
            RunSource::None => None,
            RunSource::Run(plan) => {
                let total = plan
                    .config
                    .duration_s
                    .map(std::time::Duration::from_secs_f64);
                let mut view = crate::live::default_view(self.plan.quiet, total);
                Some(rtscope_session::measure::run(plan, view.as_mut())?.record)
            }
            RunSource::From { db, id } => {
                let mut store = crate::stored::open_read(db.as_deref())?;
                crate::stored::load(&mut store, std::slice::from_ref(id))?
                    .into_iter()
                    .next()
            }
        };
        let sys = rtscope_probe::tuning::capture_live();
        let run_cpus = record
            .as_ref()
            .and_then(|r| r.measurement().map(|m| m.config.cpus.clone()));
        let cpus = self
            .plan
            .cpus
            .clone()
            .or(run_cpus)
            .unwrap_or_else(|| checks::default_cpus(&sys));
        let mut findings = checks::check_machine(&sys, &cpus, target_us(self.plan.target));
        let mut report = DoctorReport {
            schema_version: DOCTOR_SCHEMA_VERSION,
            taken_at: rtscope_session::record::rfc3339(std::time::SystemTime::now()),
            hostname: sys.hostname.clone(),
            kernel_release: sys.kernel_release.clone(),
            cpus,
            ..Default::default()
        };
        if let Some(r) = &record {
            let m = r.measurement().ok_or_else(|| {
                bad!(
                    "run {} is a {} run, not a latency measurement",
                    r.id,
                    r.verb
                )
            })?;
            findings.extend(checks::check_hygiene(
                &r.hygiene,
                m.config.policy != Policy::Other,
            ));
            let a = m.attribution.as_ref().ok_or_else(|| {
                bad!(
                    "run {} was not traced, so nothing ties its tail to a cause: measure it with eBPF tracing, or let doctor run a traced measurement",
                    r.id
                )
            })?;
            report.run_unexplained_share = Some(checks::join_run(&mut findings, a));
            report.run_id = Some(r.id.clone());
            report.run_p99_latency_ns = Some(a.p99_latency_ns);
            report.run_tail_p99_samples = a.tail_p99_samples;
        }
        checks::rank(&mut findings);
        report.checks_run = checks::CHECKS
            .iter()
            .map(|c| c.0.to_string())
            .filter(|c| record.is_some() || !c.starts_with("RT04"))
            .collect();
        report.findings = findings;
        if !self.codes.is_empty() {
            self.fixes = apply_fixes(
                &report.findings,
                &self.codes,
                &rtscope_sys::knob::Journal::system(),
            );
        }
        self.report = Some(report);
        Ok(Flow::Done)
    }

    fn outputs(self, _w: &Work, _rec: Option<RunRecord>) -> Result<(), VerbError> {
        if let Some(lines) = &self.reverted {
            if lines.is_empty() {
                println!("nothing to revert: no fix of rtscope doctor is in force");
            }
            for l in lines {
                println!("reverted: {l}");
            }
            if lines.iter().any(|l| l.starts_with("could not")) {
                return Err(VerbError::failed(
                    "some values could not be written back (they stay in the journal for the next revert)",
                ));
            }
            return Ok(());
        }
        let Some(report) = &self.report else {
            return Ok(());
        };
        let json_stdout = self.plan.json.as_deref() == Some(std::path::Path::new("-"));
        if !json_stdout {
            print!("{}", rtscope_report::doctor::text(report));
        }
        if let Some(j) = &self.plan.json {
            let s = serde_json::to_string_pretty(report).map_err(VerbError::failed)?;
            if json_stdout {
                println!("{s}");
            } else {
                std::fs::write(j, s + "\n")
                    .map_err(|e| VerbError::failed(format!("cannot write {}: {e}", j.display())))?;
                eprintln!("rtscope: doctor JSON written to {}", j.display());
            }
        }
        if let Some(h) = &self.plan.html {
            std::fs::write(h, rtscope_report::doctor::html(report))
                .map_err(|e| VerbError::failed(format!("cannot write {}: {e}", h.display())))?;
            eprintln!("rtscope: doctor HTML written to {}", h.display());
        }
        if !self.fixes.is_empty() {
            let text = fix_lines(&self.fixes);
            if json_stdout {
                eprint!("{text}");
            } else {
                print!("\n{text}");
            }
            let refused = self
                .fixes
                .iter()
                .filter(|f| matches!(f, FixResult::NotApplied { .. }))
                .count();
            if refused > 0 {
                return Err(VerbError::failed(format!(
                    "{refused} of the fixes asked for were not applied"
                )));
            }
        }
        Ok(())
    }
}

/// Run `rtscope doctor`.
/// `target` in the whole µs sysfs states exit latencies in: `x > target` for a whole `x` is
/// `x > floor(target)`.
fn target_us(target: std::time::Duration) -> u32 {
    u32::try_from(target.as_micros()).unwrap_or(u32::MAX)
}

pub fn doctor(plan: DoctorPlan) -> Result<(), VerbError> {
    run_tool(DoctorTool {
        plan,
        codes: Vec::new(),
        report: None,
        fixes: Vec::new(),
        reverted: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_model::doctor::{Fix, Severity};

    fn finding(code: &str, writes: Vec<(String, String)>) -> Finding {
        Finding {
            code: code.into(),
            severity: Severity::Warning,
            title: String::new(),
            evidence: vec![],
            fix: Fix {
                text: "t".into(),
                writes,
                boot_params: vec!["b=1".into()],
            },
            reference: String::new(),
            irqs: vec![],
            cpus: vec![],
            pids: vec![],
            run: None,
        }
    }

    #[test]
    fn a_refused_write_undoes_its_finding_and_the_others_are_kept_until_revert() {
        let d = tempfile::tempdir().unwrap();
        let j = rtscope_sys::knob::Journal::at(d.path().join("journal"));
        let a = d.path().join("a");
        let b = d.path().join("b");
        std::fs::write(&a, "1").unwrap();
        std::fs::write(&b, "x").unwrap();
        let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
        let f = vec![
            finding("RT009-timer-migration", vec![(s(&a), "0".into())]),
            // b is written, then the missing file refuses: b goes back to x.
            finding(
                "RT017-ksm-running",
                vec![
                    (s(&b), "y".into()),
                    (s(&d.path().join("missing")), "0".into()),
                ],
            ),
            finding("RT018-swap-active", vec![]),
        ];
        let codes: Vec<String> = [
            "RT009-timer-migration",
            "RT017-ksm-running",
            "RT018-swap-active",
            "RT019-numa-balancing",
        ]
        .map(String::from)
        .to_vec();
        let r = apply_fixes(&f, &codes, &j);
        assert!(matches!(&r[0], FixResult::Applied { .. }), "{r:?}");
        assert!(
            matches!(&r[1], FixResult::NotApplied { why, .. } if why.contains("missing")),
            "{r:?}"
        );
        assert!(
            matches!(&r[2], FixResult::NotFixable { why, .. } if why.contains("b=1")),
            "{r:?}"
        );
        assert!(matches!(&r[3], FixResult::NothingToFix { .. }), "{r:?}");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "0");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "x");
        assert_eq!(rtscope_sys::knob::persistent_in(&j).len(), 1);
        let text = fix_lines(&r);
        assert!(text.contains("NOT applied RT017-ksm-running"), "{text}");
        rtscope_sys::knob::revert_persistent_in(&j);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "1");
    }
}
