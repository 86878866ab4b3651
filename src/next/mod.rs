//! The next step, for where the user stands (pure). A person at a shell gets a `specrun`
//! command line that works as printed; inside Claude Code the slash command continues.
//! `status` shows both; verbs print the one for their audience.

pub(crate) mod completion;
pub mod facts;
pub(crate) mod gates;
pub(crate) mod last_mile;
pub(crate) mod pr_body;
pub(crate) mod report;

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::io::project::SpecPlace;
use crate::model::state::{Phase, State};
use crate::model::tasks::{Task, TaskList};
use crate::protocol::Unmet;
use crate::support::shell::word as shell_word;

/// Who reads a hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Audience {
    /// A person at a shell: only commands they can type.
    Shell,
    /// Claude Code (its Bash tool sets `CLAUDECODE=1`): slash commands and delegation.
    Claude,
}

impl Audience {
    /// Claude Code marks the commands it runs with `CLAUDECODE=1`; everything else is a shell.
    pub(crate) fn detect() -> Audience {
        match std::env::var_os("CLAUDECODE") {
            Some(v) if v == "1" => Audience::Claude,
            _ => Audience::Shell,
        }
    }
}

/// The facts about the current task the shell step depends on, read at the edge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskProgress {
    /// A passing task evidence record newer than the running attempt's start.
    pub evidence: bool,
    pub post_code: bool,
    pub post_test: bool,
    /// Every box ticked: the execution evidence's `verify run`, when that evidence is not
    /// fresh (`finish` would refuse for it first).
    pub execution_check: Option<String>,
}

/// The state file as the edge read it.
#[derive(Debug, Clone, Copy)]
pub enum StateInput<'a> {
    Absent,
    Invalid(&'a str),
    Valid(&'a State),
}

/// What the engine reads: one spec's facts, gathered at the edge.
pub struct Input<'a> {
    /// The active spec (its name and folder, as messages name them) and its directory;
    /// `None` when there is none.
    pub spec: Option<(SpecPlace<'a>, &'a Path)>,
    pub spec_dir_exists: bool,
    pub tasks: Option<&'a TaskList>,
    /// Why tasks.md could not be read (absent is `tasks: None` with no error).
    pub tasks_error: Option<&'a str>,
    pub state: StateInput<'a>,
}

/// A task a step is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRef {
    pub id: String,
    pub title: String,
    /// Its **Verify** field, as written.
    pub verify: Option<String>,
    /// A `[VERIFY]` task (the qa-engineer's).
    pub checkpoint: bool,
}

impl TaskRef {
    fn of(t: &Task) -> TaskRef {
        TaskRef {
            id: t.label(),
            title: t.title.clone(),
            verify: t.verify.clone(),
            checkpoint: t.is_verify(),
        }
    }

    /// The agent a coordinator delegates it to.
    pub fn agent(&self) -> &'static str {
        if self.checkpoint {
            "specrun:qa-engineer"
        } else {
            "specrun:spec-executor"
        }
    }
}

/// One finding about where an execution stands, with what it is about. Every surface
/// renders from these: snapshot's gates and `nextAction`, status's hints, the shell step,
/// last-mile's instruction, the SessionStart context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    NoActiveSpec,
    MissingSpec {
        dir: String,
    },
    /// `file`: the spec's tasks file, from the project root, as the step names it.
    MissingTasks {
        file: String,
    },
    UnreadableTasks {
        file: String,
    },
    EmptyTasks {
        file: String,
    },
    /// Not a stop: the plan has ids used twice.
    DuplicateTaskIds {
        ids: Vec<String>,
    },
    InvalidState,
    NoState {
        first: Option<String>,
    },
    Halted(Halt),
    Cancelled,
    Completed,
    NotExecuting,
    /// Every box is ticked, but the completion is not earned (the Stop hook's own gate).
    CompletionUnearned {
        unmet: Unmet,
    },
    CompletionUnmarked,
    /// An isolated group whose members are all done waits for `group merge`: the next
    /// task's start and `finish` are refused until it completes.
    GroupAwaitsMerge,
    AwaitingApproval,
    /// The next task, or the `[P]` group it starts; `running` is the first's attempt.
    Delegate {
        group: Vec<TaskRef>,
        running: bool,
    },
}

