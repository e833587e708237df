//! `detection.json`: what `coordsim sweep --bugs ...` found: for each bug switch, how often its
//! swarm scenario caught the bug with the switch on, and whether the same seeds stayed clean with
//! it off (schema [`DETECTION_SCHEMA`], documented in reports/SCHEMA.md).
//!
//! The file keeps every seed that detected (or violated), so that shards of one sweep merge into
//! exactly the file the unsharded sweep writes: counts, rates and medians are recomputed from the
//! seeds ([`merge`]). Like every report it holds no wall-clock time and no random order.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Schema identifier of `detection.json`; bump on any incompatible change.
pub const DETECTION_SCHEMA: &str = "coordsim-detection/1";

/// An inclusive seed range, written `A..B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRange {
    pub first: u64,
    pub last: u64,
}

impl SeedRange {
    pub fn parse(text: &str) -> Result<SeedRange, String> {
        let (a, b) = text.split_once("..").ok_or_else(|| format!("{text:?} is not a seed range like 1..200"))?;
        let first: u64 = a.trim().parse().map_err(|_| format!("{a:?} is not a seed number"))?;
        let last: u64 = b.trim().trim_start_matches('=').parse().map_err(|_| format!("{b:?} is not a seed number"))?;
        if first > last {
            return Err(format!("empty seed range {text:?}: the first seed is after the last"));
        }
        Ok(SeedRange { first, last })
    }
}

impl std::fmt::Display for SeedRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}..{}", self.first, self.last)
    }
}

impl Serialize for SeedRange {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SeedRange {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<SeedRange, D::Error> {
        SeedRange::parse(&String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// Which slices of a seed range a file covers: shard K of N holds the seeds at positions
/// K-1, K-1+N, K-1+2N, ... of the range (0-based), so N shards partition the range and each gets
/// an even share of early and late seeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shards {
    /// N.
    pub count: u64,
    /// The Ks covered (1-based, ascending, not all of 1..=N: a file covering all is unsharded).
    pub indices: Vec<u64>,
}

impl Shards {
    /// Parses `K/N` (1 <= K <= N).
    pub fn parse(text: &str) -> Result<Shards, String> {
        let bad = || format!("invalid shard {text:?}: expected K/N with 1 <= K <= N, e.g. 2/8");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u64 = k.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shards { count, indices: vec![index] })
    }

