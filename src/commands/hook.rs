//! `specrun hook stop|subagent-stop|session-start|pre-tool-use`: the I/O edge of the guard.
//! Reads the hook JSON on stdin, gathers facts, asks `guard` for the decision, writes the
//! state patch and the event, prints at most one JSON object. Never exits non-zero, never
//! sleeps (the state lock is polled for at most `HOOK_LOCK_WAIT`), and turns any internal
//! trouble into "allow" with a systemMessage: a hook must never trap a session. A panic
//! during a gated decision is the exception: it blocks or denies, naming the error (a
//! guard that cannot decide does not let the step through; Claude Code ends a turn after
//! 8 blocks in a row, so even a panic every time cannot trap the session).
//!
//! The fast path (stdin unparseable, no spec, no state, not executing, another session's
//! execution) stats and reads a few small files and writes nothing: no git process, no
//! transcript read, no lock.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::cli::HookEvent;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::verify::{self, Freshness, Slot};
use crate::hooks::tool_guard;
use crate::hooks::{
    self as hook, ClaimFacts, HookAnswer, HookSpecific, Outcome, StopFacts, StopInput,
    SubagentInput, UsageRead,
};
use crate::hooks::{bound, hook_cost};
use crate::io::events::{By, Event, Tag};
use crate::io::project::{Project, Spec};
use crate::model::state::{Phase, State};
use crate::model::tasks::TaskList;
use crate::model::tasks_file;
use crate::next::facts::{read_typed as read_state, StateRead};
use crate::next::gates::{self, completion_gates, evidence_fact};
use crate::{
    evidence::criteria, evidence::critique, evidence::proof, evidence::testlog, hooks::claims,
    hooks::uncounted, io::events, io::git, io::notify, io::output, io::store,
};

/// How long a hook waits for the state lock before allowing: bounded and short
/// (docs/design.md#what-specrun-does).
pub(crate) const HOOK_LOCK_WAIT: Duration = Duration::from_millis(500);

/// The most of stdin a hook reads, and how long it waits for it. Past either bound the
/// input counts as unparseable: the hook allows and writes nothing (the fast path).
pub(crate) const HOOK_STDIN_MAX: u64 = 8 << 20;
pub(crate) const HOOK_STDIN_WAIT: Duration = Duration::from_secs(2);

/// Stdin within `HOOK_STDIN_MAX` bytes and `HOOK_STDIN_WAIT`; empty past either bound.
fn read_stdin() -> Vec<u8> {
    store::read_stdin_within(HOOK_STDIN_MAX, HOOK_STDIN_WAIT)
}

pub(crate) fn run(event: HookEvent, cwd: Option<&Path>) -> ExitStatus {
    // A panic must not reach stderr as a crash report nor exit 101 (which Claude Code
    // takes as a non-blocking error: the gated action would go through). The panic hook
    // keeps its message for the answer.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()));
        let text = format!(
            "{}{}",
            crate::support::chars::clip(&what, 300, "…"),
            at.unwrap_or_default()
        );
        let _ = PANICKED.set(text);
    }));
    let answer = std::panic::catch_unwind(|| handle(event, &read_stdin(), cwd))
        .unwrap_or_else(|_| Some(after_panic(event, cwd)));
    if let Some(answer) = answer {
        output::json_line(&answer);
    }
    ExitStatus::Success
}

/// The panic's message and place, set by the panic hook.
static PANICKED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Whether the hook had found an execution it gates when it panicked: a panic after that
/// point blocks (Stop, SubagentStop) or denies (PreToolUse) instead of allowing, since the
/// guard could not decide; before it (no spec, another session's), nothing is gated.
static GATING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The stdin a panic answer records its event from (set before the decision starts).
static STDIN: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();

/// The answer to a panic: a block or deny naming the internal error when a gated decision
/// was under way, else an allow with a message; and (best effort, itself guarded) the
/// events.jsonl line every internal error leaves in the project the hook ran for.
fn after_panic(event: HookEvent, cwd: Option<&Path>) -> HookAnswer {
    let what = PANICKED.get().map_or("unknown", String::as_str);
    let gating = GATING.load(std::sync::atomic::Ordering::SeqCst);
    let (answer, decision, message) = panic_answer(event, gating, what);
    let stdin = STDIN.get().map_or(&[][..], Vec::as_slice);
    let _ = std::panic::catch_unwind(|| {
        let input = HookInput::parse(stdin)?;
        let project = input.project(cwd).filter(|p| p.found)?;
        let _ = record(&project, event, &input, decision, "panic", &message);
        Some(())
    });
    answer
}

/// What a hook answers after a panic (`what`: its message), the decision word for the
/// events line, and the message.
fn panic_answer(event: HookEvent, gating: bool, what: &str) -> (HookAnswer, &'static str, String) {
    if !gating || event == HookEvent::SessionStart {
        let message = format!("{PANIC_MESSAGE} ({what}); this hook allowed the action.");
        return (HookAnswer::message(message.as_str()), "allow", message);
    }
    let message = format!(
        "{PANIC_MESSAGE} ({what}); the guard could not decide, so it refuses rather than let an unchecked step through. Run `specrun doctor` and `specrun state get specs/<spec>/.specrun-state.json` to find the value it could not handle, and report the error."
    );
    let (answer, decision) = match event {
        HookEvent::PreToolUse => (
            HookAnswer::specific(HookSpecific::PreToolUse {
                permission_decision: "deny",
                permission_decision_reason: message.clone(),
            }),
            "deny",
        ),
        _ => (
            HookAnswer {
                decision: Some("block"),
                reason: Some(message.clone()),
                ..HookAnswer::default()
            },
            "block",
        ),
    };
    (answer, decision, message)
}

