//! The next step, for where the user stands (pure). A person at a shell gets a `specrun`
//! command line that works as printed; inside Claude Code the slash command continues.
//! `status` shows both; verbs print the one for their audience.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::goal::shell_word;
use crate::protocol;
use crate::state::{self, View};
use crate::tasks::{Task, TaskList};

/// Who reads a hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// A person at a shell: only commands they can type.
    Shell,
    /// Claude Code (its Bash tool sets `CLAUDECODE=1`): slash commands and delegation.
    Claude,
}

impl Audience {
    /// Claude Code marks the commands it runs with `CLAUDECODE=1`; everything else is a shell.
    pub fn detect() -> Audience {
        match std::env::var_os("CLAUDECODE") {
            Some(v) if v == "1" => Audience::Claude,
            _ => Audience::Shell,
        }
    }
}

/// The facts about the current task the shell step depends on, read at the edge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskProgress {
    /// A passing task evidence record newer than the running attempt's start.
    pub evidence: bool,
    pub post_code: bool,
    pub post_test: bool,
}

/// The shell command that moves the execution on, or `None` when there is nothing to run
/// (complete, or the tasks must be written first).
pub fn shell_step(
    name: &str,
    state: Option<&Value>,
    tasks: Option<&TaskList>,
    progress: TaskProgress,
) -> Option<String> {
    let list = tasks.filter(|l| !l.tasks.is_empty())?;
    let Some(doc) = state else {
        return Some(format!("specrun state init --spec {name}"));
    };
    let v = View(doc);
    match v.phase() {
        // `resume` clears a halt and undoes a cancel.
        Some("execution") | Some("cancelled") if v.halt().is_some() => {
            return Some(state::resume_command(name, v));
        }
        Some("execution") => {}
        Some("completed") => return None,
        _ => return Some(format!("specrun state init --spec {name}")),
    }
    // An isolated group whose members are all done waits for its merge: `task start` of
    // the task after it and `finish` are refused until `group merge` completes it.
    if group_awaits_merge(doc) {
        return Some(format!("specrun group merge --spec {name}"));
    }
    if list.all_checked() {
        return (!v.completed()).then(|| format!("specrun finish --spec {name}"));
    }
    let task = list.next()?;
    Some(task_step(name, doc, task, progress))
}

/// The step for the current task: start it, verify it, review it, complete it.
fn task_step(name: &str, state: &Value, task: &Task, progress: TaskProgress) -> String {
    let id = task.label();
    if !running(state, &id) {
        return format!("specrun task start {id} --spec {name}");
    }
    match &task.verify {
        Some(cmd) if !progress.evidence => format!(
            "specrun verify run --task {id} --spec {name} --command {}",
            shell_word(cmd)
        ),
        // The review itself is the person's: they give it as JSON on stdin.
        _ if !progress.post_code => {
            format!("specrun critique record --task {id} --stage post-code --spec {name}")
        }
        _ if !progress.post_test => {
            format!("specrun critique record --task {id} --stage post-test --spec {name}")
        }
        _ => format!("specrun task complete {id} --check --spec {name}"),
    }
}

/// Whether the task's last attempt is running.
pub fn running(state: &Value, id: &str) -> bool {
    running_since(state, id).is_some()
}

/// When the task's running attempt started (`None` when it has none running).
pub fn running_since<'a>(state: &'a Value, id: &str) -> Option<&'a str> {
    let last = state.get("attempts")?.get(id)?.as_array()?.last()?;
    if last.get("status").and_then(Value::as_str) != Some("running") {
        return None;
    }
    last.get("startedAt").and_then(Value::as_str)
}

