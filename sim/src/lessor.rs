//! The lessor: when each lease expires, by this server's local clock.
//!
//! Sans-IO. Lease deadlines are not replicated (a deadline in one node's clock means nothing to
//! another's); every server tracks them, but only the *primary* — the server that is the Raft
//! leader — acts on them: it alone renews on keepalive and proposes the revocation of expired
//! leases through the log. This follows etcd's lessor (server/lease/lessor.go: Promote, Demote,
//! Renew, expiry loop). On promotion every lease restarts at its full TTL, as in etcd 3.4: a new
//! leader cannot know how much of a lease its predecessor had seen used (the cost, leases that
//! outlive a churn of leaders, is docs/cases/04).

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::LocalTime;
use crate::store::LeaseId;

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
    /// replicated one (`leases`: id and TTL of every lease the store holds), so leases this server
    /// learned from a snapshot rather than from applied grants are not missed; every lease gets
    /// its full TTL from now.
    pub fn promote(&mut self, now: LocalTime, leases: impl IntoIterator<Item = (LeaseId, u64)>) {
        self.primary = true;
        self.revoking.clear();
        self.leases = leases.into_iter().map(|(lease, ttl_ms)| (lease, (ttl_ms, now.plus_ms(ttl_ms)))).collect();
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
        lessor.promote(T0, []);
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
        lessor.promote(T0, []);
        lessor.on_grant(1, 1000, T0);
        assert_eq!(lessor.renew(1, at_ms(800)), Ok(1000));
        assert!(lessor.take_expired(at_ms(1799)).is_empty());
        assert_eq!(lessor.take_expired(at_ms(1800)), vec![1]);
        assert_eq!(lessor.renew(1, at_ms(1801)), Err(RenewError::LeaseNotFound));
    }

    #[test]
    fn promotion_restarts_every_lease_at_full_ttl() {
        let mut lessor = Lessor::default();
        lessor.on_grant(1, 1000, T0);
        lessor.promote(at_ms(900), [(1, 1000)]);
        assert!(lessor.take_expired(at_ms(1899)).is_empty());
        assert_eq!(lessor.take_expired(at_ms(1900)), vec![1]);
    }

    #[test]
    fn promotion_takes_the_lease_table_from_the_store() {
        let mut lessor = Lessor::default();
        lessor.on_grant(1, 1000, T0);
        // Lease 2 came with a snapshot (no grant applied here); lease 1 is gone from the store.
        lessor.promote(at_ms(100), [(2, 500)]);
        assert_eq!(lessor.renew(1, at_ms(200)), Err(RenewError::LeaseNotFound));
        assert_eq!(lessor.take_expired(at_ms(600)), vec![2]);
    }

    #[test]
    fn demoted_server_stops_expiring() {
        let mut lessor = Lessor::default();
        lessor.promote(T0, []);
        lessor.on_grant(1, 1000, T0);
        lessor.demote();
        assert!(lessor.take_expired(at_ms(5000)).is_empty());
        assert_eq!(lessor.renew(1, at_ms(5000)), Err(RenewError::NotPrimary));
    }

    #[test]
    fn revoked_lease_is_forgotten() {
        let mut lessor = Lessor::default();
        lessor.promote(T0, []);
        lessor.on_grant(1, 1000, T0);
        lessor.on_revoke(1);
        assert!(lessor.take_expired(at_ms(5000)).is_empty());
        assert_eq!(lessor.renew(1, at_ms(10)), Err(RenewError::LeaseNotFound));
    }
}
