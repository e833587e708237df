//! etcd's client protocol (gRPC over HTTP/2, cleartext) as a link proxy reads it, to lose chosen
//! replies (`drop-replies` on real etcd). Pure: bytes in, decisions out.
//!
//! The wire format (RFC 9113): the client opens with a 24-byte preface, then both ends send
//! frames, each a 9-byte header (24-bit length, type, flags, 31-bit stream id) and its payload.
//! A gRPC call is a stream opened by the client's HEADERS, whose `:path` names the method
//! (`/etcdserverpb.KV/Txn`); its reply is the server's HEADERS, DATA (the messages) and trailing
//! HEADERS on that stream. Header blocks are compressed against the connection's whole history
//! (HPACK, RFC 7541), so every client header block is decoded in order to know each stream's
//! method; the server's are never needed.
//!
//! What losing a reply means, as on ZooKeeper ([`crate::zk_frames`]): a keepalive's reply is one
//! message on the long-lived LeaseKeepAlive stream, and its DATA frame is skipped (the stream
//! stays whole; the lease is renewed, the client does not learn it: etcd-client's keeper then
//! does what a lost keepalive reply does). Any other reply cannot be taken out alone (a unary
//! call without its reply message is a protocol error, not a lost reply), so the proxy closes the
//! connection in its place, before a byte of it reaches the client: the request was applied and
//! the client sees the connection fail with it in flight.

use std::collections::BTreeMap;

use crate::zk_frames::{LostReplies, Verdict};

/// The preface every client connection opens with (RFC 9113 §3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

/// Cuts one direction's byte stream into whole frames (the client's preface as a unit of its own).
pub struct Frames {
    preface_left: usize,
    pending: Vec<u8>,
}

impl Frames {
    /// The client's side: the preface comes first.
    pub fn client() -> Frames {
        Frames { preface_left: PREFACE.len(), pending: Vec::new() }
    }

    /// The server's side.
    pub fn server() -> Frames {
        Frames { preface_left: 0, pending: Vec::new() }
    }

    /// Takes the next bytes read; returns the units they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.pending.extend_from_slice(bytes);
        let mut units = Vec::new();
        if self.preface_left > 0 {
            if self.pending.len() < self.preface_left {
                return units;
            }
            units.push(self.pending.drain(..self.preface_left).collect());
            self.preface_left = 0;
        }
        while self.pending.len() >= 9 {
            let length = u32::from_be_bytes([0, self.pending[0], self.pending[1], self.pending[2]]) as usize;
            if self.pending.len() < 9 + length {
                break;
            }
            units.push(self.pending.drain(..9 + length).collect());
        }
        units
    }
}

/// A frame's header fields.
struct Header {
    kind: u8,
    flags: u8,
    stream: u32,
}

fn header(frame: &[u8]) -> Option<Header> {
    let head = frame.get(..9)?;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    Some(Header { kind: head[3], flags: head[4], stream })
}

/// What a call's reply is, for the kinds of `drop-replies` (the simulator's: `keepalive`,
/// `create` for the lock recipes' transactions, `write` for any write, `all`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    KeepAlive,
    Txn,
    /// Put, DeleteRange, Compact, LeaseGrant, LeaseRevoke: writes through Raft.
    OtherWrite,
    Other,
}

impl Method {
    /// Classifies a gRPC `:path`.
    pub fn of(path: &[u8]) -> Method {
        match path {
            b"/etcdserverpb.Lease/LeaseKeepAlive" => Method::KeepAlive,
            b"/etcdserverpb.KV/Txn" => Method::Txn,
            b"/etcdserverpb.KV/Put"
            | b"/etcdserverpb.KV/DeleteRange"
            | b"/etcdserverpb.KV/Compact"
            | b"/etcdserverpb.Lease/LeaseGrant"
            | b"/etcdserverpb.Lease/LeaseRevoke" => Method::OtherWrite,
            _ => Method::Other,
        }
    }

    fn lost_under(self, lost: LostReplies) -> bool {
        match lost {
            LostReplies::None => false,
            LostReplies::All => true,
            LostReplies::Pings => self == Method::KeepAlive,
            LostReplies::Creates => self == Method::Txn,
            LostReplies::Writes => matches!(self, Method::Txn | Method::OtherWrite),
        }
    }
}