const PANIC_MESSAGE: &str = "specrun guard: internal error (panic)";

/// The hook's stdin, parsed. Every field is optional.
struct HookInput {
    doc: Value,
}

impl HookInput {
    fn parse(bytes: &[u8]) -> Option<HookInput> {
        let doc: Value = serde_json::from_slice(bytes).ok()?;
        doc.is_object().then_some(HookInput { doc })
    }
    fn str(&self, key: &str) -> Option<&str> {
        self.doc.get(key).and_then(Value::as_str)
    }
    fn flag(&self, key: &str) -> bool {
        self.doc.get(key).and_then(Value::as_bool).unwrap_or(false)
    }
    fn session(&self) -> Option<&str> {
        self.str("session_id")
    }
    /// The project of stdin `cwd`, falling back to `--cwd` or the process directory.
    fn project(&self, cwd: Option<&Path>) -> Option<Project> {
        self.str("cwd")
            .and_then(|dir| Project::discover(Some(Path::new(dir))).ok())
            .or_else(|| Project::discover(cwd).ok())
    }
}

/// The project and active spec a hook applies to, with the state as read before the lock.
struct Active {
    project: Project,
    spec: Spec,
    state: State,
    /// The guard's record of this execution, when one binds it to this session.
    bound: Option<Box<bound::Bound>>,
}

/// What locating the active execution found.
enum Located {
    /// Nothing to do: no spec, no state, or not executing.
    Nothing,
    /// The state file exists but cannot be used.
    Unreadable {
        project: Project,
        spec: Spec,
        error: String,
    },
    Executing(Active),
    /// Cancelled by `specrun cancel`: only PreToolUse still applies.
    Cancelled(Active),
    /// The record binds this session to an execution whose files no longer match it.
    RecordHalt {
        project: Project,
        spec: String,
        record: Option<Box<crate::model::record::Record>>,
        reason: String,
    },
    /// A bookkeeping path the hook must not use (a link, a FIFO).
    Trouble {
        project: Project,
        error: String,
    },
}

fn handle(event: HookEvent, stdin: &[u8], cwd: Option<&Path>) -> Option<HookAnswer> {
    let _ = STDIN.set(stdin.to_vec());
    let input = HookInput::parse(stdin)?;
    if event == HookEvent::SessionStart {
        bind_session(&input, cwd, "session-start");
    }
    // Bash/Write/Edit: judged from the call alone first; a read-only one never reads the state.
    let guarded = (event == HookEvent::PreToolUse)
        .then(|| guarded_call(&input))
        .flatten();
    if let Some(answer) = foreign_session(event, &input, cwd) {
        return Some(answer);
    }
    match &guarded {
        Some(tool_guard::Call::ReadOnly) => return None,
        Some(tool_guard::Call::Changes) if fast_allow(&input, cwd) => return None,
        _ => {}
    }
    let located = locate(&input, cwd);
    let active = match located {
        Located::Nothing => return None,
        Located::RecordHalt {
            project,
            spec,
            record,
            reason,
        } => {
            let halt = RecordHalt {
                spec: &spec,
                rec: record.as_deref(),
                reason: &reason,
            };
            return record_halt(event, &input, &project, &halt, guarded.as_ref());
        }
        Located::Unreadable {
            project,
            spec,
            error,
        } => return unreadable_state(event, &input, &project, &spec, &error, guarded.as_ref()),
        Located::Executing(active) => active,
        Located::Cancelled(active) if event == HookEvent::PreToolUse => active,
        Located::Cancelled(_) => return None,
        Located::Trouble { .. } if event == HookEvent::PreToolUse => return None,
        Located::Trouble { project, error } => {
            let message =
                format!("specrun guard: {error}; the guard enforces nothing until it is fixed.");
            return trouble(&project, event, &input, "unusable-path", message);
        }
    };
    GATING.store(true, std::sync::atomic::Ordering::SeqCst);
    crate::support::fault::point("hook:decide");
    match event {
        HookEvent::Stop => stop(&input, active),
        HookEvent::SubagentStop => subagent_stop(&input, active),
        HookEvent::SessionStart => session_start(&input, &active),
        HookEvent::PreToolUse => pre_tool_use(&input, &active, guarded.as_ref()),
    }
}

