//! The typed fields of `trace record`, `analyze`, the verbs that read the store, the benchmarks'
//! files and `mbwi`'s jobs named as the user typed them: a refusal from `rtscope_verbs` names a
//! field by its token (`⟨trace_record.mechanism⟩`); here each becomes its flag. So do the lab
//! flags other crates' advice names (`rtscope_model::field::Advice`).

use rtscope_model::field::{render as tokens, Advice};
use rtscope_report::export;
use rtscope_verbs::{analyze, bench, capture, mbwi, stored};

pub fn trace_record(f: capture::Field) -> &'static str {
    use capture::Field as F;
    match f {
        F::Duration => "--duration",
        F::Cpus => "--cpus",
        F::Mechanism => "--mechanism",
        F::Output => "--output",
        F::Keep => "--trace-keep",
        F::Preemptirq => "--preemptirq",
    }
}

/// `analyze`'s fields as its flags (the analysis's warnings are named through it).
pub fn analyze(f: analyze::Field) -> &'static str {
    use analyze::Field as F;
    match f {
        F::Json => "--json",
        F::Worst => "--worst",
        F::GapThreshold => "--gap-threshold",
        F::BusyGapThreshold => "--busy-gap-threshold",
        // The recording's settings (`measure`, `trace record`) a warning or a hint advises.
        F::TraceKeep => "--trace-keep",
        F::TraceFileMode => "--trace-file-mode",
    }
}

pub fn stored(f: stored::StoredField) -> &'static str {
    use stored::StoredField as F;
    match f {
        F::Policy => "--policy",
        F::Campaign => "--campaign",
        F::Format => "--format",
        F::Output => "-o",
        F::Metric => "--metric",
        F::FailAbovePct => "--fail-above-pct",
    }
}

pub fn bench_files(f: bench::Field) -> &'static str {
    match f {
        bench::Field::Csv => "--csv",
        bench::Field::Svg => "--svg",
    }
}

pub fn mbwi_job(f: mbwi::Field) -> &'static str {
    match f {
        mbwi::Field::Svg => "--svg",
        mbwi::Field::FigureDir => "--figure-dir",
        mbwi::Field::Mechanism => "--mechanism",
    }
}

pub fn export(f: export::Field) -> &'static str {
    match f {
        // `measure`'s (and `run`'s) flag: a format that needs a bound names it.
        export::Field::Bound => "--bound",
    }
}

pub fn advice(f: Advice) -> &'static str {
    match f {
        Advice::LabKernel => "--kernel",
        Advice::LabPreset => "--preset",
    }
}

/// Every field token of these verbs in `text` replaced by its flag.
pub fn render(text: &str) -> String {
    let t = tokens(text, Advice::ALL, advice);
    let t = tokens(&t, export::Field::ALL, export);
    let t = tokens(&t, capture::Field::ALL, trace_record);
    let t = tokens(&t, analyze::Field::ALL, analyze);
    let t = tokens(&t, stored::StoredField::ALL, stored);
    let t = tokens(&t, bench::Field::ALL, bench_files);
    tokens(&t, mbwi::Field::ALL, mbwi_job)
}
