//! The async state store client.

mod backlog;
mod backoff;
mod batch;
mod call;
mod connect_error;
mod connection;
mod env;
mod envelope;
mod event_loop;
mod in_flight;
mod observe;
mod observers;
mod options;
mod scan;
mod session;
mod shared;
mod shown;
mod token_watch;
mod transport;
pub(crate) mod types;
mod url;
pub(crate) mod validate;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::AsyncClient;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

pub use backlog::LIMIT as OBSERVATION_QUEUE_LIMIT;
pub use connection::{ConnectionEvent, ConnectionEvents, ConnectionState};
pub use observe::Observation;
pub use options::{
    Authentication, ConnectOptions, ReconnectPolicy, TlsOptions, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_TIMEOUT, DEFAULT_TOKEN_CHECK_INTERVAL, MQTT_MAX_PACKET_SIZE,
};
pub use scan::Keys;
// Every public type of an operation (options, results) is in `types`; the glob carries a new one
// to this module and, through the crate root's glob, to `statestore::` without a list to extend.
pub use types::*;

use crate::protocol::{Request, Response, SetFlags};
use crate::{Error, Result};
use call::{invoke_get, unexpected, value_of, Answer, Invocation};
use event_loop::EventLoopTask;
use shared::{ClientInner, LinkState, Shared, Tracked};

