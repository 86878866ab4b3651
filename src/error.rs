//! The one error type. Every variant names the file, field or input it is about, so a
//! message on stderr is enough to act on. `thiserror` writes `Display` from each variant's
//! message (a path shows as `Path::display` does) and `source` from the `source` fields.

use std::io;
use std::path::{Path, PathBuf};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Wrong use of the command line beyond what clap catches.
    #[error("{0}")]
    Usage(String),
    /// An I/O operation on a path failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        path: PathBuf,
        action: &'static str,
        source: io::Error,
    },
    /// A required file or directory is absent.
    #[error("{what} not found: {path}")]
    Missing { what: &'static str, path: PathBuf },
    /// A file is not valid UTF-8.
    #[error("{path} is not valid UTF-8")]
    NotUtf8 { path: PathBuf },
    /// A JSON file does not parse.
    #[error("{path} is not valid JSON: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// A JSON document parses but has the wrong shape.
    #[error("{path}: {message}")]
    Shape { path: PathBuf, message: String },
    /// A known field holds the wrong type (state files and patches).
    #[error("{source_name}: field `{field}` must be {expected}")]
    FieldType {
        source_name: String,
        field: String,
        expected: &'static str,
    },
    /// A patch or record given on the command line is unusable.
    #[error("bad {what}: {message}")]
    BadInput { what: &'static str, message: String },
    /// A spec name that could escape the specs directory or is otherwise unusable.
    #[error("invalid spec name {name:?}: {reason}")]
    SpecName { name: String, reason: &'static str },
    /// A path the binary would write lies outside the project root.
    #[error("{path} lies outside the project root {root}: to work in the project that holds it, pass `--cwd DIR` (a directory of that project) before the subcommand")]
    OutsideProject { path: PathBuf, root: PathBuf },
    /// A task id that does not exist, or exists more than once.
    #[error("{path}: {message}")]
    Task { path: PathBuf, message: String },
    /// The lock next to a file could not be taken in time.
    #[error("could not lock {path} within {waited_ms} ms (another specrun holds it)")]
    LockTimeout { path: PathBuf, waited_ms: u64 },
    /// A git command failed.
    #[error("git {args} failed: {message}")]
    Git { args: String, message: String },
    /// A state transition's precondition does not hold.
    #[error("{message}")]
    Refused { message: String },
    /// A person's decision asked for inside Claude Code (`claude::roles::refuse_person`):
    /// a well-formed "no" (exit 1), not an error.
    #[error("{message}")]
    PersonsDecision { message: String },
    /// A bookkeeping path is, or passes through, a symbolic link.
    #[error("{path} is a symbolic link or lies under one; specrun does not read or write its bookkeeping through links (one could lead outside the project): replace the link with a plain file or directory")]
    Link { path: PathBuf },
    /// A path holds something other than a regular file (a FIFO, a device, a directory).
    #[error("{path} is a {kind}, not a regular file; specrun does not open it (it could block or never end): remove it")]
    NotRegular { path: PathBuf, kind: &'static str },
    /// A file is larger than what specrun reads whole.
    #[error("{path} is larger than {mib} MiB, the most specrun reads of it", mib = .limit >> 20)]
    TooLarge { path: PathBuf, limit: u64 },
}

impl Error {
    pub fn io(path: impl AsRef<Path>, action: &'static str, source: io::Error) -> Self {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            action,
            source,
        }
    }

    pub fn missing(what: &'static str, path: impl AsRef<Path>) -> Self {
        Error::Missing {
            what,
            path: path.as_ref().to_path_buf(),
        }
    }

    pub fn bad_input(what: &'static str, message: impl Into<String>) -> Self {
        Error::BadInput {
            what,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// The messages as the hand-written `Display` wrote them before `thiserror` (tests and
    /// users match on them).
    #[test]
    fn messages_and_sources_are_as_before() {
        let p = || PathBuf::from("/x/a b");
        let json = || serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let cases = [
            (Error::Usage("use it so".into()), "use it so".to_string()),
            (
                Error::io(p(), "read", io::Error::other("boom")),
                "cannot read /x/a b: boom".into(),
            ),
            (Error::missing("tasks.md", p()), "tasks.md not found: /x/a b".into()),
            (Error::NotUtf8 { path: p() }, "/x/a b is not valid UTF-8".into()),
            (
                Error::Json { path: p(), source: json() },
                format!("/x/a b is not valid JSON: {}", json()),
            ),
            (
                Error::Shape { path: p(), message: "no".into() },
                "/x/a b: no".into(),
            ),
            (
                Error::FieldType {
                    source_name: "state".into(),
                    field: "f".into(),
                    expected: "a string",
                },
                "state: field `f` must be a string".into(),
            ),
            (Error::bad_input("patch", "empty"), "bad patch: empty".into()),
            (
                Error::SpecName { name: "a\"b".into(), reason: "quote" },
                "invalid spec name \"a\\\"b\": quote".into(),
            ),
            (
                Error::OutsideProject { path: p(), root: PathBuf::from("/r") },
                "/x/a b lies outside the project root /r: to work in the project that holds it, pass `--cwd DIR` (a directory of that project) before the subcommand".into(),
            ),
            (
                Error::Task { path: p(), message: "dup".into() },
                "/x/a b: dup".into(),
            ),
            (
                Error::LockTimeout { path: p(), waited_ms: 7 },
                "could not lock /x/a b within 7 ms (another specrun holds it)".into(),
            ),
            (
                Error::Git { args: "status -z".into(), message: "bad".into() },
                "git status -z failed: bad".into(),
            ),
            (Error::Refused { message: "not now".into() }, "not now".into()),
            (
                Error::Link { path: p() },
                "/x/a b is a symbolic link or lies under one; specrun does not read or write its bookkeeping through links (one could lead outside the project): replace the link with a plain file or directory".into(),
            ),
            (
                Error::NotRegular { path: p(), kind: "FIFO" },
                "/x/a b is a FIFO, not a regular file; specrun does not open it (it could block or never end): remove it".into(),
            ),
            (
                Error::TooLarge { path: p(), limit: 64 << 20 },
                "/x/a b is larger than 64 MiB, the most specrun reads of it".into(),
            ),
        ];
        for (error, message) in cases {
            assert_eq!(error.to_string(), message);
            let has_source = matches!(error, Error::Io { .. } | Error::Json { .. });
            assert_eq!(error.source().is_some(), has_source, "{message}");
        }
    }
}

/// What the process exits with (uv's `ExitStatus`): the only place the numbers are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: done, or the answer is yes.
    Success,
    /// 1: a well-formed "no" (a refusal, a gate not met, nothing to do next).
    No,
    /// 2: a usage or runtime error.
    Error,
    /// The exit code of a command run for the user, passed through (`verify run`: the
    /// Verify command's own code, 124 when it timed out).
    Passed(i32),
}

impl ExitStatus {
    /// `Success` when `yes`, else `No`.
    pub fn yes_no(yes: bool) -> ExitStatus {
        if yes {
            ExitStatus::Success
        } else {
            ExitStatus::No
        }
    }

    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::No => 1,
            ExitStatus::Error => 2,
            ExitStatus::Passed(code) => code,
        }
    }
}
