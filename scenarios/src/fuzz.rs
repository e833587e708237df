//! `coordsim fuzz`: hostile input, structured (issue 21). Mutations of real inputs — the library's
//! scenario files, histories recorded by the simulator, Jepsen etcd logs, Jepsen EDN and
//! Porcupine kv files, and command lines — go through the code that reads them, and every
//! outcome is counted: accepted, refused (an error for the user), or panicked (a bug in our code;
//! the first message of each kind is kept). Accepted histories are also judged by every property
//! and drawn as a report; accepted Jepsen inputs are checked for linearizability under small
//! limits; accepted scenarios are only loaded (their cost when run is item 2 of the issue).
//!
//! Mutations are drawn from the fuzzer's own seeded generator (xorshift64*), so a run is the same
//! on every machine: `coordsim fuzz --inputs 100000 --seed 1` reproduces a reported panic.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use clap::Parser;
use coordsim_checker::generate::Rng;
use coordsim_checker::history::History;
use coordsim_checker::import::{jepsen_edn, porcupine_log};
use coordsim_checker::linearizability::models::{AppendKvModel, MultiRegisterModel, MutexModel, RegisterModel};
use coordsim_checker::linearizability::{self as lin, CheckOptions};
use coordsim_checker::properties::Property;
use serde_json::Value;

use crate::cli::Cli;

thread_local! {
    /// Where the last panic on this thread happened, from the panic hook.
    static PANIC_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The kinds of input, each with its own seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Scenario,
    History,
    JepsenLog,
    Edn,
    CommandLine,
}

impl Kind {
    const ALL: [Kind; 5] = [Kind::Scenario, Kind::History, Kind::JepsenLog, Kind::Edn, Kind::CommandLine];

    fn name(self) -> &'static str {
        match self {
            Kind::Scenario => "scenario file",
            Kind::History => "history.json",
            Kind::JepsenLog => "Jepsen etcd log",
            Kind::Edn => "EDN history",
            Kind::CommandLine => "command line",
        }
    }
}

/// Counts by kind and outcome.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub accepted: BTreeMap<Kind, u64>,
    pub refused: BTreeMap<Kind, u64>,
    pub panicked: BTreeMap<Kind, u64>,
    /// The first panic of each kind: its message and the input that caused it (cut).
    pub first_panic: BTreeMap<Kind, (String, String)>,
    /// Every distinct panic message (with its place), and how often it happened.
    pub distinct: BTreeMap<String, u64>,
}

impl Report {
    pub fn panics(&self) -> u64 {
        self.panicked.values().sum()
    }

    pub fn inputs(&self) -> u64 {
        self.accepted.values().chain(self.refused.values()).chain(self.panicked.values()).sum()
    }

    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!("{:<16} {:>9} {:>9} {:>9}", "input", "accepted", "refused", "panicked")];
        for kind in Kind::ALL {
            let get = |map: &BTreeMap<Kind, u64>| map.get(&kind).copied().unwrap_or(0);
            lines.push(format!(
                "{:<16} {:>9} {:>9} {:>9}",
                kind.name(),
                get(&self.accepted),
                get(&self.refused),
                get(&self.panicked)
            ));
        }
        lines.push(format!("{} inputs, {} panics", self.inputs(), self.panics()));
        for (message, count) in &self.distinct {
            lines.push(format!("{count:>6} × {message}"));
        }
        for (kind, (message, input)) in &self.first_panic {
            lines.push(format!("first panic on a {}: {message}", kind.name()));
            lines.push(format!("  input: {input}"));
        }
        lines
    }
}

enum Outcome {
    Accepted,
    Refused,
}

/// Numbers that break arithmetic.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "4294967296",
    "9007199254740993",
    "1e308",
    "-0",
    "0.5",
    "NaN",
];

const ODD_TEXT: &[&str] = &["", " ", "\r", "\u{feff}", "é", "\u{0}", "nemesis", "c1", "s1", "{", "[", "\"", "\\", ":x"];

const JEPSEN_LOGS: &[&str] = &[
    include_str!("../../checker/tests/data/porcupine/jepsen/etcd_002.log"),
    include_str!("../../checker/tests/data/porcupine/jepsen/etcd_000.log"),
];

