//! `sweep.json`: what one `coordsim run` invocation found over all its scenarios and seeds
//! (schema [`SWEEP_SCHEMA`], documented in reports/SCHEMA.md).
//!
//! A [`SweepBuilder`] takes the runs one at a time, in the order the CLI reports them (seed order
//! per scenario), so the file is byte-identical for the same invocation: it holds no wall-clock
//! time and no map with a random order. `junit.xml` and `summary.md` are rendered from a
//! [`SweepSummary`] alone, so `coordsim report <out>` can re-render them from the file.

use coordsim_checker::metrics::Headline;
use coordsim_checker::verdict::Verdict;
use serde::{Deserialize, Serialize};

use crate::detection::Shards;
use crate::summary::RunSummary;

/// Schema identifier of `sweep.json`; bump on any incompatible change.
pub const SWEEP_SCHEMA: &str = "coordsim-sweep/1";

/// `sweep.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSummary {
    pub schema: String,
    /// The command that reruns the whole sweep.
    pub command: String,
    pub scenarios: Vec<ScenarioSweep>,
    pub totals: Totals,
    /// True when every run of every scenario was as expected.
    pub as_expected: bool,
    /// Present when the runs are only some shards of the seeds (`coordsim run --shard K/N`);
    /// `scenarios[].seeds` is then the whole range. [`merge`] combines shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Shards>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub runs: usize,
    pub as_expected: usize,
    /// Runs whose verdicts did not all match the expectation (crashes included).
    pub not_as_expected: usize,
    pub crashed: usize,
}

/// One scenario over its seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSweep {
    pub scenario: String,
    /// The scenario file (a library path or the path the user gave).
    pub source: String,
    /// Folder holding `seed-<N>/` for each run.
    pub output: String,
    /// The seeds as the user gave them: `7` or `1..50`.
    pub seeds: String,
    pub totals: Totals,
    /// Per property: verdict counts and, where the scenario expects a violation, how often the
    /// checkers detected it.
    pub properties: Vec<PropertyTally>,
    /// Every run that was not as expected, in seed order.
    pub failures: Vec<Failure>,
    /// Every run, in seed order.
    pub runs: Vec<RunLine>,
    /// How long things took, median over the runs that measured it (absent when none did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<SweepTimes>,
}

/// A scenario's figures of time: each the median of the runs' that have it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepTimes {
    /// The time model the runs took their durations from (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_model: Option<String>,
    /// Runs with figures of time.
    pub runs: usize,
    #[serde(flatten)]
    pub median: Headline,
}

impl SweepTimes {
    fn of(runs: &[RunLine], time_model: Option<String>) -> Option<SweepTimes> {
        let timed: Vec<&Headline> = runs.iter().filter_map(|r| r.times.as_ref()).collect();
        if timed.is_empty() {
            return None;
        }
        Some(SweepTimes { time_model, runs: timed.len(), median: Headline::median_of(timed.iter().copied()) })
    }
}

/// A run's figures of time from its summary (`None` without metrics, or with none to show).
fn run_times(summary: &RunSummary) -> Option<Headline> {
    let headline = summary.metrics.as_ref()?.headline();
    (headline != Headline::default()).then_some(headline)
}

/// Verdict counts of one property over a scenario's completed runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PropertyTally {
    pub property: String,
    /// `pass` or `fail`, from the scenario.
    pub expected: String,
    pub pass: usize,
    pub fail: usize,
    pub unknown: usize,
    /// Present when the scenario expects this property to fail: the violation is the point of
    /// the scenario and the rate says how reliably coordsim catches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detection: Option<Detection>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    /// Completed runs in which the property failed.
    pub detected: usize,
    /// Completed runs (crashes excluded).
    pub runs: usize,
    /// `detected / runs`, rounded to 4 decimals (0 when no run completed).
    pub rate: f64,
    /// The first seed that showed the violation, with its replay command and report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<RunRef>,
}

/// A run to look at: its seed, how to replay it, and its report if one was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRef {
    pub seed: u64,
    pub replay: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Some verdict differs from the scenario's expectation.
    Mismatch,
    /// The simulation panicked: a broken invariant in coordsim or the simulator.
    Crash,
}

