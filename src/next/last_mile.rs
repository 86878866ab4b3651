//! `specrun last-mile`, the pure half: from facts gathered at the edge (tasks, state,
//! evidence, git, PATH, capabilities) decide the phase, the problems — each with the
//! typed observations that triggered it, from which its evidence lines and gate ids are
//! rendered — the evidence still required and one imperative sentence for the
//! coordinator. With nothing in the way, that sentence is the "what next" engine's step.

use serde::{Serialize, Serializer};

use crate::evidence::verify::{self, Freshness, Slot};
use crate::model::state::{Attempt, Phase as Run, State};
use crate::model::tasks::{Task, TaskList};
use crate::next::{self, Finding, Halt, Standing, StateInput};
use crate::support::shell::word as shell_word;

/// A task failed this many times is a repeated failure.
pub(crate) const REPEATED_FAILURES: usize = 2;

/// Evidence lists are cut to this many lines (`… and N more`).
const MAX_EVIDENCE_LINES: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Phase {
    Planning,
    Implementing,
    Verifying,
    Recovering,
    Releasing,
    Completed,
    Halted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ProblemType {
    MissingContext,
    MissingDependency,
    RepeatedFailure,
    ScopeDrift,
    VerificationGap,
    ReleaseRisk,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub kind: ProblemType,
    /// What was observed, typed; `evidence` renders it one fact a line.
    pub observed: Vec<Observed>,
}

impl Problem {
    /// The observations shown: all, or the first ones and a count of the rest.
    fn shown(&self) -> &[Observed] {
        match self.observed.len() {
            n if n > MAX_EVIDENCE_LINES => &self.observed[..MAX_EVIDENCE_LINES - 1],
            _ => &self.observed,
        }
    }

    /// One line per observation, cut to `MAX_EVIDENCE_LINES` (`… and N more`).
    pub(crate) fn evidence(&self) -> Vec<String> {
        capped(self.observed.iter().map(Observed::line).collect())
    }
}

impl Serialize for Problem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Shape {
            #[serde(rename = "type")]
            kind: ProblemType,
            evidence: Vec<String>,
        }
        Shape {
            kind: self.kind,
            evidence: self.evidence(),
        }
        .serialize(s)
    }
}

/// One fact behind a problem, with the ids, paths and programs it is about. The evidence
/// line and the gate id are rendered from it; nothing is parsed back out of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Observed {
    NoActiveSpec,
    /// `dir`, `file`: the spec's folder and tasks file, from the project root.
    NoSpecDir {
        dir: String,
    },
    TasksUnreadable {
        file: String,
        error: String,
    },
    NoTasksFile {
        file: String,
    },
    NoTasks {
        file: String,
    },
    StateUnreadable {
        error: String,
    },
    NoVerifyField {
        task: String,
    },
    NoDoneWhen {
        task: String,
    },
    NotOnPath {
        task: String,
        command: String,
        program: String,
    },
    FailedRepeatedly {
        task: String,
        reasons: Vec<String>,
    },
    OutsideFiles {
        path: String,
        tasks: Vec<String>,
    },
    NoEvidence {
        task: String,
        slot: String,
    },
    EvidenceFailed {
        task: String,
        exit: String,
    },
    EvidenceStale {
        task: String,
    },
    Unearned {
        task: String,
        detail: String,
    },
    FollowupOpen {
        id: String,
        title: String,
    },
    CriterionUncovered {
        id: String,
        status: String,
    },
    ExecutionEvidence {
        slot: String,
        freshness: Freshness,
    },
    Uncommitted {
        shown: Vec<String>,
        more: usize,
    },
    Unpushed {
        commits: u64,
    },
}

impl Observed {
    pub(crate) fn line(&self) -> String {
        match self {
            Observed::NoActiveSpec => "no active spec: no --spec and no specs/.current-spec".into(),
            Observed::NoSpecDir { dir } => format!("spec directory {dir} does not exist"),
            Observed::TasksUnreadable { file, error } => format!("{file} is unreadable: {error}"),
            Observed::NoTasksFile { file } => format!("{file} does not exist"),
            Observed::NoTasks { file } => format!("{file} has no tasks"),
            Observed::StateUnreadable { error } => format!("the state file is unreadable: {error}"),
            Observed::NoVerifyField { task } => format!("task {task} has no **Verify** field"),
            Observed::NoDoneWhen { task } => format!("task {task} has no **Done when** field"),
            Observed::NotOnPath { task, command, program } => format!("task {task} Verify `{command}`: `{program}` is not on PATH"),
            Observed::FailedRepeatedly { task, reasons } => format!("task {task} failed {} times: {}", reasons.len(), reasons.join("; ")),
            Observed::OutsideFiles { path, tasks } => format!("{path} changed but is not in the Files of task {}", tasks.join(", ")),
            Observed::NoEvidence { task, slot } => format!("task {task} is checked but has no evidence ({slot})"),
            Observed::EvidenceFailed { task, exit } => format!("task {task} is checked but its last verify failed (exit {exit})"),
            Observed::EvidenceStale { task } => format!("task {task} is checked but the code changed after its evidence and no later task has started"),
            Observed::Unearned { task, detail } => format!("task {task} completion not earned: {detail}"),
            Observed::FollowupOpen { id, title } => format!("every task is checked but follow-up {id} (VERIFY, high) is open: {title}"),
            Observed::CriterionUncovered { id, status } => format!("every task is checked but acceptance criterion {id} is {status}"),
            Observed::ExecutionEvidence { slot, freshness } => format!("every task is checked but {slot} is {}", freshness.as_str()),
            Observed::Uncommitted { shown, more: 0 } => format!("uncommitted changes: {}", shown.join(", ")),
            Observed::Uncommitted { shown, more } => format!("uncommitted changes: {} and {more} more", shown.join(", ")),
            Observed::Unpushed { commits } => format!("{commits} commit(s) on HEAD are on no remote branch"),
        }
    }

    /// What a gate id names after `<problem>:` (`None`: the problem's bare id, or the
    /// subjects come from elsewhere, as scope-drift's task group).
    fn subject(&self) -> Option<String> {
        match self {
            Observed::NotOnPath { program, .. } => Some(program.clone()),
            Observed::FailedRepeatedly { task, .. }
            | Observed::NoEvidence { task, .. }
            | Observed::EvidenceFailed { task, .. }
            | Observed::EvidenceStale { task }
            | Observed::Unearned { task, .. } => Some(task.clone()),
            Observed::FollowupOpen { id, .. } => Some(format!("followup-{id}")),
            Observed::CriterionUncovered { id, .. } => Some(format!("criterion-{id}")),
            Observed::ExecutionEvidence { .. } => Some("execution".into()),
            Observed::Uncommitted { .. } => Some("uncommitted".into()),
            Observed::Unpushed { .. } => Some("unpushed".into()),
            _ => None,
        }
    }

