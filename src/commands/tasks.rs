//! `specrun tasks count|lint|list|next|show|check`.

use serde::Serialize;

use crate::cli::{TasksCommand, TasksReadArgs};
use crate::error::{ExitStatus, Result};
use crate::io::output;
use crate::io::project::Project;
use crate::model::tasks::format::{self, Format, Note, NoteKind};
use crate::model::tasks::lint::{self, Finding, Severity};
use crate::model::tasks::{self, Counts, Task, TaskList};
use crate::model::tasks_file::{self, LoadedTasks};
use crate::next;
use crate::next::facts::{self, StateRead};

pub(crate) fn run(project: &Project, cmd: TasksCommand) -> Result<ExitStatus> {
    match cmd {
        TasksCommand::Count { file, spec, .. } => {
            // Counting needs no task structs: the fast path of the same line scanner.
            let (path, text) =
                tasks_file::read_text(project, spec.spec.as_deref(), file.as_deref())?;
            let counts = tasks_file::counts(&path, &text);
            output::json_line(&counts);
            if counts.unread > 0 {
                output::warn(&unread_note(&path, &text, counts.unread));
            }
            Ok(ExitStatus::Success)
        }
        TasksCommand::Lint { file, spec, json } => {
            let (path, text) =
                tasks_file::read_text(project, spec.spec.as_deref(), file.as_deref())?;
            let loaded = tasks_file::read(&path, text, true)?;
            let (text, list) = (&loaded.text, &loaded.list);
            let findings = lint::lint(text, list);
            if json {
                let errors = findings
                    .iter()
                    .filter(|f| f.severity == Severity::Error)
                    .count();
                output::json_pretty(&LintAnswer {
                    file: &path,
                    errors,
                    warnings: findings.len() - errors,
                    counts: list.counts(),
                    format: loaded.format,
                    notes: &loaded.notes,
                    findings: &findings,
                });
            } else {
                if loaded.format.is_foreign() {
                    output::line(&format!(
                        "{}: read as {}",
                        path.display(),
                        loaded.format.name()
                    ));
                    for n in &loaded.notes {
                        let kind = match n.kind {
                            NoteKind::Read => "read",
                            NoteKind::Assumed => "assumed",
                        };
                        output::line(&format!("  {kind}: {}", n.message));
                    }
                    // The person's way to a default Verify, named at a shell only: inside
                    // Claude Code the model reads this and the choice is not its own.
                    if list
                        .tasks
                        .iter()
                        .any(|t| t.verify.is_none() && t.no_verify.is_none())
                    {
                        output::line(&format!(
                            "  fix: {}",
                            crate::claude::roles::for_person(
                                "specrun state init --default-verify CMD"
                            )
                        ));
                    }
                }
                for f in &findings {
                    output::line(&finding_line(&path, f));
                }
                output::line(&lint_summary(&path, &findings));
            }
            // Errors are the verb's well-formed "no".
            Ok(ExitStatus::yes_no(!lint::has_errors(&findings)))
        }
        TasksCommand::List(args) => {
            let (path, text) =
                tasks_file::read_text(project, args.spec.spec.as_deref(), args.file.as_deref())?;
            // Another tool's format is read as `tasks show` reads it (its Files, Depends,
            // criteria, nesting); specrun's own is streamed: the counts first (the fast
            // scan), then each task as it is read, so a million tasks never sit in memory.
            if format::detect_in(&path.to_string_lossy(), tasks::iter(&text)).is_foreign() {
                let loaded = tasks_file::read(&path, text, true)?;
                list_tasks(&args, loaded.list.counts(), loaded.list.tasks);
            } else {
                list_tasks(&args, tasks::count(&text), tasks::iter(&text));
            }
            Ok(ExitStatus::Success)
        }
        TasksCommand::Next(args) => {
            let loaded = load(project, &args)?;
            let list = loaded.list;
            let first = run_first(project, &args, &list);
            // Nothing may start before the step to run first.
            let group: Vec<&Task> = match first {
                Some(_) => Vec::new(),
                None => list.parallel_group(list.next_index()),
            };
            if args.json {
                let next = list.next();
                let ids: Vec<String> = group.iter().map(|t| t.label()).collect();
                output::json_pretty(&NextAnswer {
                    next,
                    parallel_group: ids,
                    counts: list.counts(),
                    run_first: first
                        .as_ref()
                        .map(|(command, why)| RunFirst { command, why }),
                });
            } else {
                if let Some((_, why)) = &first {
                    output::line(&format!("first: {why}"));
                }
                match list.next() {
                    None if list.tasks.is_empty() => output::line(&format!(
                        "{} holds no tasks (no `- [ ]` lines)",
                        loaded.path.display()
                    )),
                    None => output::line("all tasks are checked"),
                    Some(t) => {
                        output::line(&detail(t));
                        if group.len() > 1 {
                            let ids: Vec<String> = group.iter().map(|t| t.label()).collect();
                            output::line(&format!("parallel group: {}", ids.join(", ")));
                        }
                    }
                }
            }
            // No next task is a well-formed "no".
            Ok(ExitStatus::yes_no(list.next().is_some()))
        }
        TasksCommand::Show { id, read: args } => {
            let loaded = load(project, &args)?;
            let task = loaded.find(&id)?;
            if args.json {
                output::json_pretty(task);
            } else {
                output::line(&detail(task));
            }
            Ok(ExitStatus::Success)
        }
        TasksCommand::Check {
            id,
            undo,
            spec,
            file,
        } => {
            let path = tasks_file::resolve_path(project, spec.spec.as_deref(), file.as_deref())?;
            // A write: `--file` must not lead outside the project root.
            let path = project.inside(&path)?;
            let (changed, label, title) = tasks_file::check(&path, &id, !undo)?;
            let mark = if undo { "[ ]" } else { "[x]" };
            let verb = if changed { "now" } else { "already" };
            output::line(&format!("{label} {title}: {verb} {mark}"));
            Ok(ExitStatus::Success)
        }
    }
}

