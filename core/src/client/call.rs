//! One request/response exchange: envelope, size check, correlation, timeout, and the checks
//! on the response.

use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use rumqttc::v5::mqttbytes::QoS;

use super::envelope::{self, RequestMeta};
use super::in_flight::{Reply, CORRELATION_LEN};
use super::shared::Shared;
use super::shown::{ShownKey, ShownResponse};
use super::types::Value;
use super::validate;
use crate::protocol::{topics, Hlc, Request, Response};
use crate::{Error, Result};

/// One invocation of the state store's command: the request and how to send it.
pub(crate) struct Invocation {
    pub(crate) request: Request,
    pub(crate) fencing_token: Option<Hlc>,
    pub(crate) persist: bool,
    pub(crate) timeout: Option<Duration>,
    /// Re-send when the connection was lost with the request in flight (reads only: doing a
    /// write twice could apply it twice).
    pub(crate) idempotent: bool,
}

/// A successful response.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) response: Response,
    /// The key's version (`__ts`).
    pub(crate) version: Option<Hlc>,
}

impl Shared {
    /// Sends `invocation` and waits for its response, at most the invocation's timeout.
    pub(crate) async fn call(&self, invocation: Invocation) -> Result<Answer> {
        let payload = invocation.request.encode();
        self.call_encoded(&invocation, &payload).await
    }

    /// [`Shared::call`] with the request already encoded as `payload`.
    pub(crate) async fn call_encoded(
        &self,
        invocation: &Invocation,
        payload: &Bytes,
    ) -> Result<Answer> {
        crate::runtime::ensure_created_here(self.pid, "client")?;
        let timeout = validate::timeout(invocation.timeout.unwrap_or(self.default_timeout))?;
        let result = match tokio::time::timeout(
            timeout,
            self.attempts(invocation, payload, timeout),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout(timeout)),
        };
        if let Err(error) = &result {
            let request = &invocation.request;
            tracing::debug!(
                verb = request.verb(),
                key = %ShownKey(request.key()),
                %error,
                "request failed"
            );
        }
        result
    }

    /// Fails as [`Shared::call`] would for a request larger than the broker's maximum packet
    /// size, without sending it: a batch checks every request before it sends the first.
    pub(crate) fn check_size(&self, invocation: &Invocation, payload: &Bytes) -> Result<()> {
        let timeout = invocation.timeout.unwrap_or(self.default_timeout);
        // The correlation data's length is fixed; the clock's current reading is as long as
        // the timestamp that will be sent, to within a digit of its counter.
        let correlation = Bytes::from_static(&[0; CORRELATION_LEN]);
        let properties = self.properties(invocation, correlation, &self.clock.current(), timeout);
        validate::packet_size(
            envelope::request_packet_size(&properties, payload.len()),
            self.broker_max_packet(),
        )
    }

    fn properties(
        &self,
        invocation: &Invocation,
        correlation: Bytes,
        timestamp: &Hlc,
        timeout: Duration,
    ) -> PublishProperties {
        envelope::request_properties(
            &self.client_id,
            &self.response_topic,
            RequestMeta {
                correlation,
                timestamp,
                fencing_token: invocation.fencing_token.as_ref(),
                persist: invocation.persist,
                timeout,
            },
        )
    }

    async fn attempts(
        &self,
        invocation: &Invocation,
        payload: &Bytes,
        timeout: Duration,
    ) -> Result<Answer> {
        loop {
            self.wait_ready().await?;
            let (guard, reply) = self.in_flight.register()?;
            let timestamp = self.clock.next()?;
            let properties =
                self.properties(invocation, guard.correlation_data(), &timestamp, timeout);
            validate::packet_size(
                envelope::request_packet_size(&properties, payload.len()),
                self.broker_max_packet(),
            )?;
            self.mqtt
                .publish_with_properties(
                    topics::INVOKE_TOPIC,
                    QoS::AtLeastOnce,
                    false,
                    payload.clone(),
                    properties,
                )
                .await
                .map_err(|_| Error::Closed)?;
            let request = &invocation.request;
            tracing::trace!(
                verb = request.verb(),
                key = %ShownKey(request.key()),
                bytes = payload.len(),
                "request sent"
            );
            match reply.await {
                Ok(Ok(reply)) => {
                    let answer = self.answer(reply)?;
                    tracing::trace!(
                        verb = request.verb(),
                        key = %ShownKey(request.key()),
                        response = %ShownResponse(&answer.response),
                        "response received"
                    );
                    return Ok(answer);
                }
                Ok(Err(Error::ConnectionLost)) if invocation.idempotent => {
                    tracing::debug!("connection lost during a read: sending it again");
                }
                Ok(Err(error)) => return Err(error),
                Err(_) => return Err(Error::Closed),
            }
        }
    }

    /// Checks and decodes a response.
    fn answer(&self, reply: Reply) -> Result<Answer> {
        let properties = reply.properties.as_ref();
        envelope::check_status(properties)?;
        let version = envelope::version(properties);
        self.observe_version(version.as_ref());
        match Response::decode(&reply.payload)? {
            Response::Error(error) => Err(Error::Service(error)),
            response => Ok(Answer { response, version }),
        }
    }

    /// Merges a received version into the clock. A version that cannot be merged (too far
    /// ahead) is logged, never turned into an error: the request it came with succeeded.
    pub(crate) fn observe_version(&self, version: Option<&Hlc>) {
        if let Some(version) = version {
            if let Err(error) = self.clock.observe(version) {
                tracing::warn!(%version, %error, "cannot merge a version from the state store into the client's clock");
            }
        }
    }
}

/// A GET of `key`: a read, so sent again when the connection is lost with it in flight.
pub(crate) fn invoke_get(key: Bytes, timeout: Option<Duration>) -> Invocation {
    Invocation {
        request: Request::Get { key },
        fencing_token: None,
        persist: false,
        timeout,
        idempotent: true,
    }
}

/// The value a GET answered, `None` for an absent key.
pub(crate) fn value_of(answer: Answer) -> Result<Option<Value>> {
    match answer.response {
        Response::Nil => Ok(None),
        Response::Value(value) => Ok(Some(Value {
            value,
            version: answer.version,
        })),
        other => Err(unexpected("GET", &other)),
    }
}

/// The error for a response that does not fit the request `verb`.
pub(crate) fn unexpected(verb: &str, response: &Response) -> Error {
    Error::UnexpectedPayload(format!("unexpected answer to {verb}: {response:?}"))
}
