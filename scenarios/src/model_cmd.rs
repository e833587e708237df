//! `coordsim model`: the stateright models (model/). `coordsim model list` names them;
//! `coordsim model <name>` checks one and prints the state counts, each property's result
//! against its expectation, and the shortest counterexamples as numbered timelines; `--report
//! DIR` draws each counterexample into a report.html; `--explore` serves stateright's Explorer on
//! 127.0.0.1; `--bench` measures the model at 2 to `--clients` clients.
//!
//! Exit codes: 0 when every property gives its expected result, 1 otherwise, 2 on bad input.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use coordsim_model::registry::{self, MODELS, RunOptions};
use coordsim_model::report::ModelReport;
use coordsim_model::runner::{Search, Strategy};
use coordsim_model::{bench, trace};
use coordsim_reports::html;
use coordsim_reports::timeline::steps::{self, Step, Violation};

use crate::load::InputError;
use crate::outln;

/// The Explorer's address when `--explore` has no value.
const EXPLORE_DEFAULT: &str = "127.0.0.1:3000";
/// The largest client count `--bench` goes up to by default.
const BENCH_CLIENTS_DEFAULT: usize = 5;

#[derive(clap::Args, Debug)]
pub struct ModelArgs {
    /// A model name, or `list` for the models.
    pub name: String,
    /// Clients (nodes, for the election models); with --bench, the largest count measured.
    #[arg(long)]
    pub clients: Option<usize>,
    /// Bound on true time in ticks (terms, for the election models).
    #[arg(long = "max-ticks")]
    pub max_ticks: Option<u8>,
    /// Search breadth-first (the default, unless --symmetry).
    #[arg(long, conflicts_with = "dfs")]
    pub bfs: bool,
    /// Search depth-first.
    #[arg(long)]
    pub dfs: bool,
    /// Symmetry reduction (depth-first only; models with interchangeable clients only).
    #[arg(long)]
    pub symmetry: bool,
    /// Checker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Serve stateright's Explorer on ADDR (default 127.0.0.1:3000; a bare number is a port;
    /// 127.0.0.1 only) and check nothing else.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = EXPLORE_DEFAULT)]
    pub explore: Option<String>,
    /// Write each counterexample as a report.html into DIR.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Measure the model at 2..=--clients clients (default 5), breadth-first, depth-first and
    /// with symmetry: unique states, seconds, peak memory.
    #[arg(long)]
    pub bench: bool,
}