/// Whether a code-changing call may be allowed at once, without the typed reads of the
/// whole way (which cost more than the whole hook may: a Bash call stays at or below the
/// idle Stop hook's instructions). It reads the session's binding, the execution's record,
/// `.current-spec` and the state, each once and beneath a directory opened once, from the
/// bytes as specrun writes them (pretty JSON, top-level keys indented two spaces):
/// - no project, or no spec and no execution bound to the session: nothing to guard;
/// - else the spec `.current-spec` names (the bound one, when the session is bound: a
///   switched or removed `.current-spec` goes the whole way, where the record halts it),
///   its record holding no halt and naming this spec directory, its state executing and
///   not halted.
///
/// Anything else (a link, a garbled file, a path-like `.current-spec`, a planning phase, a
/// bound execution whose record or state is gone) goes the whole way, so this only ever
/// allows what the whole way allows.
fn fast_allow(input: &HookInput, cwd: Option<&Path>) -> bool {
    use crate::io::project::{current_spec_line, validate_spec_name};
    use crate::io::project::{CURRENT_SPEC_FILE, CURRENT_SPEC_MAX, SPECS_DIR, STATE_FILE};
    let Some(project) = input.project(cwd) else {
        return true;
    };
    let Ok(Some(root)) = store::Beneath::open(&project.root, true) else {
        return false;
    };
    let sid = input.session().filter(|s| !s.is_empty());
    let records = match sid.map(|_| crate::io::record::open_dir(&project.root)) {
        None | Some(Ok(None)) => None,
        Some(Ok(Some(dir))) => Some(dir),
        Some(Err(_)) => return false,
    };
    let bound = match (sid, &records) {
        (Some(sid), Some(dir)) => match crate::io::record::read_in(dir, "sessions", sid) {
            Ok(None) => None,
            // As the binary writes it (pretty); any other shape through the typed parse.
            Ok(Some(b)) => match only(&b, "spec") {
                Some(v) => serde_json::from_slice::<Option<String>>(v).ok().flatten(),
                None => serde_json::from_slice::<crate::model::record::Binding>(&b)
                    .ok()
                    .and_then(|b| b.spec),
            },
            Err(_) => return false,
        },
        _ => None,
    };
    let named = match root.read(&[SPECS_DIR, CURRENT_SPEC_FILE], CURRENT_SPEC_MAX) {
        Ok(None) => None,
        Ok(Some(bytes)) => match current_spec_line(&bytes) {
            Some(line) => line,
            None => return false,
        },
        Err(_) => return false,
    };
    if bound.is_some() && named != bound {
        return false;
    }
    let Some(name) = named else {
        return true;
    };
    if validate_spec_name(&name).is_err() {
        return false;
    }
    let dir = project.specs_dir().join(&name);
    let record = records
        .as_ref()
        .map(|d| crate::io::record::read_in(d, "executions", &name));
    let record_fits = |b: &[u8]| {
        let spec_dir = serde_json::to_string(&dir.display().to_string()).unwrap_or_default();
        let [halt, at] = crate::support::json::pretty_top_level_once(b, ["halt", "specDir"]);
        halt == Some(&b"null"[..]) && at == Some(spec_dir.as_bytes())
    };
    let record_unhalted = match record {
        None | Some(Ok(None)) => bound.is_none(),
        Some(Ok(Some(b))) => record_fits(&b),
        Some(Err(_)) => false,
    };
    if !record_unhalted {
        return false;
    }
    let state = root.read(&[SPECS_DIR, &name, STATE_FILE], store::MAX_READ);
    match state {
        Ok(None) => bound.is_none(),
        Ok(Some(b)) => {
            let [phase, halt] = crate::support::json::pretty_top_level_once(&b, ["phase", "halt"]);
            phase == Some(&b"\"execution\""[..]) && halt == Some(&b"null"[..])
        }
        Err(_) => false,
    }
}

/// The value of `key`, a top-level member of pretty JSON, when it is there exactly once.
fn only<'a>(bytes: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let [value] = crate::support::json::pretty_top_level_once(bytes, [key]);
    value
}

/// A Bash call that passes another session's id (`--session-id`) is denied whatever the
/// execution's state: before `state init` there is no execution to guard, and binding one
/// to another session would leave this session unguarded from then on.
fn foreign_session(event: HookEvent, input: &HookInput, cwd: Option<&Path>) -> Option<HookAnswer> {
    if event != HookEvent::PreToolUse || input.str("tool_name") != Some("Bash") {
        return None;
    }
    let own = input.session().filter(|s| !s.is_empty())?;
    let command = input.doc.get("tool_input")?.get("command")?.as_str()?;
    let other = tool_guard::foreign_session(command, own)?;
    let reason = format!(
        "specrun guard: denied: the command binds to session `{other}`, not this one (`{own}`); an execution is bound to the session that runs it. Run it again with this session's id (`--session-id {own}`)."
    );
    let answer = HookAnswer::specific(HookSpecific::PreToolUse {
        permission_decision: "deny",
        permission_decision_reason: reason.clone(),
    });
    let Some(project) = input.project(cwd) else {
        return Some(answer);
    };
    Some(
        match record(&project, event, input, "deny", "foreign-session", &reason) {
            Ok(()) => answer,
            Err(e) => hook::with_message(
                Some(answer),
                &format!("specrun guard: this decision was not recorded: {e}"),
            ),
        },
    )
}

/// What a Bash, Write, Edit, MultiEdit or NotebookEdit call does (`None` for other tools).
fn guarded_call(input: &HookInput) -> Option<tool_guard::Call> {
    let tool = input.str("tool_name")?;
    if !tool_guard::GUARDED_TOOLS.contains(&tool) {
        return None;
    }
    let field = |k: &str| {
        input
            .doc
            .get("tool_input")
            .and_then(|t| t.get(k))
            .and_then(Value::as_str)
    };
    Some(match tool {
        "Bash" => tool_guard::bash(field("command").unwrap_or("")),
        _ => tool_guard::file(field("file_path").or(field("notebook_path")).unwrap_or("")),
    })
}

