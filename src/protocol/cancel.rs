//! `cancel`: stop the execution without deleting anything; `resume` undoes it.

use serde_json::{json, Value};

use super::{unchanged, Transition};
use crate::state::{self, View};

/// Nothing can refuse a cancel: a cancelled or completed execution is a repeat.
pub fn cancel(state: &Value, now: &str) -> Transition {
    repeat(state).unwrap_or_else(|| apply(state, now))
}

fn repeat(state: &Value) -> Option<Transition> {
    let view = View(state);
    let spec = view.name().unwrap_or("<spec>");
    if view.phase() == Some("cancelled") {
        return Some(unchanged(format!("{spec} is already cancelled")));
    }
    if view.phase() == Some("completed") || view.completed() {
        // A finished execution has nothing left to stop; cancelling it would only make
        // `resume` refuse to undo the cancel.
        return Some(unchanged(format!(
            "{spec} is completed; there is nothing to cancel"
        )));
    }
    None
}

fn apply(state: &Value, now: &str) -> Transition {
    let view = View(state);
    let spec = view.name().unwrap_or("<spec>");
    Transition {
        patch: Some(json!({
            "phase": "cancelled",
            // `resume` puts this phase back (a cancelled plan must not resume as execution).
            "halt": {"kind": state::HALT_CANCELLED, "reason": "cancelled by `specrun cancel`",
                     "at": now, "phaseBefore": view.phase()},
        })),
        message: format!(
            "{spec}: cancelled; nothing was deleted (undo with `specrun resume --spec {spec}`)"
        ),
        changed: true,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::resume::{resume, Raises};
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn cancel_then_resume_restores_execution() {
        let s = exec_state();
        let c = cancel(&s, NOW);
        let s2 = after(&s, &c);
        assert_eq!(
            (s2["phase"].as_str(), s2["halt"]["kind"].as_str()),
            (Some("cancelled"), Some("cancelled"))
        );
        assert!(!cancel(&s2, NOW).changed);
        let s3 = after(&s2, &resume(&s2, Raises::default(), None, NOW).unwrap());
        assert_eq!(s3["phase"], "execution");
        assert!(s3["halt"].is_null());
        // A cancelled plan resumes as a plan, not as an execution that skips approval.
        let mut planning = exec_state();
        planning["phase"] = json!("planning");
        let cancelled = after(&planning, &cancel(&planning, NOW));
        let resumed = after(
            &cancelled,
            &resume(&cancelled, Raises::default(), None, NOW).unwrap(),
        );
        assert_eq!(resumed["phase"], "planning");
        // A completed execution is not cancelled (resume could not undo it).
        let mut done = exec_state();
        done["phase"] = json!("completed");
        done["completed"] = json!(true);
        let c = cancel(&done, NOW);
        assert!(!c.changed && c.patch.is_none(), "{c:?}");
    }
}
