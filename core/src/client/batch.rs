//! Batches: many keys in one call ([`Client::get_many`](super::Client::get_many),
//! [`Client::set_many`](super::Client::set_many), [`Client::delete_many`](super::Client::delete_many)).
//!
//! The protocol has no multi-key command (the service's authors deferred MGET), so a batch is
//! one request per key, pipelined: up to
//! [`ConnectOptions::max_in_flight`](super::ConnectOptions::max_in_flight) requests wait for
//! their answers at once instead of one round trip after another. Every request is encoded and
//! checked before the first is sent, so that bad input sends nothing.
//!
//! The pipelining runs as a task of its own on the runtime the call is made in (the library's
//! runtime for the blocking client and the bindings), beside the connection's event loop: a
//! caller waiting on another thread is woken once, for the whole batch, rather than for every
//! group of answers. Dropping the call aborts the task, so a cancelled batch stops sending.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::{FuturesOrdered, StreamExt};
use tokio_util::task::AbortOnDropHandle;

use super::call::{Answer, Invocation};
use super::shared::Shared;
use super::shown::ShownKey;
use super::validate;
use crate::{Error, Result};

/// One request of a batch, encoded and checked.
pub(crate) struct Prepared {
    invocation: Invocation,
    payload: Bytes,
}

/// Encodes and checks every request of a batch (non-empty key, size within the broker's
/// maximum packet) before any is sent. The first bad one fails the batch with an
/// [`Error::InvalidArgument`] naming its index and key.
pub(crate) fn prepare(
    shared: &Shared,
    invocations: impl IntoIterator<Item = Invocation>,
) -> Result<Vec<Prepared>> {
    invocations
        .into_iter()
        .enumerate()
        .map(|(index, invocation)| {
            let checked = validate::key(invocation.request.key()).and_then(|()| {
                let payload = invocation.request.encode();
                shared.check_size(&invocation, &payload).map(|()| payload)
            });
            match checked {
                Ok(payload) => Ok(Prepared {
                    invocation,
                    payload,
                }),
                Err(error) => Err(at_item(index, invocation.request.key(), error)),
            }
        })
        .collect()
}

/// Sends `requests` with at most `limit` in flight and turns each answer into its result with
/// `answer`. The results are in the order of `requests`, one each: a failed request is its
/// own result's error, never the batch's.
pub(crate) async fn run<T>(
    shared: &Shared,
    requests: &[Prepared],
    limit: usize,
    answer: impl Fn(Answer) -> Result<T>,
) -> Vec<Result<T>> {
    // A queue fed by hand rather than `buffered` over a closure: the closure's borrows made the
    // future lose `Send` (rustc cannot prove it for every lifetime), and callers spawn it.
    let mut waiting = requests.iter();
    let mut in_flight = FuturesOrdered::new();
    for request in waiting.by_ref().take(limit) {
        in_flight.push_back(send(shared, request));
    }
    let mut results = Vec::with_capacity(requests.len());
    while let Some(result) = in_flight.next().await {
        results.push(result.and_then(&answer));
        if let Some(request) = waiting.next() {
            in_flight.push_back(send(shared, request));
        }
    }
    results
}

/// [`run`] as a task of its own on the current runtime; the returned future aborts it when
/// dropped. A panic in the task resumes in the caller, as it would have in [`run`] itself.
pub(crate) async fn run_as_task<T: Send + 'static>(
    shared: Arc<Shared>,
    requests: Vec<Prepared>,
    limit: usize,
    answer: impl Fn(Answer) -> Result<T> + Send + 'static,
) -> Result<Vec<Result<T>>> {
    let task = tokio::spawn(async move { run(&shared, &requests, limit, answer).await });
    match AbortOnDropHandle::new(task).await {
        Ok(results) => Ok(results),
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // Only a runtime shutting down cancels the task while its caller still waits.
        Err(_) => Err(Error::Closed),
    }
}

async fn send(shared: &Shared, request: &Prepared) -> Result<Answer> {
    shared
        .call_encoded(&request.invocation, &request.payload)
        .await
}

/// `error`, for the batch item at `index` with `key`: an argument error names the item.
fn at_item(index: usize, key: &Bytes, error: Error) -> Error {
    match error {
        Error::InvalidArgument(text) => Error::InvalidArgument(format!(
            "batch item {index} (key \"{}\"): {text}; nothing was sent",
            ShownKey(key)
        )),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_error_names_the_item_and_a_shortened_key() {
        let error = at_item(
            3,
            &Bytes::from(vec![b'k'; 100]),
            Error::InvalidArgument("too big".into()),
        );
        let text = error.to_string();
        assert!(text.contains("batch item 3"), "{text}");
        assert!(
            text.contains(&format!("\"{}...\"", "k".repeat(64))),
            "{text}"
        );
        assert!(text.contains("nothing was sent"), "{text}");
        let binary = at_item(
            0,
            &Bytes::from_static(b"a\r\n\xff"),
            Error::InvalidArgument("x".into()),
        );
        assert!(binary.to_string().contains(r#""a\r\n\xff""#), "{binary}");
        assert!(matches!(
            at_item(0, &Bytes::new(), Error::Closed),
            Error::Closed
        ));
    }
}