/// Find the project from stdin `cwd` (falling back to `--cwd` or the process directory),
/// then its active spec and state. Only stats and small reads.
fn locate(input: &HookInput, cwd: Option<&Path>) -> Located {
    let Some(project) = input.project(cwd) else {
        return Located::Nothing;
    };
    match bound::lookup(&project, input.session()) {
        bound::Lookup::None => {}
        bound::Lookup::Halted {
            spec,
            record,
            reason,
        } => {
            return Located::RecordHalt {
                project,
                spec,
                record,
                reason,
            }
        }
        bound::Lookup::Bound(b) => {
            let (spec, state) = (b.spec.clone(), b.state.clone());
            return located(project, spec, state, Some(b));
        }
    }
    let spec = match project.spec(None) {
        Ok(Some(spec)) => spec,
        // A link or a special file at .current-spec is trouble to report, not "no spec".
        Err(e @ (Error::Link { .. } | Error::NotRegular { .. })) => {
            return Located::Trouble {
                project,
                error: e.to_string(),
            }
        }
        _ => return Located::Nothing,
    };
    match read_state(&spec.state_path()) {
        StateRead::Absent => Located::Nothing,
        StateRead::Invalid(error) => Located::Unreadable {
            project,
            spec,
            error,
        },
        StateRead::Valid(state) => located(project, spec, *state, None),
    }
}

/// An execution's state, as the hooks go on with it.
fn located(
    project: Project,
    spec: Spec,
    state: State,
    bound: Option<Box<bound::Bound>>,
) -> Located {
    let phase = state.phase();
    let active = Active {
        project,
        spec,
        state,
        bound,
    };
    match phase {
        _ if hook::executing(&active.state) => Located::Executing(active),
        // A cancelled execution still denies new work (PreToolUse), nothing else.
        Some(Phase::Cancelled) => Located::Cancelled(active),
        _ => Located::Nothing,
    }
}

/// Bind the session as Claude Code first gave it (`which` hook saw it first): its
/// transcript path and the commit HEAD names now. Only in a project with specs/; an
/// existing binding is kept.
fn bind_session(input: &HookInput, cwd: Option<&Path>, which: &str) {
    let Some(sid) = input.session().filter(|s| !s.is_empty()) else {
        return;
    };
    let Some(project) = input.project(cwd).filter(|p| p.specs_dir().is_dir()) else {
        return;
    };
    let binding = crate::model::record::Binding {
        session_id: sid.to_string(),
        transcript_path: input
            .str("transcript_path")
            .filter(|p| !p.is_empty())
            .map(str::to_string),
        start_commit: git::head_fast(&project.root),
        bound_at: events::now_rfc3339(),
        bound_by: which.to_string(),
        spec: None,
    };
    let _ = crate::model::record::bind(&project.root, &binding);
}

/// The record halted this session's execution (or halts it now): the Stop halts again
/// naming the reason, work-starting tools are denied, SessionStart says so; nothing traps
/// the session (a halt ends the turn).
/// The execution the record halted: its spec, the record, and why.
struct RecordHalt<'a> {
    spec: &'a str,
    rec: Option<&'a crate::model::record::Record>,
    reason: &'a str,
}

/// Whether a PreToolUse call is one a halted or unjudgeable execution denies: work that
/// starts agents, or a Bash/editor call that may change the code or is forbidden outright.
fn denied_when_stopped(input: &HookInput, guarded: Option<&tool_guard::Call>) -> bool {
    let work = input
        .str("tool_name")
        .is_some_and(|t| hook::WORK_TOOLS.contains(&t));
    work || matches!(
        guarded,
        Some(tool_guard::Call::Changes | tool_guard::Call::Forbidden(..))
    )
}

fn record_halt(
    event: HookEvent,
    input: &HookInput,
    project: &Project,
    halt: &RecordHalt<'_>,
    guarded: Option<&tool_guard::Call>,
) -> Option<HookAnswer> {
    let (spec, rec, reason) = (halt.spec, halt.rec, halt.reason);
    let message = crate::model::record::halt_message(spec, reason);
    let (answer, decision) = match event {
        HookEvent::Stop => {
            bound::halt(project, rec, reason, &events::now_rfc3339());
            (hook::Decision::Halt(message.clone()).to_hook_json(), "halt")
        }
        HookEvent::PreToolUse if denied_when_stopped(input, guarded) => (
            Some(HookAnswer::specific(HookSpecific::PreToolUse {
                permission_decision: "deny",
                permission_decision_reason: message.clone(),
            })),
            "deny",
        ),
        HookEvent::SessionStart => (
            Some(HookAnswer::specific(HookSpecific::SessionStart {
                additional_context: message.clone(),
            })),
            "allow",
        ),
        _ => return None,
    };
    match record(project, event, input, decision, "record-mismatch", &message) {
        Ok(()) => answer,
        Err(e) => Some(hook::with_message(
            answer,
            &format!("specrun guard: this decision was not recorded: {e}"),
        )),
    }
}

fn event_name(event: HookEvent) -> &'static str {
    match event {
        HookEvent::Stop => "stop",
        HookEvent::SubagentStop => "subagent-stop",
        HookEvent::SessionStart => "session-start",
        HookEvent::PreToolUse => "pre-tool-use",
    }
}

