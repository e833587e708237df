//! A scenario: the cluster, the clients and their recipe, the protected resource, the fault
//! schedule and the expected verdicts. Read from TOML (see `scenarios/library/*.toml`); the
//! harness runs one scenario for one seed.
//!
//! Times are written as strings with a unit: `"500ms"`, `"5s"`, `"1.5s"`, `"2m"`.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::resource::ResourceMode;

/// Largest cluster and client counts a scenario may ask for (a limit on everything).
pub const SERVERS_MAX: usize = 7;
pub const CLIENTS_MAX: usize = 64;
/// Longest simulated run.
pub const DURATION_MAX: Duration = Duration::from_secs(3600);
/// Shortest lease TTL (etcd's minimum TTL is 5 s by default; we allow shorter for teaching, but
/// not below a few heartbeats).
pub const TTL_MIN: Duration = Duration::from_millis(500);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// One line: what the scenario shows.
    pub summary: String,
    /// The teaching text: what happens, why, what fixes it.
    #[serde(default)]
    pub description: String,
    /// Simulated (true) time the run lasts.
    pub duration: Dur,
    pub cluster: Cluster,
    pub lock: LockSpec,
    pub resource: ResourceSpec,
    pub clients: Clients,
    #[serde(default)]
    pub nemesis: Vec<ScheduledFault>,
    /// Expected verdict per property; properties not listed are expected to pass.
    #[serde(default)]
    pub expect: BTreeMap<Property, Expectation>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// Number of Raft servers, named s1..sN.
    pub servers: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recipe {
    /// etcd's concurrency.Mutex: own key per session, wait for the predecessor's delete.
    EtcdMutex,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    pub recipe: Recipe,
    /// The lock's name: the key prefix under which holders queue.
    pub name: String,
    /// Session lease TTL.
    pub ttl: Dur,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    pub mode: ResourceMode,
}

/// Every client runs the same loop: acquire, write `writes_per_hold` times spread over `hold`,
/// release, wait `think`, again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clients {
    /// Number of clients, named c1..cN.
    pub count: usize,
    /// When c1 starts.
    #[serde(default = "Dur::zero")]
    pub start: Dur,
    /// Each next client starts this much later.
    #[serde(default = "Dur::zero")]
    pub stagger: Dur,
    /// How long a holder keeps the lock.
    pub hold: Dur,
    /// Writes to the resource per hold (the first right after acquiring).
    pub writes_per_hold: u32,
    /// Pause between releasing and acquiring again.
    #[serde(default = "Dur::zero")]
    pub think: Dur,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduledFault {
    /// True time at which the fault starts.
    pub at: Dur,
    /// How long it lasts.
    #[serde(rename = "for")]
    pub duration: Dur,
    pub kind: FaultSpec,
    /// The node it hits, by name (c1, s2, ...).
    pub target: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultSpec {
    /// A stop-the-world pause (GC pause): the node runs no code; time and network go on.
    Pause,
}

/// What a scenario expects of a property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expectation {
    Pass,
    Fail,
}

impl Expectation {
    pub fn matches(self, verdict: Verdict) -> bool {
        matches!(
            (self, verdict),
            (Expectation::Pass, Verdict::Pass) | (Expectation::Fail, Verdict::Fail)
        )
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expectation::Pass => "pass",
            Expectation::Fail => "fail",
        })
    }
}

/// A semantic problem in a scenario, naming the field (`nemesis[0].target`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub field: String,
    pub message: String,
}

impl Scenario {
    pub fn server_names(&self) -> Vec<String> {
        (1..=self.cluster.servers)
            .map(|i| format!("s{i}"))
            .collect()
    }

    pub fn client_names(&self) -> Vec<String> {
        (1..=self.clients.count).map(|i| format!("c{i}")).collect()
    }

    /// The expectation for `property` (unlisted properties are expected to pass).
    pub fn expectation(&self, property: Property) -> Expectation {
        self.expect
            .get(&property)
            .copied()
            .unwrap_or(Expectation::Pass)
    }

