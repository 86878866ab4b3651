//! Fix-task planning for recovery mode: the `[FIX x]` block a failure adds after its
//! task, within the limits on how many and how deep.

use super::{FixTask, Unmet, MAX_FIX_DEPTH, MAX_FIX_TASKS_PER_TASK, MAX_ID_PARTS};
use crate::model::state::{FixEntry, Nullable, Patch, State};
use crate::model::tasks::{Task, TaskList};

/// The ids a task's `[FIX x]` chain passes through: `fix_depth(1.2.1 fixing 1.2) = 1`.
fn fix_depth(list: &TaskList, task: &Task) -> usize {
    let mut depth = 0;
    let mut cur = task;
    while let Some(target) = cur.fixes() {
        depth += 1;
        match list.tasks.iter().find(|t| t.label() == target) {
            Some(t) if depth <= MAX_FIX_DEPTH + 1 => cur = t,
            _ => break,
        }
    }
    depth
}

/// The fix task that would follow `task` now, or why there can be none.
pub(crate) fn plan_fix(
    state: &State,
    list: &TaskList,
    task: &Task,
    reason: &str,
) -> Result<FixTask, Unmet> {
    let id = task.label();
    if task.id.is_none() {
        return Err(Unmet::new(
            "fix-id",
            format!("task {id} has no id to derive a fix id from"),
        ));
    }
    let entry = state.fix_entry(&id);
    let fixes: Vec<&Task> = list
        .tasks
        .iter()
        .filter(|t| t.fixes() == Some(id.as_str()))
        .collect();
    let one_line: String = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    let short: String = one_line.chars().take(50).collect();
    let title = format!("Fix: {short}");
    if let Some(orphan) = orphan(entry, &fixes, &title) {
        return Ok(FixTask {
            id: orphan.label(),
            fixes: id,
            lines: Vec::new(),
            adopted: true,
        });
    }
    let recorded = entry.and_then(|e| e.attempts).unwrap_or(0);
    let fix_id = next_fix_id(list, task, (fixes.len() as u64).max(recorded))?;
    Ok(FixTask {
        lines: fix_block(task, &fix_id, &title, &one_line),
        id: fix_id,
        fixes: id,
        adopted: false,
    })
}

/// The very block this failure would insert, unchecked and unknown to the state
/// (`fixTaskMap` entry `entry`): a run killed between its two writes put it there.
fn orphan<'a>(entry: Option<&FixEntry>, fixes: &[&'a Task], title: &str) -> Option<&'a Task> {
    let known: &[String] = entry
        .and_then(|e| e.fix_task_ids.as_deref())
        .unwrap_or_default();
    fixes
        .iter()
        .find(|t| !t.checked && t.id.is_some() && t.title == title && !known.contains(&t.label()))
        .copied()
}

/// The id of the next fix of `task`, which has `used` fixes already, within the limits.
fn next_fix_id(list: &TaskList, task: &Task, used: u64) -> Result<String, Unmet> {
    let id = task.label();
    if used >= MAX_FIX_TASKS_PER_TASK {
        return Err(Unmet::new(
            "fix-limit",
            format!("task {id} already has {used} fix tasks (at most {MAX_FIX_TASKS_PER_TASK})"),
        ));
    }
    let depth = fix_depth(list, task) + 1;
    if depth > MAX_FIX_DEPTH {
        return Err(Unmet::new(
            "fix-depth",
            format!("a fix of {id} would be {depth} fixes deep (at most {MAX_FIX_DEPTH})"),
        ));
    }
    // `used` may come from the state (`fixTaskMap.<id>.attempts`, any u64): saturate.
    let mut n = used.saturating_add(1);
    let mut fix_id = format!("{id}.{n}");
    while list.tasks.iter().any(|t| t.label() == fix_id) && n < u64::MAX {
        n += 1;
        fix_id = format!("{id}.{n}");
    }
    if fix_id.split('.').count() > MAX_ID_PARTS {
        return Err(Unmet::new(
            "fix-depth",
            format!("fix id {fix_id} would have more than {MAX_ID_PARTS} parts, which tasks.md ids cannot hold"),
        ));
    }
    Ok(fix_id)
}

