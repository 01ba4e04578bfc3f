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
    use rtscope_cli::cmd::lab::{mem_mib, scratch_disk_bytes, verb_duration_s, verb_length_s};
    #[test]
    fn mem_and_duration_flags() {
        assert_eq!(mem_mib("1G").unwrap(), 1024);
        assert_eq!(mem_mib("768M").unwrap(), 768);
        assert_eq!(mem_mib("512").unwrap(), 512);
        for bad in ["64M", "1T", "x", ""] {
            assert!(mem_mib(bad).is_err(), "{bad}");
        }
        let v = |s: &[&str]| verb_duration_s(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(v(&["measure", "-D", "10s"]), Some(10.0));
        assert_eq!(v(&["measure", "-D2m"]), Some(120.0));
        assert_eq!(v(&["measure", "--duration=5"]), Some(5.0));
        assert_eq!(v(&["measure"]), None);
        let l = |s: &[&str]| verb_length_s(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(l(&["measure", "-D", "10s"]), Some(10.0));
        // 3 loads × 4 sets × 2 policies (default) × 2 s.
        let sweep = [
            "taskset",
            "sweep",
            "--loads",
            "0.6,0.7,0.8",
            "--sets",
            "4",
            "-D",
            "2s",
        ];
        assert_eq!(l(&sweep), Some(48.0));
        // Defaults: 1 load given, 50 sets, 2 policies, 10 s.
        assert_eq!(
            l(&["taskset", "sweep", "--loads=3.9", "--policies", "deadline"]),
            Some(500.0)
        );
    }

    #[test]
    fn a_scratch_disk_for_disk_loads_only() {
        let d =
            |s: &[&str]| scratch_disk_bytes(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        let extra = 128 << 20;
        assert_eq!(
            d(&["measure", "-D", "20s", "--load", "io"]),
            Some((1 << 30) + extra)
        );
        assert_eq!(
            d(&["measure", "--load=cpu-cache,disk", "--disk-size", "64M"]),
            Some((64 << 20) + extra)
        );
        assert_eq!(
            d(&[
                "measure",
                "--load",
                "net",
                "--load",
                "io",
                "--disk-size=256M"
            ]),
            Some((256 << 20) + extra)
        );
        assert_eq!(d(&["load", "io", "-D", "5s"]), Some((1 << 30) + extra));
        assert_eq!(d(&["load", "-D", "5s", "disk"]), Some((1 << 30) + extra));
        for none in [
            &["measure", "-D", "20s"][..],
            &["measure", "--load", "cpu-cache"],
            &["measure", "--load", "hackbench,net", "--disk-size", "64M"],
            &["load", "cpu-cache"],
            &["load", "exec", "--", "--load", "io"],
            &["measure", "--tag", "io"],
        ] {
            assert_eq!(d(none), None, "{none:?}");
        }
    }
}
