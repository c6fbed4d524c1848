//! The kit's SAT broker: which `K8S-SAT` tokens it accepts, in each of its two modes.

use statestore::{Authentication, Client, ConnectOptions, Error};
use statestore_testkit::tls::write_file;
use statestore_testkit::SatBroker;

async fn connect_with(broker: &SatBroker, token: &str) -> Result<Client, Error> {
    let dir = tempfile::tempdir().expect("temp dir");
    let options = ConnectOptions::new("127.0.0.1", broker.addr().port()).auth(
        Authentication::ServiceAccountToken {
            token_file: write_file(dir.path(), "token", token),
            check_interval: statestore::client::DEFAULT_TOKEN_CHECK_INTERVAL,
        },
    );
    Client::connect(options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_accepting_one_token_refuses_every_other() {
    let broker = SatBroker::accepting(b"the-token")
        .await
        .expect("SAT broker");
    connect_with(&broker, "the-token").await.expect("accepted");
    let refused = connect_with(&broker, "another").await.unwrap_err();
    assert!(matches!(refused, Error::Connection(_)), "{refused:?}");
    broker.presented(b"another").await;
    assert_eq!(
        broker.tokens(),
        [b"the-token".to_vec(), b"another".to_vec()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_accepts_every_token_it_was_not_told_to_refuse() {
    let broker = SatBroker::start().await.expect("SAT broker");
    connect_with(&broker, "first").await.expect("accepted");
    broker.refuse(b"second");
    let refused = connect_with(&broker, "second").await.unwrap_err();
    assert!(matches!(refused, Error::Connection(_)), "{refused:?}");
    connect_with(&broker, "third").await.expect("accepted");
}
