//! A named timeout future: openraft's runtime trait needs a concrete type, and madsim's
//! `time::timeout` returns an opaque `impl Future`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use madsim::time::Sleep;
use madsim::time::error::Elapsed;

/// Resolves to the inner future's output, or `Elapsed` once `sleep` fires first.
pub struct Timeout<F> {
    future: Pin<Box<F>>,
    sleep: Pin<Box<Sleep>>,
}

impl<F> Timeout<F> {
    pub(super) fn new(future: F, sleep: Sleep) -> Self {
        Timeout { future: Box::pin(future), sleep: Box::pin(sleep) }
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The future goes first, as in tokio: a result ready at the deadline still counts.
        if let Poll::Ready(output) = self.future.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match self.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    }
}
