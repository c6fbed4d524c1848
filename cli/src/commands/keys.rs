//! `keys PATTERN`: list the keys matching a glob pattern, page by page as they arrive.

use std::io::Write;

use bytes::Bytes;

use super::{closing, connect};
use crate::args::KeysArgs;
use crate::exit::{Failure, Status};
use crate::input::arg_bytes;
use crate::output::{self, put_key, Object};

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
