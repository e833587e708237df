//! Discrete time. One tick of true time: every clock advances, connected clients' keepalives
//! reach the server (the shipped `Lessor` renews their leases), clients whose own deadline has
//! passed stop acting, then the lessor expires the leases past their deadline and the store
//! revokes them (deleting their keys), which may notify waiters.
//!
//! Within a tick, clients look at their deadlines before the server expires leases: the tick is
//! the time resolution, and a client that stops in the same tick as its lease expires is counted
//! as stopping first.
//!
//! A tick is enabled only when it can change something: some lease is not being renewed (its
//! client is paused or cut off) and still exists, or a client's deadline is running. Otherwise
//! a tick would only renew every lease by one tick, a stutter step that leaves the protocol as
//! it was; skipping it keeps the state space finite and makes "no action enabled" mean "stuck".

use coordsim_core::store::{Command, RevokeReason};

use super::client;
use super::config::EtcdConfig;
use super::state::{Client, ClientFault, End, Phase, State, server_time};
use super::watch;

pub fn useful(config: &EtcdConfig, state: &State) -> bool {
    state.clients.iter().any(|c| c.fault.is_some() && (state.lease_alive(c.lease) || deadline_running(config, c)))
}

/// Whether the client's own deadline is running and has not passed.
pub fn deadline_running(config: &EtcdConfig, client: &Client) -> bool {
    let running = client.fault.is_some() && !matches!(client.phase, Phase::Done(_));
    running && config.client_deadline_units.is_some_and(|deadline| client.since_ack_units < deadline)
}

/// The client clock advances the tick may choose among: more than one only when some
/// client's deadline depends on it.
pub fn client_unit_choices(config: &EtcdConfig, state: &State) -> std::ops::RangeInclusive<u8> {
    let (lo, hi) = config.clocks.client_units_per_tick;
    if state.clients.iter().any(|c| deadline_running(config, c)) { lo..=hi } else { lo..=lo }
}

pub fn tick(config: &EtcdConfig, state: &mut State, client_units: u8) {
    state.now += 1;
    let server_now = server_time(config, state.now);
    for index in 0..state.clients.len() {
        let client = &mut state.clients[index];
        match client.fault {
            None => match state.lessor.renew(client.lease, server_now) {
                Ok(_) => client.since_ack_units = 0,
                Err(_) => client::end(state, index, End::SessionExpired),
            },
            Some(_) => {
                if let Some(deadline) = config.client_deadline_units {
                    client.since_ack_units = client.since_ack_units.saturating_add(client_units).min(deadline);
                }
            }
        }
        let client = &state.clients[index];
        let deadline_passed = config.client_deadline_units.is_some_and(|deadline| client.since_ack_units >= deadline);
        if deadline_passed && client.fault != Some(ClientFault::Paused) {
            client::end(state, index, End::DeadlinePassed);
        }
    }
    for lease in state.lessor.take_expired(server_now) {
        state.store.apply(&Command::LeaseRevoke { id: lease, reason: RevokeReason::Expired });
        state.lessor.on_revoke(lease);
    }
    watch::after_write(state);
}