const EDN_FILES: &[&str] = &[
    include_str!("../../checker/tests/data/knossos/cas-register/bad/cas-failure.edn"),
    include_str!("../../checker/tests/data/knossos/cas-register/bad/rethink-fail-minimal.edn"),
    include_str!("../../checker/tests/data/knossos/multi-register/good/multi-register.edn"),
    include_str!("../../checker/tests/data/porcupine/kv/c01-bad.txt"),
];

/// Library scenarios whose recorded histories the history mutations start from: a lock, a
/// key-value workload with watchers, ZooKeeper, leases under a deposed leader.
const HISTORY_SCENARIOS: &[&str] = &["split-brain-gc-pause", "stale-reads", "zk-split-brain-gc-pause-fenced"];

/// Runs `inputs` mutated inputs, spread over the kinds in turn, from `seed`.
pub fn run(inputs: u64, seed: u64) -> Report {
    let histories: Vec<String> = HISTORY_SCENARIOS
        .iter()
        .map(|name| {
            let scenario = crate::load::resolve(name).expect("a library scenario").scenario;
            let history = std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, || coordsim_sim::harness::run(&scenario, 1))
                    .expect("the OS starts a thread")
                    .join()
                    .expect("a library scenario runs")
                    .expect("a library scenario stays under the entry limit")
            });
            history.to_json()
        })
        .collect();
    let scenarios: Vec<&str> = crate::library::all().map(|(_, text)| *text).collect();
    let mut rng = Rng::from_state(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut report = Report::default();
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
        PANIC_AT.with(|cell| *cell.borrow_mut() = at);
    }));
    for index in 0..inputs {
        let kind = Kind::ALL[(index % Kind::ALL.len() as u64) as usize];
        let input = match kind {
            Kind::Scenario => {
                let base = rng_pick_str(&mut rng, &scenarios);
                mutate_text(&mut rng, base)
            }
            Kind::History => {
                let base = rng_pick_str(&mut rng, &histories);
                mutate_json(&mut rng, base)
            }
            Kind::JepsenLog => {
                let base = rng_pick_str(&mut rng, JEPSEN_LOGS);
                mutate_text(&mut rng, base)
            }
            Kind::Edn => {
                let base = rng_pick_str(&mut rng, EDN_FILES);
                mutate_text(&mut rng, base)
            }
            Kind::CommandLine => command_line(&mut rng),
        };
        let result = catch_unwind(AssertUnwindSafe(|| feed(kind, &input)));
        match result {
            Ok(Outcome::Accepted) => *report.accepted.entry(kind).or_default() += 1,
            Ok(Outcome::Refused) => *report.refused.entry(kind).or_default() += 1,
            Err(payload) => {
                *report.panicked.entry(kind).or_default() += 1;
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "(no message)".into());
                let at = PANIC_AT.with(|cell| cell.borrow_mut().take()).unwrap_or_default();
                let message = format!("{message} at {at}");
                *report.distinct.entry(message.clone()).or_default() += 1;
                report.first_panic.entry(kind).or_insert_with(|| (message, coordsim_checker::import::cut(&input)));
            }
        }
    }
    std::panic::set_hook(quiet);
    report
}

fn rng_pick_str<'a, S: AsRef<str>>(rng: &mut Rng, items: &'a [S]) -> &'a str {
    rng.pick(items).as_ref()
}

