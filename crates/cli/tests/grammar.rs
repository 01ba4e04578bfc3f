//! One grammar (docs/cli.md): every verb's `--help` spells the shared flags the same way.

use std::process::Command;

fn help(verb: &[&str]) -> String {
    let mut args: Vec<&str> = verb.to_vec();
    args.push("--help");
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(&args)
        .output()
        .expect("rtscope --help");
    assert!(o.status.success(), "{verb:?} --help failed");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The flag's usage as `--help` prints it (`-D, --duration <TIME>`), when the verb has it.
fn spelling(help: &str, flag: &str) -> Option<String> {
    help.lines().map(str::trim).find_map(|l| {
        let head = l.split("  ").next().unwrap_or(l).trim();
        let long = head.split(", ").last().unwrap_or(head);
        (long == flag || long.starts_with(&format!("{flag} "))).then(|| head.to_string())
    })
}

const VERBS: &[&[&str]] = &[
    &["run"],
    &["measure"],
    &["import"],
    &["load"],
    &["trace", "record"],
    &["analyze"],
    &["bound"],
    &["rhealstone"],
    &["sched-scale"],
    &["pdlt"],
    &["taskset", "gen"],
    &["taskset", "check"],
    &["taskset", "run"],
    &["campaign"],
    &["runs"],
    &["show"],
    &["compare"],
    &["report"],
    &["export"],
];

/// Verbs that produce a result: they store it by default and take `--no-store`, `--db`, `--tag`
/// and `-q`.
const PRODUCERS: &[&[&str]] = &[
    &["run"],
    &["measure"],
    &["import"],
    &["rhealstone"],
    &["sched-scale"],
    &["pdlt"],
    &["taskset", "run"],
];

#[test]
fn shared_flags_have_one_spelling() {
    let expected = [
        ("--duration", "-D, --duration <TIME>"),
        ("--db", "--db <PATH|URL>"),
        ("--cpus", "--cpus <LIST>"),
        ("--tag", "--tag <K=V>"),
    ];
    let mut bad = Vec::new();
    for v in VERBS {
        let h = help(v);
        for (flag, want) in expected {
            if let Some(got) = spelling(&h, flag) {
                // `-c, --cpus <LIST>` (measure's short form) is the same flag.
                if !got.ends_with(want.trim_start_matches("-D, "))
                    || (flag == "--duration" && got != want)
                {
                    bad.push(format!("{v:?}: {got:?}, expected {want:?}"));
                }
            }
        }
    }
    for v in PRODUCERS {
        let h = help(v);
        for flag in ["--no-store", "--db", "--tag", "--quiet"] {
            if spelling(&h, flag).is_none() {
                bad.push(format!("{v:?} produces a result but has no {flag}"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `rtscope completions SHELL` and `rtscope man` come from the same definitions as `--help`:
/// every verb and the shared flags are in them.
#[test]
fn completions_and_man_page_cover_every_verb() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
            .args(args)
            .output()
            .expect("rtscope");
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    for shell in ["bash", "zsh", "fish"] {
        let c = run(&["completions", shell]);
        for v in VERBS {
            assert!(c.contains(v[0]), "{shell}: no {}", v[0]);
        }
        for flag in ["no-store", "duration", "cpus"] {
            assert!(c.contains(flag), "{shell}: no --{flag}");
        }
    }
    // roff escapes hyphens (`sched\\-scale`).
    let man = run(&["man"]).replace("\\-", "-");
    assert!(
        man.contains(".TH rtscope 1"),
        "{}",
        &man[..man.len().min(200)]
    );
    for v in VERBS {
        assert!(man.contains(v[0]), "man page: no {}", v[0]);
    }
}