impl Finding {
    /// The stable gate string (`None`: a step that blocks nothing).
    pub fn code(&self) -> Option<&'static str> {
        Some(match self {
            Finding::NoActiveSpec => "no-active-spec",
            Finding::MissingSpec { .. } => "missing-spec",
            Finding::MissingTasks { .. } => "missing-tasks",
            Finding::UnreadableTasks { .. } => "unreadable-tasks",
            Finding::EmptyTasks { .. } => "empty-tasks",
            Finding::DuplicateTaskIds { .. } => "duplicate-task-ids",
            Finding::InvalidState => "invalid-state",
            Finding::NoState { .. } => "no-state",
            Finding::Halted(_) => "halted",
            Finding::Cancelled => "cancelled",
            Finding::Completed => "completed",
            Finding::NotExecuting => "not-executing",
            Finding::CompletionUnearned { .. } => "completion-unearned",
            Finding::CompletionUnmarked => "completion-unmarked",
            Finding::AwaitingApproval => "awaiting-approval",
            Finding::GroupAwaitsMerge | Finding::Delegate { .. } => return None,
        })
    }
}

/// Where a spec stands: findings in order, the last one the step to take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// The spec's name (`<name>` without one), as commands spell it.
    pub spec: String,
    pub findings: Vec<Finding>,
}

/// The engine: where the spec stands and what comes next.
pub(crate) fn standing(input: &Input<'_>) -> Standing {
    let spec = input.spec.map_or("<name>", |(p, _)| p.name).to_string();
    let findings = findings(input, &spec);
    Standing { spec, findings }
}

/// The engine for a spec whose tasks.md and state were read (the hooks, `tasks next`).
pub(crate) fn standing_of(spec: SpecPlace<'_>, tasks: &TaskList, state: &State) -> Standing {
    standing(&Input {
        // The directory is only named when it is missing, which a reader of tasks.md knows
        // it is not.
        spec: Some((spec, Path::new(""))),
        spec_dir_exists: true,
        tasks: Some(tasks),
        tasks_error: None,
        state: StateInput::Valid(state),
    })
}

impl Standing {
    /// The step is `group merge`: every member of the open isolated group is done (the
    /// next task's start refuses until then), or every box is ticked but the group is not
    /// merged. `None` otherwise.
    pub fn merge_step(&self) -> Option<String> {
        match self.decisive() {
            Finding::GroupAwaitsMerge => Some(self.merge_sentence()),
            Finding::CompletionUnearned { unmet }
                if unmet.name == crate::next::completion::GROUP_UNMERGED =>
            {
                Some(self.merge_sentence())
            }
            _ => None,
        }
    }

    /// The shell command of the merge step.
    pub fn merge_command(&self) -> String {
        format!(
            "specrun group merge {}",
            crate::support::shell::spec_flag(&self.spec)
        )
    }
}

fn findings(input: &Input<'_>, name: &str) -> Vec<Finding> {
    let Some((place, dir)) = input.spec else {
        return vec![Finding::NoActiveSpec];
    };
    if !input.spec_dir_exists {
        let dir = dir.display().to_string();
        return vec![Finding::MissingSpec { dir }];
    }
    let file = place.tasks_file();
    let Some(list) = input.tasks else {
        return vec![if input.tasks_error.is_some() {
            Finding::UnreadableTasks { file }
        } else {
            Finding::MissingTasks { file }
        }];
    };
    if list.tasks.is_empty() {
        return vec![Finding::EmptyTasks { file }];
    }
    let mut out = Vec::new();
    let dup = list.duplicate_ids();
    if !dup.is_empty() {
        let ids = dup.into_iter().map(|(id, _)| id).collect();
        out.push(Finding::DuplicateTaskIds { ids });
    }
    match input.state {
        StateInput::Invalid(_) => out.push(Finding::InvalidState),
        StateInput::Absent => out.push(Finding::NoState {
            first: list.next().map(Task::label),
        }),
        StateInput::Valid(doc) => steps(name, doc, list, &mut out),
    }
    out
}

