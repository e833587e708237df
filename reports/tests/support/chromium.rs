//! Headless Chromium for the report's browser tests (Debian's `chromium`, which `.ci/run`
//! installs). A test writes a report into a folder, may append a driver script that acts as a
//! reader would (clicks a button, steps to a violation) and writes what it saw into `data-test-*`
//! attributes of `<body>`, then reads those back from the DOM Chromium dumps once the page has run.
//! Kept free of the other test support so that the scenarios crate's tests can include it with
//! `#[path]` too.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Set by `.ci/run` (which installs Chromium): a missing browser fails the browser tests there
/// instead of skipping them.
pub const REQUIRE: &str = "COORDSIM_REQUIRE_BROWSER";

/// A folder of pages and Chromium profiles under the test binaries' scratch space.
pub struct Browser {
    dir: PathBuf,
}

/// The DOM after the page's scripts ran, and the console errors it logged.
pub struct Rendered {
    pub dom: String,
    pub console_errors: Vec<String>,
}

impl Rendered {
    /// The value of `data-test-<name>` on `<body>`, as the driver script left it.
    pub fn body_attr(&self, name: &str) -> Option<String> {
        let body = &self.dom[self.dom.find("<body")?..];
        let tag = &body[..body.find('>')?];
        let key = format!("data-test-{name}=\"");
        let start = tag.find(&key)? + key.len();
        let end = tag[start..].find('"')? + start;
        Some(tag[start..end].replace("&amp;", "&").replace("&quot;", "\""))
    }

    /// `body_attr` as a number; panics with the attribute's name if it is missing.
    pub fn body_number(&self, name: &str) -> f64 {
        let value = self.body_attr(name).unwrap_or_else(|| panic!("the driver did not set data-test-{name}"));
        value.parse().unwrap_or_else(|_| panic!("data-test-{name}={value:?} is not a number"))
    }
}

impl Browser {
    /// A browser for one test, or `None` (the test skips, saying why) where Chromium is not
    /// installed, unless [`REQUIRE`] is set: a fresh machine with only a Rust toolchain passes
    /// `cargo test`, and CI, which installs Chromium, still runs every browser test.
    pub fn new(tmp: &Path, name: &str) -> Option<Browser> {
        if !Path::new(CHROMIUM).exists() {
            assert!(
                std::env::var_os(REQUIRE).is_none(),
                "{CHROMIUM} is missing and {REQUIRE} is set: install Debian's chromium (.ci/run does)"
            );
            eprintln!("skipped: {CHROMIUM} is missing (install Debian's chromium to run the browser tests)");
            return None;
        }
        let dir = tmp.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Some(Browser { dir })
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// Writes `html` as `file`, with `driver` (JavaScript run 200 ms after the page loaded) appended
    /// at the end of the body when it is not empty; returns the file's URL.
    pub fn page(&self, file: &str, html: &str, driver: &str) -> String {
        let html = match driver.is_empty() {
            true => html.to_string(),
            false => {
                let script = format!(
                    "<script>window.addEventListener(\"load\", function () {{ setTimeout(function () {{ {driver} }}, 200); }});</script>"
                );
                let at = html.rfind("</body>").expect("a report has a body");
                format!("{}{script}{}", &html[..at], &html[at..])
            }
        };
        let path = self.dir.join(file);
        std::fs::write(&path, html).unwrap();
        format!("file://{}", path.display())
    }

    fn command(&self, profile: &str) -> Command {
        let mut command = Command::new(CHROMIUM);
        // A closed machine: no sandbox (root), no GPU, no background networking.
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
        command.arg(format!("--user-data-dir={}", self.dir.join(profile).display()));
        command
    }

    /// Opens `url` and returns the DOM once its scripts (and the driver's) have run.
    pub fn render(&self, url: &str) -> Rendered {
        let out = self.command("profile-dom").arg("--dump-dom").arg(url).output().expect("chromium runs");
        assert!(out.status.success(), "chromium --dump-dom {url} failed: {}", String::from_utf8_lossy(&out.stderr));
        let log = String::from_utf8_lossy(&out.stderr);
        let console_errors = log
            .lines()
            .filter(|line| line.contains("CONSOLE") && (line.contains("Uncaught") || line.contains("ERROR")))
            .map(str::to_string)
            .collect();
        Rendered { dom: String::from_utf8_lossy(&out.stdout).into_owned(), console_errors }
    }

    /// Saves a screenshot of `url` as `file` and returns the PNG's bytes.
    pub fn screenshot(&self, url: &str, file: &str) -> Vec<u8> {
        let shot = self.dir.join(file);
        let out = self
            .command("profile-shot")
            .arg(format!("--screenshot={}", shot.display()))
            .arg(url)
            .output()
            .expect("chromium runs");
        assert!(out.status.success(), "chromium --screenshot {url} failed: {}", String::from_utf8_lossy(&out.stderr));
        let png = std::fs::read(&shot).expect("the screenshot was written");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000, "a real PNG ({} bytes)", png.len());
        png
    }
}