pub fn run(args: ModelArgs) -> Result<ExitCode, InputError> {
    if args.name == "list" {
        return Ok(list());
    }
    let usage = InputError::Usage;
    let info = registry::info(&args.name)
        .ok_or_else(|| usage(format!("unknown model {:?}; see `coordsim model list`", args.name)))?;
    let search = search(&args).map_err(usage)?;
    if args.bench {
        return bench_table(&args, search.threads);
    }
    let options = RunOptions { clients: args.clients, ticks_max: args.max_ticks, search };
    if let Some(addr) = &args.explore {
        let addr = explore_addr(addr).map_err(usage)?;
        outln!("serving the Explorer for {} on http://{addr} (Ctrl-C to stop)", info.name);
        registry::serve(info.name, &options, addr).map_err(usage)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(dir) = &args.report {
        check_report_folder(dir)?;
        std::fs::create_dir_all(dir).map_err(|error| InputError::Io { path: dir.display().to_string(), error })?;
    }
    let report = registry::run(info.name, &options).map_err(usage)?;
    let text = report.render();
    let (title, rest) = text.split_once('\n').unwrap_or((&text, ""));
    outln!("{title}");
    outln!("{}", describe(info));
    outln!("{}", rest.trim_end());
    if let Some(dir) = &args.report {
        for path in write_reports(&report, dir)? {
            outln!("report: {}", path.display());
        }
    }
    if !report.as_expected() && !info.ticks_unit.is_empty() && report.ticks_max < info.ticks_default {
        outln!(
            "note: --max-ticks {} is below the default {}: the bound may hide the behaviour",
            report.ticks_max,
            info.ticks_default
        );
    }
    Ok(if report.as_expected() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn list() -> ExitCode {
    for info in MODELS {
        let symmetry = if info.symmetric { ", symmetric" } else { "" };
        outln!("{:<30} {} ({} clients by default{symmetry})", info.name, info.summary, info.clients_default);
    }
    ExitCode::SUCCESS
}

/// The model's documentation lines: what it abstracts, what code it shares, what it leaves out.
fn describe(info: &registry::ModelInfo) -> String {
    format!("  abstracts:   {}\n  shared code: {}\n  leaves out:  {}", info.abstracts, info.shared, info.leaves_out)
}

fn search(args: &ModelArgs) -> Result<Search, String> {
    if args.symmetry && args.bfs {
        return Err("--symmetry works depth-first only (stateright 0.31 ignores it breadth-first): use --dfs".into());
    }
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let strategy = if args.dfs || args.symmetry { Strategy::Dfs } else { Strategy::Bfs };
    Ok(Search { strategy, symmetry: args.symmetry, threads: args.threads })
}

/// `3000` → 127.0.0.1:3000; `127.0.0.1:3000` as is; any other host is refused.
fn explore_addr(text: &str) -> Result<SocketAddr, String> {
    let addr = match text.parse::<u16>() {
        Ok(port) => SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        Err(_) => {
            text.parse::<SocketAddr>().map_err(|_| format!("--explore {text:?}: not an address like 127.0.0.1:3000"))?
        }
    };
    if addr.ip() != Ipv4Addr::LOCALHOST {
        return Err(format!("--explore {text}: the Explorer binds to 127.0.0.1 only"));
    }
    Ok(addr)
}

fn bench_table(args: &ModelArgs, threads: usize) -> Result<ExitCode, InputError> {
    let largest = args.clients.unwrap_or(BENCH_CLIENTS_DEFAULT);
    if !(registry::CLIENTS_MIN..=registry::CLIENTS_MAX).contains(&largest) {
        let range = format!("{}..={}", registry::CLIENTS_MIN, registry::CLIENTS_MAX);
        return Err(InputError::Usage(format!("--clients {largest}: must be in {range}")));
    }
    outln!("{} at 2..={largest} clients, {threads} thread{}", args.name, if threads == 1 { "" } else { "s" });
    outln!("{}", bench::header());
    outln!("{}", bench::separator());
    let rows = bench::run(&args.name, 2..=largest, args.max_ticks, threads, |row| outln!("{}", bench::line(row)))
        .map_err(InputError::Usage)?;
    Ok(if rows.iter().all(|r| r.as_expected) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Draws each counterexample (and each unexpected example) into `dir`: the first as
/// report.html, the others as report-<property>.html.
fn write_reports(report: &ModelReport, dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let mut written = Vec::new();
    for (result, trace_steps) in report.traces_to_show() {
        // A belief or a pause that no step ends lasts to the end of the trace.
        let end = trace_steps.len() + 1;
        let until = trace::until(trace_steps);
        let steps: Vec<Step> = trace_steps
            .iter()
            .zip(until)
            .map(|(s, until)| {
                let until = until.or(s.opens.as_ref().map(|_| end));
                Step { actor: s.actor.clone(), action: s.text.clone(), until }
            })
            .collect();
        let rule = coordsim_model::expectations::meaning(result.name);
        let message = match result.kind {
            coordsim_model::checked::Kind::Always => format!("broken after {} steps; the rule: {rule}", steps.len()),
            coordsim_model::checked::Kind::Sometimes => format!("reached, but expected unreachable: {rule}"),
        };
        let violation = Violation { property: result.name.to_string(), message };
        let title = format!("model {} · {} clients · {}", report.model, report.clients, result.name);
        let page = html::render(&steps::build(&title, &steps, Some(&violation)));
        let name = if written.is_empty() { "report.html".to_string() } else { format!("report-{}.html", result.name) };
        let path = dir.join(name);
        crate::owned::write(&path, page)?;
        written.push(path);
    }
    Ok(written)
}

/// Refuses, before the model runs, a folder where a report this command may write
/// (report.html, report-<property>.html) stands and is not coordsim's.
fn check_report_folder(dir: &Path) -> Result<(), InputError> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "report.html" || (name.starts_with("report-") && name.ends_with(".html")) {
            crate::owned::check_writable(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_counterexample_becomes_a_report_on_a_step_axis() {
        let dir = std::env::temp_dir().join(format!("coordsim-model-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let search = Search { strategy: Strategy::Bfs, symmetry: false, threads: 1 };
        let report = registry::run("lease-lock", &RunOptions { clients: None, ticks_max: None, search }).unwrap();
        let written = write_reports(&report, &dir).unwrap();
        let names: Vec<String> =
            written.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["report.html", "report-fencing.html"]);
        let page = std::fs::read_to_string(&written[0]).unwrap();
        assert!(page.contains("data-axis=\"steps\""));
        assert!(page.contains("mutual_exclusion"));
        assert!(page.contains("write token 2 → accepted"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn symmetry_asks_for_depth_first() {
        let args = |bfs, dfs, symmetry| ModelArgs {
            name: "queue-lock".into(),
            clients: None,
            max_ticks: None,
            bfs,
            dfs,
            symmetry,
            threads: 1,
            explore: None,
            report: None,
            bench: false,
        };
        assert_eq!(search(&args(false, false, true)).unwrap().strategy, Strategy::Dfs);
        assert_eq!(search(&args(false, false, false)).unwrap().strategy, Strategy::Bfs);
        assert!(search(&args(true, false, true)).is_err());
    }

    #[test]
    fn the_explorer_binds_to_127_0_0_1_only() {
        assert_eq!(explore_addr("3001").unwrap(), "127.0.0.1:3001".parse().unwrap());
        assert_eq!(explore_addr("127.0.0.1:3000").unwrap(), "127.0.0.1:3000".parse().unwrap());
        assert!(explore_addr("0.0.0.0:3000").unwrap_err().contains("127.0.0.1 only"));
        assert!(explore_addr("[::1]:3000").is_err());
        assert!(explore_addr("localhost").is_err());
    }
}
