//! The facts of a spec as they are on disk, read without a lock (a read-only view):
//! the state file as read, tasks.md parsed, git, and what `snapshot` derives from them —
//! the gates and the coordinator's next action. `snapshot`, `status`, `report`,
//! `statusline`, `last-mile`, `doctor`, `goal` and the hooks' fast path read through here.

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::evidence::critique;
use crate::evidence::verify;
use crate::io::git;
use crate::io::project::{Project, Spec};
use crate::model::state::{self, Halt, Phase, State};
use crate::model::tasks::{Task, TaskList};
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
        // In the file's format (spec-kit's phases as Depends, Kiro's nesting and
        // criteria): status and snapshot read the tasks as the task verbs do.
        match crate::model::tasks_file::load(&spec.tasks_path()) {
            Ok(loaded) => facts.tasks = Some(loaded.list),
            Err(Error::Missing { .. }) => {}
            Err(e) => facts.tasks_error = Some(e.to_string()),
        }
        facts.state = read_typed(&spec.state_path());
    }
    Ok(facts)
}

fn artifact(path: &Path) -> Artifact {
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file());
    Artifact {
        exists: meta.is_some(),
        path: path.display().to_string(),
        bytes: meta.map(|m| m.len()),
    }
}

/// `snapshot`'s document: every key always present, null when
/// unknown, so readers need no guards. `status --json` adds its keys after these.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot<'a> {
    version: &'static str,
    cwd: String,
    project_root: String,
    /// A --spec naming no directory is not an active spec.
    active: bool,
    spec: Option<SpecPaths<'a>>,
    state: StateFacts<'a>,
    artifacts: Option<Artifacts>,
    tasks: Option<TaskFacts<'a>>,
    git: &'a git::GitInfo,
    next_action: String,
    gates: Vec<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpecPaths<'a> {
    name: &'a str,
    path: String,
    state_path: String,
}

/// The state's counters; all null when the state is absent or invalid.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StateFacts<'a> {
    exists: bool,
    valid: bool,
    error: Option<&'a str>,
    phase: Option<&'static str>,
    completed: Option<bool>,
    halt: Option<&'a Halt>,
    task_index: Option<u64>,
    total_tasks: Option<u64>,
    task_iteration: Option<u64>,
    max_task_iterations: Option<u64>,
    global_iteration: Option<u64>,
    max_global_iterations: Option<u64>,
}

#[derive(Serialize)]
struct Artifacts {
    research: Artifact,
    requirements: Artifact,
    design: Artifact,
    tasks: Artifact,
    progress: Artifact,
}

#[derive(Serialize)]
struct Artifact {
    exists: bool,
    path: String,
    bytes: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskFacts<'a> {
    total: usize,
    completed: usize,
    pending: usize,
    next_index: usize,
    current: Option<CurrentTask<'a>>,
    parallel_group: Vec<String>,
}

/// The `current` object of snapshot: one task's facts.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CurrentTask<'a> {
    id: String,
    title: &'a str,
    markers: &'a [String],
    line_start: usize,
    line_end: usize,
    verify: &'a Option<String>,
    files: &'a [String],
    depends: &'a [String],
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
            spec: self.spec.as_ref().map(|s| (s.place(), s.dir.as_path())),
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

    pub fn snapshot<'a>(&'a self, project: &Project) -> Snapshot<'a> {
        let standing = self.standing();
        let spec = self.spec.as_ref().map(|s| SpecPaths {
            name: &s.name,
            path: s.dir.display().to_string(),
            state_path: s.state_path().display().to_string(),
        });
        let (exists, error) = match &self.state {
            StateRead::Absent => (false, None),
            StateRead::Invalid(e) => (true, Some(e.as_str())),
            StateRead::Valid(_) => (true, None),
        };
        let v = self.state_doc();
        let state = StateFacts {
            exists,
            valid: v.is_some(),
            error,
            phase: v.and_then(|v| v.phase()).map(Phase::as_str),
            completed: v.map(|v| v.completed()),
            halt: v.and_then(|v| v.halt()),
            task_index: v.map(|v| v.task_index()),
            total_tasks: v.map(|v| v.total_tasks()),
            task_iteration: v.map(|v| v.task_iteration()),
            max_task_iterations: v.map(|v| v.max_task_iterations()),
            global_iteration: v.map(|v| v.global_iteration()),
            max_global_iterations: v.map(|v| v.max_global_iterations()),
        };
        let artifacts = self.spec.as_ref().map(|s| Artifacts {
            research: artifact(&s.artifact_path("research")),
            requirements: artifact(&s.artifact_path("requirements")),
            design: artifact(&s.artifact_path("design")),
            tasks: artifact(&s.tasks_path()),
            progress: artifact(&s.progress_path()),
        });
        let tasks = self.tasks.as_ref().map(|list| {
            let c = list.counts();
            TaskFacts {
                total: c.total,
                completed: c.completed,
                pending: c.pending,
                next_index: c.next_index,
                current: list.next().map(current_task),
                parallel_group: list
                    .parallel_group(c.next_index)
                    .iter()
                    .map(|t| t.label())
                    .collect(),
            }
        });
        Snapshot {
            version: env!("CARGO_PKG_VERSION"),
            cwd: project.cwd.display().to_string(),
            project_root: project.root.display().to_string(),
            active: self.spec.is_some() && self.spec_dir_exists,
            spec,
            state,
            artifacts,
            tasks,
            git: &self.git,
            next_action: standing.coordinator(),
            gates: standing.gates(),
        }
    }
}

