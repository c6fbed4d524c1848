//! The task that owns the engine: requests in, responses and notifications out, and the
//! expiry timer so keys expire (and observers hear of it) without any request arriving.

use std::time::Duration;

use statestore::protocol::hlc::unix_ms_now;
use statestore::protocol::Response;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::envelope::{self, Accepted};
use super::inbound::{Inbound, Input};
use super::outbound::{OutMessage, Outbound};
use crate::engine::{Engine, Notice, RequestContext};

/// Serves requests until `input` closes (every adapter dropped its sender), then returns.
/// The expiry timer lives in the same loop: it is re-armed after every request, so a sooner
/// deadline set by a SET is honoured at once.
pub(crate) async fn run(
    mut engine: Engine,
    mut input: mpsc::Receiver<Input>,
    output: mpsc::Sender<Outbound>,
) {
    let mut actor = Actor { output };
    loop {
        let deadline = engine.next_expiry();
        tokio::select! {
            // Requests first: each request expires due keys itself, so the timer only has
            // work to do when the store is idle.
            biased;
            next = input.recv() => match next {
                Some(Input::Request(request)) => actor.serve(&mut engine, request).await,
                Some(Input::ClientGone(client_id)) => {
                    debug!(client_id, "client disconnected: dropping its KEYNOTIFY registrations");
                    engine.drop_client(&client_id);
                }
                None => break,
            },
            () = sleep_until_wall_ms(deadline.unwrap_or(u64::MAX)), if deadline.is_some() => {
                let notices = engine.expire(unix_ms_now());
                actor.notify(&notices).await;
            }
        }
    }
    debug!("state store service stopped");
}

/// Sleeps until the wall clock reaches `deadline_ms`, in steps of at least 1 ms so that a
/// deadline the monotonic clock reaches a little before the wall clock does not spin.
async fn sleep_until_wall_ms(deadline_ms: u64) {
    let now = unix_ms_now();
    if deadline_ms > now {
        tokio::time::sleep(Duration::from_millis(deadline_ms - now)).await;
    }
}

struct Actor {
    output: mpsc::Sender<Outbound>,
}

impl Actor {
    async fn serve(&mut self, engine: &mut Engine, mut request: Inbound) {
        let accepted = match envelope::check(&mut request) {
            Ok(accepted) => accepted,
            Err(rejection) => {
                let sender = match &request.identity {
                    Ok(client_id) => client_id.as_str(),
                    Err(_) => "<unknown>",
                };
                warn!(sender, reason = rejection.reason, "rejected request");
                for action in rejection.actions {
                    self.send(action).await;
                }
                return;
            }
        };
        let Accepted {
            client_id,
            response_topic,
            correlation_data,
        } = accepted;
        let properties = &request.properties;
        let context = RequestContext {
            client_id: &client_id,
            timestamp: properties.timestamp.as_deref(),
            fencing_token: properties.fencing_token.as_deref(),
            persist: properties.persist,
            now_ms: unix_ms_now(),
        };
        let outcome = engine.apply_payload(&request.payload, &context);
        if let Response::Error(error) = &outcome.response {
            info!(client_id, error = %error, "request answered with an error");
        }
        let response = OutMessage::response(
            response_topic,
            correlation_data,
            outcome.response.encode(),
            outcome.version.as_ref(),
        );
        self.send(Outbound::Publish(response)).await;
        self.notify(&outcome.notices).await;
    }

    async fn notify(&mut self, notices: &[Notice]) {
        for notice in notices {
            self.send(Outbound::Publish(OutMessage::notification(notice)))
                .await;
        }
    }

    async fn send(&mut self, action: Outbound) {
        // The publisher only goes away at shutdown, when nothing can be delivered anyway.
        if self.output.send(action).await.is_err() {
            debug!("publisher gone: dropping an outbound message");
        }
    }
}
