//! The execution protocol as pure transitions: each verb takes the facts it needs (state
//! document, parsed tasks, evidence freshness, critique times, now) and returns either the
//! state patch plus what to say, or every unmet precondition by name. No I/O here; the
//! commands under `commands/` gather the facts and apply the result under the state lock.
//!
//! One file per verb, each read the same way: `unmet` (every refusal, with its code) and
//! `apply` (the transition, called only when nothing is unmet); the public entry
//! (`protocol::complete(…)`) is the two in a row. A repeat of work already done is answered
//! before either (`changed: false`).

use serde::Deserialize;
use serde_json::Value;

use crate::model::state::{self, Attempt, Halt, Nullable, Patch, State, Timestamp};

mod cancel;
mod complete;
mod fail;
mod fix;
mod resume;
mod rollback;
mod start;

pub(crate) use crate::model::tasks::text::{
    append_to_section, section_has, FixTask, MAX_FIX_DEPTH,
};
pub use crate::model::tasks::text::{COMPLETED_HEADING, LEARNINGS_HEADING};
pub use cancel::cancel;
pub(crate) use complete::{complete, CompleteInput, EvidenceFact};
pub use fail::{fail, FailInput};
pub use resume::{resume, Raises};
pub use rollback::{plan_rollback, rollback_done};
pub use start::start;

pub(crate) use crate::io::git::short_commit;
pub(crate) use crate::model::unmet::Unmet;

/// Fix tasks one task may spawn, and how deep `[FIX [FIX …]]` chains may go.
pub(crate) const MAX_FIX_TASKS_PER_TASK: u64 = 3;
/// The parser accepts ids of at most this many dot-separated parts.
pub(crate) const MAX_ID_PARTS: usize = crate::model::tasks::MAX_ID_PARTS;

/// What a verb's transition is: the state patch (`None` = nothing to write) and what to
/// say. (A hook's answer is `hook::Outcome`: a decision for Claude Code with its event.)
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transition {
    pub patch: Option<Patch>,
    /// The one-line human result.
    pub message: String,
    /// Further lines (warnings, the fix block, the continue command).
    pub notes: Vec<String>,
    /// False when the verb found its work already done (idempotent repeat).
    pub changed: bool,
    /// complete: tick the checkbox before writing the state.
    pub check_box: bool,
    /// complete: the line for .progress.md.
    pub progress_line: Option<String>,
    pub fix: Option<FixTask>,
    /// fail/rollback: whether this transition halted the execution.
    pub halted: bool,
}

/// `apply` when nothing is unmet, else every unmet precondition.
fn decide(unmet: Vec<Unmet>, apply: impl FnOnce() -> Transition) -> Result<Transition, Vec<Unmet>> {
    if unmet.is_empty() {
        Ok(apply())
    } else {
        Err(unmet)
    }
}

/// A repeat: the work is already done, nothing to write.
fn unchanged(message: String) -> Transition {
    Transition {
        message,
        ..Default::default()
    }
}

fn status_of(attempt: &Attempt) -> &str {
    attempt.status.as_deref().unwrap_or("")
}

fn n_of(attempt: &Attempt) -> u64 {
    attempt.n.unwrap_or(0)
}

/// The verbs' `now` (RFC 3339 text, as the commands stamp it) as the state stores it.
fn stamp(now: &str) -> Timestamp {
    Timestamp::deserialize(Value::from(now)).expect("any JSON value is a stored Timestamp")
}

/// A `halt` record of `kind`.
fn halt_record(kind: &str, reason: String, now: &str) -> Halt {
    Halt {
        kind: Some(kind.to_string()),
        reason: Some(reason),
        at: Nullable::Set(stamp(now)),
        ..Default::default()
    }
}

/// `State::resume_command`, on the state as `patch` (when given) will leave it.
fn resume_command(state: &State, patch: Option<&Patch>) -> String {
    let name = state.name().unwrap_or("<spec>");
    let Some(p) = patch else {
        return state.resume_command(name);
    };
    let mut doc = state.to_value();
    state::merge_into(&mut doc, &p.to_value());
    let after = State::from_value(&doc).unwrap_or_else(|_| state.clone());
    after.resume_command(name)
}

