//! The field-to-flag maps (`rtscope_cli::fields_*`): every library field is a flag of the verb
//! that takes it, checked against the clap tree, and a library refusal reads with the flag.

/// Whether a verb (`["taskset"]`: any of its subcommands) takes `flag` (`--long` or `-s`).
fn takes(verb: &[&str], flag: &str) -> bool {
    fn any(c: &clap::Command, flag: &str) -> bool {
        c.get_arguments().any(|a| {
            a.get_long().is_some_and(|l| flag == format!("--{l}"))
                || a.get_short().is_some_and(|s| flag == format!("-{s}"))
        }) || c.get_subcommands().any(|s| any(s, flag))
    }
    let mut c = <rtscope_cli::Cli as clap::CommandFactory>::command();
    for v in verb {
        match c.find_subcommand(v) {
            Some(s) => c = s.clone(),
            None => return false,
        }
    }
    any(&c, flag)
}

mod store {
    use super::takes;
    use rtscope_cli::fields_store::{flag, render};
    use rtscope_store::Field;

    #[test]
    fn every_field_is_a_flag() {
        assert!(takes(&["runs"], flag(Field::Db)));
        assert!(takes(&["bound"], flag(Field::RtslDb)));
    }

    #[test]
    fn a_refusal_reads_with_the_flag() {
        let e = rtscope_store::StoreError::BadUrl("x".into()).to_string();
        assert_eq!(render(&e), "--db: x");
    }

    /// The command printed for a record the database did not take, once the binary named the
    /// store's fields (`rtscope_cli::main` does so first).
    #[test]
    fn the_fallback_import_command_reads_with_the_flag() {
        rtscope_store::fallback::set_field_names(flag);
        let c = rtscope_store::fallback::ImportCommand {
            db: Some("/x/results.db".into()),
            file: "/f/r.json".into(),
        };
        assert_eq!(
            c.to_string(),
            "rtscope import --db '/x/results.db' '/f/r.json'"
        );
    }
}

mod bench {
    use super::takes;
    use rtscope_bench::{common, mbwi, pdlt, rhealstone, sched_scale, taskset};
    // The maps are functions named as the modules of their fields (a name in each namespace).
    use rtscope_cli::fields_bench::{bench, mbwi, pdlt, render, rhealstone, sched_scale, taskset};

    #[test]
    fn every_field_is_a_flag_of_its_verb() {
        for f in common::Field::ALL {
            for verb in ["pdlt", "rhealstone", "sched-scale"] {
                assert!(takes(&[verb], bench(*f)), "{verb} {}", bench(*f));
            }
        }
        for f in pdlt::Field::ALL {
            assert!(takes(&["pdlt"], pdlt(*f)), "{f:?}");
        }
        for f in rhealstone::Field::ALL {
            assert!(takes(&["rhealstone"], rhealstone(*f)), "{f:?}");
        }
        for f in sched_scale::Field::ALL {
            assert!(takes(&["sched-scale"], sched_scale(*f)), "{f:?}");
        }
        for f in mbwi::Field::ALL {
            assert!(takes(&["mbwi"], mbwi(*f)), "{f:?}");
        }
        for f in taskset::field::Field::ALL {
            assert!(takes(&["taskset"], taskset(*f)), "{f:?}");
        }
    }

    #[test]
    fn a_refusal_reads_with_the_flag() {
        use std::time::Duration;
        let flags = taskset::job::GenFlags {
            n: 3,
            utilisation: 0.5,
            method: "randfixedsum".into(),
            tmin: Duration::ZERO,
            tmax: Duration::from_millis(100),
            periods: Vec::new(),
            period_gran: Duration::from_micros(100),
            cmin: None,
            umax: 1.0,
            deadlines: "implicit".into(),
            dmin_frac: 0.5,
            seed: 1,
            count: 1,
            cpu_count: Some(1),
            output: None,
            format: "json".into(),
        };
        let e = taskset::job::gen_params(&flags).unwrap_err().to_string();
        assert_eq!(render(&e), "--tmin: must be in (0, 1h], got 0ns");
        let hint = render(taskset::rtapp::ENGINE_HINT);
        assert!(hint.ends_with("(--engine rt-app)"), "{hint}");
    }
}

