//! `keys PATTERN`: list the keys matching a glob pattern, page by page as they arrive.

use std::ffi::OsString;
use std::io::Write;

use bytes::Bytes;
use clap::Args;

use super::{closing, connect};
use crate::connection::ConnectionArgs;
use crate::exit::{Failure, Status};
use crate::input::arg_bytes;
use crate::output::{self, put_key, Object};

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

/// `statestore keys`.
pub async fn run(args: KeysArgs) -> Result<(), Failure> {
    let pattern = arg_bytes(&args.pattern);
    if pattern.is_empty() {
        return Err(Failure::new(
            Status::Usage,
            "the pattern is empty: `*` lists every key",
        ));
    }
    let client = connect(&args.connection).await?;
    let listed = print_all(&client, pattern, &args).await;
    closing(client, listed).await
}

async fn print_all(
    client: &statestore::Client,
    pattern: Bytes,
    args: &KeysArgs,
) -> Result<(), Failure> {
    let mut keys = client.keys(pattern)?;
    while let Some(page) = keys.next_page().await? {
        for key in page {
            print_key(&key, args)?;
        }
    }
    Ok(())
}

fn print_key(key: &[u8], args: &KeysArgs) -> Result<(), Failure> {
    if args.json {
        let mut object = Object::new();
        put_key(&mut object, key);
        return output::json_line(object);
    }
    let end: &[u8] = if args.null { b"\0" } else { b"\n" };
    let mut out = std::io::stdout().lock();
    out.write_all(key)
        .and_then(|()| out.write_all(end))
        .map_err(|e| Failure::other(format!("cannot write to stdout: {e}")))
}