    /// Checks what the types cannot: ranges, names, limits.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let err = |field: &str, message: String| {
            Err(ScenarioError {
                field: field.to_string(),
                message,
            })
        };
        if self.name.is_empty()
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return err(
                "name",
                format!(
                    "{:?} must be non-empty and use only letters, digits, '-' and '_'",
                    self.name
                ),
            );
        }
        if self.duration.0.is_zero() || self.duration.0 > DURATION_MAX {
            return err(
                "duration",
                format!(
                    "{} must be above 0 and at most {}",
                    self.duration,
                    Dur(DURATION_MAX)
                ),
            );
        }
        if !(1..=SERVERS_MAX).contains(&self.cluster.servers) {
            return err(
                "cluster.servers",
                format!(
                    "{} must be between 1 and {SERVERS_MAX}",
                    self.cluster.servers
                ),
            );
        }
        if !(1..=CLIENTS_MAX).contains(&self.clients.count) {
            return err(
                "clients.count",
                format!("{} must be between 1 and {CLIENTS_MAX}", self.clients.count),
            );
        }
        if self.lock.ttl.0 < TTL_MIN {
            return err(
                "lock.ttl",
                format!(
                    "{} is below the minimum TTL {}",
                    self.lock.ttl,
                    Dur(TTL_MIN)
                ),
            );
        }
        if self.lock.name.is_empty() || self.lock.name.ends_with('/') {
            return err(
                "lock.name",
                format!(
                    "{:?} must be non-empty and must not end with '/'",
                    self.lock.name
                ),
            );
        }
        if self.clients.writes_per_hold == 0 {
            return err("clients.writes_per_hold", "must be at least 1".into());
        }
        let servers = self.server_names();
        let clients = self.client_names();
        for (i, fault) in self.nemesis.iter().enumerate() {
            if !servers.contains(&fault.target) && !clients.contains(&fault.target) {
                return err(
                    &format!("nemesis[{i}].target"),
                    format!(
                        "unknown node {:?} (servers are s1..s{}, clients c1..c{})",
                        fault.target, self.cluster.servers, self.clients.count
                    ),
                );
            }
            if fault.at.0 >= self.duration.0 {
                return err(
                    &format!("nemesis[{i}].at"),
                    format!(
                        "{} is not before the end of the run ({})",
                        fault.at, self.duration
                    ),
                );
            }
        }
        Ok(())
    }
}

/// A duration written with a unit in scenario files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

impl Dur {
    pub fn zero() -> Dur {
        Dur(Duration::ZERO)
    }

    pub fn ms(self) -> u64 {
        self.0.as_millis() as u64
    }

    /// Parses `"250ms"`, `"5s"`, `"1.5s"`, `"2m"`, `"100us"`, `"10ns"`.
    pub fn parse(text: &str) -> Result<Dur, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let unit_ns: f64 = match unit.trim() {
            "ns" => 1.0,
            "us" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            _ => {
                return Err(format!(
                    "invalid duration {text:?}: expected a number followed by ns, us, ms, s or m"
                ));
            }
        };
        let value: f64 = number.parse().map_err(|_| {
            format!("invalid duration {text:?}: expected a number followed by ns, us, ms, s or m")
        })?;
        let ns = value * unit_ns;
        if !ns.is_finite() || ns < 0.0 || ns > 1e18 {
            return Err(format!("invalid duration {text:?}: out of range"));
        }
        Ok(Dur(Duration::from_nanos(ns.round() as u64)))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos();
        if ns == 0 {
            f.write_str("0s")
        } else if ns % 1_000_000_000 == 0 {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns % 1_000_000 == 0 {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns % 1000 == 0 {
            write!(f, "{}us", ns / 1000)
        } else {
            write!(f, "{ns}ns")
        }
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Dur, D::Error> {
        let text = String::deserialize(deserializer)?;
        Dur::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_print_back() {
        for (text, ms) in [
            ("500ms", 500),
            ("5s", 5000),
            ("1.5s", 1500),
            ("2m", 120_000),
            ("0s", 0),
        ] {
            let dur = Dur::parse(text).unwrap();
            assert_eq!(dur.ms(), ms, "{text}");
            assert_eq!(Dur::parse(&dur.to_string()).unwrap(), dur);
        }
    }

    #[test]
    fn bad_durations_are_rejected_with_the_text() {
        for text in ["10", "10x", "s", "-1s", "1.2.3s", ""] {
            let error = Dur::parse(text).unwrap_err();
            assert!(error.contains(&format!("{text:?}")), "{error}");
        }
    }
}