mod lab {
    use super::takes;
    use rtscope_cli::fields_lab::{flag, render};
    use rtscope_lab::field::Field;

    #[test]
    fn every_field_is_a_flag_of_lab() {
        for f in Field::ALL {
            assert!(takes(&["lab"], flag(*f)), "{f:?}");
        }
    }

    #[test]
    fn a_refusal_reads_with_the_flag() {
        let e = rtscope_lab::nic::NicLoad::parse("0")
            .err()
            .map(|e| e.to_string());
        let e = e.unwrap_or_default();
        assert!(render(&e).starts_with("--nic-load: must be 1..="), "{e}");
    }
}

mod practise {
    use super::takes;
    use rtscope_cli::fields_practise::flag;
    use rtscope_practise::modes::Field;

    #[test]
    fn every_field_is_a_flag_of_its_verb() {
        for f in Field::ALL {
            let (verb, name) = match f {
                Field::TraceKeep => ("trace", flag(*f)),
                Field::Duration => ("practise", "--duration"),
                // `practise kernel` times the kernel's structures on every online CPU.
                Field::Cpus => continue,
                _ => ("practise", flag(*f)),
            };
            assert!(takes(&[verb], name), "{f:?}");
        }
    }
}

mod load {
    use super::takes;
    use rtscope_cli::fields_load::{flag, render};
    use rtscope_load::Field;

    #[test]
    fn every_field_is_a_flag_of_load_or_measure() {
        // `exec` is a load kind; the fds of a hackbench group are set only by the load crate's
        // test host (`rtscope-load-testhost --fds`), the cli keeps the crate's default.
        let flagless = [Field::Exec, Field::HackbenchFds];
        for f in Field::ALL.iter().filter(|f| !flagless.contains(f)) {
            assert!(
                takes(&["load"], flag(*f)) || takes(&["measure"], flag(*f)),
                "{f:?}"
            );
        }
    }

    #[test]
    fn a_refusal_reads_with_the_flag() {
        let e = rtscope_load::parse_kinds("io,disk")
            .unwrap_err()
            .to_string();
        assert_eq!(
            render(&e),
            "--load: 'disk' overlaps 'io' in 'io,disk' (io = hackbench+disk+net)"
        );
    }
}

mod verbs {
    use super::takes;
    use rtscope_cli::fields_verbs::{bound, campaign, monitor, osnoise, render};
    use rtscope_verbs::{bound, campaign, monitor, osnoise};

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
        use std::time::Duration;
        let f = bound::BoundFlags {
            input: None,
            rtsl_db: Vec::new(),
            trace: Some("/nonexistent/t.rtt".into()),
            assume_thread: Some(Duration::from_secs(2)),
            samples: None,
            series: None,
            cap: Duration::from_secs(1),
            max_iterations: 100,
        };
        let json = rtscope_session::outputs::JsonDest(None);
        let e = bound::run(&f, &json).unwrap_err().to_string();
        assert_eq!(
            render(&e),
            "--assume-thread: 2s is out of range (1ns ..= 1s)"
        );
        let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = busy.local_addr().unwrap();
        let e = monitor::bind(addr).unwrap_err();
        assert_eq!(
            render(&e),
            format!("--listen {addr}: the address is in use")
        );
    }

    /// What the monitor serves to scrapers and says when it starts, and what `noise` and
    /// `measure --probe timerlat` say and store, name the flags that govern them.
    #[test]
    fn texts_for_people_and_scrapers_read_with_the_flags() {
        use rtscope_session::live::View;
        use std::time::Duration;
        let m = std::sync::Arc::new(monitor::Metrics::new(monitor));
        let mut v = monitor::MonitorView::new(
            m.clone(),
            monitor::MonitorOptions {
                window: Duration::from_secs(1),
                expose_names: false,
            },
            Box::new(rtscope_session::live::NoView),
        );
        let mut spec = rtscope_store::fixture::Spec::new("run-1", 1);
        spec.with_analysis = true;
        v.interim(
            &rtscope_store::fixture::record(&spec),
            Duration::from_secs(1),
        );
        let t = m.encode();
        assert!(t.contains("thread names only with --expose-names)."), "{t}");
        assert!(
            t.contains("# HELP rtscope_trace_bursts Tracing bursts completed (--trace-burst): "),
            "{t}"
        );
        assert!(
            t.contains("# HELP rtscope_traced_seconds Time the completed tracing bursts traced (--trace-burst)."),
            "{t}"
        );
        let addr: std::net::SocketAddr = ([127, 0, 0, 1], 9464).into();
        let line = monitor::started_line(addr, 10.0, true, rtscope_cli::fields::flag);
        assert!(line.ends_with(", nothing stored (--no-store)"), "{line}");

        let tl = osnoise::TimerlatPlan {
            cpus: vec![0],
            period_us: 1000,
            duration_s: None,
            priority: None,
            linear_max_us: 100,
            lab_hint: String::new(),
            field_names: osnoise,
        };
        assert_eq!(
            osnoise::timerlat_announce(&tl),
            "rtscope measure --probe timerlat: CPUs [0], period 1000 us until Ctrl-C"
        );
        let np = osnoise::NoisePlan {
            cpus: vec![0],
            duration_s: 1.0,
            period_us: 1000,
            runtime_us: 900,
            threshold_us: None,
            stop_us: Some(20),
            top: 5,
            lab_hint: String::new(),
            field_names: osnoise,
        };
        let w = osnoise::stopped_warning(&np);
        assert_eq!(w.code, rtscope_model::WarningCode::TracerStopped);
        assert_eq!(
            w.message,
            "the tracer stopped itself: a single noise reached --stop 20 us"
        );
    }
}

