//! The lessor: when each lease expires, by this server's local clock.
//!
//! Sans-IO. Lease deadlines are not replicated (a deadline in one node's clock means nothing to
//! another's); every server tracks them, but only the *primary* — the server that is the Raft
//! leader — acts on them: it alone renews on keepalive and proposes the revocation of expired
//! leases through the log. This follows etcd's lessor (server/lease/lessor.go: Promote, Demote,
//! Renew, the expiry loop and checkpoints).
//!
//! A new leader cannot know how much of a lease its predecessor saw used, so the primary
//! *checkpoints* each lease's remaining TTL through the log (periodically, and on every
//! renewal), and a new primary continues from the last checkpoint. Restarting every lease at
//! its full TTL instead — etcd 3.4's behaviour, the `ttl_reset_on_leader_change` bug switch —
//! lets leader churn keep a dead client's lease alive forever (docs/cases/04). With
//! checkpoints, a lease outlives its deadline by at most the checkpoint interval plus the time
//! to elect the new leader, per leader change. The server promotes a new leader's lessor only
//! once it has applied an entry of its own term (server `follow_role`), so the checkpoints its
//! predecessor committed are applied before it reads them.

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::LocalTime;
use crate::store::LeaseId;

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
    primary: bool,
    /// Lease → (TTL in ms, local deadline).
    leases: BTreeMap<LeaseId, (u64, LocalTime)>,
    /// Expired leases whose revocation is proposed but not yet applied.
    revoking: BTreeSet<LeaseId>,
}

impl Lessor {
    pub fn is_primary(&self) -> bool {
        self.primary
    }

    /// A grant was applied (on every server, leader or not).
    pub fn on_grant(&mut self, lease: LeaseId, ttl_ms: u64, now: LocalTime) {
        self.leases.insert(lease, (ttl_ms, now.plus_ms(ttl_ms)));
    }

    /// A revocation (by a client or by expiry) was applied.
    pub fn on_revoke(&mut self, lease: LeaseId) {
        self.leases.remove(&lease);
        self.revoking.remove(&lease);
    }

    /// This server became leader: it now owns expiry. The lease table is rebuilt from the
    /// replicated one (`leases`: id, TTL and last checkpointed remaining TTL of every lease the
    /// store holds), so leases this server learned from a snapshot rather than from applied
    /// grants are not missed. Each lease continues from its checkpoint (a full TTL if it has
    /// none), or with `reset_ttl` (the bug switch) restarts at its full TTL.
    pub fn promote(&mut self, now: LocalTime, leases: impl IntoIterator<Item = LeaseInfo>, reset_ttl: bool) {
        self.primary = true;
        self.revoking.clear();
        self.leases = leases
            .into_iter()
            .map(|lease| {
                let remaining = if reset_ttl { lease.ttl_ms } else { lease.remaining_ms.unwrap_or(lease.ttl_ms) };
                (lease.id, (lease.ttl_ms, now.plus_ms(remaining)))
            })
            .collect();
    }

    /// The remaining TTL of every lease, for a checkpoint (primary only; ms, 0 when past).
    pub fn checkpoints(&self, now: LocalTime) -> Vec<(LeaseId, u64)> {
        if !self.primary {
            return Vec::new();
        }
        self.leases
            .iter()
            .filter(|(lease, _)| !self.revoking.contains(lease))
            .map(|(lease, (_, deadline))| (*lease, now.ms_until(*deadline)))
            .collect()
    }

    /// This server stopped being leader: it must neither expire leases nor acknowledge renewals.
    pub fn demote(&mut self) {
        self.primary = false;
        self.revoking.clear();
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

    #[test]
    fn promotion_continues_from_the_last_checkpoint() {
        let mut lessor = Lessor::default();
        lessor.on_grant(1, 1000, T0);
        lessor.promote(at_ms(900), [info(1, 1000, Some(300))], false);
        assert!(lessor.take_expired(at_ms(1199)).is_empty());
        assert_eq!(lessor.take_expired(at_ms(1200)), vec![1]);
    }

    #[test]
    fn promotion_without_a_checkpoint_gives_the_full_ttl() {
        let mut lessor = Lessor::default();
        lessor.promote(at_ms(900), [info(1, 1000, None)], false);
        assert!(lessor.take_expired(at_ms(1899)).is_empty());
        assert_eq!(lessor.take_expired(at_ms(1900)), vec![1]);
    }

    #[test]
    fn ttl_reset_bug_restarts_every_lease_at_full_ttl() {
        let mut lessor = Lessor::default();
        lessor.promote(at_ms(900), [info(1, 1000, Some(100))], true);
        assert!(lessor.take_expired(at_ms(1899)).is_empty());
        assert_eq!(lessor.take_expired(at_ms(1900)), vec![1]);
    }

    #[test]
    fn checkpoints_report_the_remaining_ttl_on_the_primary_only() {
        let mut lessor = Lessor::default();
        lessor.on_grant(1, 1000, T0);
        assert!(lessor.checkpoints(at_ms(100)).is_empty());
        lessor.promote(T0, [info(1, 1000, None)], false);
        assert_eq!(lessor.checkpoints(at_ms(400)), vec![(1, 600)]);
        assert_eq!(lessor.checkpoints(at_ms(1500)), vec![(1, 0)]);
    }

    #[test]
    fn promotion_takes_the_lease_table_from_the_store() {
        let mut lessor = Lessor::default();
        lessor.on_grant(1, 1000, T0);
        // Lease 2 came with a snapshot (no grant applied here); lease 1 is gone from the store.
        lessor.promote(at_ms(100), [info(2, 500, None)], false);
        assert_eq!(lessor.renew(1, at_ms(200)), Err(RenewError::LeaseNotFound));
        assert_eq!(lessor.take_expired(at_ms(600)), vec![2]);
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
