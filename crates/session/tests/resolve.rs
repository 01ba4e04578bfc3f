//! Measurement requests resolved into plans, refused with the field and the range, and the
//! presets applied to them.

include!("support/request.rs");

use rtscope_model::{Policy, TimerMode};
use rtscope_session::resolve::*;
use rtscope_trace::Keep;
use std::time::Duration;

/// The request the cli builds from `rtscope measure` with no flags.
fn request() -> MeasureRequest {
    request_fixture()
}

fn refused(f: &MeasureRequest) -> String {
    match measure(f, "measure", None) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted: {f:?}"),
    }
}

fn other() -> MeasureRequest {
    MeasureRequest {
        policy: Policy::Other,
        no_store: true,
        ..request()
    }
}

/// Requests refused before anything starts, with the exact line (fields as tokens: the
/// caller names them).
#[test]
fn refusals_name_the_field_and_the_range() {
    let rows: Vec<(MeasureRequest, &str)> = vec![
        (
            MeasureRequest { interval_us: 5, ..other() },
            "⟨interval⟩: 5 is out of range (10..=10000000 us)",
        ),
        (
            MeasureRequest { distance_us: 2_000_000, ..other() },
            "⟨distance⟩: 2000000 is out of range (0..=1000000 us)",
        ),
        (
            MeasureRequest { policy: Policy::Fifo, priority: Some(100), ..other() },
            "⟨priority⟩: 100 is out of range (1..=99)",
        ),
        (
            MeasureRequest { priority: Some(50), ..other() },
            "⟨priority⟩: only applies to ⟨policy⟩ fifo or rr (got ⟨policy⟩ other)",
        ),
        (
            MeasureRequest { policy: Policy::Fifo, nice: Some(5), ..other() },
            "⟨nice⟩: only applies to ⟨policy⟩ other",
        ),
        (
            MeasureRequest { nice: Some(30), ..other() },
            "⟨nice⟩: 30 is out of range (-20..=19)",
        ),
        (
            MeasureRequest { dl_period_us: Some(1000), ..other() },
            "⟨dl_runtime⟩/⟨dl_deadline⟩/⟨dl_period⟩: only apply to ⟨policy⟩ deadline",
        ),
        (
            MeasureRequest {
                policy: Policy::Deadline,
                dl_runtime_us: Some(900),
                dl_period_us: Some(500),
                ..other()
            },
            "⟨dl_runtime⟩: 900 is out of range (2..=500 us (must be ≤ ⟨dl_deadline⟩))",
        ),
        (
            MeasureRequest { policy: Policy::Deadline, dl_period_us: Some(50), ..other() },
            "⟨dl_period⟩: 50 is out of range (100..=4000000 us)",
        ),
        (
            MeasureRequest { loops: Some(0), ..other() },
            "⟨loops⟩: 0 is out of range (1..=9223372036854775807)",
        ),
        (
            MeasureRequest { worst: 20_000, ..other() },
            "⟨worst⟩: 20000 is out of range (0..=10000)",
        ),
        (
            MeasureRequest { linear_max_us: 0, ..other() },
            "⟨linear_max⟩: 0 is out of range (1..=1000000 us)",
        ),
        (
            MeasureRequest {
                load: Some(vec![rtscope_load::LoadKind::Io, rtscope_load::LoadKind::Disk]),
                ..other()
            },
            "⟨load.load⟩: 'disk' overlaps 'io' in 'io,disk' (io = hackbench+disk+net)",
        ),
        (
            MeasureRequest { trace_file: Some("x.rtt".into()), ..other() },
            "⟨trace_file⟩: needs ⟨trace⟩",
        ),
        (
            MeasureRequest {
                checkpoint: Some(Checkpoint::Every(Duration::from_secs(300))),
                ..other()
            },
            "⟨checkpoint⟩: checkpoints go to the results store; not with ⟨no_store⟩",
        ),
        (
            MeasureRequest { trace_keep: Some(Keep::All), ..other() },
            "⟨trace_keep⟩: needs ⟨trace⟩",
        ),
        (
            MeasureRequest { bound_points: 0, ..other() },
            "⟨bound_points⟩: 0 is out of range (1..=1000)",
        ),
        (
            MeasureRequest { bound: true, ..other() },
            "⟨bound⟩: needs a trace (⟨trace⟩, ⟨trace⟩=bpf or ⟨trace⟩=tracefs): the bound is computed from the run's kernel events",
        ),
    ];
    for (req, want) in rows {
        match measure(&req, "measure", None) {
            Err(e) if e.is_bad_input() => assert_eq!(e.to_string(), want),
            Err(e) => panic!("{want}: not bad input: {e}"),
            Ok(_) => panic!("{want}: accepted"),
        }
    }
}

