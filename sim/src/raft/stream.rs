//! Pipelined replication: a leader keeps several AppendEntries in flight to a follower on one
//! ordered stream, and the follower hands them to its Raft in the order they were sent.
//!
//! openraft's default `stream_append` sends an append and waits for its answer before the next
//! (`stream_append_sequential`), so a write that arrives while an append is in flight waits a
//! whole round trip and a follower's fsync before it is even sent. etcd's leader does not wait:
//! it sends up to `MaxInflightMsgs` appends per follower (512 in etcd 3.4, etcdserver/raft.go)
//! over a stream, and ZooKeeper's leader writes each proposal to its follower's TCP connection as
//! it is made. openraft allows a pipelined `stream_append` if answers come back in the order of
//! the requests (`RaftNetworkV2::stream_append`'s docs) and the follower takes the requests in
//! order: [`Raft::stream_append`] on the follower does that for one ordered input.
//!
//! Here each `stream_append` call is a session, numbered by the leader: its requests go with
//! [`Endpoint::call_ordered`], so they arrive in the order they were sent, and the follower
//! feeds each session to one `Raft::stream_append` and answers each request with the result
//! for it. openraft opens a session per heartbeat beside its long-lived replication session,
//! so a follower closes idle sessions beyond a few ([`IDLE_SESSIONS_KEPT`]); a later request
//! of a closed session opens it again.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::{FuturesOrdered, Stream, StreamExt};
use madsim::net::rpc::Request;
use openraft::error::RPCError;
use openraft::raft::{AppendEntriesRequest, StreamAppendError, StreamAppendResult};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use super::network::{AppendRpc, RaftRpcError, remote_error, unreachable};
use super::{LogId, Raft, TypeConfig};
use crate::net::Endpoint;
use crate::timing::ServerCosts;

/// One request of a leader's append stream to one follower.
#[derive(Serialize, Deserialize)]
pub struct StreamAppendRpc {
    /// The sending leader's id.
    pub leader: u64,
    /// The leader's number for this stream (unique among its open ones).
    pub session: u64,
    pub rpc: AppendEntriesRequest<TypeConfig>,
}

impl Request for StreamAppendRpc {
    type Response = Result<StreamAppendResult<TypeConfig>, RaftRpcError>;
    const ID: u64 = 0x7261_6674_0005;
}

type Answer = Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>;
type Call = Pin<Box<dyn Future<Output = (Option<LogId>, Answer)> + Send>>;

/// The leader's side: the answers to `input`'s requests, in their order, with at most `window`
/// requests unanswered. Ends after the input ends and every answer is in, or with the first
/// answer that is not a full success (an error, a conflict, a higher vote, or a partial append),
/// as openraft's sequential stream does.
pub struct Pipeline<S> {
    endpoint: Endpoint,
    to: SocketAddr,
    leader: u64,
    session: u64,
    timeout: Duration,
    window: usize,
    input: Option<S>,
    /// Requests sent so far.
    sent: u64,
    inflight: FuturesOrdered<Call>,
    ended: bool,
}

impl<S> Pipeline<S> {
    /// `leader` and `session` name the stream (see [`StreamAppendRpc`]); `timeout` bounds each
    /// request's wait for its answer.
    pub fn new(
        endpoint: Endpoint,
        to: SocketAddr,
        (leader, session): (u64, u64),
        timeout: Duration,
        window: usize,
        input: S,
    ) -> Self {
        assert!(window >= 1, "a pipeline holds at least one request in flight");
        Pipeline {
            endpoint,
            to,
            leader,
            session,
            timeout,
            window,
            input: Some(input),
            sent: 0,
            inflight: FuturesOrdered::new(),
            ended: false,
        }
    }

    fn send(&mut self, rpc: AppendEntriesRequest<TypeConfig>) {
        let last = rpc.entries.last().map(|entry| entry.log_id.clone()).or(rpc.prev_log_id.clone());
        let request = StreamAppendRpc { leader: self.leader, session: self.session, rpc };
        let (endpoint, to, timeout) = (self.endpoint.clone(), self.to, self.timeout);
        self.push(last, async move { endpoint.call_ordered(to, request, timeout).await });
    }

