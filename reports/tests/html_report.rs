//! report.html as a reader meets it, checked by parsing the generated page: the split-brain
//! run shows the pause, the lease expiry, both grants with their tokens and the stale write at
//! the times the history records them; the page needs no network; the same history gives the
//! same bytes; a run of 10,000 operations stays under the stated size.

mod support;

use coordsim_checker::history::{Call, Event, FaultKind, History, NodeInfo, NodeRole, Phase, Return};
use coordsim_reports::html::layout;
use coordsim_reports::{RunInput, RunSummary, run_report_html};
use support::{Element, parse};

struct Run {
    history: History,
    summary: RunSummary,
}

fn fixture(name: &str) -> Run {
    Run {
        history: History::from_json(&support::read(&format!("{name}/history.json"))).unwrap(),
        summary: RunSummary::from_json(&support::read(&format!("{name}/summary.json"))).unwrap(),
    }
}

fn render(run: &Run) -> String {
    let mut input = RunInput::new(&run.history);
    input.summary = Some(&run.summary);
    input.scenario_summary = "A GC pause outlives the lease";
    input.description = "c1 pauses while holding the lock.";
    run_report_html(&input)
}

/// The index of the only entry that matches.
fn entry_where(history: &History, what: &str, pred: impl Fn(&Event, &str) -> bool) -> usize {
    let found: Vec<usize> =
        history.entries.iter().enumerate().filter(|(_, e)| pred(&e.event, &e.node)).map(|(i, _)| i).collect();
    assert_eq!(found.len(), 1, "exactly one entry for {what}: {found:?}");
    found[0]
}

fn fmt(ns: u64) -> String {
    format!("{}.{:03} s", ns / 1_000_000_000, (ns / 1_000_000) % 1000)
}

/// The lane (`<text class="ln">`) whose vertical band contains `y`.
fn lane_at(svg: &Element, y: f64) -> String {
    let lanes = svg.find_all(|e| e.name == "rect" && e.has_class("lane"));
    let names = svg.find_all(|e| e.name == "text" && e.has_class("ln"));
    for (lane, name) in lanes.iter().zip(&names) {
        let top: f64 = lane.attr("y").unwrap().parse().unwrap();
        let height: f64 = lane.attr("height").unwrap().parse().unwrap();
        if y >= top && y < top + height {
            return name.text();
        }
    }
    panic!("no lane at y={y}");
}

/// Where a mark (`<use>`) or a span (`<rect>`) is drawn.
fn position(e: &Element) -> (f64, f64) {
    (e.attr("x").unwrap().parse().unwrap(), e.attr("y").unwrap().parse().unwrap())
}

/// A mark's label: the text drawn above it at zoom 1, or else the `data-l` the script draws.
fn label_of(svg: &Element, mark: &Element) -> String {
    if let Some(lazy) = mark.attr("data-l") {
        return lazy.to_string();
    }
    let (x, y) = position(mark);
    let labels = svg.find_all(|e| {
        e.name == "text"
            && e.has_class("ml")
            && e.attr("x").map(|v| v.parse::<f64>().unwrap()) == Some(x)
            && e.attr("y").map(|v| v.parse::<f64>().unwrap()) == Some(y - 7.0)
    });
    assert_eq!(labels.len(), 1, "one label above the mark at x={x}");
    labels[0].text()
}

/// The x a time must be drawn at, at zoom 1.
fn x_of(ns: u64, end: u64) -> f64 {
    ns as f64 / end as f64 * layout::plot_width()
}

fn assert_x(e: &Element, ns: u64, end: u64) {
    let x = position(e).0;
    assert!((x - x_of(ns, end)).abs() < 0.02, "{} drawn at x={x}, expected {} for {}", e.name, x_of(ns, end), fmt(ns));
}

/// The marks (`<use class="pt m ...">`) with `class` that point at `entry`.
fn marks_at<'a>(svg: &'a Element, class: &str, entry: usize) -> Vec<&'a Element> {
    svg.find_all(|e| e.name == "use" && e.has_class("m") && e.has_class(class) && e.refs().contains(&entry))
}

fn narrative_line<'a>(page: &'a Element, needle: &str) -> &'a Element {
    let narrative = page.by_id("narrative").expect("a narrative section");
    let lines = narrative.find_all(|e| e.name == "li" && e.text().contains(needle));
    assert_eq!(lines.len(), 1, "one narrative line contains {needle:?}");
    lines[0]
}

fn line_time(line: &Element) -> String {
    line.elements().find(|e| e.name == "time").unwrap().text()
}

