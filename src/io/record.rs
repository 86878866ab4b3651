//! Where the guard's record lives, and its reads and writes (through `store`: bounded
//! reads, atomic writes, no links). Outside the spec, so an `rm` or `mv` under specs/ does
//! not reach it: `$SPECRUN_STATE_DIR` when set (tests), else `$XDG_STATE_HOME/specrun`,
//! else `~/.local/state/specrun`; one directory per project (the SHA-256 of its canonical
//! root), holding `sessions/<session>.json` (a session's binding) and
//! `executions/<spec>.json` (an execution's record). The types are `model::record`'s; this
//! file only knows paths and JSON.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Result;
use crate::io::store;

/// The most a record file may hold: a few KiB in practice.
pub(crate) const MAX_RECORD: u64 = 1 << 20;

/// The user's state directory for specrun; `None` when no variable names one.
fn base() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("SPECRUN_STATE_DIR")
        .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("specrun")))
        .or_else(|| var("HOME").map(|h| h.join(".local/state/specrun")))
}

/// One project's record directory (`root` is canonical: `Project::discover` made it so).
/// The base is resolved once: a link the user put in their own state path is theirs.
pub(crate) fn project_dir(root: &Path) -> Option<PathBuf> {
    let base = base()?;
    let base = std::fs::canonicalize(&base).unwrap_or(base);
    let digest = crate::support::sha256::hex(root.as_os_str().as_encoded_bytes());
    Some(base.join(&digest[..32]))
}

/// A name safe as one path component: itself when it is plain, else its digest.
fn component(name: &str) -> String {
    let plain = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if plain {
        name.to_string()
    } else {
        crate::support::sha256::hex(name.as_bytes())
    }
}

pub(crate) fn session_path(root: &Path, session: &str) -> Option<PathBuf> {
    Some(
        project_dir(root)?
            .join("sessions")
            .join(format!("{}.json", component(session))),
    )
}

pub(crate) fn execution_path(root: &Path, spec: &str) -> Option<PathBuf> {
    Some(
        project_dir(root)?
            .join("executions")
            .join(format!("{}.json", component(spec))),
    )
}

/// One project's record directory opened once (the PreToolUse fast allow reads the
/// session's binding and the execution's record through it); `Ok(None)` when it does not
/// exist or no variable names one.
pub(crate) fn open_dir(root: &Path) -> Result<Option<store::Beneath>> {
    match project_dir(root) {
        // The base is canonical and the last step is opened without following a link.
        Some(dir) => store::Beneath::open(&dir, true),
        None => Ok(None),
    }
}

/// The raw bytes of `sessions/<session>.json` or `executions/<spec>.json` (`kind`) in an
/// opened record directory.
pub(crate) fn read_in(dir: &store::Beneath, kind: &str, name: &str) -> Result<Option<Vec<u8>>> {
    let file = format!("{}.json", component(name));
    dir.read(&[kind, &file], MAX_RECORD)
}

/// What reading a record file found.
pub(crate) enum Read<T> {
    Absent,
    /// It exists but is not a record (garbled, too large, a link): named.
    Invalid(String),
    Valid(T),
}

pub(crate) fn read<T: DeserializeOwned>(path: Option<&Path>) -> Read<T> {
    let Some(path) = path else {
        return Read::Absent;
    };
    match store::read_prefix(path, MAX_RECORD, true) {
        Ok(None) => Read::Absent,
        Ok(Some(bytes)) => match serde_json::from_slice(&bytes) {
            Ok(v) => Read::Valid(v),
            Err(e) => Read::Invalid(format!("{}: {e}", path.display())),
        },
        Err(e) => Read::Invalid(e.to_string()),
    }
}

/// The record at `path`, `None` when absent or unusable.
pub(crate) fn load<T: DeserializeOwned>(path: Option<&Path>) -> Option<T> {
    match read(path) {
        Read::Valid(v) => Some(v),
        _ => None,
    }
}

/// Write `value` at `path` atomically, creating the directories.
pub(crate) fn save<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    if let Some(dir) = path.parent() {
        store::ensure_dir(dir)?;
    }
    store::write_atomic(path, &store::to_pretty_bytes(value))
}