/// A run that was not as expected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub seed: u64,
    pub kind: FailureKind,
    /// The properties whose verdict differed (empty for a crash).
    pub properties: Vec<PropertyMismatch>,
    /// One line: what went wrong.
    pub message: String,
    pub replay: String,
    /// The run's report.html, if one was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PropertyMismatch {
    pub property: String,
    pub expected: String,
    pub verdict: Verdict,
    /// The checker's one-line summary.
    pub summary: String,
    /// The first finding's message, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
}

/// One run in a line: its seed, whether it was as expected, and the properties that failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunLine {
    pub seed: u64,
    pub status: RunStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    /// The run's figures of time (`coordsim_checker::metrics::Headline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<Headline>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    AsExpected,
    Mismatch,
    Crash,
}

/// What the CLI knows about one finished seed.
#[derive(Clone, Debug)]
pub enum RunRecord<'a> {
    Done {
        summary: &'a RunSummary,
        /// The report.html written for this run, if any.
        report: Option<String>,
    },
    Crashed {
        seed: u64,
        message: &'a str,
        replay: &'a str,
    },
}

/// Collects runs into a [`SweepSummary`].
#[derive(Clone, Debug)]
pub struct SweepBuilder {
    command: String,
    scenarios: Vec<ScenarioSweep>,
    shards: Option<Shards>,
}

impl SweepBuilder {
    pub fn new(command: impl Into<String>) -> Self {
        SweepBuilder { command: command.into(), scenarios: Vec::new(), shards: None }
    }

    /// The runs will be these shards of the seeds (`command` names them).
    pub fn with_shards(mut self, shards: Option<Shards>) -> Self {
        self.shards = shards;
        self
    }

    /// Starts a scenario; the runs added next belong to it.
    pub fn begin_scenario(&mut self, scenario: &str, source: &str, output: &str, seeds: &str) {
        self.scenarios.push(ScenarioSweep {
            scenario: scenario.to_string(),
            source: source.to_string(),
            output: output.to_string(),
            seeds: seeds.to_string(),
            totals: Totals::default(),
            properties: Vec::new(),
            failures: Vec::new(),
            runs: Vec::new(),
            times: None,
        });
    }

    /// Adds one run to the current scenario.
    ///
    /// # Panics
    /// If no scenario was begun: a caller bug.
    pub fn add(&mut self, record: RunRecord<'_>) {
        let sweep = self.scenarios.last_mut().expect("begin_scenario comes before add");
        sweep.totals.runs += 1;
        match record {
            RunRecord::Done { summary, report } => add_done(sweep, summary, report),
            RunRecord::Crashed { seed, message, replay } => {
                sweep.totals.crashed += 1;
                sweep.totals.not_as_expected += 1;
                sweep.failures.push(Failure {
                    seed,
                    kind: FailureKind::Crash,
                    properties: Vec::new(),
                    message: format!("crashed: {message}"),
                    replay: replay.to_string(),
                    report: None,
                });
                sweep.runs.push(RunLine { seed, status: RunStatus::Crash, failed: Vec::new(), times: None });
            }
        }
    }

    pub fn finish(mut self) -> SweepSummary {
        for sweep in &mut self.scenarios {
            let time_model = sweep.times.take().and_then(|t| t.time_model);
            sweep.times = SweepTimes::of(&sweep.runs, time_model);
        }
        let mut totals = Totals::default();
        for sweep in &self.scenarios {
            totals.runs += sweep.totals.runs;
            totals.as_expected += sweep.totals.as_expected;
            totals.not_as_expected += sweep.totals.not_as_expected;
            totals.crashed += sweep.totals.crashed;
        }
        SweepSummary {
            schema: SWEEP_SCHEMA.to_string(),
            command: self.command,
            as_expected: totals.not_as_expected == 0,
            totals,
            scenarios: self.scenarios,
            shards: self.shards,
        }
    }
}

