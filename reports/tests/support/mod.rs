//! Test support: a strict little parser for the XML we write (junit.xml) and for report.html,
//! which is written as well-formed XHTML apart from its doctype and the raw text of `<script>`
//! and `<style>`. Strict on purpose: an unclosed or mismatched tag fails the test.

#![allow(dead_code)]

pub mod chromium;

use std::path::{Path, PathBuf};

use coordsim_checker::history::History;
use coordsim_reports::RunSummary;

#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Element(Element),
    Text(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Node>,
}

impl Element {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn classes(&self) -> Vec<&str> {
        self.attr("class").map(|c| c.split_whitespace().collect()).unwrap_or_default()
    }

    pub fn has_class(&self, class: &str) -> bool {
        self.classes().contains(&class)
    }

    /// Indices in `data-e`.
    pub fn refs(&self) -> Vec<usize> {
        self.attr("data-e").map(|e| e.split_whitespace().map(|r| r.parse().unwrap()).collect()).unwrap_or_default()
    }

    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|c| match c {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// All text inside, concatenated.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for child in &self.children {
            match child {
                Node::Text(t) => out.push_str(t),
                Node::Element(e) => out.push_str(&e.text()),
            }
        }
        out
    }

    /// Every element below (and including) this one, depth first.
    pub fn descendants(&self) -> Vec<&Element> {
        let mut out = vec![self];
        for child in self.elements() {
            out.extend(child.descendants());
        }
        out
    }

    pub fn find_all(&self, pred: impl Fn(&Element) -> bool) -> Vec<&Element> {
        self.descendants().into_iter().filter(|e| pred(e)).collect()
    }

    pub fn by_id(&self, id: &str) -> Option<&Element> {
        self.descendants().into_iter().find(|e| e.attr("id") == Some(id))
    }
}

/// Parses a document and returns its root element.
pub fn parse(text: &str) -> Element {
    let mut parser = Parser { s: text.as_bytes(), i: 0, text };
    parser.prolog();
    let root = parser.element();
    parser.skip_misc();
    assert_eq!(parser.i, parser.s.len(), "content after the root element");
    root
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn starts(&self, prefix: &str) -> bool {
        self.s[self.i..].starts_with(prefix.as_bytes())
    }

    fn skip_until(&mut self, end: &str) {
        let rest = &self.text[self.i..];
        let at = rest.find(end).unwrap_or_else(|| panic!("unterminated, expected {end:?}"));
        self.i += at + end.len();
    }

    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn skip_misc(&mut self) {
        loop {
            self.skip_ws();
            if self.starts("<?") {
                self.skip_until("?>");
            } else if self.starts("<!--") {
                self.skip_until("-->");
            } else if self.starts("<!DOCTYPE") || self.starts("<!doctype") {
                self.skip_until(">");
            } else {
                break;
            }
        }
    }

    fn prolog(&mut self) {
        self.skip_misc();
    }

    fn name(&mut self) -> String {
        let start = self.i;
        while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || b"-_:.".contains(&self.s[self.i])) {
            self.i += 1;
        }
        assert!(self.i > start, "expected a name at byte {start}");
        self.text[start..self.i].to_string()
    }

    fn element(&mut self) -> Element {
        assert!(self.starts("<"), "expected an element at byte {}", self.i);
        self.i += 1;
        let name = self.name();
        let mut attrs = Vec::new();
        loop {
            self.skip_ws();
            if self.starts("/>") {
                self.i += 2;
                return Element { name, attrs, children: vec![] };
            }
            if self.starts(">") {
                self.i += 1;
                break;
            }
            let attr = self.name();
            self.skip_ws();
            assert!(self.starts("=\""), "attribute {attr} of <{name}> needs =\"...\"");
            self.i += 2;
            let start = self.i;
            while self.s[self.i] != b'"' {
                assert!(self.s[self.i] != b'<', "raw < in attribute {attr}");
                self.i += 1;
            }
            let value = unescape(&self.text[start..self.i]);
            self.i += 1;
            assert!(!attrs.iter().any(|(n, _)| *n == attr), "duplicate attribute {attr} on <{name}>");
            attrs.push((attr, value));
        }
        let mut children = Vec::new();
        if name == "script" || name == "style" {
            let close = format!("</{name}>");
            let start = self.i;
            let at = self.text[start..].find(&close).expect("raw text element closes");
            children.push(Node::Text(self.text[start..start + at].to_string()));
            self.i = start + at + close.len();
            return Element { name, attrs, children };
        }
        loop {
            if self.starts("</") {
                self.i += 2;
                let close = self.name();
                assert_eq!(close, name, "</{close}> closes <{name}>");
                self.skip_ws();
                assert!(self.starts(">"));
                self.i += 1;
                return Element { name, attrs, children };
            } else if self.starts("<!--") {
                self.skip_until("-->");
            } else if self.starts("<") {
                children.push(Node::Element(self.element()));
            } else {
                let start = self.i;
                while self.i < self.s.len() && self.s[self.i] != b'<' {
                    self.i += 1;
                }
                assert!(self.i < self.s.len(), "<{name}> is never closed");
                children.push(Node::Text(unescape(&self.text[start..self.i])));
            }
        }
    }
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let end = rest[at..].find(';').expect("entity ends with ;") + at;
        let entity = &rest[at + 1..end];
        match entity {
            "amp" => out.push('&'),
            "lt" => out.push('<'),
            "gt" => out.push('>'),
            "quot" => out.push('"'),
            "apos" => out.push('\''),
            e if e.starts_with('#') => {
                let code: u32 = e[1..].parse().expect("a decimal character reference");
                out.push(char::from_u32(code).expect("a character"));
            }
            other => panic!("unknown entity &{other};"),
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A file under reports/tests/data.
pub fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(path)
}

pub fn read(path: &str) -> String {
    std::fs::read_to_string(data(path)).unwrap()
}

/// Writes a generated file next to the test binaries, for a person to open.
pub fn keep(name: &str, text: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A recorded run under reports/tests/data: its history and its summary.
pub fn fixture(name: &str) -> (History, RunSummary) {
    (
        History::from_json(&read(&format!("{name}/history.json"))).unwrap(),
        RunSummary::from_json(&read(&format!("{name}/summary.json"))).unwrap(),
    )
}

/// The split-brain run with its one mutual_exclusion finding repeated `n` times, 100 ms apart
/// and ending at the original: a long run's wall of the same violation.
pub fn repeated(n: usize) -> (History, RunSummary) {
    let (history, mut summary) = fixture("split-brain-gc-pause-seed-1");
    let outcome = summary.outcomes.iter_mut().find(|o| o.report.property == "mutual_exclusion").unwrap();
    let first = outcome.report.findings[0].clone();
    outcome.report.findings = (0..n as u64)
        .map(|i| {
            let mut f = first.clone();
            f.time_ns = first.time_ns.saturating_sub(i * 100_000_000);
            f
        })
        .collect();
    (history, summary)
}