    /// A task's own evidence is missing, failed or stale.
    fn task_evidence_gap(&self) -> Option<&str> {
        match self {
            Observed::NoEvidence { task, .. }
            | Observed::EvidenceFailed { task, .. }
            | Observed::EvidenceStale { task } => Some(task),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Availability {
    /// Found and usable on this machine.
    Available,
    /// Declared in a configuration file; whether it connects is known only in Claude Code.
    Configured,
    Missing,
}

/// An optional helper and what to do without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Capability {
    pub id: String,
    pub used_for: String,
    pub availability_state: Availability,
    /// Where it was found (a path, a settings file), or where it was looked for.
    pub detail: String,
    pub fallback_when_missing: String,
}

/// The git facts last-mile needs; `None` outside a repository.
#[derive(Debug, Clone, Default)]
pub(crate) struct GitFacts {
    /// Uncommitted paths (tracked changes and untracked files), relative to the root.
    pub uncommitted: Vec<String>,
    /// Paths changed by commits since the current task's attempt started.
    pub committed_since_start: Vec<String>,
    /// Commits on HEAD that no remote-tracking branch has; `None` when there is no remote.
    pub unpushed: Option<u64>,
}

pub(crate) struct Inputs<'a> {
    /// The spec, tasks.md and the state, as the "what next" engine reads them.
    pub spec: next::Input<'a>,
    /// The working-tree fingerprint now, if it could be computed.
    pub current_tree: Option<&'a str>,
    pub git: Option<GitFacts>,
    /// Path prefixes (relative to the root) that are the spec's own bookkeeping.
    pub bookkeeping: Vec<String>,
    /// Whether a program named by a Verify command can be run here.
    pub runnable: &'a dyn Fn(&str) -> bool,
    pub capabilities: Vec<Capability>,
    /// Open VERIFY/high follow-ups as `(id, title)`: the guard refuses completion while
    /// any is open, so last-mile never sends the coordinator to claim it.
    pub blocking_followups: Vec<(String, String)>,
    /// Acceptance criteria not covered, as `(id, status)`, when the execution enforces
    /// them: the guard refuses completion while any is.
    pub uncovered_criteria: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Decision {
    pub spec: Option<String>,
    pub phase: Phase,
    pub problem_types: Vec<Problem>,
    pub capability_plan: Vec<Capability>,
    pub evidence_required: Vec<String>,
    pub blocking_gates: Vec<String>,
    pub coordinator_instruction: String,
}

/// `lines`, cut to `MAX_EVIDENCE_LINES` with a count of the rest.
fn capped(mut lines: Vec<String>) -> Vec<String> {
    if lines.len() > MAX_EVIDENCE_LINES {
        let rest = lines.len() - (MAX_EVIDENCE_LINES - 1);
        lines.truncate(MAX_EVIDENCE_LINES - 1);
        lines.push(format!("… and {rest} more"));
    }
    lines
}

/// The command inside the first backtick pair of a Verify field, else the whole field.
pub(crate) use crate::model::tasks::verify_command;

const SHELL_WORDS: &[&str] = &[
    "cd", "echo", "test", "[", "[[", "true", "false", ":", "export", "set", "unset", "source", ".",
    "if", "then", "else", "elif", "fi", "for", "do", "done", "while", "until", "case", "esac",
    "exit", "printf", "pwd", "read", "wait", "!", "{", "}", "(", ")", "return", "shift", "eval",
    "trap", "umask", "ulimit", "type", "hash", "alias",
];
const WRAPPERS: &[&str] = &["env", "time", "nice", "exec", "command", "nohup", "xargs"];

/// The programs a shell command line runs (one per `&&`, `||`, `;`, `|` segment), leaving
/// out shell builtins, variable assignments and words built from `$` expansions.
pub(crate) fn programs(command: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let normalized = command
        .replace("&&", "\n")
        .replace("||", "\n")
        .replace([';', '|', '&'], "\n");
    for segment in normalized.lines() {
        let mut words = segment
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '"' || c == '\'' || c == '(' || c == ')'))
            .filter(|w| !w.is_empty());
        let program = loop {
            match words.next() {
                None => break None,
                Some(w) if w.contains('=') && !w.starts_with('=') => continue,
                Some(w) if WRAPPERS.contains(&w) || w.starts_with('-') => continue,
                Some(w) => break Some(w),
            }
        };
        let Some(program) = program else { continue };
        if SHELL_WORDS.contains(&program) || program.contains('$') || program.contains('`') {
            continue;
        }
        if !out.iter().any(|p| p == program) {
            out.push(program.to_string());
        }
    }
    out
}

fn is_bookkeeping(path: &str, bookkeeping: &[String]) -> bool {
    bookkeeping.iter().any(|b| {
        path == b
            || path
                .strip_prefix(b.as_str())
                .is_some_and(|r| r.starts_with('/'))
    })
}

/// The attempts recorded for a task (`attempts.<id>`,
/// docs/design.md#records-inside-the-state).
pub(crate) fn attempts<'a>(state: Option<&'a State>, id: &str) -> &'a [Attempt] {
    state.map_or(&[], |s| s.attempts_of(id))
}

pub(crate) fn status_of(attempt: &Attempt) -> Option<&str> {
    attempt.status.as_deref()
}

struct Ctx<'a> {
    /// The spec's name as a shell word (`<name>` without a spec).
    name: String,
    /// The spec's folder from the project root (`specs/<name>` without a spec).
    folder: String,
    state: Option<&'a State>,
    list: Option<&'a TaskList>,
    group: Vec<&'a Task>,
    /// A halt (a cancel counts as one): the one thing to report.
    halt: Option<Halt>,
    /// The "what next" engine's view of the same facts.
    standing: Standing,
}

pub(crate) fn decide(input: &Inputs<'_>) -> Decision {
    let facts = &input.spec;
    let spec_name = facts.spec.map(|(p, _)| p.name);
    let state = match facts.state {
        StateInput::Valid(doc) => Some(doc),
        _ => None,
    };
    let list = facts.tasks.filter(|l| !l.tasks.is_empty());
    let ctx = Ctx {
        name: spec_name.map(shell_word).unwrap_or_else(|| "<name>".into()),
        folder: facts
            .spec
            .map_or_else(|| "specs/<name>".into(), |(p, _)| p.folder.to_string()),
        state,
        list,
        group: list
            .map(|l| l.parallel_group(l.next_index()))
            .unwrap_or_default(),
        halt: state.and_then(|s| halt_of(spec_name.unwrap_or("<name>"), s)),
        standing: next::standing(facts),
    };
    let problems = problems(input, &ctx);
    let phase = phase(&ctx, &problems);
    let mut gates: Vec<String> = ctx.halt.iter().map(|_| "halted".to_string()).collect();
    gates.extend(problems.iter().flat_map(|p| gate_ids(p, &ctx)));
    gates.dedup();
    Decision {
        spec: spec_name.map(str::to_string),
        phase,
        evidence_required: evidence_required(phase, &problems, &ctx),
        coordinator_instruction: instruction(phase, &problems, &ctx),
        problem_types: problems,
        capability_plan: input.capabilities.clone(),
        blocking_gates: gates,
    }
}

