//! Command lines read before clap or outside argv: old spellings rewritten
//! (`rtscope_cli::deprecated`), and a campaign cell's `measure` arguments read by the cli's
//! own grammar (`rtscope_cli::resolver`).

mod deprecated {
    use rtscope_cli::deprecated::rewrite_argv;
    use std::ffi::OsString;

    fn v(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn old_spellings_become_new_ones() {
        let rows = [
            (
                "x measure --threshold 50 -q",
                "x measure --record-above 50 -q",
            ),
            ("x measure --threshold=50", "x measure --record-above=50"),
            ("x noise -p 1000 -D 1s", "x noise --period 1000 -D 1s"),
            ("x noise -p1000", "x noise --period=1000"),
            ("x sched-scale --sleep-ms 10", "x sched-scale --sleep 10ms"),
            (
                "x sched-scale --sleep-ms=2.5",
                "x sched-scale --sleep=2.5ms",
            ),
            (
                "x trace record --keep all",
                "x trace record --trace-keep all",
            ),
            ("x taskset gen --cpus 4", "x taskset gen --cpu-count 4"),
            // A unit-named duration: the old unit goes on every bare number of a list or range.
            (
                "x taskset gen --periods-ms 10,20.5 --tmin-ms 5",
                "x taskset gen --periods 10ms,20.5ms --tmin 5ms",
            ),
            (
                "x taskset gen --periods-ms=10,20",
                "x taskset gen --periods=10ms,20ms",
            ),
            ("x pdlt --offsets-us -2:30", "x pdlt --offsets -2us:30us"),
            (
                "x pdlt --offsets-us=-2.5:1e3",
                "x pdlt --offsets=-2.5us:1e3",
            ),
            ("x pdlt --step-us 5us", "x pdlt --step 5us"),
            (
                "x taskset sweep --rt-runtime-us -1 --fair-server-us 10000",
                "x taskset sweep --rt-runtime -1 --fair-server 10000us",
            ),
            (
                "x taskset sweep --rt-runtime-us 950000",
                "x taskset sweep --rt-runtime 950000us",
            ),
            ("x mbwi run --tick-us 4000", "x mbwi run --tick 4000us"),
            ("x doctor --target-us=5", "x doctor --target=5us"),
            (
                "x taskset check s.json --margin-us 0 --inflate-us 12.5",
                "x taskset check s.json --margin-add 0us --inflate 12.5us",
            ),
            (
                "x rhealstone --timer-interval-us 100 --medium-burst-us 20",
                "x rhealstone --timer-interval 100us --medium-burst 20us",
            ),
            // Renamed in `taskset gen` only: `taskset run` never took it.
            ("x taskset run --tmin-ms 5", "x taskset run --tmin-ms 5"),
            // Not renamed in this verb, a value passed on, or after `--`: untouched.
            ("x measure -p 90 --cpus 1", "x measure -p 90 --cpus 1"),
            (
                "x measure --load-exec --threshold",
                "x measure --load-exec --threshold",
            ),
            (
                "x lab run -- measure --threshold 5",
                "x lab run -- measure --threshold 5",
            ),
            ("x measure --thresholds", "x measure --thresholds"),
        ];
        for (from, to) in rows {
            assert_eq!(rewrite_argv(&v(from)), v(to), "{from}");
        }
    }
}

mod resolver {
    use rtscope_cli::resolver::measure_plan;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn extra_args_are_read_by_the_measure_grammar() {
        let e = measure_plan(&v("--policy other --no-store --interval 5"))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("--interval: 5 is out of range (10..=10000000 us)")
        );
        let e = measure_plan(&v("--no-store --bogus"))
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_deref().is_some_and(|e| e.contains("'--bogus'")),
            "{e:?}"
        );
        let e = measure_plan(&v("--no-store -D 31d"))
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("--duration") && e.contains("30d")),
            "{e:?}"
        );
        let p = measure_plan(&v("--policy other --no-store -D 2s --threshold 50"));
        match p {
            Ok(p) => {
                assert_eq!(p.config.threshold_us, Some(50));
                assert_eq!(p.cmdline[..2], ["rtscope", "measure"]);
            }
            Err(e) => println!("SKIPPED: not resolvable here: {e}"),
        }
    }
}