#[test]
fn split_brain_report_shows_pause_expiry_both_grants_tokens_and_the_stale_write_at_their_times() {
    let run = fixture("split-brain-gc-pause-seed-1");
    let html = render(&run);
    support::keep("split-brain-gc-pause-seed-1.html", &html);
    let page = parse(&html);
    let svg = page.by_id("tl").expect("the timeline svg");
    let h = &run.history;
    let end: u64 = svg.attr("data-end").unwrap().parse().unwrap();
    let time = |i: usize| h.entries[i].time_ns;

    // The pause: c1 for 10 s from t=2 s, a bar in the faults lane and a shade on c1's lane.
    let pause_start = entry_where(
        h,
        "pause start",
        |e, _| matches!(e, Event::Fault { kind: FaultKind::Pause, phase: Phase::Start, targets, .. } if targets == &["c1"]),
    );
    let pause_end =
        entry_where(h, "pause end", |e, _| matches!(e, Event::Fault { kind: FaultKind::Pause, phase: Phase::End, .. }));
    assert_eq!(fmt(time(pause_start)), "2.000 s");
    assert_eq!(fmt(time(pause_end)), "12.000 s");
    let bars = svg.find_all(|e| e.name == "rect" && e.has_class("fault") && e.has_class("k-pause"));
    assert_eq!(bars.len(), 1);
    assert_eq!(bars[0].refs(), vec![pause_start, pause_end]);
    assert_x(bars[0], time(pause_start), end);
    let shades = svg.find_all(|e| e.name == "rect" && e.has_class("shade") && e.has_class("k-pause"));
    assert_eq!(shades.len(), 1);
    let shade_y: f64 = shades[0].attr("y").unwrap().parse().unwrap();
    assert_eq!(lane_at(svg, shade_y + 1.0), "c1");
    let line = narrative_line(&page, "c1 paused for 10.000 s");
    assert_eq!(line_time(line), "2.000 s");
    assert!(line.text().contains("while c1 holds /locks/resource (token 2)"), "{}", line.text());

    // The lease expiry, decided by the leader s1, ends c1's lease on c1's lane.
    let expiry = entry_where(h, "lease expiry", |e, _| matches!(e, Event::LeaseExpiry { lease: 1, .. }));
    let on_server = marks_at(svg, "expiry", expiry);
    assert_eq!(on_server.len(), 2, "an expiry mark on s1 and one on c1's lease row");
    let lanes: Vec<String> = on_server.iter().map(|m| lane_at(svg, position(m).1)).collect();
    assert_eq!(lanes, vec![h.entries[expiry].node.clone(), "c1".to_string()]);
    for mark in &on_server {
        assert_x(mark, time(expiry), end);
    }
    let lease = svg.find_all(|e| e.name == "rect" && e.has_class("lease") && e.has_class("expired"));
    assert_eq!(lease.len(), 1);
    assert_eq!(*lease[0].refs().last().unwrap(), expiry);
    let line = narrative_line(&page, "expired lease 1 of c1");
    assert_eq!(line_time(line), fmt(time(expiry)));

    // Both grants, with their tokens: c1's before the pause (token 2), c2's after the expiry (3).
    let grant = |client: &'static str, token: i64| {
        entry_where(h, "grant", move |e, node| {
            node == client && matches!(e, Event::Ok { ret: Return::Locked { token: t, .. }, .. } if *t == token)
        })
    };
    for (client, token) in [("c1", 2), ("c2", 3)] {
        let at = grant(client, token);
        let marks = marks_at(svg, "grant", at);
        assert_eq!(marks.len(), 1, "one grant mark for {client} token {token}");
        assert_eq!(lane_at(svg, position(marks[0]).1), client);
        assert_x(marks[0], time(at), end);
        assert_eq!(label_of(svg, marks[0]), format!("grant {token}"));
        let line = narrative_line(&page, &format!("{client} acquired /locks/resource with token {token}"));
        assert_eq!(line_time(line), fmt(time(at)));
        let label = format!("token {token}");
        let beliefs = svg.find_all(|e| {
            (e.name == "text" && e.has_class("sl") && e.text() == label)
                || (e.name == "rect" && e.has_class("belief") && e.attr("data-l") == Some(label.as_str()))
        });
        assert!(!beliefs.is_empty(), "{client}'s belief bar is labelled with token {token}");
    }
    assert!(time(grant("c2", 3)) > time(expiry), "c2 acquires after c1's lease expired");

    // The stale write: c1 writes with token 2 after the pause; the unfenced resource accepts it.
    let stale = entry_where(
        h,
        "stale write",
        |e, _| matches!(e, Event::Resource { client, token: 2, accepted: true, highest_before, .. } if client == "c1" && *highest_before > 2),
    );
    let marks = marks_at(svg, "stale", stale);
    assert_eq!(marks.len(), 1);
    assert!(marks[0].has_class("accepted") && marks[0].has_class("hl"));
    assert_eq!(lane_at(svg, position(marks[0]).1), "resource");
    assert_eq!(label_of(svg, marks[0]), "2");
    assert_x(marks[0], time(stale), end);
    let line = narrative_line(&page, "c1 wrote with token 2 → accepted, although token 6 was accepted before");
    assert_eq!(line_time(line), fmt(time(stale)));

    // The violation is highlighted with the exact operations and times.
    let violations = page.find_all(|e| e.name == "article" && e.has_class("violation"));
    let me = violations
        .iter()
        .find(|v| v.attr("data-property") == Some("mutual_exclusion"))
        .expect("a mutual_exclusion violation");
    assert_eq!(me.attr("data-t"), Some(time(stale).to_string().as_str()));
    assert!(me.refs().contains(&stale) && me.refs().contains(&grant("c1", 2)));
    let listed = me.text();
    assert!(listed.contains(&format!("{} resource: resource", fmt(time(stale)))), "{listed}");
    assert!(listed.contains("token=2"), "{listed}");
    let band = svg.find_all(|e| e.has_class("vline") && e.has_class("violation") && e.refs().contains(&stale));
    assert!(!band.is_empty(), "a violation line on the timeline");
    let verdict =
        page.find_all(|e| e.name == "tr" && e.attr("data-property") == Some("mutual_exclusion")).pop().unwrap();
    assert!(verdict.text().contains("fail") && verdict.has_class("as-expected"));
}

