//! The report's latency plot: every request as a point, sent time across (the timeline's true
//! time axis, 0 to the run's end), latency up on a log scale, one colour per request kind. A
//! slow disk, a flood or a stalled leader shows as a band of points rising at the time it
//! happened, beside the timeline that says why.
//!
//! A long run holds hundreds of thousands of requests: per kind and per pixel column only the
//! fastest and the slowest successful request are drawn (the band's edges, which is what the
//! eye reads), and at most one failed or unknown one. Deterministic: the same samples give the
//! same bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use coordsim_checker::metrics::{Outcome, Sample, Spread};

use super::plot::{self, BOTTOM, LEFT, RIGHT, TOP, WIDTH};
use crate::timeline::{color_for, fmt_latency_us};

/// The usual request kinds in colours far apart (lock and unlock next to each other must not
/// look alike); any other kind gets a hue from its name.
fn kind_color(kind: &str) -> String {
    let fixed = match kind {
        "lock" => "#1f77b4",
        "unlock" => "#17becf",
        "write" => "#9467bd",
        "lease_keep_alive" => "#bcbd22",
        "lease_grant" => "#8c564b",
        "lease_revoke" => "#e377c2",
        "put" => "#2ca02c",
        "get" => "#ff7f0e",
        "cas" => "#d62728",
        "delete" => "#7f7f7f",
        other => return color_for(other),
    };
    fixed.to_string()
}
use crate::xml::escape;

const HEIGHT: u64 = 180;

/// The plot's section, or nothing for a run without requests.
pub fn section(out: &mut String, samples: &[Sample], end_ns: u64) {
    let timed: Vec<&Sample> = samples.iter().filter(|s| s.latency_ns.is_some()).collect();
    if timed.is_empty() || end_ns == 0 {
        return;
    }
    let latencies = timed.iter().filter_map(|s| s.latency_ns);
    // Decades from the one below the fastest to the one above the slowest, at least two.
    let lowest = latencies.clone().min().unwrap_or(1).max(1);
    let highest = latencies.max().unwrap_or(1).max(1);
    let low_decade = (lowest as f64).log10().floor() as i32;
    let high_decade = ((highest as f64).log10().ceil() as i32).max(low_decade + 2);
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |ns: u64| plot::x(ns, end_ns);
    let y = |ns: u64| {
        let share = ((ns.max(1) as f64).log10() - f64::from(low_decade)) / f64::from(high_decade - low_decade);
        TOP as f64 + (1.0 - share.clamp(0.0, 1.0)) * plot_h as f64
    };

    // Per kind, per column: the fastest and slowest ok, and the first request that did not succeed.
    #[derive(Default)]
    struct Column {
        fastest: Option<u64>,
        slowest: Option<u64>,
        bad: Option<u64>,
    }
    let mut kinds: BTreeMap<&str, (BTreeMap<u64, Column>, Vec<u64>, u64)> = BTreeMap::new();
    for sample in &timed {
        let latency = sample.latency_ns.expect("filtered");
        let (columns, ok, bad) = kinds.entry(sample.kind.as_str()).or_default();
        let column = columns.entry(x(sample.invoke_ns)).or_default();
        if sample.outcome == Outcome::Ok {
            ok.push(latency);
            column.fastest = Some(column.fastest.map_or(latency, |f| f.min(latency)));
            column.slowest = Some(column.slowest.map_or(latency, |s| s.max(latency)));
        } else {
            *bad += 1;
            column.bad.get_or_insert(latency);
        }
    }

    out.push_str("<section id=\"latency\">\n<h2>Latency</h2>\n");
    let _ = writeln!(
        out,
        "<svg class=\"latency\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" aria-label=\"request latency over the run\">"
    );
    for decade in low_decade..=high_decade {
        let at = y(10u64.pow(decade as u32));
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{at:.1}\" y2=\"{at:.1}\"/><text class=\"tk\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 4,
            at + 3.0,
            latency_label(10u64.pow(decade as u32))
        );
    }
    plot::time_axis(out, end_ns, HEIGHT);
    for (kind, (columns, _, _)) in &kinds {
        let color = kind_color(kind);
        let _ =
            writeln!(out, "<g class=\"series\" data-kind=\"{}\" fill=\"{color}\" stroke=\"{color}\">", escape(kind));
        for (column, points) in columns {
            for latency in [points.fastest, points.slowest.filter(|s| Some(*s) != points.fastest)].into_iter().flatten()
            {
                let _ = writeln!(out, "<circle cx=\"{column}\" cy=\"{:.1}\" r=\"1.6\"/>", y(latency));
            }
            if let Some(latency) = points.bad {
                let _ = writeln!(out, "<circle class=\"bad\" cx=\"{column}\" cy=\"{:.1}\" r=\"2.4\"/>", y(latency));
            }
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n<p class=\"legend\">");
    for (kind, (_, ok, bad)) in kinds {
        let spread = Spread::of(ok);
        let figures = match spread {
            Some(s) => format!("{} ok, p50 {}, p99 {}", s.count, fmt_latency_us(s.p50_us), fmt_latency_us(s.p99_us)),
            None => "none ok".to_string(),
        };
        let failed = if bad > 0 { format!(", {bad} failed or unknown (rings)") } else { String::new() };
        let _ = write!(
            out,
            "<span class=\"kind\"><span class=\"sw\" style=\"background:{}\"></span>{}: {figures}{failed}</span> ",
            kind_color(kind),
            escape(kind)
        );
    }
    out.push_str("</p>\n<p class=\"legend\">Sent time across (true time), latency up (log scale); per kind and pixel column the fastest and slowest request are drawn.</p>\n</section>\n");
}

/// A latency in ns as the axis and legend show it.
fn latency_label(ns: u64) -> String {
    fmt_latency_us(ns / 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(kind: &str, invoke_ns: u64, latency_ns: u64, outcome: Outcome) -> Sample {
        Sample { kind: kind.into(), invoke_ns, latency_ns: Some(latency_ns), outcome }
    }

    #[test]
    fn one_column_keeps_its_fastest_and_slowest_and_the_legend_counts_every_request() {
        let samples = vec![
            sample("lock", 0, 2_000_000, Outcome::Ok),
            sample("lock", 1, 9_000_000, Outcome::Ok),
            sample("lock", 2, 5_000_000, Outcome::Ok),
            sample("lock", 3, 1_000_000_000, Outcome::Unknown),
            sample("put", 500_000_000, 300_000, Outcome::Ok),
        ];
        let mut out = String::new();
        section(&mut out, &samples, 1_000_000_000);
        let lock = out.split("data-kind=\"lock\"").nth(1).unwrap().split("</g>").next().unwrap();
        assert_eq!(lock.matches("<circle cx").count(), 2, "fastest and slowest of the column: {lock}");
        assert_eq!(lock.matches("class=\"bad\"").count(), 1);
        assert!(out.contains("lock: 3 ok, p50 5.0 ms, p99 9.0 ms, 1 failed or unknown"), "{out}");
        assert!(out.contains("put: 1 ok, p50 300 µs"), "{out}");
        assert!(out.contains(">100 µs<") && out.contains(">1.0 s<"), "decades from 100 µs to 1 s: {out}");
    }

    #[test]
    fn a_run_without_requests_has_no_plot() {
        let mut out = String::new();
        section(&mut out, &[], 1_000);
        section(
            &mut out,
            &[Sample { kind: "lock".into(), invoke_ns: 0, latency_ns: None, outcome: Outcome::Unknown }],
            1_000,
        );
        assert!(out.is_empty());
    }
}
