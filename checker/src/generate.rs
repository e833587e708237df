//! Linearizable register histories of any size, for benchmarks and side-by-side runs with other
//! checkers (issue 19's scaling grid).
//!
//! A history comes from simulated clients running against one atomic register: each client calls
//! an operation, the operation takes effect at one instant (its linearization point) somewhere
//! between its call and its return, and the client calls its next operation after the return.
//! Up to `clients` operations are open at once. Every history is linearizable by construction (the
//! linearization points are a witness), so a checker must search it to the end: the worst case for
//! one that stops at the first failure.
//!
//! Operations are Jepsen's cas-register's: reads, writes of small values (`0..VALUES`, as in the
//! Jepsen etcd test, so the search meets the same value many times), and compare-and-sets, which
//! fail when the register does not hold their expected value (written `:fail`, as Jepsen's etcd
//! client does). With `info_one_in = n`, about one operation in `n` ends `:info` (a timeout: a
//! write or cas that took effect half of the time) and its client goes on as a new process.
//!
//! The generator has its own seeded random numbers (xorshift64*): the same arguments give the same
//! history, byte for byte, on every machine.

use std::fmt::Write as _;

/// Register values drawn by writes and compare-and-sets.
const VALUES: u64 = 5;

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterSpec {
    /// Operations in the history (invocations; each completes or ends `:info`).
    pub operations: usize,
    /// Clients issuing operations concurrently (at least 1).
    pub clients: usize,
    /// About one operation in this many ends `:info`; 0 for none.
    pub info_one_in: u64,
    pub seed: u64,
}

/// One line of a Jepsen etcd log, as Porcupine's test data has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Invoke,
    Ok,
    Fail,
    Info,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Read(Option<u64>),
    Write(u64),
    Cas(u64, u64),
}

struct Pending {
    process: u64,
    op: Op,
    /// Whether the operation has taken effect yet (its linearization point has passed).
    applied: bool,
    outcome: Kind,
}

/// xorshift64* (Vigna 2016, "An experimental exploration of Marsaglia's xorshift generators,
/// scrambled"): small, seeded, the same numbers on every machine. Good enough to draw workloads
/// and mutations; not for anything that needs unpredictability.
pub struct Rng(u64);

impl Rng {
    /// A generator whose state is `state` (any value: 0 is mapped to 1, which xorshift needs).
    pub fn from_state(state: u64) -> Self {
        Rng(state.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index into a slice of `len` items (0 when `len` is 0).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// One of `items`, which must not be empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }
}

/// A linearizable cas-register history in the Jepsen etcd log format Porcupine reads
/// (`INFO  jepsen.util - <process>\t:<type>\t:<f>\t<value>`, one event per line).
pub fn register_log(spec: &RegisterSpec) -> String {
    let clients = spec.clients.max(1);
    let mut rng = Rng::from_state(spec.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut register: Option<u64> = None;
    let mut slots: Vec<Option<Pending>> = (0..clients).map(|_| None).collect();
    let mut process_of: Vec<u64> = (0..clients as u64).collect();
    let mut next_process = clients as u64;
    let mut invoked = 0usize;
    let mut open = 0usize;
    let mut out = String::with_capacity(spec.operations * 2 * 40);
    while invoked < spec.operations || open > 0 {
        let slot = rng.below(clients as u64) as usize;
        match &mut slots[slot] {
            None if invoked < spec.operations => {
                let op = match rng.below(10) {
                    0..=4 => Op::Read(None),
                    5..=7 => Op::Write(rng.below(VALUES)),
                    _ => Op::Cas(rng.below(VALUES), rng.below(VALUES)),
                };
                let process = process_of[slot];
                line(&mut out, process, Kind::Invoke, op);
                let outcome =
                    if spec.info_one_in > 0 && rng.below(spec.info_one_in) == 0 { Kind::Info } else { Kind::Ok };
                slots[slot] = Some(Pending { process, op, applied: false, outcome });
                invoked += 1;
                open += 1;
            }
            None => {}
            Some(pending) if !pending.applied => {
                // The linearization point. An :info write or cas takes effect half of the time.
                pending.applied = true;
                let takes_effect = pending.outcome != Kind::Info || rng.below(2) == 0;
                match &mut pending.op {
                    Op::Read(value) => *value = register,
                    Op::Write(value) => {
                        if takes_effect {
                            register = Some(*value);
                        }
                    }
                    Op::Cas(expected, new) => {
                        if register == Some(*expected) {
                            if takes_effect {
                                register = Some(*new);
                            }
                        } else if pending.outcome == Kind::Ok {
                            pending.outcome = Kind::Fail;
                        }
                    }
                }
            }
            Some(pending) => {
                line(&mut out, pending.process, pending.outcome, pending.op);
                if pending.outcome == Kind::Info {
                    // Jepsen retires a process whose operation timed out; the client goes on as a new one.
                    process_of[slot] = next_process;
                    next_process += 1;
                }
                slots[slot] = None;
                open -= 1;
            }
        }
    }
    out
}

fn line(out: &mut String, process: u64, kind: Kind, op: Op) {
    let kind = match kind {
        Kind::Invoke => "invoke",
        Kind::Ok => "ok",
        Kind::Fail => "fail",
        Kind::Info => "info",
    };
    let (f, value) = match (op, kind) {
        (Op::Read(_), "invoke" | "info") => ("read", "nil".to_string()),
        (Op::Read(value), _) => ("read", value.map_or("nil".to_string(), |v| v.to_string())),
        (Op::Write(value), _) => ("write", value.to_string()),
        (Op::Cas(expected, new), _) => ("cas", format!("[{expected} {new}]")),
    };
    let _ = writeln!(out, "INFO  jepsen.util - {process}\t:{kind}\t:{f}\t{value}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::porcupine_log;
    use crate::linearizability::models::RegisterModel;
    use crate::linearizability::{CheckOptions, Verdict, check};

    #[test]
    fn generated_histories_are_linearizable_and_reproducible() {
        for (clients, info_one_in) in [(1, 0), (5, 0), (10, 20)] {
            let spec = RegisterSpec { operations: 2_000, clients, info_one_in, seed: 7 };
            let log = register_log(&spec);
            assert_eq!(log, register_log(&spec), "same spec, same bytes");
            let history = porcupine_log::parse(&log, None).unwrap();
            let completed = log.lines().filter(|l| !l.contains(":invoke")).count();
            assert_eq!(completed, 2_000);
            assert_eq!(check(&RegisterModel::new(), &history, &CheckOptions::default()).unwrap(), Verdict::Ok);
        }
    }

    #[test]
    fn up_to_the_client_count_are_open_at_once() {
        let log = register_log(&RegisterSpec { operations: 5_000, clients: 5, info_one_in: 0, seed: 1 });
        let (mut open, mut widest) = (0i32, 0);
        for l in log.lines() {
            open += if l.contains(":invoke") { 1 } else { -1 };
            widest = widest.max(open);
        }
        assert_eq!(widest, 5);
    }
}
