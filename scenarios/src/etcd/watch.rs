//! The Watch service: a stream of watch responses, as etcd-client's `WatchStream`. Each watch is
//! a task that long-polls the servers from its next revision (the simulated servers keep no watch
//! state, so a watch resumes on any server after a failure, as clientv3's watcher does with its
//! next revision). `start_revision` 0 means "from now": the watch starts at the revision after
//! the current one, read linearizably when the watch is created (etcd: the created response's
//! header revision + 1).
//!
//! Each watch on a key or a prefix is recorded as a watch stream (`watch_start`, `watch_events`,
//! `watch_progress`, `watch_end`), which the `watch` property judges.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use coordsim_checker::history::{ChangeKind, Event as HistoryEvent, WatchEndReason, WatchedChange};
use coordsim_sim::rpc::WatchOptions as ServerWatchOptions;
use coordsim_sim::store::{self, EventKind, KeyRange, RangeRequest, StoreError};
use futures::StreamExt as _;
use futures::channel::mpsc;

use super::Conn;
use super::error::{Error, Result, from_store, from_unavailable};
use super::kv::{KeyValue, RangeEnd, ResponseHeader};

/// How long one long-poll waits on the server (its local time) before it answers empty.
const POLL_WAIT: Duration = Duration::from_secs(1);
/// Pause before polling again after no server answered.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Which events a watch leaves out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchFilterType {
    NoPut,
    NoDelete,
}

/// Options of `watch` (etcd WatchCreateRequest).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchOptions {
    end: RangeEnd,
    start_revision: i64,
    progress_notify: bool,
    filters: Vec<WatchFilterType>,
    prev_kv: bool,
}

impl WatchOptions {
    /// No options: the one key, from now, no previous values.
    pub const fn new() -> Self {
        WatchOptions {
            end: RangeEnd::Key,
            start_revision: 0,
            progress_notify: false,
            filters: Vec::new(),
            prev_kv: false,
        }
    }

    super::kv::range_end_builders!();

    /// Deliver every change from `revision` on (0: from now). A revision below the compaction
    /// point ends the watch with `compact_revision()` set, as etcd does.
    pub const fn with_start_revision(mut self, revision: i64) -> Self {
        self.start_revision = revision;
        self
    }

    /// Periodic progress notifications. The simulated servers send them only on
    /// `request_progress` (etcd's default interval is ten minutes).
    pub const fn with_progress_notify(mut self) -> Self {
        self.progress_notify = true;
        self
    }

    /// Leaves out events of the filtered kinds (`NoPut`, `NoDelete`).
    pub fn with_filters(mut self, filters: impl Into<Vec<WatchFilterType>>) -> Self {
        self.filters = filters.into();
        self
    }

    /// Attach each key's previous value to its events.
    pub const fn with_prev_key(mut self) -> Self {
        self.prev_kv = true;
        self
    }

    /// Accepted for source compatibility; watch IDs are assigned by the stream.
    pub const fn with_watch_id(self, _watch_id: i64) -> Self {
        self
    }

    /// Accepted for source compatibility; responses are never fragmented here.
    pub const fn with_fragment(self) -> Self {
        self
    }
}

/// What a watch event did to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Put,
    Delete,
}

/// One change (etcd mvccpb.Event).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    event_type: EventType,
    kv: KeyValue,
    prev_kv: Option<KeyValue>,
}

impl Event {
    /// Put or delete.
    pub fn event_type(&self) -> EventType {
        self.event_type
    }

    /// The key after the change; for a delete, the key with an empty value at the delete's revision.
    pub fn kv(&self) -> Option<&KeyValue> {
        Some(&self.kv)
    }

    /// The key before the change, with `with_prev_key`.
    pub fn prev_kv(&self) -> Option<&KeyValue> {
        self.prev_kv.as_ref()
    }
}

/// One response on a watch stream: created, events, a progress notification, or canceled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchResponse {
    header: ResponseHeader,
    watch_id: i64,
    created: bool,
    canceled: bool,
    compact_revision: i64,
    cancel_reason: String,
    events: Vec<Event>,
}

impl WatchResponse {
    fn new(watch_id: i64, revision: i64) -> WatchResponse {
        WatchResponse {
            header: ResponseHeader::new(revision),
            watch_id,
            created: false,
            canceled: false,
            compact_revision: 0,
            cancel_reason: String::new(),
            events: Vec::new(),
        }
    }

    /// The response header: the revision of the store when the call was answered (always `Some`).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }

    /// The watch this response belongs to.
    pub fn watch_id(&self) -> i64 {
        self.watch_id
    }

    /// The first response of a watch.
    pub fn created(&self) -> bool {
        self.created
    }

    /// The last response of a watch: cancelled by the client, or refused by the server.
    pub fn canceled(&self) -> bool {
        self.canceled
    }

    /// When the watch was refused because its next revision was compacted: the compaction point.
    pub fn compact_revision(&self) -> i64 {
        self.compact_revision
    }

    /// Why the watch was cancelled (empty unless `canceled`).
    pub fn cancel_reason(&self) -> &str {
        &self.cancel_reason
    }

    /// The response's events, in revision order (one revision's events in one response).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Takes the events out of the response.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }
}

/// One watch's switches, shared between the stream and the watch's task.
#[derive(Default)]
struct WatchFlags {
    cancelled: AtomicBool,
    progress_requested: AtomicBool,
}

/// A stream of watch responses for one or more watches.
pub struct WatchStream {
    conn: Conn,
    sender: mpsc::UnboundedSender<WatchResponse>,
    receiver: mpsc::UnboundedReceiver<WatchResponse>,
    watches: BTreeMap<i64, Arc<WatchFlags>>,
    next_id: i64,
}

impl WatchStream {
    /// Adds a watch to this stream; its created response comes on the stream.
    pub async fn watch(&mut self, key: impl Into<Vec<u8>>, options: Option<WatchOptions>) -> Result<()> {
        let options = options.unwrap_or_default();
        let range = options.end.range(key.into())?;
        let start = match options.start_revision {
            0 => {
                let mut request = RangeRequest::new(range.clone());
                request.count_only = true;
                match self.conn.range(request, true).await {
                    Ok(Ok(response)) => response.header.revision + 1,
                    Ok(Err(error)) => return Err(from_store(&error)),
                    Err(unavailable) => return Err(from_unavailable(&unavailable)),
                }
            }
            revision => revision,
        };
        let watch_id = self.next_id;
        self.next_id += 1;
        let flags = Arc::new(WatchFlags::default());
        self.watches.insert(watch_id, flags.clone());
        let recorded = record_start(&self.conn, &range, start);
        let mut created = WatchResponse::new(watch_id, start - 1);
        created.created = true;
        let _ = self.sender.unbounded_send(created);
        let server_options = ServerWatchOptions {
            prev_kv: options.prev_kv,
            no_put: options.filters.contains(&WatchFilterType::NoPut),
            no_delete: options.filters.contains(&WatchFilterType::NoDelete),
        };
        let watcher = Watcher { conn: self.conn.clone(), sender: self.sender.clone(), watch_id, flags, recorded };
        madsim::task::spawn(watcher.run(range, start, server_options));
        Ok(())
    }

    /// Cancels the watch `watch_id`: its canceled response comes on the stream, and nothing after it.
    pub async fn cancel(&mut self, watch_id: i64) -> Result<()> {
        let Some(flags) = self.watches.remove(&watch_id) else {
            return Err(Error::WatchError(format!("no watch {watch_id} on this stream")));
        };
        flags.cancelled.store(true, Ordering::SeqCst);
        let mut canceled = WatchResponse::new(watch_id, 0);
        canceled.canceled = true;
        let _ = self.sender.unbounded_send(canceled);
        Ok(())
    }

