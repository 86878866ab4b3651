//! `.specrun/events.jsonl`: the append-only record of guard decisions, task transitions
//! and last-mile results. One JSON object per line, each with `at`.

use serde_json::{Map, Value};

use crate::error::Result;
use crate::io::project::Project;
use crate::io::store;

pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Append `fields` (an object) with `at` first.
pub fn append(project: &Project, fields: Value) -> Result<()> {
    let mut line = Map::new();
    line.insert("at".into(), Value::String(now_rfc3339()));
    if let Value::Object(map) = fields {
        for (k, v) in map {
            line.insert(k, v);
        }
    }
    store::append_line(&project.events_path(), &Value::Object(line).to_string())
}
