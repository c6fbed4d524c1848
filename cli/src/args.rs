//! The command line: subcommands, their flags and their `--help` texts.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand};
use statestore::Hlc;
use statestore_server::cli::ServeArgs;

use crate::connection::ConnectionArgs;
use crate::durations::parse_duration;
use crate::exit::EXIT_STATUS_HELP;

/// The `statestore` command.
#[derive(Debug, Parser)]
#[command(
    name = "statestore",
    version,
    about = "Look inside the MQTT broker state store from a shell: get, set, delete, watch and \
             lock keys, or run a local state store.",
    after_help = "A subcommand's flags (`statestore get --help` lists the connection flags) may \
                  also come before it: `statestore --port 1884 get k`.\n\
                  Run `statestore tour` for a guided session on a local state store.",
    after_long_help = EXIT_STATUS_HELP,
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,

    /// Log the client's work to stderr: `-v` connections, `-vv` also failed requests and
    /// reconnection attempts, `-vvv` every request and response (its verb, key and size; never
    /// a value). `serve` takes `--log-level` instead.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

impl Cli {
    /// Parses the process's arguments, exiting with clap's message and status 2 on a usage
    /// error. A subcommand's flags may also come before it (`statestore --port 1884 get k`, as
    /// redis-cli and mosquitto_sub take their connection flags): see [`Cli::parse_from_args`].
    pub fn parse_args() -> Cli {
        Cli::parse_from_args(std::env::args_os().collect()).unwrap_or_else(|error| error.exit())
    }

    /// Parses `given` (the program's name first). A command line refused for an unknown
    /// argument is read again with the subcommand's name moved before everything else, so that
    /// the flags in front of it are the subcommand's; each later word that names a subcommand
    /// is tried in turn (an earlier one may be a flag's value). The first reading that parses
    /// wins; with none, the first refusal of another kind (a missing key, say) is the error,
    /// else the original one.
    pub fn parse_from_args(given: Vec<OsString>) -> Result<Cli, clap::Error> {
        let refused = match Cli::try_parse_from(&given) {
            Ok(cli) => return Ok(cli),
            Err(error) if error.kind() == ErrorKind::UnknownArgument => error,
            Err(error) => return Err(error),
        };
        let command = Cli::command();
        let names: Vec<&str> = command
            .get_subcommands()
            .flat_map(|sub| std::iter::once(sub.get_name()).chain(sub.get_all_aliases()))
            .collect();
        let mut other = None;
        for at in 2..given.len() {
            if !given[at].to_str().is_some_and(|word| names.contains(&word)) {
                continue;
            }
            let mut moved = vec![given[0].clone(), given[at].clone()];
            moved.extend_from_slice(&given[1..at]);
            moved.extend_from_slice(&given[at + 1..]);
            match Cli::try_parse_from(moved) {
                Ok(cli) => return Ok(cli),
                Err(error) if error.kind() == ErrorKind::UnknownArgument => {}
                Err(error) => {
                    other.get_or_insert(error);
                }
            }
        }
        Err(other.unwrap_or(refused))
    }

    /// The log filter `--verbose` asks for, if any: the library's records at the level it names.
    pub fn log_filter(&self) -> Option<&'static str> {
        match self.verbose {
            0 => None,
            1 => Some("statestore=info"),
            2 => Some("statestore=debug"),
            _ => Some("statestore=trace"),
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a key's value (raw bytes), or with --json its value and version.
    #[command(after_long_help = GET_HELP)]
    Get(GetArgs),
    /// Set a key, optionally only if absent (--nx) or absent-or-equal (--nex), with an expiry.
    #[command(after_long_help = SET_HELP)]
    Set(SetArgs),
    /// Delete a key (`del` for short).
    #[command(after_long_help = DELETE_HELP, visible_alias = "del")]
    Delete(DeleteArgs),
    /// Delete a key only if it holds the given value.
    #[command(after_long_help = VDEL_HELP)]
    Vdel(VdelArgs),
    /// List the keys matching a glob pattern (`*`: all; `[!0-9]` negates, no `\` escape).
    Keys(KeysArgs),
    /// Print the changes of keys as they happen, until interrupted (Ctrl-C).
    #[command(after_long_help = WATCH_HELP)]
    Watch(WatchArgs),
    /// Run a command while holding a lock (renewed in the background); release it after.
    #[command(after_long_help = LOCK_HELP)]
    Lock(LockArgs),
    /// Run the local state store (the same as `statestore-server`) until SIGINT or SIGTERM.
    #[command(after_long_help = SERVE_HELP)]
    Serve(ServeArgs),
    /// A guided session: starts a local state store in-process and runs the main operations.
    Tour,
}

/// `statestore get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The key.
    pub key: OsString,
    /// Print the value's version (its hybrid logical clock) instead of the value.
    #[arg(long, conflicts_with = "json")]
    pub version_only: bool,
    /// Print `{"value", "encoding", "version"}` as one JSON line.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Where a value comes from.
#[derive(Debug, Clone, Args)]
pub struct ValueSource {
    /// The value; `-` reads it from stdin. Bytes are stored as given.
    #[arg(
        value_name = "VALUE",
        required_unless_present = "file",
        conflicts_with = "file"
    )]
    pub value: Option<OsString>,
    /// Read the value from a file (`-`: stdin), byte for byte.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
}

