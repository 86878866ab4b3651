//! The bottom layer: helpers that know nothing of specrun's files (globs, shell quoting,
//! message text, cuts by characters, JSON merge, SHA-256, fault points for the crash tests,
//! control characters made visible).

pub(crate) mod chars;
pub(crate) mod fault;
pub(crate) mod glob;
pub(crate) mod json;
pub(crate) mod sha256;
pub(crate) mod shell;
pub(crate) mod text;
pub(crate) mod visible;
