//! JSON document helpers that know nothing of what the document holds.

use indexmap::IndexMap;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Recursive merge: objects recurse, arrays and scalars replace.
pub fn merge_into(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (key, pv) in p {
                match t.get_mut(key) {
                    Some(tv) if tv.is_object() && pv.is_object() => merge_into(tv, pv),
                    _ => {
                        t.insert(key.clone(), pv.clone());
                    }
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// For each of `keys`, the value of that top-level member of a JSON object as serde_json's
/// pretty printer writes it (one top-level member per line, indented two spaces): the text
/// after `"key": ` to the line's end without the trailing comma (`{` or `[` for a nested
/// value), when the member is there exactly once (absent or repeated: `None`). One pass,
/// no parse: the hooks' fast allow. A document in another shape finds nothing, so a
/// caller that allows only on what it finds allows no more than a full parse would.
pub(crate) fn pretty_top_level_once<'a, const N: usize>(
    bytes: &'a [u8],
    keys: [&str; N],
) -> [Option<&'a [u8]>; N] {
    let mut found: [(u8, Option<&'a [u8]>); N] = [(0, None); N];
    // A top-level line is the only one that starts `\n  "` (nested ones are indented
    // further; a string cannot hold a raw newline), so one substring search skips every
    // nested line without looking at it, and a line's end is sought only for a wanted key.
    for at in memchr::memmem::find_iter(bytes, b"\n  \"") {
        let line = &bytes[at + 4..];
        let Some(close) = memchr::memchr(b'"', line) else {
            break;
        };
        let Some(i) = keys.iter().position(|k| k.as_bytes() == &line[..close]) else {
            continue;
        };
        let Some(value) = line[close + 1..].strip_prefix(b": ") else {
            continue;
        };
        let value = &value[..memchr::memchr(b'\n', value).unwrap_or(value.len())];
        let value = value.strip_suffix(b"\r").unwrap_or(value);
        found[i] = (
            found[i].0.saturating_add(1),
            Some(value.strip_suffix(b",").unwrap_or(value)),
        );
    }
    found.map(|(seen, v)| v.filter(|_| seen == 1))
}

/// A JSON object parsed but for the top-level members `keep` names, which stay text: a
/// large member nothing reads costs a syntax scan instead of a tree, and is written back
/// byte for byte.
pub(crate) struct Split<'a> {
    /// Every member but the kept ones, in the document's order.
    pub(crate) doc: Map<String, Value>,
    /// The kept members' texts.
    pub(crate) kept: Vec<(String, &'a RawValue)>,
    /// Every top-level key, in the document's order.
    order: Vec<String>,
}

impl<'a> Split<'a> {
    /// `None` when `text` is not one JSON object: the caller's whole parse names the fault.
    /// A repeated key keeps its first place and its last value, as a whole parse does.
    pub(crate) fn parse(text: &'a str, keep: impl Fn(&str) -> bool) -> Option<Split<'a>> {
        let members: IndexMap<String, &'a RawValue> = serde_json::from_str(text).ok()?;
        let mut split = Split {
            doc: Map::new(),
            kept: Vec::new(),
            order: Vec::with_capacity(members.len()),
        };
        for (key, raw) in members {
            split.order.push(key.clone());
            if keep(&key) {
                split.kept.push((key, raw));
            } else {
                split.doc.insert(key, serde_json::from_str(raw.get()).ok()?);
            }
        }
        Some(split)
    }

    /// `doc` (the parsed members, changed or not) with the kept members back in their
    /// places: the document's keys in its order, then `doc`'s new ones in theirs, which is
    /// the order `merge_into` of the whole document gives.
    pub(crate) fn joined<'s>(&'s self, doc: &'s Map<String, Value>) -> impl Serialize + 's {
        Joined { split: self, doc }
    }
}

struct Joined<'s, 'a> {
    split: &'s Split<'a>,
    doc: &'s Map<String, Value>,
}

impl Serialize for Joined<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for key in &self.split.order {
            if let Some((_, raw)) = self.split.kept.iter().find(|(k, _)| k == key) {
                map.serialize_entry(key, raw)?;
            } else if let Some(v) = self.doc.get(key) {
                map.serialize_entry(key, v)?;
            }
        }
        for (key, v) in self.doc {
            if !self.split.order.contains(key) {
                map.serialize_entry(key, v)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_top_level_once_finds_only_top_level_members_as_pretty_json_writes_them() {
        let doc = serde_json::json!({"phase": "execution", "halt": null,
            "attempts": {"1.1": [{"phase": "x", "halt": {"kind": "cap"}}]}, "last": 1});
        let bytes = serde_json::to_vec_pretty(&doc).unwrap();
        let keys = ["phase", "halt", "attempts", "last", "kind"];
        let [phase, halt, attempts, last, kind] = pretty_top_level_once(&bytes, keys);
        assert_eq!(phase, Some(&b"\"execution\""[..]));
        assert_eq!(halt, Some(&b"null"[..]));
        assert_eq!(attempts, Some(&b"{"[..]));
        assert_eq!(last, Some(&b"1"[..]));
        assert_eq!(kind, None);
        // Compact JSON, or a key that only starts the same, finds nothing.
        let compact = br#"{"phase":"execution"}"#;
        assert_eq!(pretty_top_level_once(compact, ["phase"]), [None]);
        assert_eq!(pretty_top_level_once(&bytes, ["pha"]), [None]);
        // A duplicated member is refused.
        let dup = b"{\n  \"halt\": null,\n  \"halt\": {\n    \"kind\": \"cap\"\n  }\n}";
        assert_eq!(pretty_top_level_once(dup, ["halt"]), [None]);
        let crlf = b"{\r\n  \"phase\": \"execution\",\r\n  \"halt\": null\r\n}";
        assert_eq!(pretty_top_level_once(crlf, ["halt"]), [Some(&b"null"[..])]);
    }
}
