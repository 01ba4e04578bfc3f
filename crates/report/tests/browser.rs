//! The report in a real browser: Debian's chromium, headless. Checks that every figure rendered
//! (a non-empty box with drawn elements), that no script error occurred, that the hostile
//! thread name shows as text and did not become an element, and writes a screenshot.
//!
//! The report itself carries no script and its CSP forbids scripts. The test loads a copy whose
//! CSP admits exactly one script, by nonce — the checker below — so anything injected through
//! an unescaped string would still be blocked *and* counted (it would appear as an extra
//! `<script>` element). Chromium: `scripts/ci-chromium.sh`; SKIPPED when it is missing.

use rtscope_report::html::{build, ReportOptions};
use rtscope_store::fixture::{self, Spec};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const NONCE: &str = "rtscopecheck";

const CHECKER: &str = r#"
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
document.addEventListener('securitypolicyviolation', function (e) {
  window.__errors.push('csp:' + e.violatedDirective); });
document.addEventListener('DOMContentLoaded', function () {
  var out = {figures: [], errors: window.__errors, scripts: document.scripts.length,
             images: document.images.length, text_has_thread: false};
  try {
  document.querySelectorAll('svg.figure').forEach(function (s) {
    var r = s.getBoundingClientRect();
    var drawn = s.querySelectorAll('path,rect,line,text').length;
    var painted = 0;
    s.querySelectorAll('path,rect').forEach(function (el) {
      var b = el.getBBox(); if (b.width * b.height > 0) painted++; });
    out.figures.push({id: s.id, w: r.width, h: r.height, drawn: drawn, painted: painted});
  });
  out.text_has_thread = document.body.textContent.indexOf('thread:\x3cscript>alert(1)\x3c/script>') >= 0;
  } catch (e) { out.errors.push('checker: ' + e); }
  var pre = document.createElement('pre');
  pre.id = 'rtscope-check';
  pre.textContent = 'RTSCOPE-CHECK ' + JSON.stringify(out) + ' END-CHECK';
  document.body.appendChild(pre);
});
"#;

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|b| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|d| Path::new(d).join(b))
                .find(|p| p.is_file())
        })
}

/// Runs chromium with a time limit; returns (stdout, stderr). Output goes to files, not pipes,
/// so a large DOM dump cannot block the browser while we wait.
fn run_chromium(bin: &Path, profile: &Path, extra: &[String], url: &str) -> (String, String) {
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        "--virtual-time-budget=5000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .arg(url);
    // Bounded: a hung browser fails the test instead of hanging CI.
    let (out_path, err_path) = (profile.join("stdout.txt"), profile.join("stderr.txt"));
    let mut child = c
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("spawn chromium");
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        if child.try_wait().expect("wait chromium").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default(),
    )
}

#[test]
fn report_renders_in_chromium() {
    let Some(bin) = chromium() else {
        rtscope_testkit::skipped("chromium not installed (run scripts/ci-chromium.sh)");
        return;
    };
    let mut runs = vec![fixture::hostile("hostile-run-0001")];
    for (i, load) in ["idle", "io"].iter().enumerate() {
        let mut s = Spec::new(&format!("run-{load}"), 10 + i as u64);
        if *load != "idle" {
            s.loads = vec![load.to_string()];
        }
        runs.push(fixture::record(&s));
    }
    let report = build(
        &runs,
        &ReportOptions {
            title: "browser test".into(),
            ..Default::default()
        },
    );
    let n_figures = report.figures.len();
    let html = report
        .html
        .replace(
            "default-src 'none'; style-src 'unsafe-inline'",
            &format!("default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{NONCE}'"),
        )
        .replace(
            "</head>",
            &format!("<script nonce=\"{NONCE}\">{CHECKER}</script></head>"),
        );
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, html).unwrap();
    let url = format!("file://{}", page.display());

    let profile = tempfile::tempdir().unwrap();
    let (dom, stderr) = run_chromium(&bin, profile.path(), &["--dump-dom".into()], &url);
    if std::env::var_os("RTSCOPE_BROWSER_DEBUG").is_some() {
        let _ = std::fs::write("/tmp/rtscope-browser-dom.html", &dom);
        let _ = std::fs::copy(&page, "/tmp/rtscope-browser-page.html");
    }
    // The marker also appears in the checker's own source; the result is the last occurrence.
    let json = dom
        .rfind("RTSCOPE-CHECK {")
        .map(|i| &dom[i + "RTSCOPE-CHECK ".len()..])
        .and_then(|s| s.split(" END-CHECK").next())
        .unwrap_or_else(|| panic!("checker did not run; stderr: {stderr}"));
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
        .replace("&quot;", "\"");
    let v: serde_json::Value = serde_json::from_str(&json).expect("checker JSON");
    println!("browser check: {v}");
    assert_eq!(
        v["errors"].as_array().unwrap().len(),
        0,
        "script errors: {}",
        v["errors"]
    );
    assert_eq!(v["scripts"], 1, "only the checker may be a script element");
    assert_eq!(v["images"], 0, "an injected <img> became an element");
    assert_eq!(
        v["text_has_thread"], true,
        "the hostile thread name must show as text"
    );
    let figs = v["figures"].as_array().unwrap();
    assert_eq!(figs.len(), n_figures);
    for f in figs {
        assert!(
            f["w"].as_f64().unwrap() > 100.0 && f["h"].as_f64().unwrap() > 100.0,
            "empty box: {f}"
        );
        assert!(f["drawn"].as_u64().unwrap() >= 5, "nothing drawn: {f}");
        assert!(f["painted"].as_u64().unwrap() >= 2, "nothing painted: {f}");
    }

    // Screenshot, kept beside the test target for a human to look at.
    let shot_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let shot = shot_dir.join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let profile2 = tempfile::tempdir().unwrap();
    run_chromium(
        &bin,
        profile2.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,2400".into(),
        ],
        &format!("file://{}", page.display()),
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 20_000,
        "screenshot suspiciously small ({} bytes)",
        png.len()
    );
    println!("screenshot: {}", shot.display());
}
