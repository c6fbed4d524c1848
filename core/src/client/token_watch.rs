//! Watches a service-account token file and reports each new token.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::transport::read_token;

/// Checks `path` every `interval` until `cancel`, publishing each token that differs from
/// the last one. Unreadable files are logged and skipped (the old token stays in use).
pub(crate) async fn watch_token(
    path: PathBuf,
    interval: Duration,
    current: Bytes,
    tokens: watch::Sender<Bytes>,
    cancel: CancellationToken,
) {
    let mut current = current;
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
        let path = path.clone();
        let read = tokio::task::spawn_blocking(move || read_token(&path)).await;
        match read {
            Ok(Ok(token)) if token != current => {
                current = token.clone();
                if tokens.send(token).is_err() {
                    return;
                }
            }
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::warn!(%error, "cannot read the service-account token"),
            Err(error) => tracing::warn!(%error, "token file check failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_rewritten_token_is_published() {
        let dir = std::env::temp_dir().join(format!("statestore-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, b"first").unwrap();
        let (sender, mut receiver) = watch::channel(Bytes::from_static(b"first"));
        let cancel = CancellationToken::new();
        let task = tokio::spawn(watch_token(
            file.clone(),
            Duration::from_millis(5),
            Bytes::from_static(b"first"),
            sender,
            cancel.clone(),
        ));
        std::fs::write(&file, b"second").unwrap();
        receiver.changed().await.unwrap();
        assert_eq!(&receiver.borrow_and_update()[..], b"second");
        cancel.cancel();
        task.await.unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
