//! The connection's state as users see it: events when the broker goes away and comes back,
//! and giving up at the bounds of the reconnect policy.

use std::net::SocketAddr;
use std::time::Duration;

use statestore::{
    Client, ConnectOptions, ConnectionEvent, ConnectionEvents, ConnectionState, Error,
    ReconnectPolicy,
};
use statestore_server::{Mode, Server, ServerConfig};
use statestore_testkit as kit;

/// The shortest keep-alive MQTT clients may ask for here.
const KEEP_ALIVE: Duration = Duration::from_secs(5);

async fn server_on(listen: SocketAddr) -> Server {
    let config = ServerConfig {
        mode: Mode::Embedded { listen },
        ..ServerConfig::default()
    };
    Server::start(config)
        .await
        .unwrap_or_else(|e| panic!("cannot start the embedded state store on {listen}: {e}"))
}

fn options(addr: SocketAddr, policy: ReconnectPolicy) -> ConnectOptions {
    let mut options = kit::options(addr).reconnect(policy);
    options.keep_alive = KEEP_ALIVE;
    options
}

/// Delays short enough for tests.
fn quick_policy() -> ReconnectPolicy {
    ReconnectPolicy::new(Duration::from_millis(50), Duration::from_millis(200))
}

/// The next event in `state`, skipping others, within `deadline`.
async fn until_state(
    events: &mut ConnectionEvents,
    state: ConnectionState,
    deadline: Duration,
) -> ConnectionEvent {
    let wait = async {
        loop {
            match events.next().await {
                Some(event) if event.state == state => return event,
                Some(_) => continue,
                None => panic!("the connection events ended before {state}"),
            }
        }
    };
    match tokio::time::timeout(deadline, wait).await {
        Ok(event) => event,
        Err(_) => panic!("no {state} event within {deadline:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_broker_is_reconnecting_with_a_reason_then_connected_when_it_is_back() {
    let server = kit::embedded().await;
    let addr = server.local_addr();
    let client = Client::connect(options(addr, quick_policy()))
        .await
        .unwrap();
    assert_eq!(client.connection_state(), ConnectionState::Connected);
    let mut events = client.connection_events();

    server.shutdown().await;
    let dropped = until_state(&mut events, ConnectionState::Reconnecting, 2 * KEEP_ALIVE).await;
    let reason = dropped.reason.clone().expect("a reason");
    assert!(reason.contains(&addr.to_string()), "{reason}");
    assert_eq!(dropped.attempt, 1, "{dropped:?}");
    assert!(dropped.delay.is_some(), "{dropped:?}");
    assert_eq!(client.connection_state(), ConnectionState::Reconnecting);

    let _server = server_on(addr).await;
    let back = until_state(&mut events, ConnectionState::Connected, kit::DEADLINE).await;
    assert_eq!(back.reason, None);
    assert!(back.session_lost, "a new server has no session: {back:?}");
    kit::within("a call after the reconnect", client.get("k"))
        .await
        .unwrap();

    client.close().await.unwrap();
    let closed = until_state(&mut events, ConnectionState::Closed, kit::DEADLINE).await;
    assert_eq!(closed.state, ConnectionState::Closed);
    assert_eq!(events.next().await, None, "the stream ends after closed");
    assert_eq!(client.connection_events().next().await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_max_attempts_it_gives_up_and_waiting_calls_and_observations_end_at_once() {
    let server = kit::embedded().await;
    let addr = server.local_addr();
    let client = Client::connect(options(addr, quick_policy().max_attempts(2)))
        .await
        .unwrap();
    let mut observation = client.observe("watched").await.unwrap();
    let mut events = client.connection_events();

    server.shutdown().await;
    until_state(&mut events, ConnectionState::Reconnecting, 2 * KEEP_ALIVE).await;
    // A call with a long timeout waits for the connection...
    let waiting = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .get_with_timeout("k", Some(Duration::from_secs(3600)))
                .await
        }
    });
    let gave_up = until_state(&mut events, ConnectionState::GaveUp, kit::DEADLINE).await;
    assert_eq!(gave_up.attempt, 2, "{gave_up:?}");
    let reason = gave_up.reason.clone().expect("the last reason");
    assert!(reason.contains(&addr.to_string()), "{reason}");
    assert_eq!(client.connection_state(), ConnectionState::GaveUp);

    // ... and fails as soon as reconnecting gives up, naming the reason.
    let waited = kit::within("the waiting call", waiting).await.unwrap();
    match waited {
        Err(Error::Connection(text)) => {
            assert!(text.contains(&reason) && text.contains("gave up"), "{text}")
        }
        other => panic!("{other:?}"),
    }
    match kit::within("a later call", client.get("k")).await {
        Err(Error::Connection(text)) => assert!(text.contains(&reason), "{text}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        kit::within("the end of the observation", observation.next()).await,
        None
    );

    client.close().await.unwrap();
    until_state(&mut events, ConnectionState::Closed, kit::DEADLINE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_max_elapsed_it_gives_up() {
    let server = kit::embedded().await;
    let policy = quick_policy().max_elapsed(Duration::from_millis(300));
    let client = Client::connect(options(server.local_addr(), policy))
        .await
        .unwrap();
    let mut events = client.connection_events();
    server.shutdown().await;
    let gave_up = until_state(&mut events, ConnectionState::GaveUp, kit::DEADLINE).await;
    assert!(gave_up.attempt >= 1, "{gave_up:?}");
    match client.get("k").await {
        Err(Error::Connection(text)) => {
            assert!(text.contains("reconnect_max_elapsed"), "{text}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_blocking_client_iterates_changes_with_a_timeout() {
    let host = kit::host();
    let server = host.block_on(kit::embedded());
    let addr = server.local_addr();
    let client =
        statestore::blocking::Client::connect(options(addr, quick_policy().max_attempts(1)))
            .unwrap();
    let mut events = client.connection_events(Some(kit::DEADLINE));
    assert!(
        client
            .connection_events(Some(Duration::from_millis(1)))
            .next()
            .is_none(),
        "nothing changes while connected"
    );
    host.block_on(server.shutdown());
    let states: Vec<ConnectionState> = events
        .by_ref()
        .map(|e| e.state)
        .take_while(|state| *state != ConnectionState::GaveUp)
        .collect();
    assert!(
        states.iter().all(|s| *s == ConnectionState::Reconnecting),
        "{states:?}"
    );
    assert_eq!(client.connection_state(), ConnectionState::GaveUp);
    client.close().unwrap();
    assert_eq!(
        events.next().map(|e| e.state),
        Some(ConnectionState::Closed)
    );
    assert_eq!(events.next(), None);
}
