//! `task rollback`: return the tree to the attempt's start commit (the discarded work is
//! saved first, by the command); a running attempt becomes a failed one.

use serde_json::Value;

use super::{count_failure, n_of, short_commit, stamp, status_of, Transition, Unmet};
use crate::model::state::{Attempt, Nullable, Patch, State};
use crate::model::tasks::Task;

/// What `task rollback` will do, decided before touching the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollbackPlan {
    pub n: u64,
    pub start_commit: String,
    pub was_running: bool,
}

/// Check rollback's preconditions. `changed` = repo-relative paths that differ from the
/// start commit (committed since, staged, unstaged or untracked), bookkeeping excluded.
pub fn plan_rollback(
    state: &State,
    task: &Task,
    head: Option<&str>,
    changed: &[String],
    force: bool,
) -> Result<RollbackPlan, Vec<Unmet>> {
    let id = task.label();
    let Some(last) = state.attempts_of(&id).last() else {
        return Err(vec![Unmet::new(
            "attempt",
            format!("task {id} has no attempt to roll back"),
        )]);
    };
    let mut unmet = unmet(&id, last, head);
    if !force {
        unmet.extend(outside_files(task, changed));
    }
    if !unmet.is_empty() {
        return Err(unmet);
    }
    Ok(RollbackPlan {
        n: n_of(last),
        start_commit: start_commit(last).expect("checked above").to_string(),
        was_running: status_of(last) == "running",
    })
}

fn start_commit(attempt: &Attempt) -> Option<&str> {
    attempt.start_commit.get().map(String::as_str)
}

/// The attempt's own preconditions: not complete, and a commit to return to.
fn unmet(id: &str, last: &Attempt, head: Option<&str>) -> Vec<Unmet> {
    let mut unmet = Vec::new();
    if status_of(last) == "done" {
        unmet.push(Unmet::new(
            "not-complete",
            format!(
                "attempt {} of task {id} is complete; a completed task is not rolled back",
                n_of(last)
            ),
        ));
    }
    if head.is_none() {
        unmet.push(Unmet::new(
            "has-commits",
            "the repository has no commits: there is nothing to return to",
        ));
    }
    if last.other.get("notStarted") == Some(&Value::Bool(true)) {
        unmet.push(Unmet::new(
            "start-commit",
            format!("task {id} failed before it started: it changed nothing to roll back"),
        ));
    } else if start_commit(last).is_none() {
        unmet.push(Unmet::new(
            "start-commit",
            format!("attempt {} of task {id} started before the first commit; there is no commit to return to", n_of(last)),
        ));
    }
    unmet
}

/// Changes outside the task's Files are rolled back only with `--force`.
fn outside_files(task: &Task, changed: &[String]) -> Option<Unmet> {
    let scope = crate::support::glob::FileEntries::new(&task.files);
    let outside: Vec<&String> = changed.iter().filter(|p| !scope.covers(p)).collect();
    if outside.is_empty() {
        return None;
    }
    let shown: Vec<&str> = outside.iter().take(10).map(|s| s.as_str()).collect();
    let more = if outside.len() > 10 {
        format!(" and {} more", outside.len() - 10)
    } else {
        String::new()
    };
    Some(Unmet::new(
        "within-files",
        format!(
            "changes outside task {}'s Files ({}): {}{more}; pass --force to roll them back too (they are saved first)",
            task.label(),
            if task.files.is_empty() { "none listed".to_string() } else { task.files.join(", ") },
            shown.join(", ")
        ),
    ))
}

/// The state change after a rollback (its `apply`): the attempt records its saved ref; a
/// running attempt becomes failed and counts as an iteration (rollback is not a free retry).
pub fn rollback_done(
    state: &State,
    task: &Task,
    plan: &RollbackPlan,
    saved_ref: &str,
    now: &str,
) -> Transition {
    let id = task.label();
    let mut history = state.attempts_of(&id).to_vec();
    let mut patch = Patch::new();
    let mut notes = Vec::new();
    let mut halted = false;
    if let Some(last) = history.last_mut() {
        last.rollback_ref = Nullable::Set(saved_ref.to_string());
        last.rolled_back_at = Nullable::Set(stamp(now));
        if plan.was_running {
            last.status = Some("failed".into());
            last.ended_at = Nullable::Set(stamp(now));
            last.reason = Nullable::Set("rolled back".into());
            let (counted, _, halt) = count_failure(state, &id, "rolled back", now, patch);
            patch = counted;
            if let Some(why) = halt {
                halted = true;
                notes.push(format!("halted: {why}"));
            }
        }
    }
    Transition {
        patch: Some(patch.attempts(&id, &history)),
        message: format!(
            "task {id} rolled back to {}; discarded work saved at {saved_ref}",
            short_commit(&plan.start_commit)
        ),
        notes,
        changed: true,
        halted,
        ..Default::default()
    }
}
#[cfg(test)]
mod tests {
    use super::super::start;
    use super::super::test_support::*;
    use super::*;
    use crate::model::tasks::parse;

    #[test]
    fn rollback_preconditions() {
        let list = parse(TASKS);
        let task = list.find("2").unwrap();
        let s = exec_state();
        assert_eq!(
            names(&plan_rollback(&typed(&s), task, Some("h"), &[], false).unwrap_err()),
            ["attempt"]
        );
        let s1 = after(&s, &start(&typed(&s), &list, task, None, NOW).unwrap());
        let err = plan_rollback(&typed(&s1), task, None, &["b.rs".into()], false).unwrap_err();
        assert_eq!(names(&err), ["has-commits", "start-commit", "within-files"]);
        let s2 = after(
            &s,
            &start(&typed(&s), &list, task, Some("abc"), NOW).unwrap(),
        );
        let plan =
            plan_rollback(&typed(&s2), task, Some("def"), &["src/a.rs".into()], false).unwrap();
        assert!(plan.was_running && plan.start_commit == "abc");
        assert!(plan_rollback(&typed(&s2), task, Some("def"), &["b.rs".into()], true).is_ok());
        let out = rollback_done(
            &typed(&s2),
            task,
            &plan,
            "refs/heads/specrun/rollback/demo/2-1",
            NOW,
        );
        let s3 = after(&s2, &out);
        assert_eq!(s3["attempts"]["2"][0]["status"], "failed");
        assert_eq!(s3["taskIteration"], 1);
    }
}
