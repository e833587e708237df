//! [`Hashed`]: lets a type of the shipped cores that derives no `Hash` live in a stateright state,
//! cheaply.
//!
//! stateright de-duplicates states by a 64-bit hash of the whole state, so every part of a state
//! must be `Hash` (and `Eq`). The sans-IO cores we drive (`Store`, `Lessor`, `Resource`,
//! `EtcdMutex`, `EtcdStep`, `ZkLock`, `ZkLockStep`) derive `Debug` but not `Hash`, and sim/ is not ours to edit. Their
//! `Debug` output renders their whole state, and deterministically (sim/ keeps `BTreeMap`s and
//! `Vec`s there, never a `HashMap`): equal values print equal text and values that differ print
//! different text. So a hash of the text is a stable digest of the value. The store also derives
//! `Serialize`, whose JSON is as faithful and several times cheaper to produce: it is digested
//! through that ([`Digest`]).
//!
//! Formatting a store is the costliest thing a model step does, and most steps do not touch the
//! store (a write to the resource, a pause, a read). So the value sits behind an `Arc` and its
//! digest is computed once and kept: a copy of a state shares both until a step mutates the value
//! (through `DerefMut`, which copies it if shared and forgets the digest).

use std::cell::RefCell;
use std::collections::hash_map::DefaultHasher;
use std::fmt::{self, Debug};
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};

/// A value hashed and compared through a digest of its `Debug` text.
pub struct Hashed<T> {
    value: Arc<T>,
    digest: OnceLock<u64>,
}

impl<T> Hashed<T> {
    pub fn new(value: T) -> Self {
        Hashed { value: Arc::new(value), digest: OnceLock::new() }
    }
}

impl<T: Clone> Hashed<T> {
    /// The value itself (copied if another state shares it).
    pub fn into_inner(self) -> T {
        Arc::unwrap_or_clone(self.value)
    }
}

impl<T: Digest> Hashed<T> {
    /// The digest of the value (computed on first use).
    pub fn digest(&self) -> u64 {
        *self.digest.get_or_init(|| self.value.digest())
    }
}

/// How a type is digested: its `Debug` text by default; the store, the biggest value, through
/// its serde form, which is several times cheaper to produce than `Debug` text.
pub trait Digest {
    fn digest(&self) -> u64;
}

macro_rules! digest_by_debug {
    ($($t:ty),*) => {
        $(impl Digest for $t {
            fn digest(&self) -> u64 {
                digest_bytes(|bytes| write!(bytes, "{self:?}").is_ok())
            }
        })*
    };
}

digest_by_debug!(
    coordsim_core::lessor::Lessor,
    coordsim_core::resource::Resource,
    coordsim_core::recipe::mutex::EtcdMutex,
    coordsim_core::recipe::EtcdStep,
    coordsim_core::recipe::zk_lock::ZkLock,
    coordsim_core::recipe::zk_lock::ZkLockStep,
    Vec<i32>
);

impl Digest for coordsim_core::store::Store {
    fn digest(&self) -> u64 {
        digest_bytes(|bytes| serde_json::to_writer(bytes, self).is_ok())
    }
}

thread_local! {
    /// Reused buffer: one allocation per thread, not one per digest.
    static BYTES: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Hashes the bytes `render` writes. DefaultHasher::new() has fixed keys: the same bytes give
/// the same digest in every run.
fn digest_bytes(render: impl FnOnce(&mut Vec<u8>) -> bool) -> u64 {
    BYTES.with(|bytes| {
        let mut bytes = bytes.borrow_mut();
        bytes.clear();
        assert!(render(&mut bytes), "rendering a value for its digest failed");
        let mut hasher = DefaultHasher::new();
        hasher.write(&bytes);
        hasher.finish()
    })
}

impl<T> Clone for Hashed<T> {
    fn clone(&self) -> Self {
        Hashed { value: Arc::clone(&self.value), digest: self.digest.clone() }
    }
}

impl<T> Deref for Hashed<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Clone> DerefMut for Hashed<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.digest = OnceLock::new();
        Arc::make_mut(&mut self.value)
    }
}

impl<T: Debug> Debug for Hashed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<T: Digest> Hash for Hashed<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.digest());
    }
}

/// Equal digests mean equal text (up to a 64-bit collision, the same bet stateright makes on
/// every whole state).
impl<T: Digest> PartialEq for Hashed<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.value, &other.value) || self.digest() == other.digest()
    }
}

impl<T: Digest> Eq for Hashed<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest<T: Hash>(value: &T) -> u64 {
        let mut hasher = DefaultHasher::new();
        value.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn equal_stores_hash_equal_and_a_write_changes_the_hash() {
        use coordsim_core::store::{Command, PutRequest, Store};
        let a = Hashed::new(Store::new());
        let mut b = Hashed::new(Store::new());
        assert_eq!(digest(&a), digest(&b));
        assert_eq!(a, b);
        let copy = b.clone();
        let put = PutRequest { key: "k".into(), value: "v".into(), lease: 0, prev_kv: false, ignore_lease: false };
        b.apply(&Command::Put(put));
        assert_ne!(digest(&a), digest(&b));
        assert_ne!(a, b);
        assert_eq!(copy, a, "the copy taken before the write kept the old value");
    }

    #[test]
    fn a_kept_digest_is_forgotten_when_the_value_changes() {
        let mut value = Hashed::new(vec![1]);
        let before = value.digest();
        value.push(2);
        assert_ne!(value.digest(), before);
        assert_eq!(value.digest(), Hashed::new(vec![1, 2]).digest());
    }
}