/// Each rule's observations, as the problems that have any.
fn problems(input: &Inputs<'_>, ctx: &Ctx<'_>) -> Vec<Problem> {
    let rules = [
        (ProblemType::MissingContext, missing_context(input, ctx)),
        (
            ProblemType::MissingDependency,
            missing_dependencies(input, ctx),
        ),
        (ProblemType::RepeatedFailure, repeated_failures(ctx)),
        (ProblemType::ScopeDrift, scope_drift(input, ctx)),
        (ProblemType::VerificationGap, verification_gaps(input, ctx)),
        (ProblemType::ReleaseRisk, release_risks(input, ctx)),
    ];
    rules
        .into_iter()
        .filter(|(_, observed)| !observed.is_empty())
        .map(|(kind, observed)| Problem { kind, observed })
        .collect()
}

/// The engine's halt, or a cancelled phase without one.
fn halt_of(name: &str, s: &State) -> Option<Halt> {
    next::halt(name, s).or_else(|| {
        (s.phase() == Some(Run::Cancelled)).then(|| Halt {
            reason: "the execution was cancelled".into(),
            resume: crate::claude::roles::person_command(s.resume_command(name)),
        })
    })
}

fn is_completed(ctx: &Ctx<'_>) -> bool {
    ctx.state
        .is_some_and(|s| s.phase() == Some(Run::Completed) || s.completed())
}

fn all_checked(ctx: &Ctx<'_>) -> bool {
    ctx.list.is_some_and(TaskList::all_checked)
}

/// Rule missing-context: the spec, its tasks.md or a usable state is absent, or the task
/// to run next lacks the fields an executor needs (Verify, Done when).
fn missing_context(input: &Inputs<'_>, ctx: &Ctx<'_>) -> Vec<Observed> {
    let facts = &input.spec;
    let mut out = Vec::new();
    let Some((place, _)) = facts.spec else {
        return vec![Observed::NoActiveSpec];
    };
    if !facts.spec_dir_exists {
        let dir = place.folder.to_string();
        return vec![Observed::NoSpecDir { dir }];
    }
    let file = place.tasks_file();
    match (facts.tasks, facts.tasks_error) {
        (_, Some(err)) => out.push(Observed::TasksUnreadable {
            file,
            error: err.to_string(),
        }),
        (None, None) => out.push(Observed::NoTasksFile { file }),
        (Some(list), None) if list.tasks.is_empty() => out.push(Observed::NoTasks { file }),
        _ => {}
    }
    if let StateInput::Invalid(err) = facts.state {
        out.push(Observed::StateUnreadable {
            error: err.to_string(),
        });
    }
    for t in &ctx.group {
        if t.verify.is_none() {
            out.push(Observed::NoVerifyField { task: t.label() });
        }
        if t.done_when.is_none() {
            out.push(Observed::NoDoneWhen { task: t.label() });
        }
    }
    out
}

/// Rule missing-dependency: a pending task's Verify command runs a program this machine
/// does not have.
fn missing_dependencies(input: &Inputs<'_>, ctx: &Ctx<'_>) -> Vec<Observed> {
    let Some(list) = ctx.list else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut seen: Vec<(String, bool)> = Vec::new();
    for t in list.tasks.iter().filter(|t| !t.checked) {
        let Some(field) = &t.verify else { continue };
        let cmd = verify_command(field);
        for program in programs(cmd) {
            let ok = match seen.iter().find(|(p, _)| *p == program) {
                Some((_, ok)) => *ok,
                None => {
                    let ok = (input.runnable)(&program);
                    seen.push((program.clone(), ok));
                    ok
                }
            };
            if !ok {
                out.push(Observed::NotOnPath {
                    task: t.label(),
                    command: cmd.to_string(),
                    program,
                });
            }
        }
    }
    out
}

/// The programs missing-dependency names, each once.
fn missing_programs(observed: &[Observed]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for o in observed {
        if let Observed::NotOnPath { program, .. } = o {
            if !out.contains(&program.as_str()) {
                out.push(program);
            }
        }
    }
    out
}

/// Rule repeated-failure: an unchecked task with at least `REPEATED_FAILURES` failed
/// attempts.
fn repeated_failures(ctx: &Ctx<'_>) -> Vec<Observed> {
    let Some(list) = ctx.list else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in list.tasks.iter().filter(|t| !t.checked) {
        let label = t.label();
        let history = attempts(ctx.state, &label);
        // Failures up to the one that got a fix task are answered by that fix.
        let since_fix = history
            .iter()
            .rposition(|a| a.fix_task_id.get().is_some())
            .map_or(0, |i| i + 1);
        let reasons: Vec<String> = history[since_fix..]
            .iter()
            .filter(|a| status_of(a) == Some("failed"))
            .map(|a| {
                a.reason
                    .get()
                    .map_or("no reason", String::as_str)
                    .to_string()
            })
            .collect();
        if reasons.len() >= REPEATED_FAILURES {
            out.push(Observed::FailedRepeatedly {
                task: label,
                reasons,
            });
        }
    }
    out
}

/// Rule scope-drift: files changed (uncommitted, or committed since the current attempt
/// started) that no Files entry of the current task group covers. Skipped when the group
/// lists no Files: there is nothing to drift from.
fn scope_drift(input: &Inputs<'_>, ctx: &Ctx<'_>) -> Vec<Observed> {
    let Some(git) = &input.git else {
        return Vec::new();
    };
    let files: Vec<&str> = ctx
        .group
        .iter()
        .flat_map(|t| t.files.iter().map(String::as_str))
        .collect();
    if files.is_empty() {
        return Vec::new();
    }
    let files = crate::support::glob::FileEntries::new(&files);
    let tasks: Vec<String> = ctx.group.iter().map(|t| t.label()).collect();
    let mut out: Vec<Observed> = Vec::new();
    for path in git.uncommitted.iter().chain(&git.committed_since_start) {
        if is_bookkeeping(path, &input.bookkeeping) || files.covers(path) {
            continue;
        }
        let o = Observed::OutsideFiles {
            path: path.clone(),
            tasks: tasks.clone(),
        };
        if !out.contains(&o) {
            out.push(o);
        }
    }
    out
}