/// A state file the guard cannot read: allow, say which file and why, never halt or block.
fn unreadable_state(
    event: HookEvent,
    input: &HookInput,
    project: &Project,
    spec: &Spec,
    error: &str,
    guarded: Option<&tool_guard::Call>,
) -> Option<HookAnswer> {
    // A garbled state halts (issue 23): the Stop ends the turn naming the file and work
    // is not delegated; the guard never allows an execution it cannot judge.
    let halt = format!(
        "specrun halted spec '{}': its state file {} cannot be used ({error}); the guard cannot judge the execution, so nothing more runs. End your turn; a person decides at a shell (`specrun doctor` names the trouble).",
        spec.name,
        spec.state_path().display()
    );
    match event {
        HookEvent::Stop => {
            let answer = hook::Decision::Halt(halt.clone()).to_hook_json();
            return match record(project, event, input, "halt", "unreadable-state", &halt) {
                Ok(()) => answer,
                Err(e) => Some(hook::with_message(
                    answer,
                    &format!("specrun guard: this decision was not recorded: {e}"),
                )),
            };
        }
        HookEvent::PreToolUse => {
            // A question in quick mode is not worth a warning per call; work is denied.
            if !denied_when_stopped(input, guarded) {
                return None;
            }
            let answer = Some(HookAnswer::specific(HookSpecific::PreToolUse {
                permission_decision: "deny",
                permission_decision_reason: halt.clone(),
            }));
            let _ = record(project, event, input, "deny", "unreadable-state", &halt);
            return answer;
        }
        _ => {}
    }
    let message = format!(
        "specrun guard: {} cannot be used ({error}); the guard enforces nothing until it is fixed (replacing it is a person's decision; {}).",
        spec.state_path().display(),
        crate::claude::roles::PERSON_DECIDES
    );
    trouble(project, event, input, "unreadable-state", message)
}

/// Allow with a systemMessage and an events.jsonl line: the answer to internal trouble.
fn trouble(
    project: &Project,
    event: HookEvent,
    input: &HookInput,
    rule: &str,
    message: String,
) -> Option<HookAnswer> {
    let answer = Some(HookAnswer::message(message.as_str()));
    match record(project, event, input, "allow", rule, &message) {
        Ok(()) => answer,
        Err(e) => Some(hook::with_message(
            answer,
            &format!("specrun guard: this decision was not recorded: {e}"),
        )),
    }
}

fn record(
    project: &Project,
    event: HookEvent,
    input: &HookInput,
    decision: &str,
    rule: &str,
    reason: &str,
) -> Result<()> {
    events::append(
        project,
        By::Session(input.session()),
        &Event::HookTrouble {
            event: event_name(event),
            decision,
            rule,
            reason,
        },
    )
}

/// Under the state lock: re-read the state (another writer may have changed it), check it
/// still applies, then run `change`, which returns the outcome to write and answer.
fn under_lock(
    event: HookEvent,
    input: &HookInput,
    active: &Active,
    change: impl FnOnce(&State) -> Result<Option<Outcome>>,
) -> Option<HookAnswer> {
    let (project, spec) = (&active.project, &active.spec);
    let path = spec.state_path();
    let lock = match store::lock(&path, HOOK_LOCK_WAIT) {
        Ok(lock) => lock,
        Err(Error::LockTimeout { waited_ms, .. }) => {
            let cause = format!(
                "{} stayed locked for {waited_ms} ms: another specrun is writing it",
                path.display()
            );
            return not_counted(event, input, active, "lock-timeout", &cause);
        }
        Err(e) => return not_counted(event, input, active, "error", &e.to_string()),
    };
    let mut state = match read_state(&path) {
        StateRead::Valid(s) => s,
        StateRead::Absent => return None,
        StateRead::Invalid(error) => {
            return unreadable_state(event, input, project, spec, &error, None)
        }
    };
    if !hook::executing(&state) || !hook::owned_by(&state, input.session()) {
        return None;
    }
    let result = change(&state).and_then(|outcome| {
        let Some(outcome) = outcome else {
            return Ok(None);
        };
        let file = path.display().to_string();
        if outcome.patch.as_object().is_some_and(|p| !p.is_empty()) {
            state.merge(&outcome.patch, &file)?;
            store::write_atomic(&path, &store::to_pretty_bytes(&state))?;
        }
        if let Some(b) = &active.bound {
            let estimated = outcome.event["estimatedOutputTokens"].as_u64().unwrap_or(0);
            bound::mirror(project, b, &state, estimated);
        }
        Ok(Some(outcome))
    });
    drop(lock);
    match result {
        Ok(Some(outcome)) => {
            let answer = outcome.to_hook_json();
            notify_outcome(project, spec, &outcome);
            let empty = Map::new();
            let fields = outcome.event.as_object().unwrap_or(&empty);
            let line = match event {
                HookEvent::SubagentStop => Event::SubagentStop(fields),
                _ => Event::Stop(fields),
            };
            match events::append(project, By::Session(input.session()), &line) {
                Ok(()) => answer,
                Err(e) => Some(hook::with_message(
                    answer,
                    &format!("specrun guard: this decision was not recorded: {e}"),
                )),
            }
        }
        Ok(None) => None,
        Err(e) => not_counted(event, input, active, "error", &e.to_string()),
    }
}

