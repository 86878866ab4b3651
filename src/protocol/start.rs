//! `task start`: a new running attempt of the current task (or of a task in its group).

use super::{
    decide, execution_gates, n_of, short_commit, stamp, status_of, unchanged, Transition, Unmet,
};
use crate::model::state::{Attempt, Nullable, Patch, State, Timestamp};
use crate::model::tasks::{Task, TaskList};

/// The tasks `task start` accepts now: the next task's parallel group. While a task has a
/// pending `[FIX]` task, that fix is next (`TaskList::next_index`), not the task itself.
pub(crate) fn startable(list: &TaskList) -> Vec<&Task> {
    list.parallel_group(list.next_index())
}

pub fn start(
    state: &State,
    list: &TaskList,
    task: &Task,
    head: Option<&str>,
    now: &str,
) -> Result<Transition, Vec<Unmet>> {
    let history = state.attempts_of(&task.label());
    if let Some(running) = repeat(task, history) {
        return Ok(running);
    }
    decide(unmet(state, list, task), || {
        apply(task, history.to_vec(), head, now)
    })
}

/// Starting a task whose attempt already runs: said, nothing written.
fn repeat(task: &Task, history: &[Attempt]) -> Option<Transition> {
    let last = history.last().filter(|a| status_of(a) == "running")?;
    Some(unchanged(format!(
        "task {} already started (attempt {} running since {})",
        task.label(),
        n_of(last),
        last.started_at
            .get()
            .and_then(Timestamp::text)
            .unwrap_or("?")
    )))
}

fn unmet(state: &State, list: &TaskList, task: &Task) -> Vec<Unmet> {
    let id = task.label();
    let mut unmet = Vec::new();
    execution_gates(state, &mut unmet);
    if task.checked {
        unmet.push(Unmet::new(
            "unchecked",
            format!("task {id} is already checked in tasks.md"),
        ));
        return unmet;
    }
    let now_ok = startable(list);
    if !now_ok.iter().any(|t| t.index == task.index) {
        let names: Vec<String> = now_ok.iter().map(|t| t.label()).collect();
        let current = if names.is_empty() {
            "no task (all are checked)".to_string()
        } else {
            names.join(", ")
        };
        unmet.push(Unmet::new(
            "current-task",
            format!("task {id} is not the current task; startable now: {current}"),
        ));
    }
    unmet
}

fn apply(task: &Task, mut history: Vec<Attempt>, head: Option<&str>, now: &str) -> Transition {
    let id = task.label();
    let n = history
        .iter()
        .map(n_of)
        .max()
        .unwrap_or(0)
        .saturating_add(1);
    history.push(Attempt {
        n: Some(n),
        status: Some("running".into()),
        started_at: Nullable::Set(stamp(now)),
        start_commit: head.map(str::to_string).into(),
        ..Default::default()
    });
    let short = head.map(short_commit).unwrap_or("(no commit yet)");
    Transition {
        patch: Some(Patch::new().attempts(&id, &history)),
        message: format!("task {id} started: attempt {n} from {short}"),
        changed: true,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::model::tasks::parse;
    use serde_json::json;

    #[test]
    fn start_accepts_the_current_group_only_and_is_idempotent() {
        let list = parse(TASKS);
        let s = exec_state();
        let out = start(&typed(&s), &list, list.find("3").unwrap(), Some("abc"), NOW).unwrap();
        let s2 = after(&s, &out);
        assert_eq!(
            s2["attempts"]["3"][0],
            json!({"n": 1, "startedAt": NOW, "startCommit": "abc", "status": "running"})
        );
        let again = start(
            &typed(&s2),
            &list,
            list.find("3").unwrap(),
            Some("def"),
            NOW,
        )
        .unwrap();
        assert!(!again.changed && again.patch.is_none());
        let err = start(&typed(&s), &list, list.find("4").unwrap(), None, NOW).unwrap_err();
        assert_eq!(names(&err), ["current-task"]);
        assert!(err[0].detail.contains("startable now: 2, 3"), "{}", err[0]);
        let err = start(&typed(&s), &list, list.find("1").unwrap(), None, NOW).unwrap_err();
        assert_eq!(names(&err), ["unchecked"]);
        let mut halted = s.clone();
        halted["halt"] = json!({"kind": "stall", "reason": "r"});
        halted["phase"] = json!("cancelled");
        let err = start(&typed(&halted), &list, list.find("2").unwrap(), None, NOW).unwrap_err();
        assert_eq!(names(&err), ["phase", "not-halted"]);
    }

    #[test]
    fn a_pending_fix_task_is_startable_and_its_task_is_not() {
        let list = parse("- [ ] 1.2 A\n- [ ] 1.2.1 [FIX 1.2] Fix\n- [ ] 1.3 B\n");
        let ids: Vec<String> = startable(&list).iter().map(|t| t.label()).collect();
        assert_eq!(ids, ["1.2.1"]);
        let list = parse("- [ ] 1.2 A\n- [x] 1.2.1 [FIX 1.2] Fix\n- [ ] 1.3 B\n");
        let ids: Vec<String> = startable(&list).iter().map(|t| t.label()).collect();
        assert_eq!(ids, ["1.2"]);
    }
}
