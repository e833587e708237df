//! Which etcd the simulated servers stand for: a release line or patch release, and what its
//! lease behaviour is (`[cluster.etcd]` in a scenario).
//!
//! Pure. The facts, read in etcd's own code at the release tags (server/lease/lessor.go,
//! server/etcdmain/config.go, server/features/etcd_features.go) and its changelogs:
//! - Lease checkpointing is off by default in every release line from 3.4 (where it was added,
//!   PR 9924) to 3.6: `--experimental-enable-lease-checkpoint` defaults to false, and 3.6's
//!   `LeaseCheckpoint` feature gate too. Measured: real etcd 3.4.23 restarts a lease at its full
//!   TTL on every leader change.
//! - The checkpoint interval is 5 minutes in all of them and has no command-line flag.
//! - Before 3.4.20 and 3.5.2, a new leader did not schedule checkpoints when promoted (only for
//!   a lessor of 1000 leases or more), so the first leader change ended checkpointing ("Lease
//!   checkpoints don't prevent to reset ttl on leader change", PRs 14253 and 13508).
//! - Before 3.4.31 and 3.5.13, a leader that stalled (a slow disk, a starved CPU, a paused
//!   process) and woke with its lessor still primary proposed the revocation of every lease
//!   whose deadline had passed by its clock, after it had stepped down, and its follower's raft
//!   forwarded the proposal to the new leader, which committed it: leases their owners kept
//!   renewing through the new leader were revoked (issues 12528 and 15247; fixed by checking
//!   leadership before revoking, PR 16822, backported as 17465 and 17425). Measured: real etcd
//!   3.4.23 revoked c1's renewed lease 1 ms after its stalled leader resumed
//!   (deposed-leader-revokes-on-etcd-3-4-23).
//! - Before 3.4.34 and 3.5.16, compacting at revision R removed a deleted key's tombstone when
//!   the deletion was at R itself, so a watch created at R (the oldest revision a watch may
//!   start at) never delivered that deletion (issue 18089, found by etcd's robustness tests;
//!   fixed by keeping a tombstone at the compact revision, PR 18274, backported as 18475 and
//!   18474). A put at R is the key's newest version and survives either way. Measured: real etcd
//!   3.4.23 skipped the deletion at compact revision 233 for a watch created at 233
//!   (watch-compaction-gap-on-etcd-3-4-23). A later race between a compaction request and a
//!   watch opened at its revision (issue 19179, fixed in 3.4.36 and 3.5.18) is not modelled.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::lessor::{DEFAULT_CHECKPOINT_INTERVAL_MS, LeasePolicy};

/// An etcd release: a line (`3.5`: its latest patch) or a patch release (`3.5.1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EtcdRelease {
    /// 4, 5 or 6 (of 3.x).
    pub minor: u32,
    /// The patch release; `None` for the latest of the line.
    pub patch: Option<u32>,
}

/// The release a scenario stands for when it names none: the line most clusters run.
pub const DEFAULT_RELEASE: EtcdRelease = EtcdRelease { minor: 5, patch: None };

/// The release lines modelled.
const LINES: [u32; 3] = [4, 5, 6];

impl EtcdRelease {
    /// Whether this release has `patch` of line `minor` or a later release.
    fn at_least(&self, minor: u32, patch: u32) -> bool {
        self.minor > minor || (self.minor == minor && self.patch.is_none_or(|p| p >= patch))
    }

    /// Whether a new leader schedules lease checkpoints when it is promoted.
    pub fn schedules_checkpoints_on_promotion(&self) -> bool {
        match self.minor {
            4 => self.at_least(4, 20),
            5 => self.at_least(5, 2),
            _ => true,
        }
    }

    /// Whether a member that no longer leads drops the revocations its lessor still asks for
    /// (etcd ≥ 3.4.31, ≥ 3.5.13, 3.6: `revokeExpiredLeases` checks leadership first); before,
    /// they were forwarded to the new leader and committed.
    pub fn revokes_only_while_leading(&self) -> bool {
        match self.minor {
            4 => self.at_least(4, 31),
            5 => self.at_least(5, 13),
            _ => true,
        }
    }