    /// A stream of one request (openraft's heartbeats are) goes as one plain call: nothing can
    /// overtake it, and the follower need not open a session for it.
    fn send_alone(&mut self, rpc: AppendEntriesRequest<TypeConfig>) {
        let prev = rpc.prev_log_id.clone();
        let last = rpc.entries.last().map(|entry| entry.log_id.clone()).or(prev.clone());
        let (endpoint, to, timeout, expected) = (self.endpoint.clone(), self.to, self.timeout, last.clone());
        self.push(last, async move {
            let reply = endpoint.call(to, AppendRpc(rpc), timeout).await;
            reply.map(|answer| answer.map(|response| response.into_stream_result(prev, expected)))
        });
    }

    /// Puts a request in flight: `call` is its exchange, `last` the log id a full success acks.
    fn push<F>(&mut self, last: Option<LogId>, call: F)
    where
        F: Future<Output = std::io::Result<Result<StreamAppendResult<TypeConfig>, RaftRpcError>>> + Send + 'static,
    {
        self.sent += 1;
        let to = self.to;
        self.inflight.push_back(Box::pin(async move {
            let answer = match call.await {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(message)) => Err(remote_error(message)),
                Err(e) => Err(RPCError::Unreachable(unreachable(format!("{to}: {e}")))),
            };
            (last, answer)
        }));
    }
}

impl<S> Stream for Pipeline<S>
where
    S: Stream<Item = AppendEntriesRequest<TypeConfig>> + Unpin,
{
    type Item = Answer;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Answer>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let mut pulled = Vec::new();
        while this.inflight.len() + pulled.len() < this.window {
            let Some(input) = this.input.as_mut() else { break };
            match input.poll_next_unpin(cx) {
                Poll::Ready(Some(rpc)) => pulled.push(rpc),
                Poll::Ready(None) => this.input = None,
                Poll::Pending => break,
            }
        }
        if this.sent == 0 && this.input.is_none() && pulled.len() == 1 {
            this.send_alone(pulled.pop().expect("one request"));
        }
        for rpc in pulled {
            this.send(rpc);
        }
        match this.inflight.poll_next_unpin(cx) {
            Poll::Ready(Some((last, answer))) => {
                // Anything but "all of it appended" ends the stream: openraft resends from the
                // follower's answer on a new one.
                if !matches!(&answer, Ok(Ok(matching)) if *matching == last) {
                    this.ended = true;
                }
                Poll::Ready(Some(answer))
            }
            Poll::Ready(None) if this.input.is_none() => {
                this.ended = true;
                Poll::Ready(None)
            }
            // Nothing in flight, and the input has no request yet (its waker is registered).
            Poll::Ready(None) | Poll::Pending => Poll::Pending,
        }
    }
}

/// What a follower does when a leader reaches it: a note that a current leader was heard (any
/// answer but "your vote is stale").
pub type OnAppend = Arc<dyn Fn(&StreamAppendResult<TypeConfig>) + Send + Sync>;

/// How many sessions a follower keeps open when nothing of theirs is waiting: openraft opens a
/// session per heartbeat beside its long-lived replication one, so idle ones are closed, the
/// least recently used first, beyond this many.
pub const IDLE_SESSIONS_KEPT: usize = 4;

/// The follower's side: the open sessions, by (leader, session).
pub struct AppendStreams {
    raft: Raft,
    costs: Option<Arc<ServerCosts>>,
    on_answer: OnAppend,
    sessions: Arc<Mutex<Sessions>>,
}

#[derive(Default)]
struct Sessions {
    open: BTreeMap<(u64, u64), Session>,
    /// Counts requests taken: when each session was last used, and which session task is whose.
    clock: u64,
}

struct Session {
    /// Tells this session's task from a later one under the same key.
    opened: u64,
    last_used: u64,
    /// Requests taken and not yet answered.
    waiting: usize,
    requests: mpsc::UnboundedSender<(AppendEntriesRequest<TypeConfig>, oneshot::Sender<Reply>)>,
}

type Reply = <StreamAppendRpc as Request>::Response;

impl AppendStreams {
    pub fn new(raft: Raft, costs: Option<Arc<ServerCosts>>, on_answer: OnAppend) -> Arc<Self> {
        Arc::new(AppendStreams { raft, costs, on_answer, sessions: Arc::default() })
    }

