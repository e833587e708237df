//! Redlock, as its author specified it (redis.io, "Distributed Locks with Redis"), over N
//! independent Redis servers ([`crate::server::redis`]):
//! 1. read the current time;
//! 2. `SET name value NX PX ttl` on every server in turn, each with a timeout small next to the
//!    TTL, so that a server that is down costs little;
//! 3. the lock is held when a majority answered OK and the validity time, the TTL minus the time
//!    the attempt took minus the clock drift allowance (1% of the TTL plus 2 ms, as the reference
//!    implementations allow), is still positive; the holder may act until then, by its own clock;
//! 4. otherwise release it on every server and retry after a random delay.
//!
//! Every attempt sets a value of its own, "unique across all clients and all lock requests" as
//! the spec asks (the client's name and a random number): a late release of a failed attempt, or
//! of the run before a client's restart, must not delete the key of a later attempt.
//!
//! Release sends the compare-and-delete script to every server, including those whose answer was
//! lost. Nothing here orders two grants: Redlock has no fencing token (Kleppmann, "How to do
//! distributed locking", 2016). The token recorded for a grant is the recorder's count of Redlock
//! grants in the order clients learned of them ([`Recorder::next_grant_number`]), a label for the
//! checkers that no client could compute; the resource is unfenced, so it orders nothing there.
//!
//! Every request to a server is recorded as an `api` call (`redis`, `set` / `del`), so the
//! report shows which servers each attempt won.

use std::net::SocketAddr;
use std::time::Duration;

use crate::net::Endpoint;
use coordsim_checker::history::{Call, Return};
use madsim::rand::Rng;

use crate::clock::{Clock, ClockKind, LocalTime};
use crate::recipe::redlock::{SERVER_TIMEOUT, quorum, validity_ms};
use crate::recorder::Recorder;
use crate::rpc::RedisRequest;

/// Retries wait a random time below this (the reference implementations' retry delay).
pub const RETRY_DELAY_MAX: Duration = Duration::from_millis(200);

/// A Redlock client: the servers, the client's clock and which reading of it times the validity.
pub struct Redlock<'a> {
    pub endpoint: &'a Endpoint,
    /// (name, address) of every server, in the order the client tries them.
    pub servers: Vec<(String, SocketAddr)>,
    pub clock: &'a Clock,
    pub validity_clock: ClockKind,
    pub recorder: &'a Recorder,
    /// The client's name in the history.
    pub node: &'a str,
}

/// A lock the client holds.
#[derive(Clone, Debug)]
pub struct Held {
    /// The value the keys hold: the client's name and a random number (unique per attempt).
    pub value: String,
    /// The recorded token (see the module docs).
    pub token: i64,
    /// When the validity time ends, on the client's `validity_clock`.
    pub valid_until: LocalTime,
}

impl Redlock<'_> {
    /// Acquires `name` with `ttl_ms`, retrying until it holds. Records one `lock` call.
    pub async fn lock(&self, name: &str, ttl_ms: u64) -> Held {
        let op = self.recorder.invoke(self.node, Call::Lock { name: name.to_string(), lease: 0, permits: 1 });
        loop {
            let value = format!("{}-{:016x}", self.node, madsim::rand::thread_rng().r#gen::<u64>());
            let start = self.clock.read(self.validity_clock);
            let mut won = 0;
            for (server, addr) in &self.servers {
                let request = RedisRequest::SetNxPx { key: name.to_string(), value: value.clone(), ttl_ms };
                let detail = format!("{server}: SET {name} {value} NX PX {ttl_ms}");
                if self.send(server, *addr, "set", detail, request).await == Some(true) {
                    won += 1;
                }
            }
            let elapsed_ms = start.ms_until(self.clock.read(self.validity_clock));
            let validity_ms = validity_ms(ttl_ms, elapsed_ms);
            if won >= quorum(self.servers.len()) && validity_ms > 0 {
                let token = self.recorder.next_grant_number();
                self.recorder.ok(self.node, op, Return::Locked { key: value.clone(), token });
                return Held { value, token, valid_until: start.plus_ms(validity_ms) };
            }
            self.release_everywhere(name, &value).await;
            let delay_ms = madsim::rand::thread_rng().gen_range(1..RETRY_DELAY_MAX.as_millis() as u64);
            self.clock.sleep(Duration::from_millis(delay_ms)).await;
        }
    }

    /// Whether the validity time of `held` is still running, by the client's clock.
    pub fn valid(&self, held: &Held) -> bool {
        self.clock.read(self.validity_clock) < held.valid_until
    }

    /// Releases `held` on every server. Records one `unlock` call.
    pub async fn unlock(&self, name: &str, held: &Held) {
        let op = self.recorder.invoke(self.node, Call::Unlock { name: name.to_string(), key: held.value.clone() });
        self.release_everywhere(name, &held.value).await;
        self.recorder.ok(self.node, op, Return::Unlocked);
    }

    async fn release_everywhere(&self, name: &str, value: &str) {
        for (server, addr) in &self.servers {
            let request = RedisRequest::DeleteIfValue { key: name.to_string(), value: value.to_string() };
            let detail = format!("{server}: DEL {name} if {value}");
            self.send(server, *addr, "del", detail, request).await;
        }
    }

    /// One recorded request to one server: its answer, `None` if none came in time.
    async fn send(
        &self,
        server: &str,
        addr: SocketAddr,
        method: &str,
        detail: String,
        request: RedisRequest,
    ) -> Option<bool> {
        let call = Call::Api {
            api: "redis".to_string(),
            method: method.to_string(),
            detail,
            writes: Vec::new(),
            reads: Vec::new(),
        };
        let op = self.recorder.invoke(self.node, call);
        match self.endpoint.call(addr, request, SERVER_TIMEOUT).await {
            Ok(answer) => {
                let detail = match (method, answer) {
                    ("set", true) => "OK",
                    ("set", false) => "nil",
                    (_, true) => "1",
                    (_, false) => "0",
                };
                self.recorder.ok(
                    self.node,
                    op,
                    Return::Api { detail: format!("{server}: {detail}"), revision: 0, ephemeral_owner: None },
                );
                Some(answer)
            }
            Err(error) => {
                self.recorder.info(self.node, op, format!("{server}: {error}"));
                None
            }
        }
    }
}
