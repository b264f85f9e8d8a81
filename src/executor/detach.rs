//! A run that outlives its caller: polled on the caller's task until the caller drops it, and then, unfinished, it
//! goes on in a task of its own. A spawned task per call costs more than most of a call, so a run moves only when
//! its caller goes away.

use opentelemetry::context::FutureExt as _;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// A run polled where it lies until dropped, then finished in a task of its own. Its caller polls it in the call's
/// trace context, so it attaches `otel`, that context, only once it runs on its own.
pub struct Detachable<T: Send + 'static> {
    run: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
    otel: opentelemetry::Context,
    /// What is lost if the runtime is stopping and the run cannot go on, for the log.
    if_abandoned: &'static str,
}

impl<T: Send + 'static> Detachable<T> {
    pub fn new(
        run: Pin<Box<dyn Future<Output = T> + Send>>,
        otel: opentelemetry::Context,
        if_abandoned: &'static str,
    ) -> Self {
        Self { run: Some(run), otel, if_abandoned }
    }
}

impl<T: Send + 'static> Future for Detachable<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let run = self.run.as_mut().expect("a finished run is not polled again");
        let output = ready!(run.as_mut().poll(cx));
        self.run = None;
        Poll::Ready(output)
    }
}

impl<T: Send + 'static> Drop for Detachable<T> {
    fn drop(&mut self) {
        let Some(run) = self.run.take() else { return };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(run.with_context(self.otel.clone()))),
            Err(_) => tracing::warn!("a call was abandoned as the runtime stopped: {}", self.if_abandoned),
        }
    }
}
