//! The facts of a spec as they are on disk, read without a lock (a read-only view):
//! the state file as read, tasks.md parsed, git, and what `snapshot` derives from them —
//! the gates and the coordinator's next action. `snapshot`, `status`, `report`,
//! `statusline`, `last-mile`, `doctor`, `goal` and the hooks' fast path read through here.

use std::path::Path;

use serde_json::{json, Value};

use crate::critique;
use crate::error::{Error, Result};
use crate::evidence;
use crate::git;
use crate::next::{self, TaskProgress};
use crate::project::{Project, Spec};
use crate::state::{self, View};
use crate::store;
use crate::tasks::{self, Task, TaskList};

/// What the state file holds, if it can be read.
pub enum StateRead {
    Absent,
    Invalid(String),
    Valid(Value),
}

pub struct Facts {
    pub spec: Option<Spec>,
    pub spec_dir_exists: bool,
    pub tasks: Option<TaskList>,
    pub tasks_error: Option<String>,
    pub state: StateRead,
    pub git: git::GitInfo,
}

pub fn read_state(path: &Path) -> StateRead {
    match store::read_json(path) {
        Ok(None) => StateRead::Absent,
        Ok(Some(doc)) => match state::typecheck(&doc, &path.display().to_string()) {
            Ok(()) => StateRead::Valid(doc),
            Err(e) => StateRead::Invalid(e.to_string()),
        },
        Err(e) => StateRead::Invalid(e.to_string()),
    }
}

pub fn collect(project: &Project, spec_arg: Option<&str>) -> Result<Facts> {
    let spec = project.spec(spec_arg)?;
    let mut facts = Facts {
        spec_dir_exists: spec.as_ref().is_some_and(|s| s.dir.is_dir()),
        spec,
        tasks: None,
        tasks_error: None,
        state: StateRead::Absent,
        git: git::info(&project.root),
    };
    if let Some(spec) = &facts.spec {
        match store::read_text(&spec.tasks_path(), "tasks file") {
            Ok(text) => facts.tasks = Some(tasks::parse(&text)),
            Err(Error::Missing { .. }) => {}
            Err(e) => facts.tasks_error = Some(e.to_string()),
        }
        facts.state = read_state(&spec.state_path());
    }
    Ok(facts)
}

fn artifact(path: &Path) -> Value {
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file());
    json!({
        "exists": meta.is_some(),
        "path": path.display().to_string(),
        "bytes": meta.map(|m| m.len()),
    })
}

impl Facts {
    pub fn state_doc(&self) -> Option<&Value> {
        match &self.state {
            StateRead::Valid(v) => Some(v),
            _ => None,
        }
    }

    /// Stable gate strings and the one sentence telling the coordinator what to do.
    pub fn gates_and_action(&self) -> (Vec<&'static str>, String) {
        let Some(spec) = &self.spec else {
            return (
                vec!["no-active-spec"],
                "No active spec: plan one with /specrun:start <name> <goal>, or pass --spec NAME."
                    .into(),
            );
        };
        let n = &spec.name;
        if !self.spec_dir_exists {
            return (
                vec!["missing-spec"],
                format!(
                    "Spec directory {} does not exist: plan it with /specrun:start {n} <goal>.",
                    spec.dir.display()
                ),
            );
        }
        let mut gates = Vec::new();
        let Some(list) = &self.tasks else {
            gates.push(if self.tasks_error.is_some() {
                "unreadable-tasks"
            } else {
                "missing-tasks"
            });
            return (gates, format!("Write specs/{n}/tasks.md (plan it with /specrun:start {n} <goal>) before implementing."));
        };
        if list.tasks.is_empty() {
            return (vec!["empty-tasks"], format!("specs/{n}/tasks.md has no tasks: add `- [ ] 1.1 Title` lines, then run /specrun:implement {n}."));
        }
        if !list.duplicate_ids().is_empty() {
            gates.push("duplicate-task-ids");
        }
        let all_checked = list.all_checked();
        let doc = match &self.state {
            StateRead::Invalid(_) => {
                gates.push("invalid-state");
                return (gates, format!("The state file is unreadable: inspect it, then run `specrun state init --spec {n} --force` (the old file is kept)."));
            }
            StateRead::Absent => {
                gates.push("no-state");
                return (gates, format!("Initialise the execution: `specrun state init --spec {n} --session-id <session>`, then delegate task {}.", first_label(list)));
            }
            StateRead::Valid(doc) => doc,
        };
        let v = View(doc);
        if v.halt().is_some() {
            gates.push("halted");
            let reason = v.halt_reason().unwrap_or("no reason recorded");
            let resume = state::resume_command(n, v);
            return (gates, format!("The execution is halted ({reason}): a person runs `{resume}`, then /specrun:implement {n}."));
        }
        match v.phase() {
            Some("cancelled") => {
                gates.push("cancelled");
                return (
                    gates,
                    format!(
                        "The execution was cancelled: start again with /specrun:implement {n}."
                    ),
                );
            }
            Some("completed") => {
                gates.push("completed");
                return (gates, format!("Spec {n} is complete: nothing to run."));
            }
            _ => {}
        }
        if v.phase() != Some("execution") {
            gates.push("not-executing");
            return (gates, format!("Initialise the execution: `specrun state init --spec {n} --session-id <session>`."));
        }
        // The seed's definition: executing, every box ticked, completion not yet recorded.
        if all_checked && v.completed() {
            gates.push("completed");
            return (gates, format!("Spec {n} is complete: nothing to run."));
        }
        // Ticked is not earned: a box ticked by hand, a running attempt, an open claim or an
        // unmerged group comes first, with the Stop hook's own words.
        if let Some(first) = all_checked
            .then(|| crate::completion::unearned(n, doc, list))
            .and_then(|u| u.into_iter().next())
        {
            gates.push("completion-unearned");
            return (
                gates,
                format!("Every task is checked, but {}", first.detail),
            );
        }
        if all_checked {
            gates.push("completion-unmarked");
            return (gates, format!("Every task is checked: run `specrun verify run --phase execution --spec {n} --command <full test command>`, then end with ALL_TASKS_COMPLETE."));
        }
        if v.awaiting_approval() {
            gates.push("awaiting-approval");
            return (
                gates,
                "The execution awaits the user's approval: ask, then continue.".into(),
            );
        }
        let group: Vec<String> = list
            .parallel_group(list.next_index())
            .iter()
            .map(|t| t.label())
            .collect();
        let action = if group.len() > 1 {
            format!("Delegate tasks {} in parallel (one Agent call each), then continue with the next task.", group.join(", "))
        } else {
            let t = &list.tasks[list.next_index()];
            let agent = if t.is_verify() {
                "specrun:qa-engineer"
            } else {
                "specrun:spec-executor"
            };
            format!("Delegate task {} ({}) to {agent}.", t.label(), t.title)
        };
        (gates, action)
    }