/// The step to run before the next task can start (the engine's: an isolated group waiting
/// for its merge), as (command, why); none for a plain `--file` or a spec without state.
fn run_first(project: &Project, args: &TasksReadArgs, list: &TaskList) -> Option<(String, String)> {
    if args.file.is_some() {
        return None;
    }
    let spec = project.spec(args.spec.spec.as_deref()).ok()??;
    let StateRead::Valid(state) = facts::read_typed(&spec.state_path()) else {
        return None;
    };
    let standing = next::standing_of(spec.place(), list, &state);
    let why = standing.merge_step()?;
    Some((standing.merge_command(), why))
}

fn list_tasks(args: &TasksReadArgs, c: Counts, tasks: impl IntoIterator<Item = Task>) {
    if args.json {
        output::json_stream("counts", &c, "tasks", tasks, |t, out| t.write_json(out));
    } else {
        for t in tasks {
            output::line(&summary_line(&t));
        }
        output::line(&format!("{}/{} done", c.completed, c.total));
    }
}

fn load(project: &Project, args: &TasksReadArgs) -> Result<LoadedTasks> {
    let (path, text) =
        tasks_file::read_text(project, args.spec.spec.as_deref(), args.file.as_deref())?;
    tasks_file::read(&path, text, true)
}

fn markers(t: &Task) -> String {
    t.markers.iter().map(|m| format!("[{m}] ")).collect()
}

pub(crate) fn summary_line(t: &Task) -> String {
    let mark = if t.checked { "[x]" } else { "[ ]" };
    format!("{mark} {} {}{}", t.label(), markers(t), t.title)
}

pub(crate) fn detail(t: &Task) -> String {
    let mut out = vec![summary_line(t)];
    let field = |name: &str, v: &Option<String>| v.as_ref().map(|v| format!("  {name}: {v}"));
    out.extend(field("Do", &t.do_));
    if !t.files.is_empty() {
        out.push(format!("  Files: {}", t.files.join(", ")));
    }
    out.extend(field("Done when", &t.done_when));
    out.extend(field("Verify", &t.verify));
    out.extend(field("Commit", &t.commit));
    if !t.depends.is_empty() {
        out.push(format!("  Depends: {}", t.depends.join(", ")));
    }
    out.push(format!("  Lines: {}-{}", t.line_start, t.line_end));
    out.join("\n")
}

/// What `tasks count` says on stderr when lines look like tasks and are not read: the
/// first few lines, and where the reasons are.
fn unread_note(path: &std::path::Path, text: &str, unread: usize) -> String {
    let list = tasks::parse(text);
    let lines: Vec<String> = list
        .unread
        .iter()
        .take(5)
        .map(|u| u.line.to_string())
        .collect();
    let more = if unread > lines.len() { ", …" } else { "" };
    format!(
        "{unread} line(s) of {} look like tasks but are not read as tasks (line {}{more}); `specrun tasks lint {}` says why",
        path.display(),
        lines.join(", "),
        crate::support::shell::path(path)
    )
}

pub(crate) fn finding_line(path: &std::path::Path, f: &Finding) -> String {
    let severity = match f.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    format!(
        "{}:{}: {severity}: {} [{}]\n  fix: {}",
        path.display(),
        f.line,
        f.message,
        f.code,
        f.fix
    )
}

pub(crate) fn lint_summary(path: &std::path::Path, findings: &[Finding]) -> String {
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    format!(
        "{}: {errors} error(s), {} warning(s)",
        path.display(),
        findings.len() - errors
    )
}

/// `tasks next --json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NextAnswer<'a> {
    next: Option<&'a Task>,
    parallel_group: Vec<String>,
    counts: Counts,
    /// The step to run before the next task can start, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    run_first: Option<RunFirst<'a>>,
}

#[derive(Serialize)]
struct RunFirst<'a> {
    command: &'a str,
    why: &'a str,
}

/// `tasks lint --json`.
#[derive(Serialize)]
struct LintAnswer<'a> {
    file: &'a std::path::Path,
    errors: usize,
    warnings: usize,
    counts: Counts,
    /// The format the file was read as (`specrun`, `spec-kit`, `kiro`, `openspec`).
    format: Format,
    /// For a foreign format: what was read from the file and what specrun assumed.
    #[serde(skip_serializing_if = "<[Note]>::is_empty")]
    notes: &'a [Note],
    findings: &'a [Finding],
}
