//! The bottom layer: helpers that know nothing of specrun's files (globs, shell quoting,
//! message text, cuts by characters, JSON merge, SHA-256, fault points for the crash tests,
//! control characters made visible).

pub mod chars;
pub mod fault;
pub mod glob;
pub mod json;
pub mod sha256;
pub mod shell;
pub mod text;
pub mod visible;