    /// Takes one request; must be called in the order requests arrive (the endpoint's handler
    /// is), and answers it once the follower's Raft has appended (and synced) it or refused it.
    /// A request of a session this follower does not have open opens it: everything sent on
    /// the session before it has been answered (or lost), so the order of what Raft takes
    /// holds; an AppendEntries that does not follow the follower's log is refused by Raft
    /// itself (a conflict), whatever order it came in.
    pub fn accept(&self, request: StreamAppendRpc) -> impl Future<Output = Reply> + Send + use<> {
        let (reply_tx, reply_rx) = oneshot::channel();
        {
            let mut sessions = self.sessions.lock().expect("append sessions lock poisoned");
            sessions.clock += 1;
            let now = sessions.clock;
            let key = (request.leader, request.session);
            if !sessions.open.contains_key(&key) {
                let session = self.open(key, now);
                sessions.open.insert(key, session);
                sessions.close_idle();
            }
            let session = sessions.open.get_mut(&key).expect("opened above");
            session.last_used = now;
            session.waiting += 1;
            // A session whose Raft stream has ended drops `reply_tx`: the answer below is an error.
            let _ = session.requests.send((request.rpc, reply_tx));
        }
        async move { reply_rx.await.unwrap_or_else(|_| Err("append stream ended".to_string())) }
    }

    /// A session's task: feeds its requests to one `Raft::stream_append`, in order, each after
    /// its turn on the CPU, and answers each with its result. Ends (and closes the session)
    /// when Raft's stream ends (after a conflict or a higher vote) or the session is closed.
    fn open(&self, key: (u64, u64), opened: u64) -> Session {
        let (requests, mut incoming) = mpsc::unbounded_channel();
        let (raft, costs, on_answer) = (self.raft.clone(), self.costs.clone(), self.on_answer.clone());
        let sessions = Arc::downgrade(&self.sessions);
        madsim::task::spawn(async move {
            let (to_raft, from_leader) = mpsc::unbounded_channel::<AppendEntriesRequest<TypeConfig>>();
            let (waiting_tx, mut waiting) = mpsc::unbounded_channel::<oneshot::Sender<Reply>>();
            let input = futures::stream::unfold(from_leader, |mut rx| async move { rx.recv().await.map(|r| (r, rx)) });
            let mut answers = std::pin::pin!(raft.stream_append(input));
            let feed = async move {
                while let Some((rpc, reply)) = incoming.recv().await {
                    if let Some(costs) = &costs {
                        costs.peer_message().await;
                    }
                    let _ = to_raft.send(rpc);
                    let _ = waiting_tx.send(reply);
                }
            };
            let with_session = |f: &mut dyn FnMut(&mut Sessions)| {
                if let Some(sessions) = sessions.upgrade() {
                    f(&mut sessions.lock().expect("append sessions lock poisoned"));
                }
            };
            let answer = async {
                while let Some(result) = answers.next().await {
                    let Some(reply) = waiting.recv().await else { break };
                    let (go_on, reply_value) = match result {
                        Ok(result) => (result.is_ok(), Ok(result)),
                        Err(fatal) => (false, Err(fatal.to_string())),
                    };
                    if let Ok(result) = &reply_value {
                        on_answer(result);
                    }
                    let _ = reply.send(reply_value);
                    with_session(&mut |s| {
                        if let Some(session) = s.open.get_mut(&key).filter(|session| session.opened == opened) {
                            session.waiting -= 1;
                        }
                    });
                    if !go_on {
                        break;
                    }
                }
                // Raft takes no more of this stream: whatever else the leader sent on it goes
                // unanswered (the leader has ended its side at the answer above).
                with_session(&mut |s| {
                    if s.open.get(&key).is_some_and(|session| session.opened == opened) {
                        s.open.remove(&key);
                    }
                });
                while waiting.recv().await.is_some() {}
            };
            futures::future::join(feed, answer).await;
        });
        Session { opened, last_used: opened, waiting: 0, requests }
    }
}

impl Sessions {
    /// Closes the least recently used sessions with nothing waiting beyond
    /// [`IDLE_SESSIONS_KEPT`]; their tasks end.
    fn close_idle(&mut self) {
        let mut idle: Vec<(u64, (u64, u64))> =
            self.open.iter().filter(|(_, s)| s.waiting == 0).map(|(key, s)| (s.last_used, *key)).collect();
        idle.sort_unstable();
        let excess = idle.len().saturating_sub(IDLE_SESSIONS_KEPT);
        for (_, key) in idle.into_iter().take(excess) {
            self.open.remove(&key);
        }
    }
}

/// Whether an answer tells the leader its vote is stale (the follower has heard a newer one).
pub fn is_higher_vote(result: &StreamAppendResult<TypeConfig>) -> bool {
    matches!(result, Err(StreamAppendError::HigherVote(_)))
}