/// Rule verification-gap: a checked task whose evidence is missing or failed, or stale
/// with no later task started (later tasks legitimately change the tree) while tasks
/// remain; and, once every task is checked, execution evidence that is not fresh and
/// passing.
fn verification_gaps(input: &Inputs<'_>, ctx: &Ctx<'_>) -> Vec<Observed> {
    let (Some(list), Some(state)) = (ctx.list, ctx.state) else {
        return Vec::new();
    };
    let mut out = task_evidence_gaps(input, list, state);
    if list.all_checked() && !is_completed(ctx) {
        // The completion gate's own rules (`completion::earned`): a box ticked without
        // `task complete`, an attempt still running, an open unverified claim.
        let name = input.spec.spec.map_or("<name>", |(p, _)| p.name);
        for (task, gap) in crate::next::completion::earned_by_task(name, state, list) {
            out.push(Observed::Unearned {
                task,
                detail: gap.detail,
            });
        }
        for (id, title) in &input.blocking_followups {
            out.push(Observed::FollowupOpen {
                id: id.clone(),
                title: title.clone(),
            });
        }
        for (id, status) in &input.uncovered_criteria {
            out.push(Observed::CriterionUncovered {
                id: id.clone(),
                status: status.clone(),
            });
        }
    }
    if list.all_checked() {
        let slot = Slot::Phase("execution".into());
        let freshness = verify::assess(state.verification_block("execution"), input.current_tree);
        if freshness != Freshness::Fresh {
            out.push(Observed::ExecutionEvidence {
                slot: slot.describe(),
                freshness,
            });
        }
    }
    out
}

/// The checked tasks whose own evidence does not vouch for them.
fn task_evidence_gaps(input: &Inputs<'_>, list: &TaskList, state: &State) -> Vec<Observed> {
    let mut out = Vec::new();
    // Fresh passing execution evidence vouches for every checked task, as `task complete`
    // accepts it in place of a task's own.
    let phase_fresh = verify::assess(state.verification_block("execution"), input.current_tree)
        == Freshness::Fresh;
    for (i, t) in list.tasks.iter().enumerate().filter(|(_, t)| t.checked) {
        let task = t.label();
        let slot = Slot::Task(task.clone());
        let record = state.task_evidence(&task);
        match verify::assess(record, input.current_tree) {
            Freshness::Fresh => {}
            _ if phase_fresh => {}
            Freshness::Missing => out.push(Observed::NoEvidence {
                task,
                slot: slot.describe(),
            }),
            Freshness::Failed => out.push(Observed::EvidenceFailed {
                task,
                exit: record.map_or_else(|| "?".into(), |r| r.exit_code_text()),
            }),
            Freshness::Stale => {
                let later_started = list.tasks[i + 1..]
                    .iter()
                    .any(|l| l.checked || !attempts(Some(state), &l.label()).is_empty());
                // Once every task is checked, the execution evidence covers the whole tree.
                if !later_started && !list.all_checked() {
                    out.push(Observed::EvidenceStale { task });
                }
            }
        }
    }
    out
}

