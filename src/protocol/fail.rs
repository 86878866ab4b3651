//! `task fail`: the attempt failed (counted against `maxTaskIterations`, halting at the
//! cap); in recovery mode with the fix task that follows it.

use serde_json::{json, Value};

use super::fix::{fix_map_patch, plan_fix, FixTask};
use super::{
    attempts, attempts_patch, count_failure, n_of, status_of, unchanged, Transition, Unmet,
};
use crate::state::{self, View};
use crate::tasks::{Task, TaskList};

pub struct FailInput<'a> {
    pub state: &'a Value,
    pub list: &'a TaskList,
    pub task: &'a Task,
    pub reason: &'a str,
    /// `--insert`: write the fix task into tasks.md.
    pub insert: bool,
    pub head: Option<&'a str>,
    pub now: &'a str,
}

/// A failure as the verb judges it, read once from its input.
struct Failing<'a> {
    input: &'a FailInput<'a>,
    reason: &'a str,
    history: Vec<Value>,
    /// Refusals whatever the flags (an empty reason, a completed task).
    refused: Vec<Unmet>,
    /// The last attempt failed already: a repeat, or `--insert` after a plain fail.
    already_failed: bool,
    /// Recovery mode's fix task, planned when nothing else refuses.
    fix: Option<Result<FixTask, Unmet>>,
}

impl<'a> Failing<'a> {
    fn read(input: &'a FailInput<'a>) -> Self {
        let id = input.task.label();
        let reason = input.reason.trim();
        let history = attempts(input.state, &id);
        let last_status = history.last().map(status_of);
        let mut refused = Vec::new();
        if reason.is_empty() {
            refused.push(Unmet::new("reason", "the reason is empty: say what failed"));
        }
        if input.task.checked || last_status == Some("done") {
            refused.push(Unmet::new(
                "not-complete",
                format!("task {id} is already complete; a completed task cannot fail (roll it back or add a follow-up)"),
            ));
        }
        let already_failed = last_status == Some("failed");
        let recovery = View(input.state).recovery_mode();
        let fix = (recovery && refused.is_empty())
            .then(|| plan_fix(input.state, input.list, input.task, reason));
        Failing {
            input,
            reason,
            history,
            refused,
            already_failed,
            fix,
        }
    }
}

pub fn fail(input: &FailInput<'_>) -> Result<Transition, Vec<Unmet>> {
    let failing = Failing::read(input);
    let unmet = unmet(&failing);
    if !unmet.is_empty() {
        return Err(unmet);
    }
    if failing.already_failed && !input.insert {
        return Ok(unchanged(format!(
            "task {} attempt {} already failed",
            input.task.label(),
            failing.history.last().map(n_of).unwrap_or(0)
        )));
    }
    Ok(apply(failing))
}

fn unmet(f: &Failing<'_>) -> Vec<Unmet> {
    let mut unmet = f.refused.clone();
    if !f.input.insert {
        return unmet;
    }
    match &f.fix {
        _ if !View(f.input.state).recovery_mode() => unmet.push(Unmet::new(
            "recovery-mode",
            "recovery mode is off: fix tasks are only written with `state init --recovery-mode`",
        )),
        Some(Err(why)) => unmet.push(why.clone()),
        _ => {}
    }
    // `--insert` after a plain fail writes the fix that fail printed, once.
    let fix_pending = f
        .history
        .last()
        .is_some_and(|a| a.get("fixTaskId").is_none_or(Value::is_null));
    if f.already_failed && !fix_pending {
        unmet.push(Unmet::new(
            "fix-pending",
            format!(
                "the failed attempt of task {} already has its fix task",
                f.input.task.label()
            ),
        ));
    }
    unmet
}

fn apply(f: Failing<'_>) -> Transition {
    let Failing {
        input,
        reason,
        mut history,
        already_failed,
        fix,
        ..
    } = f;
    let mut out = Transition {
        patch: Some(json!({})),
        changed: true,
        ..Default::default()
    };
    if already_failed {
        let n = history.last().map(n_of).unwrap_or(1);
        out.message = format!("task {} attempt {n} already failed", input.task.label());
    } else {
        record_failure(input, reason, &mut history, &mut out);
    }
    let fix = fix.and_then(|planned| with_fix(input, reason, planned, &mut history, &mut out));
    out.fix = fix.filter(|_| input.insert);
    let patch = out.patch.get_or_insert_with(|| json!({}));
    state::merge_into(patch, &attempts_patch(&input.task.label(), history));
    out
}

