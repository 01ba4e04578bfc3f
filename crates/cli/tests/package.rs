//! The Debian package, installed on this machine as a target would install it: `scripts/package.sh`
//! builds it from the test binary, `dpkg -i` installs it, the installed binary, man pages and
//! completion scripts are checked, a 2-s measurement runs from /usr/bin, and `dpkg -r` leaves
//! nothing of the package behind.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sh(cmd: &mut Command) -> (bool, String) {
    let o = cmd.output().expect("spawn");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

/// Removes the package however the test ends.
struct Remove;
impl Drop for Remove {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["-r", "rtscope"]).output();
    }
}

#[test]
fn the_package_installs_runs_and_removes_cleanly() {
    rtscope_testkit::need_root!("dpkg -i installs into /usr");
    for tool in ["dpkg-deb", "dpkg-shlibdeps", "zsh", "fish"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
        {
            rtscope_testkit::skipped(format!(
                "{tool} not installed (scripts/setup.sh --test installs it)"
            ));
            return;
        }
    }
    if installed("rtscope") {
        rtscope_testkit::skipped("a package named rtscope is already installed: not replaced");
        return;
    }
    let out = rtscope_testkit::tmp();
    let (ok, text) = sh(Command::new(repo().join("scripts/package.sh"))
        .args(["--binary", rtscope_testkit::bin!(), "--no-dbgsym", "--out"])
        .arg(out.path()));
    assert!(ok, "package.sh failed:\n{text}");
    let deb = std::fs::read_dir(out.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .unwrap_or_else(|| panic!("no .deb written:\n{text}"));

    // Its control data: the libraries the binary links, the tools it drives.
    let (ok, info) = sh(Command::new("dpkg-deb").args(["-f"]).arg(&deb));
    assert!(ok, "{info}");
    assert!(info.contains("Package: rtscope"), "{info}");
    let depends = info
        .lines()
        .find(|l| l.starts_with("Depends:"))
        .unwrap_or_else(|| panic!("no Depends:\n{info}"));
    for lib in ["libelf1", "zlib1g", "libc6"] {
        assert!(depends.contains(lib), "{depends}");
    }
    assert!(info.contains("Recommends: rt-tests, rt-app"), "{info}");

    let _remove = Remove;
    let (ok, text) = sh(Command::new("dpkg").arg("-i").arg(&deb));
    assert!(ok, "dpkg -i failed:\n{text}");
    let (_, files) = sh(Command::new("dpkg").args(["-L", "rtscope"]));
    let files: Vec<PathBuf> = files
        .lines()
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .collect();

    // The installed binary, stripped of its debug information, is the one that was packaged.
    let (ok, v) = sh(Command::new("/usr/bin/rtscope").arg("--version"));
    assert!(ok && v.starts_with("rtscope "), "{v}");
    let (_, sections) = sh(Command::new("readelf").args(["-S", "/usr/bin/rtscope"]));
    assert!(!sections.contains(".debug_info"), "not stripped");

    // A man page for the tool and for each verb, where man looks.
    for page in ["rtscope", "rtscope-measure", "rtscope-lab-run"] {
        let (ok, path) = sh(Command::new("man").args(["-w", page]));
        assert!(ok, "man -w {page}: {path}");
        assert!(path.trim().ends_with(".1.gz"), "{path}");
    }
    // The completion scripts parse in their shells.
    for (shell, args, file) in [
        (
            "bash",
            vec!["-n"],
            "/usr/share/bash-completion/completions/rtscope",
        ),
        (
            "zsh",
            vec!["-n"],
            "/usr/share/zsh/vendor-completions/_rtscope",
        ),
        (
            "fish",
            vec!["--no-execute"],
            "/usr/share/fish/vendor_completions.d/rtscope.fish",
        ),
    ] {
        let (ok, text) = sh(Command::new(shell).args(&args).arg(file));
        assert!(ok, "{shell} {file}: {text}");
    }
    // The service is installed, not enabled, and names the installed binary.
    let unit = std::fs::read_to_string("/lib/systemd/system/rtscope-monitor.service").unwrap();
    assert!(
        unit.contains("ExecStart=/usr/bin/rtscope monitor"),
        "{unit}"
    );
    assert!(Path::new("/usr/share/rtscope/grafana/rtscope-latency.json").is_file());

    // A measurement from the installed binary.
    let d = rtscope_testkit::tmp();
    let json = d.path().join("m.json");
    let (ok, text) = sh(Command::new("/usr/bin/rtscope")
        .args(["measure", "-D", "2s", "-q", "--no-store", "--json"])
        .arg(&json)
        .env("XDG_DATA_HOME", d.path()));
    assert!(ok, "installed rtscope measure failed:\n{text}");
    let rec = rtscope_testkit::read_json(&json);
    assert!(
        rec["kind"]["measurement"]["threads"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{rec}"
    );

    // Removed: nothing of the package is left.
    let (ok, text) = sh(Command::new("dpkg").args(["-r", "rtscope"]));
    assert!(ok, "dpkg -r failed:\n{text}");
    assert!(!installed("rtscope"));
    assert!(files.len() > 40, "{} files", files.len());
    let left: Vec<&PathBuf> = files.iter().filter(|p| p.exists()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
