//! `coordsim compare`: one workload on several recipes (and so on etcd and on ZooKeeper), side by
//! side, the comparison the field's guidance asks for before picking a lock: how long a handoff
//! takes, how long the queue takes to drain, how long a lock request waits at p99, how late
//! keepalives come back, how many waiters each release wakes, how fast the lock comes back after
//! a fault. Each recipe runs on its service's calibrated time profile unless `--profile` says
//! otherwise (docs/time.md), so the figures are comparable with the real services'.

use std::process::ExitCode;

use coordsim_checker::metrics::{Headline, Metrics};
use coordsim_sim::scenario::{Recipe, Scenario, TimingSpec};

use crate::load::{self, InputError};
use crate::sweep::{self, SeedResult, Task};

/// The lock recipes a comparison runs by default: every one that takes a lock the way the
/// workload asks (the elections and Redlock only when named).
pub const LOCKS: [Recipe; 6] = [
    Recipe::EtcdMutex,
    Recipe::EtcdLockApi,
    Recipe::EtcdCas,
    Recipe::EtcdSemaphore,
    Recipe::ZkQueueLock,
    Recipe::ZkHerdLock,
];

/// What `coordsim compare` was asked.
#[derive(Clone, Debug)]
pub struct Request {
    /// A library name or a scenario file with a `[lock]` workload.
    pub scenario: String,
    /// Recipe names (kebab-case, as in `[lock] recipe`); empty: [`LOCKS`].
    pub recipes: Vec<String>,
    pub seeds: (u64, u64),
    /// `auto` (each recipe on its service's profile), `none`, or a profile's name.
    pub profile: String,
    /// A network preset in place of the profiles' own (`--network`).
    pub network: Option<String>,
    pub jobs: usize,
}

/// One recipe's figures over the seeds: medians of each seed's figure (µs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub recipe: String,
    pub profile: String,
    pub handoff_us: Option<u64>,
    pub drain_us: Option<u64>,
    pub lock_p99_us: Option<u64>,
    pub keepalive_p99_us: Option<u64>,
    /// Wakeups per release, in hundredths.
    pub wakeups_per_release_x100: Option<u64>,
    pub grants: Option<u64>,
    pub recovery_us: Option<u64>,
    /// How deep the busiest server's work queue usually was ([`Headline::queue_p99`]).
    pub queue_p99: Option<u64>,
    /// Seeds whose verdicts were not the scenario's expectations for this recipe (a comparison
    /// shows them; it does not judge them).
    pub violations: Vec<String>,
}

fn parse_recipe(name: &str) -> Result<Recipe, InputError> {
    let quoted = format!("\"{name}\"");
    serde_json::from_str::<Recipe>(&quoted).map_err(|_| {
        InputError::Usage(format!(
            "--recipes: unknown recipe {name:?} (etcd-mutex, etcd-lock-api, etcd-cas, etcd-semaphore, zk-queue-lock, \
             zk-herd-lock, etcd-election, zk-election)"
        ))
    })
}

fn recipe_name(recipe: Recipe) -> String {
    serde_json::to_string(&recipe).expect("a recipe serializes").trim_matches('"').to_string()
}

/// `base` with `recipe` and its time profile, on `network` if one is named.
fn variant(base: &Scenario, recipe: Recipe, profile: &str, network: Option<&str>) -> Result<Scenario, InputError> {
    let mut scenario = base.clone();
    let lock = scenario.lock.as_mut().expect("checked: the scenario has a [lock]");
    lock.recipe = recipe;
    if recipe == Recipe::Redlock {
        return Err(InputError::Usage(
            "--recipes: redlock runs on independent Redis servers, not on the scenario's cluster".into(),
        ));
    }
    let mut timing = TimingSpec::from_flag(profile, recipe.is_zookeeper()).map_err(InputError::Usage)?;
    if let Some(network) = network {
        timing = TimingSpec::on_network(Some(timing), network).map_err(InputError::Usage)?;
    }
    scenario.timing = Some(timing);
    scenario.name = format!("{}-{}", base.name, recipe_name(recipe));
    scenario.validate().map_err(|e| {
        InputError::Usage(format!("{} with recipe {}: {}: {}", base.name, recipe_name(recipe), e.field, e.message))
    })?;
    Ok(scenario)
}

/// The median of what `figure` gives for each seed's metrics.
fn median(metrics: &[Metrics], figure: impl Fn(&Metrics) -> Option<u64>) -> Option<u64> {
    coordsim_checker::metrics::median(metrics.iter().filter_map(figure).collect())
}

