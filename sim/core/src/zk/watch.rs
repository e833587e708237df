//! Which store changes fire which ZooKeeper watch (ZooKeeper's WatchManager rules, applied to
//! the store's event stream).
//!
//! A watch set by a read at zxid `z` sees the changes after `z`: the server serves it as a
//! long-poll over the store's events from `z + 1`, so a change that lands between the read and
//! the arming of the watch is never missed (ZooKeeper gets the same from registering the watch
//! in the same step as the read).

use super::{EventType, KEY_PREFIX, WatchKind, WatchedEvent, children_prefix, key_of, parent_of, path_of};
use crate::store::{Event, EventKind, KeyRange};

/// The store keys a watch on `path` of `kind` must look at (a superset: [`fired`] filters).
pub fn range_of(path: &str, kind: WatchKind) -> KeyRange {
    match (path, kind) {
        // Root's children (and with them every znode) live under `zk/`.
        ("/", _) => KeyRange::Prefix(format!("{KEY_PREFIX}/")),
        (_, WatchKind::Data) => KeyRange::Key(key_of(path)),
        // The node and its descendants: `zk/a` and `zk/a/...` (but not `zk/ab`, filtered).
        (_, _) => KeyRange::Prefix(key_of(path)),
    }
}

/// The notification `event` causes for a watch on `path` of `kind`, if any.
pub fn fired(path: &str, kind: WatchKind, event: &Event) -> Option<WatchedEvent> {
    let changed = path_of(&event.kv.key)?;
    let zxid = event.kv.mod_revision;
    let created = event.kind == EventKind::Put && event.kv.version == 1;
    let node_event = match event.kind {
        EventKind::Delete => EventType::NodeDeleted,
        EventKind::Put if created => EventType::NodeCreated,
        EventKind::Put => EventType::NodeDataChanged,
    };
    let is_child = changed != "/" && parent_of(changed) == path;
    let is_descendant = changed.starts_with(&children_prefix(path)[KEY_PREFIX.len()..]) || path == "/";
    let child_list_changed = is_child && (created || event.kind == EventKind::Delete);
    let kind_fired = match kind {
        WatchKind::Data => (changed == path).then_some(node_event),
        WatchKind::Children if changed == path && event.kind == EventKind::Delete => Some(EventType::NodeDeleted),
        WatchKind::Children => child_list_changed.then_some(EventType::NodeChildrenChanged),
        WatchKind::Persistent if changed == path => Some(node_event),
        WatchKind::Persistent => child_list_changed.then_some(EventType::NodeChildrenChanged),
        WatchKind::PersistentRecursive => (changed == path || is_descendant).then_some(node_event),
    };
    let event_path = match kind_fired? {
        EventType::NodeChildrenChanged => path,
        _ => changed,
    };
    Some(WatchedEvent { kind: kind_fired?, path: event_path.to_string(), zxid })
}

/// Every notification `events` (in revision order) cause for the watch, in order.
pub fn fire_all(path: &str, kind: WatchKind, events: &[Event]) -> Vec<WatchedEvent> {
    events.iter().filter_map(|event| fired(path, kind, event)).collect()
}
