//! The lessor: when each lease expires, by this server's local clock.
//!
//! Sans-IO. Lease deadlines are not replicated (a deadline in one node's clock means nothing to
//! another's); every server tracks them, but only the *primary* — the server that is the Raft
//! leader — acts on them: it alone renews on keepalive and proposes the revocation of expired
//! leases through the log. This follows etcd's lessor (server/lease/lessor.go: Promote, Demote,
//! Renew, Checkpoint, the expiry loop and `scheduleCheckpointIfNeeded`), rule for rule:
//!
//! - A new primary restarts every lease at its remaining TTL **plus one election timeout**
//!   (`Promote(extend)`, called with the configured election timeout in
//!   server/etcdserver/server.go). The remaining TTL is the last *checkpointed* one if the lease
//!   has one, else its full TTL.
//! - **Checkpoints are off by default** in etcd 3.4, 3.5 and 3.6
//!   (`--experimental-enable-lease-checkpoint`, `--feature-gates=LeaseCheckpoint` in 3.6), so by
//!   default every leader change restarts every lease at its full TTL, and leader churn keeps a
//!   dead client's lease alive (etcd issues 9395, 13294, 17132; docs/cases/04).
//! - With checkpoints on, the primary schedules a lease's next checkpoint one *checkpoint
//!   interval* ahead (5 min in etcd; not a command-line flag, only `LessorConfig` for embedders)
//!   when it grants the lease, applies a checkpoint of it, or (since 3.4.20 / 3.5.2, etcd PR
//!   13508) is promoted — and only if the lease's remaining TTL is longer than the interval: a
//!   lease of 5 minutes or less is never checkpointed by a stock etcd. A due checkpoint records
//!   the remaining TTL rounded up to whole seconds, unless the lease is past its deadline or has
//!   a full TTL left.
//! - A renewal of a lease that carries a checkpoint clears it through the log first (a
//!   checkpoint of 0 = unset; `Renew`'s `clearRemainingTTL`), so a new leader then gives it a
//!   full TTL.
//!
//! The server promotes a new leader's lessor only once it has applied an entry of its own term
//! (server `follow_role`, as etcd promotes on the first empty entry of its term), so the
//! checkpoints its predecessor committed are applied before it reads them.

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::LocalTime;
use crate::store::LeaseId;

/// etcd's lease checkpoint interval when none is configured (server/lease/lessor.go
/// `defaultLeaseCheckpointInterval`).
pub const DEFAULT_CHECKPOINT_INTERVAL_MS: u64 = 5 * 60 * 1000;

/// How the servers' lessors behave: the etcd configuration and release they stand for
/// (`cluster.etcd` in a scenario, resolved by `crate::scenario::EtcdSpec::lease_policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeasePolicy {
    /// Whether the primary checkpoints remaining TTLs through the log.
    pub checkpoint: bool,
    /// How long after scheduling a checkpoint is due, in ms of the primary's monotonic clock;
    /// only leases with more remaining TTL than this are checkpointed.
    pub checkpoint_interval_ms: u64,
    /// Whether a new primary schedules checkpoints when promoted (etcd ≥ 3.4.20, ≥ 3.5.2: PR
    /// 13508 / 14253). Before, the chain of checkpoints broke at the first leader change.
    pub schedule_on_promotion: bool,
    /// What a promotion adds to every lease, in ms: the election timeout.
    pub promotion_extend_ms: u64,
    /// Whether a server that no longer leads drops the revocations its lessor took as due while
    /// it was primary (etcd ≥ 3.4.31, ≥ 3.5.13); false: it forwards them to the new leader, which
    /// commits them (`crate::etcd_release::EtcdRelease::revokes_only_while_leading`).
    pub revoke_only_while_leading: bool,
}

