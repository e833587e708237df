//! The nemesis: injects the run's fault plan at its true times and records each fault's start
//! and end with the nodes it hit. Faults are paired verbs — pause/resume, kill/restart,
//! partition/heal — and overlapping faults compose (`compose`, shared with the real runner): a
//! node paused twice runs again only when both pauses have ended, a link cut by two partitions
//! heals with the last one.
//!
//! Clock faults change nothing here: a node's whole clock schedule is fixed before the run
//! (`plan::clock_schedule`); the nemesis only records when they happen.

pub use coordsim_core::nemesis::{compose, links, plan};

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use coordsim_checker::history::{Event, FaultKind, Phase};
use madsim::rand::Rng;
use madsim::runtime::Handle;
use madsim::task::NodeId;

use crate::net;
use crate::recorder::Recorder;
use crate::rpc::ClientReply;
use crate::scenario::ReplyKind;
use compose::Composition;
use plan::{Fault, Partition, PlannedFault, Target};

/// The name under which the nemesis records its events.
pub const NEMESIS: &str = "nemesis";

/// A node the nemesis can aim at.
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    pub id: NodeId,
    pub ip: IpAddr,
    /// A server's durable state: a crash loses what it had not synced.
    pub durable: Option<Arc<dyn Durable>>,
}

/// What a server keeps outside its process (its disk): told when the process dies, so that what
/// had not reached the disk is lost.
pub trait Durable: Send + Sync + std::fmt::Debug {
    fn crash(&self);
}

impl Durable for Mutex<crate::raft::Durable> {
    fn crash(&self) {
        self.lock().expect("durable state lock poisoned").crash();
    }
}

impl Durable for Mutex<crate::redis::Keyspace> {
    fn crash(&self) {
        self.lock().expect("keyspace lock poisoned").crash();
    }
}

/// Every node of the run, by role.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub servers: Vec<Member>,
    pub clients: Vec<Member>,
    /// Nodes that faults may cut off but never aim at (the protected resource).
    pub others: Vec<Member>,
}

impl Topology {
    fn all(&self) -> impl Iterator<Item = &Member> {
        self.servers.iter().chain(&self.clients).chain(&self.others)
    }

    fn member(&self, name: &str) -> &Member {
        self.all().find(|m| m.name == name).expect("fault targets name nodes of the run")
    }

    fn names(members: &[Member]) -> Vec<String> {
        members.iter().map(|m| m.name.clone()).collect()
    }
}

/// Fault bookkeeping that makes overlapping faults compose.
#[derive(Default)]
struct State {
    /// Pauses, crashes, cuts, loss and latency in force, composed as on a real cluster.
    faults: Composition<NodeId>,
    /// Client → the reply kinds its active drop-replies faults drop. Shared with the RPC hooks.
    dropped_replies: Arc<Mutex<BTreeMap<NodeId, Vec<(u64, ReplyKind)>>>>,
    hooked: Vec<NodeId>,
}

struct Nemesis {
    topology: Topology,
    recorder: Recorder,
    state: Mutex<State>,
}

