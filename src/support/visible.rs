//! Text that came from files, made safe to show a person: a control character (C0, DEL,
//! C1 such as U+009B CSI, ESC above all) is shown as `\xNN` instead of reaching the
//! terminal, where it could clear the screen, retitle the window or hide the halt line.
//! `output` applies `text` to everything it prints; `line` is for a one-line field (a
//! title), where a line break is not meant either; `json` keeps JSON exact.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` is shown escaped: every control but a tab, and a line break where one is meant.
fn hidden(c: char, lines: bool) -> bool {
    c.is_control() && c != '\t' && !(lines && c == '\n')
}

/// Whether `text` may hold such a character: a byte scan without early exit (the compiler
/// vectorises it), cheaper than decoding, since nearly every text holds none (C1 is
/// encoded 0xC2 0x80..=0x9F; a tab or a line break makes `escape` look closer).
fn suspect(text: &str) -> bool {
    text.bytes().fold(false, |seen, b| {
        seen | (b < 0x20) | (b == 0x7f) | (b == 0xc2)
    })
}

fn escape(text: &str, lines: bool) -> Cow<'_, str> {
    if !suspect(text) || !text.chars().any(|c| hidden(c, lines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c, lines) {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Multi-line text for a person: every control character but `\n` and `\t` escaped.
pub(crate) fn text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// A one-line field (a title): a line break is escaped too, so it cannot fake a line.
pub(crate) fn line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// Serialised JSON with DEL and the C1 controls written `\u00NN`: serde_json escapes
/// only C0, and these can occur only inside strings, so the document means the same.
pub(crate) fn json(doc: &str) -> Cow<'_, str> {
    let raw = |c: char| c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c);
    // DEL is 0x7F and C1 0xC2 0x80..=0x9F in UTF-8: most documents hold neither byte.
    if memchr::memchr2(0x7f, 0xc2, doc.as_bytes()).is_none() || !doc.chars().any(raw) {
        return Cow::Borrowed(doc);
    }
    let mut out = String::with_capacity(doc.len() + 8);
    for c in doc.chars() {
        if raw(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `json` as a writer, for a document written as it is serialised: bytes pass through
/// untouched but DEL and the C1 controls (0xC2 0x80..=0x9F, possibly split between two
/// writes), which are written `\u00NN`.
pub(crate) struct JsonWriter<W: std::io::Write> {
    inner: W,
    /// A 0xC2 ended the last write: the next byte says whether it opened a C1 control.
    lead: bool,
}

impl<W: std::io::Write> JsonWriter<W> {
    pub(crate) fn new(inner: W) -> Self {
        Self { inner, lead: false }
    }

    fn escaped(&mut self, code: u8) -> std::io::Result<()> {
        write!(self.inner, "\\u{code:04x}")
    }
}

impl<W: std::io::Write> std::io::Write for JsonWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, mut buf: &[u8]) -> std::io::Result<()> {
        if self.lead && !buf.is_empty() {
            self.lead = false;
            if (0x80..=0x9f).contains(&buf[0]) {
                self.escaped(buf[0])?;
                buf = &buf[1..];
            } else {
                self.inner.write_all(&[0xc2])?;
            }
        }
        while let Some(at) = memchr::memchr2(0x7f, 0xc2, buf) {
            self.inner.write_all(&buf[..at])?;
            match (buf[at], buf.get(at + 1)) {
                (0x7f, _) => self.escaped(0x7f)?,
                (_, None) => {
                    self.lead = true;
                    return Ok(());
                }
                (_, Some(&next)) if (0x80..=0x9f).contains(&next) => {
                    self.escaped(next)?;
                    buf = &buf[at + 2..];
                    continue;
                }
                (_, Some(_)) => self.inner.write_all(&[0xc2])?,
            }
            buf = &buf[at + 1..];
        }
        self.inner.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if std::mem::take(&mut self.lead) {
            self.inner.write_all(&[0xc2])?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "a\x1b[2J\x1b]0;pwned\x07b\u{9b}31mc\x7f\r\0";

    #[test]
    fn every_control_but_a_line_break_and_a_tab_is_shown_escaped() {
        assert_eq!(
            text(HOSTILE),
            "a\\x1b[2J\\x1b]0;pwned\\x07b\\x9b31mc\\x7f\\x0d\\x00"
        );
        assert_eq!(text("one\n\ttwo"), "one\n\ttwo");
        assert!(matches!(text("plain ✓ é"), Cow::Borrowed(_)));
        assert_eq!(line("a\nb\tc"), "a\\x0ab\tc");
    }

    #[test]
    fn json_keeps_its_meaning_without_a_raw_c1_or_del() {
        let value = serde_json::json!({"t": HOSTILE, "k": "é ✓"});
        let doc = value.to_string();
        assert!(doc.contains('\u{9b}'), "serde_json leaves C1 raw: {doc}");
        let safe = json(&doc);
        assert!(!safe.chars().any(char::is_control), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn the_json_writer_escapes_as_json_does_however_the_document_is_cut() {
        use std::io::Write as _;
        let doc = serde_json::json!({"t": HOSTILE, "k": "é ✓ \u{85}\u{a0}"}).to_string();
        for cut in 1..doc.len() {
            let mut writer = JsonWriter::new(Vec::new());
            for chunk in doc.as_bytes().chunks(cut) {
                writer.write_all(chunk).unwrap();
            }
            writer.flush().unwrap();
            assert_eq!(
                String::from_utf8(writer.inner).unwrap(),
                json(&doc),
                "{cut}"
            );
        }
    }
}
