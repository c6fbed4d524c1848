//! The clients after `fork`: a client from the parent (blocking or async) fails clearly in the child, and
//! a client made in the child works (on a runtime of the child's own).
//!
//! One test in its own binary: fork copies only the calling thread, so nothing else should
//! be running in this process.

use statestore::blocking::Client;
use statestore::{Error, SetOptions};
use statestore_testkit as kit;

/// Exit codes of the child, one per check.
const OK: i32 = 0;
const PARENT_CLIENT_NOT_REFUSED: i32 = 10;
const CHILD_CONNECT_FAILED: i32 = 11;
const CHILD_CALL_FAILED: i32 = 12;
const PARENT_ASYNC_CLIENT_NOT_REFUSED: i32 = 13;
const PARENT_CLOSE_NOT_REFUSED: i32 = 14;

#[test]
fn the_blocking_client_works_in_a_forked_child() {
    let host = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = host.block_on(kit::embedded());
    let options = kit::options(server.local_addr());
    let parent = Client::connect(options.clone()).unwrap();
    parent
        .set("k", "from parent", SetOptions::default())
        .unwrap();

    // SAFETY: the child only calls this library and `_exit`, never returning into the test
    // harness; the parent waits for it.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = child(&parent, options);
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

    // The parent's client is unaffected, and sees the child's write.
    assert_eq!(parent.get("k").unwrap().unwrap().value, "from child");
}

fn child(parent: &Client, options: statestore::ConnectOptions) -> i32 {
    if !matches!(parent.get("k"), Err(Error::Runtime(_))) {
        return PARENT_CLIENT_NOT_REFUSED;
    }
    // The async client behind it, driven from the child's runtime, is refused too (the
    // bindings call it that way) rather than waiting for a connection that stayed behind.
    let inherited = statestore::runtime::block_on(parent.as_async().get("k"));
    if !matches!(inherited, Ok(Err(Error::Runtime(_)))) {
        return PARENT_ASYNC_CLIENT_NOT_REFUSED;
    }
    // Closing it is refused at once too, rather than waiting out the cleanup grace period for
    // the parent's tasks and then reporting success.
    let closed = statestore::runtime::block_on(parent.as_async().close());
    if !matches!(closed, Ok(Err(Error::Runtime(_)))) {
        return PARENT_CLOSE_NOT_REFUSED;
    }
    let Ok(client) = Client::connect(options) else {
        return CHILD_CONNECT_FAILED;
    };
    let read = client.get("k");
    let written = client.set("k", "from child", SetOptions::default());
    match (read, written) {
        (Ok(Some(value)), Ok(result)) if value.value == "from parent" && result.applied => {
            let _ = client.close();
            OK
        }
        _ => CHILD_CALL_FAILED,
    }
}
