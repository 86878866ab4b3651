//! The execution protocol as pure transitions: each verb takes the facts it needs (state
//! document, parsed tasks, evidence freshness, critique times, now) and returns either the
//! state patch plus what to say, or every unmet precondition by name. No I/O here; the
//! commands under `commands/` gather the facts and apply the result under the state lock.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::critique::Stored;
use crate::evidence::Freshness;
use crate::state::{self, View};
use crate::tasks::{Task, TaskList};

/// Fix tasks one task may spawn, and how deep `[FIX [FIX …]]` chains may go.
pub const MAX_FIX_TASKS_PER_TASK: u64 = 3;
pub const MAX_FIX_DEPTH: usize = 3;
/// The parser accepts ids of at most this many dot-separated parts.
pub const MAX_ID_PARTS: usize = crate::tasks::MAX_ID_PARTS;
pub const COMPLETED_HEADING: &str = "## Completed tasks";
pub const LEARNINGS_HEADING: &str = "## Learnings";

/// One precondition that does not hold: a stable name and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmet {
    pub name: &'static str,
    pub detail: String,
}

impl Unmet {
    pub fn new(name: &'static str, detail: impl Into<String>) -> Self {
        Unmet {
            name,
            detail: detail.into(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "detail": self.detail})
    }
}

impl std::fmt::Display for Unmet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.detail)
    }
}

/// A fix task to print or insert after its task's block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixTask {
    pub id: String,
    pub fixes: String,
    /// The block's lines, without line endings.
    pub lines: Vec<String>,
    /// Already in tasks.md but not in the state (a `task fail --insert` killed between its
    /// two writes): recorded, not inserted again.
    pub adopted: bool,
}

/// What a verb decided: the state patch (`None` = nothing to write) and what to say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub patch: Option<Value>,
    /// The one-line human result.
    pub message: String,
    /// Further lines (warnings, the fix block, the continue command).
    pub notes: Vec<String>,
    /// False when the verb found its work already done (idempotent repeat).
    pub changed: bool,
    /// complete: tick the checkbox before writing the state.
    pub check_box: bool,
    /// complete: the line for .progress.md.
    pub progress_line: Option<String>,
    pub fix: Option<FixTask>,
    /// fail/rollback: whether this transition halted the execution.
    pub halted: bool,
}

pub type Decision = Result<Outcome, Vec<Unmet>>;

fn unchanged(message: String) -> Outcome {
    Outcome {
        message,
        ..Default::default()
    }
}

/// `attempts.<id>` as a list (absent or malformed = none).
pub fn attempts(state: &Value, id: &str) -> Vec<Value> {
    state
        .get("attempts")
        .and_then(|a| a.get(id))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn status_of(attempt: &Value) -> &str {
    attempt.get("status").and_then(Value::as_str).unwrap_or("")
}

fn n_of(attempt: &Value) -> u64 {
    attempt.get("n").and_then(Value::as_u64).unwrap_or(0)
}

/// A patch replacing `attempts.<id>` (objects merge, so other tasks' attempts stay).
fn attempts_patch(id: &str, list: Vec<Value>) -> Value {
    let mut by_id = serde_json::Map::new();
    by_id.insert(id.to_string(), Value::Array(list));
    json!({ "attempts": Value::Object(by_id) })
}

/// Preconditions every verb that drives the execution shares.
fn execution_gates(state: &Value, unmet: &mut Vec<Unmet>) {
    let view = View(state);
    match view.phase() {
        Some("execution") => {}
        Some(other) => unmet.push(Unmet::new(
            "phase",
            format!("the execution is {other}, not running"),
        )),
        None => unmet.push(Unmet::new(
            "phase",
            format!(
                "the state has no phase: run `specrun state init --spec {}` first",
                view.name().unwrap_or("<spec>")
            ),
        )),
    }
    if let Some(kind) = view.halt_kind() {
        let name = view.name().unwrap_or("<spec>");
        unmet.push(Unmet::new(
            "not-halted",
            format!(
                "the execution is halted ({kind}): clear it with `{}`",
                state::resume_command(name, view)
            ),
        ));
    }
}

/// The tasks `task start` accepts now: the next task's parallel group. While a task has a
/// pending `[FIX]` task, that fix is next (`TaskList::next_index`), not the task itself.
pub fn startable(list: &TaskList) -> Vec<&Task> {
    list.parallel_group(list.next_index())
}

pub fn start(
    state: &Value,
    list: &TaskList,
    task: &Task,
    head: Option<&str>,
    now: &str,
) -> Decision {
    let id = task.label();
    let history = attempts(state, &id);
    if let Some(last) = history.last().filter(|a| status_of(a) == "running") {
        return Ok(unchanged(format!(
            "task {id} already started (attempt {} running since {})",
            n_of(last),
            last.get("startedAt").and_then(Value::as_str).unwrap_or("?")
        )));
    }
    let mut unmet = Vec::new();
    execution_gates(state, &mut unmet);
    if task.checked {
        unmet.push(Unmet::new(
            "unchecked",
            format!("task {id} is already checked in tasks.md"),
        ));
    } else {
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
    }
    if !unmet.is_empty() {
        return Err(unmet);
    }
    let n = history
        .iter()
        .map(n_of)
        .max()
        .unwrap_or(0)
        .saturating_add(1);
    let mut list_out = history;
    list_out.push(json!({"n": n, "startedAt": now, "startCommit": head, "status": "running"}));
    let short = head.map(short_commit).unwrap_or("(no commit yet)");
    Ok(Outcome {
        patch: Some(attempts_patch(&id, list_out)),
        message: format!("task {id} started: attempt {n} from {short}"),
        changed: true,
        ..Default::default()
    })
}

pub fn short_commit(c: &str) -> &str {
    &c[..c.len().min(10)]
}

/// Freshness of one evidence slot and, when recorded, its `startedAt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceFact {
    pub freshness: Freshness,
    /// When the run ended (`startedAt + durationMs`).
    pub ended_at: Option<String>,
    /// Why the record does not count for the task by its command (`CommandFit::problem`).
    pub mismatch: Option<String>,
}

impl EvidenceFact {
    /// Fresh, passing and from a command that counts for the task.
    pub fn counts(&self) -> bool {
        self.freshness.is_ok() && self.mismatch.is_none()
    }

