//! The append-only log file: a header, then frames `len(u32 LE) crc32(u32 LE) payload`.
//!
//! Reading stops at the first frame that is incomplete or fails its checksum (a write cut
//! short by a crash: it was never acknowledged) and the file is truncated there, so later
//! appends follow the last good frame. A rewrite goes to a temporary file that replaces the
//! log by an atomic rename once it is on disk.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use bytes::{BufMut, Bytes, BytesMut};

/// The first bytes of a log: name and format version.
const MAGIC: &[u8; 8] = b"SSLOG\x00\x00\x01";
/// Length and checksum before each payload.
pub(crate) const FRAME_HEADER: usize = 8;

/// What reading a log found.
pub(crate) struct Replay {
    /// The payloads of the good frames, in order.
    pub payloads: Vec<Bytes>,
    /// Bytes cut off the end (a torn last write), 0 if none.
    pub truncated: u64,
}

/// An open log, positioned at its end.
#[derive(Debug)]
pub(crate) struct Log {
    path: PathBuf,
    file: File,
    /// Length of the good part of the file: where the next frame goes.
    len: u64,
}

impl Log {
    /// Opens (or creates) the log at `path` and reads it back.
    pub fn open(path: &Path) -> io::Result<(Log, Replay)> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let file_len = file.metadata()?.len();
        if file_len < MAGIC.len() as u64 {
            // New, or a crash while it was being created (a prefix of the header).
            let mut head = Vec::new();
            file.read_to_end(&mut head)?;
            if !MAGIC.starts_with(&head) {
                return Err(not_a_log(path));
            }
            file.set_len(0)?;
            file.seek(SeekFrom::Start(0))?;
            file.write_all(MAGIC)?;
            file.sync_all()?;
            sync_parent(path)?;
            let log = Log {
                path: path.to_owned(),
                file,
                len: MAGIC.len() as u64,
            };
            return Ok((
                log,
                Replay {
                    payloads: Vec::new(),
                    truncated: 0,
                },
            ));
        }
        let (payloads, good_len) = read_frames(&mut file, file_len, path)?;
        if good_len < file_len {
            file.set_len(good_len)?;
            file.sync_all()?;
        }
        file.seek(SeekFrom::Start(good_len))?;
        let log = Log {
            path: path.to_owned(),
            file,
            len: good_len,
        };
        let replay = Replay {
            payloads,
            truncated: file_len - good_len,
        };
        Ok((log, replay))
    }

    /// Length of the file.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Appends already framed bytes ([`frame`]). On failure the file is cut back to its
    /// previous end, so that a partial write cannot hide later frames.
    pub fn append(&mut self, frames: &[u8]) -> io::Result<()> {
        let written = self.file.write_all(frames);
        if let Err(error) = written {
            // Best effort: if even this fails, the next append fails the same way.
            let _ = self
                .file
                .set_len(self.len)
                .and_then(|()| self.file.seek(SeekFrom::Start(self.len)).map(drop));
            return Err(error);
        }
        self.len += frames.len() as u64;
        Ok(())
    }

    /// Makes every appended frame durable.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Replaces the log with one holding exactly `frames`: written and synced to a temporary
    /// file first, then renamed over the log, so a crash leaves either log whole.
    pub fn rewrite(&mut self, frames: &[u8]) -> io::Result<()> {
        let temporary = self.path.with_extension("log.tmp");
        let mut file = File::create(&temporary)?;
        file.write_all(MAGIC)?;
        file.write_all(frames)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &self.path)?;
        // From the rename on, the path names the new file: appends go to it (through the
        // handle that wrote it, positioned at its end) even if the directory sync fails.
        self.file = file;
        self.len = (MAGIC.len() + frames.len()) as u64;
        sync_parent(&self.path)
    }
}

/// Appends one frame holding `payload` to `out`.
pub(crate) fn frame(payload: &[u8], out: &mut BytesMut) {
    out.put_u32_le(u32::try_from(payload.len()).unwrap_or(u32::MAX));
    out.put_u32_le(crc32fast::hash(payload));
    out.put_slice(payload);
}