/// Reads `input` as `kind` and, when it is accepted, uses it as the command would.
fn feed(kind: Kind, input: &str) -> Outcome {
    match kind {
        Kind::Scenario => match crate::load::parse("fuzz.toml", input) {
            Ok(_) => Outcome::Accepted,
            Err(_) => Outcome::Refused,
        },
        Kind::History => match History::from_json(input) {
            Ok(history) => {
                for property in Property::ALL {
                    let _ = property.check_with(&history, &small_limits());
                }
                let _ = coordsim_reports::run_report_html(&coordsim_reports::RunInput::new(&history));
                Outcome::Accepted
            }
            Err(_) => Outcome::Refused,
        },
        Kind::JepsenLog => match porcupine_log::parse(input, None) {
            Ok(history) => {
                let _ = lin::check(&RegisterModel::<i64>::new(), &history, &small_limits());
                Outcome::Accepted
            }
            Err(_) => Outcome::Refused,
        },
        Kind::Edn => {
            let checked = match jepsen_edn::Flavor::detect(input).unwrap_or(jepsen_edn::Flavor::Register) {
                jepsen_edn::Flavor::Register => jepsen_edn::register(input, None)
                    .map(|h| lin::check(&RegisterModel::<i64>::new(), &h, &small_limits()).is_ok()),
                jepsen_edn::Flavor::Mutex => {
                    jepsen_edn::mutex(input, None).map(|h| lin::check(&MutexModel, &h, &small_limits()).is_ok())
                }
                jepsen_edn::Flavor::AppendKv => {
                    jepsen_edn::append_kv(input, None).map(|h| lin::check(&AppendKvModel, &h, &small_limits()).is_ok())
                }
                jepsen_edn::Flavor::MultiRegister => jepsen_edn::multi_register(input, None)
                    .map(|h| lin::check(&MultiRegisterModel::default(), &h, &small_limits()).is_ok()),
            };
            match checked {
                Ok(_) => Outcome::Accepted,
                Err(_) => Outcome::Refused,
            }
        }
        Kind::CommandLine => {
            let args: Vec<&str> = input.split('\u{1f}').collect();
            match Cli::try_parse_from(args) {
                Ok(_) => Outcome::Accepted,
                Err(_) => Outcome::Refused,
            }
        }
    }
}

fn small_limits() -> CheckOptions {
    CheckOptions {
        time_limit: Some(Duration::from_millis(200)),
        memory_limit_bytes: Some(64 << 20),
        parallel: false,
        first_failure_wins: true,
    }
}

/// Text mutations: numbers swapped for extremes, lines dropped, doubled or swapped, odd text
/// inserted, the text cut short. One to three of them.
fn mutate_text(rng: &mut Rng, base: &str) -> String {
    let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.index(3) {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let at = rng.index(lines.len());
        match rng.index(7) {
            0 | 1 => lines[at] = replace_a_number(rng, &lines[at]),
            2 => {
                lines.remove(at);
            }
            3 => {
                let line = lines[at].clone();
                lines.insert(at, line);
            }
            4 => {
                let other = rng.index(lines.len());
                lines.swap(at, other);
            }
            5 => {
                let line = &mut lines[at];
                let cut = floor_char_boundary(line, rng.index(line.len() + 1));
                line.insert_str(cut, *rng.pick(ODD_TEXT));
            }
            _ => {
                let keep = rng.index(lines.len() + 1);
                lines.truncate(keep);
            }
        }
    }
    lines.join(if rng.index(8) == 0 { "\r\n" } else { "\n" })
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Replaces one run of digits in `line` with an extreme value.
fn replace_a_number(rng: &mut Rng, line: &str) -> String {
    let runs: Vec<(usize, usize)> = {
        let bytes = line.as_bytes();
        let mut runs = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii_digit() {
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                runs.push((start, i));
            } else {
                i += 1;
            }
        }
        runs
    };
    match runs.as_slice() {
        [] => format!("{line}{}", *rng.pick(EXTREMES)),
        runs => {
            let (start, end) = *rng.pick(runs);
            format!("{}{}{}", &line[..start], *rng.pick(EXTREMES), &line[end..])
        }
    }
}