/// Rule release-risk: at completion (every task checked, or the state completed),
/// uncommitted changes outside the churning bookkeeping, or commits no remote has.
fn release_risks(input: &Inputs<'_>, ctx: &Ctx<'_>) -> Vec<Observed> {
    let Some(git) = &input.git else {
        return Vec::new();
    };
    if !(all_checked(ctx) || is_completed(ctx)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let dirty: Vec<&String> = git.uncommitted.iter().filter(|p| !is_churn(p)).collect();
    if !dirty.is_empty() {
        let shown: Vec<String> = dirty.iter().take(5).map(|s| s.to_string()).collect();
        let more = dirty.len().saturating_sub(shown.len());
        out.push(Observed::Uncommitted { shown, more });
    }
    if let Some(commits) = git.unpushed.filter(|&n| n > 0) {
        out.push(Observed::Unpushed { commits });
    }
    out
}

/// Files rewritten on every stop or command: their being dirty is no release risk.
fn is_churn(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == crate::io::project::STATE_FILE
        || name.ends_with(".lock")
        || path == crate::io::project::EVENTS_DIR
        || path.starts_with(&format!("{}/", crate::io::project::EVENTS_DIR))
        // Each verify run rewrites its test results, like the state's evidence record.
        || path.contains(&format!("/{}/", crate::io::project::TEST_RESULTS_DIR))
}

fn has(problems: &[Problem], kind: ProblemType) -> Option<&Problem> {
    problems.iter().find(|p| p.kind == kind)
}

/// The observations of one kind (none when the problem is absent).
fn observed(problems: &[Problem], kind: ProblemType) -> &[Observed] {
    has(problems, kind).map_or(&[], |p| &p.observed)
}

fn phase(ctx: &Ctx<'_>, problems: &[Problem]) -> Phase {
    if ctx.halt.is_some() {
        return Phase::Halted;
    }
    let planned = ctx.list.is_some();
    let executing = ctx
        .state
        .is_some_and(|s| matches!(s.phase(), Some(Run::Execution | Run::Completed)));
    if !planned || !executing {
        return Phase::Planning;
    }
    if is_completed(ctx) {
        return if has(problems, ProblemType::ReleaseRisk).is_some() {
            Phase::Releasing
        } else {
            Phase::Completed
        };
    }
    let gaps = observed(problems, ProblemType::VerificationGap);
    if all_checked(ctx) {
        // Any gap found once every box is ticked (execution evidence, an unearned box, a
        // follow-up, a criterion) keeps the run verifying; a task's own evidence does not.
        let execution_gap = gaps.iter().any(|o| o.task_evidence_gap().is_none());
        return if execution_gap {
            Phase::Verifying
        } else {
            Phase::Releasing
        };
    }
    let failing = observed(problems, ProblemType::RepeatedFailure);
    let group_failing = ctx.group.iter().any(|t| {
        let label = t.label();
        failing
            .iter()
            .any(|o| matches!(o, Observed::FailedRepeatedly { task, .. } if *task == label))
            || attempts(ctx.state, &label).last().and_then(status_of) == Some("failed")
    });
    if group_failing {
        return Phase::Recovering;
    }
    if ctx.group.iter().any(|t| t.is_verify()) {
        return Phase::Verifying;
    }
    Phase::Implementing
}

/// Stable gate ids: `<problem>` or `<problem>:<what>`, from the observations shown.
fn gate_ids(problem: &Problem, ctx: &Ctx<'_>) -> Vec<String> {
    let kind = serde_json::to_value(problem.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let subjects: Vec<String> = match problem.kind {
        ProblemType::MissingDependency => missing_programs(problem.shown())
            .into_iter()
            .map(str::to_string)
            .collect(),
        ProblemType::ScopeDrift => ctx.group.iter().map(|t| t.label()).collect(),
        ProblemType::MissingContext => Vec::new(),
        _ => problem
            .shown()
            .iter()
            .filter_map(Observed::subject)
            .collect(),
    };
    if subjects.is_empty() {
        vec![kind]
    } else {
        subjects
            .into_iter()
            .map(|s| format!("{kind}:{s}"))
            .collect()
    }
}

fn verify_of(t: &Task) -> String {
    t.verify
        .as_deref()
        .map(verify_command)
        .unwrap_or("<its Verify command>")
        .to_string()
}

fn evidence_required(phase: Phase, problems: &[Problem], ctx: &Ctx<'_>) -> Vec<String> {
    let s = &ctx.name;
    let mut out = Vec::new();
    match phase {
        Phase::Implementing | Phase::Recovering | Phase::Verifying if !all_checked(ctx) => {
            for t in &ctx.group {
                let id = t.label();
                out.push(format!(
                    "task {id}: `specrun verify run --spec {s} --task {} --command {}` exits 0",
                    shell_word(&id),
                    shell_word(&verify_of(t))
                ));
                out.push(format!(
                    "task {id}: self-critique records post-code and post-test (`specrun critique status --spec {s} --task {}`)",
                    shell_word(&id)
                ));
            }
        }
        Phase::Verifying | Phase::Releasing => {
            out.push(format!(
                "`specrun verify run --spec {s} --phase execution --command <full test suite>` exits 0"
            ));
            out.push(format!(
                "`specrun verify status --spec {s} --phase execution` says fresh"
            ));
            out.push(format!(
                "`specrun tasks count --spec {s}` shows \"pending\":0"
            ));
        }
        _ => {}
    }
    if let Some(p) = has(problems, ProblemType::VerificationGap) {
        for id in p.shown().iter().filter_map(Observed::task_evidence_gap) {
            out.push(format!(
                "task {id}: fresh passing evidence (taskEvidence[{id}])"
            ));
        }
    }
    if has(problems, ProblemType::ReleaseRisk).is_some() {
        out.push("`git status --porcelain` prints nothing and HEAD is pushed".into());
    }
    out.dedup();
    capped(out)
}

fn instruction(phase: Phase, problems: &[Problem], ctx: &Ctx<'_>) -> String {
    let s = &ctx.name;
    if let Some(h) = &ctx.halt {
        return format!(
            "Stop and report that the execution is halted ({}); {} before it continues.",
            h.reason,
            crate::claude::roles::for_person(&h.resume)
        );
    }
    if let Some(first) = observed(problems, ProblemType::MissingContext).first() {
        return context_instruction(first, problems, ctx);
    }
    if phase == Phase::Planning {
        let next = ctx
            .group
            .first()
            .map(|t| t.label())
            .unwrap_or_else(|| "1".into());
        return format!("Initialise the execution with `specrun state init --spec {s} --session-id <session>`, then delegate task {next}.");
    }
    let missing = missing_programs(observed(problems, ProblemType::MissingDependency));
    if !missing.is_empty() {
        return format!(
            "Install {} (or change the Verify commands that need it) before delegating the tasks that verify with it.",
            missing
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(Observed::FailedRepeatedly { task: id, .. }) =
        observed(problems, ProblemType::RepeatedFailure).first()
    {
        return format!(
            "Stop retrying task {id} the same way: read its failure reasons (`specrun state get {} attempts`), then split it or add a [FIX {id}] task before another attempt.",
            shell_word(&format!("{}/{}", ctx.folder, crate::io::project::STATE_FILE))
        );
    }
    let drift = observed(problems, ProblemType::ScopeDrift);
    if !drift.is_empty() {
        let paths: Vec<&str> = drift
            .iter()
            .filter_map(|o| match o {
                Observed::OutsideFiles { path, .. } => Some(path.as_str()),
                _ => None,
            })
            .take(5)
            .collect();
        return format!(
            "Before completing the current task, revert or account for the changes outside its Files: {}.",
            paths.join(", ")
        );
    }
    let gaps = observed(problems, ProblemType::VerificationGap);
    if !gaps.is_empty() {
        return gap_instruction(gaps, ctx);
    }
    let risks = observed(problems, ProblemType::ReleaseRisk);
    if !risks.is_empty() {
        return release_instruction(phase, risks, ctx);
    }
    match phase {
        Phase::Completed => format!("Report that spec {s} is complete; nothing is left to run."),
        Phase::Releasing => format!("Print the output of `specrun tasks count --spec {s}` and `specrun verify status --spec {s} --phase execution`, then end your reply with ALL_TASKS_COMPLETE."),
        _ => step_instruction(ctx),
    }
}

/// What to do when the plan or the state is missing (the first observation decides).
fn context_instruction(first: &Observed, problems: &[Problem], ctx: &Ctx<'_>) -> String {
    let (s, tasks) = (
        &ctx.name,
        format!("{}/{}", ctx.folder, crate::io::project::TASKS_FILE),
    );
    match first {
        Observed::NoActiveSpec => "Plan a spec with /specrun:start <name> <goal> (or pass --spec NAME) before implementing.".into(),
        Observed::NoSpecDir { .. }
        | Observed::TasksUnreadable { .. }
        | Observed::NoTasksFile { .. }
        | Observed::NoTasks { .. } => format!("Plan the work with /specrun:start {s} <goal> so that {tasks} lists the tasks, then implement it."),
        Observed::StateUnreadable { .. } => format!("Inspect the unreadable state file, then run `specrun state init --spec {s} --force` (the old file is kept)."),
        _ => {
            let lines = has(problems, ProblemType::MissingContext)
                .map(Problem::evidence)
                .unwrap_or_default();
            format!("Complete the task fields in {tasks} first ({}), then delegate the task.", lines.join("; "))
        }
    }
}

/// What to do about the first verification gap that matters most: an unearned box, the
/// execution evidence, a criterion, a follow-up, then a task's own evidence.
fn gap_instruction(gaps: &[Observed], ctx: &Ctx<'_>) -> String {
    let s = &ctx.name;
    let find = |f: fn(&Observed) -> bool| gaps.iter().find(|o| f(o));
    if let Some(Observed::Unearned { detail, .. }) =
        find(|o| matches!(o, Observed::Unearned { .. }))
    {
        return format!("Do not claim completion yet: {detail}");
    }
    if find(|o| matches!(o, Observed::ExecutionEvidence { .. })).is_some() {
        return format!("Run `specrun verify run --spec {s} --phase execution --command <full test suite>` and fix what fails before claiming completion.");
    }
    if let Some(Observed::CriterionUncovered { id, .. }) =
        find(|o| matches!(o, Observed::CriterionUncovered { .. }))
    {
        return format!("Cover acceptance criterion {id} before claiming completion: see `specrun ac status --spec {s}`, map it to a test that passes (`specrun ac map {id} --test <name> --spec {s}`) and re-run the execution verification, or, when no test or command can check it, propose it for a person: `specrun ac propose {id} --reason \"<how it was checked>\" --spec {s}`.");
    }
    if let Some(Observed::FollowupOpen { id, title }) =
        find(|o| matches!(o, Observed::FollowupOpen { .. }))
    {
        return format!("Do follow-up {id} ({title}), then `specrun followup resolve {id} --spec {s} --note \"<what was done>\"`, before claiming completion.");
    }
    let id = gaps
        .iter()
        .find_map(Observed::task_evidence_gap)
        .unwrap_or("?");
    let cmd = ctx
        .list
        .and_then(|l| l.find(id).ok())
        .map(verify_of)
        .unwrap_or_else(|| "<its Verify command>".into());
    format!(
        "Re-verify task {id} with `specrun verify run --spec {s} --task {} --command {}` before going on.",
        shell_word(id),
        shell_word(&cmd)
    )
}

/// At completion with a release risk: a commit, or the unpushed commits reported.
fn release_instruction(phase: Phase, risks: &[Observed], ctx: &Ctx<'_>) -> String {
    let s = &ctx.name;
    // Pushing is a person's decision (last-mile-autopilot.md): report, never push.
    if risks
        .iter()
        .any(|o| matches!(o, Observed::Uncommitted { .. }))
    {
        return format!("Commit the remaining changes (the spec's tasks.md and .progress.md as one `chore({s}): record completed tasks` commit; other files belong to a task or a follow-up), then run `specrun last-mile --spec {s}` again. Never push by yourself.");
    }
    let finish = if phase == Phase::Completed || is_completed(ctx) {
        format!("report that spec {s} is complete")
    } else {
        format!("print the output of `specrun tasks count --spec {s}` and `specrun verify status --spec {s} --phase execution`, then end your reply with ALL_TASKS_COMPLETE")
    };
    format!("Name the commits that are on no remote branch in your final report (never push by yourself), and {finish}.")
}

/// Nothing in the way: the engine's step (delegate, merge an isolated group, or ask).
fn step_instruction(ctx: &Ctx<'_>) -> String {
    let s = &ctx.name;
    match ctx.standing.decisive() {
        Finding::GroupAwaitsMerge => ctx.standing.merge_sentence(),
        Finding::AwaitingApproval => ctx.standing.coordinator(),
        Finding::Delegate { group, .. } if group.len() == 1 => {
            let t = &group[0];
            format!("Delegate task {} ({}) to {}.", t.id, t.title, t.agent())
        }
        Finding::Delegate { group, .. } if !group.is_empty() => format!(
            "Delegate tasks {} in parallel, one Agent call each.",
            next::ids(group)
        ),
        _ => format!("Run `specrun snapshot --spec {s}` and follow its nextAction."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tasks::parse;
    use serde_json::{json, Value};

    fn always(_: &str) -> bool {
        true
    }

    struct Case {
        list: Option<TaskList>,
        state: Option<Value>,
        git: Option<GitFacts>,
        tree: Option<&'static str>,
        followups: Vec<(String, String)>,
        criteria: Vec<(String, String)>,
        runnable: fn(&str) -> bool,
        /// The spec's folder from the project root.
        folder: &'static str,
    }

    impl Case {
        fn new(tasks: &str, state: Value) -> Case {
            Case {
                list: Some(parse(tasks)),
                state: Some(state),
                git: Some(GitFacts::default()),
                tree: Some("T"),
                runnable: always,
                followups: Vec::new(),
                criteria: Vec::new(),
                folder: "specs/demo",
            }
        }

        fn decide(&self) -> Decision {
            let typed = self.state.as_ref().map(|s| State::from_value(s).unwrap());
            decide(&Inputs {
                spec: next::Input {
                    spec: Some((
                        crate::io::project::SpecPlace {
                            name: "demo",
                            folder: self.folder,
                        },
                        std::path::Path::new(self.folder),
                    )),
                    spec_dir_exists: true,
                    tasks: self.list.as_ref(),
                    tasks_error: None,
                    state: match &typed {
                        Some(s) => StateInput::Valid(s),
                        None => StateInput::Absent,
                    },
                },
                current_tree: self.tree,
                git: self.git.clone(),
                bookkeeping: vec!["specs/demo".into(), ".specrun".into()],
                runnable: &self.runnable,
                capabilities: Vec::new(),
                blocking_followups: self.followups.clone(),
                uncovered_criteria: self.criteria.clone(),
            })
        }
    }

    fn kinds(d: &Decision) -> Vec<ProblemType> {
        d.problem_types.iter().map(|p| p.kind).collect()
    }

    const TWO: &str = "- [x] 1 One\n  - **Verify**: `true`\n  - **Done when**: ok\n- [ ] 2 Two\n  - **Files**: src/a.rs, docs/\n  - **Verify**: `cargo test two`\n  - **Done when**: ok\n";

    fn executing() -> Value {
        json!({"phase": "execution", "checkedAtInit": ["1", "2"],
               "taskEvidence": {"1": {"exitCode": 0, "tree": "T"}}})
    }

    #[test]
    fn clean_execution_delegates_the_next_task() {
        let d = Case::new(TWO, executing()).decide();
        assert_eq!(d.phase, Phase::Implementing);
        assert!(d.problem_types.is_empty(), "{:?}", d.problem_types);
        assert!(d.blocking_gates.is_empty());
        assert_eq!(
            d.coordinator_instruction,
            "Delegate task 2 (Two) to specrun:spec-executor."
        );
        assert!(d.evidence_required[0].contains("--task 2 --command 'cargo test two'"));
    }

    /// The step after the rules comes from the "what next" engine, as snapshot's does.
    #[test]
    fn with_nothing_in_the_way_the_engine_names_the_step() {
        let mut st = executing();
        st["awaitingApproval"] = json!(true);
        let d = Case::new(TWO, st).decide();
        assert_eq!(
            d.coordinator_instruction,
            "The execution awaits the user's approval: ask, then continue."
        );
        let mut st = executing();
        st["isolation"] = json!({
            "group": {"members": ["1"], "baseBranch": "main", "base": "c", "status": "running"},
            "members": {"1": {"branch": "b", "worktree": "w", "base": "c", "status": "ready"}}});
        let d = Case::new(TWO, st).decide();
        assert!(
            d.coordinator_instruction
                .contains("run `specrun group merge --spec demo`"),
            "{}",
            d.coordinator_instruction
        );
    }

    #[test]
    fn rule_missing_context_fires_on_absent_artifacts() {
        let mut c = Case::new(TWO, executing());
        c.list = None;
        let d = c.decide();
        assert_eq!(d.phase, Phase::Planning);
        assert_eq!(kinds(&d), [ProblemType::MissingContext]);
        assert!(d.problem_types[0].evidence()[0].contains("tasks.md does not exist"));
        assert!(d.coordinator_instruction.contains("/specrun:start demo"));
        let d = Case::new("- [ ] 1 Bare task\n", executing()).decide();
        let e = &d.problem_types[0].evidence();
        assert!(e.iter().any(|l| l.contains("no **Verify**")), "{e:?}");
    }

    #[test]
    fn rule_missing_dependency_names_the_program() {
        let mut c = Case::new(TWO, executing());
        c.runnable = |p| p != "cargo";
        let d = c.decide();
        assert_eq!(kinds(&d), [ProblemType::MissingDependency]);
        assert!(d.problem_types[0].evidence()[0].contains("`cargo` is not on PATH"));
        assert_eq!(d.blocking_gates, ["missing-dependency:cargo"]);
        assert!(d.coordinator_instruction.starts_with("Install `cargo`"));
    }

    /// The observations and instructions that name a file name the spec's own: a Kiro
    /// spec's, not a `specs/demo/` path that does not exist.
    #[test]
    fn the_spec_s_files_are_named_where_they_are() {
        let kiro = |tasks: &str, state: Value| Case {
            folder: ".kiro/specs/demo",
            ..Case::new(tasks, state)
        };
        let d = kiro("", executing()).decide();
        assert_eq!(
            d.problem_types[0].evidence(),
            [".kiro/specs/demo/tasks.md has no tasks"]
        );
        assert_eq!(d.coordinator_instruction, "Plan the work with /specrun:start demo <goal> so that .kiro/specs/demo/tasks.md lists the tasks, then implement it.");
        let d = kiro("- [ ] 1 A\n", executing()).decide();
        assert!(
            d.coordinator_instruction
                .starts_with("Complete the task fields in .kiro/specs/demo/tasks.md first ("),
            "{}",
            d.coordinator_instruction
        );
        let mut state = executing();
        state["attempts"] = json!({"2": [
            {"n": 1, "status": "failed", "reason": "x"},
            {"n": 2, "status": "failed", "reason": "y"}
        ]});
        let d = kiro(TWO, state).decide();
        assert!(
            d.coordinator_instruction
                .contains("(`specrun state get .kiro/specs/demo/.specrun-state.json attempts`)"),
            "{}",
            d.coordinator_instruction
        );
    }

    #[test]
    fn rule_repeated_failure_needs_two_failed_attempts() {
        let mut state = executing();
        state["attempts"] = json!({"2": [{"n": 1, "status": "failed", "reason": "test x"}]});
        let d = Case::new(TWO, state.clone()).decide();
        assert!(!kinds(&d).contains(&ProblemType::RepeatedFailure));
        assert_eq!(
            d.phase,
            Phase::Recovering,
            "one failure still means recovering"
        );
        state["attempts"]["2"]
            .as_array_mut()
            .unwrap()
            .push(json!({"n": 2, "status": "failed", "reason": "test y"}));
        let d = Case::new(TWO, state.clone()).decide();
        assert_eq!(kinds(&d), [ProblemType::RepeatedFailure]);
        assert_eq!(
            d.problem_types[0].evidence()[0],
            "task 2 failed 2 times: test x; test y"
        );
        assert_eq!(d.phase, Phase::Recovering);
        assert!(d.coordinator_instruction.contains("[FIX 2]"));
        // Once a fix task answers them, those failures no longer ask for one; two new
        // failures after it do.
        state["attempts"]["2"][1]["fixTaskId"] = json!("2.1");
        let fixed =
            format!("{TWO}- [ ] 2.1 [FIX 2] Fix\n  - **Verify**: `true`\n  - **Done when**: ok\n");
        let d = Case::new(&fixed, state.clone()).decide();
        assert!(
            !kinds(&d).contains(&ProblemType::RepeatedFailure),
            "{:?}",
            d.problem_types
        );
        assert_eq!(
            d.coordinator_instruction,
            "Delegate task 2.1 (Fix) to specrun:spec-executor."
        );
        for n in [3, 4] {
            state["attempts"]["2"]
                .as_array_mut()
                .unwrap()
                .push(json!({"n": n, "status": "failed", "reason": "again"}));
        }
        let d = Case::new(TWO, state).decide();
        assert_eq!(
            d.problem_types[0].evidence()[0],
            "task 2 failed 2 times: again; again"
        );
    }

    #[test]
    fn rule_scope_drift_flags_files_outside_the_task() {
        let mut c = Case::new(TWO, executing());
        c.git = Some(GitFacts {
            uncommitted: vec![
                "src/a.rs".into(),
                "docs/guide.md".into(),
                "specs/demo/tasks.md".into(),
                "src/other.rs".into(),
            ],
            ..Default::default()
        });
        let d = c.decide();
        assert_eq!(kinds(&d), [ProblemType::ScopeDrift]);
        assert_eq!(
            d.problem_types[0].evidence(),
            ["src/other.rs changed but is not in the Files of task 2"]
        );
        assert!(d.coordinator_instruction.contains("src/other.rs"));
    }

    #[test]
    fn rule_verification_gap_for_missing_failed_and_final_evidence() {
        let d = Case::new(TWO, json!({"phase": "execution"})).decide();
        assert_eq!(kinds(&d), [ProblemType::VerificationGap]);
        assert!(d.problem_types[0].evidence()[0].contains("no evidence"));
        let failed =
            json!({"phase": "execution", "taskEvidence": {"1": {"exitCode": 3, "tree": "T"}}});
        let d = Case::new(TWO, failed).decide();
        assert!(d.problem_types[0].evidence()[0].contains("exit 3"));
        // Fresh passing execution evidence covers a checked task, as in `task complete`.
        let vouched = json!({"phase": "execution",
            "verificationBlocks": {"execution": {"exitCode": 0, "tree": "T"}}});
        assert!(Case::new(TWO, vouched).decide().problem_types.is_empty());
        // Stale with no later task started is a gap; once task 2 started it is not.
        let mut c = Case::new(TWO, executing());
        c.tree = Some("U");
        assert_eq!(kinds(&c.decide()), [ProblemType::VerificationGap]);
        let mut started = executing();
        started["attempts"] = json!({"2": [{"n": 1, "status": "running"}]});
        let mut c = Case::new(TWO, started);
        c.tree = Some("U");
        assert!(c.decide().problem_types.is_empty());
        // Everything checked, no execution evidence: verifying.
        let all = TWO.replace("- [ ] 2", "- [x] 2");
        let mut st = executing();
        st["taskEvidence"]["2"] = json!({"exitCode": 0, "tree": "T"});
        let d = Case::new(&all, st.clone()).decide();
        assert_eq!(d.phase, Phase::Verifying);
        assert_eq!(d.blocking_gates, ["verification-gap:execution"]);
        st["verificationBlocks"] = json!({"execution": {"exitCode": 0, "tree": "T"}});
        let mut c = Case::new(&all, st.clone());
        c.followups = vec![("F2".into(), "load test".into())];
        let d = c.decide();
        assert_eq!(
            d.phase,
            Phase::Verifying,
            "an open VERIFY/high follow-up blocks completion"
        );
        assert_eq!(d.blocking_gates, ["verification-gap:followup-F2"]);
        assert!(
            d.coordinator_instruction
                .starts_with("Do follow-up F2 (load test), then `specrun followup resolve F2"),
            "{}",
            d.coordinator_instruction
        );
        let mut c = Case::new(&all, st.clone());
        c.criteria = vec![("2/AC1".into(), "missing".into())];
        let d = c.decide();
        assert_eq!(
            d.phase,
            Phase::Verifying,
            "an uncovered criterion blocks completion"
        );
        assert_eq!(d.blocking_gates, ["verification-gap:criterion-2/AC1"]);
        assert!(
            d.coordinator_instruction
                .contains("`specrun ac map 2/AC1 --test <name> --spec demo`"),
            "{}",
            d.coordinator_instruction
        );
        let d = Case::new(&all, st).decide();
        assert_eq!(d.phase, Phase::Releasing);
        assert!(d.coordinator_instruction.ends_with("ALL_TASKS_COMPLETE."));
    }

    #[test]
    fn an_unearned_completion_is_a_verification_gap_not_a_release() {
        // Task 2 ticked by hand while its attempt runs, with an open unverified claim.
        let all = TWO.replace("- [ ] 2", "- [x] 2");
        let mut st = executing();
        st["checkedAtInit"] = json!(["1"]);
        st["attempts"] = json!({"2": [{"n": 1, "status": "running"}]});
        st["unverifiedClaims"] = json!([{"taskId": "2", "at": "2026-01-01T00:00:00Z"}]);
        st["verificationBlocks"] = json!({"execution": {"exitCode": 0, "tree": "T"}});
        let d = Case::new(&all, st).decide();
        assert_eq!(d.phase, Phase::Verifying);
        assert_eq!(d.blocking_gates, ["verification-gap:2"]);
        assert!(
            d.coordinator_instruction.starts_with(
                "Do not claim completion yet: task 2 is checked but attempt 1 is still running"
            ),
            "{}",
            d.coordinator_instruction
        );
        assert!(!d.coordinator_instruction.contains("ALL_TASKS_COMPLETE"));
        assert_eq!(d.problem_types[0].evidence().len(), 2);
    }

    #[test]
    fn rule_release_risk_only_at_completion() {
        let git = GitFacts {
            uncommitted: vec!["src/a.rs".into(), "specs/demo/.specrun-state.json".into()],
            committed_since_start: vec![],
            unpushed: Some(2),
        };
        let mut c = Case::new(TWO, executing());
        c.git = Some(git.clone());
        assert!(!kinds(&c.decide()).contains(&ProblemType::ReleaseRisk));
        let mut c = Case::new(
            &TWO.replace("- [ ] 2", "- [x] 2"),
            json!({"phase": "completed", "completed": true}),
        );
        c.git = Some(git);
        let d = c.decide();
        let risk = d
            .problem_types
            .iter()
            .find(|p| p.kind == ProblemType::ReleaseRisk)
            .unwrap();
        assert_eq!(
            risk.evidence(),
            [
                "uncommitted changes: src/a.rs",
                "2 commit(s) on HEAD are on no remote branch"
            ]
        );
        assert_eq!(d.phase, Phase::Releasing);
        assert!(d
            .blocking_gates
            .contains(&"release-risk:unpushed".to_string()));
    }

    /// Pushing is left to a person: the instruction asks for the bookkeeping commit, or
    /// for the unpushed commits in the report, never for a push.
    #[test]
    fn release_risk_asks_for_a_commit_or_a_report_never_a_push() {
        let all = TWO.replace("- [ ] 2", "- [x] 2");
        let mut st = executing();
        st["taskEvidence"]["2"] = json!({"exitCode": 0, "tree": "T"});
        st["verificationBlocks"] = json!({"execution": {"exitCode": 0, "tree": "T"}});
        let said = |st: &Value, uncommitted: &[&str]| {
            let mut c = Case::new(&all, st.clone());
            c.git = Some(GitFacts {
                uncommitted: uncommitted.iter().map(|s| s.to_string()).collect(),
                committed_since_start: vec![],
                unpushed: Some(2),
            });
            c.decide().coordinator_instruction
        };
        let dirty = said(&st, &["specs/demo/tasks.md"]);
        assert!(dirty.starts_with("Commit the remaining changes"), "{dirty}");
        assert!(dirty.ends_with("Never push by yourself."), "{dirty}");
        let unpushed = said(&st, &[]);
        assert!(unpushed.contains("(never push by yourself)"), "{unpushed}");
        assert!(
            unpushed.ends_with("end your reply with ALL_TASKS_COMPLETE."),
            "{unpushed}"
        );
        st["phase"] = json!("completed");
        st["completed"] = json!(true);
        assert!(said(&st, &[]).ends_with("report that spec demo is complete."));
    }

    #[test]
    fn completed_and_clean_is_completed() {
        let all = TWO.replace("- [ ] 2", "- [x] 2");
        let mut st = executing();
        st["phase"] = json!("completed");
        st["taskEvidence"]["2"] = json!({"exitCode": 0, "tree": "T"});
        st["verificationBlocks"] = json!({"execution": {"exitCode": 0, "tree": "T"}});
        let d = Case::new(&all, st).decide();
        assert_eq!(d.phase, Phase::Completed);
        assert!(d.coordinator_instruction.contains("complete"));
    }

    #[test]
    fn a_halt_wins_and_names_the_resume_command() {
        let mut st = executing();
        st["halt"] = json!({"kind": "stall", "reason": "5 stops without progress", "at": "x"});
        let d = Case::new(TWO, st).decide();
        assert_eq!(d.phase, Phase::Halted);
        assert_eq!(d.blocking_gates[0], "halted");
        assert!(d
            .coordinator_instruction
            .contains("specrun resume --spec demo"));
    }

    #[test]
    fn no_state_is_planning() {
        let mut c = Case::new(TWO, json!({}));
        c.state = None;
        let d = c.decide();
        assert_eq!(d.phase, Phase::Planning);
        assert!(d
            .coordinator_instruction
            .contains("specrun state init --spec demo"));
    }

    #[test]
    fn programs_are_found_in_shell_lines() {
        assert_eq!(programs("cargo test"), ["cargo"]);
        assert_eq!(
            programs("cd web && RUST_LOG=1 npm test | tee x"),
            ["npm", "tee"]
        );
        assert_eq!(programs("env FOO=1 time pytest -q; echo done"), ["pytest"]);
        assert_eq!(programs("$RUNNER check"), Vec::<String>::new());
        assert_eq!(programs("./scripts/check.sh"), ["./scripts/check.sh"]);
        assert_eq!(verify_command("`make test` passes"), "make test");
        assert_eq!(verify_command("make test"), "make test");
    }

    #[test]
    fn long_evidence_is_capped() {
        let lines: Vec<String> = (0..30).map(|i| i.to_string()).collect();
        let c = capped(lines);
        assert_eq!(c.len(), MAX_EVIDENCE_LINES);
        assert_eq!(c.last().unwrap(), "… and 21 more");
    }
}
