//! A task as compact JSON, written by hand into a reused buffer: `tasks list --json` of a
//! million tasks spent a quarter of its instructions in serde's per-field calls. Byte for
//! byte what `serde_json::to_vec(&task)` writes (the tests compare both).

use super::Task;

impl Task {
    /// Append the task's compact JSON (`serde_json`'s own layout and field order) to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"index\":");
        number(out, self.index);
        out.extend_from_slice(b",\"id\":");
        opt_str(out, self.id.as_deref());
        out.extend_from_slice(b",\"title\":");
        string(out, &self.title);
        out.extend_from_slice(if self.checked {
            b",\"checked\":true,\"markers\":"
        } else {
            b",\"checked\":false,\"markers\":"
        });
        strings(out, &self.markers);
        out.extend_from_slice(b",\"lineStart\":");
        number(out, self.line_start);
        out.extend_from_slice(b",\"lineEnd\":");
        number(out, self.line_end);
        out.extend_from_slice(b",\"phase\":");
        opt_str(out, self.phase.as_deref());
        out.extend_from_slice(b",\"do\":");
        opt_str(out, self.do_.as_deref());
        out.extend_from_slice(b",\"files\":");
        strings(out, &self.files);
        out.extend_from_slice(b",\"doneWhen\":");
        opt_str(out, self.done_when.as_deref());
        out.extend_from_slice(b",\"verify\":");
        opt_str(out, self.verify.as_deref());
        out.extend_from_slice(b",\"commit\":");
        opt_str(out, self.commit.as_deref());
        out.extend_from_slice(b",\"depends\":");
        strings(out, &self.depends);
        // The fields serde skips when empty, in the struct's order.
        if let Some(why) = &self.no_verify {
            out.extend_from_slice(b",\"noVerify\":");
            string(out, why);
        }
        if self.depth != 0 {
            out.extend_from_slice(b",\"depth\":");
            number(out, self.depth);
        }
        if self.optional {
            out.extend_from_slice(b",\"optional\":true");
        }
        out.push(b'}');
    }
}

/// Decimal digits, as serde writes an integer (itoa: serde_json's own digit writer).
fn number(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

fn opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => string(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

fn strings(out: &mut Vec<u8>, items: &[String]) {
    out.push(b'[');
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, s);
    }
    out.push(b']');
}

/// A JSON string: copied between quotes when nothing in it needs an escape (nearly every
/// task's text), else serde_json's escaping, so both agree on every string.
fn string(out: &mut Vec<u8>, s: &str) {
    if plain(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(&mut *out, s).expect("a string always serialises into a Vec");
    }
}

/// No byte below 0x20, no `"` and no `\\`: eight bytes at a time (the zero-byte test of
/// `word ^ needle`, and of `word - 0x20` for the controls), the tail byte by byte.
fn plain(b: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut words = b.chunks_exact(8);
    for chunk in words.by_ref() {
        let w = u64::from_le_bytes(chunk.try_into().expect("chunks of 8"));
        // A byte below 0x20 borrows in `w - 0x20…`; one at 0x80 or above may too, so
        // those are masked out by `!w` (they are never controls).
        let low = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
        if low | has_zero(w ^ (ONES * u64::from(b'"'))) | has_zero(w ^ (ONES * u64::from(b'\\')))
            != 0
        {
            return false;
        }
    }
    words
        .remainder()
        .iter()
        .all(|&c| c >= 0x20 && c != b'"' && c != b'\\')
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    fn same_as_serde(text: &str) {
        let list = parse(text);
        assert!(!list.tasks.is_empty(), "{text:?}");
        for t in &list.tasks {
            let mut hand = Vec::new();
            t.write_json(&mut hand);
            assert_eq!(
                String::from_utf8(hand).unwrap(),
                serde_json::to_string(t).unwrap(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn written_as_serde_writes_it() {
        same_as_serde("# Tasks\n## Phase 1: \"Core\" \\ é\n- [x] 1.1 [P] [FIX 1.0] Add \"it\" \t\u{1b}\u{7f}\u{9b}\n  - **Do**: a\n    b\\c\n  - **Files**: src/a.rs, `src/b.rs`\n  - **Done when**: it parses\n  - **Verify**: `cargo test parser`\n  - **Commit**: `feat: add`\n  - **Depends**: 1.0, 0.9\n- [ ] Untitled\n  - [ ]* 1.1.1 Nested optional\n    - **No verify**: docs \"only\"\n- [-] V4 [VERIFY] Check\n");
        same_as_serde("- [ ] \n- [X] T001 [P] x\r\n  - **Verify**:\n    ```\n    make\n    ```\n");
    }

    #[test]
    fn plain_agrees_with_the_byte_test_at_every_byte_and_place() {
        let slow = |b: &[u8]| b.iter().all(|&c| c >= 0x20 && c != b'"' && c != b'\\');
        for len in 0..20 {
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut hay = vec![b'a'; len];
                    hay[at] = byte;
                    // A neighbour at 0x80 or above must not hide or invent a control.
                    if at + 1 < len {
                        hay[at + 1] = 0xc3;
                    }
                    assert_eq!(super::plain(&hay), slow(&hay), "{hay:?}");
                }
            }
        }
    }

    #[test]
    fn every_control_character_escapes_as_serde_escapes_it() {
        let all: String = (0u8..0x80)
            .map(char::from)
            .filter(|c| *c != '\n' && *c != '\r')
            .collect();
        same_as_serde(&format!("- [ ] 1 t{all}\n  - **Do**: {all}\n"));
    }
}