/// Why an execution is halted and the command that lifts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Halt {
    pub reason: String,
    pub resume: String,
}

/// The halt of an execution, if any (SessionStart asks for this alone).
pub(crate) fn halt(name: &str, s: &State) -> Option<Halt> {
    s.halt().is_some().then(|| Halt {
        reason: s.halt_reason().unwrap_or("no reason recorded").to_string(),
        resume: crate::claude::roles::person_command(s.resume_command(name)),
    })
}

/// The findings for a readable state and a non-empty plan, the step last.
fn steps(name: &str, s: &State, list: &TaskList, out: &mut Vec<Finding>) {
    if let Some(stop) = ended_or_stopped(name, s, list) {
        return out.push(stop);
    }
    if group_awaits_merge(s) {
        return out.push(Finding::GroupAwaitsMerge);
    }
    // Awaiting approval stops the coordinator, not a person at a shell: the task step
    // still follows it.
    if s.awaiting_approval() {
        out.push(Finding::AwaitingApproval);
    }
    let group: Vec<TaskRef> = list
        .parallel_group(list.next_index())
        .into_iter()
        .map(TaskRef::of)
        .collect();
    let running = group.first().is_some_and(|t| running(s, &t.id));
    out.push(Finding::Delegate { group, running });
}

/// A halt, an execution not running or ended, or every box ticked.
fn ended_or_stopped(name: &str, s: &State, list: &TaskList) -> Option<Finding> {
    if let Some(h) = halt(name, s) {
        return Some(Finding::Halted(h));
    }
    match s.phase() {
        Some(Phase::Cancelled) => return Some(Finding::Cancelled),
        Some(Phase::Completed) => return Some(Finding::Completed),
        Some(Phase::Execution) => {}
        _ => return Some(Finding::NotExecuting),
    }
    if !list.all_checked() {
        return None;
    }
    // The seed's definition: executing, every box ticked, completion not yet recorded.
    if s.completed() {
        return Some(Finding::Completed);
    }
    // Ticked is not earned: a box ticked by hand, a running attempt, an open claim or an
    // unmerged group comes first, with the Stop hook's own words.
    Some(
        match crate::next::completion::unearned(name, s, list)
            .into_iter()
            .next()
        {
            Some(unmet) => Finding::CompletionUnearned { unmet },
            None => Finding::CompletionUnmarked,
        },
    )
}

impl Standing {
    /// The step to take (a person at a shell acts on this one).
    pub fn step(&self) -> &Finding {
        self.findings.last().unwrap_or(&Finding::NoActiveSpec)
    }

    /// What the coordinator acts on: the first finding that stops it, else the step.
    pub fn decisive(&self) -> &Finding {
        self.findings
            .iter()
            .find(|f| !matches!(f, Finding::DuplicateTaskIds { .. }))
            .unwrap_or(self.step())
    }

