//! Self-critique records (DESIGN §7): `specs/<name>/critique/<ID>-<stage>.json`, written by
//! `specrun critique record`, each with `recordedAt` (RFC 3339, UTC). The validation of a
//! record's checklist is built by the evidence issue; the file convention lives here so
//! the guard and the task verbs read exactly what `critique record` writes.

use std::path::PathBuf;

use serde_json::Value;

use crate::project::Spec;

pub const STAGES: &[&str] = &["post-code", "post-test"];

pub fn record_path(spec: &Spec, task_id: &str, stage: &str) -> PathBuf {
    spec.critique_dir().join(format!("{task_id}-{stage}.json"))
}

/// The record's `recordedAt`, if the record exists and parses.
pub fn recorded_at(spec: &Spec, task_id: &str, stage: &str) -> Option<String> {
    let path = record_path(spec, task_id, stage);
    let doc: Value = crate::store::read_json(&path).ok()??;
    doc.get("recordedAt")?.as_str().map(str::to_string)
}