/// The running attempt of any task: (task id, attempt number, startedAt).
pub fn running_attempt(state: &Value) -> Option<(String, u64, String)> {
    let map = state.get("attempts")?.as_object()?;
    map.iter().find_map(|(id, list)| {
        let last = list.as_array()?.last()?;
        (last.get("status").and_then(Value::as_str) == Some("running")).then(|| {
            (
                id.clone(),
                last.get("n").and_then(Value::as_u64).unwrap_or(0),
                last.get("startedAt")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        })
    })
}

/// An open isolated group none of whose members is still running.
fn group_awaits_merge(state: &Value) -> bool {
    let iso = crate::worktree::Isolation::read(state);
    iso.open_group().is_some_and(|g| {
        g.members.iter().all(|id| {
            iso.member(id)
                .is_none_or(|m| m.status != crate::worktree::RUNNING)
        })
    })
}

/// Attempts recorded for a task (0 when none).
pub fn attempt_count(state: &Value, id: &str) -> usize {
    protocol::attempts(state, id).len()
}

/// Whole minutes from `at` (RFC 3339) to `now`; `None` when `at` does not parse.
pub fn minutes_since(at: &str, now: DateTime<Utc>) -> Option<u64> {
    let t = DateTime::parse_from_rfc3339(at).ok()?;
    Some((now - t.with_timezone(&Utc)).num_minutes().max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list() -> TaskList {
        crate::tasks::parse(
            "- [x] 1.1 One\n- [ ] 1.2 Two\n  - **Verify**: `cargo test two`\n- [ ] 1.3 Three\n",
        )
    }

    fn step(state: Option<Value>, progress: TaskProgress) -> Option<String> {
        shell_step("demo", state.as_ref(), Some(&list()), progress)
    }

    #[test]
    fn each_stage_of_a_task_has_its_command() {
        assert_eq!(
            step(None, TaskProgress::default()).unwrap(),
            "specrun state init --spec demo"
        );
        let idle = json!({"phase": "execution"});
        assert_eq!(
            step(Some(idle), TaskProgress::default()).unwrap(),
            "specrun task start 1.2 --spec demo"
        );
        let running = json!({"phase": "execution",
            "attempts": {"1.2": [{"n": 1, "status": "running", "startedAt": "t"}]}});
        assert_eq!(
            step(Some(running.clone()), TaskProgress::default()).unwrap(),
            "specrun verify run --task 1.2 --spec demo --command 'cargo test two'"
        );
        let verified = TaskProgress {
            evidence: true,
            ..Default::default()
        };
        assert_eq!(
            step(Some(running.clone()), verified).unwrap(),
            "specrun critique record --task 1.2 --stage post-code --spec demo"
        );
        let half = TaskProgress {
            evidence: true,
            post_code: true,
            ..Default::default()
        };
        assert_eq!(
            step(Some(running.clone()), half).unwrap(),
            "specrun critique record --task 1.2 --stage post-test --spec demo"
        );
        let reviewed = TaskProgress {
            evidence: true,
            post_code: true,
            post_test: true,
        };
        assert_eq!(
            step(Some(running), reviewed).unwrap(),
            "specrun task complete 1.2 --check --spec demo"
        );
    }

    #[test]
    fn halts_finishing_and_the_end() {
        let halted = json!({"phase": "execution", "halt": {"kind": "task-cap"},
            "taskIteration": 2, "maxTaskIterations": 2});
        assert_eq!(
            step(Some(halted), TaskProgress::default()).unwrap(),
            "specrun resume --spec demo --raise-task 4"
        );
        let cancelled = json!({"phase": "cancelled", "halt": {"kind": "cancelled"}});
        assert_eq!(
            step(Some(cancelled), TaskProgress::default()).unwrap(),
            "specrun resume --spec demo"
        );
        let all = crate::tasks::parse("- [x] 1.1 One\n");
        let run = json!({"phase": "execution"});
        assert_eq!(
            shell_step("demo", Some(&run), Some(&all), TaskProgress::default()).unwrap(),
            "specrun finish --spec demo"
        );
        let done = json!({"phase": "completed", "completed": true});
        assert_eq!(
            shell_step("demo", Some(&done), Some(&all), TaskProgress::default()),
            None
        );
        let empty = crate::tasks::parse("# nothing\n");
        assert_eq!(
            shell_step("demo", None, Some(&empty), TaskProgress::default()),
            None
        );
    }

    #[test]
    fn a_finished_isolated_group_is_merged_next() {
        let member =
            |status: &str| json!({"branch": "b", "worktree": "w", "base": "c", "status": status});
        let group = json!({"members": ["1.2", "1.3"], "baseBranch": "main", "base": "c", "status": "running"});
        let mut s = json!({"phase": "execution", "isolation": {"group": group,
            "members": {"1.2": member("ready"), "1.3": member("running")}}});
        // A member still works: its own steps come first.
        assert_ne!(
            step(Some(s.clone()), TaskProgress::default()).unwrap(),
            "specrun group merge --spec demo"
        );
        s["isolation"]["members"]["1.3"] = member("ready");
        assert_eq!(
            step(Some(s.clone()), TaskProgress::default()).unwrap(),
            "specrun group merge --spec demo"
        );
        s["isolation"]["group"]["status"] = json!("complete");
        assert_eq!(
            step(Some(s), TaskProgress::default()).unwrap(),
            "specrun task start 1.2 --spec demo"
        );
    }

    #[test]
    fn the_running_attempt_is_found_among_all_tasks() {
        let s = json!({"attempts": {"1.1": [{"n": 1, "status": "done"}],
            "1.2": [{"n": 1, "status": "failed"}, {"n": 2, "status": "running", "startedAt": "T"}]}});
        assert_eq!(running_attempt(&s), Some(("1.2".into(), 2, "T".into())));
        assert_eq!(attempt_count(&s, "1.2"), 2);
        assert!(running(&s, "1.2") && !running(&s, "1.1"));
    }
}
