//! Keys written with `aio-persistence: true`, kept on disk so they survive a restart.
//!
//! The engine reports every change of a persisted key ([`DurableChange`]); the service hands
//! each batch of them to [`Durable::commit`] before it sends the responses of that batch, so
//! with [`FsyncPolicy::Always`] an acknowledged write is on disk. Storage is one append-only
//! log of checksummed records (`DATA_DIR/keys.log`, see `log`), read back at start-up and
//! rewritten with only the live keys when it has grown to more than twice their size.
//! `DATA_DIR/lock` keeps a second server off the same directory.

mod log;
mod record;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tracing::{info, warn};

use crate::config::{FsyncPolicy, PersistenceConfig};
use crate::engine::{DurableChange, PersistedKey};
use log::{Log, FRAME_HEADER};

/// Below this size the log is never rewritten.
const COMPACT_MIN_BYTES: u64 = 1 << 20;

/// The log and what it holds, used from blocking code.
#[derive(Debug)]
struct Persistence {
    log: Log,
    policy: FsyncPolicy,
    /// The live persisted keys and the size of each one's frame.
    live: HashMap<Bytes, (PersistedKey, u64)>,
    live_bytes: u64,
    /// Appended but not yet synced (interval and never policies).
    unsynced: bool,
    /// Changes whose commit failed, retried before the next ones.
    retry: Vec<DurableChange>,
    compact_min_bytes: u64,
    _lock: File,
}

impl Persistence {
    /// Opens the data directory and reads the persisted keys back.
    fn open(config: &PersistenceConfig, node: &str) -> io::Result<(Self, Vec<PersistedKey>)> {
        let dir = &config.data_dir;
        std::fs::create_dir_all(dir)?;
        let lock = lock_dir(dir)?;
        let (log, replay) = Log::open(&dir.join("keys.log"))?;
        if replay.truncated > 0 {
            warn!(
                bytes = replay.truncated,
                "the data log ended in an incomplete record (a write cut short by a crash, never acknowledged): removed it"
            );
        }
        let mut persistence = Self {
            log,
            policy: config.fsync,
            live: HashMap::new(),
            live_bytes: 0,
            unsynced: false,
            retry: Vec::new(),
            compact_min_bytes: COMPACT_MIN_BYTES,
            _lock: lock,
        };
        for payload in replay.payloads {
            let size = (FRAME_HEADER + payload.len()) as u64;
            let change = record::decode(payload, node)
                .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))?;
            persistence.apply(change, size);
        }
        persistence.compact_if_worthwhile()?;
        let keys: Vec<PersistedKey> = persistence
            .live
            .values()
            .map(|(key, _)| key.clone())
            .collect();
        info!(keys = keys.len(), dir = %dir.display(), "persisted keys loaded");
        Ok((persistence, keys))
    }

    /// Writes `changes` (after any earlier ones that failed) and syncs them per the policy.
    /// On failure they are kept and written again with the next commit.
    fn commit(&mut self, changes: Vec<DurableChange>) -> io::Result<()> {
        self.retry.extend(changes);
        if self.retry.is_empty() {
            return Ok(());
        }
        let mut frames = BytesMut::new();
        let mut sizes = Vec::with_capacity(self.retry.len());
        let mut payload = BytesMut::new();
        for change in &self.retry {
            payload.clear();
            record::encode(change, &mut payload);
            log::frame(&payload, &mut frames);
            sizes.push((FRAME_HEADER + payload.len()) as u64);
        }
        self.log.append(&frames)?;
        match self.policy {
            FsyncPolicy::Always => self.log.sync()?,
            FsyncPolicy::Interval | FsyncPolicy::Never => self.unsynced = true,
        }
        for (change, size) in std::mem::take(&mut self.retry).into_iter().zip(sizes) {
            self.apply(change, size);
        }
        // The changes are stored (and synced per the policy): a failed compaction must not
        // turn them into failed writes. The log stays valid, and the next commit retries it.
        if let Err(error) = self.compact_if_worthwhile() {
            warn!(%error, "the data log could not be compacted: keeping it as it is");
        }
        Ok(())
    }

    /// Syncs what was appended since the last sync.
    fn sync(&mut self) -> io::Result<()> {
        if self.unsynced {
            self.log.sync()?;
            self.unsynced = false;
        }
        Ok(())
    }

    fn apply(&mut self, change: DurableChange, size: u64) {
        let replaced = match change {
            DurableChange::Put(key) => {
                self.live_bytes += size;
                self.live.insert(key.key.clone(), (key, size))
            }
            DurableChange::Remove(key) => self.live.remove(&key),
        };
        if let Some((_, old_size)) = replaced {
            self.live_bytes -= old_size;
        }
    }

    /// Rewrites the log with only the live keys once it is more than twice their size.
    fn compact_if_worthwhile(&mut self) -> io::Result<()> {
        let len = self.log.len();
        if len < self.compact_min_bytes || len <= 2 * self.live_bytes {
            return Ok(());
        }
        let mut frames = BytesMut::with_capacity(self.live_bytes as usize);
        let mut payload = BytesMut::new();
        for (key, _) in self.live.values() {
            payload.clear();
            record::encode(&DurableChange::Put(key.clone()), &mut payload);
            log::frame(&payload, &mut frames);
        }
        self.log.rewrite(&frames)?;
        // The rewrite is synced and holds everything.
        self.unsynced = false;
        info!(from = len, to = self.log.len(), "data log compacted");
        Ok(())
    }
}

