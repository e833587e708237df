//! ZooKeeper's client protocol as a link proxy and a client's session tap read it: to lose chosen
//! replies (`drop-replies` on real ZooKeeper, [`Connection`]) and to see every request that
//! renews a session ([`SessionWire`]). Pure: bytes in, decisions out.
//!
//! The wire format (ZooKeeper's `ClientCnxn` and `jute` records, zookeeper-client's
//! `proto` module): every packet is a 4-byte big-endian length and that many bytes. A
//! connection opens with a `ConnectRequest` and its `ConnectResponse` (no header); then each
//! request starts with a `RequestHeader` (`xid: int, type: int`) and each reply with a
//! `ReplyHeader` (`xid: int, zxid: long, err: int`). Replies come in the order of the requests;
//! a ping has xid -2 and a watch notification xid -1, neither in that order.
//!
//! What losing a reply means: a ping's reply is skipped (a ZooKeeper client checks a ping reply
//! before it checks the order of replies, so the stream stays whole; the client's read timeout
//! then does what a lost heartbeat does). Any other reply cannot be taken out of a TCP stream
//! alone: the next reply would arrive out of order, which a ZooKeeper client takes for a broken
//! connection. So the proxy closes the connection in its place, before a byte of that reply
//! reaches the client: the request was applied, and the client learns of it only as
//! connection loss with the request in flight, as when the reply is lost with its connection.

use std::collections::BTreeMap;

/// Which replies a link loses now (the active `drop-replies` fault's `replies`), on ZooKeeper
/// here and on etcd in [`crate::h2_frames`] (there: keepalives, transactions, writes, all).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LostReplies {
    #[default]
    None,
    /// Ping replies (`keep-alive`; etcd: LeaseKeepAlive replies).
    Pings,
    /// Replies to creates that succeeded (`create`, as the simulator's filter; etcd: Txn replies).
    Creates,
    /// Replies to writes: creates, deletes, setData, setACL, multi (`write`).
    Writes,
    /// Every reply but watch notifications (`all`).
    All,
}

impl LostReplies {
    /// The control line's word for it.
    pub fn name(self) -> &'static str {
        match self {
            LostReplies::None => "none",
            LostReplies::Pings => "pings",
            LostReplies::Creates => "creates",
            LostReplies::Writes => "writes",
            LostReplies::All => "all",
        }
    }

    pub fn parse(word: &str) -> Option<LostReplies> {
        [LostReplies::None, LostReplies::Pings, LostReplies::Creates, LostReplies::Writes, LostReplies::All]
            .into_iter()
            .find(|lost| lost.name() == word)
    }
}

/// ZooKeeper's `ZooDefs.OpCode`s of the writes; the first four create.
const CREATES: [i32; 4] = [1, 15, 19, 21];
const OTHER_WRITES: [i32; 5] = [2, 5, 7, 14, 20];
/// The xids of a ping and of a watch notification.
const PING: i32 = -2;
const NOTIFICATION: i32 = -1;

/// Cuts a byte stream into whole packets (length prefix included).
#[derive(Default)]
pub struct Packets {
    pending: Vec<u8>,
}

impl Packets {
    /// Takes the next bytes read; returns the packets they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.pending.extend_from_slice(bytes);
        let mut packets = Vec::new();
        loop {
            let Some(length) = self.pending.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            else {
                break;
            };
            if self.pending.len() < 4 + length {
                break;
            }
            packets.push(self.pending.drain(..4 + length).collect());
        }
        packets
    }
}

