//! The task that owns the engine: requests in, responses and notifications out, and the
//! expiry timer so keys expire (and observers hear of it) without any request arriving.

use std::time::Duration;

use statestore::protocol::hlc::unix_ms_now;
use statestore::protocol::{Response, ServiceError};
use tokio::sync::mpsc;
use tracing::{debug, error, info, warn};

use super::envelope::{self, Accepted};
use super::inbound::{Inbound, Input};
use super::outbound::{OutMessage, Outbound};
use crate::engine::{DurableChange, Engine, Notice, RequestContext};
use crate::persist::Durable;

/// Most inputs applied before their responses go out together.
const MAX_BATCH: usize = 256;

/// Serves requests until `input` closes (every adapter dropped its sender), then returns.
///
/// Inputs are taken in batches of what is already queued: all are applied, the batch's
/// changes to persisted keys are stored in one commit, and only then do its responses and
/// notifications go out, in order. So an acknowledged persisted write is stored (group
/// commit: one sync per batch), and no response reveals a persisted change that a crash
/// could still undo. Without durable storage a batch costs nothing but the queueing.
///
/// The expiry timer lives in the same loop: it is re-armed after every batch, so a sooner
/// deadline set by a SET is honoured at once.
pub(crate) async fn run(
    mut engine: Engine,
    durable: Option<Durable>,
    mut input: mpsc::Receiver<Input>,
    output: mpsc::Sender<Outbound>,
) {
    let mut sync_timer = durable
        .as_ref()
        .and_then(Durable::sync_interval)
        .map(|period| {
            let mut timer = tokio::time::interval(period);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            timer
        });
    let mut actor = Actor { output, durable };
    loop {
        let deadline = engine.next_expiry();
        tokio::select! {
            // A due sync first: requests would otherwise always win while the queue is not
            // empty, and under sustained load the interval policy would never sync. Then
            // requests: each request expires due keys itself, so the expiry timer only has
            // work to do when the store is idle.
            biased;
            () = tick(&mut sync_timer), if sync_timer.is_some() => actor.sync().await,
            next = input.recv() => {
                let Some(first) = next else { break };
                let mut batch = Batch::default();
                actor.take(&mut engine, first, &mut batch);
                while batch.inputs < MAX_BATCH {
                    match input.try_recv() {
                        Ok(next) => actor.take(&mut engine, next, &mut batch),
                        Err(_) => break,
                    }
                }
                actor.flush(batch).await;
            }
            () = sleep_until_wall_ms(deadline.unwrap_or(u64::MAX)), if deadline.is_some() => {
                let mut batch = Batch::default();
                let notices = engine.expire(unix_ms_now());
                batch.notify(&notices);
                batch.changes = engine.take_durable_changes();
                actor.flush(batch).await;
            }
        }
    }
    // A clean stop leaves nothing unsynced, whatever the policy.
    actor.sync().await;
    debug!("state store service stopped");
}

