//! `task fail`: the attempt failed (counted against `maxTaskIterations`, halting at the
//! cap); in recovery mode with the fix task that follows it.

use serde_json::{Map, Value};

use super::fix::{fix_map_patch, plan_fix};
use super::FixTask;
use super::{count_failure, n_of, resume_command, stamp, status_of, unchanged, Transition, Unmet};
use crate::model::state::{Attempt, Nullable, Patch, State};
use crate::model::tasks::{Task, TaskList};

pub struct FailInput<'a> {
    pub state: &'a State,
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
    history: Vec<Attempt>,
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
        let history = input.state.attempts_of(&id).to_vec();
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
        let recovery = input.state.recovery_mode();
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
        _ if !f.input.state.recovery_mode() => unmet.push(Unmet::new(
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
        .is_some_and(|a| a.fix_task_id.get().is_none());
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
        changed: true,
        ..Default::default()
    };
    let mut patch = Patch::new();
    if already_failed {
        let n = history.last().map(n_of).unwrap_or(1);
        out.message = format!("task {} attempt {n} already failed", input.task.label());
    } else {
        patch = record_failure(input, reason, &mut history, &mut out);
    }
    let fix = fix.and_then(|planned| {
        let (fix, fix_patch) = with_fix(input, reason, planned, &mut history, &mut out);
        patch = std::mem::take(&mut patch).merge(fix_patch);
        fix
    });
    out.fix = fix.filter(|_| input.insert);
    out.patch = Some(patch.attempts(&input.task.label(), &history));
    out
}

/// The last attempt (one marked `notStarted` when there is none: the executor's own
/// `task start` was refused, and the delegation still counts, so a loop of refused starts
/// ends at the task cap too) becomes failed and counts, halting at the cap. Returns the
/// patch so far.
fn record_failure(
    input: &FailInput<'_>,
    reason: &str,
    history: &mut Vec<Attempt>,
    out: &mut Transition,
) -> Patch {
    let id = input.task.label();
    let n = history.last().map(n_of).unwrap_or(1);
    let not_started = history.is_empty();
    if not_started {
        history.push(Attempt {
            n: Some(1),
            started_at: Nullable::Null,
            start_commit: Nullable::Null,
            other: Map::from_iter([("notStarted".to_string(), Value::Bool(true))]),
            ..Default::default()
        });
    }
    let last = history.last_mut().expect("an attempt exists");
    last.status = Some("failed".into());
    last.ended_at = Nullable::Set(stamp(input.now));
    last.end_commit = input.head.map(str::to_string).into();
    last.reason = Nullable::Set(reason.to_string());
    let (patch, iteration, halt) = count_failure(input.state, &id, reason, input.now, Patch::new());
    let before = if not_started {
        " before it started"
    } else {
        ""
    };
    let max = input.state.max_task_iterations();
    out.message = format!("task {id} attempt {n} failed{before} ({iteration}/{max} iterations)");
    let Some(why) = halt else {
        return patch;
    };
    out.halted = true;
    out.message.push_str("; execution halted");
    out.notes.push(format!(
        "halted: {why}; to continue, {}",
        crate::claude::roles::for_person(&resume_command(input.state, Some(&patch)))
    ));
    patch
}

/// Recovery mode's fix task: recorded (and inserted by the caller) with `--insert`, else
/// printed for the coordinator to insert. Returns the fix when one was planned, and what
/// recording it adds to the patch.
fn with_fix(
    input: &FailInput<'_>,
    reason: &str,
    planned: Result<FixTask, Unmet>,
    history: &mut [Attempt],
    out: &mut Transition,
) -> (Option<FixTask>, Patch) {
    let id = input.task.label();
    let f = match planned {
        Ok(f) => f,
        Err(why) => {
            out.notes.push(format!("recovery: no fix task ({why})"));
            return (None, Patch::new());
        }
    };
    let mut patch = Patch::new();
    if input.insert {
        if let Some(last) = history.last_mut() {
            last.fix_task_id = Nullable::Set(f.id.clone());
        }
        let total = input.list.tasks.len() + usize::from(!f.adopted);
        patch = fix_map_patch(input.state, &f, reason, total).merge(plan_with_fix(input, &f));
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
    (Some(f), patch)
}

/// The fix task the binary inserts (or adopts) joins the frozen plan, as it stands in
/// tasks.md once written; a state with no plan (or a broken one) is left as it is.
fn plan_with_fix(input: &FailInput<'_>, f: &FixTask) -> Patch {
    let crate::model::plan::Frozen::Plan(plan) = input.state.frozen_plan() else {
        return Patch::new();
    };
    let block = crate::model::tasks::parse(&format!("{}\n", f.lines.join("\n")));
    let fix = if f.adopted {
        input.list.find(&f.id).ok()
    } else {
        block.tasks.first()
    };
    match fix {
        Some(task) => Patch::new().plan(&plan.with_fix(task, &f.fixes)),
        None => Patch::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::start;
    use super::super::test_support::*;
    use super::*;
    use crate::model::state;
    use crate::model::tasks::parse;
    use serde_json::Value;

    #[test]
    fn fail_counts_halts_at_the_cap_and_refuses_after_complete() {
        let list = parse(TASKS);
        let s = exec_state();
        let task = list.find("2").unwrap();
        let fail_in = |state: &Value| {
            fail(&FailInput {
                state: &typed(state),
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
        let s1 = after(&s, &start(&typed(&s), &list, task, Some("a"), NOW).unwrap());
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
        let s3 = after(
            &s2,
            &start(&typed(&s2), &list, task, Some("a"), NOW).unwrap(),
        );
        let o3 = fail_in(&s3).unwrap();
        assert!(o3.halted && o3.message.contains("halted"));
        let s4 = after(&s3, &o3);
        assert_eq!(s4["halt"]["kind"], state::HALT_TASK);
        assert!(o3.notes[0].contains("--raise-task 4"), "{:?}", o3.notes);
        let ticked = parse(&TASKS.replace("- [ ] 2", "- [x] 2"));
        let err = fail(&FailInput {
            state: &typed(&s1),
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
