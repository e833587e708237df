//! Which keys a [`KeyRange`] selects.
//!
//! Keys compare as bytes, as in etcd. Rust's `str` ordering is byte-wise, so `String`'s `Ord`
//! is exactly etcd's key order and a `BTreeMap<String, _>` iterates keys the way etcd would.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::KeyRange;

impl KeyRange {
    /// True when the range selects `key`.
    pub fn contains(&self, key: &str) -> bool {
        match self {
            KeyRange::Key(k) => key == k,
            KeyRange::Prefix(prefix) => key.starts_with(prefix.as_str()),
            KeyRange::Range { start, end } => start.as_str() <= key && key < end.as_str(),
            KeyRange::FromKey(start) => start.as_str() <= key,
        }
    }

    /// The smallest key the range can select. Every variant selects one contiguous run of
    /// keys in byte order that starts here (a prefix's keys all sort right after the prefix
    /// itself), which lets an ordered map serve any range by seeking, not scanning.
    fn first_key(&self) -> &str {
        match self {
            KeyRange::Key(key) => key,
            KeyRange::Prefix(prefix) => prefix,
            KeyRange::Range { start, .. } => start,
            KeyRange::FromKey(start) => start,
        }
    }
}

/// The entries of `map` whose keys `range` selects, in key order.
///
/// Cost: one seek plus one step per selected key (and one more to see the run end).
/// `take_while` rather than an upper bound for `BTreeMap::range`, because that panics when a
/// `Range` has `start > end`; here such a range is simply empty, as in etcd.
pub(super) fn select<'a, V>(
    map: &'a BTreeMap<String, V>,
    range: &'a KeyRange,
) -> impl Iterator<Item = (&'a String, &'a V)> + 'a {
    map.range::<str, _>((Bound::Included(range.first_key()), Bound::Unbounded))
        .take_while(move |(key, _)| range.contains(key))
}