    fn describe(&self) -> String {
        match &self.mismatch {
            Some(why) if self.freshness.is_ok() => format!("not the task's ({why})"),
            _ => self.freshness.as_str().to_string(),
        }
    }
}

pub struct CompleteInput<'a> {
    pub state: &'a Value,
    pub list: &'a TaskList,
    pub task: &'a Task,
    /// `--check`: tick the box as part of completing.
    pub check: bool,
    pub task_evidence: EvidenceFact,
    pub phase_evidence: EvidenceFact,
    /// The post-code and post-test critique records, judged (`critique::load`).
    pub post_code: Stored,
    pub post_test: Stored,
    /// Summaries of open blocking follow-ups (warned about, not refused).
    pub blocking_followups: Vec<String>,
    pub head: Option<&'a str>,
    pub now: &'a str,
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The `.progress.md` line of a completed task.
fn progress_line(task: &Task, commit: Option<&str>) -> String {
    let commit = commit.map(short_commit).unwrap_or("no commit");
    format!("- [x] {} {} — {commit}", task.label(), task.title)
}

pub fn complete(input: &CompleteInput<'_>) -> Decision {
    let task = input.task;
    let id = task.label();
    let history = attempts(input.state, &id);
    let last = history.last();
    if let Some(done) = last.filter(|a| task.checked && status_of(a) == "done") {
        // The progress line goes with it: a run killed before writing it left it out.
        let commit = done.get("endCommit").and_then(Value::as_str);
        return Ok(Outcome {
            progress_line: Some(progress_line(task, commit)),
            ..unchanged(format!("task {id} is already complete"))
        });
    }
    let mut unmet = Vec::new();
    execution_gates(input.state, &mut unmet);
    match last {
        None => unmet.push(Unmet::new(
            "attempt-running",
            format!("task {id} was never started: run `specrun task start {id}` first"),
        )),
        Some(a) if status_of(a) != "running" => unmet.push(Unmet::new(
            "attempt-running",
            format!(
                "attempt {} of task {id} is {}, not running: run `specrun task start {id}`",
                n_of(a),
                status_of(a)
            ),
        )),
        Some(_) => {}
    }
    // Task evidence first; the phase's evidence (a full run) also vouches for the task.
    // A record counts only when it ran the task's own Verify command (or a person accepted
    // another one), whichever slot it sits in.
    let evidence = if input.task_evidence.counts() {
        Some(&input.task_evidence)
    } else if input.phase_evidence.counts() {
        Some(&input.phase_evidence)
    } else {
        None
    };
    if evidence.is_none() {
        unmet.push(Unmet::new(
            "evidence",
            format!(
                "no fresh passing evidence from the task's Verify command: taskEvidence[{id}] is {} and verificationBlocks.execution is {}; run `specrun verify run --task {id}`",
                input.task_evidence.describe(),
                input.phase_evidence.describe()
            ),
        ));
    }
    for (stage, name, stored) in [
        ("post-code", "critique-post-code", &input.post_code),
        ("post-test", "critique-post-test", &input.post_test),
    ] {
        let record = format!("`specrun critique record --task {id} --stage {stage}`");
        match stored {
            Stored::Usable { .. } => {}
            Stored::Missing => unmet.push(Unmet::new(
                name,
                format!("no {stage} critique record: run {record}"),
            )),
            Stored::Unusable(why) => unmet.push(Unmet::new(
                name,
                format!("the {stage} critique record does not count ({why}): run {record}"),
            )),
        }
    }
    match (input.post_test.recorded_at(), evidence) {
        (None, _) => {}
        (Some(recorded), Some(ev)) => {
            let in_order = ev
                .ended_at
                .as_deref()
                .is_some_and(|ended| crate::critique::reviews_run(recorded, ended));
            if !in_order {
                unmet.push(Unmet::new(
                    "critique-post-test-newer",
                    format!(
                        "the post-test critique ({recorded}) is not newer than the evidence it reviews (ended {}): record it again after the verification run",
                        ev.ended_at.as_deref().unwrap_or("at an unknown time")
                    ),
                ));
            }
        }
        (Some(_), None) => {}
    }
    if !task.checked && !input.check {
        unmet.push(Unmet::new(
            "checked",
            format!(
                "task {id} is not checked in tasks.md: run `specrun task complete {id} --check`"
            ),
        ));
    }
    if !unmet.is_empty() {
        return Err(unmet);
    }
    let mut history = history;
    let last = history.last_mut().expect("a running attempt was found");
    let n = n_of(last);
    last["status"] = json!("done");
    last["endedAt"] = json!(input.now);
    last["endCommit"] = json!(input.head);
    let next = input.list.next_index_after(task.index);
    let mut patch = attempts_patch(&id, history);
    patch["taskIndex"] = json!(next);
    patch["taskIteration"] = json!(0);
    patch["totalTasks"] = json!(input.list.tasks.len());
    let commit = input.head.map(short_commit).unwrap_or("no commit");
    let next_label = input
        .list
        .tasks
        .get(next)
        .map(|t| format!("next: {}", t.label()))
        .unwrap_or_else(|| "all tasks are checked".into());
    let notes = input
        .blocking_followups
        .iter()
        .map(|f| {
            format!("warning: open blocking follow-up {f} (completion of the spec waits for it)")
        })
        .collect();
    Ok(Outcome {
        patch: Some(patch),
        message: format!("task {id} complete (attempt {n}, {commit}); {next_label}"),
        notes,
        changed: true,
        check_box: !task.checked,
        progress_line: Some(progress_line(task, input.head)),
        fix: None,
        halted: false,
    })
}