fn int_at(packet: &[u8], at: usize) -> Option<i32> {
    packet.get(at..at + 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// One connection's view: the requests in flight by xid, from the client's packets.
#[derive(Default)]
pub struct Connection {
    requests_seen: u64,
    replies_seen: u64,
    in_flight: BTreeMap<i32, i32>,
}

/// What to do with one reply packet.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Deliver,
    /// Skip it; the stream stays whole (a ping's reply).
    Skip,
    /// Close the connection instead of delivering it.
    Close,
}

impl Connection {
    /// A packet from the client: remembers the request's operation by its xid.
    pub fn request(&mut self, packet: &[u8]) {
        self.requests_seen += 1;
        if self.requests_seen == 1 {
            return; // the ConnectRequest
        }
        if let (Some(xid), Some(op)) = (int_at(packet, 4), int_at(packet, 8))
            && xid >= 0
        {
            self.in_flight.insert(xid, op);
        }
    }

    /// A packet from the server, under the link's `lost` replies now.
    pub fn reply(&mut self, packet: &[u8], lost: LostReplies) -> Verdict {
        self.replies_seen += 1;
        if self.replies_seen == 1 {
            return Verdict::Deliver; // the ConnectResponse
        }
        let Some(xid) = int_at(packet, 4) else { return Verdict::Deliver };
        let op = self.in_flight.remove(&xid);
        let ok = int_at(packet, 16) == Some(0);
        match (xid, lost) {
            (_, LostReplies::None) | (NOTIFICATION, _) => Verdict::Deliver,
            (PING, LostReplies::Pings | LostReplies::All) => Verdict::Skip,
            (PING, _) => Verdict::Deliver,
            (_, LostReplies::All) => Verdict::Close,
            (_, LostReplies::Creates) if ok && op.is_some_and(|op| CREATES.contains(&op)) => Verdict::Close,
            (_, LostReplies::Writes) if op.is_some_and(|op| CREATES.contains(&op) || OTHER_WRITES.contains(&op)) => {
                Verdict::Close
            }
            _ => Verdict::Deliver,
        }
    }
}

/// ZooKeeper's name of an operation code (`ZooDefs.OpCode`, 3.8).
pub fn op_name(op: i32) -> &'static str {
    match op {
        1 => "create",
        2 => "delete",
        3 => "exists",
        4 => "getData",
        5 => "setData",
        6 => "getACL",
        7 => "setACL",
        8 => "getChildren",
        9 => "sync",
        11 => "ping",
        12 => "getChildren2",
        13 => "check",
        14 => "multi",
        15 => "create2",
        16 => "reconfig",
        17 => "checkWatches",
        18 => "removeWatches",
        19 => "createContainer",
        20 => "deleteContainer",
        21 => "createTTL",
        22 => "multiRead",
        101 => "setWatches",
        103 => "getEphemerals",
        104 => "getAllChildrenNumber",
        105 => "setWatches2",
        106 => "addWatch",
        107 => "whoAmI",
        -11 => "closeSession",
        _ => "unknown",
    }
}

/// `auth` and `sasl` packets are answered by the connection itself, never submitted as
/// requests: they do not touch the session (`ZooKeeperServer.processPacket`).
const NOT_SUBMITTED: [i32; 2] = [100, 102];
/// `ZooDefs`' error codes a reply may carry about the session itself.
const SESSION_EXPIRED: i32 = -112;
const SESSION_MOVED: i32 = -118;

/// Which request of a connection a reply answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WireKey {
    /// The `ConnectRequest` of a reconnection (it carries the session's id).
    Connect,
    /// A request by its xid (a ping's is -2).
    Xid(i32),
}

/// A request that reaches a server renews its session there: the server touches the session of
/// every request it submits (`ZooKeeperServer.submitRequestNow`), a reconnection revalidates it.
#[derive(Debug, PartialEq, Eq)]
pub struct Touch {
    pub key: WireKey,
    pub session: i64,
    /// `ping`, `reconnect`, or the operation's name ([`op_name`]).
    pub request: &'static str,
}

/// What a reply says of the session a request touched.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// The server read the request and answered for a live session, of this timeout (ms).
    Renewed { timeout_ms: u64 },
    /// The session had expired (a reconnection answered with timeout 0, or `SESSIONEXPIRED`).
    Expired,
    /// Answered without saying (`SESSIONMOVED`: another server holds the session now).
    Unknown(&'static str),
}

/// One connection of a ZooKeeper client, read packet by packet from both ends: the requests
/// that touch its session and what their replies say. The session is the one its
/// `ConnectRequest` carries (a reconnection) or its `ConnectResponse` names (a new session).
#[derive(Default)]
pub struct SessionWire {
    requests_seen: u64,
    replies_seen: u64,
    session: i64,
    timeout_ms: u64,
    /// Requests sent and not answered yet, and whether each touches the session.
    in_flight: BTreeMap<WireKey, bool>,
}