#[test]
fn fenced_report_shows_the_stale_write_rejected() {
    let run = fixture("split-brain-gc-pause-fenced-seed-1");
    let html = render(&run);
    support::keep("split-brain-gc-pause-fenced-seed-1.html", &html);
    let page = parse(&html);
    let svg = page.by_id("tl").unwrap();
    let h = &run.history;
    let rejected = entry_where(
        h,
        "rejected write",
        |e, _| matches!(e, Event::Resource { client, accepted: false, .. } if client == "c1"),
    );
    let Event::Resource { token, highest_before, .. } = &h.entries[rejected].event else { unreachable!() };
    let marks = marks_at(svg, "rejected", rejected);
    assert_eq!(marks.len(), 1);
    assert_eq!(lane_at(svg, position(marks[0]).1), "resource");
    assert_eq!(label_of(svg, marks[0]), token.to_string());
    let line = narrative_line(
        &page,
        &format!("c1 wrote with token {token} → rejected (fencing: token {highest_before} was accepted before)"),
    );
    assert_eq!(line_time(line), fmt(h.entries[rejected].time_ns));
    // Fencing held: no mutual-exclusion or fencing violation (both clients still *believed* they
    // held the lock, which single_holder reports, as the scenario expects).
    let violated: Vec<&str> = page
        .find_all(|e| e.has_class("violation") && e.name == "article")
        .iter()
        .map(|v| v.attr("data-property").unwrap())
        .collect();
    assert!(!violated.contains(&"mutual_exclusion") && !violated.contains(&"fencing"), "{violated:?}");
    assert!(svg.find_all(|e| e.has_class("stale")).is_empty());
}

/// No address of any kind: no URL, no external script, style, image or font.
fn assert_offline(html: &str) {
    assert!(!html.contains("http://"), "an http URL");
    assert!(!html.contains("https://"), "an https URL");
    assert!(!html.contains("//cdn"), "a CDN");
    let page = parse(html);
    for element in page.descendants() {
        assert!(element.attr("src").is_none(), "<{} src>", element.name);
        assert_ne!(element.name, "link", "<link>");
        if let Some(href) = element.attr("href") {
            assert!(href.starts_with('#'), "href={href}");
        }
    }
}

#[test]
fn report_is_self_contained_and_deterministic() {
    let run = fixture("split-brain-gc-pause-seed-1");
    let first = render(&run);
    assert_offline(&first);
    assert_eq!(first, render(&run), "the same history gives the same bytes");
    let page = parse(&first);
    let scripts = page.find_all(|e| e.name == "script");
    assert_eq!(scripts.len(), 2, "the data block and the inline script");
    // The data block carries every entry for the hover.
    let data: serde_json::Value = serde_json::from_str(&scripts[0].text()).unwrap();
    assert_eq!(data["details"].as_array().unwrap().len(), run.history.entries.len());
    // Each detail is [time_ns, node index, type, other fields].
    let first = &data["details"][0];
    assert_eq!(first[0], run.history.entries[0].time_ns);
    assert_eq!(data["nodes"][first[1].as_u64().unwrap() as usize], run.history.entries[0].node.as_str());
}