pub struct FailInput<'a> {
    pub state: &'a Value,
    pub list: &'a TaskList,
    pub task: &'a Task,
    pub reason: &'a str,
    /// `--insert`: write the fix task into tasks.md.
    pub insert: bool,
    pub head: Option<&'a str>,
    pub now: &'a str,
}

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
pub fn plan_fix(
    state: &Value,
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
    let entry = state.get("fixTaskMap").and_then(|m| m.get(&id));
    let known: Vec<&str> = entry
        .and_then(|e| e.get("fixTaskIds"))
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fixes: Vec<&Task> = list
        .tasks
        .iter()
        .filter(|t| t.fixes() == Some(id.as_str()))
        .collect();
    let one_line: String = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    let short: String = one_line.chars().take(50).collect();
    let title = format!("Fix: {short}");
    // The very block this failure would insert, unchecked and unknown to the state: a run
    // killed between its two writes put it there.
    if let Some(orphan) = fixes.iter().find(|t| {
        !t.checked && t.id.is_some() && t.title == title && !known.contains(&t.label().as_str())
    }) {
        return Ok(FixTask {
            id: orphan.label(),
            fixes: id,
            lines: Vec::new(),
            adopted: true,
        });
    }
    let existing = fixes.len() as u64;
    let recorded = entry
        .and_then(|e| e.get("attempts"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let used = existing.max(recorded);
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
    let mut n = used + 1;
    let mut fix_id = format!("{id}.{n}");
    while list.tasks.iter().any(|t| t.label() == fix_id) {
        n += 1;
        fix_id = format!("{id}.{n}");
    }
    if fix_id.split('.').count() > MAX_ID_PARTS {
        return Err(Unmet::new(
            "fix-depth",
            format!("fix id {fix_id} would have more than {MAX_ID_PARTS} parts, which tasks.md ids cannot hold"),
        ));
    }
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
    Ok(FixTask {
        id: fix_id,
        fixes: id,
        lines,
        adopted: false,
    })
}

/// The `fixTaskMap` patch after inserting `fix`.
pub fn fix_map_patch(state: &Value, fix: &FixTask, reason: &str, total_tasks: usize) -> Value {
    let entry = state.get("fixTaskMap").and_then(|m| m.get(&fix.fixes));
    let attempts = entry
        .and_then(|e| e.get("attempts"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut ids: Vec<Value> = entry
        .and_then(|e| e.get("fixTaskIds"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    ids.push(json!(fix.id));
    let mut map = serde_json::Map::new();
    map.insert(
        fix.fixes.clone(),
        json!({"attempts": attempts.saturating_add(1), "fixTaskIds": ids, "lastError": reason}),
    );
    json!({"fixTaskMap": Value::Object(map), "totalTasks": total_tasks})
}

pub fn fail(input: &FailInput<'_>) -> Decision {
    let task = input.task;
    let id = task.label();
    let reason = input.reason.trim();
    let view = View(input.state);
    let mut history = attempts(input.state, &id);
    let last_status = history.last().map(|a| status_of(a).to_string());
    let mut unmet = Vec::new();
    if reason.is_empty() {
        unmet.push(Unmet::new("reason", "the reason is empty: say what failed"));
    }
    if task.checked || last_status.as_deref() == Some("done") {
        unmet.push(Unmet::new(
            "not-complete",
            format!("task {id} is already complete; a completed task cannot fail (roll it back or add a follow-up)"),
        ));
    }
    let already_failed = last_status.as_deref() == Some("failed");
    let fix_pending = already_failed
        && history
            .last()
            .is_some_and(|a| a.get("fixTaskId").is_none_or(Value::is_null));
    let fix = if view.recovery_mode() && unmet.is_empty() {
        Some(plan_fix(input.state, input.list, task, reason))
    } else {
        None
    };
    if input.insert {
        match &fix {
            _ if !view.recovery_mode() => unmet.push(Unmet::new(
                "recovery-mode",
                "recovery mode is off: fix tasks are only written with `state init --recovery-mode`",
            )),
            Some(Err(why)) => unmet.push(why.clone()),
            _ => {}
        }
        if already_failed && !fix_pending {
            unmet.push(Unmet::new(
                "fix-pending",
                format!("the failed attempt of task {id} already has its fix task"),
            ));
        }
    }
    if !unmet.is_empty() {
        return Err(unmet);
    }
    if already_failed && !input.insert {
        return Ok(unchanged(format!(
            "task {id} attempt {} already failed",
            history.last().map(n_of).unwrap_or(0)
        )));
    }
    let mut notes = Vec::new();
    let mut patch = json!({});
    let mut halted = false;
    let n = history.last().map(n_of).unwrap_or(1);
    let mut message;
    if already_failed {
        message = format!("task {id} attempt {n} already failed");
    } else {
        // The executor's own `task start` was refused: the delegation still failed and
        // counts, so a loop of refused starts ends at the task cap too.
        let not_started = history.is_empty();
        if not_started {
            history
                .push(json!({"n": 1, "startedAt": null, "startCommit": null, "notStarted": true}));
        }
        let last = history.last_mut().expect("an attempt exists");
        last["status"] = json!("failed");
        last["endedAt"] = json!(input.now);
        last["endCommit"] = json!(input.head);
        last["reason"] = json!(reason);
        let iteration = view.task_iteration().saturating_add(1);
        let max = view.max_task_iterations();
        patch["taskIteration"] = json!(iteration);
        let before = if not_started {
            " before it started"
        } else {
            ""
        };
        message = format!("task {id} attempt {n} failed{before} ({iteration}/{max} iterations)");
        if iteration >= max && view.halt().is_none() {
            halted = true;
            let why =
                format!("task {id} failed {iteration} times (maxTaskIterations {max}): {reason}");
            patch["halt"] = json!({"kind": state::HALT_TASK, "reason": why, "at": input.now});
            let mut halted_doc = input.state.clone();
            state::merge_into(&mut halted_doc, &patch);
            message.push_str("; execution halted");
            notes.push(format!(
                "halted: {why}; to continue: `{}`",
                state::resume_command(view.name().unwrap_or("<spec>"), View(&halted_doc))
            ));
        }
    }
    let mut fix_out = None;
    match fix {
        Some(Ok(f)) => {
            if input.insert {
                if let Some(last) = history.last_mut() {
                    last["fixTaskId"] = json!(f.id);
                }
                let total = input.list.tasks.len() + usize::from(!f.adopted);
                state::merge_into(&mut patch, &fix_map_patch(input.state, &f, reason, total));
                message.push_str(&if f.adopted {
                    format!(
                        "; fix task {} (already in tasks.md) recorded for {id}",
                        f.id
                    )
                } else {
                    format!("; fix task {} inserted after {id}", f.id)
                });
            } else if f.adopted {
                notes.push(format!(
                    "recovery: fix task {} is already in tasks.md; rerun with --insert to record it",
                    f.id
                ));
            } else {
                notes.push(format!(
                    "recovery: insert this fix task after {id} (or rerun with --insert):"
                ));
                notes.extend(f.lines.iter().cloned());
            }
            fix_out = Some(f);
        }
        Some(Err(why)) => notes.push(format!("recovery: no fix task ({why})")),
        None => {}
    }
    state::merge_into(&mut patch, &attempts_patch(&id, history));
    Ok(Outcome {
        patch: Some(patch),
        message,
        notes,
        changed: true,
        check_box: false,
        progress_line: None,
        fix: fix_out.filter(|_| input.insert),
        halted,
    })
}

/// Where a new fix of `task` goes: after its block and after the fixes already below it
/// (with their own fixes), so a file reads 1.2, 1.2.1, 1.2.1.1, 1.2.2 in the order they run.
pub fn fix_anchor<'a>(list: &'a TaskList, task: &'a Task) -> &'a Task {
    let target = task.label();
    let reaches = |t: &Task| {
        let mut cur = t.fixes();
        for _ in 0..=MAX_FIX_DEPTH + 1 {
            match cur {
                Some(id) if id == target => return true,
                Some(id) => {
                    cur = list
                        .tasks
                        .iter()
                        .find(|x| x.label() == id)
                        .and_then(Task::fixes)
                }
                None => return false,
            }
        }
        false
    };
    list.tasks[task.index + 1..]
        .iter()
        .take_while(|t| reaches(t))
        .last()
        .unwrap_or(task)
}

/// Insert `lines` after task's block (`line_end`), in the file's own line-ending style.
/// Every other byte stays as it was.
pub fn insert_after_block(text: &str, task: &Task, lines: &[String], crlf: bool) -> String {
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut offset = 0;
    let mut line_no = 0;
    for raw in text.split_inclusive('\n') {
        offset += raw.len();
        line_no += 1;
        if line_no == task.line_end {
            break;
        }
    }
    let mut out = String::with_capacity(text.len() + 200);
    out.push_str(&text[..offset]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push_str(eol);
    }
    for l in lines {
        out.push_str(l);
        out.push_str(eol);
    }
    out.push_str(&text[offset..]);
    out
}

/// Whether `path` (repo-relative) is covered by a task's Files entry: equal, inside a
/// listed directory, or matching a `*` / `**` pattern.
pub fn path_in_files(path: &str, files: &[String]) -> bool {
    crate::glob::FileEntries::new(files).covers(path)
}

/// What `task rollback` will do, decided before touching the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollbackPlan {
    pub n: u64,
    pub start_commit: String,
    pub was_running: bool,
}

/// Check rollback's preconditions. `changed` = repo-relative paths that differ from the
/// start commit (committed since, staged, unstaged or untracked), bookkeeping excluded.
pub fn plan_rollback(
    state: &Value,
    task: &Task,
    head: Option<&str>,
    changed: &[String],
    force: bool,
) -> Result<RollbackPlan, Vec<Unmet>> {
    let id = task.label();
    let history = attempts(state, &id);
    let mut unmet = Vec::new();
    let Some(last) = history.last() else {
        return Err(vec![Unmet::new(
            "attempt",
            format!("task {id} has no attempt to roll back"),
        )]);
    };
    if status_of(last) == "done" {
        unmet.push(Unmet::new(
            "not-complete",
            format!(
                "attempt {} of task {id} is complete; a completed task is not rolled back",
                n_of(last)
            ),
        ));
    }
    let start = last.get("startCommit").and_then(Value::as_str);
    if head.is_none() {
        unmet.push(Unmet::new(
            "has-commits",
            "the repository has no commits: there is nothing to return to",
        ));
    }
    if last.get("notStarted") == Some(&json!(true)) {
        unmet.push(Unmet::new(
            "start-commit",
            format!("task {id} failed before it started: it changed nothing to roll back"),
        ));
    } else if start.is_none() {
        unmet.push(Unmet::new(
            "start-commit",
            format!("attempt {} of task {id} started before the first commit; there is no commit to return to", n_of(last)),
        ));
    }
    let scope = crate::glob::FileEntries::new(&task.files);
    let outside: Vec<&String> = changed.iter().filter(|p| !scope.covers(p)).collect();
    if !outside.is_empty() && !force {
        let shown: Vec<&str> = outside.iter().take(10).map(|s| s.as_str()).collect();
        let more = if outside.len() > 10 {
            format!(" and {} more", outside.len() - 10)
        } else {
            String::new()
        };
        unmet.push(Unmet::new(
            "within-files",
            format!(
                "changes outside task {id}'s Files ({}): {}{more}; pass --force to roll them back too (they are saved first)",
                if task.files.is_empty() { "none listed".to_string() } else { task.files.join(", ") },
                shown.join(", ")
            ),
        ));
    }
    if !unmet.is_empty() {
        return Err(unmet);
    }
    Ok(RollbackPlan {
        n: n_of(last),
        start_commit: start.expect("checked above").to_string(),
        was_running: status_of(last) == "running",
    })
}

/// The state change after a rollback: the attempt records its saved ref; a running
/// attempt becomes failed and counts as an iteration (rollback is not a free retry).
pub fn rollback_done(
    state: &Value,
    task: &Task,
    plan: &RollbackPlan,
    saved_ref: &str,
    now: &str,
) -> Outcome {
    let id = task.label();
    let view = View(state);
    let mut history = attempts(state, &id);
    let mut patch = json!({});
    let mut notes = Vec::new();
    let mut halted = false;
    if let Some(last) = history.last_mut() {
        last["rollbackRef"] = json!(saved_ref);
        last["rolledBackAt"] = json!(now);
        if plan.was_running {
            last["status"] = json!("failed");
            last["endedAt"] = json!(now);
            last["reason"] = json!("rolled back");
            let iteration = view.task_iteration().saturating_add(1);
            patch["taskIteration"] = json!(iteration);
            if iteration >= view.max_task_iterations() && view.halt().is_none() {
                halted = true;
                let why = format!(
                    "task {id} failed {iteration} times (maxTaskIterations {}): rolled back",
                    view.max_task_iterations()
                );
                patch["halt"] = json!({"kind": state::HALT_TASK, "reason": why, "at": now});
                notes.push(format!("halted: {why}"));
            }
        }
    }
    state::merge_into(&mut patch, &attempts_patch(&id, history));
    Outcome {
        patch: Some(patch),
        message: format!(
            "task {id} rolled back to {}; discarded work saved at {saved_ref}",
            short_commit(&plan.start_commit)
        ),
        notes,
        changed: true,
        halted,
        ..Default::default()
    }
}

/// `resume`'s cap raises.
#[derive(Debug, Clone, Copy, Default)]
pub struct Raises {
    pub global: Option<u64>,
    pub task: Option<u64>,
    pub tokens: Option<u64>,
    pub minutes: Option<u64>,
    /// New `budget.maxUsd`, and the priced spend it must exceed (0 without prices).
    pub usd: Option<f64>,
    pub usd_spent: f64,
}

/// The raise a cap halt needs: (given, its flag). A forecast halt names its flag.
fn needed_raise(view: View<'_>, raises: &Raises) -> Option<(bool, &'static str)> {
    let flag = match view.halt_kind()? {
        state::HALT_GLOBAL => "--raise-global",
        state::HALT_TASK => "--raise-task",
        state::HALT_TOKENS => "--raise-tokens",
        state::HALT_MINUTES => "--raise-minutes",
        state::HALT_USD => "--raise-usd",
        state::HALT_FORECAST => match view.get("halt.raiseFlag").and_then(Value::as_str)? {
            "--raise-tokens" => "--raise-tokens",
            "--raise-minutes" => "--raise-minutes",
            "--raise-usd" => "--raise-usd",
            _ => return None,
        },
        _ => return None,
    };
    let given = match flag {
        "--raise-global" => raises.global.is_some(),
        "--raise-task" => raises.task.is_some(),
        "--raise-tokens" => raises.tokens.is_some(),
        "--raise-minutes" => raises.minutes.is_some(),
        _ => raises.usd.is_some(),
    };
    Some((given, flag))
}

pub fn resume(state: &Value, raises: Raises, session_id: Option<&str>, now: &str) -> Decision {
    let view = View(state);
    let spec = view.name().unwrap_or("<spec>");
    let mut unmet = Vec::new();
    if view.phase() == Some("completed") || view.completed() {
        unmet.push(Unmet::new(
            "not-completed",
            "the execution is completed; there is nothing to resume",
        ));
    }
    // Counted as the guard counts: a missing or bad startedAt does not make it 0.
    let minutes_used = parse_time(now)
        .map(|n| state::minutes_since(view, n).0)
        .unwrap_or(0);
    // Each raise must lift its cap above what is already used, or the guard halts at once.
    let checks: [(Option<u64>, u64, &str, &str); 4] = [
        (
            raises.global,
            view.global_iteration(),
            "--raise-global",
            "global iterations used",
        ),
        (
            raises.task,
            view.task_iteration(),
            "--raise-task",
            "iterations of the current task used",
        ),
        (
            raises.tokens,
            view.output_tokens(),
            "--raise-tokens",
            "output tokens used",
        ),
        (
            raises.minutes,
            minutes_used,
            "--raise-minutes",
            "minutes elapsed",
        ),
    ];
    for (value, used, flag, what) in checks {
        if let Some(v) = value {
            if v <= used {
                unmet.push(Unmet::new(
                    "raise",
                    format!(
                        "{flag} {v} does not lift the cap: {used} {what}; give more than {used}"
                    ),
                ));
            }
        }
    }
    if let Some(v) = raises.usd.filter(|v| *v <= raises.usd_spent) {
        unmet.push(Unmet::new(
            "raise",
            format!(
                "--raise-usd {v} does not lift the cap: ${:.2} spent; give more than that",
                raises.usd_spent
            ),
        ));
    }
    let kind = view.halt_kind();
    if let Some((false, flag)) = needed_raise(view, &raises) {
        unmet.push(Unmet::new(
            "raise",
            format!(
                "the execution halted on a cap ({}); clearing it needs {flag}: `{}`",
                kind.unwrap_or(""),
                state::resume_command(spec, view)
            ),
        ));
    }
    let any_flag = raises.global.is_some()
        || raises.usd.is_some()
        || raises.task.is_some()
        || raises.tokens.is_some()
        || raises.minutes.is_some()
        || session_id.is_some();
    if view.halt().is_none() && !any_flag && unmet.is_empty() {
        unmet.push(Unmet::new(
            "halted",
            format!("{spec} is not halted; nothing to resume"),
        ));
    }
    if !unmet.is_empty() {
        return Err(unmet);
    }
    let mut patch = json!({"guard": {"stallStops": 0}});
    if view.halt().is_some() {
        patch["halt"] = Value::Null;
    }
    if kind == Some(state::HALT_CANCELLED) || view.phase() == Some("cancelled") {
        let before = state
            .get("halt")
            .and_then(|h| h.get("phaseBefore"))
            .and_then(Value::as_str)
            .filter(|p| !matches!(*p, "cancelled" | "completed"))
            .unwrap_or("execution");
        patch["phase"] = json!(before);
    }
    if let Some(v) = raises.global {
        patch["maxGlobalIterations"] = json!(v);
    }
    if let Some(v) = raises.task {
        patch["maxTaskIterations"] = json!(v);
    }
    if let Some(v) = raises.tokens {
        patch["budget"]["maxOutputTokens"] = json!(v);
    }
    if let Some(v) = raises.minutes {
        patch["budget"]["maxMinutes"] = json!(v);
    }
    if let Some(v) = raises.usd {
        patch["budget"]["maxUsd"] = json!(v);
    }
    if let Some(s) = session_id {
        patch["sessionId"] = json!(s);
    }
    let session = session_id.or(view.session_id());
    let cont = match session {
        Some(s) => format!(
            "claude --resume {s} \"/specrun:implement\" (or /specrun:implement inside Claude Code)"
        ),
        None => "/specrun:implement inside Claude Code".to_string(),
    };
    let what = match kind {
        Some(k) => format!("{spec}: halt ({k}) cleared"),
        None => format!("{spec}: not halted; settings updated"),
    };
    Ok(Outcome {
        patch: Some(patch),
        message: format!("{what}; continue with: {cont}"),
        changed: true,
        ..Default::default()
    })
}

pub fn cancel(state: &Value, now: &str) -> Outcome {
    let view = View(state);
    let spec = view.name().unwrap_or("<spec>");
    if view.phase() == Some("cancelled") {
        return unchanged(format!("{spec} is already cancelled"));
    }
    if view.phase() == Some("completed") || view.completed() {
        // A finished execution has nothing left to stop; cancelling it would only make
        // `resume` refuse to undo the cancel.
        return unchanged(format!("{spec} is completed; there is nothing to cancel"));
    }
    Outcome {
        patch: Some(json!({
            "phase": "cancelled",
            // `resume` puts this phase back (a cancelled plan must not resume as execution).
            "halt": {"kind": state::HALT_CANCELLED, "reason": "cancelled by `specrun cancel`",
                     "at": now, "phaseBefore": view.phase()},
        })),
        message: format!(
            "{spec}: cancelled; nothing was deleted (undo with `specrun resume --spec {spec}`)"
        ),
        changed: true,
        ..Default::default()
    }
}

/// Append `line` at the end of the `heading` section of a markdown text (the section is
/// created at the end when absent), keeping the file's BOM and line endings.
pub fn append_to_section(text: &str, heading: &str, line: &str) -> String {
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let bare = |l: &str| l.trim_start_matches('\u{feff}').trim_end().to_string();
    let start = lines
        .iter()
        .position(|l| bare(l).eq_ignore_ascii_case(heading));
    let mut out = String::with_capacity(text.len() + line.len() + heading.len() + 8);
    match start {
        Some(h) => {
            // The section ends at the next heading of the same or a higher level.
            let end = lines[h + 1..]
                .iter()
                .position(|l| l.starts_with("# ") || l.starts_with("## "))
                .map(|p| h + 1 + p)
                .unwrap_or(lines.len());
            // Insert after the section's last non-blank line.
            let mut at = end;
            while at > h + 1 && lines[at - 1].trim().is_empty() {
                at -= 1;
            }
            for l in &lines[..at] {
                out.push_str(l);
            }
            if !out.ends_with('\n') {
                out.push_str(eol);
            }
            out.push_str(line);
            out.push_str(eol);
            for l in lines.drain(at..) {
                out.push_str(l);
            }
        }
        None => {
            out.push_str(text);
            if !out.is_empty() && !out.ends_with('\n') {
                out.push_str(eol);
            }
            if !out.trim_start_matches('\u{feff}').trim().is_empty()
                && !out.ends_with(&format!("{eol}{eol}"))
            {
                out.push_str(eol);
            }
            out.push_str(heading);
            out.push_str(eol);
            out.push_str(eol);
            out.push_str(line);
            out.push_str(eol);
        }
    }
    out
}

/// Whether the `heading` section already holds a bullet with this text (whitespace and
/// case folded).
pub fn section_has(text: &str, heading: &str, bullet_text: &str) -> bool {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let want = norm(bullet_text);
    let mut inside = false;
    for l in text.lines() {
        let bare = l.trim_start_matches('\u{feff}').trim_end();
        if bare.starts_with("# ") || bare.starts_with("## ") {
            inside = bare.eq_ignore_ascii_case(heading);
            continue;
        }
        if inside {
            if let Some(item) = bare.trim_start().strip_prefix("- ") {
                // A learning may carry a `[task]` prefix; compare the text after it.
                let item = match item.strip_prefix('[').and_then(|r| r.split_once("] ")) {
                    Some((_, rest)) => rest,
                    None => item,
                };
                if norm(item) == want {
                    return true;
                }
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::parse;

    const NOW: &str = "2026-01-01T00:10:00.000Z";

    fn exec_state() -> Value {
        json!({"name": "demo", "phase": "execution", "taskIteration": 0, "maxTaskIterations": 2,
               "startedAt": "2026-01-01T00:00:00.000Z", "halt": null})
    }

    fn fresh(at: &str) -> EvidenceFact {
        EvidenceFact {
            freshness: Freshness::Fresh,
            ended_at: Some(at.into()),
            mismatch: None,
        }
    }

    fn missing() -> EvidenceFact {
        EvidenceFact {
            freshness: Freshness::Missing,
            ended_at: None,
            mismatch: None,
        }
    }

    fn apply(state: &Value, o: &Outcome) -> Value {
        let mut s = state.clone();
        if let Some(p) = &o.patch {
            state::merge_into(&mut s, p);
        }
        s
    }

    fn names(e: &[Unmet]) -> Vec<&str> {
        e.iter().map(|u| u.name).collect()
    }

    const TASKS: &str =
        "- [x] 1 Done\n- [ ] 2 [P] A\n  - **Files**: src/a.rs\n- [ ] 3 [P] B\n- [ ] 4 C\n";

    #[test]
    fn start_accepts_the_current_group_only_and_is_idempotent() {
        let list = parse(TASKS);
        let s = exec_state();
        let out = start(&s, &list, list.find("3").unwrap(), Some("abc"), NOW).unwrap();
        let s2 = apply(&s, &out);
        assert_eq!(
            s2["attempts"]["3"][0],
            json!({"n": 1, "startedAt": NOW, "startCommit": "abc", "status": "running"})
        );
        let again = start(&s2, &list, list.find("3").unwrap(), Some("def"), NOW).unwrap();
        assert!(!again.changed && again.patch.is_none());
        let err = start(&s, &list, list.find("4").unwrap(), None, NOW).unwrap_err();
        assert_eq!(names(&err), ["current-task"]);
        assert!(err[0].detail.contains("startable now: 2, 3"), "{}", err[0]);
        let err = start(&s, &list, list.find("1").unwrap(), None, NOW).unwrap_err();
        assert_eq!(names(&err), ["unchecked"]);
        let mut halted = s.clone();
        halted["halt"] = json!({"kind": "stall", "reason": "r"});
        halted["phase"] = json!("cancelled");
        let err = start(&halted, &list, list.find("2").unwrap(), None, NOW).unwrap_err();
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

    fn usable(at: &str) -> Stored {
        Stored::Usable {
            recorded_at: at.into(),
        }
    }

    fn complete_input<'a>(
        state: &'a Value,
        list: &'a TaskList,
        task: &'a Task,
    ) -> CompleteInput<'a> {
        CompleteInput {
            state,
            list,
            task,
            check: false,
            task_evidence: fresh("2026-01-01T00:05:00Z"),
            phase_evidence: missing(),
            post_code: usable("2026-01-01T00:04:00Z"),
            post_test: usable("2026-01-01T00:06:00Z"),
            blocking_followups: vec![],
            head: Some("0123456789abcdef"),
            now: NOW,
        }
    }

    #[test]
    fn complete_names_every_unmet_precondition() {
        let list = parse(TASKS);
        let s = exec_state();
        let task = list.find("2").unwrap();
        let mut input = complete_input(&s, &list, task);
        input.task_evidence = EvidenceFact {
            freshness: Freshness::Stale,
            ended_at: Some("x".into()),
            mismatch: None,
        };
        input.post_code = Stored::Missing;
        input.post_test = Stored::Unusable("1 issue(s) found but not fixed".into());
        let err = complete(&input).unwrap_err();
        assert_eq!(
            names(&err),
            [
                "attempt-running",
                "evidence",
                "critique-post-code",
                "critique-post-test",
                "checked"
            ]
        );
        assert!(err[1]
            .detail
            .contains("taskEvidence[2] is stale and verificationBlocks.execution is missing"));
        assert!(err[3]
            .detail
            .contains("does not count (1 issue(s) found but not fixed)"));
        // Fresh and passing, but another command than the task's Verify: refused.
        let mut input = complete_input(&s, &list, task);
        input.task_evidence = fresh("2026-01-01T00:05:00Z");
        input.task_evidence.mismatch = Some("it ran `true`, not …".into());
        let err = complete(&input).unwrap_err();
        assert!(names(&err).contains(&"evidence"), "{err:?}");
        assert!(
            err.iter().any(|u| u
                .detail
                .contains("taskEvidence[2] is not the task's (it ran `true`")),
            "{err:?}"
        );
        // Post-test older than the evidence (which ended at 00:05).
        let started = apply(&s, &start(&s, &list, task, Some("abc"), NOW).unwrap());
        let mut input = complete_input(&started, &list, task);
        input.post_test = usable("2026-01-01T00:04:59Z");
        input.check = true;
        assert_eq!(
            names(&complete(&input).unwrap_err()),
            ["critique-post-test-newer"]
        );
    }

    #[test]
    fn complete_advances_and_repeats_say_so() {
        let list = parse(TASKS);
        let s = exec_state();
        let task = list.find("2").unwrap();
        let started = apply(&s, &start(&s, &list, task, Some("abc"), NOW).unwrap());
        let mut input = complete_input(&started, &list, task);
        input.check = true;
        // Phase evidence alone also vouches.
        input.task_evidence = missing();
        input.phase_evidence = fresh("2026-01-01T00:05:00Z");
        input.blocking_followups = vec!["F1 [VERIFY/high] open: x".into()];
        let out = complete(&input).unwrap();
        assert!(out.check_box && out.changed);
        assert_eq!(out.progress_line.as_deref(), Some("- [x] 2 A — 0123456789"));
        assert!(out.notes[0].contains("F1"));
        let done = apply(&started, &out);
        assert_eq!(done["taskIndex"], 2);
        assert_eq!(done["attempts"]["2"][0]["status"], "done");
        assert_eq!(done["attempts"]["2"][0]["endCommit"], "0123456789abcdef");
        let ticked = parse(&TASKS.replace("- [ ] 2", "- [x] 2"));
        let again = complete(&complete_input(&done, &ticked, ticked.find("2").unwrap())).unwrap();
        assert!(!again.changed);
        assert!(again.message.contains("already complete"));
    }

    #[test]
    fn fail_counts_halts_at_the_cap_and_refuses_after_complete() {
        let list = parse(TASKS);
        let s = exec_state();
        let task = list.find("2").unwrap();
        let fail_in = |state: &Value| {
            fail(&FailInput {
                state,
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
        let s0 = apply(&s, &o0);
        assert_eq!(s0["attempts"]["2"][0]["status"], "failed");
        assert_eq!(s0["attempts"]["2"][0]["notStarted"], true);
        let s1 = apply(&s, &start(&s, &list, task, Some("a"), NOW).unwrap());
        let o1 = fail_in(&s1).unwrap();
        assert!(!o1.halted);
        let s2 = apply(&s1, &o1);
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
        let s3 = apply(&s2, &start(&s2, &list, task, Some("a"), NOW).unwrap());
        let o3 = fail_in(&s3).unwrap();
        assert!(o3.halted && o3.message.contains("halted"));
        let s4 = apply(&s3, &o3);
        assert_eq!(s4["halt"]["kind"], state::HALT_TASK);
        assert!(o3.notes[0].contains("--raise-task 4"), "{:?}", o3.notes);
        let ticked = parse(&TASKS.replace("- [ ] 2", "- [x] 2"));
        let err = fail(&FailInput {
            state: &s1,
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

    #[test]
    fn recovery_plans_fix_tasks_within_limits() {
        let list =
            parse("- [ ] 1.2 A\n  - **Files**: a.rs\n  - **Verify**: `cargo test`\n- [ ] 1.3 B\n");
        let s = json!({"recoveryMode": true});
        let fix = plan_fix(&s, &list, &list.tasks[0], "boom\nsecond line").unwrap();
        assert_eq!(fix.id, "1.2.1");
        assert_eq!(fix.lines[0], "- [ ] 1.2.1 [FIX 1.2] Fix: boom second line");
        assert!(fix
            .lines
            .contains(&"  - **Verify**: `cargo test`".to_string()));
        let reparsed = parse(&format!("{}\n", fix.lines.join("\n")));
        assert_eq!(reparsed.tasks[0].fixes(), Some("1.2"));
        let full = json!({"fixTaskMap": {"1.2": {"attempts": 3}}});
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
        let patch = fix_map_patch(&s, &fix, "boom", 3);
        assert_eq!(
            patch["fixTaskMap"]["1.2"],
            json!({"attempts": 1, "fixTaskIds": ["1.2.1"], "lastError": "boom"})
        );
    }

    #[test]
    fn a_new_fix_goes_below_the_fixes_already_there() {
        let list = parse("- [ ] 1 A\n- [x] 1.1 [FIX 1] F\n- [x] 1.1.1 [FIX 1.1] G\n- [ ] 2 B\n- [ ] 2.1 [FIX 9] Other\n");
        assert_eq!(fix_anchor(&list, &list.tasks[0]).label(), "1.1.1");
        assert_eq!(fix_anchor(&list, &list.tasks[1]).label(), "1.1.1");
        assert_eq!(fix_anchor(&list, &list.tasks[3]).label(), "2");
    }

    #[test]
    fn insert_after_block_keeps_crlf_bom_and_other_bytes() {
        let text = "\u{feff}- [ ] 1 A\r\n  - **Do**: x\r\n\r\n- [ ] 2 B\r\n";
        let list = parse(text);
        let out = insert_after_block(
            text,
            &list.tasks[0],
            &["- [ ] 1.1 [FIX 1] F".into()],
            list.crlf,
        );
        assert_eq!(
            out,
            "\u{feff}- [ ] 1 A\r\n  - **Do**: x\r\n- [ ] 1.1 [FIX 1] F\r\n\r\n- [ ] 2 B\r\n"
        );
        let no_eol = "- [ ] 1 A";
        let l2 = parse(no_eol);
        assert_eq!(
            insert_after_block(no_eol, &l2.tasks[0], &["X".into()], false),
            "- [ ] 1 A\nX\n"
        );
    }

    #[test]
    fn files_match_paths_dirs_and_globs() {
        let files = vec![
            "src/a.rs".to_string(),
            "docs/".into(),
            "tests/*.rs".into(),
            "web/**/x.js".into(),
        ];
        for ok in [
            "src/a.rs",
            "docs/x/y.md",
            "tests/t.rs",
            "web/x.js",
            "web/a/b/x.js",
        ] {
            assert!(path_in_files(ok, &files), "{ok}");
        }
        for no in ["src/b.rs", "src/a.rs.bak", "tests/sub/t.rs", "docsx"] {
            assert!(!path_in_files(no, &files), "{no}");
        }
    }

    #[test]
    fn rollback_preconditions() {
        let list = parse(TASKS);
        let task = list.find("2").unwrap();
        let s = exec_state();
        assert_eq!(
            names(&plan_rollback(&s, task, Some("h"), &[], false).unwrap_err()),
            ["attempt"]
        );
        let s1 = apply(&s, &start(&s, &list, task, None, NOW).unwrap());
        let err = plan_rollback(&s1, task, None, &["b.rs".into()], false).unwrap_err();
        assert_eq!(names(&err), ["has-commits", "start-commit", "within-files"]);
        let s2 = apply(&s, &start(&s, &list, task, Some("abc"), NOW).unwrap());
        let plan = plan_rollback(&s2, task, Some("def"), &["src/a.rs".into()], false).unwrap();
        assert!(plan.was_running && plan.start_commit == "abc");
        assert!(plan_rollback(&s2, task, Some("def"), &["b.rs".into()], true).is_ok());
        let out = rollback_done(
            &s2,
            task,
            &plan,
            "refs/heads/specrun/rollback/demo/2-1",
            NOW,
        );
        let s3 = apply(&s2, &out);
        assert_eq!(s3["attempts"]["2"][0]["status"], "failed");
        assert_eq!(s3["taskIteration"], 1);
    }

    #[test]
    fn resume_requires_the_right_raise() {
        let mut s = exec_state();
        assert_eq!(
            names(&resume(&s, Raises::default(), None, NOW).unwrap_err()),
            ["halted"]
        );
        s["halt"] = json!({"kind": state::HALT_TASK, "reason": "r"});
        s["taskIteration"] = json!(2);
        let err = resume(&s, Raises::default(), None, NOW).unwrap_err();
        assert!(err[0].detail.contains("--raise-task"), "{}", err[0]);
        let err = resume(
            &s,
            Raises {
                task: Some(2),
                ..Default::default()
            },
            None,
            NOW,
        )
        .unwrap_err();
        assert!(err[0].detail.contains("does not lift"), "{}", err[0]);
        let out = resume(
            &s,
            Raises {
                task: Some(4),
                ..Default::default()
            },
            Some("sess"),
            NOW,
        )
        .unwrap();
        let s2 = apply(&s, &out);
        assert!(s2["halt"].is_null());
        assert_eq!(
            (s2["maxTaskIterations"].as_u64(), s2["sessionId"].as_str()),
            (Some(4), Some("sess"))
        );
        assert_eq!(s2["guard"]["stallStops"], 0);
        assert!(out.message.contains("claude --resume sess"));
        s["halt"] = json!({"kind": state::HALT_MINUTES, "reason": "r"});
        let err = resume(
            &s,
            Raises {
                minutes: Some(5),
                ..Default::default()
            },
            None,
            NOW,
        )
        .unwrap_err();
        assert!(err[0].detail.contains("10 minutes elapsed"), "{}", err[0]);
        s["halt"] = json!({"kind": state::HALT_STALL, "reason": "r"});
        assert!(resume(&s, Raises::default(), None, NOW).is_ok());
    }

    #[test]
    fn cancel_then_resume_restores_execution() {
        let s = exec_state();
        let c = cancel(&s, NOW);
        let s2 = apply(&s, &c);
        assert_eq!(
            (s2["phase"].as_str(), s2["halt"]["kind"].as_str()),
            (Some("cancelled"), Some("cancelled"))
        );
        assert!(!cancel(&s2, NOW).changed);
        let s3 = apply(&s2, &resume(&s2, Raises::default(), None, NOW).unwrap());
        assert_eq!(s3["phase"], "execution");
        assert!(s3["halt"].is_null());
        // A cancelled plan resumes as a plan, not as an execution that skips approval.
        let mut planning = exec_state();
        planning["phase"] = json!("planning");
        let cancelled = apply(&planning, &cancel(&planning, NOW));
        let resumed = apply(
            &cancelled,
            &resume(&cancelled, Raises::default(), None, NOW).unwrap(),
        );
        assert_eq!(resumed["phase"], "planning");
        // A completed execution is not cancelled (resume could not undo it).
        let mut done = exec_state();
        done["phase"] = json!("completed");
        done["completed"] = json!(true);
        let c = cancel(&done, NOW);
        assert!(!c.changed && c.patch.is_none(), "{c:?}");
    }

    #[test]
    fn sections_append_create_and_dedupe() {
        let text = "# Progress\r\n\r\n## Learnings\r\n- [1] one\r\n\r\n## Other\r\nx\r\n";
        let out = append_to_section(text, LEARNINGS_HEADING, "- two");
        assert_eq!(
            out,
            "# Progress\r\n\r\n## Learnings\r\n- [1] one\r\n- two\r\n\r\n## Other\r\nx\r\n"
        );
        assert!(section_has(&out, LEARNINGS_HEADING, "ONE"));
        assert!(!section_has(&out, LEARNINGS_HEADING, "x"));
        assert_eq!(
            append_to_section("", LEARNINGS_HEADING, "- a"),
            "## Learnings\n\n- a\n"
        );
        assert_eq!(
            append_to_section("notes", COMPLETED_HEADING, "- a"),
            "notes\n\n## Completed tasks\n\n- a\n"
        );
        assert_eq!(
            append_to_section("## Learnings\n", LEARNINGS_HEADING, "- a"),
            "## Learnings\n- a\n"
        );
    }
}
