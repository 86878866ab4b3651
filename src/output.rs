//! The only place that prints. stdout carries data (one JSON document or the human view);
//! stderr carries diagnostics prefixed `specrun:`.

use std::io::Write;

use serde_json::Value;

/// Print a JSON value on one line.
pub fn json_line(value: &Value) {
    line(&value.to_string());
}

/// Print a JSON value indented, for people and for `state get`.
pub fn json_pretty(value: &Value) {
    line(&serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()));
}

/// Print text on stdout; a closed pipe (`specrun … | head`) is not an error.
pub fn line(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

/// Print text on stdout with no newline added.
pub fn raw(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

pub fn error(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "specrun: error: {message}");
}

pub fn warn(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "specrun: warning: {message}");
}

pub fn note(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "specrun: {message}");
}