/// Combines `sweep.json` files of shards of one `coordsim run` (same scenarios, same seeds, same
/// shard count, no shard twice) into one; all N shards give the file of the unsharded run. The
/// command, sources and output folders are the first file's, without its `--shard`.
pub fn merge(parts: &[SweepSummary]) -> Result<SweepSummary, String> {
    let first = parts.first().ok_or("nothing to merge")?;
    let count = first.shards.as_ref().map_or(1, |s| s.count);
    let mut indices: Vec<u64> = Vec::new();
    let key = |s: &SweepSummary| s.scenarios.iter().map(|c| (c.scenario.clone(), c.seeds.clone())).collect::<Vec<_>>();
    for (i, part) in parts.iter().enumerate() {
        let which = format!("input {}", i + 1);
        if key(part) != key(first) {
            return Err(format!(
                "{which} runs other scenarios or seeds than input 1: {:?} vs {:?}",
                key(part),
                key(first)
            ));
        }
        let part_count = part.shards.as_ref().map_or(1, |s| s.count);
        if part_count != count {
            return Err(format!("{which} is cut into {part_count} shards, input 1 into {count}"));
        }
        for k in part.shards.as_ref().map_or_else(|| (1..=count).collect(), |s| s.indices.clone()) {
            if indices.contains(&k) {
                return Err(format!("{which}: shard {k}/{count} is already in an earlier input"));
            }
            indices.push(k);
        }
    }
    indices.sort_unstable();
    let mut scenarios = first.scenarios.clone();
    for part in &parts[1..] {
        for (merged, other) in scenarios.iter_mut().zip(&part.scenarios) {
            merge_scenario(merged, other)?;
        }
    }
    for scenario in &mut scenarios {
        scenario.failures.sort_by_key(|f| f.seed);
        scenario.runs.sort_by_key(|r| r.seed);
        let time_model = scenario.times.as_ref().and_then(|t| t.time_model.clone());
        scenario.times = SweepTimes::of(&scenario.runs, time_model);
        let completed = scenario.totals.runs - scenario.totals.crashed;
        for tally in &mut scenario.properties {
            if let Some(detection) = &mut tally.detection {
                detection.runs = completed;
                detection.rate = rate(detection.detected, detection.runs);
            }
        }
    }
    let mut totals = Totals::default();
    for scenario in &scenarios {
        totals.runs += scenario.totals.runs;
        totals.as_expected += scenario.totals.as_expected;
        totals.not_as_expected += scenario.totals.not_as_expected;
        totals.crashed += scenario.totals.crashed;
    }
    let shards = Shards { count, indices };
    let complete = shards.indices.len() as u64 == shards.count;
    let unsharded = match &first.shards {
        Some(s) if s.indices.len() == 1 => first.command.replace(&format!(" --shard {}/{}", s.indices[0], s.count), ""),
        _ => first.command.clone(),
    };
    let command = if complete {
        unsharded
    } else {
        let each: Vec<String> = shards.indices.iter().map(|k| format!("{unsharded} --shard {k}/{count}")).collect();
        each.join(" ; ")
    };
    Ok(SweepSummary {
        schema: SWEEP_SCHEMA.to_string(),
        command,
        as_expected: totals.not_as_expected == 0,
        totals,
        scenarios,
        shards: (!complete).then_some(shards),
    })
}

fn merge_scenario(merged: &mut ScenarioSweep, other: &ScenarioSweep) -> Result<(), String> {
    merged.totals.runs += other.totals.runs;
    merged.totals.as_expected += other.totals.as_expected;
    merged.totals.not_as_expected += other.totals.not_as_expected;
    merged.totals.crashed += other.totals.crashed;
    for tally in &other.properties {
        let Some(mine) = merged.properties.iter_mut().find(|p| p.property == tally.property) else {
            merged.properties.push(tally.clone());
            continue;
        };
        if mine.expected != tally.expected {
            return Err(format!(
                "{}: {} is expected to {} in one input and to {} in another",
                merged.scenario, tally.property, mine.expected, tally.expected
            ));
        }
        mine.pass += tally.pass;
        mine.fail += tally.fail;
        mine.unknown += tally.unknown;
        match (&mut mine.detection, &tally.detection) {
            (Some(mine), Some(theirs)) => {
                mine.detected += theirs.detected;
                let earlier = match (&mine.first, &theirs.first) {
                    (Some(a), Some(b)) => b.seed < a.seed,
                    (None, Some(_)) => true,
                    _ => false,
                };
                if earlier {
                    mine.first = theirs.first.clone();
                }
            }
            (None, Some(theirs)) => mine.detection = Some(theirs.clone()),
            _ => {}
        }
    }
    merged.failures.extend(other.failures.iter().cloned());
    merged.runs.extend(other.runs.iter().cloned());
    Ok(())
}

