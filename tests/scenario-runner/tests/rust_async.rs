//! Every shared scenario on the async client, against one in-process server.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_passes_on_the_async_client() {
    let server = statestore_testkit::embedded().await;
    statestore_scenarios::run_async::run_all(server.local_addr())
        .await
        .finish();
}