/// Takes `DIR/lock` for this process, so two servers never write the same log.
fn lock_dir(dir: &Path) -> io::Result<File> {
    let path = dir.join("lock");
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!("{} is in use by another statestore-server", dir.display()),
        )),
        Err(std::fs::TryLockError::Error(error)) => Err(error),
    }
}

/// Durable storage for the service task: the blocking file work runs on tokio's blocking
/// pool, one operation at a time, while the service waits for it.
#[derive(Debug)]
pub(crate) struct Durable {
    /// `None` only while an operation runs, or for good if one panicked.
    inner: Option<Persistence>,
    sync_interval: Option<Duration>,
    /// Syncs asked for by [`Durable::sync`] that succeeded (tests watch the interval policy).
    syncs: Arc<AtomicU64>,
}

impl Durable {
    /// Opens the data directory; returns the keys to restore.
    pub async fn open(
        config: &PersistenceConfig,
        node: &str,
    ) -> io::Result<(Durable, Vec<PersistedKey>)> {
        let sync_interval =
            (config.fsync == FsyncPolicy::Interval).then_some(config.fsync_interval);
        let config = config.clone();
        let node = node.to_owned();
        let (persistence, keys) =
            tokio::task::spawn_blocking(move || Persistence::open(&config, &node))
                .await
                .map_err(io::Error::other)??;
        Ok((
            Durable {
                inner: Some(persistence),
                sync_interval,
                syncs: Arc::default(),
            },
            keys,
        ))
    }

    /// How often [`Durable::sync`] should run (the interval policy only).
    pub fn sync_interval(&self) -> Option<Duration> {
        self.sync_interval
    }

    /// Stores `changes`; with the always policy they are on disk when this returns `Ok`.
    pub async fn commit(&mut self, changes: Vec<DurableChange>) -> io::Result<()> {
        self.blocking(move |p| p.commit(changes)).await
    }

    /// Syncs what earlier commits appended.
    pub async fn sync(&mut self) -> io::Result<()> {
        self.blocking(Persistence::sync).await?;
        self.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// How many [`Durable::sync`] calls succeeded so far.
    #[cfg(test)]
    pub(crate) fn syncs(&self) -> Arc<AtomicU64> {
        self.syncs.clone()
    }

    async fn blocking(
        &mut self,
        work: impl FnOnce(&mut Persistence) -> io::Result<()> + Send + 'static,
    ) -> io::Result<()> {
        let Some(mut persistence) = self.inner.take() else {
            return Err(io::Error::other("durable storage is unavailable"));
        };
        let (persistence, result) = tokio::task::spawn_blocking(move || {
            let result = work(&mut persistence);
            (persistence, result)
        })
        .await
        .map_err(io::Error::other)?;
        self.inner = Some(persistence);
        result
    }
}

#[cfg(test)]
mod tests {
    use statestore::protocol::Hlc;

