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

/// Print `{"<head_key>": head, "<items_key>": [items…]}` indented, writing each item as it
/// comes through one serializer (no string per item): a million items never sit in memory
/// as one document or one string.
pub fn json_stream<T: serde::Serialize>(
    head_key: &str,
    head: &Value,
    items_key: &str,
    items: impl IntoIterator<Item = T>,
) {
    use serde::ser::{SerializeMap, Serializer};
    /// The items, serialised once as a sequence as they are drawn.
    struct Seq<I>(std::cell::RefCell<Option<I>>);
    impl<I: Iterator<Item = T>, T: serde::Serialize> serde::Serialize for Seq<I> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.0.borrow_mut().take().into_iter().flatten())
        }
    }
    let seq = Seq(std::cell::RefCell::new(Some(items.into_iter())));
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut ser = serde_json::Serializer::pretty(&mut out);
    let written = (|| {
        let mut map = ser.serialize_map(Some(2))?;
        map.serialize_entry(head_key, head)?;
        map.serialize_entry(items_key, &seq)?;
        map.end()
    })();
    // A closed pipe (`specrun … | head`) is not an error.
    if written.is_ok() {
        let _ = out.write_all(b"\n").and_then(|()| out.flush());
    }
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
