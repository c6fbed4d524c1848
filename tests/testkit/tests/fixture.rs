//! The kit's fixture processes: the first line they print, and their end once their standard
//! input closes.

use std::process::Command;

use statestore_testkit::Fixture;

#[test]
fn a_fixture_prints_its_line_and_ends_when_dropped() {
    let mut command = Command::new("sh");
    // Serves until its standard input closes, then says so in a file.
    let dir = tempfile::tempdir().expect("temp dir");
    let ended = dir.path().join("ended");
    command.args([
        "-c",
        r#"echo "ready on 127.0.0.1:1234"; cat >/dev/null; echo done > "$1""#,
        "sh",
    ]);
    command.arg(&ended);
    let (fixture, line) = Fixture::start(command).expect("start");
    assert_eq!(line, "ready on 127.0.0.1:1234");
    assert!(!ended.exists(), "still serving");
    drop(fixture);
    // Dropping waited for the end: the file is there at once.
    assert_eq!(std::fs::read_to_string(&ended).expect("ended"), "done\n");
}

#[test]
fn a_fixture_that_ends_before_its_first_line_is_an_error() {
    let mut command = Command::new("sh");
    command.args(["-c", "exit 3"]);
    let error = Fixture::start(command).expect_err("no line");
    assert!(error.to_string().contains("first line"), "{error}");
}