/// A synthetic run of `ops` operations: `clients` clients loop lock → 3 writes → unlock with a
/// keepalive now and then, on 3 servers with leader changes, and one client pauses now and
/// then. Deterministic.
fn synthetic(ops: usize, clients: usize) -> History {
    let mut h = History::new("synthetic", 7);
    for s in 1..=3 {
        h.nodes.push(NodeInfo { name: format!("s{s}"), role: NodeRole::Server });
    }
    h.nodes.push(NodeInfo { name: "resource".into(), role: NodeRole::Resource });
    for c in 1..=clients {
        h.nodes.push(NodeInfo { name: format!("c{c}"), role: NodeRole::Client });
    }
    let mut rng: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut t: u64 = 1_000_000;
    let mut op = 0u64;
    let mut token = 0i64;
    let mut highest = 0i64;
    let mut fault = 0u64;
    let push = |h: &mut History, t: u64, node: &str, event: Event| {
        h.entries.push(coordsim_checker::history::Entry { time_ns: t, node: node.to_string(), event });
    };
    let mut done = 0usize;
    let mut round = 0u64;
    while done < ops {
        round += 1;
        if round.is_multiple_of(50) {
            push(
                &mut h,
                t,
                &format!("s{}", 1 + next(3)),
                Event::Role { role: coordsim_checker::history::RaftRole::Leader, term: round / 50 },
            );
        }
        let client = format!("c{}", 1 + next(clients as u64));
        let mut call = |h: &mut History, t: &mut u64, call: Call, ret: Return| {
            op += 1;
            push(h, *t, &client, Event::Invoke { op, call });
            *t += 1_000_000 + next(20_000_000);
            push(h, *t, &client, Event::Ok { op, ret });
            *t += next(2_000_000);
            done += 1;
        };
        token += 1;
        call(
            &mut h,
            &mut t,
            Call::Lock { name: "/l".into(), lease: 1, permits: 1 },
            Return::Locked { key: "/l/1".into(), token },
        );
        push(&mut h, t, &client, Event::Belief { lock: "/l".into(), token, phase: Phase::Start, reason: None });
        if round.is_multiple_of(40) {
            fault += 1;
            push(
                &mut h,
                t,
                "nemesis",
                Event::Fault {
                    fault,
                    phase: Phase::Start,
                    kind: FaultKind::Pause,
                    targets: vec![client.clone()],
                    detail: String::new(),
                },
            );
            t += 5_000_000;
            push(
                &mut h,
                t,
                "nemesis",
                Event::Fault {
                    fault,
                    phase: Phase::End,
                    kind: FaultKind::Pause,
                    targets: vec![client.clone()],
                    detail: String::new(),
                },
            );
        }
        for w in 0..3 {
            let value = format!("{client}-{round}-{w}");
            let accepted = token >= highest;
            push(
                &mut h,
                t + 500_000,
                "resource",
                Event::Resource {
                    resource: "resource".into(),
                    client: client.clone(),
                    token,
                    value: value.clone(),
                    accepted,
                    highest_before: highest,
                },
            );
            highest = highest.max(token);
            call(&mut h, &mut t, Call::Write { resource: "resource".into(), token, value }, Return::Written);
        }
        if round.is_multiple_of(3) {
            call(&mut h, &mut t, Call::LeaseKeepAlive { lease: 1 }, Return::LeaseKeptAlive { ttl_ms: 5000 });
        }
        push(
            &mut h,
            t,
            &client,
            Event::Belief { lock: "/l".into(), token, phase: Phase::End, reason: Some("unlocked".into()) },
        );
        call(&mut h, &mut t, Call::Unlock { name: "/l".into(), key: "/l/1".into() }, Return::Unlocked);
    }
    h.entries.sort_by_key(|e| e.time_ns);
    h.duration_ns = h.entries.last().unwrap().time_ns + 1;
    h
}

#[test]
fn large_history_report_stays_small_and_offline() {
    let history = synthetic(10_000, 8);
    let ops = history.entries.iter().filter(|e| matches!(e.event, Event::Invoke { .. })).count();
    assert!(ops >= 10_000);
    let started = std::time::Instant::now();
    let html = run_report_html(&RunInput::new(&history));
    let elapsed = started.elapsed();
    let path = support::keep("synthetic-10k-ops.html", &html);
    println!(
        "report of {ops} operations ({} entries): {} bytes in {elapsed:?} -> {}",
        history.entries.len(),
        html.len(),
        path.display()
    );
    assert!(
        html.len() < coordsim_reports::REPORT_BYTES_MAX_10K_OPS,
        "{} bytes is over the budget of {}",
        html.len(),
        coordsim_reports::REPORT_BYTES_MAX_10K_OPS
    );
    assert_offline(&html);
    // Every operation is drawn.
    let page = parse(&html);
    let bars = page.find_all(|e| e.name == "rect" && e.has_class("op"));
    assert_eq!(bars.len(), ops);
}