/// The last attempt (one marked `notStarted` when there is none: the executor's own
/// `task start` was refused, and the delegation still counts, so a loop of refused starts
/// ends at the task cap too) becomes failed and counts, halting at the cap.
fn record_failure(
    input: &FailInput<'_>,
    reason: &str,
    history: &mut Vec<Value>,
    out: &mut Transition,
) {
    let id = input.task.label();
    let view = View(input.state);
    let n = history.last().map(n_of).unwrap_or(1);
    let not_started = history.is_empty();
    if not_started {
        history.push(json!({"n": 1, "startedAt": null, "startCommit": null, "notStarted": true}));
    }
    let last = history.last_mut().expect("an attempt exists");
    last["status"] = json!("failed");
    last["endedAt"] = json!(input.now);
    last["endCommit"] = json!(input.head);
    last["reason"] = json!(reason);
    let patch = out.patch.get_or_insert_with(|| json!({}));
    let (iteration, halt) = count_failure(view, &id, reason, input.now, patch);
    let before = if not_started {
        " before it started"
    } else {
        ""
    };
    let max = view.max_task_iterations();
    out.message = format!("task {id} attempt {n} failed{before} ({iteration}/{max} iterations)");
    let Some(why) = halt else {
        return;
    };
    let mut halted_doc = input.state.clone();
    state::merge_into(&mut halted_doc, patch);
    out.halted = true;
    out.message.push_str("; execution halted");
    out.notes.push(format!(
        "halted: {why}; to continue: `{}`",
        state::resume_command(view.name().unwrap_or("<spec>"), View(&halted_doc))
    ));
}

/// Recovery mode's fix task: recorded (and inserted by the caller) with `--insert`, else
/// printed for the coordinator to insert. Returns the fix when one was planned.
fn with_fix(
    input: &FailInput<'_>,
    reason: &str,
    planned: Result<FixTask, Unmet>,
    history: &mut [Value],
    out: &mut Transition,
) -> Option<FixTask> {
    let id = input.task.label();
    let f = match planned {
        Ok(f) => f,
        Err(why) => {
            out.notes.push(format!("recovery: no fix task ({why})"));
            return None;
        }
    };
    if input.insert {
        if let Some(last) = history.last_mut() {
            last["fixTaskId"] = json!(f.id);
        }
        let total = input.list.tasks.len() + usize::from(!f.adopted);
        let patch = out.patch.get_or_insert_with(|| json!({}));
        state::merge_into(patch, &fix_map_patch(input.state, &f, reason, total));
        out.message.push_str(&if f.adopted {
            format!(
                "; fix task {} (already in tasks.md) recorded for {id}",
                f.id
            )
        } else {
            format!("; fix task {} inserted after {id}", f.id)
        });
    } else if f.adopted {
        out.notes.push(format!(
            "recovery: fix task {} is already in tasks.md; rerun with --insert to record it",
            f.id
        ));
    } else {
        out.notes.push(format!(
            "recovery: insert this fix task after {id} (or rerun with --insert):"
        ));
        out.notes.extend(f.lines.iter().cloned());
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::super::start;
    use super::super::test_support::*;
    use super::*;
    use crate::tasks::parse;

    #[test]
    fn fail_counts_halts_at_the_cap_and_refuses_after_complete() {
        let list = parse(TASKS);
        let s = exec_state();
        let task = list.find("2").unwrap();
        let fail_in = |state: &Value| {
            fail(&FailInput {
                state,
                list: &list,
                task,
                reason: "tests red",
                insert: false,
                head: None,
                now: NOW,
            })
        };
        // Failed before it started (the executor's start was refused): still an attempt.
        let o0 = fail_in(&s).unwrap();
        assert_eq!(
            o0.message,
            "task 2 attempt 1 failed before it started (1/2 iterations)"
        );
        let s0 = after(&s, &o0);
        assert_eq!(s0["attempts"]["2"][0]["status"], "failed");
        assert_eq!(s0["attempts"]["2"][0]["notStarted"], true);
        let s1 = after(&s, &start(&s, &list, task, Some("a"), NOW).unwrap());
        let o1 = fail_in(&s1).unwrap();
        assert!(!o1.halted);
        let s2 = after(&s1, &o1);
        assert_eq!(
            (
                s2["taskIteration"].as_u64(),
                s2["attempts"]["2"][0]["reason"].as_str()
            ),
            (Some(1), Some("tests red"))
        );
        assert!(
            !fail_in(&s2).unwrap().changed,
            "a second fail of the same attempt counted"
        );
        let s3 = after(&s2, &start(&s2, &list, task, Some("a"), NOW).unwrap());
        let o3 = fail_in(&s3).unwrap();
        assert!(o3.halted && o3.message.contains("halted"));
        let s4 = after(&s3, &o3);
        assert_eq!(s4["halt"]["kind"], state::HALT_TASK);
        assert!(o3.notes[0].contains("--raise-task 4"), "{:?}", o3.notes);
        let ticked = parse(&TASKS.replace("- [ ] 2", "- [x] 2"));
        let err = fail(&FailInput {
            state: &s1,
            list: &ticked,
            task: ticked.find("2").unwrap(),
            reason: "x",
            insert: false,
            head: None,
            now: NOW,
        })
        .unwrap_err();
        assert_eq!(names(&err), ["not-complete"]);
    }
}