/// `statestore set`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// The key.
    pub key: OsString,
    /// The value.
    #[command(flatten)]
    pub value: ValueSource,
    /// Set only if the key does not exist (NX).
    #[arg(long, conflicts_with = "nex")]
    pub nx: bool,
    /// Set only if the key does not exist or already holds this value (NEX).
    #[arg(long)]
    pub nex: bool,
    /// Expire the key after MS milliseconds (PX).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub px: Option<u64>,
    /// Expire the key after a duration (`10s`, `1m`); the same as --px.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with = "px")]
    pub expiry: Option<Duration>,
    /// Fencing token: needed for keys written with one; must not be older than theirs.
    #[arg(long, value_name = "HLC")]
    pub fencing_token: Option<Hlc>,
    /// Ask the service to persist the key (newer services only).
    #[arg(long)]
    pub persist: bool,
    /// Print `{"applied", "version"}` as one JSON line instead of the version.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// `statestore delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The key.
    pub key: OsString,
    /// Fencing token, for keys written with one.
    #[arg(long, value_name = "HLC")]
    pub fencing_token: Option<Hlc>,
    /// Print `{"outcome", "version"}` as one JSON line.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// `statestore vdel`.
#[derive(Debug, Args)]
pub struct VdelArgs {
    /// The key.
    pub key: OsString,
    /// The value the key must hold to be deleted.
    #[command(flatten)]
    pub value: ValueSource,
    /// Fencing token, for keys written with one.
    #[arg(long, value_name = "HLC")]
    pub fencing_token: Option<Hlc>,
    /// Print `{"outcome", "version"}` as one JSON line.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// `statestore watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The keys to watch.
    #[arg(required = true)]
    pub keys: Vec<OsString>,
    /// Print one JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// `statestore lock`.
#[derive(Debug, Args)]
pub struct LockArgs {
    /// The lock's key.
    pub name: OsString,
    /// How long the lock lasts without renewal (renewed every third of it), e.g. `10s`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Duration,
    /// After the lock is lost and the command was sent SIGTERM, how long to wait before
    /// SIGKILL.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub kill_after: Duration,
    /// The command and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

const GET_HELP: &str = "\
Output:
  The value's bytes exactly as stored (no newline added, binary safe). With --json, one line:
    {\"value\":\"blue\",\"encoding\":\"utf8\",\"version\":\"001712345678901:00000:node\"}
  where a value that is not UTF-8 is base64 with \"encoding\":\"base64\".

Examples:
  statestore get color
  statestore get color --json
  statestore get image > image.png
  token=$(statestore get locks/report --version-only)

Exit status: 0 found, 3 not found (see `statestore --help` for the rest).";

const SET_HELP: &str = "\
Output:
  The key's new version (a hybrid logical clock, also the fencing token of a lock taken with
  --nx/--nex) on one line. With --json: {\"applied\":true,\"version\":\"...\"}.

Examples:
  statestore set color blue
  statestore set color blue --px 5000            # expires after 5 s
  statestore set color blue --expiry 5s          # the same
  statestore set locks/report me --nx --expiry 30s
  statestore set report done --fencing-token 001712345678901:00000:node
  statestore set image --file image.png
  printf 'a\\0b' | statestore set raw -            # the value from stdin

Exit status: 0 set, 4 condition not met (--nx/--nex), 7 service error (e.g. fencing).";

const DELETE_HELP: &str = "\
Examples:
  statestore delete color
  statestore delete report --fencing-token 001712345678901:00000:node
  statestore del report --fencing-token \"$(statestore get report --version-only)\"
                                                 # a key whose lock is gone
  statestore delete color --json                 # {\"outcome\":\"deleted\",\"version\":...}

Exit status: 0 deleted, 3 not found, 7 service error (e.g. a fenced key without its token).";

const VDEL_HELP: &str = "\
Examples:
  statestore vdel locks/report me                # release a lock only if it is still ours
  statestore vdel color --file expected.txt

Exit status: 0 deleted, 3 not found, 4 the key holds another value.";

const WATCH_HELP: &str = "\
Output (one line per event, flushed at once):
  watching \"color\"
  \"color\" set \"red\" (version 001712345678901:00000:node)
  \"color\" deleted (version 001712345678902:00000:node)
  \"color\" resynced after a reconnect: \"red\"   (changes while disconnected are not notified)
With --json: {\"event\":\"ready\",\"keys\":[\"color\"]}, then
  {\"key\":\"color\",\"event\":\"set\",\"value\":\"red\",\"encoding\":\"utf8\",\"version\":\"...\"}
  {\"key\":\"color\",\"event\":\"delete\",\"version\":\"...\"}
  {\"key\":\"color\",\"event\":\"resynced\",\"value\":null} (or with value, encoding, version)
Values that are not UTF-8 are base64 (\"encoding\":\"base64\"); keys too (\"key_encoding\").

Examples:
  statestore watch color
  statestore watch color size --json | jq .

Stops with status 0 on SIGINT (Ctrl-C) or SIGTERM; reconnects on its own.";

const LOCK_HELP: &str = "\
Waits for the lock (observing it, not polling), runs COMMAND with
  STATESTORE_FENCING_TOKEN  the fencing token of this holding (pass it to `statestore set
                            --fencing-token` to protect writes from stale holders)
  STATESTORE_LOCK           the lock's name
renews the lock every third of --ttl while COMMAND runs, and releases it when COMMAND exits.
If the lock is lost meanwhile (renewals failing for a whole TTL, or taken over), COMMAND is
sent SIGTERM (SIGKILL after --kill-after) and the status is 8. SIGTERM and SIGHUP are passed
on to COMMAND; SIGINT from the terminal reaches it directly.

Examples:
  statestore lock locks/report --ttl 10s -- ./make-report.sh
  statestore lock locks/report --ttl 10s --timeout 30s -- sh -c \\
      'statestore set report \"$(date)\" --fencing-token \"$STATESTORE_FENCING_TOKEN\"'

Exit status: COMMAND's own; 6 not acquired within --timeout; 8 lost while COMMAND ran;
126/127 COMMAND cannot be executed / not found.";

const SERVE_HELP: &str = "\
Prints `statestore-server ready on ADDR (embedded broker)` on stdout once it serves.

Examples:
  statestore serve                               # embedded broker on 127.0.0.1:1883
  statestore serve --listen 0.0.0.0:1883 --max-keys 10000
  statestore serve --broker mqtt://localhost:1883  # attach to a running MQTT 5 broker";

/// `statestore keys`.
#[derive(Debug, Args)]
#[command(after_long_help = KEYS_HELP)]
pub struct KeysArgs {
    /// Glob pattern in the service's dialect (Rust glob crate's `Pattern`): `*`, `?`, `[abc]`,
    /// `[a-z]`, `[!0-9]` negates (`[^...]` does not), `[*]` a literal `*`; no backslash escape
    /// (`*` = all).
    pub pattern: OsString,
    /// Print `{"key"}` JSON lines (`"key_encoding": "base64"` for keys that are not UTF-8).
    #[arg(long, conflicts_with = "null")]
    pub json: bool,
    /// End each key with a NUL byte instead of a newline (for `xargs -0`; keys may hold
    /// newlines).
    #[arg(short = '0', long)]
    pub null: bool,
    /// Connection.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

const KEYS_HELP: &str = "\
Keys are printed as they are, one per line, in no promised order; a key containing a
newline is ambiguous there, so scripts should use --null or --json. Keys created or deleted
while the listing runs may or may not be listed; every other key is listed exactly once.

Examples:
  statestore keys '*'
  statestore keys 'sensor:[0-9]*' --json
  statestore keys 'sensor:[!0-9]*'   # [!...] negates ([^...] does not); no \\ escape
  statestore keys 'job:*' -0 | xargs -0 -n1 statestore delete";