    /// The stable gate strings, in order.
    pub fn gates(&self) -> Vec<&'static str> {
        self.findings.iter().filter_map(Finding::code).collect()
    }

    /// The one sentence telling the coordinator what to do (snapshot's `nextAction`).
    pub fn coordinator(&self) -> String {
        let n = &self.spec;
        let spec_flag = crate::support::shell::spec_flag(n);
        match self.decisive() {
            Finding::NoActiveSpec => "No active spec: plan one with /specrun:start <name> <goal>, or pass --spec NAME.".into(),
            Finding::MissingSpec { dir } => format!("Spec directory {dir} does not exist: plan it with /specrun:start {n} <goal>."),
            Finding::MissingTasks { file } | Finding::UnreadableTasks { file } => format!("Write {file} (plan it with /specrun:start {n} <goal>) before implementing."),
            Finding::EmptyTasks { file } => format!("{file} has no tasks: add `- [ ] 1.1 Title` lines, then run /specrun:implement {n}."),
            Finding::InvalidState => format!("The state file is unreadable: inspect it, then run `specrun state init {spec_flag} --force` (the old file is kept)."),
            Finding::NoState { first } => format!("Initialise the execution: `specrun state init {spec_flag} --session-id <session>`, then delegate task {}.", first.as_deref().unwrap_or("-")),
            Finding::Halted(Halt { reason, resume }) => format!("The execution is halted ({reason}): a person runs `{resume}`, then /specrun:implement {n}."),
            Finding::Cancelled => format!("The execution was cancelled: start again with /specrun:implement {n}."),
            Finding::Completed => format!("Spec {n} is complete: nothing to run."),
            Finding::NotExecuting => format!("Initialise the execution: `specrun state init {spec_flag} --session-id <session>`."),
            Finding::CompletionUnearned { unmet } => format!("Every task is checked, but {}", unmet.detail),
            Finding::CompletionUnmarked => format!("Every task is checked: run the plan's final check, `specrun verify run --final {spec_flag}`, then end with ALL_TASKS_COMPLETE."),
            Finding::GroupAwaitsMerge => self.merge_sentence(),
            Finding::AwaitingApproval => "The execution awaits the user's approval: ask, then continue.".into(),
            // Never decisive: the plan's duplicate ids are a gate beside the step.
            Finding::DuplicateTaskIds { .. } => String::new(),
            Finding::Delegate { group, .. } => match group.as_slice() {
                [t] => format!("Delegate task {} ({}) to {}.", t.id, t.title, t.agent()),
                _ => format!("Delegate tasks {} in parallel (one Agent call each), then continue with the next task.", ids(group)),
            },
        }
    }

    /// What to do when an isolated group waits for its merge (snapshot and last-mile).
    pub fn merge_sentence(&self) -> String {
        let merge = self.merge_command();
        format!("Every member of the isolated group is done: run `{merge}`; it merges them, verifies the merged tree and prints the next step.")
    }

    /// The shell command that moves the execution on: every step has one (no spec: `new`;
    /// no plan: `tasks lint` after writing it; complete: `report`). `None` only for a
    /// finding that is never the step. `progress` is the current task's, read at the edge.
    pub fn shell(&self, progress: TaskProgress) -> Option<ShellStep> {
        let n = &self.spec;
        let spec_flag = crate::support::shell::spec_flag(n);
        let command = match self.step() {
            // Never the step (they sit beside one): nothing of their own to run.
            Finding::DuplicateTaskIds { .. } | Finding::AwaitingApproval => return None,
            // Placeholders a shell accepts as words (a `<name>` would be a redirection),
            // named in `first`.
            Finding::NoActiveSpec => {
                return Some(ShellStep {
                    command: "specrun new NAME --goal 'GOAL'".into(),
                    review: false,
                    first: Some("with your spec's NAME and GOAL".into()),
                })
            }
            Finding::MissingSpec { .. } => {
                return Some(ShellStep {
                    command: format!("specrun new {} --goal 'GOAL'", shell_word(n)),
                    review: false,
                    first: Some("with your spec's GOAL".into()),
                })
            }
            // The plan is the person's to write; `tasks lint` says what it lacks, as
            // `state init` and `finish` do.
            Finding::MissingTasks { file }
            | Finding::UnreadableTasks { file }
            | Finding::EmptyTasks { file } => {
                return Some(ShellStep {
                    command: format!("specrun tasks lint {spec_flag}"),
                    review: false,
                    first: Some(format!("after writing {file}")),
                })
            }
            Finding::Completed => format!("specrun report {spec_flag}"),
            Finding::InvalidState => crate::claude::roles::person_command(format!(
                "specrun state init {spec_flag} --force"
            )),
            Finding::NoState { .. } | Finding::NotExecuting => {
                format!("specrun state init {spec_flag}")
            }
            Finding::Halted(h) => h.resume.clone(),
            // `resume` undoes a cancel.
            Finding::Cancelled => {
                crate::claude::roles::person_command(format!("specrun resume {spec_flag}"))
            }
            Finding::CompletionUnearned { unmet }
                if unmet.name == crate::next::completion::GROUP_UNMERGED =>
            {
                self.merge_command()
            }
            Finding::CompletionUnmarked if progress.execution_check.is_some() => {
                progress.execution_check.unwrap_or_default()
            }
            Finding::CompletionUnearned { .. } | Finding::CompletionUnmarked => {
                format!("specrun finish {spec_flag}")
            }
            Finding::GroupAwaitsMerge => self.merge_command(),
            Finding::Delegate { group, running } => {
                return Some(task_step(n, group.first()?, *running, progress))
            }
        };
        Some(ShellStep {
            command,
            review: false,
            first: None,
        })
    }
}

