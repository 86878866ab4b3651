//! Stops the guard could not count (the state lock stayed busy past its bound, the lock
//! path is not a file, the disk refused the write). Each leaves a line in an append-only
//! ledger, `.specrun/<spec>.uncounted.jsonl`, which needs no lock and no new file once it
//! exists (an append to a nearly full disk usually still fits in the file's last block).
//! The next stop that is counted adds the missed stops to `globalIteration` (the caps catch
//! up) and moves `guard.uncountedOffset` past them; the lines after that offset are the
//! stops missed in a row, which the Stop hook, `status` and `doctor` report.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::io::project::{Project, EVENTS_DIR};
use crate::model::state::State;

/// From this many stops missed in a row on, the guard says so loudly.
pub(crate) const ALARM_AFTER: u64 = 3;

/// At most this much of the ledger is read past the offset (a ledger is a line per stop).
const READ_LIMIT: u64 = 1 << 20;

pub(crate) fn path(project: &Project, spec_name: &str) -> PathBuf {
    project
        .root
        .join(EVENTS_DIR)
        .join(format!("{spec_name}.uncounted.jsonl"))
}

/// One line of the uncounted ledger.
#[derive(Serialize)]
struct Line<'a> {
    at: String,
    session: Option<&'a str>,
    cause: &'a str,
}

/// Append one missed stop.
pub(crate) fn record(
    project: &Project,
    spec_name: &str,
    session: Option<&str>,
    cause: &str,
) -> Result<()> {
    let line = Line {
        at: crate::io::events::now_rfc3339(),
        session,
        cause,
    };
    let text = serde_json::to_string(&line).expect("a line serializes");
    crate::io::store::append_line(&path(project, spec_name), &text)
}

/// The stops missed since the last counted one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Missed {
    /// Lines past the offset: stops missed in a row.
    pub count: u64,
    /// The ledger's length, the offset once they are counted.
    pub end: u64,
    pub last_cause: Option<String>,
    pub last_at: Option<String>,
}

/// `guard.uncountedOffset`: how much of the ledger is already counted.
pub(crate) fn offset(state: &State) -> u64 {
    state.guard().uncounted_offset.get().copied().unwrap_or(0)
}

/// The ledger's lines past `offset` (none when it does not exist or cannot be read). A
/// ledger shorter than the offset (it was removed) starts again from 0.
pub(crate) fn since(project: &Project, spec_name: &str, offset: u64) -> Missed {
    let Ok(Some(mut file)) = crate::io::store::open_read(&path(project, spec_name)) else {
        return Missed::default();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = if offset > len { 0 } else { offset };
    if file.seek(SeekFrom::Start(start)).is_err() {
        return Missed::default();
    }
    let mut bytes = Vec::new();
    let _ = file.take(READ_LIMIT).read_to_end(&mut bytes);
    // Only whole lines count; a line being written is counted next time.
    let whole = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(&bytes[..0], |i| &bytes[..=i]);
    let mut missed = Missed {
        end: start.saturating_add(whole.len() as u64),
        ..Default::default()
    };
    // A garbled line is still a missed stop.
    let text = String::from_utf8_lossy(whole);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        missed.count += 1;
        let doc: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        missed.last_cause = doc.get("cause").and_then(Value::as_str).map(str::to_string);
        missed.last_at = doc.get("at").and_then(Value::as_str).map(str::to_string);
    }
    missed
}

/// The ledger's current length: where a new execution starts counting.
pub(crate) fn end(project: &Project, spec_name: &str) -> u64 {
    std::fs::symlink_metadata(path(project, spec_name))
        .map(|m| if m.is_file() { m.len() } else { 0 })
        .unwrap_or(0)
}

/// One line for `status` and `doctor` when stops were missed, loud from `ALARM_AFTER` on.
pub(crate) fn summary(missed: &Missed) -> Option<String> {
    if missed.count == 0 {
        return None;
    }
    let cause = missed.last_cause.as_deref().unwrap_or("cause unknown");
    let at = missed.last_at.as_deref().unwrap_or("?");
    let head = if missed.count >= ALARM_AFTER {
        "THE GUARD CANNOT COUNT: "
    } else {
        ""
    };
    Some(format!(
        "{head}{} stop(s) in a row were not counted (last at {at}: {cause}); the next counted stop adds them to globalIteration",
        missed.count
    ))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests set up and inspect files directly
mod tests {
    use super::*;

    #[test]
    fn missed_stops_are_the_whole_lines_past_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("specs")).unwrap();
        let project = Project::discover(Some(dir.path())).unwrap();
        assert_eq!(since(&project, "demo", 0), Missed::default());
        record(&project, "demo", Some("s1"), "lock busy").unwrap();
        record(&project, "demo", Some("s1"), "disk full").unwrap();
        let all = since(&project, "demo", 0);
        assert_eq!(all.count, 2);
        assert_eq!(all.last_cause.as_deref(), Some("disk full"));
        assert_eq!(all.end, end(&project, "demo"));
        assert_eq!(since(&project, "demo", all.end).count, 0);
        // A half-written line is left for the next reader.
        crate::io::store::append_line(&path(&project, "demo"), "{\"at\":").unwrap();
        let p = path(&project, "demo");
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, text.trim_end_matches('\n')).unwrap();
        assert_eq!(since(&project, "demo", all.end).count, 0);
        // An offset past the end (the ledger was removed and started again) reads from 0.
        assert_eq!(since(&project, "demo", 1 << 30).count, 2);
        let s = summary(&all).unwrap();
        assert!(s.starts_with("2 stop(s) in a row were not counted"), "{s}");
        let loud = Missed {
            count: ALARM_AFTER,
            ..all
        };
        assert!(summary(&loud)
            .unwrap()
            .starts_with("THE GUARD CANNOT COUNT"));
    }
}