/// Internal trouble under the lock: allow with a message. A Stop that could not be counted
/// also leaves a line in the uncounted ledger, and the caps still hold on the count.
fn not_counted(
    event: HookEvent,
    input: &HookInput,
    active: &Active,
    rule: &str,
    cause: &str,
) -> Option<HookAnswer> {
    let project = &active.project;
    if event != HookEvent::Stop {
        let m = format!(
            "specrun guard: {cause}; this {} was allowed.",
            event_name(event)
        );
        return trouble(project, event, input, rule, m);
    }
    let name = &active.spec.name;
    let ledger = uncounted::record(project, name, input.session(), cause);
    let offset = uncounted::offset(&active.state);
    let mut missed = uncounted::since(project, name, offset).count;
    if ledger.is_err() {
        missed += 1;
    }
    let ledger_error = ledger.err().map(|e| e.to_string());
    let (decision, outcome_rule) = hook::decide_uncounted_stop(
        name,
        &active.state,
        missed.max(1),
        cause,
        ledger_error.as_deref(),
        chrono::Utc::now(),
    );
    let logged = events::append(
        project,
        By::Session(input.session()),
        &Event::StopUncounted {
            event: Tag("stop"),
            spec: name,
            decision: decision.name(),
            rule,
            outcome: &outcome_rule,
            uncounted: true,
            missed_in_a_row: missed.max(1),
            reason: cause,
        },
    );
    match logged {
        Ok(()) => decision.to_hook_json(),
        Err(e) => Some(hook::with_message(
            decision.to_hook_json(),
            &format!("specrun guard: this decision was not recorded: {e}"),
        )),
    }
}

/// A new halt or an accepted completion starts the user's notify command (detached).
fn notify_outcome(project: &Project, spec: &Spec, outcome: &Outcome) {
    let kind = match outcome.rule.as_str() {
        r if r.starts_with("cap:") => "halt",
        "completion-accepted" => "completed",
        _ => return,
    };
    let text = match &outcome.decision {
        hook::Decision::Allow(Some(m)) | hook::Decision::Block(m) | hook::Decision::Halt(m) => {
            m.as_str()
        }
        hook::Decision::Allow(None) => "",
    };
    let event = notify::event(
        kind,
        &spec.name,
        text,
        notify::About::Rule {
            rule: &outcome.rule,
        },
    );
    crate::cost::settings::notify(project, spec, &event);
}

fn load_tasks(spec: &Spec) -> Result<TaskList> {
    tasks_file::load(&spec.tasks_path()).map(|loaded| loaded.list)
}

fn stop(input: &HookInput, active: Active) -> Option<HookAnswer> {
    if !hook::owned_by(&active.state, input.session()) {
        return None;
    }
    // A completion claim's gates fingerprint the tree (git): judged from the state read
    // before the lock, and kept if what they read is unchanged under it.
    let claim = hook::claims_all_complete(input.str("last_assistant_message"));
    let early = (claim && active.state.halt().is_none()).then(|| {
        let gates = completion_gates(&active.project, &active.spec, &active.state);
        (gates::completion_key(&active.state), gates)
    });
    under_lock(HookEvent::Stop, input, &active, |state| {
        let (project, spec) = (&active.project, &active.spec);
        let list = load_tasks(spec)?;
        let head = git::head_fast(&project.root);
        let (read, ignored) = read_transcript(&project.root, input, state, active.bound.as_deref());
        let usage = read.usage.clone();
        let agents = hook_cost::reread_pending(state);
        let message = input.str("last_assistant_message");
        let completion =
            (hook::claims_all_complete(message) && state.halt().is_none()).then(|| match early {
                Some((key, gates)) if key == gates::completion_key(state) => gates,
                _ => completion_gates(project, spec, state),
            });
        let now = chrono::Utc::now();
        let facts = StopFacts {
            spec: spec.place(),
            tasks: &list,
            head: head.as_deref(),
            usage,
            completion,
            now,
            missed: uncounted::since(project, &spec.name, uncounted::offset(state)),
        };
        let running = hook::running_agents(input.doc.get("background_tasks"));
        let stop_input = StopInput {
            stop_hook_active: input.flag("stop_hook_active"),
            last_assistant_message: message,
            running_agents: &running,
        };
        let mut outcome = hook::decide_stop(&stop_input, state, &facts);
        let ctx = hook_cost::Ctx {
            project,
            spec,
            head: head.as_deref(),
            now,
        };
        hook_cost::after_stop(&ctx, state, &mut outcome, &read, agents, &list)?;
        if let Some(path) = ignored {
            outcome.event["transcriptIgnored"] = Value::from(path);
        }
        if read.estimated_output_tokens > 0 {
            outcome.event["estimatedOutputTokens"] = Value::from(read.estimated_output_tokens);
        }
        Ok(Some(outcome))
    })
}

/// What the transcript gained since the stored offset (nothing without a path), and the
/// path stdin gave when it was not the one the record bound to the session (ignored: a
/// `specrun hook stop` with another transcript does not move the offset).
fn read_transcript(
    root: &Path,
    input: &HookInput,
    state: &State,
    bound: Option<&bound::Bound>,
) -> (hook_cost::Read, Option<String>) {
    let given = input.str("transcript_path").filter(|p| !p.is_empty());
    let bound_path = bound.and_then(|b| {
        (b.binding.transcript_path.as_deref()).or(b.record.transcript_path.as_deref())
    });
    let Some(path) = bound_path.or(given) else {
        return (hook_cost::Read::default(), None);
    };
    let ignored = given.filter(|g| *g != path).map(str::to_string);
    if bound.is_some_and(|b| b.binding.transcript_path.is_none()) {
        // The first Stop binds the transcript when no SessionStart did.
        first_transcript(root, input, path);
    }
    let (offset, last_id) = hook::transcript_start(state, path);
    (hook_cost::read(path, offset, last_id), ignored)
}