/// A command a person at a shell runs next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellStep {
    pub command: String,
    /// It records a review, which the person gives as JSON on stdin.
    pub review: bool,
    /// How the person readies it, in words ("after writing …", "with your …").
    pub first: Option<String>,
}

/// Task ids joined for a sentence.
pub(crate) fn ids(tasks: &[TaskRef]) -> String {
    tasks
        .iter()
        .map(|t| t.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The step for the current task: start it, verify it, review it, complete it.
fn task_step(name: &str, task: &TaskRef, running: bool, progress: TaskProgress) -> ShellStep {
    let spec_flag = crate::support::shell::spec_flag(name);
    let id = shell_word(&task.id);
    let plain = |command| ShellStep {
        command,
        review: false,
        first: None,
    };
    // The review itself is the person's: they give it as JSON on stdin.
    let review = |stage: &str| ShellStep {
        command: format!("specrun critique record --task {id} --stage {stage} {spec_flag}"),
        review: true,
        first: None,
    };
    if !running {
        return plain(format!("specrun task start {id} {spec_flag}"));
    }
    match &task.verify {
        // The same words as a stale criterion's `verify run` (`Slot::rerun`).
        Some(cmd) if !progress.evidence => {
            plain(crate::evidence::verify::Slot::Task(task.id.clone()).rerun(name, cmd))
        }
        _ if !progress.post_code => review("post-code"),
        _ if !progress.post_test => review("post-test"),
        _ => plain(format!("specrun task complete {id} --check {spec_flag}")),
    }
}

/// Whether the task's last attempt is running.
pub(crate) fn running(state: &State, id: &str) -> bool {
    running_since(state, id).is_some()
}

/// When the task's running attempt started (`None` when it has none running, or it
/// records no start).
pub(crate) fn running_since<'a>(state: &'a State, id: &str) -> Option<&'a str> {
    let last = state.attempts_of(id).last()?;
    if last.status.as_deref() != Some("running") {
        return None;
    }
    last.started_at.get()?.text()
}

/// The running attempt of any task: (task id, attempt number, startedAt).
pub(crate) fn running_attempt(state: &State) -> Option<(String, u64, String)> {
    let map = state.attempts.as_ref()?;
    map.iter().find_map(|(id, list)| {
        let last = list.last()?;
        (last.status.as_deref() == Some("running")).then(|| {
            let started = last.started_at.get().and_then(|t| t.text());
            (
                id.clone(),
                last.n.unwrap_or(0),
                started.unwrap_or("").to_string(),
            )
        })
    })
}

/// An open isolated group none of whose members is still running.
fn group_awaits_merge(state: &State) -> bool {
    let iso = crate::isolation::worktree::Isolation::of(state);
    iso.open_group().is_some_and(|g| {
        g.members.iter().all(|id| {
            iso.member(id)
                .is_none_or(|m| m.status != crate::isolation::worktree::RUNNING)
        })
    })
}

/// Attempts recorded for a task (0 when none).
pub(crate) fn attempt_count(state: &State, id: &str) -> usize {
    state.attempts_of(id).len()
}

