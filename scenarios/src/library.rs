//! The scenario library, embedded in the binary so that `coordsim run <name>` works from any
//! directory. The files live in `scenarios/library/`; a test keeps this list and the folder equal.
//! The swarm scenarios of the bug switches (`swarm-*.toml`) are embedded by `build.rs` without a
//! list: [`all`] yields the listed ones first, then those.

/// (name, TOML text) of every library scenario, in listing order.
pub const LIBRARY: &[(&str, &str)] = &[
    ("split-brain-gc-pause", include_str!("../library/split-brain-gc-pause.toml")),
    ("split-brain-gc-pause-fenced", include_str!("../library/split-brain-gc-pause-fenced.toml")),
    ("split-brain-chaos", include_str!("../library/split-brain-chaos.toml")),
    ("over-locking", include_str!("../library/over-locking.toml")),
    ("over-locking-cas", include_str!("../library/over-locking-cas.toml")),
    ("slow-client-clock", include_str!("../library/slow-client-clock.toml")),
    ("slow-client-clock-safe-margin", include_str!("../library/slow-client-clock-safe-margin.toml")),
    ("late-client-deadline", include_str!("../library/late-client-deadline.toml")),
    ("late-client-deadline-fixed", include_str!("../library/late-client-deadline-fixed.toml")),
    ("wall-clock-deadline", include_str!("../library/wall-clock-deadline.toml")),
    ("wall-clock-deadline-fixed", include_str!("../library/wall-clock-deadline-fixed.toml")),
    ("server-clock-jump-etcd", include_str!("../library/server-clock-jump-etcd.toml")),
    ("redlock-clean", include_str!("../library/redlock-clean.toml")),
    ("redlock-server-clock-jump", include_str!("../library/redlock-server-clock-jump.toml")),
    ("redlock-gc-pause", include_str!("../library/redlock-gc-pause.toml")),
    ("redlock-restart-without-fsync", include_str!("../library/redlock-restart-without-fsync.toml")),
    ("redlock-restart-with-fsync", include_str!("../library/redlock-restart-with-fsync.toml")),
    ("redlock-delayed-restart", include_str!("../library/redlock-delayed-restart.toml")),
    ("grant-to-expired-waiter", include_str!("../library/grant-to-expired-waiter.toml")),
    ("grant-to-expired-waiter-fixed", include_str!("../library/grant-to-expired-waiter-fixed.toml")),
    ("deposed-leader-expires-leases", include_str!("../library/deposed-leader-expires-leases.toml")),
    ("deposed-leader-expires-leases-fixed", include_str!("../library/deposed-leader-expires-leases-fixed.toml")),
    ("deposed-leader-revokes-on-etcd-3-4-23", include_str!("../library/deposed-leader-revokes-on-etcd-3-4-23.toml")),
    ("slow-fsync-leader", include_str!("../library/slow-fsync-leader.toml")),
    ("slow-fsync-leader-fixed", include_str!("../library/slow-fsync-leader-fixed.toml")),
    ("flood-cas-lock-250", include_str!("../library/flood-cas-lock-250.toml")),
    ("flood-cas-lock-backoff-250", include_str!("../library/flood-cas-lock-backoff-250.toml")),
    ("flood-free-mutex-250", include_str!("../library/flood-free-mutex-250.toml")),
    ("ignore-keepalive-failure", include_str!("../library/ignore-keepalive-failure.toml")),
    ("ignore-keepalive-failure-fixed", include_str!("../library/ignore-keepalive-failure-fixed.toml")),
    ("self-eviction", include_str!("../library/self-eviction.toml")),
    ("self-eviction-fixed", include_str!("../library/self-eviction-fixed.toml")),
    ("ttl-reset-on-leader-change", include_str!("../library/ttl-reset-on-leader-change.toml")),
    ("ttl-reset-on-leader-change-fixed", include_str!("../library/ttl-reset-on-leader-change-fixed.toml")),
    ("ttl-reset-despite-lease-checkpoint", include_str!("../library/ttl-reset-despite-lease-checkpoint.toml")),
    ("long-lease-ttl-reset", include_str!("../library/long-lease-ttl-reset.toml")),
    ("long-lease-checkpointed", include_str!("../library/long-lease-checkpointed.toml")),
    ("session-timeout-too-short", include_str!("../library/session-timeout-too-short.toml")),
    ("session-timeout-long-enough", include_str!("../library/session-timeout-long-enough.toml")),
    ("stale-reads", include_str!("../library/stale-reads.toml")),
    ("stale-reads-fixed", include_str!("../library/stale-reads-fixed.toml")),
    ("serializable-reads", include_str!("../library/serializable-reads.toml")),
    ("zk-follower-loses-quorum", include_str!("../library/zk-follower-loses-quorum.toml")),
    ("zk-holder-cut-off-session-policy", include_str!("../library/zk-holder-cut-off-session-policy.toml")),
    ("zk-holder-cut-off-standard-policy", include_str!("../library/zk-holder-cut-off-standard-policy.toml")),
    ("zk-stale-reads", include_str!("../library/zk-stale-reads.toml")),
    ("zk-stale-reads-sync", include_str!("../library/zk-stale-reads-sync.toml")),
    ("watch-compaction-gap", include_str!("../library/watch-compaction-gap.toml")),
    ("watch-compaction-gap-fixed", include_str!("../library/watch-compaction-gap-fixed.toml")),
    ("watch-compaction-gap-on-etcd-3-4-23", include_str!("../library/watch-compaction-gap-on-etcd-3-4-23.toml")),
    ("unsynced-writes-lost", include_str!("../library/unsynced-writes-lost.toml")),
    ("crash-restart-durable", include_str!("../library/crash-restart-durable.toml")),
    ("herd-cas-lock", include_str!("../library/herd-cas-lock.toml")),
    ("herd-cas-lock-backoff", include_str!("../library/herd-cas-lock-backoff.toml")),
    ("herd-free-mutex", include_str!("../library/herd-free-mutex.toml")),
    ("herd-cas-lock-50", include_str!("../library/herd-cas-lock-50.toml")),
    ("herd-cas-lock-backoff-50", include_str!("../library/herd-cas-lock-backoff-50.toml")),
    ("herd-free-mutex-50", include_str!("../library/herd-free-mutex-50.toml")),
    ("zk-queue-lock-50", include_str!("../library/zk-queue-lock-50.toml")),
    ("watch-storm", include_str!("../library/watch-storm.toml")),
    ("watch-storm-proxy", include_str!("../library/watch-storm-proxy.toml")),
    ("lock-starvation", include_str!("../library/lock-starvation.toml")),
    ("lock-starvation-fifo", include_str!("../library/lock-starvation-fifo.toml")),
    ("lossy-network", include_str!("../library/lossy-network.toml")),
    ("zk-lossy-network", include_str!("../library/zk-lossy-network.toml")),
    ("zk-queue-lock", include_str!("../library/zk-queue-lock.toml")),
    ("zk-herd-lock", include_str!("../library/zk-herd-lock.toml")),
    ("zk-split-brain-gc-pause", include_str!("../library/zk-split-brain-gc-pause.toml")),
    ("zk-split-brain-gc-pause-fenced", include_str!("../library/zk-split-brain-gc-pause-fenced.toml")),
    ("lost-wakeup", include_str!("../library/lost-wakeup.toml")),
    ("lost-wakeup-fixed", include_str!("../library/lost-wakeup-fixed.toml")),
    ("orphaned-sequential-node", include_str!("../library/orphaned-sequential-node.toml")),
    ("orphaned-sequential-node-fixed", include_str!("../library/orphaned-sequential-node-fixed.toml")),
    ("leaked-lock-after-crash", include_str!("../library/leaked-lock-after-crash.toml")),
    ("leaked-lock-after-crash-fixed", include_str!("../library/leaked-lock-after-crash-fixed.toml")),
    ("zk-orphaned-lock-after-crash", include_str!("../library/zk-orphaned-lock-after-crash.toml")),
    ("zk-orphaned-lock-after-crash-fixed", include_str!("../library/zk-orphaned-lock-after-crash-fixed.toml")),
    ("etcd-election-gc-pause", include_str!("../library/etcd-election-gc-pause.toml")),
    ("zk-election-gc-pause", include_str!("../library/zk-election-gc-pause.toml")),
    ("semaphore-three-permits", include_str!("../library/semaphore-three-permits.toml")),
    ("nested-unlock-releases-outer", include_str!("../library/nested-unlock-releases-outer.toml")),
    ("reentrant-lock", include_str!("../library/reentrant-lock.toml")),
    ("hundred-requests-etcd-mutex", include_str!("../library/hundred-requests-etcd-mutex.toml")),
    ("wan-etcd-mutex", include_str!("../library/wan-etcd-mutex.toml")),
    ("hundred-requests-etcd-lock-api", include_str!("../library/hundred-requests-etcd-lock-api.toml")),
    ("hundred-requests-etcd-cas", include_str!("../library/hundred-requests-etcd-cas.toml")),
    ("hundred-requests-etcd-semaphore", include_str!("../library/hundred-requests-etcd-semaphore.toml")),
    ("hundred-requests-zk-queue-lock", include_str!("../library/hundred-requests-zk-queue-lock.toml")),
    ("hundred-requests-zk-herd-lock", include_str!("../library/hundred-requests-zk-herd-lock.toml")),
    ("hundred-requests-etcd-election", include_str!("../library/hundred-requests-etcd-election.toml")),
    ("hundred-requests-zk-election", include_str!("../library/hundred-requests-zk-election.toml")),
    ("chaos-fenced-mutex", include_str!("../library/chaos-fenced-mutex.toml")),
];

include!(concat!(env!("OUT_DIR"), "/swarm.rs"));

/// (name, TOML text) of every library scenario: [`LIBRARY`], then the swarm scenarios.
pub fn all() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    LIBRARY.iter().chain(SWARM.iter())
}

/// The TOML text of the library scenario `name`.
pub fn get(name: &str) -> Option<&'static str> {
    all().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// Where a library scenario's file lives in the repository (for error messages and `list`).
pub fn path_of(name: &str) -> String {
    format!("scenarios/library/{name}.toml")
}
