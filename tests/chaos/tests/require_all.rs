//! `run --require-all` (what CI runs) refuses to start when a flavour would be skipped, so a
//! binding that failed to build cannot pass the chaos run unnoticed.

use std::process::Command;

#[test]
fn a_skipped_flavour_fails_a_run_that_requires_all() {
    let output = Command::new(env!("CARGO_BIN_EXE_statestore-chaos"))
        .args([
            "run",
            "--duration",
            "1s",
            "--skip",
            "python-sync=not built here",
            "--require-all",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("python-sync (not built here)"), "{stderr}");
}