impl Default for LeasePolicy {
    /// A stock etcd 3.5 with the simulator's default election timeout (150 ms).
    fn default() -> Self {
        LeasePolicy {
            checkpoint: false,
            checkpoint_interval_ms: DEFAULT_CHECKPOINT_INTERVAL_MS,
            schedule_on_promotion: true,
            promotion_extend_ms: 150,
            revoke_only_while_leading: true,
        }
    }
}

/// What the replicated lease table says of one lease, for a promotion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseInfo {
    pub id: LeaseId,
    pub ttl_ms: u64,
    pub remaining_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RenewError {
    /// This server is not the primary: the client must ask the leader.
    NotPrimary,
    LeaseNotFound,
}

#[derive(Clone, Debug, Default)]
pub struct Lessor {
    policy: LeasePolicy,
    primary: bool,
    /// Lease → (TTL in ms, local deadline).
    leases: BTreeMap<LeaseId, (u64, LocalTime)>,
    /// Expired leases whose revocation is proposed but not yet applied.
    revoking: BTreeSet<LeaseId>,
    /// Scheduled checkpoints: (when due, lease), earliest first (etcd's `leaseCheckpointHeap`).
    scheduled: BTreeSet<(LocalTime, LeaseId)>,
}

impl Lessor {
    pub fn new(policy: LeasePolicy) -> Self {
        Lessor { policy, ..Lessor::default() }
    }

    pub fn policy(&self) -> LeasePolicy {
        self.policy
    }

    pub fn is_primary(&self) -> bool {
        self.primary
    }

    /// A grant was applied (on every server, leader or not).
    pub fn on_grant(&mut self, lease: LeaseId, ttl_ms: u64, now: LocalTime) {
        self.leases.insert(lease, (ttl_ms, now.plus_ms(ttl_ms)));
        if self.primary {
            self.schedule_checkpoint(lease, ttl_ms, now);
        }
    }

    /// A revocation (by a client or by expiry) was applied.
    pub fn on_revoke(&mut self, lease: LeaseId) {
        self.leases.remove(&lease);
        self.revoking.remove(&lease);
    }

    /// A checkpoint of `lease` was applied (on every server): the primary schedules the next
    /// one. `remaining_ms` 0 is a cleared checkpoint (a full TTL).
    pub fn on_checkpoint(&mut self, lease: LeaseId, remaining_ms: u64, now: LocalTime) {
        let Some((ttl_ms, _)) = self.leases.get(&lease) else { return };
        let remaining_ms = if remaining_ms == 0 { *ttl_ms } else { remaining_ms };
        if self.primary {
            self.schedule_checkpoint(lease, remaining_ms, now);
        }
    }

    /// etcd's `scheduleCheckpointIfNeeded`: only leases with more than one interval left.
    fn schedule_checkpoint(&mut self, lease: LeaseId, remaining_ms: u64, now: LocalTime) {
        if self.policy.checkpoint && remaining_ms > self.policy.checkpoint_interval_ms {
            self.scheduled.insert((now.plus_ms(self.policy.checkpoint_interval_ms), lease));
        }
    }

    /// This server became leader: it now owns expiry. The lease table is rebuilt from the
    /// replicated one (`leases`: id, TTL and last checkpointed remaining TTL of every lease the
    /// store holds), so leases this server learned from a snapshot rather than from applied
    /// grants are not missed. Each lease continues from its checkpoint (a full TTL if it has
    /// none) plus the promotion extension, or with `reset_ttl` (the bug switch) ignores its
    /// checkpoint.
    pub fn promote(&mut self, now: LocalTime, leases: impl IntoIterator<Item = LeaseInfo>, reset_ttl: bool) {
        self.primary = true;
        self.revoking.clear();
        self.scheduled.clear();
        self.leases.clear();
        for lease in leases {
            let remaining_ms = if reset_ttl { lease.ttl_ms } else { lease.remaining_ms.unwrap_or(lease.ttl_ms) };
            let deadline = now.plus_ms(self.policy.promotion_extend_ms + remaining_ms);
            self.leases.insert(lease.id, (lease.ttl_ms, deadline));
            if self.policy.schedule_on_promotion {
                self.schedule_checkpoint(lease.id, remaining_ms, now);
            }
        }
    }