    pub fn to_json(&self, project: &Project) -> Value {
        let (gates, next_action) = self.gates_and_action();
        let spec = self.spec.as_ref().map(|s| {
            json!({"name": s.name, "path": s.dir.display().to_string(), "statePath": s.state_path().display().to_string()})
        });
        // Every state key is always present (null when unknown), so readers need no guards.
        let (exists, error) = match &self.state {
            StateRead::Absent => (false, None),
            StateRead::Invalid(e) => (true, Some(e.as_str())),
            StateRead::Valid(_) => (true, None),
        };
        let mut state = json!({
            "exists": exists, "valid": self.state_doc().is_some(), "error": error,
            "phase": null, "completed": null, "halt": null,
            "taskIndex": null, "totalTasks": null, "taskIteration": null,
            "maxTaskIterations": null, "globalIteration": null, "maxGlobalIterations": null,
        });
        if let Some(doc) = self.state_doc() {
            let v = View(doc);
            let known = json!({
                "phase": v.phase(), "completed": v.completed(), "halt": v.halt(),
                "taskIndex": v.task_index(), "totalTasks": v.total_tasks(),
                "taskIteration": v.task_iteration(), "maxTaskIterations": v.max_task_iterations(),
                "globalIteration": v.global_iteration(), "maxGlobalIterations": v.max_global_iterations(),
            });
            state::merge_into(&mut state, &known);
        }
        let artifacts = self.spec.as_ref().map(|s| {
            json!({
                "research": artifact(&s.artifact_path("research")),
                "requirements": artifact(&s.artifact_path("requirements")),
                "design": artifact(&s.artifact_path("design")),
                "tasks": artifact(&s.tasks_path()),
                "progress": artifact(&s.progress_path()),
            })
        });
        let tasks = self.tasks.as_ref().map(|list| {
            let c = list.counts();
            json!({
                "total": c.total, "completed": c.completed, "pending": c.pending, "nextIndex": c.next_index,
                "current": list.next().map(task_json),
                "parallelGroup": list.parallel_group(c.next_index).iter().map(|t| t.label()).collect::<Vec<_>>(),
            })
        });
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "cwd": project.cwd.display().to_string(),
            "projectRoot": project.root.display().to_string(),
            // A --spec naming no directory is not an active spec.
            "active": self.spec.is_some() && self.spec_dir_exists,
            "spec": spec,
            "state": state,
            "artifacts": artifacts,
            "tasks": tasks,
            "git": self.git,
            "nextAction": next_action,
            "gates": gates,
        })
    }
}

fn first_label(list: &TaskList) -> String {
    list.next().map(|t| t.label()).unwrap_or_else(|| "-".into())
}

/// The `current` object of snapshot: one task's facts.
pub fn task_json(t: &Task) -> Value {
    json!({
        "id": t.label(),
        "title": t.title,
        "markers": t.markers,
        "lineStart": t.line_start,
        "lineEnd": t.line_end,
        "verify": t.verify,
        "files": t.files,
        "depends": t.depends,
    })
}

/// The shell step for a spec, with the current task's evidence and reviews read.
pub fn shell_step(spec: &Spec, state: Option<&Value>, tasks: Option<&TaskList>) -> Option<String> {
    let progress = match (state, tasks.and_then(TaskList::next)) {
        (Some(doc), Some(task)) => task_progress(spec, doc, &task.label()),
        _ => TaskProgress::default(),
    };
    next::shell_step(&spec.name, state, tasks, progress)
}

/// What the running attempt of `id` has so far: passing evidence and reviews recorded
/// since it started.
fn task_progress(spec: &Spec, state: &Value, id: &str) -> TaskProgress {
    let Some(since) = next::running_since(state, id) else {
        return TaskProgress::default();
    };
    let after = |at: Option<String>| at.is_some_and(|t| t.as_str() >= since);
    let record = evidence::Slot::Task(id.to_string()).record_in(state);
    TaskProgress {
        evidence: record.is_some_and(|r| {
            evidence::passed(r)
                && after(
                    r.get("startedAt")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                )
        }),
        post_code: after(critique::recorded_at(spec, id, "post-code")),
        post_test: after(critique::recorded_at(spec, id, "post-test")),
    }
}
