//! report.html in a real browser: headless Chromium (Debian's `chromium`, which `.ci/run`
//! installs) opens reports from file URLs and a driver script reads them as a student would
//! (support/chromium.rs): no console error; the timeline's lanes and the highlighted violation in
//! the DOM the page's script leaves; the legend's glyphs and token note; the narrative's routine
//! lines hidden until the toggle; a repeated violation stepped through by its list (the timeline
//! puts its marks in focus); no mark label clipped or overlapping, whole or zoomed; `#timeline` and
//! `#narrative` links landing on their sections. Screenshots are saved under `target/tmp/`.
//! The 600 s chaos report's browser test is in scenarios/tests/reports.rs (it runs the simulator).

use std::path::Path;

use coordsim_reports::{RunInput, run_report_html};

mod support;

use support::chromium::{Browser, READER, Rendered};
use support::{fixture, repeated};

fn html(name: &str, scenario_summary: &str) -> String {
    let (history, summary) = fixture(name);
    let mut input = RunInput::new(&history);
    input.summary = Some(&summary);
    input.scenario_summary = scenario_summary;
    run_report_html(&input)
}

fn browser(name: &str) -> Option<Browser> {
    Browser::new(Path::new(env!("CARGO_TARGET_TMPDIR")), &format!("browser-{name}"))
}

/// What every report must show a reader, whatever its run.
fn assert_readable(what: &str, page: &Rendered) {
    assert!(page.console_errors.is_empty(), "{what}: console errors: {:#?}", page.console_errors);
    assert_eq!(page.body_attr("done").as_deref(), Some("1"), "{what}: the driver ran to its end");
    assert!(page.dom.contains("<svg"), "{what}: the timeline's SVG is in the rendered DOM");
    assert!(page.body_number("glyphs") >= 8.0, "{what}: the legend draws every glyph");
    assert!(page.body_number("labels") > 0.0, "{what}: mark labels are drawn");
    for prefix in ["", "zoomed-"] {
        assert_eq!(page.body_number(&format!("{prefix}clipped")), 0.0, "{what}: {prefix}labels cut by the plot's edge");
        assert_eq!(page.body_number(&format!("{prefix}overlaps")), 0.0, "{what}: {prefix}labels overlapping on a row");
    }
}

/// The routine lines start hidden and the toggle, which counts them, shows them all.
fn assert_folded(what: &str, page: &Rendered) {
    let routine = page.body_number("routine");
    assert!(routine > 0.0 && page.body_number("story") > 0.0, "{what}: story and routine lines");
    assert_eq!(page.body_number("routine-hidden"), routine, "{what}: every routine line starts hidden");
    assert_eq!(page.body_number("routine-hidden-after"), 0.0, "{what}: the toggle shows them");
    let button = page.body_attr("routine-button").unwrap();
    assert!(button.starts_with(&format!("hide {routine} routine lines")), "{what}: {button}");
}

#[test]
fn the_split_brain_report_renders_in_chromium_without_errors() {
    let Some(browser) = browser("split-brain") else { return };
    let url =
        browser.page("report.html", &html("split-brain-gc-pause-seed-1", "A GC pause outlives the lease"), READER);
    let page = browser.render(&url);
    assert_readable("split-brain", &page);
    // Chromium serialises the DOM as HTML (void elements unclosed), so count by markup.
    let lanes = page.dom.matches("class=\"lane ").count();
    assert!(lanes >= 4, "a lane per node (c1, c2, resource, servers): {lanes} lanes");
    // By class prefix: an element in focus (a hover Chromium may synthesise) has "focus" appended.
    let violations = page.dom.matches("class=\"band violation").count() + page.dom.matches("class=\"pt vl").count();
    assert!(violations > 0, "the violation is highlighted");
    let tokens = page.body_attr("tokens").unwrap();
    assert!(tokens.contains("etcd store revisions"), "{tokens}");
    assert_folded("split-brain", &page);
    assert_eq!(page.body_number("scroll-y"), 0.0, "a plain URL opens at the top");
    browser.screenshot(&url, "split-brain-report.png");
}

#[test]
fn a_zookeeper_report_explains_czxids_and_draws_its_connection_states() {
    let Some(browser) = browser("zookeeper") else { return };
    let url = browser.page(
        "report.html",
        &html("zk-holder-cut-off-session-policy-seed-1", "A ZooKeeper holder cut off from its ensemble"),
        READER,
    );
    let page = browser.render(&url);
    assert_readable("zookeeper", &page);
    let tokens = page.body_attr("tokens").unwrap();
    assert!(tokens.contains("czxid"), "{tokens}");
    assert!(page.dom.contains("<rect class=\"suspended\""), "a SUSPENDED span is drawn");
    assert_folded("zookeeper", &page);
    browser.screenshot(&url, "zookeeper-report.png");
}

#[test]
fn a_repeated_violation_is_stepped_through_from_its_list() {
    let (history, summary) = repeated(40);
    let mut input = RunInput::new(&history);
    input.summary = Some(&summary);
    let Some(browser) = browser("repeated") else { return };
    let url = browser.page("report.html", &run_report_html(&input), READER);
    let page = browser.render(&url);
    assert_readable("repeated", &page);
    assert_eq!(page.body_number("repeats"), 40.0, "one article counts all 40");
    assert_eq!(page.body_number("occurrences"), 40.0, "and lists them");
    // The click zooms the timeline to the occurrence (the page lays itself out from a timer
    // where no animation frame comes, as under --dump-dom).
    let (before, after) = (page.body_attr("zoom-before").unwrap(), page.body_attr("zoom-after").unwrap());
    assert!(before.contains("scale(1,1)") && !after.contains("scale(1,1)"), "zoomed: {before} -> {after}");
    assert!(page.body_number("focused") > 0.0, "clicking an occurrence puts its marks in focus");
}

#[test]
fn links_to_the_timeline_and_the_narrative_land_on_them() {
    let Some(browser) = browser("anchors") else { return };
    let report = html("split-brain-gc-pause-seed-1", "A GC pause outlives the lease");
    let url = browser.page("report.html", &report, READER);
    for section in ["timeline", "narrative"] {
        let page = browser.render(&format!("{url}#{section}"));
        let (y, at, height) = (
            page.body_number("scroll-y"),
            page.body_number(&format!("{section}-top")),
            page.body_number("inner-height"),
        );
        assert!(y > 0.0, "#{section}: the page scrolled (scrollY {y})");
        assert!(
            (0.0..height / 2.0).contains(&at),
            "#{section}: the section starts in the top half of the view ({at} px of {height})"
        );
    }
}