fn add_done(sweep: &mut ScenarioSweep, summary: &RunSummary, report: Option<String>) {
    let completed = sweep.totals.runs - sweep.totals.crashed;
    for outcome in &summary.outcomes {
        let index = match sweep.properties.iter().position(|p| p.property == outcome.report.property) {
            Some(index) => index,
            None => {
                sweep.properties.push(PropertyTally {
                    property: outcome.report.property.clone(),
                    expected: outcome.expected.clone(),
                    pass: 0,
                    fail: 0,
                    unknown: 0,
                    detection: None,
                });
                sweep.properties.len() - 1
            }
        };
        let tally = &mut sweep.properties[index];
        match outcome.report.verdict {
            Verdict::Pass => tally.pass += 1,
            Verdict::Fail => tally.fail += 1,
            Verdict::Unknown => tally.unknown += 1,
        }
        if tally.expected == "fail" {
            let detection = tally.detection.get_or_insert(Detection { detected: 0, runs: 0, rate: 0.0, first: None });
            detection.runs = completed;
            if outcome.report.verdict == Verdict::Fail {
                detection.detected += 1;
                detection.first.get_or_insert_with(|| RunRef {
                    seed: summary.seed,
                    replay: summary.replay.clone(),
                    report: report.clone(),
                });
            }
            detection.rate = rate(detection.detected, detection.runs);
        }
    }
    // A property that a run did not check still counts its runs in the detection rate.
    for tally in &mut sweep.properties {
        if let Some(detection) = &mut tally.detection {
            detection.runs = completed;
            detection.rate = rate(detection.detected, detection.runs);
        }
    }
    let failed: Vec<String> = summary
        .outcomes
        .iter()
        .filter(|o| o.report.verdict == Verdict::Fail)
        .map(|o| o.report.property.clone())
        .collect();
    if summary.as_expected {
        sweep.totals.as_expected += 1;
    } else {
        sweep.totals.not_as_expected += 1;
        sweep.failures.push(mismatch(summary, report));
    }
    sweep.runs.push(RunLine {
        seed: summary.seed,
        status: if summary.as_expected { RunStatus::AsExpected } else { RunStatus::Mismatch },
        failed,
        times: run_times(summary),
    });
    // Every run of a scenario has the same model; `finish` takes the medians.
    if let Some(model) = summary.metrics.as_ref().and_then(|m| m.time_model.clone()) {
        sweep.times.get_or_insert_with(SweepTimes::default).time_model = Some(model);
    }
}

fn mismatch(summary: &RunSummary, report: Option<String>) -> Failure {
    let properties: Vec<PropertyMismatch> = summary
        .mismatches()
        .map(|o| PropertyMismatch {
            property: o.report.property.clone(),
            expected: o.expected.clone(),
            verdict: o.report.verdict,
            summary: o.report.summary.clone(),
            finding: o.report.findings.first().map(|f| f.message.clone()),
        })
        .collect();
    let message = properties
        .iter()
        .map(|p| format!("{}: expected {}, got {}", p.property, p.expected, p.verdict))
        .collect::<Vec<_>>()
        .join("; ");
    Failure {
        seed: summary.seed,
        kind: FailureKind::Mismatch,
        properties,
        message,
        replay: summary.replay.clone(),
        report,
    }
}

fn rate(detected: usize, runs: usize) -> f64 {
    if runs == 0 {
        return 0.0;
    }
    (detected as f64 / runs as f64 * 10_000.0).round() / 10_000.0
}

impl SweepSummary {
    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a sweep always serializes");
        text.push('\n');
        text
    }

    /// Parses a `sweep.json` and checks its schema.
    pub fn from_json(text: &str) -> Result<SweepSummary, String> {
        let sweep: SweepSummary = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if sweep.schema != SWEEP_SCHEMA {
            return Err(format!("field `schema`: expected {SWEEP_SCHEMA:?}, found {:?}", sweep.schema));
        }
        Ok(sweep)
    }
}
