//! A sleep that sets one timer per deadline.
//!
//! madsim's `Sleep` adds a timer on every poll that finds it pending (madsim 0.2.34
//! src/sim/time/sleep.rs), so a sleep polled N times before its deadline leaves N timers, and
//! each of them wakes its task when it fires. A sleep inside a `select!` or a timeout is polled
//! every time its task wakes for anything else: openraft's core loop and the RPC timeouts wake
//! their tasks again and again for nothing. [`SimSleep`] sets its timer on the first pending
//! poll and only remembers the latest waker on the others; a reset sets a new one.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

/// Resolves at its deadline (true time), as madsim's `Sleep` does, with one timer per deadline.
pub struct SimSleep {
    inner: madsim::time::Sleep,
    /// The timer set for the current deadline, if any: the waker it will wake.
    armed: Option<Arc<Armed>>,
}

/// What a fired timer wakes: the task that polled the sleep last.
struct Armed {
    waker: Mutex<Option<Waker>>,
}

impl Wake for Armed {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(waker) = self.waker.lock().expect("sleep waker lock poisoned").take() {
            waker.wake();
        }
    }
}

impl SimSleep {
    /// Wraps madsim's sleep (which has already rounded its deadline up to 1 ms from now).
    pub fn new(inner: madsim::time::Sleep) -> SimSleep {
        SimSleep { inner, armed: None }
    }

    /// The instant at which the sleep resolves.
    pub fn deadline(&self) -> Instant {
        self.inner.deadline()
    }

    /// Moves the deadline to `deadline` exactly (madsim's `reset`: no rounding).
    pub fn reset(&mut self, deadline: Instant) {
        Pin::new(&mut self.inner).reset(deadline);
        self.armed = None;
    }
}

impl Future for SimSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.inner.is_elapsed() {
            return Poll::Ready(());
        }
        match &self.armed {
            Some(armed) => {
                let mut waker = armed.waker.lock().expect("sleep waker lock poisoned");
                match waker.as_ref() {
                    Some(current) if current.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            None => {
                let armed = Arc::new(Armed { waker: Mutex::new(Some(cx.waker().clone())) });
                let timer_waker = Waker::from(armed.clone());
                // Pending (not elapsed, checked above): madsim sets the timer.
                let _ = Pin::new(&mut self.inner).poll(&mut Context::from_waker(&timer_waker));
                self.armed = Some(armed);
                Poll::Pending
            }
        }
    }
}

impl std::fmt::Debug for SimSleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimSleep").field("deadline", &self.inner.deadline()).finish()
    }
}
