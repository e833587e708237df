//! What a model run tells: the counts, each property's result against its expectation, and the
//! counterexamples as numbered timelines.

use std::fmt::Write as _;

use crate::checked::{Expected, Kind};
use crate::runner::Search;
use crate::trace::{self, TraceStep};

#[derive(Clone, Debug)]
pub struct ModelReport {
    pub model: &'static str,
    pub summary: &'static str,
    pub clients: usize,
    pub ticks_max: u8,
    /// What the tick bound counts in this model ("ticks" of true time, "terms", or "" for none).
    pub ticks_unit: &'static str,
    pub search: Search,
    pub states: usize,
    pub unique_states: usize,
    pub max_depth: usize,
    pub seconds: f64,
    pub properties: Vec<PropertyResult>,
}

#[derive(Clone, Debug)]
pub struct PropertyResult {
    pub name: &'static str,
    pub kind: Kind,
    pub expected: Expected,
    /// A counterexample (always) or an example (sometimes) was found.
    pub discovered: bool,
    pub trace: Option<Vec<TraceStep>>,
    /// Whether `trace` is a shortest one (a second breadth-first pass found it).
    pub shortest: bool,
}

impl PropertyResult {
    pub fn as_expected(&self) -> bool {
        self.discovered == self.expected.wants_discovery()
    }

    /// `counterexample, 8 steps` / `no counterexample` / `example, 5 steps` / `no example`.
    pub fn found(&self) -> String {
        let what = match self.kind {
            Kind::Always => "counterexample",
            Kind::Sometimes => "example",
        };
        match &self.trace {
            Some(steps) if self.discovered => format!("{what}, {} steps", steps.len()),
            _ if self.discovered => what.to_string(),
            _ => format!("no {what}"),
        }
    }
}

impl ModelReport {
    pub fn as_expected(&self) -> bool {
        self.properties.iter().all(PropertyResult::as_expected)
    }

    pub fn property(&self, name: &str) -> Option<&PropertyResult> {
        self.properties.iter().find(|p| p.name == name)
    }

    /// The counterexamples to `always` properties, and any discovery that was not expected.
    pub fn traces_to_show(&self) -> impl Iterator<Item = (&PropertyResult, &Vec<TraceStep>)> {
        self.properties
            .iter()
            .filter(|p| p.discovered && (p.kind == Kind::Always || !p.as_expected()))
            .filter_map(|p| p.trace.as_ref().map(|t| (p, t)))
    }

    /// The counts line: `states 1,234 (unique 567), max depth 21, 0.012 s`.
    pub fn counts(&self) -> String {
        format!(
            "states {} (unique {}), max depth {}, {:.3} s",
            thousands(self.states),
            thousands(self.unique_states),
            self.max_depth,
            self.seconds
        )
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let search = &self.search;
        let _ = writeln!(out, "model {}: {}", self.model, self.summary);
        let bound = if self.ticks_unit.is_empty() {
            String::new()
        } else {
            format!(", {} ≤ {}", self.ticks_unit, self.ticks_max)
        };
        let _ = writeln!(
            out,
            "  {} clients{bound}, {}{}, {} thread{}",
            self.clients,
            search.strategy.name(),
            if search.symmetry { " with symmetry reduction" } else { "" },
            search.threads,
            if search.threads == 1 { "" } else { "s" }
        );
        let _ = writeln!(out, "  {}", self.counts());
        let _ = writeln!(out);
        let _ = writeln!(out, "  {:<30} {:<10} {:<12} {:<28} as expected", "property", "kind", "expected", "found");
        for p in &self.properties {
            let mark = if p.as_expected() { "yes" } else { "NO" };
            let expected = format!("{:?}", p.expected).to_lowercase();
            let _ = writeln!(out, "  {:<30} {:<10} {:<12} {:<28} {mark}", p.name, p.kind.name(), expected, p.found());
        }
        for (p, steps) in self.traces_to_show() {
            let what = if p.kind == Kind::Always { "counterexample to" } else { "example of" };
            let shortest = if p.shortest { ", shortest" } else { "" };
            let _ = writeln!(out, "\n{what} {} ({} steps{shortest}):", p.name, steps.len());
            let _ = writeln!(out, "  rule: {}", crate::expectations::meaning(p.name));
            out.push_str(&trace::render(steps));
        }
        let wrong: Vec<&str> = self.properties.iter().filter(|p| !p.as_expected()).map(|p| p.name).collect();
        let _ = writeln!(out);
        if wrong.is_empty() {
            let _ = writeln!(out, "all {} properties as expected", self.properties.len());
        } else {
            let _ = writeln!(out, "NOT as expected: {}", wrong.join(", "));
        }
        out
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_groups_digits() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1234567), "1,234,567");
    }
}
