//! How long things take in a simulated run: the time model. A message's latency on a link, the
//! CPU time a server spends on each request it receives and each entry it applies, and the
//! time its disk takes to sync a log append. Without a model (no `[timing]` in the scenario) a
//! run keeps the simulator's first world: every message 1–10 ms, servers that cost nothing.
//!
//! A model is a named profile (`sim/core/profiles/*.toml`, each with the measurement it came
//! from) or a scenario's own `[timing]` tables over one. Every figure is a [`Dist`]: a fixed
//! duration, or quantiles that a draw interpolates between. Drawing is the driver's business
//! (`coordsim_sim::timing`); this module only says what is to be drawn.

use std::fmt;
use std::time::Duration;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::scenario::{Dur, ScenarioError};

/// The longest duration a time model may draw (a message, a request's cost, an fsync).
pub const DIST_MAX: Duration = Duration::from_secs(10);

/// A distribution of durations, by its quantiles: `p0` (`min`) and `p100` (`max`) always,
/// `p50`, `p90`, `p99`, `p999` when given. A draw picks a share u uniformly in [0, 1) and interpolates
/// linearly between the two quantiles around it; `{min, max}` alone is uniform. Written as a
/// duration (`"2ms"`: always that) or a table (`{ min = "50us", p50 = "120us", p99 = "1ms",
/// max = "2ms" }`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dist {
    /// (share in millionths, duration), strictly increasing shares from 0 to 1,000,000 and
    /// non-decreasing durations.
    points: Vec<(u32, Duration)>,
}

/// The quantile names a table may use, with their shares in millionths.
const QUANTILES: [(&str, u32); 8] = [
    ("min", 0),
    ("p0", 0),
    ("p50", 500_000),
    ("p90", 900_000),
    ("p99", 990_000),
    ("p999", 999_000),
    ("max", 1_000_000),
    ("p100", 1_000_000),
];

impl Dist {
    /// Always `d`.
    pub fn fixed(d: Duration) -> Dist {
        Dist { points: vec![(0, d), (1_000_000, d)] }
    }

    /// Uniform on `min..=max`.
    pub fn uniform(min: Duration, max: Duration) -> Dist {
        Dist { points: vec![(0, min), (1_000_000, max)] }
    }

