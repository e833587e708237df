//! What a student reads at a glance (issue 17): every glyph on the timeline is in the legend and
//! means one thing; the legend says what this run's tokens are; the narrative tells the story with
//! the routine folded away and counted; a violation that repeats is told once, counted, and listed
//! to step through, and its labels on the timeline do not pile up.

mod support;

use coordsim_checker::history::{Event, History, Return};
use coordsim_checker::verdict::Verdict;
use coordsim_reports::{RunInput, RunSummary, run_report_html};
use support::{Element, fixture, parse, repeated};

fn page(history: &History, summary: &RunSummary) -> Element {
    let mut input = RunInput::new(history);
    input.summary = Some(summary);
    parse(&run_report_html(&input))
}

const FIXTURES: [&str; 4] = [
    "split-brain-gc-pause-seed-1",
    "split-brain-gc-pause-fenced-seed-1",
    "chaos-fenced-mutex-seed-1",
    "zk-holder-cut-off-session-policy-seed-1",
];

/// The symbol ids the timeline's marks use, and the legend's glyphs with their meanings.
fn glyphs(page: &Element) -> (Vec<String>, Vec<(String, String)>) {
    let svg = page.by_id("tl").expect("the timeline");
    let mut used: Vec<String> = svg
        .find_all(|e| e.name == "use" && e.has_class("m"))
        .iter()
        .map(|e| e.attr("href").unwrap().trim_start_matches('#').to_string())
        .collect();
    used.sort();
    used.dedup();
    let legend = page.by_id("legend").expect("a legend");
    let listed = legend
        .find_all(|e| e.attr("data-glyph").is_some())
        .iter()
        .map(|e| (e.attr("data-glyph").unwrap().to_string(), e.text()))
        .collect();
    (used, listed)
}

#[test]
fn every_glyph_on_the_timeline_is_in_the_legend_with_one_meaning() {
    for name in FIXTURES {
        let (history, summary) = fixture(name);
        let page = page(&history, &summary);
        let (used, listed) = glyphs(&page);
        assert!(used.len() >= 3, "{name}: marks of several kinds are drawn: {used:?}");
        for id in &used {
            let meanings: Vec<&String> = listed.iter().filter(|(g, _)| g == id).map(|(_, m)| m).collect();
            assert_eq!(meanings.len(), 1, "{name}: glyph #{id} is in the legend once: {meanings:?}");
            // The legend draws it with the very symbol the timeline uses.
            let drawn = page.find_all(|e| e.attr("data-glyph") == Some(id.as_str()))[0]
                .find_all(|e| e.name == "use")
                .iter()
                .map(|u| u.attr("href").unwrap().to_string())
                .collect::<Vec<_>>();
            assert_eq!(drawn, vec![format!("#{id}")], "{name}");
        }
        let mut ids: Vec<&String> = listed.iter().map(|(g, _)| g).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), listed.len(), "{name}: no glyph is listed twice");
    }
}

#[test]
fn a_rejected_write_and_an_expired_lease_are_different_glyphs() {
    let (history, summary) = fixture("split-brain-gc-pause-fenced-seed-1");
    let page = page(&history, &summary);
    let svg = page.by_id("tl").unwrap();
    let shape_of = |class: &str| -> Vec<String> {
        let mut hrefs: Vec<String> = svg
            .find_all(|e| e.name == "use" && e.has_class("m") && e.has_class(class))
            .iter()
            .map(|e| e.attr("href").unwrap().to_string())
            .collect();
        hrefs.sort();
        hrefs.dedup();
        hrefs
    };
    assert_eq!(shape_of("rejected"), vec!["#x"], "the fenced run rejects c1's stale write");
    assert_eq!(shape_of("expiry"), vec!["#ring"], "c1's lease expires during its pause");
    let (_, listed) = glyphs(&page);
    let meaning = |id: &str| listed.iter().find(|(g, _)| g == id).map(|(_, m)| m.clone()).unwrap();
    assert_eq!(meaning("x"), "write rejected");
    assert_eq!(meaning("ring"), "lease expired / session LOST");
}

