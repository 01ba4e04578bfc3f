//! The verbs' own checks that run before anything starts (`rtscope_cli::cmd`): measure's
//! defaults, doctor's flag checks, the lab's reading of the guest verb's flags.

mod measure {
    use rtscope_cli::cmd::measure::defaults;

    /// The flags' defaults parse into a request the library accepts as given.
    #[test]
    fn defaults_parse() {
        let d = defaults();
        assert_eq!(
            (d.interval_us, d.worst, d.linear_max_us),
            (1000, 10, 10_000)
        );
        assert_eq!(d.trace, rtscope_trace::Mechanism::Off);
    }

    include!("../../session/tests/support/request.rs");

    /// The library's test fixture (`request_fixture`, what its tests and the verbs' take for
    /// "no flags") is this parser's defaults, field for field.
    #[test]
    fn the_librarys_fixture_is_these_defaults() {
        let mut d = defaults();
        let mut f = request_fixture();
        for r in [&mut d, &mut f] {
            r.cmdline.clear();
            r.field_names = rtscope_session::input::Field::key;
        }
        assert_eq!(format!("{d:?}"), format!("{f:?}"));
    }
}

mod doctor {
    use clap::Parser;
    use rtscope_cli::cmd::doctor::{check, Args};

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: Args,
    }

    fn args(argv: &[&str]) -> Args {
        T::try_parse_from(std::iter::once("doctor").chain(argv.iter().copied()))
            .unwrap()
            .a
    }

    #[test]
    fn bad_input_is_one_line_naming_the_flag() {
        let rw = |_: &str| false;
        let e = check(&args(&["--fix", "RT999"]), &[0, 1], true, &rw)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--fix: unknown check code \"RT999\"") && !e.contains('\n'),
            "{e}"
        );
        let e = check(&args(&["--cpus", "1,5"]), &[0, 1], true, &rw)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--cpus: CPU 5 is not online (online: 0-1)");
        let e = check(&args(&["--fix", "RT009"]), &[0, 1], false, &rw)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--fix: needs root"), "{e}");
        let e = check(&args(&["--revert"]), &[0, 1], true, &|d| d == "/sys")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--revert: /sys is mounted read-only, so nothing can be changed"
        );
        assert_eq!(
            check(
                &args(&["--fix", "RT009", "RT009-timer-migration"]),
                &[0, 1],
                true,
                &rw
            )
            .unwrap(),
            vec!["RT009-timer-migration".to_string()]
        );
        for e in [
            check(&args(&["--fix", "RT999"]), &[0], true, &rw).unwrap_err(),
            check(&args(&["--revert"]), &[0], false, &rw).unwrap_err(),
        ] {
            assert_eq!(rtscope_cli::exit::report(Err(e)), rtscope_cli::exit::USAGE);
        }
        assert!(T::try_parse_from(["doctor", "--run", "1s", "--from", "x"]).is_err());
    }
}

mod lab {
    use rtscope_cli::cmd::lab::guest_work;
    use rtscope_lab::verb::VerbWork;

    /// The guest verb `s` as `lab run -- s…` reads it on the host.
    fn work(s: &[&str]) -> anyhow::Result<VerbWork> {
        guest_work(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>())
    }

    fn length(s: &[&str]) -> Option<f64> {
        work(s).unwrap_or_else(|e| panic!("{s:?}: {e}")).length_s
    }

    fn disk(s: &[&str]) -> Option<u64> {
        work(s)
            .unwrap_or_else(|e| panic!("{s:?}: {e}"))
            .scratch_disk()
    }

    #[test]
    fn the_verbs_duration_sizes_its_limit() {
        assert_eq!(length(&["measure", "-D", "10s"]), Some(10.0));
        assert_eq!(length(&["measure", "-D2m"]), Some(120.0));
        assert_eq!(length(&["measure", "--duration=5"]), Some(5.0));
        assert_eq!(length(&["measure"]), None);
        assert_eq!(length(&["load", "cpu-cache", "-D", "30s"]), Some(30.0));
        assert_eq!(
            length(&["trace", "record", "-D", "20s", "-o", "t.rtt"]),
            Some(20.0)
        );
        assert_eq!(length(&["cyclictest", "-m", "-D", "15s", "-q"]), Some(15.0));
        // A verb's own default is not its stated length.
        assert_eq!(length(&["noise"]), None);
        // 3 loads × 4 sets × 2 policies (default) × 2 s.
        let sweep = [
            "taskset",
            "sweep",
            "--placement",
            "partitioned",
            "--loads",
            "0.6,0.7,0.8",
            "--sets",
            "4",
            "-D",
            "2s",
        ];
        assert_eq!(length(&sweep), Some(48.0));
        // Defaults: 1 load given, 50 sets, 2 policies, 10 s.
        assert_eq!(
            length(&[
                "taskset",
                "sweep",
                "--placement",
                "partitioned",
                "--loads=3.9",
                "--policies",
                "deadline"
            ]),
            Some(500.0)
        );
    }