    /// From (share in millionths, duration) points; the error says what is wrong.
    fn from_points(mut points: Vec<(u32, Duration)>) -> Result<Dist, String> {
        points.sort_by_key(|(share, _)| *share);
        if points.first().is_none_or(|p| p.0 != 0) || points.last().is_none_or(|p| p.0 != 1_000_000) {
            return Err("needs min (p0) and max (p100)".into());
        }
        if points.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return Err("names one quantile twice (min is p0, max is p100)".into());
        }
        if let Some(pair) = points.windows(2).find(|pair| pair[1].1 < pair[0].1) {
            let name = |share: u32| QUANTILES.iter().find(|q| q.1 == share).map_or("?", |q| q.0);
            return Err(format!(
                "quantiles must not decrease: {} is {} but {} is {}",
                name(pair[0].0),
                Dur(pair[0].1),
                name(pair[1].0),
                Dur(pair[1].1)
            ));
        }
        if points.last().is_some_and(|p| p.1 > DIST_MAX) {
            return Err(format!("max must be at most {}", Dur(DIST_MAX)));
        }
        Ok(Dist { points })
    }

    /// From (share in [0, 1], duration) points: shares 0 and 1 must be there, durations must
    /// not decrease; shares are kept to the millionth.
    pub fn from_quantiles(points: &[(f64, Duration)]) -> Result<Dist, String> {
        Dist::from_points(points.iter().map(|(share, d)| ((share.clamp(0.0, 1.0) * 1e6).round() as u32, *d)).collect())
    }

    /// Every duration multiplied by `factor` (a calibration's scale).
    pub fn scaled(&self, factor: f64) -> Dist {
        let scale =
            |d: Duration| Duration::from_nanos((d.as_nanos() as f64 * factor.max(0.0)).round() as u64).min(DIST_MAX);
        Dist { points: self.points.iter().map(|(share, d)| (*share, scale(*d))).collect() }
    }

    /// Every duration rounded to the microsecond (what a calibration writes: no profile is that
    /// precise).
    pub fn rounded_to_us(&self) -> Dist {
        let round = |d: Duration| Duration::from_micros(((d.as_nanos() + 500) / 1000) as u64);
        Dist { points: self.points.iter().map(|(share, d)| (*share, round(*d))).collect() }
    }

    /// The duration at share `u` of the distribution (`u` in [0, 1); clamped).
    pub fn at(&self, u: f64) -> Duration {
        let share = (u.clamp(0.0, 1.0) * 1e6) as u32;
        let next = self.points.partition_point(|p| p.0 <= share).min(self.points.len() - 1);
        let ((s0, d0), (s1, d1)) = (self.points[next - 1], self.points[next]);
        if s1 == s0 || d1 == d0 {
            return d0;
        }
        let within = f64::from(share - s0) / f64::from(s1 - s0);
        d0 + Duration::from_nanos(((d1 - d0).as_nanos() as f64 * within) as u64)
    }

    /// The median.
    pub fn median(&self) -> Duration {
        self.at(0.5)
    }

    pub fn max(&self) -> Duration {
        self.points.last().expect("a distribution has points").1
    }

    /// Whether every draw is the same duration.
    pub fn is_fixed(&self) -> bool {
        self.points.first().map(|p| p.1) == self.points.last().map(|p| p.1)
    }

    /// Whether every draw is zero.
    pub fn is_zero(&self) -> bool {
        self.max().is_zero()
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.points.iter().all(|p| p.1 == self.points[0].1) {
            return write!(f, "{}", Dur(self.points[0].1));
        }
        let name = |share: u32| match share {
            0 => "min",
            1_000_000 => "max",
            _ => QUANTILES.iter().find(|q| q.1 == share).map_or("?", |q| q.0),
        };
        let parts: Vec<String> = self.points.iter().map(|(s, d)| format!("{} = \"{}\"", name(*s), Dur(*d))).collect();
        write!(f, "{{ {} }}", parts.join(", "))
    }
}

impl Serialize for Dist {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if self.points.iter().all(|p| p.1 == self.points[0].1) {
            return serializer.collect_str(&Dur(self.points[0].1));
        }
        let mut map = serializer.serialize_map(Some(self.points.len()))?;
        for (share, d) in &self.points {
            let name = match share {
                0 => "min",
                1_000_000 => "max",
                _ => QUANTILES.iter().find(|q| q.1 == *share).map_or("?", |q| q.0),
            };
            map.serialize_entry(name, &Dur(*d))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Dist {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Dist, D::Error> {
        struct DistVisitor;
        impl<'de> Visitor<'de> for DistVisitor {
            type Value = Dist;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration (\"2ms\") or quantiles ({ min = \"50us\", p50 = \"120us\", max = \"2ms\" })")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Dist, E> {
                let d = Dur::parse(text).map_err(E::custom)?;
                Dist::from_points(vec![(0, d.0), (1_000_000, d.0)]).map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Dist, A::Error> {
                let mut points = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let Some((_, share)) = QUANTILES.iter().find(|q| q.0 == key) else {
                        let names: Vec<&str> = QUANTILES.iter().map(|q| q.0).collect();
                        return Err(de::Error::custom(format!(
                            "unknown quantile `{key}`: expected one of {}",
                            names.join(", ")
                        )));
                    };
                    let d: Dur = map.next_value()?;
                    points.push((*share, d.0));
                }
                Dist::from_points(points).map_err(de::Error::custom)
            }
        }
        deserializer.deserialize_any(DistVisitor)
    }
}

/// A link's capacity in bits per second. Written `"1Gbit/s"`, `"100Mbit/s"`, `"64kbit/s"`,
/// `"125MB/s"` (bytes: B, kB, MB, GB, powers of 1,000, as network figures are given).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bandwidth {
    bits_per_s: u64,
}

/// The units a bandwidth may be written in, with their bits per second.
const BANDWIDTH_UNITS: [(&str, u64); 8] = [
    ("Gbit/s", 1_000_000_000),
    ("Mbit/s", 1_000_000),
    ("kbit/s", 1_000),
    ("bit/s", 1),
    ("GB/s", 8_000_000_000),
    ("MB/s", 8_000_000),
    ("kB/s", 8_000),
    ("B/s", 8),
];

impl Bandwidth {
    /// `bits_per_s` bits per second (at least 1).
    pub fn from_bits_per_s(bits_per_s: u64) -> Bandwidth {
        Bandwidth { bits_per_s: bits_per_s.max(1) }
    }