#[test]
fn the_legend_says_what_the_tokens_are() {
    let tokens = |history: &History, summary: &RunSummary| page(history, summary).by_id("tokens").map(|e| e.text());
    let (history, summary) = fixture("split-brain-gc-pause-seed-1");
    let note = tokens(&history, &summary).expect("a run with grants explains its tokens");
    assert!(note.contains("etcd store revisions") && note.contains("skip"), "{note}");

    let (mut history, summary) = fixture("zk-holder-cut-off-session-policy-seed-1");
    let note = tokens(&history, &summary).unwrap();
    assert!(note.contains("czxid") && !note.contains("epoch"), "the simulated ensemble's zxids are small: {note}");
    // A real ensemble's zxid carries the epoch in its high 32 bits: 10-digit tokens, drawn short.
    for entry in &mut history.entries {
        match &mut entry.event {
            Event::Ok { ret: Return::Locked { token, .. }, .. } => *token += 1 << 32,
            Event::Belief { token, .. } => *token += 1 << 32,
            _ => {}
        }
    }
    let page = page(&history, &summary);
    let note = page.by_id("tokens").unwrap().text();
    assert!(note.contains("epoch:counter"), "{note}");
    let svg = page.by_id("tl").unwrap();
    let grants: Vec<String> = svg
        .find_all(|e| e.name == "use" && e.has_class("grant"))
        .iter()
        .map(|m| m.attr("data-l").map(str::to_string).unwrap_or_default())
        .collect();
    let texts: Vec<String> = svg.find_all(|e| e.name == "text" && e.has_class("ml")).iter().map(|e| e.text()).collect();
    let labels: Vec<&String> = grants.iter().chain(&texts).filter(|l| l.starts_with("grant ")).collect();
    assert!(!labels.is_empty());
    assert!(labels.iter().all(|l| l.starts_with("grant 1:")), "grant labels as epoch:counter: {labels:?}");
}

#[test]
fn the_narrative_tells_the_story_and_folds_the_routine_behind_a_counted_toggle() {
    let (history, summary) = fixture("chaos-fenced-mutex-seed-1");
    let page = page(&history, &summary);
    let narrative = page.by_id("narrative").unwrap();
    let lines = narrative.find_all(|e| e.name == "li");
    let routine: Vec<&&Element> = lines.iter().filter(|l| l.has_class("routine")).collect();
    let story: Vec<&&Element> = lines.iter().filter(|l| !l.has_class("routine")).collect();
    assert!(!routine.is_empty() && !story.is_empty());
    assert!(routine.iter().all(|l| l.attr("hidden").is_some()), "routine lines start hidden");
    assert!(story.iter().all(|l| l.attr("hidden").is_none()), "the story is shown");
    let button = page.by_id("routine").expect("a toggle for the routine lines");
    assert_eq!(button.attr("data-n"), Some(routine.len().to_string().as_str()));
    assert!(button.text().contains(&format!("show {} routine lines", routine.len())), "{}", button.text());
    for text in ["became leader", "acquired", "released", "expired lease", "paused"] {
        if let Some(line) = lines.iter().find(|l| l.text().contains(text)) {
            assert!(!line.has_class("routine"), "{text:?} is the story: {}", line.text());
        }
    }
    for text in ["got lease", "checkpoint"] {
        for line in lines.iter().filter(|l| l.text().contains(text)) {
            assert!(line.has_class("routine"), "{text:?} is routine: {}", line.text());
        }
    }
}

#[test]
fn a_repeated_violation_is_told_once_counted_and_listed_to_step_through() {
    let (history, summary) = repeated(40);
    let page = page(&history, &summary);
    let section = page.by_id("violations").unwrap();
    let articles = section.find_all(|e| e.name == "article" && e.attr("data-property") == Some("mutual_exclusion"));
    assert_eq!(articles.len(), 1, "one article per property");
    let article = articles[0];
    assert_eq!(article.attr("data-n"), Some("40"));
    let steps = article.find_all(|e| e.name == "li" && e.attr("data-t").is_some());
    assert_eq!(steps.len(), 40, "every occurrence listed");
    let times: Vec<u64> = steps.iter().map(|s| s.attr("data-t").unwrap().parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "in time order");
    assert_eq!(article.attr("data-t").unwrap().parse::<u64>().unwrap(), times[0], "the article tells the first");
    let summary_line = article.find_all(|e| e.name == "summary")[0].text();
    assert!(summary_line.contains("40 times"), "{summary_line}");

    // On the timeline: labels stay within three lines and together count every violation.
    let svg = page.by_id("tl").unwrap();
    let labels = svg.find_all(|e| e.name == "text" && e.has_class("vl"));
    let mut rows: Vec<&str> = labels.iter().map(|l| l.attr("y").unwrap()).collect();
    rows.sort();
    rows.dedup();
    assert!(rows.len() <= 3, "at most three lines of labels: {rows:?}");
    let counted: usize = labels.iter().map(|l| l.attr("data-n").unwrap().parse::<usize>().unwrap()).sum();
    let violations = summary
        .outcomes
        .iter()
        .filter(|o| o.report.verdict == Verdict::Fail)
        .map(|o| o.report.findings.len())
        .sum::<usize>();
    assert_eq!(counted, violations, "every violation is in some label's count");
    assert!(labels.iter().any(|l| l.text().contains("mutual_exclusion ×")), "repeats are counted on the label");
}
