//! Reports for people and CI: `coordsim run --report html,junit,md` and `coordsim report <dir>`.
//!
//! During a run a [`Reporter`] sees every seed after it was saved: it writes the seed's
//! report.html when the policy asks for one, adds the seed to the sweep, and keeps a progress bar
//! on stderr (only on a terminal, and only for sweeps of more than one seed). At the end it writes
//! `<out>/sweep.json` (always), `<out>/junit.xml` and `<out>/summary.md` (when asked).
//! `coordsim report` renders the same files again from what a run left on disk.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use coordsim_checker::history::History;
use coordsim_reports::sweep::RunRecord;
use coordsim_reports::{RunInput, RunSummary, SweepBuilder, SweepSummary, junit, markdown, run_report_html};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::load::{self, InputError, Loaded};
use crate::sweep::SeedResult;

/// Which report.html files a run writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HtmlPolicy {
    Never,
    /// For seeds that show a violation or are not as expected, and for single-seed runs.
    FailingOrSingle,
    Every,
}

/// What `--report` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Formats {
    pub html: HtmlPolicy,
    pub junit: bool,
    pub md: bool,
}

impl Default for Formats {
    /// HTML where a person will look (failing seeds, single-seed runs); sweep.json always.
    fn default() -> Self {
        Formats { html: HtmlPolicy::FailingOrSingle, junit: false, md: false }
    }
}

/// Parses `--report`: a comma-separated list of `html` (failing seeds and single-seed runs),
/// `html-all` (every seed), `junit`, `md`, or `none`.
pub fn parse_formats(text: &str) -> Result<Formats, String> {
    let mut formats = Formats { html: HtmlPolicy::Never, junit: false, md: false };
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part {
            "html" => formats.html = formats.html.max_with(HtmlPolicy::FailingOrSingle),
            "html-all" => formats.html = HtmlPolicy::Every,
            "junit" => formats.junit = true,
            "md" | "markdown" => formats.md = true,
            "none" => {}
            other => {
                return Err(format!("unknown report format {other:?}: use html, html-all, junit, md or none"));
            }
        }
    }
    Ok(formats)
}

impl HtmlPolicy {
    fn max_with(self, other: HtmlPolicy) -> HtmlPolicy {
        match (self, other) {
            (HtmlPolicy::Every, _) | (_, HtmlPolicy::Every) => HtmlPolicy::Every,
            (HtmlPolicy::FailingOrSingle, _) | (_, HtmlPolicy::FailingOrSingle) => HtmlPolicy::FailingOrSingle,
            _ => HtmlPolicy::Never,
        }
    }
}

fn io_error(error: std::io::Error, path: &Path) -> InputError {
    InputError::Io { path: path.display().to_string(), error }
}

/// Every report is written through the folder's manifest: never over a file of the user's.
fn write(path: &Path, text: &str) -> Result<(), InputError> {
    crate::owned::write(path, text)
}

/// The folder of one seed's files.
pub fn seed_dir(out: &Path, scenario: &str, seed: u64) -> PathBuf {
    out.join(scenario).join(format!("seed-{seed}"))
}

/// The command that reruns a sweep, for sweep.json and summary.md.
pub fn sweep_command(args: &[String], seeds: &str, out: &Path) -> String {
    let seeds = if seeds.contains("..") { format!("--seeds {seeds}") } else { format!("--seed {seeds}") };
    let mut command = format!("cargo coordsim run {} {seeds}", args.join(" "));
    if out != Path::new("target/coordsim") {
        command.push_str(&format!(" --out {}", out.display()));
    }
    command
}

/// Writes the report.html of one run into `dir`; returns its path.
pub fn write_run_report(
    dir: &Path,
    history: &History,
    summary: Option<&RunSummary>,
    scenario: Option<&coordsim_sim::scenario::Scenario>,
) -> Result<PathBuf, InputError> {
    write_report(dir, history, summary, scenario, None)
}

