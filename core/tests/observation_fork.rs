//! Observations after `fork`: one inherited from the parent fails clearly in the child
//! (`Error::Runtime`), like the blocking client, instead of waiting for events its
//! connection, left in the parent, never delivers.
//!
//! One test in its own binary: fork copies only the calling thread, so nothing else should
//! be running in this process.

use std::time::Duration;

use statestore::blocking::{Client, Election};
use statestore::Error;
use statestore_testkit as kit;

/// Exit codes of the child, one per check.
const OK: i32 = 0;
const OBSERVATION_NOT_REFUSED: i32 = 10;
const LEADER_OBSERVATION_NOT_REFUSED: i32 = 11;

/// Observations (of keys and of leadership) inherited by a forked child fail there instead of
/// reading state that the parent's runtime feeds.
#[test]
fn inherited_observations_fail_in_a_forked_child() {
    let host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = host.block_on(kit::embedded());
    let parent = Client::connect(kit::options(server.local_addr())).unwrap();
    let mut observation = parent.observe("k").unwrap();
    let election = Election::new(&parent, "leader", "parent", Duration::from_secs(30)).unwrap();
    let mut leadership = election.observe().unwrap();

    // SAFETY: the child only calls this library and `_exit`, never returning into the test
    // harness; the parent waits for it.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // Long enough that a wait which is not refused is plain in the exit code, not a hang.
        let wait = Duration::from_secs(2);
        let code = if !matches!(observation.next_timeout(wait), Err(Error::Runtime(_))) {
            OBSERVATION_NOT_REFUSED
        } else if !matches!(leadership.next_timeout(wait), Err(Error::Runtime(_))) {
            LEADER_OBSERVATION_NOT_REFUSED
        } else {
            OK
        };
        // SAFETY: ends the child without running the parent's destructors or harness.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid);
    assert!(libc::WIFEXITED(status), "child crashed: {status}");
    assert_eq!(
        libc::WEXITSTATUS(status),
        OK,
        "see the exit codes in this file"
    );

    // The parent's observations still work.
    assert!(leadership
        .next_timeout(Duration::from_secs(10))
        .unwrap()
        .is_some());
    parent
        .set("k", "v", statestore::SetOptions::default())
        .unwrap();
    assert!(observation.next_timeout(kit::DEADLINE).unwrap().is_some());
}
