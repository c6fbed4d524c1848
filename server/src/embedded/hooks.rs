//! Broker events the state store needs: client disconnects (KEYNOTIFY registrations go).

use std::future::Future;
use std::pin::Pin;

use mqtt5::broker::{BrokerEventHandler, ClientDisconnectEvent};
use tokio::sync::mpsc;

/// Reports every client disconnect on a channel. The broker awaits hooks inside the
/// connection's task, so this one only does a non-blocking send.
pub(crate) struct DisconnectHook {
    gone: mpsc::UnboundedSender<String>,
}

impl DisconnectHook {
    /// A hook and the receiver of the ids of disconnected clients.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<String>) {
        let (gone, receiver) = mpsc::unbounded_channel();
        (Self { gone }, receiver)
    }
}

impl BrokerEventHandler for DisconnectHook {
    fn on_client_disconnect<'a>(
        &'a self,
        event: ClientDisconnectEvent,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        // After shutdown nobody listens any more: nothing to do then.
        let _ = self.gone.send(event.client_id.to_string());
        Box::pin(async {})
    }
}