mod offline {
    use super::takes;
    use rtscope_cli::fields_offline::{
        advice, analyze, bench_files, export, mbwi_job, render, stored, trace_record,
    };
    use rtscope_model::field::Advice;
    use rtscope_report::export;
    use rtscope_verbs::{analyze, bench, capture, mbwi, stored};

    #[test]
    fn every_field_is_a_flag_of_its_verb() {
        for f in capture::Field::ALL {
            assert!(takes(&["trace", "record"], trace_record(*f)), "{f:?}");
        }
        for f in analyze::Field::ALL {
            let verb: &[&str] = match f {
                analyze::Field::TraceKeep => &["trace", "record"],
                analyze::Field::TraceFileMode => &["measure"],
                _ => &["analyze"],
            };
            assert!(takes(verb, analyze(*f)), "{f:?}");
        }
        for f in stored::StoredField::ALL {
            let verb = match f {
                stored::StoredField::Policy | stored::StoredField::Campaign => "runs",
                stored::StoredField::Format | stored::StoredField::Output => "export",
                _ => "compare",
            };
            assert!(takes(&[verb], stored(*f)), "{f:?}");
        }
        assert!(takes(&["report"], stored(stored::StoredField::Campaign)));
        for f in bench::Field::ALL {
            for verb in ["pdlt", "sched-scale"] {
                assert!(takes(&[verb], bench_files(*f)), "{verb} {f:?}");
            }
        }
        for f in mbwi::Field::ALL {
            assert!(takes(&["mbwi"], mbwi_job(*f)), "{f:?}");
        }
        assert!(takes(&["measure"], export(export::Field::Bound)));
        assert!(takes(&["lab", "run"], advice(Advice::LabKernel)));
        assert!(takes(
            &["lab", "kernel", "build"],
            advice(Advice::LabPreset)
        ));
    }

    #[test]
    fn a_refusal_reads_with_the_flag() {
        let msg = format!("{}: x", capture::Field::Keep);
        assert_eq!(render(&msg), "--trace-keep: x");
        let msg = format!("{}: x", stored::StoredField::FailAbovePct);
        assert_eq!(render(&msg), "--fail-above-pct: x");
        let svg = export::exporter("svg-bound").map(|e| render(e.description()));
        assert_eq!(
            svg.as_deref(),
            Some("figure: the latency bound against the observed latency (--bound runs)")
        );
        assert_eq!(
            rtscope_verbs::flight::keep_everything(analyze),
            "use --trace-file-mode all to keep everything"
        );
        let hint = render(&rtscope_bench::labdev::unavailable().unwrap_or_default());
        assert!(
            hint.is_empty() || hint.contains("`rtscope lab run --kernel trace -- …`"),
            "{hint}"
        );
    }
}
