//! Child processes that never outlive their test: started so that the kernel kills them with
//! the test process, stopped within a bound.

use std::io::{self, BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

/// How long a [`Fixture`] may take to end once its standard input is closed.
const FIXTURE_GRACE: Duration = Duration::from_secs(10);

/// A spawn request for the spawner thread, and where its answer goes.
type Job = (Command, mpsc::Sender<io::Result<Child>>);

/// Starts `command` with the kernel told to kill it (SIGKILL) when this process dies, however
/// it dies: a test or run that is killed before it could stop its broker leaves none behind.
///
/// The kernel ties that signal to the thread that forked the child, not to the process, so
/// every child is forked by one thread that lives as long as the process: forked by a passing
/// thread (one of tokio's blocking pool, which ends after a few idle seconds), the child would
/// be killed with it.
pub(crate) fn spawn_tied(mut command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, queue) = mpsc::channel::<Job>();
        // Never joined: it serves until the process ends.
        let _ = std::thread::Builder::new()
            .name("testkit-spawner".into())
            .spawn(move || {
                for (mut command, answer) in queue {
                    let _ = answer.send(command.spawn());
                }
            });
        jobs
    });
    // SAFETY: the closure runs in the forked child before exec; prctl is async-signal-safe and
    // touches no memory shared with the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (answer, answered) = mpsc::channel();
    let gone = || io::Error::other("the spawner thread of the test kit is gone");
    spawner.send((command, answer)).map_err(|_| gone())?;
    answered.recv().map_err(|_| gone())?
}

/// Waits up to `grace` for `child` to end on its own, then kills it (SIGKILL); reaps it either
/// way. Returns whether it ended on its own.
pub(crate) fn wait_or_kill(child: &mut Child, grace: Duration) -> bool {
    let pid = child.id();
    std::thread::scope(|scope| {
        let (ended, end) = mpsc::channel();
        scope.spawn(move || {
            let _ = child.wait();
            let _ = ended.send(());
        });
        match end.recv_timeout(grace) {
            Ok(()) => true,
            Err(_) => {
                // SAFETY: kill(2) on our own child; the waiting thread has not reaped it,
                // since it did not report the end.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                false
            }
        }
    })
}

/// A helper program that serves until its standard input closes (the chaos run's hostile
/// service and security fixtures): started with its standard input and output piped, stopped
/// on drop by closing its standard input, and killed if it has not ended within 10 s.
#[derive(Debug)]
pub struct Fixture {
    child: Child,
}

impl Fixture {
    /// Starts `command` and reads the first line it prints (its address, or a description of
    /// what it serves), without the line end.
    pub fn start(mut command: Command) -> io::Result<(Fixture, String)> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut fixture = Fixture {
            child: spawn_tied(command)?,
        };
        let stdout = fixture
            .child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("the fixture's standard output is not piped"))?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        if line.is_empty() {
            return Err(io::Error::other(
                "the fixture ended before it printed its first line",
            ));
        }
        Ok((fixture, line.trim_end().to_owned()))
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        wait_or_kill(&mut self.child, FIXTURE_GRACE);
    }
}
