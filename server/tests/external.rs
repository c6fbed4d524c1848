//! External mode across a broker restart: the server reconnects (with backoff) and
//! subscribes again on the fresh session, and its state survives.

mod support;

use std::time::Duration;

use support::wire::{bulk, resp};
use support::{unique, Probe};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_again_after_the_broker_restarts() {
    let (mut broker, server) = statestore_testkit::on_mosquitto().await;
    let key = unique("key");
    let mut before = Probe::connect(broker.addr(), &unique("before")).await;
    before
        .request(&resp(&[b"SET", key.as_bytes(), b"kept"]))
        .await
        .expect(b"+OK\r\n");
    broker.restart().expect("mosquitto restarts");
    // Requests published before the server has subscribed again are lost with the old
    // broker's sessions: retry (bounded) until the server answers.
    let mut after = Probe::connect(broker.addr(), &unique("after")).await;
    let mut answered = None;
    for _ in 0..40 {
        answered = after
            .try_request(&resp(&[b"GET", key.as_bytes()]), Duration::from_millis(500))
            .await;
        if answered.is_some() {
            break;
        }
    }
    answered
        .expect("the server answers after the restart")
        .expect(&bulk(b"kept"));
    server.shutdown().await;
}
