//! A deterministic watch channel (single value, many receivers) for openraft.
//!
//! Why not tokio's `sync::watch`: it wakes receivers through one of several notify shards chosen
//! by a thread-local RNG whose seed comes from a process-global counter, so two simulations of
//! the same seed in one process diverge (measured: madsim's determinism check failed on 12 of 20
//! seeds). Here every receiver waits on one plain `Notify`, which holds no randomness.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use openraft_rt::watch::{RecvError, SendError, Watch, WatchReceiver, WatchSender};
use openraft_rt::{OptionalSend, OptionalSync};
use tokio::sync::Notify;

/// Marker type: the watch implementation of [`super::MadsimRuntime`].
pub struct SimWatch;

struct Shared<T> {
    value: RwLock<T>,
    /// Bumped on every visible change; a receiver has seen version `seen`.
    version: AtomicU64,
    senders: AtomicUsize,
    receivers: AtomicUsize,
    closed: AtomicBool,
    changed: Notify,
}

impl<T> Shared<T> {
    fn read(&self) -> RwLockReadGuard<'_, T> {
        // A poisoned lock means a panic while writing: the simulation is already over.
        self.value.read().expect("watch value lock poisoned")
    }

    fn publish(&self) {
        self.version.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }
}

pub struct SimWatchSender<T> {
    shared: Arc<Shared<T>>,
}

pub struct SimWatchReceiver<T> {
    shared: Arc<Shared<T>>,
    seen: u64,
}

impl Watch for SimWatch {
    type Sender<T: OptionalSend + OptionalSync> = SimWatchSender<T>;
    type Receiver<T: OptionalSend + OptionalSync> = SimWatchReceiver<T>;
    type Ref<'a, T: OptionalSend + 'a> = RwLockReadGuard<'a, T>;

    fn channel<T: OptionalSend + OptionalSync>(init: T) -> (Self::Sender<T>, Self::Receiver<T>) {
        let shared = Arc::new(Shared {
            value: RwLock::new(init),
            version: AtomicU64::new(0),
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
            closed: AtomicBool::new(false),
            changed: Notify::new(),
        });
        let receiver = SimWatchReceiver { shared: shared.clone(), seen: 0 };
        (SimWatchSender { shared }, receiver)
    }
}

impl<T> Clone for SimWatchSender<T> {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::SeqCst);
        SimWatchSender { shared: self.shared.clone() }
    }
}

impl<T> Drop for SimWatchSender<T> {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.shared.closed.store(true, Ordering::SeqCst);
            self.shared.changed.notify_waiters();
        }
    }
}

impl<T> Clone for SimWatchReceiver<T> {
    fn clone(&self) -> Self {
        self.shared.receivers.fetch_add(1, Ordering::SeqCst);
        SimWatchReceiver { shared: self.shared.clone(), seen: self.seen }
    }
}

impl<T> Drop for SimWatchReceiver<T> {
    fn drop(&mut self) {
        self.shared.receivers.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<T: OptionalSend + OptionalSync> WatchSender<SimWatch, T> for SimWatchSender<T> {
    fn send(&self, value: T) -> Result<(), SendError<T>> {
        // Same contract as tokio: sending fails once every receiver is gone.
        if self.shared.receivers.load(Ordering::SeqCst) == 0 {
            return Err(SendError(value));
        }
        *self.shared.value.write().expect("watch value lock poisoned") = value;
        self.shared.publish();
        Ok(())
    }

    fn send_if_modified<F>(&self, modify: F) -> bool
    where
        F: FnOnce(&mut T) -> bool,
    {
        let modified = {
            let mut value = self.shared.value.write().expect("watch value lock poisoned");
            modify(&mut value)
        };
        if modified {
            self.shared.publish();
        }
        modified
    }

    fn borrow_watched(&self) -> RwLockReadGuard<'_, T> {
        self.shared.read()
    }

    fn subscribe(&self) -> SimWatchReceiver<T> {
        self.shared.receivers.fetch_add(1, Ordering::SeqCst);
        let seen = self.shared.version.load(Ordering::SeqCst);
        SimWatchReceiver { shared: self.shared.clone(), seen }
    }
}

impl<T: OptionalSend + OptionalSync> WatchReceiver<SimWatch, T> for SimWatchReceiver<T> {
    async fn changed(&mut self) -> Result<(), RecvError> {
        loop {
            let notified = self.shared.changed.notified();
            let mut notified = std::pin::pin!(notified);
            // Register before checking, so a send between the check and the await is not lost.
            notified.as_mut().enable();
            let version = self.shared.version.load(Ordering::SeqCst);
            if version != self.seen {
                self.seen = version;
                return Ok(());
            }
            if self.shared.closed.load(Ordering::SeqCst) {
                return Err(RecvError(()));
            }
            notified.await;
        }
    }

    fn borrow_watched(&self) -> RwLockReadGuard<'_, T> {
        self.shared.read()
    }

    fn borrow_and_update(&mut self) -> RwLockReadGuard<'_, T> {
        let guard = self.shared.read();
        self.seen = self.shared.version.load(Ordering::SeqCst);
        guard
    }
}
