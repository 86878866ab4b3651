//! The facts of a spec as they are on disk, read without a lock (a read-only view):
//! the state file as read, tasks.md parsed, git, and what `snapshot` derives from them —
//! the gates and the coordinator's next action. `snapshot`, `status`, `report`,
//! `statusline`, `last-mile`, `doctor`, `goal` and the hooks' fast path read through here.

use std::path::Path;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::evidence::critique;
use crate::evidence::verify;
use crate::io::git;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::model::state::{self, Phase, State};
use crate::model::tasks::{self, Task, TaskList};
use crate::next::{self, Finding, Input, ShellStep, Standing, StateInput, TaskProgress};

pub use crate::model::state::read_lenient;

/// What the state file holds, if it can be read (checked: `state::read`).
pub enum StateRead {
    Absent,
    Invalid(String),
    /// Boxed: a `State` is two kilobytes, the other variants a few words.
    Valid(Box<State>),
}

pub struct Facts {
    pub spec: Option<Spec>,
    pub spec_dir_exists: bool,
    pub tasks: Option<TaskList>,
    pub tasks_error: Option<String>,
    pub state: StateRead,
    pub git: git::GitInfo,
}

/// The state file as a typed `State`, checked (see `state::read`).
pub fn read_typed(path: &Path) -> StateRead {
    match state::read(path, state::Reading::Checked) {
        Ok(None) => StateRead::Absent,
        Ok(Some(s)) => StateRead::Valid(Box::new(s)),
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
        facts.state = read_typed(&spec.state_path());
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
    pub fn state_doc(&self) -> Option<&State> {
        match &self.state {
            StateRead::Valid(v) => Some(v),
            _ => None,
        }
    }

    /// Where the spec stands, from the one engine (`next::standing`).
    pub fn standing(&self) -> Standing {
        next::standing(&self.input())
    }

    /// The facts as the engine reads them.
    pub fn input(&self) -> Input<'_> {
        Input {
            spec: self
                .spec
                .as_ref()
                .map(|s| (s.name.as_str(), s.dir.as_path())),
            spec_dir_exists: self.spec_dir_exists,
            tasks: self.tasks.as_ref(),
            tasks_error: self.tasks_error.as_deref(),
            state: match &self.state {
                StateRead::Absent => StateInput::Absent,
                StateRead::Invalid(e) => StateInput::Invalid(e),
                StateRead::Valid(doc) => StateInput::Valid(doc),
            },
        }
    }

    pub fn to_json(&self, project: &Project) -> Value {
        let standing = self.standing();
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
        if let Some(v) = self.state_doc() {
            let known = json!({
                "phase": v.phase().map(Phase::as_str), "completed": v.completed(), "halt": v.halt(),
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
            "nextAction": standing.coordinator(),
            "gates": standing.gates(),
        })
    }
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
pub fn shell_step(spec: &Spec, state: Option<&State>, tasks: Option<&TaskList>) -> Option<String> {
    let input = state.map_or(StateInput::Absent, StateInput::Valid);
    shell_from(spec, input, state, tasks)
}

fn shell_from(
    spec: &Spec,
    input: StateInput<'_>,
    state: Option<&State>,
    tasks: Option<&TaskList>,
) -> Option<String> {
    let standing = next::standing(&Input {
        spec: Some((&spec.name, &spec.dir)),
        spec_dir_exists: true,
        tasks,
        tasks_error: None,
        state: input,
    });
    shell_of(spec, state, &standing).map(|s| s.command)
}

/// The shell step of `standing`, with the current task's evidence and reviews read.
pub fn shell_of(spec: &Spec, state: Option<&State>, standing: &Standing) -> Option<ShellStep> {
    let progress = match (state, standing.step()) {
        (
            Some(doc),
            Finding::Delegate {
                group,
                running: true,
            },
        ) => group
            .first()
            .map_or_else(TaskProgress::default, |t| task_progress(spec, doc, &t.id)),
        _ => TaskProgress::default(),
    };
    standing.shell(progress)
}

/// What the running attempt of `id` has so far: passing evidence and reviews recorded
/// since it started.
fn task_progress(spec: &Spec, state: &State, id: &str) -> TaskProgress {
    let Some(since) = next::running_since(state, id) else {
        return TaskProgress::default();
    };
    let after = |at: Option<String>| at.is_some_and(|t| t.as_str() >= since);
    let record = state.task_evidence(id);
    TaskProgress {
        evidence: record.is_some_and(|r| {
            verify::passed(r)
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
