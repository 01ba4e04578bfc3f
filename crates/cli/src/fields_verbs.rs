//! The verbs crate's typed fields named as the user typed them: a refusal from `rtscope_verbs`
//! names a field by its token (`⟨bound.cap⟩`); here each becomes its flag.

use rtscope_model::field::render as tokens;
use rtscope_verbs::{bound, campaign, monitor, osnoise};

fn bound(f: bound::Field) -> &'static str {
    use bound::Field as F;
    match f {
        F::Input => "--input",
        F::Trace => "--trace",
        F::Samples => "--samples",
        F::AssumeThreadNs => "--assume-thread-ns",
        F::Series => "--series",
        F::Cap => "--cap",
        F::MaxIterations => "--max-iterations",
    }
}

fn monitor(f: monitor::Field) -> &'static str {
    use monitor::Field as F;
    match f {
        F::Listen => "--listen",
        F::Window => "--window",
        F::TraceBurst => "--trace-burst",
    }
}

fn osnoise(f: osnoise::Field) -> &'static str {
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

fn campaign(f: campaign::Field) -> &'static str {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields_check::takes;

    #[test]
    fn every_field_is_a_flag_of_its_verb() {
        for f in bound::Field::ALL {
            assert!(takes(&["bound"], bound(*f)), "{f:?}");
        }
        for f in monitor::Field::ALL {
            assert!(takes(&["monitor"], monitor(*f)), "{f:?}");
        }
        // `--probe` is measure's (timerlat), the others noise's.
        assert!(takes(&["measure"], osnoise(osnoise::Field::Probe)));
        for f in osnoise::Field::ALL {
            if *f != osnoise::Field::Probe {
                assert!(takes(&["noise"], osnoise(*f)), "{f:?}");
            }
        }
        for f in campaign::Field::ALL {
            assert!(takes(&["campaign"], campaign(*f)), "{f:?}");
        }
    }

    #[test]
    fn a_refusal_reads_with_the_flag() {
        let e = bound::parse_cap("5000").unwrap_err().to_string();
        assert!(render(&e).starts_with("--cap: '5000' has no unit"), "{e}");
        let e = monitor::trace_bursts("10s/5s").unwrap_err().to_string();
        assert!(render(&e).starts_with("--trace-burst: '10s/5s'"), "{e}");
        let e = monitor::bind("nowhere").unwrap_err();
        assert!(render(&e).starts_with("--listen: 'nowhere'"), "{e}");
    }
}