/// Whole minutes from `at` (RFC 3339) to `now`; `None` when `at` does not parse.
pub(crate) fn minutes_since(at: &str, now: DateTime<Utc>) -> Option<u64> {
    let t = crate::model::state::time::parse(at)?;
    Some(crate::model::state::time::minutes_between(t, now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn typed(doc: &Value) -> State {
        State::from_value(doc).unwrap()
    }

    fn list() -> TaskList {
        crate::model::tasks::parse(
            "- [x] 1.1 One\n- [ ] 1.2 Two\n  - **Verify**: `cargo test two`\n- [ ] 1.3 Three\n",
        )
    }

    fn shell_step(
        name: &str,
        state: Option<&Value>,
        tasks: Option<&TaskList>,
        progress: TaskProgress,
    ) -> Option<String> {
        let dir = Path::new("specs/demo");
        let state = state.map(typed);
        let place = SpecPlace {
            name,
            folder: "specs/demo",
        };
        standing(&Input {
            spec: Some((place, dir)),
            spec_dir_exists: true,
            tasks,
            tasks_error: None,
            state: state.as_ref().map_or(StateInput::Absent, StateInput::Valid),
        })
        .shell(progress)
        .map(|s| s.command)
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
            ..Default::default()
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
        let all = crate::model::tasks::parse("- [x] 1.1 One\n");
        let run = json!({"phase": "execution"});
        assert_eq!(
            shell_step("demo", Some(&run), Some(&all), TaskProgress::default()).unwrap(),
            "specrun finish --spec demo"
        );
        let done = json!({"phase": "completed", "completed": true});
        assert_eq!(
            shell_step("demo", Some(&done), Some(&all), TaskProgress::default()).unwrap(),
            "specrun report --spec demo"
        );
        let empty = crate::model::tasks::parse("# nothing\n");
        assert_eq!(
            shell_step("demo", None, Some(&empty), TaskProgress::default()).unwrap(),
            "specrun tasks lint --spec demo"
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

    const DEMO: SpecPlace<'static> = SpecPlace {
        name: "demo",
        folder: "specs/demo",
    };

    /// A spec without tasks is sent to its own tasks file: Kiro's under `.kiro/specs/`,
    /// OpenSpec's under `openspec/changes/`, never a `specs/<name>/tasks.md` that is not
    /// where the reader writes it.
    #[test]
    fn the_tasks_steps_name_the_spec_s_own_tasks_file() {
        let empty = crate::model::tasks::parse("");
        for (folder, file) in [
            (".kiro/specs/albums", ".kiro/specs/albums/tasks.md"),
            (
                "openspec/changes/albums",
                "openspec/changes/albums/tasks.md",
            ),
        ] {
            let place = SpecPlace {
                name: "albums",
                folder,
            };
            let at = |tasks, tasks_error| {
                standing(&Input {
                    spec: Some((place, Path::new(folder))),
                    spec_dir_exists: true,
                    tasks,
                    tasks_error,
                    state: StateInput::Absent,
                })
            };
            let first = |s: &Standing| s.shell(TaskProgress::default()).unwrap().first.unwrap();
            let none = at(None, None);
            assert_eq!(
                none.coordinator(),
                format!(
                    "Write {file} (plan it with /specrun:start albums <goal>) before implementing."
                )
            );
            assert_eq!(first(&none), format!("after writing {file}"));
            let unreadable = at(None, Some("not UTF-8"));
            assert!(unreadable
                .coordinator()
                .starts_with(&format!("Write {file} ")));
            let no_tasks = at(Some(&empty), None);
            assert_eq!(
                no_tasks.coordinator(),
                format!("{file} has no tasks: add `- [ ] 1.1 Title` lines, then run /specrun:implement albums.")
            );
            assert_eq!(first(&no_tasks), format!("after writing {file}"));
        }
    }

    fn demo(state: StateInput<'_>, tasks: Option<&TaskList>) -> Standing {
        standing(&Input {
            spec: Some((DEMO, Path::new("specs/demo"))),
            spec_dir_exists: true,
            tasks,
            tasks_error: None,
            state,
        })
    }

    /// Every surface reads the same findings: snapshot's gates and sentence, the shell's
    /// command.
    #[test]
    fn one_standing_renders_gates_sentence_and_shell_command() {
        let dup = crate::model::tasks::parse("- [ ] 1 A\n- [ ] 1 B\n");
        let s = demo(StateInput::Absent, Some(&dup));
        assert_eq!(s.gates(), ["duplicate-task-ids", "no-state"]);
        assert!(s.coordinator().starts_with("Initialise the execution: `specrun state init --spec demo --session-id <session>`, then delegate task 1."));
        let cmd = |s: &Standing| s.shell(TaskProgress::default()).map(|s| s.command);
        assert_eq!(cmd(&s).unwrap(), "specrun state init --spec demo");
        // An unreadable state is re-initialised with --force (the old file is kept), as
        // snapshot says; the shell step used to omit it, and `state init` then refused.
        let s = demo(StateInput::Invalid("bad"), Some(&dup));
        assert_eq!(s.gates(), ["duplicate-task-ids", "invalid-state"]);
        assert_eq!(cmd(&s).unwrap(), "specrun state init --spec demo --force");
        let none = demo(StateInput::Absent, None);
        assert_eq!(none.gates(), ["missing-tasks"]);
        assert_eq!(cmd(&none).unwrap(), "specrun tasks lint --spec demo");
        let nothing = standing(&Input {
            spec: None,
            spec_dir_exists: false,
            tasks: None,
            tasks_error: None,
            state: StateInput::Absent,
        });
        assert_eq!(cmd(&nothing).unwrap(), "specrun new NAME --goal 'GOAL'");
    }

    #[test]
    fn awaiting_approval_stops_the_coordinator_not_the_shell() {
        let doc = json!({"phase": "execution", "awaitingApproval": true});
        let list = list();
        let s = demo(StateInput::Valid(&typed(&doc)), Some(&list));
        assert_eq!(s.gates(), ["awaiting-approval"]);
        assert_eq!(
            s.coordinator(),
            "The execution awaits the user's approval: ask, then continue."
        );
        let shell = s.shell(TaskProgress::default()).unwrap();
        assert_eq!(shell.command, "specrun task start 1.2 --spec demo");
        assert!(!shell.review);
    }

    /// A finished isolated group is merged next in every surface (snapshot used to send
    /// the coordinator to the next task, whose start is refused until the merge).
    #[test]
    fn a_finished_isolated_group_is_the_coordinators_next_step_too() {
        let member = json!({"branch": "b", "worktree": "w", "base": "c", "status": "ready"});
        let doc = json!({"phase": "execution", "checkedAtInit": ["1.1", "1.2"], "isolation": {
            "group": {"members": ["1.2"], "baseBranch": "main", "base": "c", "status": "running"},
            "members": {"1.2": member}}});
        let list = list();
        let s = demo(StateInput::Valid(&typed(&doc)), Some(&list));
        assert_eq!(s.step(), &Finding::GroupAwaitsMerge);
        assert!(s.gates().is_empty());
        assert!(s
            .coordinator()
            .contains("run `specrun group merge --spec demo`"));
        // Every box ticked: the completion gate names the merge; the shell runs it.
        let all = crate::model::tasks::parse("- [x] 1.1 One\n- [x] 1.2 Two\n");
        let s = demo(StateInput::Valid(&typed(&doc)), Some(&all));
        assert_eq!(s.gates(), ["completion-unearned"]);
        assert!(s
            .coordinator()
            .contains("`specrun group merge --spec demo`"));
        let shell = s.shell(TaskProgress::default()).unwrap();
        assert_eq!(shell.command, "specrun group merge --spec demo");
        // The hooks and `tasks next` ask the same standing for the merge step.
        let state = typed(&doc);
        assert_eq!(
            standing_of(DEMO, &all, &state).merge_step(),
            Some(s.merge_sentence())
        );
        assert!(standing_of(DEMO, &list, &state).merge_step().is_some());
        let idle = typed(&json!({"phase": "execution"}));
        assert_eq!(standing_of(DEMO, &list, &idle).merge_step(), None);
    }

    #[test]
    fn a_cancel_is_undone_by_resume_at_a_shell() {
        let doc = json!({"phase": "cancelled"});
        let list = list();
        let s = demo(StateInput::Valid(&typed(&doc)), Some(&list));
        assert_eq!(s.gates(), ["cancelled"]);
        let shell = s.shell(TaskProgress::default()).unwrap();
        assert_eq!(shell.command, "specrun resume --spec demo");
    }

    #[test]
    fn the_running_attempt_is_found_among_all_tasks() {
        let s = json!({"attempts": {"1.1": [{"n": 1, "status": "done"}],
            "1.2": [{"n": 1, "status": "failed"}, {"n": 2, "status": "running", "startedAt": "T"}]}});
        let s = typed(&s);
        assert_eq!(running_attempt(&s), Some(("1.2".into(), 2, "T".into())));
        assert_eq!(attempt_count(&s, "1.2"), 2);
        assert!(running(&s, "1.2") && !running(&s, "1.1"));
    }
}
