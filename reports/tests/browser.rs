//! report.html in a real browser: headless Chromium (Debian's `chromium`, which `.ci/run`
//! installs) opens the split-brain report from a file URL. The page logs no console error, the
//! DOM the page's script leaves behind still holds the timeline's lanes and the highlighted
//! violation, and a screenshot is saved under `target/browser-test/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use coordsim_checker::history::History;
use coordsim_reports::{RunInput, RunSummary, run_report_html};

mod support;

const CHROMIUM: &str = "/usr/bin/chromium";

/// Chromium flags for a closed machine: no sandbox (root), no GPU, no background networking.
fn chromium(profile: &Path) -> Command {
    let mut command = Command::new(CHROMIUM);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=3000",
        "--window-size=1400,1000",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

#[test]
fn the_split_brain_report_renders_in_chromium_without_errors() {
    assert!(Path::new(CHROMIUM).exists(), "{CHROMIUM} is missing: install Debian's chromium (.ci/run does)");
    let name = "split-brain-gc-pause-seed-1";
    let history = History::from_json(&support::read(&format!("{name}/history.json"))).unwrap();
    let summary = RunSummary::from_json(&support::read(&format!("{name}/summary.json"))).unwrap();
    let mut input = RunInput::new(&history);
    input.summary = Some(&summary);
    input.scenario_summary = "A GC pause outlives the lease";
    let html = run_report_html(&input);

    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-test");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let page = out.join("report.html");
    std::fs::write(&page, html).unwrap();
    let url = format!("file://{}", page.display());

    let dom = chromium(&out.join("profile-dom")).arg("--dump-dom").arg(&url).output().expect("chromium runs");
    assert!(dom.status.success(), "chromium --dump-dom failed: {}", String::from_utf8_lossy(&dom.stderr));
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let log = String::from_utf8_lossy(&dom.stderr);
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("CONSOLE") && (line.contains("Uncaught") || line.contains("ERROR")))
        .collect();
    assert!(console_errors.is_empty(), "console errors: {console_errors:#?}");
    // Chromium serialises the DOM as HTML (void elements unclosed), so count by markup.
    assert!(dom_text.contains("<svg"), "the timeline's SVG is in the rendered DOM");
    let lanes = dom_text.matches("class=\"lane ").count();
    assert!(lanes >= 4, "a lane per node (c1, c2, resource, servers): {lanes} lanes");
    let violations = dom_text.matches("class=\"band violation\"").count() + dom_text.matches("class=\"pt vl\"").count();
    assert!(violations > 0, "the violation is highlighted");

    let shot = out.join("split-brain-report.png");
    let screenshot = chromium(&out.join("profile-shot"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(
        screenshot.status.success(),
        "chromium --screenshot failed: {}",
        String::from_utf8_lossy(&screenshot.stderr)
    );
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000, "a real PNG ({} bytes)", png.len());
}
