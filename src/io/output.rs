//! The only place that prints. stdout carries data (one JSON document or the human view);
//! stderr carries diagnostics prefixed `specrun:`. No control character from a file
//! reaches a terminal raw: text is printed through `visible::text`, JSON through
//! `visible::json` (exact data still); only `styled` prints escape sequences of its own.

use std::io::Write;

use serde_json::Value;

use crate::support::visible;

/// Print a JSON answer on one line.
pub fn json_line<T: serde::Serialize + ?Sized>(value: &T) {
    let text = serde_json::to_string(value).expect("an answer serializes");
    line_exact(&visible::json(&text));
}

/// Print a JSON answer indented, for people and for `state get`.
pub fn json_pretty<T: serde::Serialize + ?Sized>(value: &T) {
    let text = serde_json::to_string_pretty(value).expect("an answer serializes");
    line_exact(&visible::json(&text));
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
        let head = visible::json(&serde_json::to_string_pretty(head)?).replace('\n', "\n  ");
        write!(
            out,
            "{{\n  {}: {head},\n  {}: [",
            Value::from(head_key),
            Value::from(items_key)
        )?;
        for (i, item) in items.into_iter().enumerate() {
            out.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
            let text = serde_json::to_string_pretty(&item)?;
            let text = visible::json(&text);
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
    line_exact(&visible::text(text));
}

fn line_exact(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

/// Print text on stdout with no newline added.
pub fn raw(text: &str) {
    styled(&visible::text(text));
}

/// Print text holding escape sequences of specrun's own (status's colours, `--watch`'s
/// redraw) as it is: every part that came from a file must have passed `visible` already.
pub fn styled(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

pub fn error(message: &str) {
    let message = visible::text(message);
    let _ = writeln!(std::io::stderr().lock(), "specrun: error: {message}");
}

pub fn warn(message: &str) {
    let message = visible::text(message);
    let _ = writeln!(std::io::stderr().lock(), "specrun: warning: {message}");
}

pub fn note(message: &str) {
    let message = visible::text(message);
    let _ = writeln!(std::io::stderr().lock(), "specrun: {message}");
}