    /// The checkpoints due now (primary only): (lease, remaining TTL in ms, rounded up to whole
    /// seconds as etcd's are). Each scheduled checkpoint is returned once; the next is scheduled
    /// when it is applied (`on_checkpoint`).
    pub fn due_checkpoints(&mut self, now: LocalTime) -> Vec<(LeaseId, u64)> {
        if !self.primary {
            return Vec::new();
        }
        let mut due = Vec::new();
        while let Some(&(at, lease)) = self.scheduled.first() {
            if at > now {
                break;
            }
            self.scheduled.pop_first();
            let Some((ttl_ms, deadline)) = self.leases.get(&lease) else { continue };
            if *deadline <= now {
                continue;
            }
            let remaining_ms = now.ms_until(*deadline).div_ceil(1000) * 1000;
            if remaining_ms >= *ttl_ms {
                continue;
            }
            due.push((lease, remaining_ms));
        }
        due
    }

    /// This server stopped being leader: it must neither expire leases nor acknowledge renewals.
    pub fn demote(&mut self) {
        self.primary = false;
        self.revoking.clear();
        self.scheduled.clear();
    }

    /// A keepalive reached the primary: extend the lease by its TTL. Returns the TTL in ms.
    pub fn renew(&mut self, lease: LeaseId, now: LocalTime) -> Result<u64, RenewError> {
        if !self.primary {
            return Err(RenewError::NotPrimary);
        }
        // A lease already being revoked is gone for the client, as in etcd.
        if self.revoking.contains(&lease) {
            return Err(RenewError::LeaseNotFound);
        }
        let (ttl_ms, deadline) = self.leases.get_mut(&lease).ok_or(RenewError::LeaseNotFound)?;
        *deadline = now.plus_ms(*ttl_ms);
        Ok(*ttl_ms)
    }

    /// Leases past their deadline that the primary must now revoke; each is returned once
    /// (until `revoke_failed` or a demotion).
    pub fn take_expired(&mut self, now: LocalTime) -> Vec<LeaseId> {
        if !self.primary {
            return Vec::new();
        }
        let expired: Vec<LeaseId> = self
            .leases
            .iter()
            .filter(|(lease, (_, deadline))| *deadline <= now && !self.revoking.contains(lease))
            .map(|(lease, _)| *lease)
            .collect();
        self.revoking.extend(expired.iter().copied());
        expired
    }

    /// The proposed revocation did not commit: try again on the next tick.
    pub fn revoke_failed(&mut self, lease: LeaseId) {
        self.revoking.remove(&lease);
    }