#[test]
fn checkpoints_need_the_store_and_a_sane_period() {
    let every = |s: u64| Some(Checkpoint::Every(Duration::from_secs(s)));
    let stored = |c| MeasureRequest {
        checkpoint: c,
        no_store: false,
        db: Some("/proc/rtscope/r.db".into()),
        ..other()
    };
    // The database's directory is checked first: a refusal names the database.
    let e = refused(&stored(every(300)));
    assert!(e.starts_with("⟨db⟩ /proc/rtscope/r.db: "), "{e}");
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db").display().to_string();
    let f = MeasureRequest {
        db: Some(db.clone()),
        ..stored(every(9 * 86400))
    };
    assert_eq!(
        refused(&f),
        "⟨checkpoint⟩: 9d is out of range (1s ..= 7d, or off)"
    );
    let f = MeasureRequest {
        db: Some(db.clone()),
        ..stored(Some(Checkpoint::Off))
    };
    let p = measure(&f, "measure", None).unwrap();
    assert_eq!(p.store.map(|s| s.checkpoint), Some(None));
    let f = MeasureRequest {
        db: Some(db),
        ..stored(None)
    };
    let p = measure(&f, "measure", None).unwrap();
    assert_eq!(
        p.store.and_then(|s| s.checkpoint),
        Some(rtscope_session::DEFAULT_CHECKPOINT)
    );
}

/// Accepted requests and the configuration they resolve to.
#[test]
fn accepted_requests_resolve_to_the_config() {
    let online = match rtscope_probe::sys::online_cpus() {
        Ok(o) => o,
        Err(e) => {
            rtscope_testkit::skipped(format_args!("no online CPU list ({e})"));
            return;
        }
    };
    let minute = Some(Duration::from_secs(60));
    let f = MeasureRequest {
        cpus: Some(vec![online[0]]),
        interval_us: 500,
        distance_us: 100,
        nice: Some(-5),
        duration: Some(Duration::from_secs(120)),
        timer: TimerMode::Timerfd,
        tags: [("k".to_string(), "v".to_string())].into(),
        ..other()
    };
    let p = measure(&f, "measure", minute).unwrap();
    let c = &p.config;
    assert_eq!(
        (
            c.cpus.clone(),
            c.interval_us,
            c.distance_us,
            c.nice,
            c.priority
        ),
        (vec![online[0]], 500, 100, -5, 0)
    );
    assert_eq!(
        (c.duration_s, c.timer, c.policy),
        (Some(120.0), TimerMode::Timerfd, Policy::Other)
    );
    assert_eq!(p.tags.get("k").map(String::as_str), Some("v"));
    assert_eq!((c.trace.as_str(), p.trace_keep), ("off", Keep::All));
    assert!(p.store.is_none() && p.loads.is_none() && p.bound_points.is_none());
    // A CPU that is not online is refused, naming the field.
    let e = refused(&MeasureRequest {
        cpus: Some(vec![4095]),
        ..other()
    });
    assert!(e.starts_with("⟨cpus⟩: CPU 4095 is not online"), "{e}");
    // No duration and no loops: the verb's default duration; loops alone run by count.
    let p = measure(&other(), "run", minute).unwrap();
    assert_eq!((p.verb.as_str(), p.config.duration_s), ("run", Some(60.0)));
    let p = measure(
        &MeasureRequest {
            loops: Some(10),
            ..other()
        },
        "run",
        minute,
    )
    .unwrap();
    assert_eq!((p.config.duration_s, p.config.loops), (None, Some(10)));
    if rtscope_session::privilege::Privileges::current().sys_nice {
        let f = MeasureRequest {
            policy: Policy::Deadline,
            interval_us: 1000,
            ..other()
        };
        let d = measure(&f, "measure", None)
            .unwrap()
            .config
            .deadline
            .unwrap();
        // Runtime: 10 % of the interval, at least 50 µs; deadline and period: the interval.
        assert_eq!(
            (d.runtime_ns, d.deadline_ns, d.period_ns, d.reset_on_fork),
            (100_000, 1_000_000, 1_000_000, true)
        );
        let p = measure(
            &MeasureRequest {
                policy: Policy::Fifo,
                ..other()
            },
            "m",
            None,
        )
        .unwrap();
        assert_eq!((p.config.priority, p.trace_keep), (95, Keep::Relevant));
    } else {
        rtscope_testkit::skipped("DEADLINE/FIFO resolution needs CAP_SYS_NICE");
    }
}

mod preset {
    use super::*;
    use rtscope_session::preset::*;

    #[test]
    fn ospert13_fills_the_defaults_and_names_what_was_given() {
        let f = MeasureRequest {
            preset: Some(Preset::Ospert13),
            ..request()
        };
        let a = apply(&f).unwrap();
        assert_eq!(a.request.priority, Some(99));
        assert_eq!(a.request.distance_us, 500);
        assert_eq!(a.request.interval_us, 1000);
        assert_eq!(a.request.duration, Some(Duration::from_secs(1200)));
        assert_eq!(a.request.load_settings.wss.as_deref(), Some("20M"));
        assert_eq!(
            a.request.load_settings.disk_tool,
            rtscope_load::DiskTool::Auto
        );
        assert!(a.overridden.is_empty());

        let f = MeasureRequest {
            preset: Some(Preset::Ospert13),
            priority: Some(80),
            duration: Some(Duration::from_secs(120)),
            ..request()
        };
        let a = apply(&f).unwrap();
        assert_eq!(a.request.priority, Some(80));
        assert_eq!(a.request.duration, Some(Duration::from_secs(120)));
        assert_eq!(
            a.overridden,
            [
                "⟨priority⟩ 80 (the paper: 99)",
                "⟨duration⟩ 2m (the paper: 20 min)"
            ]
        );
    }
}
