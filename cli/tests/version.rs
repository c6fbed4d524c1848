//! `statestore --version` prints the workspace version (root `Cargo.toml`), the one version of
//! every artefact.

mod support;

use support::{bare_command, check, finish, text};

/// `version` of `[workspace.package]` in the root `Cargo.toml`, read from the file so that a
/// crate not inheriting it fails here.
fn workspace_version() -> String {
    let manifest = include_str!("../../Cargo.toml");
    let section = manifest
        .split("[workspace.package]")
        .nth(1)
        .expect("a [workspace.package] section");
    section
        .lines()
        .take_while(|line| !line.starts_with('['))
        .find_map(|line| line.strip_prefix("version = "))
        .expect("a version in [workspace.package]")
        .trim_matches('"')
        .to_owned()
}

#[tokio::test]
async fn version_flag_prints_the_workspace_version() {
    let version = workspace_version();
    for flag in ["--version", "-V"] {
        let mut command = bare_command();
        command.arg(flag);
        let output = finish(command, b"").await;
        check(&output, 0, flag);
        assert_eq!(text(&output), format!("statestore {version}"), "{flag}");
    }
}