    pub fn bits_per_s(&self) -> u64 {
        self.bits_per_s
    }

    /// How long `bytes` take to go out at this rate (rounded up to the nanosecond).
    pub fn transmit(&self, bytes: u64) -> Duration {
        let bits = u128::from(bytes) * 8 * 1_000_000_000;
        let nanos = bits.div_ceil(u128::from(self.bits_per_s));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// From `"1Gbit/s"` and the like; the error names the units.
    pub fn parse(text: &str) -> Result<Bandwidth, String> {
        let trimmed = text.trim();
        let units: Vec<&str> = BANDWIDTH_UNITS.iter().map(|u| u.0).collect();
        let bad = || format!("invalid bandwidth {trimmed:?}: expected a number and one of {}", units.join(", "));
        let (number, scale) = BANDWIDTH_UNITS
            .iter()
            .find_map(|(unit, scale)| trimmed.strip_suffix(unit).map(|n| (n.trim(), *scale)))
            .ok_or_else(bad)?;
        let value: f64 = number.parse().map_err(|_| bad())?;
        let bits = value * scale as f64;
        if !bits.is_finite() || bits < 1.0 || bits > 1e15 {
            return Err(format!("bandwidth {trimmed:?} must be between 1 bit/s and 1 Pbit/s"));
        }
        Ok(Bandwidth::from_bits_per_s(bits.round() as u64))
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bit_units = &BANDWIDTH_UNITS[..4];
        let (unit, scale) = bit_units
            .iter()
            .find(|(_, scale)| self.bits_per_s % scale == 0)
            .expect("every rate is a whole number of bit/s");
        write!(f, "{}{unit}", self.bits_per_s / scale)
    }
}

impl Serialize for Bandwidth {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Bandwidth {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Bandwidth, D::Error> {
        let text = String::deserialize(deserializer)?;
        Bandwidth::parse(&text).map_err(de::Error::custom)
    }
}

/// The network: message latency, one way, drawn for each message, and what each node can send.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkTimes {
    /// Every link's, unless a more specific one is given.
    pub latency: Dist,
    /// Between two servers (Raft's messages), if not `latency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<Dist>,
    /// What each node can send, all its connections together (its outbound capacity). A
    /// message's size is its encoded length plus [`MESSAGE_FRAMING_BYTES`]; it goes out after
    /// the messages sent before it on the same connection (one per pair of nodes, as one TCP
    /// connection), at the node's rate shared evenly among its connections that have something
    /// to send when it is sent, and then travels its latency. So a leader's replication and
    /// watch fan-out take size over rate, and a heartbeat sent during a bulk transfer on another
    /// connection is not held behind it (a NIC's queue interleaves flows). Absent: unlimited
    /// (the loopback profiles: a few bytes a message at memory speed, below the latency's
    /// resolution). The receiving side's capacity is not modelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Bandwidth>,
}

/// Bytes a message carries beyond its encoded payload: IPv4 and TCP headers (40) and an HTTP/2
/// frame header with gRPC's length prefix (9 + 5), rounded up. ZooKeeper's jute frame (a 4-byte
/// length and a 12-byte reply header) is smaller; one figure for both.
pub const MESSAGE_FRAMING_BYTES: u64 = 64;

/// A named network for `[timing] network_preset`: the latencies and capacity of a kind of
/// deployment, with where its figures come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkPreset {
    pub name: String,
    pub source: String,
    pub network: NetworkTimes,
}

/// The network presets that come with coordsim: (name, file text).
const NETWORK_PRESETS: [(&str, &str); 3] = [
    ("lan", include_str!("../profiles/network/lan.toml")),
    ("cross-zone", include_str!("../profiles/network/cross-zone.toml")),
    ("wan", include_str!("../profiles/network/wan.toml")),
];

/// The names of the network presets.
pub fn network_preset_names() -> impl Iterator<Item = &'static str> {
    NETWORK_PRESETS.iter().map(|(name, _)| *name)
}

