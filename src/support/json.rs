//! JSON document helpers that know nothing of what the document holds.

use serde_json::Value;

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

/// The values of the top-level `key` in a JSON object as serde_json's pretty printer writes
/// it (one top-level member per line, indented two spaces), each the text after `"key": `
/// to the line's end without the trailing comma (`{` or `[` for a nested value). A document
/// in another shape finds nothing, so a caller that allows only on what it finds allows no
/// more than a full parse would. One pass over the lines, no parse: the hooks' fast allow.
pub(crate) fn pretty_top_level<'a>(bytes: &'a [u8], key: &str) -> Vec<&'a [u8]> {
    let mut found = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len())) {
        let line = &bytes[start..end];
        start = end + 1;
        let Some(rest) = line.strip_prefix(b"  \"") else {
            continue;
        };
        let Some(rest) = rest.strip_prefix(key.as_bytes()) else {
            continue;
        };
        if let Some(value) = rest.strip_prefix(b"\": ") {
            let value = value.strip_suffix(b"\r").unwrap_or(value);
            found.push(value.strip_suffix(b",").unwrap_or(value));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_top_level_finds_only_top_level_members_as_pretty_json_writes_them() {
        let doc = serde_json::json!({"phase": "execution", "halt": null,
            "attempts": {"1.1": [{"phase": "x", "halt": {"kind": "cap"}}]}, "last": 1});
        let bytes = serde_json::to_vec_pretty(&doc).unwrap();
        assert_eq!(pretty_top_level(&bytes, "phase"), [&b"\"execution\""[..]]);
        assert_eq!(pretty_top_level(&bytes, "halt"), [&b"null"[..]]);
        assert_eq!(pretty_top_level(&bytes, "attempts"), [&b"{"[..]]);
        assert_eq!(pretty_top_level(&bytes, "last"), [&b"1"[..]]);
        assert!(pretty_top_level(&bytes, "kind").is_empty());
        // Compact JSON, or a key that only starts the same, finds nothing.
        assert!(pretty_top_level(br#"{"phase":"execution"}"#, "phase").is_empty());
        assert!(pretty_top_level(&bytes, "pha").is_empty());
        // A duplicated member is found twice (the caller refuses it).
        let dup = b"{\n  \"halt\": null,\n  \"halt\": {\n    \"kind\": \"cap\"\n  }\n}";
        assert_eq!(pretty_top_level(dup, "halt"), [&b"null"[..], &b"{"[..]]);
    }
}