/// Runs every recipe over the seeds and returns its row.
pub fn rows(request: &Request) -> Result<Vec<Row>, InputError> {
    let loaded = load::resolve(&request.scenario)?;
    let base = loaded.scenario;
    if base.lock.is_none() {
        return Err(InputError::Usage(format!(
            "{}: compare runs a [lock] workload on several recipes; this scenario has none",
            loaded.source
        )));
    }
    if let Err(message) = TimingSpec::from_flag(&request.profile, false) {
        return Err(InputError::Usage(message));
    }
    let recipes: Vec<Recipe> = if request.recipes.is_empty() {
        LOCKS.to_vec()
    } else {
        request.recipes.iter().map(|name| parse_recipe(name)).collect::<Result<_, _>>()?
    };
    let variants: Vec<Scenario> = recipes
        .iter()
        .map(|recipe| variant(&base, *recipe, &request.profile, request.network.as_deref()))
        .collect::<Result<_, _>>()?;
    let seeds: Vec<u64> = (request.seeds.0..=request.seeds.1).collect();
    let tasks: Vec<Task<'_>> = variants
        .iter()
        .flat_map(|scenario| seeds.iter().map(move |&seed| Task { scenario, arg: &scenario.name, seed }))
        .collect();
    let mut results: Vec<Option<SeedResult>> = (0..tasks.len()).map(|_| None).collect();
    sweep::run_tasks(&tasks, request.jobs, |index, result| results[index] = Some(result));
    let mut rows = Vec::new();
    for (v, (scenario, recipe)) in variants.iter().zip(&recipes).enumerate() {
        let mut metrics = Vec::new();
        let mut violations = Vec::new();
        for (s, seed) in seeds.iter().enumerate() {
            match results[v * seeds.len() + s].take().expect("every task reports") {
                SeedResult::Done { summary, .. } => {
                    let failed: Vec<&str> = summary.mismatches().map(|o| o.report.property.as_str()).collect();
                    if !failed.is_empty() {
                        violations.push(format!("seed {seed}: {}", failed.join(", ")));
                    }
                    metrics.extend(summary.metrics);
                }
                SeedResult::Crashed { message, .. } | SeedResult::Stopped { message, .. } => {
                    violations.push(format!("seed {seed}: {message}"));
                }
            }
        }
        let headlines: Vec<Headline> = metrics.iter().map(Metrics::headline).collect();
        let headline = Headline::median_of(&headlines);
        rows.push(Row {
            recipe: recipe_name(*recipe),
            profile: scenario.timing.as_ref().map_or_else(|| "none".into(), TimingSpec::label),
            handoff_us: headline.handoff_p50_us,
            drain_us: headline.drain_us,
            lock_p99_us: headline.lock_p99_us,
            keepalive_p99_us: headline.keepalive_p99_us,
            // Every grant's holder releases once (the last release may wake nobody).
            wakeups_per_release_x100: median(&metrics, |m| {
                let lock = m.busiest_lock()?;
                (lock.grants > 0).then(|| lock.wakeups * 100 / lock.grants)
            }),
            grants: median(&metrics, |m| m.busiest_lock().map(|l| l.grants)),
            recovery_us: headline.recovery_p50_us,
            queue_p99: headline.queue_p99,
            violations,
        });
    }
    Ok(rows)
}

fn ms(us: Option<u64>) -> String {
    match us {
        None => "-".into(),
        Some(us) if us >= 10_000_000 => format!("{:.1} s", us as f64 / 1e6),
        Some(us) if us >= 1_000_000 => format!("{:.2} s", us as f64 / 1e6),
        Some(us) => format!("{:.1} ms", us as f64 / 1e3),
    }
}

/// The table, as Markdown.
pub fn table(rows: &[Row], seeds: (u64, u64)) -> String {
    let mut text = format!(
        "| recipe | profile | handoff | drain | lock p99 | keepalive p99 | wakeups per release | grants | recovery | queue p99 |\n\
         |---|---|---|---|---|---|---|---|---|---|\n"
    );
    for row in rows {
        text.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.recipe,
            row.profile,
            ms(row.handoff_us),
            ms(row.drain_us),
            ms(row.lock_p99_us),
            ms(row.keepalive_p99_us),
            row.wakeups_per_release_x100.map_or("-".into(), |w| format!("{:.2}", w as f64 / 100.0)),
            row.grants.map_or("-".into(), |g| g.to_string()),
            ms(row.recovery_us),
            row.queue_p99.map_or("-".into(), |d| d.to_string()),
        ));
    }
    text.push_str(&format!(
        "\nMedians over seeds {}..{} of each seed's figure: handoff (median release to next grant), drain (first \
         grant to last), lock p99 (a request's wait, queueing included), keepalive p99, wakeups per release, \
         grants, recovery (median wait for a grant after a fault ends), queue p99 (pieces of work waiting for or \
         on the busiest server's CPU, p99 over the run's 100 ms windows of each window's most). Wakeups are the clients' records: 0 where \
         the server waits for the client (etcd's Lock API).\n",
        seeds.0, seeds.1
    ));
    let shown: Vec<String> = rows
        .iter()
        .filter(|row| !row.violations.is_empty())
        .map(|row| format!("- {}: not as the scenario expects on {}", row.recipe, row.violations.join("; ")))
        .collect();
    if !shown.is_empty() {
        text.push_str("\nVerdicts (the scenario's expectations are written for its own recipe):\n");
        text.push_str(&shown.join("\n"));
        text.push('\n');
    }
    text
}

/// `coordsim compare`: prints the table; exit 0 (a comparison judges nothing), 2 on bad input.
pub fn run(request: &Request) -> Result<ExitCode, InputError> {
    let rows = rows(request)?;
    crate::outln!("{}", table(&rows, request.seeds).trim_end());
    Ok(ExitCode::SUCCESS)
}