/// What is wrong with a preset name that is none of [`network_preset_names`].
fn unknown_preset(name: &str) -> String {
    format!(
        "unknown network preset {name:?}: expected one of {}",
        network_preset_names().collect::<Vec<_>>().join(", ")
    )
}

/// The network preset `name`, parsed (once per process). `None` if there is none of that name.
pub fn network_preset(name: &str) -> Option<NetworkPreset> {
    static PARSED: std::sync::OnceLock<Vec<NetworkPreset>> = std::sync::OnceLock::new();
    let parsed = PARSED.get_or_init(|| {
        NETWORK_PRESETS
            .iter()
            .map(|(name, text)| {
                let preset: NetworkPreset =
                    toml::from_str(text).unwrap_or_else(|e| panic!("network preset {name} parses: {e}"));
                assert_eq!(preset.name, *name, "a preset's file names it");
                preset
            })
            .collect()
    });
    parsed.iter().find(|preset| preset.name == name).cloned()
}

/// A server's costs. Requests and Raft messages queue for the server's one CPU, first come
/// first served, each taking its cost; a client request also waits its `overhead`, which holds
/// no CPU (requests wait it side by side); log appends and vote saves queue for its one disk, each
/// taking an `fsync` (appends that arrive during an fsync are synced together by the next one,
/// as etcd's WAL and ZooKeeper's SyncRequestProcessor batch). Costs are true time: a server's
/// CPU and disk do not run slower because its clock does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerTimes {
    /// A client request, unless its kind has a cost of its own below.
    pub request: Dist,
    /// Reads: etcd Range, ZooKeeper getData, exists, getChildren.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<Dist>,
    /// Writes before they reach Raft: etcd Put, Txn, DeleteRange; ZooKeeper create, setData, delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<Dist>,
    /// Lease grant, keepalive, revoke, time-to-live; ZooKeeper pings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Dist>,
    /// What a client request waits beyond its CPU cost without holding the CPU: the RPC
    /// framework, wakeups, a core shared with other processes. Under a burst this does not
    /// queue (the CPU costs do): it is what sets latency when a server is idle, where the CPU
    /// costs set its throughput. Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<Dist>,
    /// A Raft message received (append, vote, snapshot).
    pub peer: Dist,
    /// Applying one committed entry to the store.
    pub apply: Dist,
    /// One sync of the log (or of a vote) to disk.
    pub fsync: Dist,
    /// Whether the consensus loop waits for a slow log sync before it does anything else (no
    /// heartbeats, no acknowledgements, no commits meanwhile). etcd's does: its raft loop saves
    /// a Ready's entries to the WAL before it advances, and ticks in the same loop
    /// (server/etcdserver/raft.go `raftNode.start`), so a slow fdatasync stalls the leader's
    /// heartbeats until its followers elect another (etcd issue 15247). ZooKeeper's does not:
    /// its SyncRequestProcessor is a thread of its own, beside the quorum's pings. Applied
    /// while a `slow-disk` fault is in force (the simulator's Raft cannot send a batch before
    /// syncing it as etcd's leader does, so ordinary syncs do not block). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sync_blocks_consensus: bool,
    /// Whether a leader counts its own new entries toward the commit quorum as soon as it has
    /// appended them, syncing them to its disk meanwhile (so a commit waits for the fastest
    /// followers' syncs, not for the leader's). etcd's does: its raft `appendEntry` moves the
    /// leader's own match index and tries to commit before the Ready holding the entries is
    /// saved (raft/raft.go; Raft thesis §10.2.1). ZooKeeper's does not: the leader acknowledges
    /// its own proposal once its SyncRequestProcessor has logged it. Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub leader_commits_before_sync: bool,
    /// How many AppendEntries a leader keeps in flight to one follower, on one ordered stream
    /// per follower (a later one arrives after an earlier one, as on a TCP connection). etcd's
    /// leader sends up to `MaxInflightMsgs` without waiting for answers (512 in etcd 3.4:
    /// `maxInflightMsgs = 4096 / 8`, etcdserver/raft.go); ZooKeeper's sends every proposal on
    /// its follower's TCP connection as it is made (`LearnerHandler`'s queued packets). 1 (the
    /// default): one at a time, each waiting for the answer to the one before, as openraft's
    /// default `stream_append` does.
    #[serde(default = "one_inflight_append", skip_serializing_if = "is_one")]
    pub max_inflight_appends: u32,
}

