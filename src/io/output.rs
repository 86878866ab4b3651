//! The only place that prints. stdout carries data (one JSON document or the human view);
//! stderr carries diagnostics prefixed `specrun:`.

use std::io::Write;

use serde_json::Value;

/// Print a JSON answer on one line.
pub fn json_line<T: serde::Serialize + ?Sized>(value: &T) {
    line(&serde_json::to_string(value).expect("an answer serializes"));
}

/// Print a JSON answer indented, for people and for `state get`.
pub fn json_pretty<T: serde::Serialize + ?Sized>(value: &T) {
    line(&serde_json::to_string_pretty(value).expect("an answer serializes"));
}

/// Print `{"<head_key>": head, "<items_key>": [items…]}` indented, writing each item as it
/// comes: a million items never sit in memory as one document or one string.
pub fn json_stream<H: serde::Serialize, T: serde::Serialize>(
    head_key: &str,
    head: &H,
    items_key: &str,
    items: impl IntoIterator<Item = T>,
) {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let write = || -> std::io::Result<()> {
        let head = serde_json::to_string_pretty(head)?.replace('\n', "\n  ");
        write!(
            out,
            "{{\n  {}: {head},\n  {}: [",
            Value::from(head_key),
            Value::from(items_key)
        )?;
        for (i, item) in items.into_iter().enumerate() {
            out.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
            let text = serde_json::to_string_pretty(&item)?;
            out.write_all(text.replace('\n', "\n    ").as_bytes())?;
        }
        out.write_all(b"\n  ]\n}\n")?;
        out.flush()
    };
    // A closed pipe (`specrun … | head`) is not an error.
    let _ = write();
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