/// Structured mutations of a JSON document: a value anywhere replaced by an extreme number, odd
/// text, another type; an array element dropped, doubled or moved; an object key dropped or
/// added. Sometimes the text is cut or a byte is broken as well.
fn mutate_json(rng: &mut Rng, base: &str) -> String {
    let mut value: Value = serde_json::from_str(base).expect("our own history is JSON");
    for _ in 0..1 + rng.index(2) {
        let mut paths = Vec::new();
        collect_paths(&value, &mut Vec::new(), &mut paths);
        // Mostly a number out of range but of the right type: what validation must bound.
        let numbers: Vec<&Vec<PathStep>> =
            paths.iter().filter(|path| at_path_ref(&value, path).is_some_and(Value::is_number)).collect();
        if !numbers.is_empty() && rng.index(10) < 7 {
            let path = (*rng.pick(&numbers)).clone();
            const IN_TYPE: &[&str] = &[
                "0",
                "1",
                "18446744073709551615",
                "9223372036854775807",
                "-9223372036854775808",
                "-1",
                "4611686018427387904",
                "1000000000000000000",
            ];
            let extreme = *rng.pick(IN_TYPE);
            *at_path(&mut value, &path) = serde_json::from_str(extreme).expect("a JSON number");
            continue;
        }
        let path = rng.pick(&paths).clone();
        let target = at_path(&mut value, &path);
        match (rng.index(6), &mut *target) {
            (0 | 1, Value::Number(_) | Value::Null) | (0, _) => {
                *target = serde_json::from_str(*rng.pick(EXTREMES)).unwrap_or(Value::Null);
            }
            (2, _) => {
                let text = *rng.pick(ODD_TEXT);
                *target = Value::String(text.repeat(1 + rng.index(3)));
            }
            (3, Value::Array(items)) if !items.is_empty() => {
                let at = rng.index(items.len());
                match rng.index(3) {
                    0 => {
                        items.remove(at);
                    }
                    1 => {
                        let item = items[at].clone();
                        items.insert(at, item);
                    }
                    _ => {
                        let other = rng.index(items.len());
                        items.swap(at, other);
                    }
                }
            }
            (4, Value::Object(fields)) if !fields.is_empty() => {
                let key = fields.keys().nth(rng.index(fields.len())).cloned().unwrap_or_default();
                fields.remove(&key);
            }
            (5, Value::Object(fields)) => {
                fields.insert("unknown_field".into(), Value::Bool(true));
            }
            _ => *target = Value::Bool(rng.index(2) == 0),
        }
    }
    let mut text = serde_json::to_string(&value).expect("a JSON value serializes");
    if rng.index(20) == 0 {
        let cut = floor_char_boundary(&text, rng.index(text.len() + 1));
        text.truncate(cut);
    }
    text
}

fn collect_paths(value: &Value, path: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    out.push(path.clone());
    match value {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(PathStep::Index(index));
                collect_paths(item, path, out);
                path.pop();
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                path.push(PathStep::Key(key.clone()));
                collect_paths(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum PathStep {
    Index(usize),
    Key(String),
}

fn at_path_ref<'a>(value: &'a Value, path: &[PathStep]) -> Option<&'a Value> {
    match path.split_first() {
        None => Some(value),
        Some((PathStep::Index(index), rest)) => at_path_ref(value.get(*index)?, rest),
        Some((PathStep::Key(key), rest)) => at_path_ref(value.get(key.as_str())?, rest),
    }
}

fn at_path<'a>(value: &'a mut Value, path: &[PathStep]) -> &'a mut Value {
    match path.split_first() {
        None => value,
        Some((PathStep::Index(index), rest)) => at_path(&mut value[*index], rest),
        Some((PathStep::Key(key), rest)) => at_path(&mut value[key.as_str()], rest),
    }
}

/// A command line: a subcommand and flags from the CLI's own vocabulary with hostile values.
fn command_line(rng: &mut Rng) -> String {
    const WORDS: &[&str] = &[
        "run",
        "sweep",
        "check",
        "bench",
        "shrink",
        "merge",
        "report",
        "explain",
        "list",
        "model",
        "--seed",
        "--seeds",
        "--shard",
        "--jobs",
        "--out",
        "--report",
        "--bugs",
        "--timeout",
        "--memory-limit",
        "--format",
        "--model",
        "--initial",
        "--property",
        "--show-plan",
        "split-brain-gc-pause",
        "all",
        "1..20",
        "0..18446744073709551615",
        "5..1",
        "1/0",
        "0/4",
        "3/2",
        "-1",
        "1ms",
        "0s",
        "99999999999h",
        "html,junit",
        "md",
        "none",
        "auto",
        "edn",
        "kv",
        "x=0,y=0",
        "9GiB",
        "0B",
        "18446744073709551615EiB",
        "",
        "\u{feff}",
        "é",
    ];
    let mut args = vec!["coordsim".to_string()];
    for _ in 0..1 + rng.index(6) {
        let word = *rng.pick(WORDS);
        args.push(if rng.index(4) == 0 { replace_a_number(rng, word) } else { word.to_string() });
    }
    args.join("\u{1f}")
}