fn one_inflight_append() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// The protected resource's cost per write (it is a server of the user's, on the same network).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceTimes {
    pub write: Dist,
}

/// A whole time model: a profile file, or a scenario's `[timing]` resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeModel {
    pub name: String,
    /// Where the figures come from: a calibration run (command, machine, date) or a published
    /// figure named.
    pub source: String,
    pub network: NetworkTimes,
    pub server: ServerTimes,
    pub resource: ResourceTimes,
}

/// The profile name that turns the time model off (`[timing] profile = "none"`, `--profile
/// none`): every message 1–10 ms (madsim's default range), servers that cost nothing.
pub const PROFILE_NONE: &str = "none";

/// `[timing]` in a scenario: a profile by name, and any of its tables replaced. A scenario
/// without `[timing]` runs on its service's calibrated profile ([`auto_profile`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingSpec {
    /// A profile of `sim/core/profiles/` (`coordsim explain --profile NAME` prints one), or
    /// [`PROFILE_NONE`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// A network of `sim/core/profiles/network/` in place of the profile's own (measured on
    /// loopback): `lan`, `cross-zone` or `wan`. The profile's server costs stay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_preset: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkTimes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerTimes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceTimes>,
}

/// The profiles that come with coordsim: (name, file text).
const PROFILES: [(&str, &str); 2] = [
    ("etcd-3.4-loopback", include_str!("../profiles/etcd-3.4-loopback.toml")),
    ("zookeeper-3.8-loopback", include_str!("../profiles/zookeeper-3.8-loopback.toml")),
];

/// The names of the profiles that come with coordsim.
pub fn profile_names() -> impl Iterator<Item = &'static str> {
    PROFILES.iter().map(|(name, _)| *name)
}

/// The calibrated profile of the service a scenario's clients talk to (`auto`): ZooKeeper's for
/// a scenario that uses ZooKeeper, etcd's otherwise (Redis servers take its network only).
pub fn auto_profile(uses_zookeeper: bool) -> &'static str {
    if uses_zookeeper { "zookeeper-3.8-loopback" } else { "etcd-3.4-loopback" }
}

/// The profile `name`, parsed (once per process: every run of a sweep resolves it). `None` if
/// there is none of that name.
pub fn profile(name: &str) -> Option<TimeModel> {
    static PARSED: std::sync::OnceLock<Vec<TimeModel>> = std::sync::OnceLock::new();
    let parsed = PARSED.get_or_init(|| {
        PROFILES
            .iter()
            .map(|(name, text)| {
                let model: TimeModel = toml::from_str(text).unwrap_or_else(|e| panic!("profile {name} parses: {e}"));
                assert_eq!(model.name, *name, "a profile's file names it");
                model
            })
            .collect()
    });
    parsed.iter().find(|model| model.name == name).cloned()
}

impl TimingSpec {
    /// `[timing] profile = "NAME"` and nothing else.
    pub fn named(name: &str) -> TimingSpec {
        TimingSpec { profile: Some(name.to_string()), ..TimingSpec::default() }
    }