/// The `current` object of snapshot: one task's facts.
pub fn current_task(t: &Task) -> CurrentTask<'_> {
    CurrentTask {
        id: t.label(),
        title: &t.title,
        markers: &t.markers,
        line_start: t.line_start,
        line_end: t.line_end,
        verify: &t.verify,
        files: &t.files,
        depends: &t.depends,
    }
}

/// The shell step for a spec, with the current task's evidence and reviews read.
pub fn shell_step(
    project: &Project,
    spec: &Spec,
    state: Option<&State>,
    tasks: Option<&TaskList>,
) -> Option<String> {
    let input = state.map_or(StateInput::Absent, StateInput::Valid);
    let standing = next::standing(&Input {
        spec: Some((spec.place(), &spec.dir)),
        spec_dir_exists: true,
        tasks,
        tasks_error: None,
        state: input,
    });
    shell_of(project, Some(spec), state, &standing).map(|s| s.command)
}

/// The shell step of `standing`, with the current task's evidence and reviews read.
pub fn shell_of(
    project: &Project,
    spec: Option<&Spec>,
    state: Option<&State>,
    standing: &Standing,
) -> Option<ShellStep> {
    let progress = match (spec, state, standing.step()) {
        (
            Some(spec),
            Some(doc),
            Finding::Delegate {
                group,
                running: true,
            },
        ) => group.first().map_or_else(TaskProgress::default, |t| {
            task_progress(project, spec, doc, &t.id)
        }),
        (Some(spec), Some(doc), Finding::CompletionUnmarked) => TaskProgress {
            execution_check: execution_check(project, spec, doc),
            ..Default::default()
        },
        _ => TaskProgress::default(),
    };
    standing.shell(progress)
}

/// The execution evidence's `verify run`, when that evidence is not fresh.
fn execution_check(project: &Project, spec: &Spec, state: &State) -> Option<String> {
    let record = verify::Slot::Phase("execution".into()).record_of(state);
    if verify::check_record(project, spec, record).is_ok() {
        return None;
    }
    let tasks = crate::model::tasks_file::load(&spec.tasks_path())
        .ok()?
        .list;
    Some(next::completion::execution_check(&spec.name, state, &tasks))
}

/// What the running attempt of `id` has so far: evidence recorded since it started that
/// is fresh against the tree (as `task complete` and the criteria judge it), and reviews
/// recorded since it started.
fn task_progress(project: &Project, spec: &Spec, state: &State, id: &str) -> TaskProgress {
    let Some(since) = next::running_since(state, id) else {
        return TaskProgress::default();
    };
    let after = |at: Option<String>| at.is_some_and(|t| t.as_str() >= since);
    let record = state.task_evidence(id);
    TaskProgress {
        evidence: record.is_some_and(|r| {
            verify::check_record(project, spec, Some(r)).is_ok()
                && after(r.started_at().map(str::to_string))
        }),
        post_code: after(critique::recorded_at(spec, id, "post-code")),
        post_test: after(critique::recorded_at(spec, id, "post-test")),
        execution_check: None,
    }
}