/// Bind the session's transcript at its first Stop (SessionStart had not).
fn first_transcript(root: &Path, input: &HookInput, path: &str) {
    let Some(sid) = input.session() else { return };
    if let Some(mut b) = crate::model::record::binding(root, sid) {
        b.transcript_path = Some(path.to_string());
        let _ = crate::model::record::rebind(root, &b);
    }
}

fn subagent_stop(input: &HookInput, active: Active) -> Option<HookAnswer> {
    if !hook::owned_by(&active.state, input.session()) {
        return None;
    }
    let executor = input.str("agent_type") == Some(hook::EXECUTOR_AGENT);
    let message = input.str("last_assistant_message");
    let claim = executor
        .then(|| hook::task_complete_claim(message))
        .flatten();
    let prose = match message.filter(|_| executor) {
        Some(m) => prose_claims(&active, m, claim.as_deref()),
        None => Vec::new(),
    };
    let agent_transcript = input.str("agent_transcript_path").filter(|p| !p.is_empty());
    if claim.is_none() && prose.is_empty() && agent_transcript.is_none() {
        return None;
    }
    let facts = claim.as_ref().map(|id| {
        let mut facts = claim_facts(&active, id);
        facts.extra.extend(claims::describe(&prose));
        (id.clone(), facts)
    });
    under_lock(HookEvent::SubagentStop, input, &active, |state| {
        let now = chrono::Utc::now();
        let typed = state;
        let sub = SubagentInput {
            agent_id: input.str("agent_id"),
            stop_hook_active: input.flag("stop_hook_active"),
        };
        let mut outcome = match facts {
            Some((id, facts)) => Some(hook::decide_subagent_stop(
                active.spec.place(),
                &id,
                &facts,
                &sub,
                typed,
                now,
            )),
            None if !prose.is_empty() => {
                Some(claims::decide(&active.spec.name, &prose, &sub, typed, now))
            }
            None => None,
        };
        if let Some(path) = agent_transcript {
            let key = input.str("agent_id").unwrap_or(path);
            let read = read_agent_usage(path, key, state);
            let usage = &read.usage;
            if usage.next_offset.is_some() {
                let patch = hook::subagent_usage_patch(state, key, usage);
                let outcome = outcome.get_or_insert_with(|| usage_outcome(input, key, usage));
                crate::support::json::merge_into(&mut outcome.patch, &patch);
                outcome.event["outputTokens"] = Value::from(usage.output_tokens);
                let list = load_tasks(&active.spec)?;
                let head = git::head_fast(&active.project.root);
                let ctx = hook_cost::Ctx {
                    project: &active.project,
                    spec: &active.spec,
                    head: head.as_deref(),
                    now,
                };
                let agent = hook_cost::AgentStop {
                    key,
                    agent_type: input.str("agent_type"),
                    transcript: path,
                    last_message: input.str("last_assistant_message"),
                    stop_hook_active: input.flag("stop_hook_active"),
                };
                hook_cost::after_subagent(&ctx, state, outcome, &agent, &read, &list)?;
            }
        }
        Ok(outcome)
    })
}

/// Claims of an executor's final message (tests pass, lint clean, …) that no verify run at
/// the current code supports. The fingerprint runs only when the message claims something.
fn prose_claims(active: &Active, message: &str, task: Option<&str>) -> Vec<claims::Unsupported> {
    if claims::extract(message).is_empty() {
        return Vec::new();
    }
    let (project, spec) = (&active.project, &active.spec);
    // A claim needs a run of the program it names (`claims`), whichever slot holds it.
    let list = crate::model::tasks_file::load(&spec.tasks_path())
        .map(|l| l.list)
        .unwrap_or_default();
    let fresh: Vec<claims::FreshRun> = criteria::runs(project, spec, &active.state, &list)
        .into_iter()
        .filter(|r| r.freshness == Freshness::Fresh)
        .map(|r| claims::FreshRun {
            tests: r
                .report
                .as_ref()
                .filter(|rep| !rep.runners.is_empty())
                .map(|rep| {
                    (
                        rep.count(testlog::Outcome::Passed) as u64,
                        rep.count(testlog::Outcome::Failed) as u64,
                    )
                }),
            slot: r.slot.describe(),
            command: r.command,
        })
        .collect();
    let slot = match task {
        Some(id) => format!("--task {id}"),
        None => "--phase <check>".to_string(),
    };
    let hint = format!(
        "specrun verify run {slot} {} --command '<command>'",
        crate::support::shell::spec_flag(&spec.name)
    );
    claims::unsupported(message, &fresh, &hint)
}

/// A subagent's usage since its stored offset (its whole transcript the first time).
fn read_agent_usage(path: &str, key: &str, state: &State) -> hook_cost::Read {
    let (offset, last_id) = hook::agent_transcript_start(state, key);
    hook_cost::read(path, Some(offset), last_id)
}

/// The outcome of a subagent stop that only adds usage: allow, and log it.
fn usage_outcome(input: &HookInput, key: &str, usage: &UsageRead) -> Outcome {
    Outcome::new(
        hook::Decision::Allow(None),
        "usage",
        hook::no_patch(),
        hook::record(&UsageRecord {
            decision: "allow",
            rule: "usage",
            agent_id: key,
            agent_type: input.str("agent_type"),
            output_tokens: usage.output_tokens,
        }),
    )
}

/// A SubagentStop that only adds usage: its fields (no spec: the line names the session).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageRecord<'a> {
    decision: &'static str,
    rule: &'static str,
    agent_id: &'a str,
    agent_type: Option<&'a str>,
    output_tokens: u64,
}

