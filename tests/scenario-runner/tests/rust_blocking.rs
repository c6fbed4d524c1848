//! Every shared scenario on the blocking client, against one in-process server.

#[test]
fn every_scenario_passes_on_the_blocking_client() {
    // The server runs on its own runtime; the scenarios call the blocking API from plain
    // threads, outside any runtime.
    let runtime = tokio::runtime::Runtime::new().expect("a runtime for the server");
    let server = runtime.block_on(statestore_testkit::embedded());
    statestore_scenarios::run_blocking::run_all(server.local_addr()).finish();
    drop(server);
}
