//! Crash-safe files: an exclusive lock on a sidecar `<file>.lock`, then read, change,
//! write a temp file in the same directory, fsync, rename. A reader never sees a torn
//! file, no writer loses another's update, and a crash leaves the old or the new file.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{Error, Result};

/// How long a command waits for a lock before giving up. Hooks use a shorter bound.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

/// An exclusive lock on `<file>.lock`, released when dropped.
#[derive(Debug)]
pub struct Lock {
    file: File,
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

pub fn lock_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    file.with_file_name(name)
}

/// Take the sidecar lock of `file`, polling for at most `wait`.
pub fn lock(file: &Path, wait: Duration) -> Result<Lock> {
    let path = lock_path(file);
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(Error::missing("directory", dir));
        }
    }
    let handle = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(&path, "open lock file", e))?;
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match handle.try_lock() {
            Ok(()) => {
                remove_stale_temps(file);
                return Ok(Lock { file: handle });
            }
            Err(TryLockError::WouldBlock) => {
                let waited = start.elapsed();
                if waited >= wait {
                    return Err(Error::LockTimeout {
                        path,
                        waited_ms: waited.as_millis() as u64,
                    });
                }
                std::thread::sleep(pause.min(wait - waited));
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(&path, "lock", e)),
        }
    }
}

/// Read a whole file as bytes; `Ok(None)` when it does not exist.
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, "read", e)),
    }
}

/// Read a UTF-8 text file (a leading BOM is kept; callers that care strip it).
pub fn read_text(path: &Path, what: &'static str) -> Result<String> {
    match read_optional(path)? {
        None => Err(Error::missing(what, path)),
        Some(bytes) => String::from_utf8(bytes).map_err(|_| Error::NotUtf8 {
            path: path.to_path_buf(),
        }),
    }
}

/// Parse JSON bytes from `path`, accepting a UTF-8 BOM.
pub fn parse_json(path: &Path, bytes: &[u8]) -> Result<Value> {
    let text = std::str::from_utf8(bytes).map_err(|_| Error::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(text).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// Read and parse a JSON file; `Ok(None)` when it does not exist.
pub fn read_json(path: &Path) -> Result<Option<Value>> {
    match read_optional(path)? {
        None => Ok(None),
        Some(bytes) => parse_json(path, &bytes).map(Some),
    }
}

/// Temp files for `path` are named `.<file name>.specrun-tmp-…`, so the holder of the file's
/// lock knows which leftovers (from a writer killed mid-write) are its own to remove.
fn temp_prefix(path: &Path) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    format!(".{name}.specrun-tmp-")
}

/// Remove temp files a killed writer of `file` left behind. Only called with the file's
/// lock held: no live writer of this file can own one.
fn remove_stale_temps(file: &Path) {
    let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return;
    };
    let prefix = temp_prefix(file);
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Replace `path` with `bytes` atomically: temp file in the same directory, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(path))
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, "create a temp file in", e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io(tmp.path(), "write", e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io(tmp.path(), "fsync", e))?;
    // Keep the file's permissions when replacing it.
    if let Ok(meta) = fs::metadata(path) {
        let _ = fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(path)
        .map_err(|e| Error::io(path, "rename a temp file onto", e.error))?;
    // No fsync of the directory: the data fsync above is what makes a crash leave the old or
    // the new content; syncing the rename too would only make the new one survive a power
    // cut sooner, and on a busy disk it doubles the cost of every state write (DESIGN-NOTES).
    Ok(())
}

/// Serialise a JSON document the way state files are written: indented, newline-terminated.
pub fn to_pretty_bytes(value: &Value) -> Vec<u8> {
    let mut bytes =
        serde_json::to_vec_pretty(value).expect("a serde_json::Value always serialises");
    bytes.push(b'\n');
    bytes
}

/// Under the lock of `path`: read the JSON document (None if absent), let `change` produce
/// the new one, write it atomically. Nothing is written when `change` fails or returns
/// `None`. A corrupt file is an error and is never overwritten here.
pub fn update_json<T>(
    path: &Path,
    wait: Duration,
    change: impl FnOnce(Option<Value>) -> Result<(Option<Value>, T)>,
) -> Result<T> {
    let _lock = lock(path, wait)?;
    let current = read_json(path)?;
    let (next, out) = change(current)?;
    if let Some(next) = next {
        write_atomic(path, &to_pretty_bytes(&next))?;
    }
    Ok(out)
}

/// Under the lock of `path`: read the text file, let `change` produce the new text, write it.
pub fn update_text<T>(
    path: &Path,
    what: &'static str,
    wait: Duration,
    change: impl FnOnce(String) -> Result<(Option<String>, T)>,
) -> Result<T> {
    // Name a missing file before taking the lock, so no stray lock file is left beside it.
    if !path.exists() {
        return Err(Error::missing(what, path));
    }
    let _lock = lock(path, wait)?;
    let current = read_text(path, what)?;
    let (next, out) = change(current)?;
    if let Some(next) = next {
        write_atomic(path, next.as_bytes())?;
    }
    Ok(out)
}

/// Append one line to a file (created with its directory if needed). Appends of a single
/// short line are atomic with O_APPEND, so concurrent writers interleave whole lines.
pub fn append_line(path: &Path, line: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, "open for append", e))?;
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    file.write_all(buf.as_bytes())
        .map_err(|e| Error::io(path, "append to", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_atomic_replaces_and_keeps_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn lock_times_out_while_held_and_succeeds_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let held = lock(&path, Duration::from_millis(10)).unwrap();
        // flock locks belong to the open file description, so a second open conflicts.
        let err = lock(&path, Duration::from_millis(30)).unwrap_err();
        assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
        drop(held);
        lock(&path, Duration::from_millis(10)).unwrap();
    }

    #[test]
    fn update_json_writes_nothing_when_change_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        fs::write(&path, "{\"a\":1}").unwrap();
        let r: Result<()> = update_json(&path, DEFAULT_LOCK_WAIT, |_| {
            Err(Error::bad_input("patch", "no"))
        });
        assert!(r.is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}");
    }

    #[test]
    fn parse_json_accepts_bom() {
        let v = parse_json(Path::new("x"), "\u{feff}{\"a\":1}".as_bytes()).unwrap();
        assert_eq!(v["a"], 1);
    }
}