    #[test]
    fn a_scratch_disk_for_disk_loads_only() {
        let extra = 128 << 20;
        assert_eq!(
            disk(&["measure", "-D", "20s", "--load", "io"]),
            Some((1 << 30) + extra)
        );
        assert_eq!(
            disk(&["measure", "--load=cpu-cache,disk", "--disk-size", "64M"]),
            Some((64 << 20) + extra)
        );
        assert_eq!(
            disk(&["measure", "--load", "cpu-cache,io", "--disk-size=256M"]),
            Some((256 << 20) + extra)
        );
        assert_eq!(disk(&["load", "io", "-D", "5s"]), Some((1 << 30) + extra));
        assert_eq!(disk(&["load", "-D", "5s", "disk"]), Some((1 << 30) + extra));
        assert_eq!(
            disk(&["run", "--load", "disk", "--disk-size", "2G"]),
            Some((2 << 30) + extra)
        );
        for none in [
            &["measure", "-D", "20s"][..],
            &["measure", "--load", "cpu-cache"],
            &["measure", "--load", "hackbench,net", "--disk-size", "64M"],
            &["load", "cpu-cache"],
            &["load", "exec", "--", "--load", "io"],
            &["measure", "--tag", "load=io"],
        ] {
            assert_eq!(disk(none), None, "{none:?}");
        }
    }

    #[test]
    fn a_load_keeps_every_vcpu_busy() {
        let busy = |s: &[&str]| work(s).unwrap_or_else(|e| panic!("{s:?}: {e}")).load;
        assert!(busy(&["measure", "--load", "cpu-cache"]));
        assert!(busy(&["load", "hackbench", "-D", "5s"]));
        assert!(busy(&["practise", "kernel", "--load", "fifo"]));
        assert!(!busy(&["measure", "--load", "idle"]));
        assert!(!busy(&["measure", "-D", "5s"]));
        assert!(!busy(&["practise", "kernel", "--load", "none"]));
    }

    /// Parsed, not resolved: a file only the guest has is no refusal on the host.
    #[test]
    fn the_guests_files_are_not_read_on_the_host() {
        assert_eq!(
            length(&["taskset", "run", "/only/in/the/guest.json", "-D", "3s"]),
            Some(3.0)
        );
        assert_eq!(
            length(&["measure", "--db", "/only/in/the/guest.db", "-D", "1s"]),
            Some(1.0)
        );
    }

    /// A bad flag of the guest verb is refused on the host, naming it, as bad input.
    #[test]
    fn a_bad_guest_flag_is_bad_input() {
        let cases: &[(&[&str], &str)] = &[
            (&["measure", "-D", "10x"], "--duration"),
            (&["measure", "--load", "net", "--load", "io"], "--load"),
            (&["measure", "--no-such-flag"], "--no-such-flag"),
            (
                &["measure", "--load", "disk", "--disk-size", "lots"],
                "--disk-size",
            ),
            (&["taskset", "sweep", "--loads", "0.5"], "--placement"),
            (&["cyclictest", "-p", "200"], "-p"),
        ];
        for (verb, flag) in cases {
            let e = work(verb)
                .err()
                .unwrap_or_else(|| panic!("{verb:?} accepted"));
            let line = e.to_string();
            assert!(line.contains(flag), "{verb:?}: {line}");
            assert_eq!(rtscope_cli::exit::report(Err(e)), rtscope_cli::exit::USAGE);
        }
        // What the host leaves to the guest: the verb's help.
        assert_eq!(work(&["measure", "--help"]).unwrap(), VerbWork::default());
    }
}

mod bound {
    use rtscope_cli::cmd::bound::cap;
    use std::time::Duration;

    /// `--cap` takes a duration within 1us ..= 1h; a bare number is refused with the spelling
    /// in ns.
    #[test]
    fn cap_parsing() {
        assert_eq!(cap("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(cap("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(cap("5000ns").unwrap(), Duration::from_nanos(5_000));
        assert_eq!(cap("1.5ms").unwrap(), Duration::from_micros(1_500));
        let e = cap("5000").unwrap_err();
        assert!(e.contains("write 5000ns"), "{e}");
        assert_eq!(
            cap("10ns").unwrap_err(),
            "10ns is out of range (1us ..= 1h)"
        );
        assert!(cap("2h").is_err());
        assert!(cap("-1s").is_err());
    }
}
