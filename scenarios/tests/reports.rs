//! The report files as CI and people get them from the `coordsim` binary: `--report
//! html,junit,md` on a failing run, `coordsim report` re-rendering byte for byte, and the
//! report.html of a live split-brain run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn coordsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_coordsim")).args(args).output().expect("the binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("reports-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_failing_run_leaves_junit_markdown_sweep_and_report_that_name_the_property_seed_and_replay() {
    let dir = scratch("mismatch");
    // The unfenced scenario, wrongly expecting fencing to hold: seed 2 is NOT as expected.
    let library = Path::new(env!("CARGO_MANIFEST_DIR")).join("library/split-brain-gc-pause.toml");
    let scenario = read(&library).replace("fencing = \"fail\"", "fencing = \"pass\"");
    let path = dir.join("wrong-expectation.toml");
    std::fs::write(&path, scenario).unwrap();
    let out_dir = dir.join("out");
    let out = coordsim(&[
        "run",
        path.to_str().unwrap(),
        "--seed",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
        "--report",
        "html,junit,md",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    let report = out_dir.join("split-brain-gc-pause/seed-2/report.html");
    assert!(stdout.contains(&format!("  report: {}", report.display())), "{stdout}");
    let replay = format!("cargo coordsim run {} --seed 2", path.display());

    let junit = read(&out_dir.join("junit.xml"));
    assert!(junit.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"coordsim\" tests=\"1\" failures=\"1\" errors=\"0\">"), "{junit}");
    assert!(junit.contains("<testcase name=\"seed 2\" classname=\"coordsim.split-brain-gc-pause\">"), "{junit}");
    assert!(
        junit.contains("<failure type=\"fencing\" message=\"seed 2: fencing: expected pass, got fail\">"),
        "{junit}"
    );
    assert!(junit.contains(&format!("replay: {replay}")), "{junit}");
    assert!(junit.contains(&format!("report: {}", report.display())), "{junit}");

    let md = read(&out_dir.join("summary.md"));
    assert!(md.contains("**1 NOT as expected**") && md.contains(&format!("replay `{replay}`")), "{md}");
    let sweep: serde_json::Value = serde_json::from_str(&read(&out_dir.join("sweep.json"))).unwrap();
    assert_eq!(sweep["schema"], "coordsim-sweep/1");
    assert_eq!(sweep["scenarios"][0]["failures"][0]["replay"], replay.as_str());

    let html = read(&report);
    assert!(html.contains("<article class=\"violation\" data-property=\"fencing\""));
    assert!(html.contains("NOT expected"));
    assert!(!html.contains("http://") && !html.contains("https://"));

    // `coordsim report` renders the same bytes again, for the run and for the sweep.
    std::fs::remove_file(&report).unwrap();
    std::fs::remove_file(out_dir.join("junit.xml")).unwrap();
    let again = coordsim(&["report", report.parent().unwrap().to_str().unwrap(), out_dir.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(read(&report), html);
    assert_eq!(read(&out_dir.join("junit.xml")), junit);
}

#[test]
fn a_live_split_brain_report_shows_the_pause_the_expiry_the_grants_and_the_stale_write() {
    let dir = scratch("live");
    let out = coordsim(&["run", "split-brain-gc-pause", "--seed", "3", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // A single-seed run gets its report.html by default.
    let html = read(&dir.join("split-brain-gc-pause/seed-3/report.html"));
    for needle in [
        "class=\"fault k-pause\"",
        "c1 paused for 10.000 s",
        "class=\"pt m expiry",
        "expired lease 1 of c1",
        "class=\"pt m grant",
        "c2 acquired /locks/resource with token",
        "class=\"pt m write accepted stale hl\"",
        "→ accepted, although token",
        "data-property=\"mutual_exclusion\"",
    ] {
        assert!(html.contains(needle), "report.html contains {needle:?}");
    }
    assert!(!html.contains("http://") && !html.contains("https://"));
    let bad = coordsim(&["report", dir.join("nothing-here").to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("neither a run folder"));
}

#[test]
fn a_jepsen_log_that_is_not_linearizable_gets_its_counterexample_drawn() {
    let dir = scratch("jepsen");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../checker/tests/data/porcupine/jepsen/etcd_000.log");
    let log = dir.join("etcd_000.log");
    std::fs::copy(&source, &log).unwrap();
    let out = coordsim(&["report", log.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = read(&dir.join("etcd_000.report.html"));
    assert!(html.contains("<h2>Linearizability counterexample</h2>"));
    assert!(html.contains("class=\"op ok lin-ok"), "the prefix is numbered on the timeline");
    assert!(html.contains("lin-stuck"), "the operations that could not be placed are flagged");
    assert!(html.contains("data-property=\"linearizability\""));
    assert!(!html.contains("http://") && !html.contains("https://"));
}

#[path = "../../reports/tests/support/chromium.rs"]
mod chromium;

/// The chaos mutex run stretched to 600 s, in Chromium: a long run stays readable (issue 17).
#[test]
fn a_600_s_chaos_report_stays_readable_in_chromium() {
    let dir = scratch("chaos-600s");
    let library = Path::new(env!("CARGO_MANIFEST_DIR")).join("library/chaos-fenced-mutex.toml");
    let scenario = read(&library)
        .replace("name = \"chaos-fenced-mutex\"", "name = \"chaos-fenced-mutex-600s\"")
        .replace("duration = \"60s\"", "duration = \"600s\"")
        .replace("stop = \"50s\"", "stop = \"590s\"");
    let path = dir.join("chaos-600s.toml");
    std::fs::write(&path, scenario).unwrap();
    let out_dir = dir.join("out");
    let out = coordsim(&["run", path.to_str().unwrap(), "--seed", "1", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let html = read(&out_dir.join("chaos-fenced-mutex-600s/seed-1/report.html"));
    assert!(html.len() < 3_000_000, "600 s of chaos in {} bytes", html.len());

    let Some(browser) = chromium::Browser::new(&dir, "browser") else { return };
    let url = browser.page("report.html", &html, chromium::READER);
    let page = browser.render(&url);
    assert!(page.console_errors.is_empty(), "console errors: {:#?}", page.console_errors);
    assert_eq!(page.body_attr("done").as_deref(), Some("1"), "the driver ran to its end");
    assert!(page.body_number("glyphs") >= 8.0, "the legend draws every glyph");
    assert!(page.body_attr("tokens").unwrap().contains("etcd store revisions"));
    // Seed 1 has 41 false expirations (spurious_expiry, reported, not judged): one article, a list of 41.
    let repeats = page.body_number("repeats");
    assert!(repeats >= 10.0, "a violation repeated many times is grouped: {repeats}");
    assert_eq!(page.body_number("occurrences"), repeats, "and every occurrence listed");
    assert!(page.body_number("focused") > 0.0, "the last occurrence is focused on the timeline");
    assert!(page.body_number("story") > 0.0);
    // No label cut by the plot's edge or running into another on its row, whole or zoomed (with
    // a per-character width estimate and span labels laid out apart from mark labels this run had
    // 1 cut and 495 overlapping pairs); and the layout still shows labels, not none.
    for prefix in ["", "zoomed-"] {
        assert_eq!(page.body_number(&format!("{prefix}clipped")), 0.0, "{prefix}labels cut by the plot's edge");
        assert_eq!(page.body_number(&format!("{prefix}overlaps")), 0.0, "{prefix}labels overlapping on a row");
        assert!(page.body_number(&format!("{prefix}labels")) >= 20.0, "{prefix}labels shown");
    }
    let (before, after) = (page.body_attr("zoom-before").unwrap(), page.body_attr("zoom-after").unwrap());
    assert!(before.contains("scale(1,1)") && !after.contains("scale(1,1)"), "zoomed in: {before} -> {after}");
    let page = browser.render(&format!("{url}#narrative"));
    assert!(page.body_number("scroll-y") > 0.0, "#narrative lands on the narrative");
    browser.screenshot(&url, "chaos-600s-report.png");
}
