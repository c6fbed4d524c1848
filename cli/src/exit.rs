//! Exit statuses scripts can rely on, and the one-line error report on stderr.
//!
//! This module is the whole mapping from what went wrong to a process exit status; the
//! `--help` text and docs/cli.md list the same table.

use std::fmt::Display;
use std::process::ExitCode;

use statestore::{Error, ErrorCategory};

/// Why the tool stops with a non-zero status. Each value is a stable exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Anything else: a file that cannot be read, stdout closed, a signal setup failure.
    Other = 1,
    /// Bad command line or argument (clap uses the same status for its own usage errors).
    Usage = 2,
    /// get, delete or vdel on a key that does not exist.
    NotFound = 3,
    /// A condition did not hold: `--nx`/`--nex` SET not applied, VDEL value mismatch.
    ConditionNotMet = 4,
    /// The broker cannot be reached, refused the connection, or the connection was lost.
    Connection = 5,
    /// No answer (or no lock) within the timeout.
    Timeout = 6,
    /// The state store refused the request (`-ERR …`, fencing, quota, RPC status) or
    /// answered outside the protocol.
    Service = 7,
    /// `lock`: the lock was lost while the command ran (the command was sent SIGTERM).
    LockLost = 8,
    /// `lock`: the command exists but cannot be executed.
    CannotExecute = 126,
    /// `lock`: the command was not found.
    CommandNotFound = 127,
    /// `lock`: interrupted (SIGINT, SIGTERM, SIGHUP) while waiting for the lock.
    Interrupted = 130,
}

/// The exit status table, as shown at the end of `statestore --help`.
pub const EXIT_STATUS_HELP: &str = "\
Exit status:
  0    success (lock: the command's own status)
  1    other failure (unreadable file, stdout closed, ...)
  2    usage error (bad flags or arguments)
  3    not found (get, delete or vdel on a missing key)
  4    condition not met (--nx/--nex SET not applied, vdel value mismatch)
  5    connection failure (broker unreachable, login refused, connection lost)
  6    timeout (no answer within --timeout; lock: not acquired within --timeout)
  7    service error (the state store refused the request, e.g. a fencing token error)
  8    lock lost while the command ran (the command was sent SIGTERM)
  126  lock: the command cannot be executed
  127  lock: the command was not found
  128+N lock: the command was killed by signal N
  130  lock: interrupted while waiting for the lock

Errors are one line on stderr starting with `statestore: error:`.";

/// A failure: its exit status and the one-line message for stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The exit status.
    pub status: Status,
    /// What went wrong (one line).
    pub message: String,
}

impl Failure {
    /// A failure with `status` and `message`.
    pub fn new(status: Status, message: impl Display) -> Self {
        Self {
            status,
            message: message.to_string(),
        }
    }

    /// A failure of class [`Status::Other`].
    pub fn other(message: impl Display) -> Self {
        Self::new(Status::Other, message)
    }

    /// Prefixes the message with what was being done.
    pub fn context(mut self, what: impl Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }

    /// The report line: `statestore: error: ` and the message on one line.
    pub fn line(&self) -> String {
        // One line, always: messages may quote multi-line texts (service errors, paths).
        let message: String = self
            .message
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        format!("statestore: error: {message}")
    }

    /// Writes the report line to stderr and returns the exit code.
    pub fn report(&self) -> ExitCode {
        eprintln!("{}", self.line());
        ExitCode::from(self.status as u8)
    }
}

/// The class of a library error: its code's category in the library's one error table.
pub fn status_of(error: &Error) -> Status {
    match error.code().category() {
        ErrorCategory::Argument => Status::Usage,
        ErrorCategory::Timeout => Status::Timeout,
        ErrorCategory::Connection | ErrorCategory::Closed => Status::Connection,
        ErrorCategory::Service => Status::Service,
        ErrorCategory::Lease => Status::LockLost,
        _ => Status::Other,
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self::new(status_of(&error), error)
    }
}

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Self {
        Self::other(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use statestore::ServiceError;
    use std::time::Duration;

    #[test]
    fn library_errors_map_to_their_class() {
        let cases = [
            (Error::InvalidArgument("x".into()), Status::Usage),
            (Error::Timeout(Duration::from_secs(1)), Status::Timeout),
            (Error::Connection("refused".into()), Status::Connection),
            (Error::ConnectionLost, Status::Connection),
            (Error::Closed, Status::Connection),
            (
                Error::Service(ServiceError::FencingTokenRequired),
                Status::Service,
            ),
            (
                Error::Rpc {
                    status: 503,
                    message: String::new(),
                },
                Status::Service,
            ),
            (Error::NotHeld("lost".into()), Status::LockLost),
            (Error::Runtime("fork".into()), Status::Other),
        ];
        for (error, status) in cases {
            assert_eq!(Failure::from(error.clone()).status, status, "{error}");
        }
    }

    #[test]
    fn statuses_are_distinct_and_listed_in_the_help() {
        let all = [
            Status::Other,
            Status::Usage,
            Status::NotFound,
            Status::ConditionNotMet,
            Status::Connection,
            Status::Timeout,
            Status::Service,
            Status::LockLost,
            Status::CannotExecute,
            Status::CommandNotFound,
            Status::Interrupted,
        ];
        let codes: std::collections::HashSet<u8> = all.iter().map(|s| *s as u8).collect();
        assert_eq!(codes.len(), all.len());
        for code in codes {
            assert!(
                EXIT_STATUS_HELP.contains(&format!("\n  {code}  ")),
                "{code} missing from the help"
            );
        }
    }
}
