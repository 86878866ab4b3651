//! Evidence (DESIGN §7): a verification record is bound to the working-tree fingerprint it
//! ran against. Fresh = its tree equals the current tree. Pure assessment here; the
//! fingerprint itself is computed at the edge (`current_tree`).
//!
//! Record shape (in state `verificationBlocks.<phase>` or `taskEvidence.<id>`):
//! `{command, exitCode, startedAt, durationMs, tree, outputTail, timedOut, taskId}`.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::project::{Project, Spec};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Freshness {
    /// Passed, and recorded against the current tree.
    Fresh,
    /// Passed, but the tree has changed since.
    Stale,
    /// Recorded, but the command failed or timed out.
    Failed,
    /// No record.
    Missing,
}

impl Freshness {
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Fresh => "fresh",
            Freshness::Stale => "stale",
            Freshness::Failed => "failed",
            Freshness::Missing => "missing",
        }
    }

    pub fn is_ok(self) -> bool {
        self == Freshness::Fresh
    }
}

/// Which evidence slot: a phase block or one task's evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    Phase(String),
    Task(String),
}

impl Slot {
    /// The state dot path of this slot (`verificationBlocks.execution`, `taskEvidence.1.2`
    /// is not a dot path: task ids contain dots, so use `record_in`).
    pub fn describe(&self) -> String {
        match self {
            Slot::Phase(p) => format!("verificationBlocks.{p}"),
            Slot::Task(id) => format!("taskEvidence[{id}]"),
        }
    }

    /// The record in a state document, if any.
    pub fn record_in<'a>(&self, state: &'a Value) -> Option<&'a Value> {
        let (key, name) = match self {
            Slot::Phase(p) => ("verificationBlocks", p),
            Slot::Task(id) => ("taskEvidence", id),
        };
        state.get(key)?.get(name.as_str()).filter(|v| v.is_object())
    }
}

/// Judge a record against the current tree fingerprint (`None` when it could not be computed).
pub fn assess(record: Option<&Value>, current_tree: Option<&str>) -> Freshness {
    let Some(record) = record else {
        return Freshness::Missing;
    };
    let passed = record.get("exitCode").and_then(Value::as_i64) == Some(0)
        && !record.get("timedOut").and_then(Value::as_bool).unwrap_or(false);
    if !passed {
        return Freshness::Failed;
    }
    let tree = record.get("tree").and_then(Value::as_str);
    match (tree, current_tree) {
        (Some(a), Some(b)) if a == b => Freshness::Fresh,
        _ => Freshness::Stale,
    }
}

/// The working-tree fingerprint, excluding the spec's bookkeeping. Built by the evidence issue.
pub fn current_tree(_project: &Project, _spec: &Spec) -> Result<String> {
    Err(Error::Usage("the tree fingerprint is not implemented yet".into()))
}

/// Assess one slot of a state document against the current tree.
pub fn check(project: &Project, spec: &Spec, state: &Value, slot: &Slot) -> Freshness {
    let record = slot.record_in(state);
    if record.is_none() {
        return Freshness::Missing;
    }
    let tree = current_tree(project, spec).ok();
    assess(record, tree.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assess_covers_every_outcome() {
        let ok = json!({"exitCode": 0, "tree": "t1", "timedOut": false});
        assert_eq!(assess(None, Some("t1")), Freshness::Missing);
        assert_eq!(assess(Some(&ok), Some("t1")), Freshness::Fresh);
        assert_eq!(assess(Some(&ok), Some("t2")), Freshness::Stale);
        assert_eq!(assess(Some(&ok), None), Freshness::Stale);
        assert_eq!(assess(Some(&json!({"exitCode": 1, "tree": "t1"})), Some("t1")), Freshness::Failed);
        assert_eq!(
            assess(Some(&json!({"exitCode": 0, "tree": "t1", "timedOut": true})), Some("t1")),
            Freshness::Failed
        );
    }

    #[test]
    fn slots_find_their_records() {
        let state = json!({"verificationBlocks": {"execution": {"exitCode": 0}}, "taskEvidence": {"1.2": {"exitCode": 1}}});
        assert!(Slot::Phase("execution".into()).record_in(&state).is_some());
        assert!(Slot::Task("1.2".into()).record_in(&state).is_some());
        assert!(Slot::Task("1.3".into()).record_in(&state).is_none());
    }
}