    use super::*;

    fn config(dir: &Path) -> PersistenceConfig {
        PersistenceConfig {
            data_dir: dir.to_owned(),
            fsync: FsyncPolicy::Always,
            fsync_interval: Duration::from_secs(1),
        }
    }

    fn put(key: &str, value: &str, wall_ms: u64) -> DurableChange {
        DurableChange::Put(PersistedKey {
            key: Bytes::copy_from_slice(key.as_bytes()),
            value: Bytes::copy_from_slice(value.as_bytes()),
            version: Hlc {
                wall_ms,
                counter: 0,
                node: "n".into(),
            },
            fencing_token: None,
            deadline_ms: None,
        })
    }

    fn remove(key: &str) -> DurableChange {
        DurableChange::Remove(Bytes::copy_from_slice(key.as_bytes()))
    }

    fn reopen(dir: &Path) -> (Persistence, Vec<(String, String)>) {
        let (persistence, keys) = Persistence::open(&config(dir), "n").expect("opens");
        let mut keys: Vec<_> = keys
            .into_iter()
            .map(|k| {
                (
                    String::from_utf8_lossy(&k.key).into_owned(),
                    String::from_utf8_lossy(&k.value).into_owned(),
                )
            })
            .collect();
        keys.sort();
        (persistence, keys)
    }

    #[test]
    fn the_last_change_of_each_key_survives_a_reopen() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut persistence, keys) = reopen(dir.path());
        assert!(keys.is_empty());
        persistence
            .commit(vec![put("a", "1", 1), put("b", "1", 2), put("a", "2", 3)])
            .expect("committed");
        persistence
            .commit(vec![remove("b"), put("c", "1", 4)])
            .expect("committed");
        drop(persistence);
        let (_, keys) = reopen(dir.path());
        assert_eq!(keys, [("a".into(), "2".into()), ("c".into(), "1".into())]);
    }

    #[test]
    fn the_log_is_compacted_once_mostly_garbage() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut persistence, _) = reopen(dir.path());
        persistence.compact_min_bytes = 1_000;
        for i in 0..200 {
            persistence
                .commit(vec![put("same", &format!("value {i}"), i)])
                .expect("committed");
        }
        assert!(
            persistence.log.len() < 1_000 + 2 * persistence.live_bytes,
            "log of {} bytes for {} live",
            persistence.log.len(),
            persistence.live_bytes
        );
        drop(persistence);
        let (_, keys) = reopen(dir.path());
        assert_eq!(keys, [("same".into(), "value 199".into())]);
    }

    #[test]
    fn a_failed_compaction_does_not_fail_the_stored_writes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut persistence, _) = reopen(dir.path());
        persistence.compact_min_bytes = 1_000;
        // The rewrite's temporary file cannot be created where a directory is.
        let temporary = dir.path().join("keys.log.tmp");
        std::fs::create_dir(&temporary).expect("directory");
        for i in 0..200 {
            persistence
                .commit(vec![put("same", &format!("value {i}"), i)])
                .expect("appended and synced, so committed");
        }
        assert!(
            persistence.log.len() > 2 * persistence.live_bytes,
            "the compaction was attempted and failed"
        );
        drop(persistence);
        let (_, keys) = reopen(dir.path());
        assert_eq!(keys, [("same".into(), "value 199".into())]);
    }

    #[test]
    fn a_second_server_cannot_open_the_same_directory() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (first, _) = reopen(dir.path());
        let second = Persistence::open(&config(dir.path()), "n").expect_err("locked");
        assert!(second.to_string().contains("in use"), "{second}");
        drop(first);
        reopen(dir.path());
    }
}