/// Reads the header and every good frame; returns the payloads and where the good part ends.
fn read_frames(file: &mut File, file_len: u64, path: &Path) -> io::Result<(Vec<Bytes>, u64)> {
    file.seek(SeekFrom::Start(0))?;
    let mut reader = BufReader::with_capacity(1 << 16, &mut *file);
    let mut magic = [0u8; MAGIC.len()];
    reader.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(not_a_log(path));
    }
    let mut payloads = Vec::new();
    let mut good_len = MAGIC.len() as u64;
    loop {
        let mut header = [0u8; FRAME_HEADER];
        if read_fully(&mut reader, &mut header)? < FRAME_HEADER {
            break;
        }
        let [l0, l1, l2, l3, c0, c1, c2, c3] = header;
        let len = u64::from(u32::from_le_bytes([l0, l1, l2, l3]));
        let crc = u32::from_le_bytes([c0, c1, c2, c3]);
        // A length beyond the end of the file is a torn header, not an allocation to make.
        if good_len + FRAME_HEADER as u64 + len > file_len {
            break;
        }
        let mut payload = vec![0u8; len as usize];
        if read_fully(&mut reader, &mut payload)? < payload.len() {
            break;
        }
        if crc32fast::hash(&payload) != crc {
            break;
        }
        good_len += FRAME_HEADER as u64 + len;
        payloads.push(Bytes::from(payload));
    }
    Ok((payloads, good_len))
}

fn not_a_log(path: &Path) -> io::Error {
    io::Error::new(
        ErrorKind::InvalidData,
        format!("{} is not a statestore-server log", path.display()),
    )
}

/// Reads until `buf` is full or the file ends; returns how much was read.
fn read_fully(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// Makes a rename or creation in the directory of `path` durable.
fn sync_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(payloads: &[&[u8]]) -> BytesMut {
        let mut out = BytesMut::new();
        for payload in payloads {
            frame(payload, &mut out);
        }
        out
    }

    #[test]
    fn frames_survive_reopening_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("keys.log");
        let (mut log, replay) = Log::open(&path).expect("created");
        assert!(replay.payloads.is_empty());
        log.append(&framed(&[b"one", b"two"])).expect("appended");
        let whole = log.len();
        // A crash in the middle of the next frame.
        log.append(&framed(&[b"three"])[..6]).expect("appended");
        drop(log);

        let (mut log, replay) = Log::open(&path).expect("reopened");
        assert_eq!(replay.payloads, [&b"one"[..], b"two"]);
        assert_eq!(replay.truncated, 6);
        assert_eq!(log.len(), whole);
        log.append(&framed(&[b"four"]))
            .expect("appended after the cut");
        drop(log);
        let (_, replay) = Log::open(&path).expect("reopened");
        assert_eq!(replay.payloads, [&b"one"[..], b"two", b"four"]);
    }

    #[test]
    fn a_bad_checksum_ends_the_log() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("keys.log");
        let (mut log, _) = Log::open(&path).expect("created");
        let mut frames = framed(&[b"good", b"flipped"]);
        let last = frames.len() - 1;
        frames[last] ^= 0x01;
        log.append(&frames).expect("appended");
        drop(log);
        let (_, replay) = Log::open(&path).expect("reopened");
        assert_eq!(replay.payloads, [&b"good"[..]]);
        assert_eq!(replay.truncated, (FRAME_HEADER + 7) as u64);
    }

    #[test]
    fn rewrite_replaces_the_content() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("keys.log");
        let (mut log, _) = Log::open(&path).expect("created");
        log.append(&framed(&[b"a", b"b", b"c"])).expect("appended");
        log.rewrite(&framed(&[b"c"])).expect("rewritten");
        log.append(&framed(&[b"d"])).expect("appended");
        drop(log);
        let (_, replay) = Log::open(&path).expect("reopened");
        assert_eq!(replay.payloads, [&b"c"[..], b"d"]);
        assert!(!path.with_extension("log.tmp").exists());
    }

    #[test]
    fn a_foreign_file_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("keys.log");
        std::fs::write(&path, b"not a log at all").expect("written");
        assert!(Log::open(&path).is_err());
        std::fs::write(&path, b"SSL").expect("written");
        assert!(
            Log::open(&path).is_ok(),
            "a header cut short at creation is redone"
        );
        std::fs::write(&path, b"XY").expect("written");
        assert!(Log::open(&path).is_err());
    }
}