/// The lines of the fix block: the failed task's Files and Verify, its reason in the Do.
fn fix_block(task: &Task, fix_id: &str, title: &str, one_line: &str) -> Vec<String> {
    let id = task.label();
    let mut lines = vec![
        format!("- [ ] {fix_id} [FIX {id}] {title}"),
        format!(
            "  - **Do**: Find why task {id} failed ({one_line}), fix the cause, then retry {id}"
        ),
    ];
    if !task.files.is_empty() {
        lines.push(format!("  - **Files**: {}", task.files.join(", ")));
    }
    lines.push(format!(
        "  - **Done when**: the failure of task {id} no longer occurs"
    ));
    if let Some(verify) = &task.verify {
        lines.push(format!("  - **Verify**: `{verify}`"));
    }
    lines.push(format!(
        "  - **Commit**: `fix(recovery): address the failure of task {id}`"
    ));
    lines
}

/// The `fixTaskMap` patch after inserting `fix`.
pub(crate) fn fix_map_patch(
    state: &State,
    fix: &FixTask,
    reason: &str,
    total_tasks: usize,
) -> Patch {
    let entry = state.fix_entry(&fix.fixes);
    let attempts = entry.and_then(|e| e.attempts).unwrap_or(0);
    let mut ids = entry
        .and_then(|e| e.fix_task_ids.clone())
        .unwrap_or_default();
    ids.push(fix.id.clone());
    let entry = FixEntry {
        attempts: Some(attempts.saturating_add(1)),
        fix_task_ids: Some(ids),
        last_error: Nullable::Set(reason.to_string()),
        ..Default::default()
    };
    Patch::new()
        .fix_entry(&fix.fixes, &entry)
        .total_tasks(total_tasks as u64)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::typed;
    use super::*;
    use crate::model::tasks::parse;
    use serde_json::json;

    #[test]
    fn recovery_plans_fix_tasks_within_limits() {
        let list =
            parse("- [ ] 1.2 A\n  - **Files**: a.rs\n  - **Verify**: `cargo test`\n- [ ] 1.3 B\n");
        let s = typed(&json!({"recoveryMode": true}));
        let fix = plan_fix(&s, &list, &list.tasks[0], "boom\nsecond line").unwrap();
        assert_eq!(fix.id, "1.2.1");
        assert_eq!(fix.lines[0], "- [ ] 1.2.1 [FIX 1.2] Fix: boom second line");
        assert!(fix
            .lines
            .contains(&"  - **Verify**: `cargo test`".to_string()));
        let reparsed = parse(&format!("{}\n", fix.lines.join("\n")));
        assert_eq!(reparsed.tasks[0].fixes(), Some("1.2"));
        let full = typed(&json!({"fixTaskMap": {"1.2": {"attempts": 3}}}));
        assert_eq!(
            plan_fix(&full, &list, &list.tasks[0], "x")
                .unwrap_err()
                .name,
            "fix-limit"
        );
        // Three fixes deep is allowed (a 4-level id), a fourth is not.
        let deep = parse(
            "- [ ] 1 A\n- [ ] 1.1 [FIX 1] F\n- [ ] 1.1.1 [FIX 1.1] G\n- [ ] 1.1.1.1 [FIX 1.1.1] H\n",
        );
        assert_eq!(
            plan_fix(&s, &deep, &deep.tasks[2], "x").unwrap().id,
            "1.1.1.2"
        );
        assert_eq!(
            plan_fix(&s, &deep, &deep.tasks[3], "x").unwrap_err().name,
            "fix-depth"
        );
        let patch = fix_map_patch(&s, &fix, "boom", 3).to_value();
        assert_eq!(
            patch["fixTaskMap"]["1.2"],
            json!({"attempts": 1, "fixTaskIds": ["1.2.1"], "lastError": "boom"})
        );
    }
}