/// Runs every fault of the plan; returns when the last one has ended.
pub async fn run(plan: Vec<PlannedFault>, topology: Topology, epoch: Instant, recorder: Recorder) {
    let nemesis = Arc::new(Nemesis { topology, recorder, state: Mutex::new(State::default()) });
    let tasks: Vec<_> = plan
        .into_iter()
        .map(|fault| {
            let nemesis = nemesis.clone();
            madsim::task::spawn(async move { nemesis.inject(fault, epoch).await })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}

/// What applying a fault did, to undo it and to record it.
struct Applied {
    targets: Vec<String>,
    detail: String,
    undo: Undo,
}

enum Undo {
    Nothing,
    Resume(NodeId),
    Restart(NodeId),
    Heal(Vec<(NodeId, NodeId)>),
    Loss(u64),
    Latency(u64),
    Replies(Vec<NodeId>, u64),
    Delay(NodeId, IpAddr, Duration),
    /// A `slow-disk` or `slow-cpu` fault (its id) on a server.
    Slowdown(NodeId, u64),
}

impl Nemesis {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("nemesis lock poisoned")
    }

    async fn inject(&self, planned: PlannedFault, epoch: Instant) {
        madsim::time::sleep_until(epoch + planned.at).await;
        let kind = kind_of(&planned.fault);
        let applied = self.apply(&planned);
        let start = Event::Fault {
            fault: planned.id,
            phase: Phase::Start,
            kind,
            targets: applied.targets.clone(),
            detail: applied.detail.clone(),
        };
        self.recorder.record(NEMESIS, start);
        if let Some(duration) = planned.duration {
            madsim::time::sleep(duration).await;
        }
        self.undo(applied.undo);
        let end = Event::Fault {
            fault: planned.id,
            phase: Phase::End,
            kind,
            targets: applied.targets,
            detail: String::new(),
        };
        self.recorder.record(NEMESIS, end);
    }

    /// Resolves a target to one node of the run, now.
    fn resolve(&self, target: &Target) -> Member {
        let servers = &self.topology.servers;
        let leader = self.recorder.leader();
        let pick = |candidates: Vec<&Member>| -> Member {
            let index = madsim::rand::thread_rng().gen_range(0..candidates.len());
            candidates[index].clone()
        };
        match target {
            Target::Node(name) => self.topology.member(name).clone(),
            Target::Leader => match leader {
                Some(name) => self.topology.member(&name).clone(),
                None => pick(servers.iter().collect()),
            },
            Target::Follower => {
                let followers: Vec<&Member> = servers.iter().filter(|m| Some(&m.name) != leader.as_ref()).collect();
                if followers.is_empty() { pick(servers.iter().collect()) } else { pick(followers) }
            }
            Target::AnyServer => pick(servers.iter().collect()),
            Target::AnyClient => pick(self.topology.clients.iter().collect()),
            Target::AnyNode => pick(servers.iter().chain(&self.topology.clients).collect()),
        }
    }

    fn shuffled_servers(&self) -> Vec<String> {
        let mut names = Topology::names(&self.topology.servers);
        // Fisher–Yates with the simulation's RNG.
        for i in (1..names.len()).rev() {
            let j = madsim::rand::thread_rng().gen_range(0..=i);
            names.swap(i, j);
        }
        names
    }

    fn apply(&self, planned: &PlannedFault) -> Applied {
        let handle = Handle::current();
        match &planned.fault {
            Fault::Pause { target } => {
                let member = self.resolve(target);
                if self.state().faults.pause(&member.id) {
                    handle.pause(member.id);
                }
                Applied { targets: vec![member.name], detail: String::new(), undo: Undo::Resume(member.id) }
            }
            Fault::Crash { target } => {
                let member = self.resolve(target);
                if self.state().faults.crash(&member.id) {
                    if let Some(durable) = &member.durable {
                        durable.crash();
                    }
                    handle.kill(member.id);
                }
                Applied { targets: vec![member.name], detail: String::new(), undo: Undo::Restart(member.id) }
            }
            Fault::Partition { shape } => self.partition(shape),
            Fault::ClockJump { node, by_ns } => {
                Applied { targets: vec![node.clone()], detail: format!("by {}", signed(*by_ns)), undo: Undo::Nothing }
            }
            Fault::ClockRate { node, rate_ppm } => Applied {
                targets: vec![node.clone()],
                detail: format!("rate {}x", *rate_ppm as f64 / 1e6),
                undo: Undo::Nothing,
            },
            Fault::ClockStrobe { node, by_ns, period } => Applied {
                targets: vec![node.clone()],
                detail: format!("{} every {} ms", signed(*by_ns), period.as_millis()),
                undo: Undo::Nothing,
            },
            Fault::PacketLoss { rate } => {
                net::set_loss_rate(self.state().faults.add_loss(planned.id, *rate));
                Applied { targets: Vec::new(), detail: compose::loss_detail(*rate), undo: Undo::Loss(planned.id) }
            }
            Fault::Latency { min, max } => {
                // The latest latency fault holds; none: the run's own link latency.
                net::set_latency_override(self.state().faults.add_latency(planned.id, *min..*max));
                let detail = compose::latency_detail(*min, *max);
                Applied { targets: Vec::new(), detail, undo: Undo::Latency(planned.id) }
            }
            Fault::DropReplies { target, replies } => {
                let member = self.resolve(target);
                self.drop_replies(member.id, planned.id, *replies);
                Applied {
                    targets: vec![member.name],
                    detail: format!("drop {} replies", replies.name()),
                    undo: Undo::Replies(vec![member.id], planned.id),
                }
            }
            Fault::SlowDisk { target, fsync } => {
                let member = self.resolve(target);
                crate::timing::slow_disk(member.id, planned.id, *fsync);
                Applied {
                    targets: vec![member.name],
                    detail: format!("fsync {} ms", fsync.as_millis()),
                    undo: Undo::Slowdown(member.id, planned.id),
                }
            }
            Fault::SlowCpu { target, factor } => {
                let member = self.resolve(target);
                crate::timing::slow_cpu(member.id, planned.id, *factor);
                Applied {
                    targets: vec![member.name],
                    detail: format!("cpu {factor}x slower"),
                    undo: Undo::Slowdown(member.id, planned.id),
                }
            }
            Fault::LinkDelay { from, to, delay } => {
                let (from_id, to_ip) = (self.topology.member(from).id, self.topology.member(to).ip);
                net::add_delay(from_id, to_ip, *delay);
                Applied {
                    targets: vec![from.clone(), to.clone()],
                    detail: compose::link_delay_detail(from, to, *delay),
                    undo: Undo::Delay(from_id, to_ip, *delay),
                }
            }
        }
    }

    fn partition(&self, shape: &Partition) -> Applied {
        let all = Topology::names(&self.topology.all().cloned().collect::<Vec<_>>());
        let servers = Topology::names(&self.topology.servers);
        let clients = Topology::names(&self.topology.clients);
        let (cut, targets, detail) = match shape {
            Partition::Isolate(target) => {
                let member = self.resolve(target);
                let detail = format!("isolate {}", member.name);
                (links::isolate(&member.name, &all), vec![member.name], detail)
            }
            Partition::CutFromServers(target) => {
                let member = self.resolve(target);
                let detail = format!("{} cut from the other servers", member.name);
                (links::between(&[member.name.clone()], &servers), vec![member.name], detail)
            }
            Partition::MajorityMinority => {
                let (cut, minority, majority) = links::majority_minority(&self.shuffled_servers());
                let detail = format!("cut {} | {}", minority.join(" "), majority.join(" "));
                (cut, minority, detail)
            }
            Partition::Ring => {
                let order = self.shuffled_servers();
                let detail = format!("ring {}", order.join(" "));
                (links::ring(&order), order, detail)
            }
            Partition::Bridge => {
                let order = self.shuffled_servers();
                let (cut, middle) = links::bridge(&order);
                let detail = format!("bridge {} via {middle}", order.join(" "));
                (cut, order, detail)
            }
            Partition::OneWay { from, to } => {
                let (from, to) = (self.resolve(from), self.resolve(to));
                let detail = format!("{} cannot reach {}", from.name, to.name);
                let cut = [(from.name.clone(), to.name.clone())].into_iter().collect();
                (cut, vec![from.name, to.name], detail)
            }
            Partition::Clients(chosen) => {
                let chosen = chosen.clone().unwrap_or(clients);
                let detail = format!("clients {} cut from servers", chosen.join(" "));
                (links::between(&chosen, &servers), chosen, detail)
            }
            Partition::Servers => (links::between(&servers, &servers), servers, "servers cut from each other".into()),
        };
        let ids: Vec<(NodeId, NodeId)> =
            cut.iter().map(|(a, b)| (self.topology.member(a).id, self.topology.member(b).id)).collect();
        for (from, to) in self.state().faults.cut(ids.iter().copied()) {
            net::clog_link(from, to);
        }
        Applied { targets, detail, undo: Undo::Heal(ids) }
    }

    fn drop_replies(&self, node: NodeId, fault: u64, replies: ReplyKind) {
        let mut state = self.state();
        state
            .dropped_replies
            .lock()
            .expect("reply table lock poisoned")
            .entry(node)
            .or_default()
            .push((fault, replies));
        if !state.hooked.contains(&node) {
            state.hooked.push(node);
            let table = state.dropped_replies.clone();
            // One reply filter per receiving node; it stays installed and reads the table, so
            // faults can come and go.
            net::filter_replies_to::<ClientReply>(node, move |reply| {
                let table = table.lock().expect("reply table lock poisoned");
                !table.get(&node).is_some_and(|kinds| kinds.iter().any(|(_, kind)| drops(*kind, reply)))
            });
        }
    }

    fn undo(&self, undo: Undo) {
        let handle = Handle::current();
        let mut state = self.state();
        match undo {
            Undo::Nothing => {}
            Undo::Resume(node) => {
                if state.faults.resume(&node) {
                    handle.resume(node);
                }
            }
            Undo::Restart(node) => {
                if state.faults.restart(&node) {
                    handle.restart(node);
                }
            }
            Undo::Heal(links) => {
                for (from, to) in state.faults.heal(links) {
                    net::unclog_link(from, to);
                }
            }
            Undo::Loss(id) => {
                net::set_loss_rate(state.faults.remove_loss(id).expect("a loss fault ends once, after it started"))
            }
            Undo::Latency(id) => net::set_latency_override(
                state.faults.remove_latency(id).expect("a latency fault ends once, after it started"),
            ),
            Undo::Slowdown(node, id) => crate::timing::end_slowdown(node, id),
            Undo::Replies(nodes, id) => {
                let mut table = state.dropped_replies.lock().expect("reply table lock poisoned");
                for node in nodes {
                    if let Some(kinds) = table.get_mut(&node) {
                        kinds.retain(|(fault, _)| *fault != id);
                    }
                }
            }
            Undo::Delay(from, to, delay) => net::remove_delay(from, to, delay),
        }
    }
}

fn drops(kind: ReplyKind, reply: &ClientReply) -> bool {
    match kind {
        ReplyKind::All => true,
        ReplyKind::Write => matches!(reply, ClientReply::Write(_) | ClientReply::Zk(crate::rpc::ZkReply::Write { .. })),
        ReplyKind::KeepAlive => matches!(reply, ClientReply::KeptAlive { .. } | ClientReply::LeaseNotFound),
        ReplyKind::Create => match reply {
            ClientReply::Write(crate::store::CommandResponse::Txn(_)) => true,
            ClientReply::Zk(crate::rpc::ZkReply::Write { result: Ok(results), .. }) => {
                results.iter().any(|result| matches!(result, crate::zk::ZkOpResult::Created { .. }))
            }
            _ => false,
        },
    }
}

fn signed(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "+" };
    format!("{sign}{} ms", ns.unsigned_abs() / 1_000_000)
}

fn kind_of(fault: &Fault) -> FaultKind {
    match fault {
        Fault::Pause { .. } => FaultKind::Pause,
        Fault::Crash { .. } => FaultKind::Crash,
        Fault::Partition { .. } => FaultKind::Partition,
        Fault::ClockJump { .. } => FaultKind::ClockJump,
        Fault::ClockRate { .. } => FaultKind::ClockRate,
        Fault::ClockStrobe { .. } => FaultKind::ClockStrobe,
        Fault::PacketLoss { .. } => FaultKind::PacketLoss,
        Fault::Latency { .. } => FaultKind::Latency,
        Fault::DropReplies { .. } => FaultKind::DropReplies,
        Fault::LinkDelay { .. } => FaultKind::LinkDelay,
        Fault::SlowDisk { .. } => FaultKind::SlowDisk,
        Fault::SlowCpu { .. } => FaultKind::SlowCpu,
    }
}
