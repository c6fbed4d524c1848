//! `watch`: observe keys and print each change as a line until SIGINT or SIGTERM.

use bytes::Bytes;
use statestore::{KeyEvent, Value};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use super::{closing, connect};
use crate::args::WatchArgs;
use crate::exit::{Failure, Status};
use crate::input::arg_bytes;
use crate::output::{self, put_key, put_value, put_version, quoted, Object};

/// `statestore watch`.
pub async fn run(args: WatchArgs) -> Result<(), Failure> {
    let mut keys: Vec<Bytes> = Vec::new();
    for key in args.keys.iter().map(|key| arg_bytes(key)) {
        // A key named twice would print each event twice.
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    // Signal handlers first: a SIGINT right after the ready line must end the watch cleanly.
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let client = connect(&args.connection).await?;
    let result = async {
        let (events, mut received) = mpsc::unbounded_channel();
        for key in &keys {
            let mut observation = client.observe(key.clone()).await?;
            let events = events.clone();
            let key = key.clone();
            tokio::spawn(async move {
                while let Some(event) = observation.next().await {
                    if events.send((key.clone(), event)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(events);
        print_ready(&keys, args.json)?;
        loop {
            tokio::select! {
                _ = interrupt.recv() => return Ok(()),
                _ = terminate.recv() => return Ok(()),
                event = received.recv() => match event {
                    Some((key, event)) => print_event(&key, &event, args.json)?,
                    None => {
                        let why = client.connection_status().reason.map_or_else(
                            || "the connection to the broker was closed".to_owned(),
                            |reason| format!("reconnecting gave up: {reason}"),
                        );
                        return Err(Failure::new(
                            Status::Connection,
                            format!("the observations ended: {why}"),
                        ));
                    }
                },
            }
        }
    }
    .await;
    closing(client, result).await
}

fn print_ready(keys: &[Bytes], json: bool) -> Result<(), Failure> {
    if json {
        let mut object = Object::new();
        object.insert("event".into(), "ready".into());
        let names = keys.iter().map(|key| {
            let mut named = Object::new();
            put_key(&mut named, key);
            named.remove("key").unwrap_or_default()
        });
        object.insert("keys".into(), names.collect());
        output::json_line(object)
    } else {
        let names: Vec<String> = keys.iter().map(|key| quoted(key)).collect();
        output::line(&format!("watching {}", names.join(" ")))
    }
}

fn print_event(key: &[u8], event: &KeyEvent, json: bool) -> Result<(), Failure> {
    if json {
        output::json_line(event_object(key, event))
    } else {
        output::line(&event_line(key, event))
    }
}

fn event_object(key: &[u8], event: &KeyEvent) -> Object {
    let mut object = Object::new();
    put_key(&mut object, key);
    match event {
        KeyEvent::Set { value, version } => {
            object.insert("event".into(), "set".into());
            put_value(&mut object, value);
            put_version(&mut object, version.as_ref());
        }
        KeyEvent::Delete { version } => {
            object.insert("event".into(), "delete".into());
            put_version(&mut object, version.as_ref());
        }
        KeyEvent::Resynced { value } => {
            object.insert("event".into(), "resynced".into());
            match value {
                Some(Value { value, version, .. }) => {
                    put_value(&mut object, value);
                    put_version(&mut object, version.as_ref());
                }
                None => {
                    object.insert("value".into(), serde_json::Value::Null);
                }
            }
        }
    }
    object
}

pub(super) fn event_line(key: &[u8], event: &KeyEvent) -> String {
    let version = |version: &Option<statestore::Hlc>| match version {
        Some(version) => format!(" (version {version})"),
        None => String::new(),
    };
    let key = quoted(key);
    match event {
        KeyEvent::Set { value, version: v } => {
            format!("{key} set {}{}", quoted(value), version(v))
        }
        KeyEvent::Delete { version: v } => format!("{key} deleted{}", version(v)),
        KeyEvent::Resynced { value: None } => {
            format!("{key} resynced after a reconnect: absent")
        }
        KeyEvent::Resynced {
            value: Some(Value {
                value, version: v, ..
            }),
        } => format!(
            "{key} resynced after a reconnect: {}{}",
            quoted(value),
            version(v)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use statestore::Hlc;

    #[test]
    fn lines_for_humans() {
        let version = Some(Hlc::new(7, "n"));
        let set = KeyEvent::Set {
            value: Bytes::from_static(b"a\nb"),
            version: version.clone(),
        };
        assert_eq!(
            event_line(b"k", &set),
            r#""k" set "a\nb" (version 000000000000007:00000:n)"#
        );
        let gone = KeyEvent::Resynced { value: None };
        assert_eq!(
            event_line(b"k", &gone),
            r#""k" resynced after a reconnect: absent"#
        );
        let object = event_object(b"k", &KeyEvent::Delete { version });
        assert_eq!(object["event"], "delete");
        assert_eq!(object["version"], "000000000000007:00000:n");
    }
}
