//! `cancel`: stop the execution without deleting anything; `resume` undoes it.

use serde_json::{Map, Value};

use super::{halt_record, unchanged, Transition};
use crate::model::state::{self, Patch, Phase, State};

/// Nothing can refuse a cancel: a cancelled or completed execution is a repeat.
pub fn cancel(state: &State, now: &str) -> Transition {
    repeat(state).unwrap_or_else(|| apply(state, now))
}

fn repeat(state: &State) -> Option<Transition> {
    let spec = state.name().unwrap_or("<spec>");
    if state.phase() == Some(Phase::Cancelled) {
        return Some(unchanged(format!("{spec} is already cancelled")));
    }
    if state.phase() == Some(Phase::Completed) || state.completed() {
        // A finished execution has nothing left to stop; cancelling it would only make
        // `resume` refuse to undo the cancel.
        return Some(unchanged(format!(
            "{spec} is completed; there is nothing to cancel"
        )));
    }
    None
}

fn apply(state: &State, now: &str) -> Transition {
    let spec = state.name().unwrap_or("<spec>");
    let mut halt = halt_record(
        state::HALT_CANCELLED,
        "cancelled by `specrun cancel`".into(),
        now,
    );
    // `resume` puts this phase back (a cancelled plan must not resume as execution).
    let before = Value::from(state.phase().map(Phase::as_str));
    halt.other = Map::from_iter([("phaseBefore".to_string(), before)]);
    Transition {
        patch: Some(Patch::new().phase(Phase::Cancelled).halt(Some(&halt))),
        message: format!(
            "{spec}: cancelled; nothing was deleted (undoing it is a person's decision: {})",
            crate::claude::roles::for_person(&format!(
                "specrun resume {}",
                crate::support::shell::spec_flag(spec)
            ))
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
    use serde_json::json;

    #[test]
    fn cancel_then_resume_restores_execution() {
        let s = exec_state();
        let c = cancel(&typed(&s), NOW);
        let s2 = after(&s, &c);
        assert_eq!(
            (s2["phase"].as_str(), s2["halt"]["kind"].as_str()),
            (Some("cancelled"), Some("cancelled"))
        );
        assert!(!cancel(&typed(&s2), NOW).changed);
        let s3 = after(
            &s2,
            &resume(&typed(&s2), Raises::default(), 0.0, None, NOW).unwrap(),
        );
        assert_eq!(s3["phase"], "execution");
        assert!(s3["halt"].is_null());
        // A cancelled plan resumes as a plan, not as an execution that skips approval.
        let mut planning = exec_state();
        planning["phase"] = json!("planning");
        let cancelled = after(&planning, &cancel(&typed(&planning), NOW));
        let resumed = after(
            &cancelled,
            &resume(&typed(&cancelled), Raises::default(), 0.0, None, NOW).unwrap(),
        );
        assert_eq!(resumed["phase"], "planning");
        // A completed execution is not cancelled (resume could not undo it).
        let mut done = exec_state();
        done["phase"] = json!("completed");
        done["completed"] = json!(true);
        let c = cancel(&typed(&done), NOW);
        assert!(!c.changed && c.patch.is_none(), "{c:?}");
    }
}