/// [`write_run_report`] for a history recorded on a real cluster (`system`: `real etcd`).
pub fn write_report(
    dir: &Path,
    history: &History,
    summary: Option<&RunSummary>,
    scenario: Option<&coordsim_sim::scenario::Scenario>,
    system: Option<&str>,
) -> Result<PathBuf, InputError> {
    let mut input = RunInput::new(history);
    input.summary = summary;
    input.system = system;
    if let Some(scenario) = scenario {
        input.scenario_summary = &scenario.summary;
        input.description = &scenario.description;
    }
    let path = dir.join("report.html");
    write(&path, &run_report_html(&input))?;
    Ok(path)
}

/// Reports of one `coordsim run`.
pub struct Reporter {
    out: PathBuf,
    formats: Formats,
    single_seed: bool,
    sweep: SweepBuilder,
    progress: ProgressBar,
    scenario: Option<coordsim_sim::scenario::Scenario>,
    /// report.html files written for the current scenario.
    written: Vec<PathBuf>,
}

impl Reporter {
    /// `runs` is the number of seeds times scenarios (for the progress bar).
    pub fn new(out: &Path, formats: Formats, command: String, seeds: usize, runs: usize) -> Self {
        let progress = if seeds > 1 && std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(runs as u64), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {elapsed} (eta {eta})  {msg}")
                .expect("a valid template");
            bar.set_style(style);
            bar
        } else {
            ProgressBar::hidden()
        };
        Reporter {
            out: out.to_path_buf(),
            formats,
            single_seed: seeds == 1,
            sweep: SweepBuilder::new(command),
            progress,
            scenario: None,
            written: Vec::new(),
        }
    }

    /// The run covers only these shards of its seeds (recorded in sweep.json for `merge`).
    pub fn with_shards(mut self, shards: Option<coordsim_reports::detection::Shards>) -> Self {
        self.sweep = self.sweep.with_shards(shards);
        self
    }

    /// Prints a line to stdout without tearing the progress bar.
    pub fn println(&self, line: &str) {
        self.progress.suspend(|| crate::outln!("{line}"));
    }

    pub fn begin_scenario(&mut self, loaded: &Loaded, seeds: &str) {
        let output = self.out.join(&loaded.scenario.name);
        self.sweep.begin_scenario(&loaded.scenario.name, &loaded.source, &output.display().to_string(), seeds);
        self.scenario = Some(loaded.scenario.clone());
        self.written.clear();
        self.progress.set_message(loaded.scenario.name.clone());
    }

    fn wants_html(&self, summary: &RunSummary) -> bool {
        match self.formats.html {
            HtmlPolicy::Never => false,
            HtmlPolicy::Every => true,
            HtmlPolicy::FailingOrSingle => self.single_seed || !summary.as_expected || summary.has_violation(),
        }
    }

    /// Writes what one seed needs and counts it in the sweep.
    pub fn on_seed(&mut self, result: &SeedResult) -> Result<(), InputError> {
        self.progress.inc(1);
        match result {
            SeedResult::Done { history, summary } => {
                let report = if self.wants_html(summary) {
                    let dir = seed_dir(&self.out, &summary.scenario, summary.seed);
                    let path = write_run_report(&dir, history, Some(summary), self.scenario.as_ref())?;
                    self.written.push(path.clone());
                    Some(path.display().to_string())
                } else {
                    None
                };
                self.sweep.add(RunRecord::Done { summary, report });
            }
            // sweep.json lists a stopped run with the crashed ones; its message says which it was.
            SeedResult::Crashed { seed, message, replay } | SeedResult::Stopped { seed, message, replay } => {
                self.sweep.add(RunRecord::Crashed { seed: *seed, message, replay });
            }
        }
        Ok(())
    }

    /// The line that says where the current scenario's reports are, if any were written.
    pub fn scenario_line(&self) -> Option<String> {
        match self.written.as_slice() {
            [] => None,
            [one] => Some(format!("  report: {}", one.display())),
            many => Some(format!(
                "  reports: {} report.html files (seeds that failed a property or were not as expected), e.g. {}",
                many.len(),
                many[0].display()
            )),
        }
    }

    /// Writes sweep.json and the requested CI files; returns the lines to print.
    pub fn finish(self) -> Result<Vec<String>, InputError> {
        self.progress.finish_and_clear();
        let sweep = self.sweep.finish();
        write_sweep_files(&self.out, &sweep, self.formats)
    }
}

