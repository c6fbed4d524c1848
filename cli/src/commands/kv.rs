//! `get`, `set`, `delete` and `vdel`: one request each, the outcome on stdout and in the exit
//! status.

use std::time::Duration;

use bytes::Bytes;
use statestore::{
    DeleteOptions, DeleteOutcome, DeleteResult, Error, ServiceError, SetCondition, SetOptions,
};

use super::{closing, connect};
use crate::args::{DeleteArgs, GetArgs, SetArgs, VdelArgs};
use crate::exit::{Failure, Status};
use crate::input::{arg_bytes, read_value};
use crate::output::{self, put_value, put_version, quoted, Object};

/// `statestore get`.
pub async fn get(args: GetArgs) -> Result<(), Failure> {
    let key = arg_bytes(&args.key);
    let client = connect(&args.connection).await?;
    let found = client.get(key.clone()).await;
    let value = closing(client, found.map_err(Failure::from))
        .await?
        .ok_or_else(|| not_found(&key))?;
    if args.json {
        let mut object = Object::new();
        put_value(&mut object, &value.value);
        put_version(&mut object, value.version.as_ref());
        output::json_line(object)
    } else if args.version_only {
        let version = value
            .version
            .ok_or_else(|| Failure::new(Status::Service, "the state store sent no version"))?;
        output::line(&version.to_string())
    } else {
        output::raw(&value.value)
    }
}

/// `statestore set`.
pub async fn set(args: SetArgs) -> Result<(), Failure> {
    let key = arg_bytes(&args.key);
    let value = read_value(&args.value)?;
    let condition = match (args.nx, args.nex) {
        (true, _) => SetCondition::OnlyIfAbsent,
        (_, true) => SetCondition::OnlyIfAbsentOrEqual,
        _ => SetCondition::Always,
    };
    let mut options = SetOptions::default()
        .condition(condition)
        .persist(args.persist);
    options.expiry = args.px.map(Duration::from_millis).or(args.expiry);
    options.fencing_token = args.fencing_token;
    let client = connect(&args.connection).await?;
    let result = client.set(key.clone(), value, options).await;
    let result = closing(client, result.map_err(|e| write_failure(&key, e))).await?;
    if args.json {
        let mut object = Object::new();
        object.insert("applied".into(), result.applied.into());
        put_version(&mut object, result.version.as_ref());
        output::json_line(object)?;
    } else if let (true, Some(version)) = (result.applied, &result.version) {
        output::line(&version.to_string())?;
    }
    if result.applied {
        return Ok(());
    }
    let why = if args.nx {
        "it exists (--nx)"
    } else {
        "it holds another value (--nex)"
    };
    Err(Failure::new(
        Status::ConditionNotMet,
        format!("key {} was not set: {why}", quoted(&key)),
    ))
}

/// `statestore delete`.
pub async fn delete(args: DeleteArgs) -> Result<(), Failure> {
    let key = arg_bytes(&args.key);
    let options = delete_options(args.fencing_token);
    let client = connect(&args.connection).await?;
    let result = client.delete(key.clone(), options).await;
    let result = closing(client, result.map_err(|e| write_failure(&key, e))).await?;
    report_delete(&key, &result, args.json)
}

/// `statestore vdel`.
pub async fn vdel(args: VdelArgs) -> Result<(), Failure> {
    let key = arg_bytes(&args.key);
    let value = read_value(&args.value)?;
    let options = delete_options(args.fencing_token);
    let client = connect(&args.connection).await?;
    let result = client.vdel(key.clone(), value, options).await;
    let result = closing(client, result.map_err(|e| write_failure(&key, e))).await?;
    report_delete(&key, &result, args.json)
}

/// A write's error as a failure. The library's message for a fenced key says what to do in
/// any language; here it also names the key and the commands of this tool that do it.
fn write_failure(key: &[u8], error: Error) -> Failure {
    if !matches!(error, Error::Service(ServiceError::FencingTokenRequired)) {
        return Failure::from(error);
    }
    let key = quoted(key);
    let mut failure = Failure::from(error).context(format_args!("key {key}"));
    failure.message.push_str(&format!(
        "; with this tool: token=$(statestore get {key} --version-only) && \
         statestore delete {key} --fencing-token \"$token\""
    ));
    failure
}

fn delete_options(fencing_token: Option<statestore::Hlc>) -> DeleteOptions {
    let mut options = DeleteOptions::default();
    options.fencing_token = fencing_token;
    options
}

/// Prints a DEL/VDEL result (JSON only: a plain delete is silent) and turns it into the status.
fn report_delete(key: &Bytes, result: &DeleteResult, json: bool) -> Result<(), Failure> {
    if json {
        let outcome = match result.outcome {
            DeleteOutcome::Deleted => "deleted",
            DeleteOutcome::NotFound => "not_found",
            DeleteOutcome::ValueMismatch => "value_mismatch",
        };
        let mut object = Object::new();
        object.insert("outcome".into(), outcome.into());
        put_version(&mut object, result.version.as_ref());
        output::json_line(object)?;
    }
    match result.outcome {
        DeleteOutcome::Deleted => Ok(()),
        DeleteOutcome::NotFound => Err(not_found(key)),
        DeleteOutcome::ValueMismatch => Err(Failure::new(
            Status::ConditionNotMet,
            format!(
                "key {} was not deleted: it holds another value",
                quoted(key)
            ),
        )),
    }
}

fn not_found(key: &[u8]) -> Failure {
    Failure::new(Status::NotFound, format!("key {} not found", quoted(key)))
}