    /// What `--profile FLAG` asks of a scenario whose service is ZooKeeper or not: `auto` (its
    /// service's calibrated profile), `none`, or a profile's name. Errors name the choices.
    pub fn from_flag(flag: &str, uses_zookeeper: bool) -> Result<TimingSpec, String> {
        match flag {
            "auto" => Ok(TimingSpec::named(auto_profile(uses_zookeeper))),
            PROFILE_NONE => Ok(TimingSpec::named(PROFILE_NONE)),
            name if profile_names().any(|known| known == name) => Ok(TimingSpec::named(name)),
            name => Err(format!(
                "--profile {name:?}: expected auto, {PROFILE_NONE} or one of {}",
                profile_names().collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// The profile's name as a reader sees it: the profile, or "the scenario's [timing]", and
    /// the network preset it is on.
    pub fn label(&self) -> String {
        let profile = self.profile.clone().unwrap_or_else(|| "the scenario's [timing]".into());
        match &self.network_preset {
            Some(preset) => format!("{profile} on {preset}"),
            None => profile,
        }
    }

    /// `spec` (a scenario's `[timing]`; absent: its service's profile) on the network preset
    /// `name` in place of its own network, as `--network NAME` asks. Errors name the presets,
    /// or say that a run without a time model has no network to replace.
    pub fn on_network(spec: Option<TimingSpec>, name: &str) -> Result<TimingSpec, String> {
        if network_preset(name).is_none() {
            return Err(format!("--network: {}", unknown_preset(name)));
        }
        let mut spec = spec.unwrap_or_default();
        if spec.is_off() {
            return Err(format!(
                "--network {name}: the run has no time model (profile = \"{PROFILE_NONE}\"), so no network to replace"
            ));
        }
        spec.network = None;
        spec.network_preset = Some(name.to_string());
        Ok(spec)
    }

    /// Whether this spec turns the time model off (`profile = "none"`).
    pub fn is_off(&self) -> bool {
        self.profile.as_deref() == Some(PROFILE_NONE)
    }

    /// The model this spec describes (`None` for `profile = "none"`, which takes no tables).
    pub fn model(&self) -> Result<Option<TimeModel>, ScenarioError> {
        if !self.is_off() {
            return self.resolve().map(Some);
        }
        let tables = [
            ("network_preset", self.network_preset.is_some()),
            ("network", self.network.is_some()),
            ("server", self.server.is_some()),
            ("resource", self.resource.is_some()),
        ];
        match tables.iter().find(|(_, given)| *given) {
            Some((table, _)) => Err(ScenarioError {
                field: format!("timing.{table}"),
                message: "profile = \"none\" turns the time model off: it takes no tables".into(),
            }),
            None => Ok(None),
        }
    }

    /// The model this spec describes: its profile with the tables it gives replaced; a spec
    /// without a profile must give every table.
    pub fn resolve(&self) -> Result<TimeModel, ScenarioError> {
        let base = match &self.profile {
            Some(name) => Some(profile(name).ok_or_else(|| ScenarioError {
                field: "timing.profile".into(),
                message: format!(
                    "unknown profile {name:?}: expected {PROFILE_NONE} or one of {}",
                    profile_names().collect::<Vec<_>>().join(", ")
                ),
            })?),
            None => None,
        };
        let missing = |table: &str| ScenarioError {
            field: format!("timing.{table}"),
            message: "needed without a profile (or name one: timing.profile)".into(),
        };
        let preset = match &self.network_preset {
            Some(_) if self.network.is_some() => {
                return Err(ScenarioError {
                    field: "timing.network_preset".into(),
                    message: "give a network preset or a [timing.network] table, not both".into(),
                });
            }
            Some(name) => Some(network_preset(name).ok_or_else(|| ScenarioError {
                field: "timing.network_preset".into(),
                message: unknown_preset(name),
            })?),
            None => None,
        };
        let network = self
            .network
            .clone()
            .or_else(|| preset.as_ref().map(|p| p.network.clone()))
            .or_else(|| base.as_ref().map(|b| b.network.clone()));
        let server = self.server.clone().or_else(|| base.as_ref().map(|b| b.server.clone()));
        let resource = self.resource.clone().or_else(|| base.as_ref().map(|b| b.resource.clone()));
        let replaced: Vec<&str> = [
            ("network", self.network.is_some()),
            ("server", self.server.is_some()),
            ("resource", self.resource.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect();
        let (mut name, mut source) = match &base {
            Some(base) if replaced.is_empty() => (base.name.clone(), base.source.clone()),
            Some(base) => (
                format!("{} with the scenario's {}", base.name, replaced.join(", ")),
                format!("{} The scenario replaces: {}.", base.source.trim_end(), replaced.join(", ")),
            ),
            None => ("the scenario's own".into(), "the scenario's [timing] tables".into()),
        };
        if let Some(preset) = &preset {
            name = format!("{name} on the {} network", preset.name);
            source = format!("{} Network ({}): {}", source.trim_end(), preset.name, preset.source.trim());
        }
        let model = TimeModel {
            name,
            source,
            network: network.ok_or_else(|| missing("network"))?,
            server: server.ok_or_else(|| missing("server"))?,
            resource: resource.ok_or_else(|| missing("resource"))?,
        };
        if model.server.max_inflight_appends == 0 {
            return Err(ScenarioError {
                field: "timing.server.max_inflight_appends".into(),
                message: "must be at least 1 (1: one append at a time)".into(),
            });
        }
        Ok(model)
    }
}

/// A request's cost class on a server's CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RequestClass {
    Read,
    Write,
    Lease,
    /// Anything else a client asks (a status, a lock service call, a watch's creation).
    Other,
    /// A watch long-poll: coordsim's transport of what the real services keep open as one
    /// stream (etcd's Watch and Observe are gRPC streams; a ZooKeeper watch is registered by the
    /// read that sets it and pushed on the session's connection). An open stream costs its
    /// server nothing until an event goes out, and the events' cost is
    /// `cluster.watch_event_cost`'s: a poll takes no CPU and no overhead. (Charged, the 2,000
    /// re-polls after every change of watch-storm kept most watchers unregistered at the next
    /// change, and the storm the real servers see vanished.)
    Stream,
}

impl ServerTimes {
    /// The cost of one client request of `class`.
    pub fn request_cost(&self, class: RequestClass) -> &Dist {
        let specific = match class {
            RequestClass::Read => self.read.as_ref(),
            RequestClass::Write => self.write.as_ref(),
            RequestClass::Lease => self.lease.as_ref(),
            RequestClass::Other | RequestClass::Stream => None,
        };
        specific.unwrap_or(&self.request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn dist(text: &str) -> Result<Dist, String> {
        #[derive(Deserialize)]
        struct One {
            d: Dist,
        }
        toml::from_str::<One>(&format!("d = {text}")).map(|one| one.d).map_err(|e| e.message().to_string())
    }

    #[test]
    fn a_draw_interpolates_between_quantiles() {
        let d = dist(r#"{ min = "1ms", p50 = "2ms", p90 = "10ms", max = "20ms" }"#).unwrap();
        assert_eq!(d.at(0.0), ms(1));
        assert_eq!(d.at(0.25), Duration::from_micros(1500));
        assert_eq!(d.at(0.5), ms(2));
        assert_eq!(d.at(0.7), ms(6));
        assert_eq!(d.at(0.95), ms(15));
        assert_eq!(d.at(1.0), ms(20));
        assert_eq!(dist(r#""3ms""#).unwrap().at(0.42), ms(3));
        assert_eq!(Dist::uniform(ms(1), ms(10)).at(0.5), Duration::from_micros(5500));
    }

    #[test]
    fn bad_distributions_say_what_is_wrong() {
        assert!(dist(r#"{ p50 = "2ms", max = "3ms" }"#).unwrap_err().contains("needs min"));
        assert!(dist(r#"{ min = "2ms", p50 = "1ms", max = "3ms" }"#).unwrap_err().contains("must not decrease"));
        assert!(dist(r#"{ min = "1ms", p75 = "2ms", max = "3ms" }"#).unwrap_err().contains("unknown quantile `p75`"));
        assert!(dist(r#"{ min = "1ms", p0 = "1ms", max = "3ms" }"#).unwrap_err().contains("twice"));
        assert!(dist(r#"{ min = "1ms", max = "11s" }"#).unwrap_err().contains("at most 10s"));
        assert!(dist(r#""fast""#).unwrap_err().contains("invalid duration"));
    }

    #[test]
    fn a_distribution_reads_back_as_written() {
        let text = r#"{ min = "50us", p50 = "120us", p99 = "1ms", p999 = "1500us", max = "2ms" }"#;
        let d = dist(text).unwrap();
        assert_eq!(dist(&d.to_string()).unwrap(), d);
        // The top 0.1 % alone spreads from p99.9 to the max.
        assert_eq!(d.at(0.9995), Duration::from_micros(1750));
        assert_eq!(dist("\"7ms\"").unwrap().to_string(), "7ms");
    }

    #[test]
    fn every_profile_parses_and_names_itself() {
        for name in profile_names() {
            let model = profile(name).unwrap();
            assert!(!model.source.trim().is_empty(), "{name} says where its figures come from");
        }
    }

    #[test]
    fn a_scenario_replaces_a_profiles_tables() {
        let spec = TimingSpec {
            profile: Some("etcd-3.4-loopback".into()),
            network: Some(NetworkTimes { latency: Dist::fixed(ms(5)), peer: None, bandwidth: None }),
            ..TimingSpec::default()
        };
        let model = spec.resolve().unwrap();
        assert_eq!(model.network.latency, Dist::fixed(ms(5)));
        assert_eq!(model.server, profile("etcd-3.4-loopback").unwrap().server);
        assert!(model.name.contains("with the scenario's network"), "{}", model.name);
        let unknown = TimingSpec { profile: Some("etcd-9".into()), ..TimingSpec::default() }.resolve().unwrap_err();
        assert_eq!(unknown.field, "timing.profile");
        let bare = TimingSpec::default().resolve().unwrap_err();
        assert_eq!(bare.field, "timing.network");
    }

    #[test]
    fn a_bandwidth_reads_back_as_written_and_says_what_is_wrong() {
        let parse = |text: &str| Bandwidth::parse(text);
        assert_eq!(parse("1Gbit/s").unwrap().bits_per_s(), 1_000_000_000);
        assert_eq!(parse("125MB/s").unwrap(), parse("1Gbit/s").unwrap());
        assert_eq!(parse("2.5 Gbit/s").unwrap().to_string(), "2500Mbit/s");
        assert_eq!(parse("64kbit/s").unwrap().to_string(), "64kbit/s");
        assert_eq!(parse("1B/s").unwrap().to_string(), "8bit/s");
        // A byte a microsecond; rounded up to the nanosecond.
        assert_eq!(parse("8Mbit/s").unwrap().transmit(1_000), ms(1));
        assert_eq!(parse("3bit/s").unwrap().transmit(1), Duration::from_nanos(2_666_666_667));
        assert!(parse("fast").unwrap_err().contains("Gbit/s"));
        assert!(parse("1 Gbps").unwrap_err().contains("invalid bandwidth"));
        assert!(parse("0.1bit/s").unwrap_err().contains("between"));
        assert!(parse("-1Mbit/s").unwrap_err().contains("between"));
    }

    #[test]
    fn a_network_preset_replaces_the_profiles_network_and_keeps_its_costs() {
        for name in network_preset_names() {
            let preset = network_preset(name).unwrap();
            // Each states where its latency and its capacity come from.
            assert!(preset.source.contains("round trip"), "{name} gives its measured round trip: {}", preset.source);
            assert!(preset.source.contains("Gbit/s"), "{name} gives its capacity's source: {}", preset.source);
            assert!(preset.network.bandwidth.is_some(), "{name} states a capacity");
            let spec = TimingSpec {
                profile: Some("zookeeper-3.8-loopback".into()),
                network_preset: Some(name.into()),
                ..TimingSpec::default()
            };
            let model = spec.resolve().unwrap();
            assert_eq!(model.network, preset.network);
            assert_eq!(model.server, profile("zookeeper-3.8-loopback").unwrap().server);
            assert_eq!(model.name, format!("zookeeper-3.8-loopback on the {name} network"));
        }
        let wan = network_preset("wan").unwrap().network.latency.median();
        let lan = network_preset("lan").unwrap().network.latency.median();
        assert!(wan > 100 * lan, "a WAN is two orders slower than a LAN: {wan:?} against {lan:?}");
        let both = TimingSpec {
            profile: Some("etcd-3.4-loopback".into()),
            network_preset: Some("lan".into()),
            network: Some(NetworkTimes { latency: Dist::fixed(ms(5)), peer: None, bandwidth: None }),
            ..TimingSpec::default()
        };
        assert_eq!(both.resolve().unwrap_err().field, "timing.network_preset");
        let unknown = TimingSpec {
            profile: Some("etcd-3.4-loopback".into()),
            network_preset: Some("moon".into()),
            ..TimingSpec::default()
        };
        let error = unknown.resolve().unwrap_err();
        assert!(error.message.contains("lan, cross-zone, wan"), "{}", error.message);
    }
}