/// A failed attempt (`task fail`, a rollback of a running one) counts as an iteration of
/// the task; reaching `maxTaskIterations` halts. Adds both to `patch`; returns it, the
/// iteration and, when this halted the execution, why.
fn count_failure(
    state: &State,
    id: &str,
    reason: &str,
    now: &str,
    patch: Patch,
) -> (Patch, u64, Option<String>) {
    let iteration = state.task_iteration().saturating_add(1);
    let max = state.max_task_iterations();
    let patch = patch.task_iteration(iteration);
    if iteration < max || state.halt().is_some() {
        return (patch, iteration, None);
    }
    let why = format!("task {id} failed {iteration} times (maxTaskIterations {max}): {reason}");
    let halt = halt_record(state::HALT_TASK, why.clone(), now);
    (patch.halt(Some(&halt)), iteration, Some(why))
}

/// Preconditions every verb that drives the execution shares.
fn execution_gates(state: &State, unmet: &mut Vec<Unmet>) {
    match state.phase() {
        Some(state::Phase::Execution) => {}
        Some(other) => unmet.push(Unmet::new(
            "phase",
            format!("the execution is {}, not running", other.as_str()),
        )),
        None => unmet.push(Unmet::new(
            "phase",
            format!(
                "the state has no phase: run `specrun state init {}` first",
                state
                    .name()
                    .map(crate::support::shell::spec_flag)
                    .unwrap_or_else(|| "--spec <spec>".into())
            ),
        )),
    }
    if let Some(kind) = state.halt_kind() {
        unmet.push(Unmet::new(
            "not-halted",
            format!(
                "the execution is halted ({kind}): {}",
                crate::claude::roles::for_person(&resume_command(state, None))
            ),
        ));
    }
}

/// What the verbs' tests share.
#[cfg(test)]
mod test_support {
    use super::*;
    use crate::evidence::verify::Freshness;
    use serde_json::json;

    pub(super) const NOW: &str = "2026-01-01T00:10:00.000Z";
    pub(super) const TASKS: &str =
        "- [x] 1 Done\n- [ ] 2 [P] A\n  - **Files**: src/a.rs\n- [ ] 3 [P] B\n- [ ] 4 C\n";

    pub(super) fn exec_state() -> Value {
        json!({"name": "demo", "phase": "execution", "taskIteration": 0, "maxTaskIterations": 2,
               "startedAt": "2026-01-01T00:00:00.000Z", "halt": null})
    }

    pub(super) fn fresh(at: &str) -> EvidenceFact {
        EvidenceFact {
            freshness: Freshness::Fresh,
            ended_at: Some(at.into()),
            mismatch: None,
        }
    }

    pub(super) fn missing() -> EvidenceFact {
        EvidenceFact {
            freshness: Freshness::Missing,
            ended_at: None,
            mismatch: None,
        }
    }

    /// The state after a transition's patch.
    pub(super) fn after(state: &Value, o: &Transition) -> Value {
        let mut s = state.clone();
        if let Some(p) = &o.patch {
            state::merge_into(&mut s, &p.to_value());
        }
        s
    }

    /// The typed state the verbs take, from a test's JSON document.
    pub(super) fn typed(doc: &Value) -> State {
        State::from_value(doc).expect("a well-typed test state")
    }

    pub(super) fn names(e: &[Unmet]) -> Vec<&str> {
        e.iter().map(|u| u.name).collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::support::glob::path_in_files;

    #[test]
    fn files_match_paths_dirs_and_globs() {
        let files = vec![
            "src/a.rs".to_string(),
            "docs/".into(),
            "tests/*.rs".into(),
            "web/**/x.js".into(),
        ];
        for ok in [
            "src/a.rs",
            "docs/x/y.md",
            "tests/t.rs",
            "web/x.js",
            "web/a/b/x.js",
        ] {
            assert!(path_in_files(ok, &files), "{ok}");
        }
        for no in ["src/b.rs", "src/a.rs.bak", "tests/sub/t.rs", "docsx"] {
            assert!(!path_in_files(no, &files), "{no}");
        }
    }
}