/// A reader's pass over a report, as a driver script. Before touching anything it records where
/// the page landed (`scroll-y`, the `top` of `#timeline` and `#narrative` in the viewport,
/// `inner-height`), the legend's glyphs, the narrative's routine lines and how many are hidden,
/// the largest repeated violation (`repeats`) and its listed occurrences, and the timeline's mark
/// labels that are clipped by the plot's edges or overlap a neighbour on their row. Then it
/// presses the routine toggle (`routine-hidden-after`, `routine-button`) and clicks the last
/// listed occurrence, and records the zoom (`zoom-before`, `zoom-after`), the marks in focus and
/// the labels again (`zoomed-clipped`, `zoomed-overlaps`).
pub const READER: &str = r##"
var b = document.body;
var q = function (s) { return document.querySelectorAll(s).length; };
var set = function (k, v) { b.setAttribute("data-test-" + k, String(v)); };
var top = function (id) { var el = document.getElementById(id); return el ? el.getBoundingClientRect().top : -1; };
function labels(prefix) {
  var svg = document.getElementById("tl"), zp = document.getElementById("zp");
  if (!svg || !zp) { set(prefix + "clipped", 0); set(prefix + "overlaps", 0); set(prefix + "labels", 0); return; }
  var pw = +svg.getAttribute("data-pw"), rows = {}, clipped = 0, overlaps = 0, n = 0;
  Array.prototype.forEach.call(zp.querySelectorAll("text"), function (t) {
    if (t.classList.contains("hid")) return;
    var box = t.getBBox();
    if (box.width === 0) return;
    n++;
    if (box.x < -0.5 || box.x + box.width > pw + 0.5) clipped++;
    var y = t.getAttribute("y");
    (rows[y] = rows[y] || []).push(box);
  });
  Object.keys(rows).forEach(function (y) {
    var row = rows[y].sort(function (a, c) { return a.x - c.x; });
    for (var i = 1; i < row.length; i++) if (row[i].x < row[i - 1].x + row[i - 1].width - 0.5) overlaps++;
  });
  set(prefix + "clipped", clipped); set(prefix + "overlaps", overlaps); set(prefix + "labels", n);
}
set("scroll-y", window.scrollY);
set("inner-height", window.innerHeight);
set("timeline-top", top("timeline"));
set("narrative-top", top("narrative"));
set("glyphs", q("#legend [data-glyph]"));
set("tokens", (document.getElementById("tokens") || { textContent: "" }).textContent);
set("routine", q("#narrative li.routine"));
set("routine-hidden", q("#narrative li.routine[hidden]"));
set("story", q("#narrative li:not(.routine)"));
var most = null;
Array.prototype.forEach.call(document.querySelectorAll("#violations article[data-n]"), function (a) {
  if (!most || +a.getAttribute("data-n") > +most.getAttribute("data-n")) most = a;
});
set("repeats", most ? most.getAttribute("data-n") : 0);
set("occurrences", most ? most.querySelectorAll(".occurrences li").length : 0);
labels("");
var r = document.getElementById("routine");
if (r) { r.click(); set("routine-hidden-after", q("#narrative li.routine[hidden]")); set("routine-button", r.textContent); }
var zs = document.getElementById("zs");
set("zoom-before", zs ? zs.getAttribute("transform") : "");
var steps = most ? most.querySelectorAll(".occurrences li") : [];
if (steps.length) steps[steps.length - 1].click();
setTimeout(function () {
  set("zoom-after", zs ? zs.getAttribute("transform") : "");
  set("focused", q("#tl .focus"));
  labels("zoomed-");
  set("done", 1);
}, 300);
"##;