    /// Asks every watch of the stream for a progress notification (a response with no events
    /// whose header revision every change up to has been delivered).
    pub async fn request_progress(&mut self) -> Result<()> {
        for flags in self.watches.values() {
            flags.progress_requested.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// The next response; waits until one comes.
    pub async fn message(&mut self) -> Result<Option<WatchResponse>> {
        Ok(self.receiver.next().await)
    }
}

/// The history's id of a recorded watch stream; `None` for ranges the history cannot name.
fn record_start(conn: &Conn, range: &KeyRange, start: i64) -> Option<u64> {
    let (key, prefix) = match range {
        KeyRange::Key(key) => (key.clone(), false),
        KeyRange::Prefix(prefix) => (prefix.clone(), true),
        KeyRange::FromKey(_) | KeyRange::Range { .. } => return None,
    };
    let env = conn.env();
    let watch = env.recorder.next_watch_id();
    env.recorder.record(&env.name, HistoryEvent::WatchStart { watch, key, prefix, start_revision: start });
    Some(watch)
}

/// One watch's task.
struct Watcher {
    conn: Conn,
    sender: mpsc::UnboundedSender<WatchResponse>,
    watch_id: i64,
    flags: Arc<WatchFlags>,
    recorded: Option<u64>,
}

impl Watcher {
    fn record(&self, event: HistoryEvent) {
        let env = self.conn.env();
        env.recorder.record(&env.name, event);
    }

    async fn run(self, range: KeyRange, start: i64, options: ServerWatchOptions) {
        let mut next = start;
        loop {
            let polled = self.conn.client().watch_with(range.clone(), next, POLL_WAIT, options).await;
            // A cancelled watch says nothing more, whatever its last poll brought.
            if self.flags.cancelled.load(Ordering::SeqCst) {
                if let Some(watch) = self.recorded {
                    self.record(HistoryEvent::WatchEnd {
                        watch,
                        reason: WatchEndReason::Cancelled,
                        compact_revision: None,
                    });
                }
                return;
            }
            if self.sender.is_closed() {
                return;
            }
            match polled {
                Ok(Ok(batch)) if !batch.events.is_empty() => {
                    next = batch.events.last().map_or(next, |e| e.kv.mod_revision + 1);
                    if let Some(watch) = self.recorded {
                        let events = batch.events.iter().map(change).collect();
                        self.record(HistoryEvent::WatchEvents { watch, events });
                    }
                    let mut response = WatchResponse::new(self.watch_id, batch.header_revision);
                    response.events = batch.events.into_iter().map(event).collect();
                    let _ = self.sender.unbounded_send(response);
                }
                Ok(Ok(batch)) => {
                    // Nothing in range up to the server's revision: resume after it.
                    next = next.max(batch.header_revision + 1);
                    if self.flags.progress_requested.swap(false, Ordering::SeqCst) {
                        if let Some(watch) = self.recorded {
                            self.record(HistoryEvent::WatchProgress { watch, revision: next - 1 });
                        }
                        let _ = self.sender.unbounded_send(WatchResponse::new(self.watch_id, next - 1));
                    }
                }
                Ok(Err(error)) => {
                    self.end(error);
                    return;
                }
                Err(_) => self.conn.env().clock.sleep(RETRY_PAUSE).await,
            }
        }
    }

    /// The server refused the watch: compacted (etcd's canceled response with the compact
    /// revision), or another store error.
    fn end(&self, error: StoreError) {
        let mut response = WatchResponse::new(self.watch_id, 0);
        response.canceled = true;
        response.cancel_reason = from_store(&error).to_string();
        let (reason, compact_revision) = match error {
            StoreError::Compacted { compact_revision, .. } => {
                response.compact_revision = compact_revision;
                (WatchEndReason::Compacted, Some(compact_revision))
            }
            _ => (WatchEndReason::Broken, None),
        };
        if let Some(watch) = self.recorded {
            self.record(HistoryEvent::WatchEnd { watch, reason, compact_revision });
        }
        let _ = self.sender.unbounded_send(response);
    }
}

fn change(event: &store::Event) -> WatchedChange {
    WatchedChange {
        revision: event.kv.mod_revision,
        key: event.kv.key.clone(),
        kind: match event.kind {
            EventKind::Put => ChangeKind::Put,
            EventKind::Delete => ChangeKind::Delete,
        },
        value: match event.kind {
            EventKind::Put => Some(event.kv.value.clone()),
            EventKind::Delete => None,
        },
    }
}

fn event(event: store::Event) -> Event {
    Event {
        event_type: match event.kind {
            EventKind::Put => EventType::Put,
            EventKind::Delete => EventType::Delete,
        },
        kv: KeyValue(event.kv),
        prev_kv: event.prev_kv.map(KeyValue),
    }
}

/// etcd-client's Watch client.
#[derive(Clone)]
pub struct WatchClient {
    pub(crate) conn: Conn,
}

impl WatchClient {
    /// Opens a stream with one watch on `key` (or a range, with the options). The first
    /// response is the watch's created response. Errors: the servers could not be reached to
    /// learn the current revision (for `start_revision` 0).
    pub async fn watch(&mut self, key: impl Into<Vec<u8>>, options: Option<WatchOptions>) -> Result<WatchStream> {
        let (sender, receiver) = mpsc::unbounded();
        let mut stream =
            WatchStream { conn: self.conn.clone(), sender, receiver, watches: BTreeMap::new(), next_id: 0 };
        stream.watch(key, options).await?;
        Ok(stream)
    }
}