async fn tick(timer: &mut Option<tokio::time::Interval>) {
    match timer {
        Some(timer) => {
            timer.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Sleeps until the wall clock reaches `deadline_ms`, in steps of at least 1 ms so that a
/// deadline the monotonic clock reaches a little before the wall clock does not spin.
async fn sleep_until_wall_ms(deadline_ms: u64) {
    let now = unix_ms_now();
    if deadline_ms > now {
        tokio::time::sleep(Duration::from_millis(deadline_ms - now)).await;
    }
}

/// What a batch of inputs produced, held back until its durable changes are stored.
#[derive(Default)]
struct Batch {
    /// Responses, notifications and disconnects, in order.
    actions: Vec<Outbound>,
    /// Changes of persisted keys, oldest first.
    changes: Vec<DurableChange>,
    /// Positions in `actions` of the responses whose request changed a persisted key.
    durable_responses: Vec<usize>,
    /// Inputs taken.
    inputs: usize,
}

impl Batch {
    fn notify(&mut self, notices: &[Notice]) {
        self.actions.extend(
            notices
                .iter()
                .map(|notice| Outbound::Publish(OutMessage::notification(notice))),
        );
    }
}

struct Actor {
    output: mpsc::Sender<Outbound>,
    durable: Option<Durable>,
}

impl Actor {
    fn take(&mut self, engine: &mut Engine, input: Input, batch: &mut Batch) {
        batch.inputs += 1;
        match input {
            Input::Request(request) => Self::serve(engine, request, batch),
            Input::ClientGone(client_id) => {
                debug!(
                    client_id,
                    "client disconnected: dropping its KEYNOTIFY registrations"
                );
                engine.drop_client(&client_id);
            }
        }
    }

    fn serve(engine: &mut Engine, mut request: Inbound, batch: &mut Batch) {
        let accepted = match envelope::check(&mut request) {
            Ok(accepted) => accepted,
            Err(rejection) => {
                let sender = match &request.identity {
                    Ok(client_id) => client_id.as_str(),
                    Err(_) => "<unknown>",
                };
                warn!(sender, reason = rejection.reason, "rejected request");
                batch.actions.extend(rejection.actions);
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
        let changes = engine.take_durable_changes();
        if !changes.is_empty() {
            batch.durable_responses.push(batch.actions.len());
            batch.changes.extend(changes);
        }
        let response = OutMessage::response(
            response_topic,
            correlation_data,
            outcome.response.encode(),
            outcome.version.as_ref(),
        );
        batch.actions.push(Outbound::Publish(response));
        batch.notify(&outcome.notices);
    }

    /// Stores the batch's changes, then sends its actions. Requests whose change could not
    /// be stored are answered with an error instead (the change is retried with the next
    /// commit, so the disk catches up with memory once storage works again).
    async fn flush(&mut self, mut batch: Batch) {
        if let (false, Some(durable)) = (batch.changes.is_empty(), self.durable.as_mut()) {
            if let Err(error) = durable.commit(batch.changes).await {
                error!(%error, "persisted writes could not be stored: answering them with an error");
                let answer = Response::Error(ServiceError::Unknown(format!(
                    "the write could not be persisted: {error}"
                )))
                .encode();
                for position in batch.durable_responses {
                    if let Some(Outbound::Publish(response)) = batch.actions.get_mut(position) {
                        response.replace_payload(answer.clone());
                    }
                }
            }
        }
        for action in batch.actions {
            self.send(action).await;
        }
    }

    async fn sync(&mut self) {
        if let Some(durable) = self.durable.as_mut() {
            if let Err(error) = durable.sync().await {
                error!(%error, "persisted writes could not be synced to disk");
            }
        }
    }

    async fn send(&mut self, action: Outbound) {
        // The publisher only goes away at shutdown, when nothing can be delivered anyway.
        if self.output.send(action).await.is_err() {
            debug!("publisher gone: dropping an outbound message");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use bytes::Bytes;

    use super::*;
    use crate::config::{FsyncPolicy, PersistenceConfig};
    use crate::engine::EngineConfig;
    use crate::service::{Inbound, UserProperties};

    fn persisted_set(n: u64) -> Input {
        Input::Request(Inbound {
            payload: Bytes::from_static(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"),
            qos: 1,
            response_topic: Some("replies".to_owned()),
            correlation_data: Some(Bytes::copy_from_slice(&n.to_be_bytes())),
            identity: Ok("writer".to_owned()),
            properties: UserProperties {
                persist: true,
                ..UserProperties::default()
            },
        })
    }

    /// With `--fsync interval`, the sync tick fires even though requests
    /// never stop coming (the input queue is never empty when the service looks at it).
    #[tokio::test(start_paused = true)]
    async fn the_sync_interval_holds_under_sustained_load() {
        let dir = tempfile::tempdir().expect("temp dir");
        let interval = Duration::from_millis(100);
        let config = PersistenceConfig {
            data_dir: dir.path().to_owned(),
            fsync: FsyncPolicy::Interval,
            fsync_interval: interval,
        };
        let (durable, _) = Durable::open(&config, "n").await.expect("opened");
        let syncs = durable.syncs();
        let engine = Engine::new(EngineConfig {
            persistence: true,
            ..EngineConfig::default()
        });
        let (input, input_rx) = mpsc::channel(4 * MAX_BATCH);
        let (output, mut output_rx) = mpsc::channel(1 << 16);
        let service = tokio::spawn(run(engine, Some(durable), input_rx, output));
        let drain = tokio::spawn(async move { while output_rx.recv().await.is_some() {} });

        // One thread: the queue is refilled to capacity whenever the service waits for a
        // commit, so every time it looks, requests are queued.
        let mut sent = 0;
        for _ in 0..40 {
            for _ in 0..4 * MAX_BATCH {
                input.send(persisted_set(sent)).await.expect("service runs");
                sent += 1;
            }
            tokio::time::advance(interval).await;
            if syncs.load(Ordering::SeqCst) >= 3 {
                break;
            }
        }
        let under_load = syncs.load(Ordering::SeqCst);
        drop(input);
        service.await.expect("service ends");
        drain.await.expect("drained");
        assert!(
            under_load >= 3,
            "{under_load} syncs while {sent} requests kept coming over {} intervals",
            sent / (4 * MAX_BATCH as u64)
        );
    }
}