    fn contains_position(&self, position: u64) -> bool {
        self.indices.binary_search(&(position % self.count + 1)).is_ok()
    }
}

/// The seeds of `range` that `shards` covers (all of them for `None`), in order.
pub fn seeds_of(range: SeedRange, shards: Option<&Shards>) -> Vec<u64> {
    (range.first..=range.last)
        .enumerate()
        .filter(|(position, _)| shards.is_none_or(|s| s.contains_position(*position as u64)))
        .map(|(_, seed)| seed)
        .collect()
}

/// `detection.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DetectionSweep {
    pub schema: String,
    /// The command that reruns this sweep (each shard's command, for a partial merge).
    pub command: String,
    /// The bug switches as the command named them: `all` or a comma-separated list.
    pub bugs: String,
    /// The whole seed range of the sweep.
    pub seeds: SeedRange,
    /// Present when the file covers only some shards of the range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Shards>,
    /// One per switch, in the order the sweep ran them.
    pub switches: Vec<SwitchDetection>,
    /// True when no switch-off run violated a property or crashed.
    pub clean: bool,
}

/// One bug switch over the seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchDetection {
    pub switch: String,
    /// Its swarm scenario, and the file it was read from.
    pub scenario: String,
    pub source: String,
    /// With the switch on.
    pub on: SwitchOn,
    /// With the switch off.
    pub off: SwitchOff,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchOn {
    /// Seeds run, crashes included.
    pub runs: u64,
    /// Seeds in which a property that the scenario expects to pass failed.
    pub detected: u64,
    /// `detected / runs`, rounded to 4 decimals.
    pub rate: f64,
    /// Walking the seeds in order, the median number of seeds up to and including each
    /// detection, counted from the previous one (absent without detections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_seeds_to_detection: Option<f64>,
    /// How many detecting seeds each property caught, most first.
    pub caught_by: Vec<PropertyCount>,
    /// Every detecting seed, in order.
    pub detections: Vec<SeedFinding>,
    /// Seeds whose simulation panicked (not counted as detections).
    pub crashes: Vec<SeedFinding>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchOff {
    pub runs: u64,
    /// Seeds in which a property expected to pass failed, or that crashed: must be 0.
    pub violations: u64,
    pub failures: Vec<SeedFinding>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PropertyCount {
    pub property: String,
    pub seeds: u64,
}

/// One seed worth looking at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedFinding {
    pub seed: u64,
    /// The properties that failed against their expectation (empty for a crash).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<String>,
    /// The crash message, for a crash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<String>,
    /// The command that replays this run with its report.
    pub replay: String,
}

/// What one run of a swarm scenario showed, as the sweep command reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeedOutcome {
    /// The properties expected to pass that failed (empty: clean).
    Judged(Vec<String>),
    Crashed(String),
}

impl SwitchDetection {
    /// Builds the record of one switch from its runs in seed order: (seed, outcome, replay).
    pub fn from_runs(
        switch: &str,
        scenario: &str,
        source: &str,
        on: &[(u64, SeedOutcome, String)],
        off: &[(u64, SeedOutcome, String)],
        seeds_in_order: &[u64],
    ) -> SwitchDetection {
        let finding = |(seed, outcome, replay): &(u64, SeedOutcome, String)| match outcome {
            SeedOutcome::Judged(properties) => {
                SeedFinding { seed: *seed, properties: properties.clone(), crash: None, replay: replay.clone() }
            }
            SeedOutcome::Crashed(message) => SeedFinding {
                seed: *seed,
                properties: Vec::new(),
                crash: Some(message.clone()),
                replay: replay.clone(),
            },
        };
        let detections: Vec<SeedFinding> =
            on.iter().filter(|(_, o, _)| matches!(o, SeedOutcome::Judged(p) if !p.is_empty())).map(finding).collect();
        let crashes: Vec<SeedFinding> =
            on.iter().filter(|(_, o, _)| matches!(o, SeedOutcome::Crashed(_))).map(finding).collect();
        let failures: Vec<SeedFinding> =
            off.iter().filter(|(_, o, _)| !matches!(o, SeedOutcome::Judged(p) if p.is_empty())).map(finding).collect();
        let mut record = SwitchDetection {
            switch: switch.to_string(),
            scenario: scenario.to_string(),
            source: source.to_string(),
            on: SwitchOn {
                runs: on.len() as u64,
                detected: 0,
                rate: 0.0,
                median_seeds_to_detection: None,
                caught_by: Vec::new(),
                detections,
                crashes,
            },
            off: SwitchOff { runs: off.len() as u64, violations: 0, failures },
        };
        record.recount(seeds_in_order);
        record
    }