/// Capacity of rumqttc's request channel: callers wait (within their timeout) when it is full.
const REQUEST_CHANNEL_CAPACITY: usize = 1024;
/// How long [`Client::close`] waits for the background tasks to finish.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Declares operations of [`Client`] once: each `pub async fn` becomes the async method and,
/// with the same rustdoc and arguments, the blocking twin on [`crate::blocking::Client`],
/// which runs it on the library's runtime. The twins are defined by the `blocking_twins!` macro
/// this emits and `blocking.rs` invokes, so that this module does not depend on `blocking`.
///
/// The twin's signature and rustdoc resolve in `blocking.rs`, which imports every name of the
/// crate root (and `Bytes`, `Duration`): name types and doc links by those names. rustfmt
/// leaves the bodies inside the macro call as written, so format them by hand.
macro_rules! operations {
    ($(
        $(#[$attr:meta])*
        pub async fn $name:ident(&$self:ident $(, $arg:ident: $ty:ty)* $(,)?) -> Result<$ret:ty>
        $body:block
    )*) => {
        impl Client {
            $(
                $(#[$attr])*
                pub async fn $name(&$self $(, $arg: $ty)*) -> Result<$ret> $body
            )*
        }

        macro_rules! blocking_twins {
            () => {
                impl Client {
                    $(
                        $(#[$attr])*
                        pub fn $name(&self $(, $arg: $ty)*) -> Result<$ret> {
                            self.run(self.as_async().$name($($arg),*))
                        }
                    )*
                }
            };
        }
        pub(crate) use blocking_twins;
    };
}

/// An async client of the state store, over one MQTT connection that it keeps alive.
///
/// Cheap to clone (all clones share the connection) and safe to share across threads. The
/// connection's background tasks run on the tokio runtime that called [`Client::connect`].
/// The connection closes with [`Client::close`], or when the last clone and the last
/// [`Observation`] are dropped.
///
/// Every call fails within its timeout (the client's default, 10 s unless set otherwise).
/// A call whose outcome is unknown (timeout, connection lost) fails with an error for which
/// [`Error::outcome_unknown`] is true: read the key before repeating a write.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("client_id", &self.client_id())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects with the settings of a connection URL
    /// (`mqtt://[user[:password]@]host[:port][?option=value&...]`, `mqtts://…` for TLS): see
    /// [`ConnectOptions::from_url`] for the URL and [`Client::connect`] for the rest.
    pub async fn connect_url(url: &str) -> Result<Client> {
        Self::connect(ConnectOptions::from_url(url)?).await
    }

    /// Connects to the broker and subscribes to the client's response and notification topics.
    ///
    /// Returns once the client can send requests, or fails with [`Error::InvalidArgument`]
    /// (bad options, unreadable files), [`Error::Connection`] (broker unreachable, connection
    /// or subscription refused, no answer within the default timeout) or [`Error::Runtime`]
    /// (not called within a tokio runtime). Later connection losses are repaired in the
    /// background.
    pub async fn connect(options: ConnectOptions) -> Result<Client> {
        let runtime = Handle::try_current().map_err(|_| {
            Error::Runtime(
                "the async client needs a tokio runtime; use statestore::blocking::Client \
                 outside one"
                    .into(),
            )
        })?;
        options.validate()?;
        let client_id = options
            .client_id
            .clone()
            .unwrap_or_else(shared::generate_client_id);
        // Reads the TLS, password and token files (and the system's CA certificates): file
        // work, so on the blocking pool, like the token watch's reads.
        let mqtt_options = {
            let (options, client_id) = (options.clone(), client_id.clone());
            runtime
                .spawn_blocking(move || transport::mqtt_options(&options, &client_id))
                .await
                .map_err(|e| {
                    Error::Runtime(format!("reading the connection files failed: {e}"))
                })??
        };
        let token = match &options.auth {
            Authentication::ServiceAccountToken {
                token_file,
                check_interval,
            } => {
                let first = mqtt_options.authentication_data().unwrap_or_default();
                Some((token_file.clone(), *check_interval, first))
            }
            _ => None,
        };
        let (mqtt, eventloop) = AsyncClient::new(mqtt_options, REQUEST_CHANNEL_CAPACITY);
        let shared = Arc::new(Shared::new(
            format!("{}:{}", options.host, options.port),
            client_id,
            options.default_timeout,
            mqtt,
            runtime.clone(),
        ));
        let (session_events, session_receiver) = mpsc::unbounded_channel();
        let mut tasks = Vec::with_capacity(3);
        let tokens = token.map(|(path, interval, first)| {
            let (sender, receiver) = watch::channel(first.clone());
            tasks.push(runtime.spawn(token_watch::watch_token(
                path,
                interval,
                first,
                sender,
                shared.cancel.clone(),
            )));
            receiver
        });
        tasks.push(runtime.spawn(session::run(
            shared.clone(),
            session_receiver,
            backoff::Backoff::new(options.reconnect),
        )));
        tasks.push(
            runtime.spawn(
                EventLoopTask {
                    shared: shared.clone(),
                    eventloop,
                    backoff: backoff::Backoff::new(options.reconnect),
                    session: session_events,
                    tokens,
                    resume_sessions: !options.session_expiry.is_zero(),
                    outage: None,
                }
                .run(),
            ),
        );
        let client = Client {
            inner: Arc::new(ClientInner {
                shared: shared.clone(),
                tasks: Mutex::new(tasks),
                max_in_flight: options.max_in_flight,
            }),
        };
        let mut link = shared.link.subscribe();
        let connected = tokio::time::timeout(
            options.default_timeout,
            link.wait_for(|state| !matches!(state, LinkState::Connecting)),
        )
        .await;
        let state = match connected {
            Ok(Ok(state)) => state.clone(),
            Ok(Err(_)) => LinkState::Closed,
            Err(_) => {
                return Err(connect_error::no_answer(
                    &shared.broker,
                    options.default_timeout,
                ))
            }
        };
        match state {
            LinkState::Ready => Ok(client),
            LinkState::Failed(error) => Err(error),
            LinkState::Closed | LinkState::Connecting => Err(Error::Closed),
        }
    }

    /// The MQTT client id (generated if the options had none).
    pub fn client_id(&self) -> &str {
        &self.inner.shared.client_id
    }

    /// The connection's state now.
    pub fn connection_state(&self) -> ConnectionState {
        self.inner.shared.status.current().state
    }

    /// The connection's state now, with the reason, attempt and delay of its last change.
    pub fn connection_status(&self) -> ConnectionEvent {
        self.inner.shared.status.current()
    }

    /// The changes of the connection's state from now on, one [`ConnectionEvent`] each: the
    /// connection dropped (`reconnecting`, with the reason, the attempt number and the delay
    /// before it; again after each failed attempt), came back (`connected`), reconnecting gave
    /// up at the bounds of the [`ReconnectPolicy`] (`gave_up`), or the client was closed
    /// (`closed`, after which the stream ends). The stream does not keep the client open.
    ///
    /// ```no_run
    /// # async fn demo(client: statestore::Client) {
    /// let mut events = client.connection_events();
    /// while let Some(event) = events.next().await {
    ///     println!("{} {:?}", event.state, event.reason);
    /// }
    /// # }
    /// ```
    pub fn connection_events(&self) -> ConnectionEvents {
        self.inner.shared.status.subscribe()
    }
}

operations! {
    /// Sets `key` to `value`.
    ///
    /// With a condition, `applied` says whether it held. The returned version is the key's
    /// new version — the fencing token to use when this SET took a lock.
    pub async fn set(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        options: SetOptions,
    ) -> Result<SetResult> {
        let key = key.into();
        validate::key(&key)?;
        let answer = self
            .inner
            .shared
            .call(set_invocation(key, value.into(), &options)?)
            .await?;
        set_result(answer)
    }

    /// The value of `key` and its version, or `None` if the key does not exist.
    pub async fn get(&self, key: impl Into<Bytes>) -> Result<Option<Value>> {
        self.get_with_timeout(key, None).await
    }

    /// Like [`Client::get`] with its own timeout (`None`: the client's default).
    ///
    /// A GET interrupted by a connection loss is sent again within its timeout.
    pub async fn get_with_timeout(
        &self,
        key: impl Into<Bytes>,
        timeout: Option<Duration>,
    ) -> Result<Option<Value>> {
        let key = key.into();
        validate::key(&key)?;
        value_of(self.inner.shared.call(invoke_get(key, timeout)).await?)
    }

    /// Deletes `key`.
    pub async fn delete(
        &self,
        key: impl Into<Bytes>,
        options: DeleteOptions,
    ) -> Result<DeleteResult> {
        let key = key.into();
        validate::key(&key)?;
        self.delete_request(Request::Del { key }, options).await
    }

    /// Deletes `key` only if it holds `value` (e.g. to release a lock one holds).
    pub async fn vdel(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        options: DeleteOptions,
    ) -> Result<DeleteResult> {
        let key = key.into();
        validate::key(&key)?;
        let value = value.into();
        self.delete_request(Request::VDel { key, value }, options)
            .await
    }

    /// The values of `keys` (each with its version, `None` for a missing key): one result
    /// per key, in the order of `keys`; duplicates are read once each.
    ///
    /// A batch is client-side: the protocol has no multi-key command, so each key is its own
    /// GET, pipelined with up to [`ConnectOptions::max_in_flight`] in flight. A key's failure
    /// (a timeout, a service error) is its own result's error; the call itself fails only with
    /// [`Error::InvalidArgument`] (an empty key, a request too large for the broker: the error
    /// names the item), in which case nothing was sent. Each GET has the client's default
    /// timeout. An empty batch sends nothing and returns an empty list.
    pub async fn get_many(
        &self,
        keys: impl IntoIterator<Item = impl Into<Bytes>>,
    ) -> Result<Vec<Result<Option<Value>>>> {
        self.get_many_with_timeout(keys, None).await
    }

    /// Like [`Client::get_many`], with the timeout of each GET (`None`: the client's default).
    pub async fn get_many_with_timeout(
        &self,
        keys: impl IntoIterator<Item = impl Into<Bytes>>,
        timeout: Option<Duration>,
    ) -> Result<Vec<Result<Option<Value>>>> {
        validate::optional_timeout(timeout)?;
        let gets = keys.into_iter().map(|key| invoke_get(key.into(), timeout));
        self.batch(gets, value_of).await
    }

    /// Sets each `(key, value)` of `items` with the same `options` (condition, expiry,
    /// fencing token, persistence, the timeout of each SET): one result per item, in the
    /// order of `items`. Pipelined and checked before sending as [`Client::get_many`]; a
    /// refused item (a fencing token too old for its key) is its own result's error.
    pub async fn set_many(
        &self,
        items: impl IntoIterator<Item = (impl Into<Bytes>, impl Into<Bytes>)>,
        options: SetOptions,
    ) -> Result<Vec<Result<SetResult>>> {
        options.validate()?;
        let sets = items
            .into_iter()
            .map(|(key, value)| set_invocation(key.into(), value.into(), &options))
            .collect::<Result<Vec<_>>>()?;
        self.batch(sets, set_result).await
    }

    /// Deletes each of `keys` with the same `options`: one result per key, in the order of
    /// `keys` (a key given twice is two DELs, of which one finds it). Pipelined and checked
    /// before sending as [`Client::get_many`].
    pub async fn delete_many(
        &self,
        keys: impl IntoIterator<Item = impl Into<Bytes>>,
        options: DeleteOptions,
    ) -> Result<Vec<Result<DeleteResult>>> {
        options.validate()?;
        let deletes = keys
            .into_iter()
            .map(|key| delete_invocation(Request::Del { key: key.into() }, &options));
        self.batch(deletes, |answer| delete_result("DEL", answer))
            .await
    }

    /// Observes `key`: the returned [`Observation`] yields a [`KeyEvent`] for each change.
    ///
    /// Observations of one key share one registration with the service. After a reconnect
    /// every observation is re-registered and receives [`KeyEvent::Resynced`] with the key's
    /// current state, since changes made while disconnected are not notified.
    pub async fn observe(&self, key: impl Into<Bytes>) -> Result<Observation> {
        let key = key.into();
        validate::key(&key)?;
        self.bounded(observe::observe(&self.inner, key)).await
    }

    /// Ends every observation of `key` on this client (their streams end) and stops its
    /// registration with the service. Does nothing if the key is not observed; fails with
    /// [`Error::Closed`] once the client is closed, like every other call.
    pub async fn unobserve(&self, key: impl Into<Bytes>) -> Result<()> {
        let key = key.into();
        validate::key(&key)?;
        if self.is_closed() {
            return Err(Error::Closed);
        }
        self.bounded(observe::unobserve(&self.inner.shared, key))
            .await
    }

    /// Closes the client (all clones): calls in flight fail with [`Error::Closed`],
    /// observations end, and the MQTT session is closed with DISCONNECT. Idempotent.
    ///
    /// With a session expiry (the default), the broker keeps the session after DISCONNECT; the
    /// client unsubscribes from its response and notification topics first, so that the kept
    /// session holds nothing for the broker to match messages against or queue.
    ///
    /// Lease and lock acquisitions in progress end first, with [`Error::Closed`], while the
    /// connection is still up: an attempt whose SET may have applied is undone with `VDEL`, so
    /// a lock is not left taken by a closed client until its TTL ends. That undoing and the
    /// cleanups that drops left to the background (releasing a dropped lease or lock guard,
    /// stopping the registration of a dropped observation) get up to two seconds to finish.
    ///
    /// In a forked child, a client of the parent fails with [`Error::Runtime`] at once: its
    /// connection and tasks stayed in the parent, which this must not disturb.
    pub async fn close(&self) -> Result<()> {
        crate::runtime::ensure_created_here(self.inner.shared.pid, "client")?;
        self.inner.shared.closing.cancel();
        let _ = tokio::time::timeout(CLOSE_GRACE, self.inner.shared.cleanups_done()).await;
        self.inner.shared.shutdown();
        let tasks =
            std::mem::take(&mut *self.inner.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        for task in tasks {
            // A task that does not finish in time is left to finish on its own.
            let _ = tokio::time::timeout(CLOSE_GRACE, task).await;
        }
        Ok(())
    }
}

impl Client {
    async fn delete_request(
        &self,
        request: Request,
        options: DeleteOptions,
    ) -> Result<DeleteResult> {
        let verb = request.verb();
        let answer = self
            .inner
            .shared
            .call(delete_invocation(request, &options))
            .await?;
        delete_result(verb, answer)
    }

    /// Checks every request of a batch, then sends them pipelined; see [`batch`].
    async fn batch<T: Send + 'static>(
        &self,
        invocations: impl IntoIterator<Item = Invocation>,
        answer: impl Fn(Answer) -> Result<T> + Send + 'static,
    ) -> Result<Vec<Result<T>>> {
        let shared = &self.inner.shared;
        let requests = batch::prepare(shared, invocations)?;
        batch::run_as_task(shared.clone(), requests, self.inner.max_in_flight, answer).await
    }

    /// The keys matching a glob `pattern`, fetched page by page as they are consumed (no
    /// request is sent before the first key is asked for).
    ///
    /// Patterns follow the service's dialect (the Rust `glob` crate's `Pattern`): `*`, `?`,
    /// `[abc]`, `[a-z]`; `[!0-9]` negates (`[^0-9]` does not: `^` is a member); `[*]` matches a
    /// literal `*`; a backslash is no escape. `*` lists every key; `user:*` the keys starting
    /// with `user:`. An empty pattern is [`Error::InvalidArgument`]; a pattern the service
    /// rejects (an unclosed `[`) fails with its error. Needs a service that knows `SCAN`
    /// (newer versions).
    pub fn keys(&self, pattern: impl Into<Bytes>) -> Result<Keys> {
        Keys::new(&self.inner, pattern.into())
    }

    /// Every key matching `pattern` (see [`Client::keys`]), collected.
    pub async fn keys_all(&self, pattern: impl Into<Bytes>) -> Result<Vec<Bytes>> {
        self.keys(pattern)?.collect_all().await
    }

    /// Counts a lease acquisition as work [`Client::close`] waits for (bounded), and tells
    /// when close begins: the acquisition then stops, and its undoing still goes out.
    pub(crate) fn track_acquisition(&self) -> (Tracked, CancellationToken) {
        (self.inner.shared.track(), self.inner.shared.closing.clone())
    }

    /// Runs `cleanup` in the background; [`Client::close`] waits for it (bounded).
    pub(crate) fn spawn_cleanup(
        &self,
        cleanup: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        self.inner.shared.spawn_cleanup(cleanup);
    }

    /// Bounds a call that may also wait for other registrations by the default timeout.
    async fn bounded<T>(&self, call: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        let timeout = self.inner.shared.default_timeout;
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or(Err(Error::Timeout(timeout)))
    }

    /// Whether the client has been closed.
    pub fn is_closed(&self) -> bool {
        self.inner.shared.is_closed()
    }
}

/// The SET of `key` to `value` with `options`.
fn set_invocation(key: Bytes, value: Bytes, options: &SetOptions) -> Result<Invocation> {
    let flags = SetFlags {
        condition: options.condition,
        expiry_ms: validate::expiry_ms(options.expiry)?,
    };
    Ok(Invocation {
        request: Request::Set { key, value, flags },
        fencing_token: options.fencing_token.clone(),
        persist: options.persist,
        timeout: options.timeout,
        idempotent: false,
    })
}

/// What a SET's answer says.
fn set_result(answer: Answer) -> Result<SetResult> {
    let applied = match answer.response {
        Response::Ok => true,
        Response::Integer(-1) => false,
        other => return Err(unexpected("SET", &other)),
    };
    Ok(SetResult {
        applied,
        version: answer.version,
    })
}

/// A DEL or VDEL `request` with `options`.
fn delete_invocation(request: Request, options: &DeleteOptions) -> Invocation {
    Invocation {
        request,
        fencing_token: options.fencing_token.clone(),
        persist: false,
        timeout: options.timeout,
        idempotent: false,
    }
}

/// What the answer to a DEL or VDEL (`verb`) says.
fn delete_result(verb: &str, answer: Answer) -> Result<DeleteResult> {
    let outcome = match (&answer.response, verb) {
        (Response::Integer(1), _) => DeleteOutcome::Deleted,
        (Response::Integer(0), _) => DeleteOutcome::NotFound,
        (Response::Integer(-1), "VDEL") => DeleteOutcome::ValueMismatch,
        (other, verb) => return Err(unexpected(verb, other)),
    };
    Ok(DeleteResult {
        outcome,
        version: answer.version,
    })
}