/// One HTTP/2 connection's view: the method of each open stream, from the client's headers.
pub struct Connection {
    decoder: hpack::Decoder<'static>,
    /// A header block split over CONTINUATION frames: its stream and bytes so far.
    assembling: Option<(u32, Vec<u8>)>,
    methods: BTreeMap<u32, Method>,
    /// The client's header blocks could not be decoded (never seen from etcd-client): the
    /// connection's streams are unknown from then on, and its replies are delivered.
    undecodable: bool,
}

impl Default for Connection {
    fn default() -> Connection {
        Connection { decoder: hpack::Decoder::new(), assembling: None, methods: BTreeMap::new(), undecodable: false }
    }
}

impl Connection {
    /// A unit from the client: the preface or a frame. Notes each new stream's method.
    pub fn request(&mut self, frame: &[u8]) {
        if frame == PREFACE {
            return;
        }
        let Some(head) = header(frame) else { return };
        let payload = &frame[9..];
        match head.kind {
            HEADERS => {
                let Some(block) = header_block(payload, head.flags) else {
                    self.undecodable = true;
                    return;
                };
                if head.flags & END_HEADERS != 0 {
                    self.decode(head.stream, block.to_vec());
                } else {
                    self.assembling = Some((head.stream, block.to_vec()));
                }
            }
            CONTINUATION => {
                let Some((stream, mut block)) = self.assembling.take() else { return };
                block.extend_from_slice(payload);
                if head.flags & END_HEADERS != 0 {
                    self.decode(stream, block);
                } else {
                    self.assembling = Some((stream, block));
                }
            }
            RST_STREAM => {
                self.methods.remove(&head.stream);
            }
            _ => {}
        }
    }

    fn decode(&mut self, stream: u32, block: Vec<u8>) {
        if self.undecodable {
            return;
        }
        // Every block goes through the decoder, in order, to keep its table as the encoder's.
        // The crate panics on some malformed integers: a panic here means undecodable.
        let decoder = &mut self.decoder;
        let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decoder.decode(&block)));
        match decoded {
            Ok(Ok(headers)) => {
                if let Some((_, path)) = headers.iter().find(|(name, _)| name == b":path") {
                    self.methods.insert(stream, Method::of(path));
                }
            }
            _ => {
                self.undecodable = true;
                self.methods.clear();
            }
        }
    }

    /// A frame from the server, under the link's `lost` replies now.
    pub fn reply(&mut self, frame: &[u8], lost: LostReplies) -> Verdict {
        let Some(head) = header(frame) else { return Verdict::Deliver };
        if head.stream == 0 || !matches!(head.kind, DATA | HEADERS | CONTINUATION) {
            return Verdict::Deliver;
        }
        let Some(method) = self.methods.get(&head.stream).copied() else { return Verdict::Deliver };
        if head.kind != CONTINUATION && head.flags & END_STREAM != 0 {
            self.methods.remove(&head.stream);
        }
        if !method.lost_under(lost) {
            return Verdict::Deliver;
        }
        match (method, head.kind) {
            // The keeper's stream stays open: only its messages are lost.
            (Method::KeepAlive, DATA) => Verdict::Skip,
            (Method::KeepAlive, _) => Verdict::Deliver,
            _ => Verdict::Close,
        }
    }
}