    /// Recomputes every count from the seed lists (after building or merging).
    fn recount(&mut self, seeds_in_order: &[u64]) {
        let on = &mut self.on;
        on.detections.sort_by_key(|f| f.seed);
        on.crashes.sort_by_key(|f| f.seed);
        self.off.failures.sort_by_key(|f| f.seed);
        on.detected = on.detections.len() as u64;
        on.rate = rate(on.detected, on.runs);
        let detected: BTreeSet<u64> = on.detections.iter().map(|f| f.seed).collect();
        on.median_seeds_to_detection = median_seeds_to_detection(seeds_in_order, &detected);
        let mut counts: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
        for finding in &on.detections {
            for property in &finding.properties {
                *counts.entry(property).or_default() += 1;
            }
        }
        let mut caught_by: Vec<PropertyCount> = counts
            .into_iter()
            .map(|(property, seeds)| PropertyCount { property: property.to_string(), seeds })
            .collect();
        caught_by.sort_by(|a, b| b.seeds.cmp(&a.seeds).then_with(|| a.property.cmp(&b.property)));
        on.caught_by = caught_by;
        self.off.violations = self.off.failures.len() as u64;
    }
}

/// Walks `seeds` in order and cuts the walk after each detecting seed: the median length of the
/// pieces that end in a detection (how many seeds a sweep starting anywhere runs until it finds
/// the bug). `None` without detections.
pub fn median_seeds_to_detection(seeds: &[u64], detected: &BTreeSet<u64>) -> Option<f64> {
    let mut lengths = Vec::new();
    let mut since = 0u64;
    for seed in seeds {
        since += 1;
        if detected.contains(seed) {
            lengths.push(since);
            since = 0;
        }
    }
    if lengths.is_empty() {
        return None;
    }
    lengths.sort_unstable();
    let middle = lengths.len() / 2;
    Some(if lengths.len() % 2 == 1 {
        lengths[middle] as f64
    } else {
        (lengths[middle - 1] + lengths[middle]) as f64 / 2.0
    })
}

fn rate(hits: u64, runs: u64) -> f64 {
    if runs == 0 {
        return 0.0;
    }
    (hits as f64 / runs as f64 * 10_000.0).round() / 10_000.0
}

/// The command that runs `bugs` over `seeds` (one shard of them, or all).
pub fn sweep_command(bugs: &str, seeds: SeedRange, shards: Option<&Shards>) -> String {
    let base = format!("cargo coordsim sweep --bugs {bugs} --seeds {seeds}");
    match shards {
        None => base,
        Some(shards) => {
            let parts: Vec<String> =
                shards.indices.iter().map(|k| format!("{base} --shard {k}/{}", shards.count)).collect();
            parts.join(" ; ")
        }
    }
}

impl DetectionSweep {
    /// Assembles a sweep from its switches; counts come from the switches.
    pub fn new(bugs: &str, seeds: SeedRange, shards: Option<Shards>, switches: Vec<SwitchDetection>) -> Self {
        let shards = shards.filter(|s| (s.indices.len() as u64) < s.count);
        let clean = switches.iter().all(|s| s.off.violations == 0);
        DetectionSweep {
            schema: DETECTION_SCHEMA.to_string(),
            command: sweep_command(bugs, seeds, shards.as_ref()),
            bugs: bugs.to_string(),
            seeds,
            shards,
            switches,
            clean,
        }
    }

    /// Pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a detection sweep always serializes");
        text.push('\n');
        text
    }

    /// `detection.md`: the sweep as a Markdown page (what `coordsim report` writes beside a
    /// `detection.json`): per switch, how often its swarm scenario caught it, how soon, by which
    /// properties, and whether the fixed system stayed clean; then the first detecting seed's
    /// replay command. Made from this file alone, so a page generated from a measured file can be
    /// checked against it.
    pub fn markdown(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let coverage = match &self.shards {
            None => format!("seeds {}", self.seeds),
            Some(shards) => format!("seeds {} (shards {:?} of {})", self.seeds, shards.indices, shards.count),
        };
        let _ = writeln!(
            out,
            "# Detection rates: {} switches, {coverage}
",
            self.switches.len()
        );
        let _ =
            writeln!(out, "Generated by `coordsim report` from `detection.json`, the output of\n`{}`.\n", self.command);
        out.push_str(
            "| switch | detected | rate | median seeds to detection | caught by (seeds) | switch-off violations |\n",
        );
        out.push_str("|---|---|---|---|---|---|\n");
        for switch in &self.switches {
            let caught: Vec<String> =
                switch.on.caught_by.iter().map(|c| format!("{} ({})", c.property, c.seeds)).collect();
            let crashed = match switch.on.crashes.len() {
                0 => String::new(),
                n => format!(", {n} crashed"),
            };
            let _ = writeln!(
                out,
                "| `{}` | {}/{}{crashed} | {:.1}% | {} | {} | {}/{} |",
                switch.switch,
                switch.on.detected,
                switch.on.runs,
                switch.on.rate * 100.0,
                switch.on.median_seeds_to_detection.map_or("-".to_string(), |m| m.to_string()),
                if caught.is_empty() { "-".to_string() } else { caught.join(", ") },
                switch.off.violations,
                switch.off.runs,
            );
        }
        let verdict = match self.clean {
            true => "Every switch-off run was clean: the fixed systems pass every property they expect to.",
            false => {
                "**Some switch-off runs violated a property** (the command exits 1): the fixed system is not clean."
            }
        };
        let _ = writeln!(out, "\n{verdict}\n");
        out.push_str("First detection of each switch, to replay with its report:\n\n");
        for switch in &self.switches {
            match switch.on.detections.first() {
                Some(first) => {
                    let _ = writeln!(
                        out,
                        "- `{}`: seed {} ({}): `{}`",
                        switch.switch,
                        first.seed,
                        first.properties.join(", "),
                        first.replay
                    );
                }
                None => {
                    let _ = writeln!(out, "- `{}`: not detected", switch.switch);
                }
            }
        }
        out
    }