/// Gathered outside the lock: the evidence fingerprint runs git, which may take a while.
fn claim_facts(active: &Active, id: &str) -> ClaimFacts {
    let (project, spec, state) = (&active.project, &active.spec, &active.state);
    let list = load_tasks(spec).ok();
    let found = list.as_ref().and_then(|l| l.find(id).ok());
    let task = found.map(|t| (t.checked, t.verify_command().map(str::to_string)));
    // The id comes from the model: until tasks.md confirms it is a task, it names no file.
    if task.is_none() {
        return ClaimFacts {
            task,
            evidence_mismatch: None,
            evidence: verify::Freshness::Missing,
            evidence_ended_at: None,
            post_code: critique::Stored::Missing,
            post_test: critique::Stored::Missing,
            extra: Vec::new(),
        };
    }
    let own = (id, found.and_then(|t| t.verify_command()));
    let mut evidence = evidence_fact(project, spec, state, Slot::Task(id.to_string()), own);
    // Fresh passing execution evidence of the task's own Verify command vouches for the
    // task, as `task complete` accepts.
    if !evidence.counts() {
        let phase = evidence_fact(project, spec, state, Slot::Phase("execution".into()), own);
        if phase.counts() {
            evidence = phase;
        }
    }
    ClaimFacts {
        task,
        evidence_mismatch: evidence.mismatch.clone(),
        evidence: evidence.freshness,
        evidence_ended_at: evidence.ended_at,
        post_code: critique::load(spec, id, "post-code"),
        post_test: critique::load(spec, id, "post-test"),
        extra: proof_unmet(active, id),
    }
}

/// An unchecked task's criteria and integrity gates, as `task complete` would refuse them,
/// so the executor's re-prompt names the finding (the removed test, the skip marker).
fn proof_unmet(active: &Active, id: &str) -> Vec<String> {
    let Ok(list) = load_tasks(&active.spec) else {
        return Vec::new();
    };
    let Some(task) = list.find(id).ok().filter(|t| !t.checked) else {
        return Vec::new();
    };
    let iso = crate::isolation::worktree::Isolation::of(&active.state);
    let tree = crate::isolation::task_tree(&active.project, &active.spec, &iso, id);
    proof::complete_unmet(
        &active.project,
        &active.spec,
        &active.state,
        &list,
        task,
        &tree,
    )
    .into_iter()
    .map(|u| format!("{}: {}", u.name, u.detail))
    .collect()
}

fn session_start(input: &HookInput, active: &Active) -> Option<HookAnswer> {
    let list = load_tasks(&active.spec).ok();
    let context = hook::session_context(
        active.spec.place(),
        &active.state,
        list.as_ref(),
        input.session(),
    )?;
    Some(HookAnswer::specific(HookSpecific::SessionStart {
        additional_context: context,
    }))
}

fn pre_tool_use(
    input: &HookInput,
    active: &Active,
    guarded: Option<&tool_guard::Call>,
) -> Option<HookAnswer> {
    let decision = hook::decide_pre_tool_use(
        &active.spec.name,
        &active.state,
        hook::ToolCall {
            name: input.str("tool_name"),
            isolation: input
                .doc
                .get("tool_input")
                .and_then(|t| t.get("isolation"))
                .and_then(Value::as_str),
            guarded,
        },
        input.session(),
        chrono::Utc::now(),
    )?;
    let answer = decision.deny.as_ref().map(|reason| {
        HookAnswer::specific(HookSpecific::PreToolUse {
            permission_decision: "deny",
            permission_decision_reason: reason.clone(),
        })
    });
    let line = decision.event(&active.spec.name);
    match events::append(&active.project, By::Session(input.session()), &line) {
        Ok(()) => answer,
        Err(e) => Some(hook::with_message(
            answer,
            &format!("specrun guard: this decision was not recorded: {e}"),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests set up and inspect files directly
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_panic_outside_a_gated_decision_allows_with_a_message() {
        for event in [
            HookEvent::Stop,
            HookEvent::PreToolUse,
            HookEvent::SubagentStop,
        ] {
            let (answer, decision, message) = panic_answer(event, false, "boom at x.rs:1");
            let answer = serde_json::to_value(answer).unwrap();
            assert_eq!(answer, json!({ "systemMessage": message }));
            assert_eq!(decision, "allow");
            assert!(message.contains("boom at x.rs:1"), "{message}");
        }
    }

    /// A panic inside a gated decision must never turn into an allow (issue 21).
    #[test]
    fn a_panic_in_a_gated_decision_blocks_or_denies_naming_it() {
        for event in [HookEvent::Stop, HookEvent::SubagentStop] {
            let (answer, decision, _) = panic_answer(event, true, "boom");
            let answer = serde_json::to_value(answer).unwrap();
            assert_eq!(answer["decision"], "block");
            assert!(answer["reason"]
                .as_str()
                .unwrap()
                .contains("internal error (panic) (boom)"));
            assert_eq!(decision, "block");
        }
        let (answer, decision, _) = panic_answer(HookEvent::PreToolUse, true, "boom");
        let answer = serde_json::to_value(answer).unwrap();
        assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(decision, "deny");
        // SessionStart gates nothing: it still allows.
        let (answer, ..) = panic_answer(HookEvent::SessionStart, true, "boom");
        let answer = serde_json::to_value(answer).unwrap();
        assert!(answer["systemMessage"].is_string());
    }
}