/// A HEADERS frame's header block fragment, without its padding and priority fields.
fn header_block(payload: &[u8], flags: u8) -> Option<&[u8]> {
    let (mut start, mut end) = (0, payload.len());
    if flags & PADDED != 0 {
        let pad = *payload.first()? as usize;
        start = 1;
        end = end.checked_sub(pad)?;
    }
    if flags & PRIORITY != 0 {
        start += 5;
    }
    payload.get(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let length = (payload.len() as u32).to_be_bytes();
        let mut out = vec![length[1], length[2], length[3], kind, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// A request's header block as a client encodes it: the same encoder for the whole
    /// connection, so later blocks refer to earlier ones through the dynamic table.
    fn request_headers(encoder: &mut hpack::Encoder<'_>, path: &str) -> Vec<u8> {
        let headers: Vec<(&[u8], &[u8])> = vec![
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", path.as_bytes()),
            (b":authority", b"10.1.0.2:2379"),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
        ];
        encoder.encode(headers)
    }

    #[test]
    fn frames_are_cut_whole_after_the_preface() {
        let settings = frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100]);
        let data = frame(DATA, 0, 1, b"hello");
        let stream = [&PREFACE[..], &settings, &data].concat();
        let mut frames = Frames::client();
        assert!(frames.push(&stream[..10]).is_empty());
        assert_eq!(frames.push(&stream[10..30]), vec![PREFACE.to_vec()]);
        assert_eq!(frames.push(&stream[30..]), vec![settings, data.clone()]);
        let mut server = Frames::server();
        assert_eq!(server.push(&data), vec![data]);
    }

    #[test]
    fn a_keepalive_reply_is_skipped_a_txn_reply_closes_and_reads_pass() {
        let mut encoder = hpack::Encoder::new();
        let mut connection = Connection::default();
        connection.request(PREFACE);
        connection.request(&frame(
            HEADERS,
            END_HEADERS,
            1,
            &request_headers(&mut encoder, "/etcdserverpb.Lease/LeaseKeepAlive"),
        ));
        connection.request(&frame(HEADERS, END_HEADERS, 3, &request_headers(&mut encoder, "/etcdserverpb.KV/Txn")));
        // Indexed from the dynamic table this time: decodable only with the blocks before it.
        connection.request(&frame(HEADERS, END_HEADERS, 5, &request_headers(&mut encoder, "/etcdserverpb.KV/Range")));
        let block = request_headers(&mut encoder, "/etcdserverpb.KV/Put");
        let (first, rest) = block.split_at(block.len() / 2);
        connection.request(&frame(HEADERS, 0, 7, first));
        connection.request(&frame(CONTINUATION, END_HEADERS, 7, rest));
        let reply = |stream: u32, kind: u8, flags: u8| frame(kind, flags, stream, b"reply");
        let lost = LostReplies::Pings;
        assert_eq!(connection.reply(&reply(1, HEADERS, END_HEADERS), lost), Verdict::Deliver, "the stream's headers");
        assert_eq!(connection.reply(&reply(1, DATA, 0), lost), Verdict::Skip);
        assert_eq!(connection.reply(&reply(3, DATA, 0), lost), Verdict::Deliver);
        assert_eq!(connection.reply(&frame(0x6, 0, 0, &[0; 8]), LostReplies::All), Verdict::Deliver, "a PING");
        assert_eq!(connection.reply(&reply(5, DATA, 0), LostReplies::Writes), Verdict::Deliver, "a read");
        assert_eq!(connection.reply(&reply(7, HEADERS, END_HEADERS), LostReplies::Creates), Verdict::Deliver, "a put");
        assert_eq!(connection.reply(&reply(7, HEADERS, END_HEADERS), LostReplies::Writes), Verdict::Close);
        assert_eq!(connection.reply(&reply(3, HEADERS, END_HEADERS), LostReplies::Creates), Verdict::Close);
        assert_eq!(connection.reply(&reply(5, DATA, 0), LostReplies::None), Verdict::Deliver);
        // A stream that ended is forgotten; one the client reset too.
        assert_eq!(connection.reply(&reply(5, HEADERS, END_HEADERS | END_STREAM), LostReplies::None), Verdict::Deliver);
        assert_eq!(connection.reply(&reply(5, DATA, 0), LostReplies::All), Verdict::Deliver);
        connection.request(&frame(RST_STREAM, 0, 3, &[0, 0, 0, 8]));
        assert_eq!(connection.reply(&reply(3, DATA, 0), LostReplies::All), Verdict::Deliver);
    }

    #[test]
    fn padding_and_priority_are_stripped_and_garbage_only_stops_the_reading() {
        let mut encoder = hpack::Encoder::new();
        let block = request_headers(&mut encoder, "/etcdserverpb.KV/Txn");
        let mut payload = vec![3u8];
        payload.extend_from_slice(&[0, 0, 0, 0, 16]);
        payload.extend_from_slice(&block);
        payload.extend_from_slice(&[0, 0, 0]);
        let mut connection = Connection::default();
        connection.request(&frame(HEADERS, END_HEADERS | PADDED | PRIORITY, 1, &payload));
        assert_eq!(connection.reply(&frame(DATA, 0, 1, b"x"), LostReplies::Creates), Verdict::Close);
        let mut garbled = Connection::default();
        garbled.request(&frame(HEADERS, END_HEADERS, 1, &[0xff; 12]));
        assert_eq!(garbled.reply(&frame(DATA, 0, 1, b"x"), LostReplies::All), Verdict::Deliver);
        garbled.request(&frame(HEADERS, END_HEADERS, 3, &block));
        assert_eq!(garbled.reply(&frame(DATA, 0, 3, b"x"), LostReplies::All), Verdict::Deliver, "stays unread");
    }
}
