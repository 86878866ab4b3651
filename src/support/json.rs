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
