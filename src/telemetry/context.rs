//! A future polled where it lies, in an OpenTelemetry context: `FutureExt::with_context` moves the future into its
//! wrapper, and a call's future is kilobytes, so each wrapping is a copy of them on every call.

use opentelemetry::Context;
use std::pin::Pin;
use std::task::Poll;

/// Polls `future` in `otel` each time it is polled, without moving it: pin it first (`std::pin::pin!`).
pub fn in_context<'a, F: Future>(otel: &'a Context, future: Pin<&'a mut F>) -> InContext<'a, F> {
    InContext { otel, future }
}

/// See [`in_context`].
pub struct InContext<'a, F> {
    otel: &'a Context,
    future: Pin<&'a mut F>,
}

impl<F: Future> Future for InContext<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<F::Output> {
        let _attached = self.otel.clone().attach();
        self.future.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::KeyValue;

    #[tokio::test]
    async fn the_future_runs_in_the_context_given_and_the_callers_is_back_after() {
        let otel = Context::current_with_value(KeyValue::new("call", "c-1"));
        let seen = std::pin::pin!(async {
            tokio::task::yield_now().await;
            Context::current().get::<KeyValue>().cloned()
        });
        assert_eq!(in_context(&otel, seen).await, Some(KeyValue::new("call", "c-1")));
        assert_eq!(Context::current().get::<KeyValue>(), None);
    }
}
