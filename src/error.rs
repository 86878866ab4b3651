//! The one error type. Every variant names the file, field or input it is about, so a
//! message on stderr is enough to act on.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug)]
pub enum Error {
    /// Wrong use of the command line beyond what clap catches.
    Usage(String),
    /// An I/O operation on a path failed.
    Io {
        path: PathBuf,
        action: &'static str,
        source: io::Error,
    },
    /// A required file or directory is absent.
    Missing { what: &'static str, path: PathBuf },
    /// A file is not valid UTF-8.
    NotUtf8 { path: PathBuf },
    /// A JSON file does not parse.
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// A JSON document parses but has the wrong shape.
    Shape { path: PathBuf, message: String },
    /// A known field holds the wrong type (state files and patches).
    FieldType {
        source_name: String,
        field: String,
        expected: &'static str,
    },
    /// A patch or record given on the command line is unusable.
    BadInput { what: &'static str, message: String },
    /// A spec name that could escape the specs directory or is otherwise unusable.
    SpecName { name: String, reason: &'static str },
    /// A path the binary would write lies outside the project root.
    OutsideProject { path: PathBuf, root: PathBuf },
    /// A task id that does not exist, or exists more than once.
    Task { path: PathBuf, message: String },
    /// The lock next to a file could not be taken in time.
    LockTimeout { path: PathBuf, waited_ms: u64 },
    /// A git command failed.
    Git { args: String, message: String },
    /// A state transition's precondition does not hold.
    Refused { message: String },
    /// A bookkeeping path is, or passes through, a symbolic link.
    Link { path: PathBuf },
    /// A path holds something other than a regular file (a FIFO, a device, a directory).
    NotRegular { path: PathBuf, kind: &'static str },
    /// A file is larger than what specrun reads whole.
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

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => write!(f, "{m}"),
            Error::Io {
                path,
                action,
                source,
            } => write!(f, "cannot {action} {}: {source}", path.display()),
            Error::Missing { what, path } => write!(f, "{what} not found: {}", path.display()),
            Error::NotUtf8 { path } => write!(f, "{} is not valid UTF-8", path.display()),
            Error::Json { path, source } => {
                write!(f, "{} is not valid JSON: {source}", path.display())
            }
            Error::Shape { path, message } => write!(f, "{}: {message}", path.display()),
            Error::FieldType {
                source_name,
                field,
                expected,
            } => write!(f, "{source_name}: field `{field}` must be {expected}"),
            Error::BadInput { what, message } => write!(f, "bad {what}: {message}"),
            Error::SpecName { name, reason } => write!(f, "invalid spec name {name:?}: {reason}"),
            Error::OutsideProject { path, root } => write!(
                f,
                "{} lies outside the project root {}",
                path.display(),
                root.display()
            ),
            Error::Task { path, message } => write!(f, "{}: {message}", path.display()),
            Error::LockTimeout { path, waited_ms } => write!(
                f,
                "could not lock {} within {waited_ms} ms (another specrun holds it)",
                path.display()
            ),
            Error::Git { args, message } => write!(f, "git {args} failed: {message}"),
            Error::Refused { message } => write!(f, "{message}"),
            Error::Link { path } => write!(
                f,
                "{} is a symbolic link or lies under one; specrun does not read or write its bookkeeping through links (one could lead outside the project): replace the link with a plain file or directory",
                path.display()
            ),
            Error::NotRegular { path, kind } => write!(
                f,
                "{} is a {kind}, not a regular file; specrun does not open it (it could block or never end): remove it",
                path.display()
            ),
            Error::TooLarge { path, limit } => write!(
                f,
                "{} is larger than {} MiB, the most specrun reads of it",
                path.display(),
                limit >> 20
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Json { source, .. } => Some(source),
            _ => None,
        }
    }
}