fn long_at(packet: &[u8], at: usize) -> Option<i64> {
    packet.get(at..at + 8).map(|b| i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
}

impl SessionWire {
    /// A packet from the client (length prefix included): the touch it makes, if any. A
    /// `ConnectRequest` (`protocolVersion, lastZxidSeen, timeOut, sessionId, passwd`) touches
    /// only when it carries a session (a reconnection); a new session is the lease's grant.
    pub fn request(&mut self, packet: &[u8]) -> Option<Touch> {
        self.requests_seen += 1;
        if self.requests_seen == 1 {
            let session = long_at(packet, 20).filter(|id| *id != 0)?;
            self.session = session;
            self.in_flight.insert(WireKey::Connect, true);
            return Some(Touch { key: WireKey::Connect, session, request: "reconnect" });
        }
        let (xid, op) = (int_at(packet, 4)?, int_at(packet, 8)?);
        let touches = !NOT_SUBMITTED.contains(&op) && self.session != 0;
        self.in_flight.insert(WireKey::Xid(xid), touches);
        touches.then(|| Touch { key: WireKey::Xid(xid), session: self.session, request: op_name(op) })
    }

    /// A packet from the server: the touch it answers and what it says, if it answers one.
    pub fn reply(&mut self, packet: &[u8]) -> Option<(WireKey, Answer)> {
        self.replies_seen += 1;
        if self.replies_seen == 1 {
            // ConnectResponse: protocolVersion, timeOut, sessionId, passwd.
            let timeout = int_at(packet, 8)?;
            if let Some(session) = long_at(packet, 12).filter(|id| *id != 0) {
                self.session = session;
            }
            self.timeout_ms = timeout.max(0) as u64;
            let reconnect = self.in_flight.remove(&WireKey::Connect)?;
            let answer = if timeout > 0 { Answer::Renewed { timeout_ms: self.timeout_ms } } else { Answer::Expired };
            return reconnect.then_some((WireKey::Connect, answer));
        }
        let xid = int_at(packet, 4)?;
        if xid == NOTIFICATION {
            return None;
        }
        let key = WireKey::Xid(xid);
        if !self.in_flight.remove(&key)? {
            return None;
        }
        let answer = match int_at(packet, 16)? {
            SESSION_EXPIRED => Answer::Expired,
            SESSION_MOVED => Answer::Unknown("session moved"),
            _ => Answer::Renewed { timeout_ms: self.timeout_ms },
        };
        Some((key, answer))
    }

    /// The connection ended: the touches still in flight, whose outcome is unknown.
    pub fn closed(&mut self) -> Vec<WireKey> {
        let keys = self.in_flight.iter().filter(|(_, touches)| **touches).map(|(key, _)| *key).collect();
        self.in_flight.clear();
        keys
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `body` as one packet: its length first (the session tap's tests build theirs so too).
    pub(crate) fn packet(body: &[u8]) -> Vec<u8> {
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    fn request(xid: i32, op: i32) -> Vec<u8> {
        packet(&[xid.to_be_bytes(), op.to_be_bytes()].concat())
    }

    fn reply(xid: i32, err: i32) -> Vec<u8> {
        packet(&[&xid.to_be_bytes()[..], &7i64.to_be_bytes()[..], &err.to_be_bytes()[..]].concat())
    }

    #[test]
    fn packets_are_cut_whole_across_and_within_reads() {
        let (a, b) = (request(1, 1), request(2, 4));
        let stream = [a.clone(), b.clone()].concat();
        let cut = a.len() + 5;
        let mut packets = Packets::default();
        assert!(packets.push(&stream[..3]).is_empty(), "not even a length yet");
        assert_eq!(packets.push(&stream[3..cut]), vec![a]);
        assert_eq!(packets.push(&stream[cut..]), vec![b]);
        assert!(packets.push(&[]).is_empty());
    }

    #[test]
    fn a_successful_create_reply_closes_the_connection_and_the_rest_pass() {
        let mut connection = Connection::default();
        connection.request(&packet(b"connect request"));
        assert_eq!(connection.reply(&packet(b"connect response......"), LostReplies::All), Verdict::Deliver);
        connection.request(&request(1, 1)); // create
        connection.request(&request(2, 4)); // getData
        connection.request(&request(3, 1)); // create that fails
        connection.request(&request(PING, 11));
        assert_eq!(connection.reply(&reply(PING, 0), LostReplies::Creates), Verdict::Deliver);
        assert_eq!(connection.reply(&reply(NOTIFICATION, 0), LostReplies::Creates), Verdict::Deliver);
        assert_eq!(connection.reply(&reply(2, 0), LostReplies::Creates), Verdict::Deliver);
        assert_eq!(connection.reply(&reply(3, -110), LostReplies::Creates), Verdict::Deliver, "NodeExists");
        assert_eq!(connection.reply(&reply(1, 0), LostReplies::Creates), Verdict::Close);
    }

    #[test]
    fn pings_are_skipped_writes_and_everything_close_and_nothing_is_lost_without_a_fault() {
        let mut connection = Connection::default();
        connection.request(&packet(b"connect"));
        connection.reply(&packet(b"connected"), LostReplies::None);
        assert_eq!(connection.reply(&reply(PING, 0), LostReplies::Pings), Verdict::Skip);
        assert_eq!(connection.reply(&reply(PING, 0), LostReplies::All), Verdict::Skip);
        connection.request(&request(4, 2)); // delete
        connection.request(&request(5, 4)); // getData
        connection.request(&request(6, 5)); // setData
        assert_eq!(connection.reply(&reply(4, 0), LostReplies::None), Verdict::Deliver);
        assert_eq!(connection.reply(&reply(5, 0), LostReplies::Writes), Verdict::Deliver);
        assert_eq!(connection.reply(&reply(6, -101), LostReplies::Writes), Verdict::Close, "a failed write too");
        connection.request(&request(7, 4));
        assert_eq!(connection.reply(&reply(7, 0), LostReplies::All), Verdict::Close);
        assert_eq!(connection.reply(&reply(NOTIFICATION, 0), LostReplies::All), Verdict::Deliver);
    }

    fn connect_request(session: i64) -> Vec<u8> {
        let body = [
            &0i32.to_be_bytes()[..],
            &0i64.to_be_bytes(),
            &6000i32.to_be_bytes(),
            &session.to_be_bytes(),
            &16i32.to_be_bytes(),
            &[0; 16],
        ]
        .concat();
        packet(&body)
    }

    fn connect_response(timeout: i32, session: i64) -> Vec<u8> {
        packet(
            &[&0i32.to_be_bytes()[..], &timeout.to_be_bytes(), &session.to_be_bytes(), &16i32.to_be_bytes(), &[0; 16]]
                .concat(),
        )
    }

    #[test]
    fn a_new_session_touches_with_each_request_but_not_with_its_connect() {
        let mut wire = SessionWire::default();
        assert_eq!(wire.request(&connect_request(0)), None, "the grant, not a renewal");
        assert_eq!(wire.reply(&connect_response(6000, 77)), None);
        let create = wire.request(&request(1, 1)).expect("a create touches");
        assert_eq!(create, Touch { key: WireKey::Xid(1), session: 77, request: "create" });
        assert_eq!(wire.request(&request(PING, 11)).map(|t| t.request), Some("ping"));
        assert_eq!(wire.request(&request(2, 100)), None, "auth is not submitted");
        assert_eq!(wire.reply(&reply(NOTIFICATION, 0)), None);
        assert_eq!(wire.reply(&reply(PING, 0)), Some((WireKey::Xid(PING), Answer::Renewed { timeout_ms: 6000 })));
        assert_eq!(
            wire.reply(&reply(1, -110)),
            Some((WireKey::Xid(1), Answer::Renewed { timeout_ms: 6000 })),
            "NodeExists: touched all the same"
        );
        assert_eq!(wire.reply(&reply(2, 0)), None);
        assert_eq!(wire.request(&request(3, 8)).map(|t| t.request), Some("getChildren"));
        assert_eq!(wire.request(&request(4, 2)).map(|t| t.request), Some("delete"));
        assert_eq!(wire.reply(&reply(3, SESSION_EXPIRED)), Some((WireKey::Xid(3), Answer::Expired)));
        assert_eq!(wire.closed(), vec![WireKey::Xid(4)], "the delete's outcome is unknown");
        assert!(wire.closed().is_empty());
    }

    #[test]
    fn a_reconnection_touches_its_session_and_learns_whether_it_expired() {
        let mut wire = SessionWire::default();
        let touch = wire.request(&connect_request(77)).expect("a reconnection revalidates the session");
        assert_eq!(touch, Touch { key: WireKey::Connect, session: 77, request: "reconnect" });
        assert_eq!(
            wire.reply(&connect_response(6000, 77)),
            Some((WireKey::Connect, Answer::Renewed { timeout_ms: 6000 }))
        );
        let mut late = SessionWire::default();
        late.request(&connect_request(77));
        assert_eq!(late.reply(&connect_response(0, 0)), Some((WireKey::Connect, Answer::Expired)));
        let mut cut = SessionWire::default();
        cut.request(&connect_request(77));
        assert_eq!(cut.closed(), vec![WireKey::Connect]);
    }

    #[test]
    fn control_words_round_trip() {
        for lost in [LostReplies::None, LostReplies::Pings, LostReplies::Creates, LostReplies::Writes, LostReplies::All]
        {
            assert_eq!(LostReplies::parse(lost.name()), Some(lost));
        }
        assert_eq!(LostReplies::parse("some"), None);
    }
}