    /// Whether compaction at revision R keeps a deletion made at R for a watch created at R
    /// (etcd ≥ 3.4.34, ≥ 3.5.16, 3.6); before, the tombstone went with the compaction and the
    /// watch never delivered the deletion.
    pub fn keeps_tombstone_at_compact_revision(&self) -> bool {
        match self.minor {
            4 => self.at_least(4, 34),
            5 => self.at_least(5, 16),
            _ => true,
        }
    }

    /// The behaviours modelled by release in which this release and `other` differ, each as a
    /// phrase with the releases that changed it (empty: they behave alike here).
    pub fn differences_from(&self, other: &EtcdRelease) -> Vec<ReleaseDifference> {
        let mut differences = Vec::new();
        if self.schedules_checkpoints_on_promotion() != other.schedules_checkpoints_on_promotion() {
            differences.push(ReleaseDifference::CheckpointsOnPromotion);
        }
        if self.revokes_only_while_leading() != other.revokes_only_while_leading() {
            differences.push(ReleaseDifference::RevocationsAfterStepDown);
        }
        if self.keeps_tombstone_at_compact_revision() != other.keeps_tombstone_at_compact_revision() {
            differences.push(ReleaseDifference::TombstoneAtCompactRevision);
        }
        differences
    }

    /// The lessor of this release with the given configuration. `checkpoint_interval_ms`
    /// `None` is etcd's 5 minutes; `promotion_extend_ms` is the election timeout.
    pub fn lease_policy(
        &self,
        checkpoint: bool,
        checkpoint_interval_ms: Option<u64>,
        promotion_extend_ms: u64,
    ) -> LeasePolicy {
        LeasePolicy {
            checkpoint,
            checkpoint_interval_ms: checkpoint_interval_ms.unwrap_or(DEFAULT_CHECKPOINT_INTERVAL_MS),
            schedule_on_promotion: self.schedules_checkpoints_on_promotion(),
            promotion_extend_ms,
            revoke_only_while_leading: self.revokes_only_while_leading(),
        }
    }
}

/// A behaviour in which two etcd releases differ ([`EtcdRelease::differences_from`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseDifference {
    /// Whether a new leader schedules lease checkpoints (3.4.20, 3.5.2): reached only with
    /// lease checkpoints on.
    CheckpointsOnPromotion,
    /// Whether a stalled leader's lease revocations still commit after it has stepped down
    /// (fixed in 3.4.31, 3.5.13): reached only when a server stalls (a pause, a slow disk or
    /// CPU).
    RevocationsAfterStepDown,
    /// Whether a watch created at the compact revision gets a deletion made at that revision
    /// (fixed in 3.4.34, 3.5.16): reached only by key-value watchers with compaction.
    TombstoneAtCompactRevision,
}

impl fmt::Display for ReleaseDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReleaseDifference::CheckpointsOnPromotion => {
                "whether a new leader schedules lease checkpoints (since 3.4.20 and 3.5.2)"
            }
            ReleaseDifference::RevocationsAfterStepDown => {
                "whether a stalled leader's lease revocations commit after it steps down (until 3.4.31 and 3.5.13)"
            }
            ReleaseDifference::TombstoneAtCompactRevision => {
                "whether a watch created at the compact revision gets a deletion made there (since 3.4.34 and 3.5.16)"
            }
        })
    }
}

impl Default for EtcdRelease {
    fn default() -> Self {
        DEFAULT_RELEASE
    }
}

impl fmt::Display for EtcdRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.patch {
            Some(patch) => write!(f, "3.{}.{patch}", self.minor),
            None => write!(f, "3.{}", self.minor),
        }
    }
}

impl FromStr for EtcdRelease {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let unknown =
            || format!("unknown etcd release {text:?}: a line 3.4, 3.5 or 3.6, or a patch release such as 3.5.1");
        let mut parts = text.trim().split('.');
        let (Some("3"), Some(minor)) = (parts.next(), parts.next()) else { return Err(unknown()) };
        let minor: u32 = minor.parse().map_err(|_| unknown())?;
        if !LINES.contains(&minor) {
            return Err(unknown());
        }
        let patch = match parts.next() {
            None => None,
            Some(patch) => Some(patch.parse().map_err(|_| unknown())?),
        };
        if parts.next().is_some() {
            return Err(unknown());
        }
        Ok(EtcdRelease { minor, patch })
    }
}

