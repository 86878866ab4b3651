//! The only place that prints. stdout carries data (one JSON document or the human view);
//! stderr carries diagnostics prefixed `specrun:`. No control character from a file
//! reaches a terminal raw: text is printed through `visible::text`, JSON through
//! `visible::json` (exact data still); only `styled` prints escape sequences of its own.

// The one module allowed to name stdout and stderr (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::io::Write;

use crate::support::visible;

/// Print a JSON answer on one line.
pub(crate) fn json_line<T: serde::Serialize + ?Sized>(value: &T) {
    let text = serde_json::to_string(value).expect("an answer serializes");
    line_exact(&visible::json(&text));
}

/// Print a JSON answer indented, for people and for `state get`.
pub(crate) fn json_pretty<T: serde::Serialize + ?Sized>(value: &T) {
    let text = serde_json::to_string_pretty(value).expect("an answer serializes");
    line_exact(&visible::json(&text));
}

/// Print `{"<head_key>": head, "<items_key>": [items…]}` (indented at a terminal), writing each item as it
/// comes: a million items never sit in memory as one document or one string. For a program
/// (a pipe or a file) each item is `compact`'s JSON (which must be what serde_json writes
/// for it), put through one reused buffer. DEL and C1 are written `\u00NN` as
/// `visible::json` does.
pub(crate) fn json_stream<H: serde::Serialize, T: serde::Serialize>(
    head_key: &str,
    head: &H,
    items_key: &str,
    items: impl IntoIterator<Item = T>,
    compact: impl Fn(&T, &mut Vec<u8>),
) {
    // The escaping sits under the buffer: it scans 64 KiB at a time, not serde's fragments.
    let mut out =
        std::io::BufWriter::with_capacity(1 << 16, visible::JsonWriter::new(unbuffered_stdout()));
    // Indented for a person at a terminal; compact for a program, where a million tasks'
    // indentation is a third of the bytes and of the time.
    let written = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        pretty_stream(&mut out, head_key, head, items_key, items)
    } else {
        compact_stream(&mut out, head_key, head, items_key, items, compact)
    };
    // A closed pipe (`specrun … | head`) is not an error.
    if written.is_ok() {
        let _ = out.write_all(b"\n").and_then(|()| out.flush());
    }
}

/// Stdout without std's line buffer, which searches every write for its last newline (a
/// twentieth of `tasks list --json` of a million tasks): the caller buffers, and a compact
/// document holds one newline, at its end.
fn unbuffered_stdout() -> Box<dyn Write> {
    let stdout = std::io::stdout();
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        // Nothing printed before may be left behind in std's buffer.
        let _ = stdout.lock().flush();
        if let Ok(fd) = stdout.as_fd().try_clone_to_owned() {
            return Box::new(std::fs::File::from(fd));
        }
    }
    Box::new(stdout.lock())
}

fn pretty_stream<T: serde::Serialize>(
    out: &mut impl Write,
    head_key: &str,
    head: &impl serde::Serialize,
    items_key: &str,
    items: impl IntoIterator<Item = T>,
) -> std::io::Result<()> {
    use serde::ser::Serializer;
    /// The items, serialised once as a sequence as they are drawn.
    struct Seq<I>(std::cell::RefCell<Option<I>>);
    impl<I: Iterator<Item = T>, T: serde::Serialize> serde::Serialize for Seq<I> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.0.borrow_mut().take().into_iter().flatten())
        }
    }
    let seq = Seq(std::cell::RefCell::new(Some(items.into_iter())));
    let ser = &mut serde_json::Serializer::pretty(out);
    write_map(ser, head_key, head, items_key, &seq).map_err(std::io::Error::other)
}

/// `{"head_key":head,"items_key":[…]}` as serde_json's compact layout, each item written
/// into the same buffer and handed on whole.
fn compact_stream<T>(
    out: &mut impl Write,
    head_key: &str,
    head: &impl serde::Serialize,
    items_key: &str,
    items: impl IntoIterator<Item = T>,
    compact: impl Fn(&T, &mut Vec<u8>),
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1 << 10);
    buf.push(b'{');
    serde_json::to_writer(&mut buf, head_key)?;
    buf.push(b':');
    serde_json::to_writer(&mut buf, head)?;
    buf.push(b',');
    serde_json::to_writer(&mut buf, items_key)?;
    buf.extend_from_slice(b":[");
    out.write_all(&buf)?;
    for (i, item) in items.into_iter().enumerate() {
        buf.clear();
        if i > 0 {
            buf.push(b',');
        }
        compact(&item, &mut buf);
        out.write_all(&buf)?;
    }
    out.write_all(b"]}")
}

fn write_map<S: serde::Serializer>(
    ser: S,
    head_key: &str,
    head: &impl serde::Serialize,
    items_key: &str,
    items: &impl serde::Serialize,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = ser.serialize_map(Some(2))?;
    map.serialize_entry(head_key, head)?;
    map.serialize_entry(items_key, items)?;
    map.end()
}

/// Print text on stdout; a closed pipe (`specrun … | head`) is not an error.
pub(crate) fn line(text: &str) {
    line_exact(&visible::text(text));
}

fn line_exact(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

/// Print text on stdout with no newline added.
pub(crate) fn raw(text: &str) {
    styled(&visible::text(text));
}

/// Print text holding escape sequences of specrun's own (status's colours, `--watch`'s
/// redraw) as it is: every part that came from a file must have passed `visible` already.
pub(crate) fn styled(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Whether stdout is a terminal (colour, `--watch`'s redraw).
pub(crate) fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal()
}

/// Relay a verified command's own output to stderr as it comes, so a person watching sees
/// the run; a closed stderr is not an error (the command must keep draining).
pub(crate) fn relay(bytes: &[u8]) {
    let _ = std::io::stderr().lock().write_all(bytes);
}

pub(crate) fn error(message: &str) {
    let message = visible::text(message);
    let _ = writeln!(std::io::stderr().lock(), "specrun: error: {message}");
}

pub(crate) fn warn(message: &str) {
    let message = visible::text(message);
    let _ = writeln!(std::io::stderr().lock(), "specrun: warning: {message}");
}

pub(crate) fn note(message: &str) {
    let message = visible::text(message);
    let _ = writeln!(std::io::stderr().lock(), "specrun: {message}");
}
