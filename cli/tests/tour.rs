//! `statestore tour`: runs on its own in-process state store and shows every step.

mod support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tour_runs_every_step_and_exits_0() {
    let mut command = support::bare_command();
    command.arg("tour");
    let output = support::finish(command, b"").await;
    let transcript = String::from_utf8_lossy(&output.stdout);
    support::check(&output, 0, "tour");
    for expected in [
        "$ statestore set greeting hello",
        "\"encoding\":\"utf8\",\"value\":\"hello\"",
        "it exists (--nx)   [exit status 4]",
        "watch: \"greeting\" set \"bonjour\"",
        "fencing token",
        "a fencing token is required for this request",
        "watch: \"session\" deleted",
        "key \"greeting\" not found   [exit status 3]",
    ] {
        assert!(
            transcript.contains(expected),
            "{expected:?} in:\n{transcript}"
        );
    }
}