impl Serialize for EtcdRelease {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EtcdRelease {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(text: &str) -> EtcdRelease {
        text.parse().unwrap()
    }

    #[test]
    fn lines_and_patch_releases_parse_and_print_back() {
        for text in ["3.4", "3.5", "3.6", "3.4.23", "3.5.0", "3.6.5"] {
            assert_eq!(release(text).to_string(), text);
        }
        for bad in ["3.3", "3", "4.0", "3.5.x", "3.5.1.2", "", "v3.5"] {
            assert!(bad.parse::<EtcdRelease>().is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn the_tombstone_at_the_compact_revision_is_kept_from_3_4_34_and_3_5_16() {
        let keeps = |text: &str| release(text).keeps_tombstone_at_compact_revision();
        assert!(!keeps("3.4.23") && !keeps("3.4.33") && keeps("3.4.34") && keeps("3.4"));
        assert!(!keeps("3.5.0") && !keeps("3.5.15") && keeps("3.5.16") && keeps("3.5") && keeps("3.6.0"));
        assert!(
            release("3.4.23")
                .differences_from(&release("3.5"))
                .contains(&ReleaseDifference::TombstoneAtCompactRevision)
        );
        assert!(
            !release("3.4.34")
                .differences_from(&release("3.5"))
                .contains(&ReleaseDifference::TombstoneAtCompactRevision)
        );
    }

    #[test]
    fn promotion_schedules_checkpoints_from_3_4_20_and_3_5_2() {
        let schedules = |text: &str| release(text).schedules_checkpoints_on_promotion();
        assert!(!schedules("3.4.0") && !schedules("3.4.19") && schedules("3.4.20") && schedules("3.4"));
        assert!(!schedules("3.5.0") && !schedules("3.5.1") && schedules("3.5.2") && schedules("3.5"));
        assert!(schedules("3.6.0") && schedules("3.6"));
    }

    #[test]
    fn a_stale_leaders_revocations_are_dropped_from_3_4_31_and_3_5_13() {
        let dropped = |text: &str| release(text).revokes_only_while_leading();
        assert!(!dropped("3.4.23") && !dropped("3.4.30") && dropped("3.4.31") && dropped("3.4"));
        assert!(!dropped("3.5.0") && !dropped("3.5.12") && dropped("3.5.13") && dropped("3.5"));
        assert!(dropped("3.6.0") && dropped("3.6"));
        assert!(!release("3.4.23").lease_policy(false, None, 150).revoke_only_while_leading);
    }

    #[test]
    fn the_policy_takes_etcds_interval_unless_one_is_given() {
        let policy = release("3.5").lease_policy(true, None, 150);
        assert_eq!(policy.checkpoint_interval_ms, 5 * 60 * 1000);
        assert_eq!(release("3.5").lease_policy(true, Some(2_000), 150).checkpoint_interval_ms, 2_000);
        assert!(!release("3.4").lease_policy(false, None, 150).checkpoint);
    }

    #[test]
    fn releases_differ_in_what_changed_between_them() {
        let release = |text: &str| text.parse::<EtcdRelease>().unwrap();
        assert_eq!(release("3.4.23").differences_from(&release("3.4.22")), vec![]);
        assert_eq!(
            release("3.4.23").differences_from(&release("3.5")),
            vec![ReleaseDifference::RevocationsAfterStepDown, ReleaseDifference::TombstoneAtCompactRevision]
        );
        assert_eq!(
            release("3.4.19").differences_from(&release("3.6")),
            vec![
                ReleaseDifference::CheckpointsOnPromotion,
                ReleaseDifference::RevocationsAfterStepDown,
                ReleaseDifference::TombstoneAtCompactRevision
            ]
        );
        assert_eq!(
            release("3.4.31").differences_from(&release("3.5")),
            vec![ReleaseDifference::TombstoneAtCompactRevision]
        );
        assert!(ReleaseDifference::RevocationsAfterStepDown.to_string().contains("3.4.31"));
        assert!(ReleaseDifference::TombstoneAtCompactRevision.to_string().contains("3.4.34"));
    }
}
