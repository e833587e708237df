//! Redlock's arithmetic (redis.io, "Distributed Locks with Redis"): the quorum, the clock drift
//! allowance and the validity time. The client that drives it is `crate::client::redlock`.

use std::time::Duration;

/// How long a client waits for one server's answer. The spec asks for a timeout "small compared
/// to the total lock auto-release time" (5-50 ms for a 10 s TTL); a network slower than this
/// lets nobody acquire (a liveness failure, not a safety one).
pub const SERVER_TIMEOUT: Duration = Duration::from_millis(50);

/// Servers that must answer OK: a majority.
pub fn quorum(servers: usize) -> usize {
    servers / 2 + 1
}

/// The clock drift allowance for a TTL: 1 % of it plus 2 ms, as the reference implementations
/// allow.
pub fn drift_ms(ttl_ms: u64) -> u64 {
    ttl_ms / 100 + 2
}

/// What is left of the lock after an attempt that took `elapsed_ms`: the TTL minus the elapsed
/// time minus the drift allowance (0: not acquired).
pub fn validity_ms(ttl_ms: u64, elapsed_ms: u64) -> u64 {
    ttl_ms.saturating_sub(elapsed_ms).saturating_sub(drift_ms(ttl_ms))
}

/// The shortest validity an acquisition on `servers` can leave, when every server but a quorum
/// times out: what a holder's work must fit in.
pub fn validity_floor_ms(ttl_ms: u64, servers: usize) -> u64 {
    validity_ms(ttl_ms, SERVER_TIMEOUT.as_millis() as u64 * servers as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_majority_with_validity_left() {
        assert_eq!((quorum(1), quorum(3), quorum(4), quorum(5)), (1, 2, 3, 3));
        assert_eq!(validity_ms(10_000, 100), 10_000 - 100 - 102);
        assert_eq!(validity_ms(1_000, 990), 0);
        assert_eq!(validity_floor_ms(5_000, 5), 5_000 - 250 - 52);
    }
}