    /// Remaining time of a lease by this server's clock, in ms.
    pub fn remaining_ms(&self, lease: LeaseId, now: LocalTime) -> Option<u64> {
        self.leases.get(&lease).map(|(_, deadline)| now.ms_until(*deadline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: LocalTime = LocalTime(0);

    fn at_ms(ms: u64) -> LocalTime {
        T0.plus_ms(ms)
    }

    #[test]
    fn follower_never_expires_or_renews() {
        let mut lessor = Lessor::default();
        lessor.on_grant(1, 1000, T0);
        assert_eq!(lessor.take_expired(at_ms(5000)), Vec::<LeaseId>::new());
        assert_eq!(lessor.renew(1, at_ms(10)), Err(RenewError::NotPrimary));
    }

    #[test]
    fn primary_expires_after_ttl_once() {
        let mut lessor = Lessor::default();
        lessor.promote(T0, [], false);
        lessor.on_grant(1, 1000, T0);
        assert!(lessor.take_expired(at_ms(999)).is_empty());
        assert_eq!(lessor.take_expired(at_ms(1000)), vec![1]);
        assert!(lessor.take_expired(at_ms(1100)).is_empty(), "returned once while revoking");
        lessor.revoke_failed(1);
        assert_eq!(lessor.take_expired(at_ms(1200)), vec![1]);
    }

    #[test]
    fn renew_extends_by_ttl_from_now() {
        let mut lessor = Lessor::default();
        lessor.promote(T0, [], false);
        lessor.on_grant(1, 1000, T0);
        assert_eq!(lessor.renew(1, at_ms(800)), Ok(1000));
        assert!(lessor.take_expired(at_ms(1799)).is_empty());
        assert_eq!(lessor.take_expired(at_ms(1800)), vec![1]);
        assert_eq!(lessor.renew(1, at_ms(1801)), Err(RenewError::LeaseNotFound));
    }

    fn info(id: LeaseId, ttl_ms: u64, remaining_ms: Option<u64>) -> LeaseInfo {
        LeaseInfo { id, ttl_ms, remaining_ms }
    }

    /// The default promotion extension (one election timeout).
    const EXTEND: u64 = 150;

    fn checkpointing(interval_ms: u64) -> Lessor {
        Lessor::new(LeasePolicy { checkpoint: true, checkpoint_interval_ms: interval_ms, ..LeasePolicy::default() })
    }

    #[test]
    fn promotion_continues_from_the_last_checkpoint_plus_an_election_timeout() {
        let mut lessor = Lessor::default();
        lessor.on_grant(1, 1000, T0);
        lessor.promote(at_ms(900), [info(1, 1000, Some(300))], false);
        assert!(lessor.take_expired(at_ms(1199 + EXTEND)).is_empty());
        assert_eq!(lessor.take_expired(at_ms(1200 + EXTEND)), vec![1]);
    }

    #[test]
    fn promotion_without_a_checkpoint_gives_the_full_ttl() {
        let mut lessor = Lessor::default();
        lessor.promote(at_ms(900), [info(1, 1000, None)], false);
        assert!(lessor.take_expired(at_ms(1899 + EXTEND)).is_empty());
        assert_eq!(lessor.take_expired(at_ms(1900 + EXTEND)), vec![1]);
    }

    #[test]
    fn ttl_reset_bug_restarts_every_lease_at_full_ttl() {
        let mut lessor = Lessor::default();
        lessor.promote(at_ms(900), [info(1, 1000, Some(100))], true);
        assert!(lessor.take_expired(at_ms(1899 + EXTEND)).is_empty());
        assert_eq!(lessor.take_expired(at_ms(1900 + EXTEND)), vec![1]);
    }

    #[test]
    fn a_stock_lessor_never_checkpoints() {
        let mut lessor = Lessor::default();
        lessor.promote(T0, [], false);
        lessor.on_grant(1, 600_000, T0);
        assert!(lessor.due_checkpoints(at_ms(400_000)).is_empty());
    }

    #[test]
    fn leases_no_longer_than_the_interval_are_never_checkpointed() {
        // etcd's 5-minute default: a 4 s lease, the usual lock session, has no checkpoint.
        let mut lessor = checkpointing(DEFAULT_CHECKPOINT_INTERVAL_MS);
        lessor.promote(T0, [], false);
        lessor.on_grant(1, 4_000, T0);
        lessor.on_grant(2, 600_000, T0);
        assert_eq!(lessor.due_checkpoints(at_ms(300_000)), vec![(2, 300_000)]);
        lessor.promote(at_ms(300_100), [info(1, 4_000, None), info(2, 600_000, Some(300_000))], false);
        assert!(lessor.due_checkpoints(at_ms(900_000)).iter().all(|(lease, _)| *lease == 2));
    }

    #[test]
    fn checkpoints_are_due_one_interval_after_scheduling_rounded_up_to_seconds() {
        let mut lessor = checkpointing(2_000);
        lessor.on_grant(1, 10_000, T0);
        assert!(lessor.due_checkpoints(at_ms(5_000)).is_empty(), "a follower schedules nothing");
        lessor.promote(T0, [info(1, 10_000, None)], false);
        assert!(lessor.due_checkpoints(at_ms(1_999)).is_empty());
        // Deadline 10_150 (the promotion's extension): 7_850 ms left at 2.3 s, recorded as 8 s.
        assert_eq!(lessor.due_checkpoints(at_ms(2_300)), vec![(1, 8_000)]);
        assert!(lessor.due_checkpoints(at_ms(6_000)).is_empty(), "due once until applied");
        lessor.on_checkpoint(1, 8_000, at_ms(2_400));
        assert_eq!(lessor.due_checkpoints(at_ms(4_400)), vec![(1, 6_000)]);
    }

    #[test]
    fn a_checkpoint_due_with_a_full_ttl_left_is_dropped_and_ends_the_chain() {
        // etcd skips it without rescheduling: an interval shorter than 1 s plus the promotion's
        // extension never checkpoints a promoted lease.
        let mut lessor = checkpointing(1_000);
        lessor.promote(T0, [info(1, 10_000, None)], false);
        assert!(lessor.due_checkpoints(at_ms(1_000)).is_empty());
        assert!(lessor.due_checkpoints(at_ms(9_000)).is_empty());
    }

    #[test]
    fn before_the_fix_a_promotion_breaks_the_chain_of_checkpoints() {
        let policy = LeasePolicy {
            checkpoint: true,
            checkpoint_interval_ms: 1_000,
            schedule_on_promotion: false,
            ..LeasePolicy::default()
        };
        let mut lessor = Lessor::new(policy);
        lessor.promote(T0, [info(1, 10_000, Some(5_000))], false);
        assert!(lessor.due_checkpoints(at_ms(3_000)).is_empty());
        let mut fixed = checkpointing(1_000);
        fixed.promote(T0, [info(1, 10_000, Some(5_000))], false);
        assert_eq!(fixed.due_checkpoints(at_ms(1_000)), vec![(1, 5_000)]);
    }

    #[test]
    fn an_expired_or_demoted_lease_is_not_checkpointed() {
        let mut lessor = checkpointing(1_000);
        lessor.promote(T0, [info(1, 2_000, None), info(2, 10_000, None)], false);
        // Lease 1's deadline was 2_150.
        assert_eq!(lessor.due_checkpoints(at_ms(2_500)), vec![(2, 8_000)]);
        lessor.promote(T0, [info(2, 10_000, None)], false);
        lessor.demote();
        assert!(lessor.due_checkpoints(at_ms(5_000)).is_empty());
    }

    #[test]
    fn promotion_takes_the_lease_table_from_the_store() {
        let mut lessor = Lessor::default();
        lessor.on_grant(1, 1000, T0);
        // Lease 2 came with a snapshot (no grant applied here); lease 1 is gone from the store.
        lessor.promote(at_ms(100), [info(2, 500, None)], false);
        assert_eq!(lessor.renew(1, at_ms(200)), Err(RenewError::LeaseNotFound));
        assert_eq!(lessor.take_expired(at_ms(600 + EXTEND)), vec![2]);
    }

    #[test]
    fn demoted_server_stops_expiring() {
        let mut lessor = Lessor::default();
        lessor.promote(T0, [], false);
        lessor.on_grant(1, 1000, T0);
        lessor.demote();
        assert!(lessor.take_expired(at_ms(5000)).is_empty());
        assert_eq!(lessor.renew(1, at_ms(5000)), Err(RenewError::NotPrimary));
    }

    #[test]
    fn revoked_lease_is_forgotten() {
        let mut lessor = Lessor::default();
        lessor.promote(T0, [], false);
        lessor.on_grant(1, 1000, T0);
        lessor.on_revoke(1);
        assert!(lessor.take_expired(at_ms(5000)).is_empty());
        assert_eq!(lessor.renew(1, at_ms(10)), Err(RenewError::LeaseNotFound));
    }
}
