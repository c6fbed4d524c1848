//! The kit's Mosquitto: restarts that keep or lose the sessions, and no broker outliving the
//! process that started it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use statestore_testkit::{within, Mosquitto, DEADLINE};

/// Set in the helper process of [`a_killed_process_leaves_no_broker_behind`].
const HELPER: &str = "STATESTORE_TESTKIT_BROKER_HELPER";

/// Connects with a session that outlives the connection; whether the broker had one.
async fn session_present(broker: &Mosquitto) -> bool {
    let mut options = MqttOptions::new("kept-session", "127.0.0.1", broker.port());
    options.set_clean_start(false);
    options.set_session_expiry_interval(Some(600));
    let (client, mut eventloop) = AsyncClient::new(options, 10);
    let present = within("CONNACK", async {
        loop {
            let event = eventloop.poll().await.expect("connects to mosquitto");
            if let Event::Incoming(Packet::ConnAck(connack)) = event {
                return connack.session_present;
            }
        }
    })
    .await;
    client.disconnect().await.expect("queue the DISCONNECT");
    within("end of the connection", async {
        while eventloop.poll().await.is_ok() {}
    })
    .await;
    present
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_broker_keeps_its_sessions_across_a_graceful_restart_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut broker = Mosquitto::start_persistent(dir.path()).expect("mosquitto");
    assert!(
        !session_present(&broker).await,
        "a fresh broker has no session"
    );
    assert!(
        session_present(&broker).await,
        "the session outlives its connection"
    );
    let port = broker.port();

    tokio::task::block_in_place(|| broker.restart_keeping_sessions()).expect("restart");
    assert_eq!(broker.port(), port);
    assert!(session_present(&broker).await, "kept across SIGTERM");

    tokio::task::block_in_place(|| broker.restart()).expect("restart");
    assert!(!session_present(&broker).await, "lost with SIGKILL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_without_persistence_loses_its_sessions_on_restart() {
    let mut broker = Mosquitto::start().expect("mosquitto");
    assert!(!session_present(&broker).await);
    assert!(session_present(&broker).await);
    tokio::task::block_in_place(|| broker.restart()).expect("restart");
    assert!(!session_present(&broker).await);
}

/// The helper process of [`a_killed_process_leaves_no_broker_behind`]: starts a broker, prints
/// its process id, and waits until its standard input closes (or it is killed).
#[test]
#[ignore = "run by a_killed_process_leaves_no_broker_behind, in a process of its own"]
fn broker_helper_process() {
    if std::env::var_os(HELPER).is_none() {
        return;
    }
    let broker = Mosquitto::start().expect("mosquitto");
    println!("broker pid {}", broker.pid().expect("running"));
    let mut rest = String::new();
    let _ = std::io::stdin().read_line(&mut rest);
}

#[test]
fn a_killed_process_leaves_no_broker_behind() {
    let mut helper = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "broker_helper_process",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(HELPER, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the helper");
    let stdout = BufReader::new(helper.stdout.take().expect("piped"));
    let pid: libc::pid_t = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("broker pid ").map(str::to_owned))
        .expect("the helper prints its broker's pid")
        .parse()
        .expect("a pid");
    // Held from now on, so that the check below is about this broker even if its number is
    // given to another process once it is gone.
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    assert!(
        pidfd >= 0,
        "pidfd_open: {}",
        std::io::Error::last_os_error()
    );

    // Killed: no destructor runs, nothing stops the broker but the kernel.
    helper.kill().expect("kill the helper");
    helper.wait().expect("reap the helper");

    let mut ended = libc::pollfd {
        fd: pidfd as libc::c_int,
        events: libc::POLLIN,
        revents: 0,
    };
    let wait_ms = libc::c_int::try_from(DEADLINE.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, for the duration of the call.
    let ready = unsafe { libc::poll(&mut ended, 1, wait_ms) };
    // SAFETY: the descriptor is ours and closed once.
    unsafe { libc::close(pidfd as libc::c_int) };
    if ready != 1 {
        // SAFETY: kill(2); the pid is still the broker's (it did not end).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(
        ready,
        1,
        "the broker (pid {pid}) outlived the process that started it by {:?}",
        Duration::from_millis(wait_ms as u64)
    );
}