fn write_sweep_files(out: &Path, sweep: &SweepSummary, formats: Formats) -> Result<Vec<String>, InputError> {
    let mut written = Vec::new();
    let path = out.join("sweep.json");
    write(&path, &sweep.to_json())?;
    written.push(path);
    if formats.junit {
        let path = out.join("junit.xml");
        write(&path, &junit::render(sweep))?;
        written.push(path);
    }
    if formats.md {
        let path = out.join("summary.md");
        write(&path, &markdown::render(sweep))?;
        written.push(path);
    }
    let list: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    Ok(vec![format!("reports: {}", list.join(", "))])
}

/// `coordsim report <path>...`: a run folder (or its history.json) gets its report.html again; a
/// sweep folder (with sweep.json) gets junit.xml and summary.md again, and report.html for each
/// run that was not as expected; a Jepsen etcd log (`.log`) or EDN history (`.edn`) is checked
/// for linearizability as a register and drawn, with the counterexample if there is one, into
/// `<name>.report.html` beside it.
pub fn report(paths: &[PathBuf]) -> Result<ExitCode, InputError> {
    for path in paths {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if path.is_file() && matches!(extension, "log" | "edn") {
            crate::outln!("{}", render_jepsen(path)?.display());
            continue;
        }
        let (dir, history_path) = if path.is_file() {
            (path.parent().unwrap_or(Path::new(".")).to_path_buf(), Some(path.clone()))
        } else if path.join("history.json").is_file() {
            (path.clone(), Some(path.join("history.json")))
        } else {
            (path.clone(), None)
        };
        if let Some(history_path) = history_path {
            let written = rerender_run(&dir, &history_path)?;
            crate::outln!("{}", written.display());
        } else if dir.join("sweep.json").is_file() {
            for line in rerender_sweep(&dir)? {
                crate::outln!("{line}");
            }
        } else if dir.join("detection.json").is_file() {
            crate::outln!("{}", render_detection(&dir)?.display());
        } else if dir.join("real-verdicts.json").is_file() || ["etcd", "zookeeper"].iter().any(|s| dir.join(s).is_dir())
        {
            crate::outln!("{}", render_real_verdicts(&dir)?.display());
        } else {
            return Err(InputError::Usage(format!(
                "{}: neither a run folder (with history.json), a sweep folder (with sweep.json or detection.json) \
                 nor a folder of real runs (etcd/ or zookeeper/, or real-verdicts.json)",
                path.display()
            )));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Renders `detection.md` from a `coordsim sweep --bugs` folder's `detection.json`
/// ([`DetectionSweep::markdown`]).
fn render_detection(dir: &Path) -> Result<PathBuf, InputError> {
    let path = dir.join("detection.json");
    let sweep = coordsim_reports::detection::DetectionSweep::from_json(&read(&path)?)
        .map_err(|e| InputError::Usage(format!("{}: {e}", path.display())))?;
    let page = dir.join("detection.md");
    crate::owned::write(&page, sweep.markdown())?;
    Ok(page)
}

/// Renders `real-verdicts.md` from a folder's `real-verdicts.json`, or first writes that file
/// from the real runs under the folder (`etcd/<scenario>/run-N/summary.json`, ...; the folder's
/// `source.txt`, if any, says how they were made) ([`RealVerdicts::markdown`]).
fn render_real_verdicts(dir: &Path) -> Result<PathBuf, InputError> {
    use crate::real_verdicts::RealVerdicts;
    let json = dir.join("real-verdicts.json");
    let verdicts = if json.is_file() {
        RealVerdicts::from_json(&read(&json)?).map_err(|e| InputError::Usage(format!("{}: {e}", json.display())))?
    } else {
        let source_path = dir.join("source.txt");
        let source =
            if source_path.is_file() { read(&source_path)? } else { format!("Real runs read from {}.", dir.display()) };
        let verdicts = RealVerdicts::from_folder(dir, source.trim())?;
        crate::owned::write(&json, verdicts.to_json())?;
        verdicts
    };
    let page = dir.join("real-verdicts.md");
    crate::owned::write(&page, verdicts.markdown())?;
    Ok(page)
}

fn read(path: &Path) -> Result<String, InputError> {
    crate::input::read_text(path, crate::input::DEFAULT_LIMIT).map_err(|e| match e {
        crate::input::InputFileError::Io(e) => io_error(e, path),
        other => InputError::Usage(format!("{}: {other}", path.display())),
    })
}

/// Renders a run's report.html from its history.json and, if present, its summary.json (the
/// verdicts the run gave); the scenario's teaching text comes from the library when the name is
/// a library scenario.
fn rerender_run(dir: &Path, history_path: &Path) -> Result<PathBuf, InputError> {
    let history = History::from_json(&read(history_path)?)
        .map_err(|e| InputError::Usage(format!("{}: {e}", history_path.display())))?;
    let summary_path = dir.join("summary.json");
    let summary = if summary_path.is_file() {
        Some(
            RunSummary::from_json(&read(&summary_path)?)
                .map_err(|e| InputError::Usage(format!("{}: {e}", summary_path.display())))?,
        )
    } else {
        None
    };
    let scenario = crate::library::get(&history.scenario).and_then(|_| load::resolve(&history.scenario).ok());
    let judged = coordsim_checker::properties::Property::judged_on(&history);
    let summary = summary
        .or_else(|| scenario.as_ref().map(|s| crate::sweep::evaluate_judged(&s.scenario, &s.arg, &history, &judged)));
    write_run_report(dir, &history, summary.as_ref(), scenario.as_ref().map(|s| &s.scenario))
}

fn rerender_sweep(dir: &Path) -> Result<Vec<String>, InputError> {
    let path = dir.join("sweep.json");
    let sweep =
        SweepSummary::from_json(&read(&path)?).map_err(|e| InputError::Usage(format!("{}: {e}", path.display())))?;
    let mut lines = Vec::new();
    for scenario in &sweep.scenarios {
        for failure in &scenario.failures {
            let run_dir = Path::new(&scenario.output).join(format!("seed-{}", failure.seed));
            let history = run_dir.join("history.json");
            if history.is_file() {
                lines.push(rerender_run(&run_dir, &history)?.display().to_string());
            }
        }
    }
    lines.extend(write_sweep_files(dir, &sweep, Formats { html: HtmlPolicy::Never, junit: true, md: true })?);
    Ok(lines)
}

/// Time limit of the linearizability check behind a Jepsen report.
const JEPSEN_CHECK_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

fn render_jepsen(path: &Path) -> Result<PathBuf, InputError> {
    use coordsim_checker::import;
    let imported = if path.extension().and_then(|e| e.to_str()) == Some("log") {
        import::porcupine_log::read(path)
    } else {
        import::jepsen_edn::read_register(path)
    };
    let history = imported.map_err(|e| InputError::Usage(e.to_string()))?;
    let model = coordsim_checker::linearizability::models::RegisterModel::<i64>::new();
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("history");
    let timeline = linearizability_timeline(name, &model, &history)?;
    let out = path.with_extension("report.html");
    write(&out, &coordsim_reports::html::render(&timeline))?;
    Ok(out)
}

/// Checks `history` against `model` and draws its operations (time: the log's line numbers) with
/// the counterexample, if any.
fn linearizability_timeline<M: coordsim_checker::linearizability::Model>(
    name: &str,
    model: &M,
    history: &[coordsim_checker::linearizability::Operation<M::Input, M::Output>],
) -> Result<coordsim_reports::timeline::Timeline, InputError> {
    use coordsim_checker::linearizability::{self as lin, CheckOptions, RETURN_NEVER};
    use coordsim_reports::timeline::operations::{self, OpRecord};
    use coordsim_reports::timeline::{Axis, LinPanel, VerdictRow};
    let options = CheckOptions { time_limit: Some(JEPSEN_CHECK_LIMIT), ..CheckOptions::default() };
    let verdict = lin::check(model, history, &options).map_err(|e| InputError::Usage(format!("{name}: {e}")))?;
    let describe = |id: u64| {
        history.iter().find(|op| op.id == id).map_or_else(String::new, |op| match &op.output {
            Some(output) => format!("{:?} → {output:?}", op.input),
            None => format!("{:?} (unknown outcome)", op.input),
        })
    };
    let panel = match &verdict {
        lin::Verdict::Illegal(counterexample) => Some(LinPanel {
            prefix: counterexample.prefix.iter().map(|&id| (id, describe(id))).collect(),
            state_after_prefix: counterexample.state_after_prefix.clone(),
            stuck: counterexample.stuck.iter().map(|s| (s.id, s.description.clone())).collect(),
        }),
        _ => None,
    };
    let records: Vec<OpRecord> = history
        .iter()
        .map(|op| OpRecord {
            id: op.id,
            client: format!("p{}", op.client),
            call_ns: op.call_ns,
            return_ns: (op.return_ns != RETURN_NEVER).then_some(op.return_ns),
            call: format!("{:?}", op.input),
            result: op.output.as_ref().map(|o| format!("{o:?}")),
        })
        .collect();
    let mut timeline = operations::build(name, Axis::Steps, &records, panel.as_ref());
    timeline.summary = "Time is the line number in the log: only the order of events matters.".to_string();
    if panel.is_none() {
        let (verdict, summary) = match verdict {
            lin::Verdict::Unknown { reason } => ("unknown", format!("the search stopped: {reason}")),
            _ => ("pass", "some order of the operations respects real time and the register model".to_string()),
        };
        timeline.verdicts.push(VerdictRow {
            property: "linearizability".to_string(),
            verdict: verdict.to_string(),
            expected: None,
            as_expected: None,
            summary,
        });
    }
    Ok(timeline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_formats_parse_and_default_to_html_where_people_look() {
        assert_eq!(Formats::default().html, HtmlPolicy::FailingOrSingle);
        let all = parse_formats("html,junit,md").unwrap();
        assert_eq!(all, Formats { html: HtmlPolicy::FailingOrSingle, junit: true, md: true });
        assert_eq!(parse_formats("junit").unwrap().html, HtmlPolicy::Never);
        assert_eq!(parse_formats("html-all,html").unwrap().html, HtmlPolicy::Every);
        assert_eq!(parse_formats("none").unwrap(), Formats { html: HtmlPolicy::Never, junit: false, md: false });
        assert!(parse_formats("pdf").unwrap_err().contains("unknown report format \"pdf\""));
    }

    #[test]
    fn the_sweep_command_reruns_the_same_seeds() {
        let args = vec!["split-brain-gc-pause".to_string()];
        assert_eq!(
            sweep_command(&args, "1..50", Path::new("target/coordsim")),
            "cargo coordsim run split-brain-gc-pause --seeds 1..50"
        );
        assert_eq!(
            sweep_command(&args, "7", Path::new("/tmp/x")),
            "cargo coordsim run split-brain-gc-pause --seed 7 --out /tmp/x"
        );
    }
}
