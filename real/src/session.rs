//! A client's view of its session: alive until the client library tells it otherwise.
//!
//! As in the simulator (sim/src/client/session.rs), the application checks its session before
//! each write and stops a hold when the session ends, but it cannot know of an expiry that its
//! keepalive loop (etcd) or its ZooKeeper connection has not yet learned from a server: after a
//! pause, the first write goes out on the old belief. That gap is what the checkers judge.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

#[derive(Clone, Default)]
pub struct SessionWatch {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    ended: Mutex<Option<String>>,
    notify: Notify,
}

impl SessionWatch {
    /// Why the session ended, once it has.
    pub fn ended(&self) -> Option<String> {
        self.inner.ended.lock().expect("session lock poisoned").clone()
    }

    /// Ends the session (the first reason stays).
    pub fn end(&self, reason: impl Into<String>) {
        let mut ended = self.inner.ended.lock().expect("session lock poisoned");
        if ended.is_none() {
            *ended = Some(reason.into());
        }
        drop(ended);
        self.inner.notify.notify_waiters();
    }

    /// Resolves once the session has ended.
    pub async fn wait_end(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.ended().is_some() {
                return;
            }
            notified.await;
        }
    }
}
