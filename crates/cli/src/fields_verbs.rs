//! The verbs crate's typed fields named as the user typed them: a refusal from `rtscope_verbs`
//! names a field by its token (`⟨bound.cap⟩`); here each becomes its flag.

use rtscope_model::field::render as tokens;
use rtscope_verbs::{bound, campaign, monitor, osnoise};

pub fn bound(f: bound::Field) -> &'static str {
    use bound::Field as F;
    match f {
        F::Input => "--input",
        F::Trace => "--trace",
        F::Samples => "--samples",
        F::AssumeThread => "--assume-thread",
        F::Series => "--series",
        F::Cap => "--cap",
        F::MaxIterations => "--max-iterations",
    }
}

pub fn monitor(f: monitor::Field) -> &'static str {
    use monitor::Field as F;
    match f {
        F::Listen => "--listen",
        F::Window => "--window",
        F::TraceBurst => "--trace-burst",
        F::ExposeNames => "--expose-names",
    }
}

pub fn osnoise(f: osnoise::Field) -> &'static str {
    use osnoise::Field as F;
    match f {
        F::Probe => "--probe",
        F::Period => "--period",
        F::Runtime => "--runtime",
        F::MinNoise => "--min-noise",
        F::Stop => "--stop",
        F::Top => "--top",
    }
}

pub fn campaign(f: campaign::Field) -> &'static str {
    match f {
        campaign::Field::Lease => "--lease",
    }
}

/// Every verbs-crate field token in `text` replaced by its flag.
pub fn render(text: &str) -> String {
    let t = tokens(text, bound::Field::ALL, bound);
    let t = tokens(&t, monitor::Field::ALL, monitor);
    let t = tokens(&t, osnoise::Field::ALL, osnoise);
    tokens(&t, campaign::Field::ALL, campaign)
}