    /// Parses a `detection.json` and checks its schema.
    pub fn from_json(text: &str) -> Result<DetectionSweep, String> {
        let schema = coordsim_checker::history::schema_of(text).map_err(|e| e.to_string())?.unwrap_or_default();
        if schema != DETECTION_SCHEMA {
            return Err(format!("field `schema`: expected {DETECTION_SCHEMA:?}, found {schema:?}"));
        }
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

/// Combines shards of one sweep (same switches, same seed range, same shard count, no shard
/// twice) into one file; all N shards give exactly the file of the unsharded sweep.
pub fn merge(parts: &[DetectionSweep]) -> Result<DetectionSweep, String> {
    let first = parts.first().ok_or("nothing to merge")?;
    let switch_names = |d: &DetectionSweep| d.switches.iter().map(|s| s.switch.clone()).collect::<Vec<_>>();
    let count = first.shards.as_ref().map_or(1, |s| s.count);
    let mut indices: Vec<u64> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let which = format!("input {}", i + 1);
        if part.seeds != first.seeds {
            return Err(format!("{which} covers seeds {}, input 1 covers {}", part.seeds, first.seeds));
        }
        if part.bugs != first.bugs || switch_names(part) != switch_names(first) {
            return Err(format!("{which} sweeps switches {:?}, input 1 sweeps {:?}", part.bugs, first.bugs));
        }
        let part_count = part.shards.as_ref().map_or(1, |s| s.count);
        if part_count != count {
            return Err(format!("{which} is cut into {part_count} shards, input 1 into {count}"));
        }
        let part_indices = part.shards.as_ref().map_or_else(|| (1..=count).collect(), |s| s.indices.clone());
        for k in part_indices {
            if indices.contains(&k) {
                return Err(format!("{which}: shard {k}/{count} is already in an earlier input"));
            }
            indices.push(k);
        }
    }
    indices.sort_unstable();
    let shards = Shards { count, indices };
    let seeds_in_order = seeds_of(first.seeds, Some(&shards));
    let mut switches = Vec::new();
    for (index, switch) in first.switches.iter().enumerate() {
        let mut merged = switch.clone();
        for part in &parts[1..] {
            let other = &part.switches[index];
            if other.scenario != switch.scenario {
                return Err(format!(
                    "switch {} runs scenario {} in one input and {} in another",
                    switch.switch, switch.scenario, other.scenario
                ));
            }
            merged.on.runs += other.on.runs;
            merged.on.detections.extend(other.on.detections.iter().cloned());
            merged.on.crashes.extend(other.on.crashes.iter().cloned());
            merged.off.runs += other.off.runs;
            merged.off.failures.extend(other.off.failures.iter().cloned());
        }
        merged.recount(&seeds_in_order);
        switches.push(merged);
    }
    Ok(DetectionSweep::new(&first.bugs, first.seeds, Some(shards), switches))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_seed_range() {
        let range = SeedRange { first: 5, last: 27 };
        let mut all: Vec<u64> = Vec::new();
        for k in 1..=4 {
            let shard = Shards::parse(&format!("{k}/4")).unwrap();
            let seeds = seeds_of(range, Some(&shard));
            assert!(seeds.windows(2).all(|w| w[0] < w[1]));
            all.extend(seeds);
        }
        all.sort_unstable();
        assert_eq!(all, seeds_of(range, None));
        assert_eq!(seeds_of(range, Some(&Shards::parse("2/4").unwrap()))[..3], [6, 10, 14]);
    }

    #[test]
    fn bad_shards_are_named() {
        for text in ["0/4", "5/4", "4", "a/b", "1/0", ""] {
            let error = Shards::parse(text).unwrap_err();
            assert!(error.starts_with(&format!("invalid shard {text:?}")), "{error}");
        }
    }

    #[test]
    fn median_counts_seeds_from_one_detection_to_the_next() {
        let seeds: Vec<u64> = (1..=6).collect();
        let detected: BTreeSet<u64> = [1, 2, 5].into_iter().collect();
        // Pieces [1], [2], [3, 4, 5]: lengths 1, 1, 3.
        assert_eq!(median_seeds_to_detection(&seeds, &detected), Some(1.0));
        let detected: BTreeSet<u64> = [2, 6].into_iter().collect();
        // Pieces [1, 2], [3, 4, 5, 6]: lengths 2, 4.
        assert_eq!(median_seeds_to_detection(&seeds, &detected), Some(3.0));
        assert_eq!(median_seeds_to_detection(&seeds, &BTreeSet::new()), None);
    }

    fn sweep_of(seeds: &[u64], shards: Option<Shards>) -> DetectionSweep {
        let on: Vec<(u64, SeedOutcome, String)> = seeds
            .iter()
            .map(|&s| {
                let outcome = match s % 3 {
                    0 => SeedOutcome::Judged(vec!["watch".into()]),
                    1 => SeedOutcome::Judged(vec![]),
                    _ => SeedOutcome::Judged(vec!["watch".into(), "linearizable".into()]),
                };
                (s, outcome, format!("on {s}"))
            })
            .collect();
        let off: Vec<(u64, SeedOutcome, String)> =
            seeds.iter().map(|&s| (s, SeedOutcome::Judged(vec![]), format!("off {s}"))).collect();
        let switch = SwitchDetection::from_runs("x_bug", "swarm-x-bug", "lib", &on, &off, seeds);
        DetectionSweep::new("x_bug", SeedRange { first: 1, last: 10 }, shards, vec![switch])
    }

    #[test]
    fn merging_every_shard_gives_the_unsharded_sweep() {
        let whole = sweep_of(&(1..=10).collect::<Vec<_>>(), None);
        let parts: Vec<DetectionSweep> = [2, 3, 1]
            .into_iter()
            .map(|k| {
                let shards = Shards { count: 3, indices: vec![k] };
                sweep_of(&seeds_of(whole.seeds, Some(&shards)), Some(shards))
            })
            .collect();
        assert_eq!(merge(&parts).unwrap().to_json(), whole.to_json());
        assert_eq!(whole.switches[0].on.caught_by[0], PropertyCount { property: "watch".into(), seeds: 6 });
        let partial = merge(&parts[..2]).unwrap();
        assert_eq!(partial.shards, Some(Shards { count: 3, indices: vec![2, 3] }));
        assert!(partial.command.contains("--shard 2/3 ; cargo coordsim sweep"), "{}", partial.command);
        let error = merge(&[parts[0].clone(), parts[0].clone()]).unwrap_err();
        assert!(error.contains("shard 2/3 is already in an earlier input"), "{error}");
    }
}
