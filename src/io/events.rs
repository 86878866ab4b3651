//! `.specrun/events.jsonl`: the append-only record of guard decisions, task transitions
//! and last-mile results. One JSON object per line, each with `at` first
//! (docs/design.md#events). Every line is an `Event`, written by `append`.

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::Result;
use crate::io::project::Project;
use crate::io::store;

pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Who a line is about, written between `at` and the event's tag: a spec's verb names
/// its spec there, a hook its session (null when Claude Code sent none); verify and
/// notify lines name neither (verify names its spec after the tag, as it always did).
#[derive(Debug, Clone, Copy)]
pub(crate) enum By<'a> {
    Spec(&'a str),
    Session(Option<&'a str>),
    Nobody,
}

/// One events.jsonl line after `at`: `event` is the tag, the fields follow in the order
/// written here (serde_json keeps it), so the file reads as it did before the type.
#[derive(Debug, Serialize)]
#[serde(
    tag = "event",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Event<'a> {
    // The hooks. A counted Stop and a judged SubagentStop carry the decision's record as
    // built by the decision core and its cost part (`hooks::Outcome::event`).
    Stop(&'a Map<String, Value>),
    SubagentStop(&'a Map<String, Value>),
    PreToolUse {
        spec: &'a str,
        tool: Option<&'a str>,
        decision: &'static str,
        rule: &'a str,
        reason: Option<&'a str>,
    },
    // The task verbs.
    TaskStart {
        task: &'a str,
        changed: bool,
        start_commit: Option<&'a str>,
        worktree: Option<&'a Path>,
        branch: Option<&'a str>,
    },
    TaskComplete {
        task: &'a str,
        changed: bool,
        end_commit: Option<&'a str>,
        branch: Option<&'a str>,
    },
    TaskFail {
        task: &'a str,
        changed: bool,
        reason: &'a str,
        halted: bool,
        fix_task: Option<&'a str>,
        branch: Option<&'a str>,
    },
    TaskJustify {
        task: &'a str,
        finding: &'a str,
        kind: &'a str,
        file: &'a str,
        line: usize,
        reason: &'a str,
    },
    TaskRollback(Rollback<'a>),
    // The other verbs.
    Verify {
        spec: &'a str,
        slot: &'a str,
        exit_code: i32,
        timed_out: bool,
        tree: &'a str,
        own_verify: Option<bool>,
        accepted_other: Option<&'a str>,
    },
    Resume {
        cleared: Option<&'a str>,
        session_id: Option<&'a str>,
        raises: Raises,
    },
    Cancel {
        changed: bool,
        saved_refs: &'a [String],
    },
    Finish {
        completed: bool,
    },
    Learn {
        task: Option<&'a str>,
        added: bool,
    },
    FollowupAdd {
        id: &'a str,
        task: Option<&'a str>,
    },
    FollowupResolve {
        id: &'a str,
        changed: bool,
    },
    AcMap {
        criterion: &'a str,
        tests: &'a [String],
    },
    AcConfirm {
        criterion: &'a str,
        manual: bool,
        reason: &'a str,
    },
    /// `ac propose`: a manual criterion the model proposed; it counts once a person confirms.
    AcPropose {
        criterion: &'a str,
        reason: &'a str,
    },
    /// `plan accept`: a person made tasks.md as it stands the plan; what differed.
    PlanAccept {
        digest: &'a str,
        tasks: usize,
        changes: &'a [String],
    },
    /// A price table or notify command changed during the run, ignored: the one kept at
    /// `state init` stays in force (`cost::settings`).
    SettingsIgnored {
        ignored: &'a str,
    },
    GroupMerge(GroupMerge<'a>),
    GroupVerify {
        slot: &'a str,
        command: &'a str,
        exit_code: i32,
        tree: &'a str,
        passed: bool,
        group_status: &'a str,
    },
    /// `headless run`: one `claude -p` attempt and how it ended; `result` is the `result`
    /// event's subtype, cost, turns and permission denials when one arrived (issue 29).
    Headless {
        attempt: usize,
        session_id: &'a str,
        resumed: bool,
        ending: &'static str,
        detail: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'a Value>,
    },
    /// `headless merge`: a member's commit `merged`, found `already-merged` (a re-run), or
    /// stopped at a `conflict` (the files named; nothing of it merged).
    HeadlessMerge {
        task: &'a str,
        commit: &'a str,
        outcome: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        merge_commit: Option<&'a str>,
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        files: &'a [String],
    },
    /// `headless merge`: the plan's final check on the merged tree.
    HeadlessCheck {
        command: &'a str,
        exit_code: i32,
        tree: &'a str,
        passed: bool,
    },
    Notify(Notify<'a>),
    /// A verb that refused, its tag its own (`task-start`, `resume`, `finish`,
    /// `followup-add`, …): the task it was about, and what was unmet.
    #[serde(untagged)]
    Refused {
        event: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        task: Option<&'a str>,
        refused: Refusal<'a>,
    },
    /// A hook's internal trouble (`event` is the hook's name; no spec could be read, or
    /// the answer was given before one was).
    #[serde(untagged)]
    HookTrouble {
        event: &'static str,
        decision: &'a str,
        rule: &'a str,
        reason: &'a str,
    },
    /// A Stop that could not be counted (`rule` says why, `outcome` the rule that decided).
    #[serde(untagged)]
    StopUncounted {
        event: Tag<'a>,
        spec: &'a str,
        decision: &'static str,
        rule: &'a str,
        outcome: &'a str,
        uncounted: bool,
        #[serde(rename = "missedInARow")]
        missed_in_a_row: u64,
        reason: &'a str,
    },
    /// `last-mile --record`: tagged `type`, not `event` (the format `report` and people
    /// read since it was added): the decision's own fields follow.
    #[serde(untagged)]
    LastMile {
        #[serde(rename = "type")]
        kind: Tag<'a>,
        #[serde(flatten)]
        decision: &'a Map<String, Value>,
    },
}

/// A fixed tag written as a field (for the untagged variants).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(transparent)]
pub(crate) struct Tag<'a>(pub &'a str);

/// What a refusal lists: the unmet precondition names, or one sentence.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Refusal<'a> {
    Unmet(Vec<&'a str>),
    Why(&'a str),
}

/// `resume`'s raised caps.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Raises {
    pub global: Option<u64>,
    pub task: Option<u64>,
    pub tokens: Option<u64>,
    pub minutes: Option<u64>,
    pub usd: Option<f64>,
}

/// `task rollback`: of a task in the main worktree (`to` its start commit), or of an
/// isolated member (its branch, and the worktree removed).
#[derive(Debug, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub(crate) enum Rollback<'a> {
    InPlace {
        task: &'a str,
        saved_ref: &'a str,
        saved_commit: &'a str,
        from: &'a str,
        to: &'a str,
        halted: bool,
    },
    Member {
        task: &'a str,
        saved_ref: &'a str,
        saved_commit: &'a str,
        from: Option<&'a str>,
        branch: &'a str,
        worktree_removed: &'a Path,
        halted: bool,
    },
}

/// `group merge`: a member merged, or kept back (a conflict, files outside its list).
#[derive(Debug, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub(crate) enum GroupMerge<'a> {
    Merged {
        task: &'a str,
        branch: &'a str,
        merge_commit: Option<&'a str>,
    },
    Kept {
        task: &'a str,
        branch: &'a str,
        kept: bool,
        status: &'a str,
        files: &'a [String],
    },
}

/// How a notify command ended, or why it could not start.
#[derive(Debug, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub(crate) enum Notify<'a> {
    NotStarted {
        ok: bool,
        error: &'a str,
    },
    Exited {
        ok: bool,
        command: &'a str,
        duration_ms: u64,
        exit_code: Option<i32>,
        timed_out: bool,
    },
    Killed {
        ok: bool,
        command: &'a str,
        duration_ms: u64,
        timed_out: bool,
    },
    Failed {
        ok: bool,
        command: &'a str,
        duration_ms: u64,
        error: &'a str,
    },
}

#[derive(Serialize)]
struct Line<'a> {
    at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<&'a str>,
    #[serde(flatten)]
    event: &'a Event<'a>,
}

/// The line `event` by `by` is written as, `at` now.
pub(crate) fn line(by: By<'_>, event: &Event<'_>, at: String) -> String {
    let (session, spec) = match by {
        By::Spec(spec) => (None, Some(spec)),
        By::Session(session) => (Some(session), None),
        By::Nobody => (None, None),
    };
    let line = Line {
        at,
        session,
        spec,
        event,
    };
    serde_json::to_string(&line).expect("an event serializes")
}

/// Append `event` by `by`, with `at` first.
pub(crate) fn append(project: &Project, by: By<'_>, event: &Event<'_>) -> Result<()> {
    store::append_line(&project.events_path(), &line(by, event, now_rfc3339()))
}

/// This spec's lines of events.jsonl as written (a torn or foreign line is skipped).
pub(crate) fn spec_lines(project: &Project, spec: &str) -> Result<Vec<String>> {
    let Some(bytes) = store::read_optional(&project.events_path())? else {
        return Ok(Vec::new());
    };
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|e| e.get("spec").and_then(Value::as_str) == Some(spec))
        })
        .map(str::to_string)
        .collect())
}

/// Append the lines of another checkout's log (a CI job's) that this one lacks, in their
/// order; a line already here is never written twice. Returns how many were appended.
pub(crate) fn adopt(project: &Project, spec: &str, lines: &[String]) -> Result<usize> {
    let have: std::collections::HashSet<String> = spec_lines(project, spec)?.into_iter().collect();
    let mut added = 0;
    for l in lines.iter().filter(|l| !have.contains(*l)) {
        store::append_line(&project.events_path(), l)?;
        added += 1;
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const AT: &str = "2026-01-01T00:00:00.000Z";

    fn at() -> String {
        AT.to_string()
    }

    #[test]
    fn a_verbs_line_has_at_then_spec_then_its_tag_then_its_fields_in_order() {
        let e = Event::TaskStart {
            task: "1.1",
            changed: true,
            start_commit: Some("abc"),
            worktree: None,
            branch: None,
        };
        assert_eq!(
            line(By::Spec("demo"), &e, at()),
            r#"{"at":"2026-01-01T00:00:00.000Z","spec":"demo","event":"task-start","task":"1.1","changed":true,"startCommit":"abc","worktree":null,"branch":null}"#
        );
    }

    #[test]
    fn a_refusal_is_tagged_with_its_verb() {
        let e = Event::Refused {
            event: "task-complete",
            task: Some("1.1"),
            refused: Refusal::Unmet(vec!["verify"]),
        };
        assert_eq!(
            line(By::Spec("demo"), &e, at()),
            r#"{"at":"2026-01-01T00:00:00.000Z","spec":"demo","event":"task-complete","task":"1.1","refused":["verify"]}"#
        );
        let e = Event::Refused {
            event: "followup-add",
            task: None,
            refused: Refusal::Why("too long"),
        };
        assert_eq!(
            line(By::Spec("demo"), &e, at()),
            r#"{"at":"2026-01-01T00:00:00.000Z","spec":"demo","event":"followup-add","refused":"too long"}"#
        );
    }

    #[test]
    fn a_hooks_line_has_its_session_before_the_tag_null_when_none_was_sent() {
        let fields = json!({"spec": "demo", "decision": "allow", "rule": "allow"});
        let e = Event::Stop(fields.as_object().unwrap());
        assert_eq!(
            line(By::Session(Some("s1")), &e, at()),
            r#"{"at":"2026-01-01T00:00:00.000Z","session":"s1","event":"stop","spec":"demo","decision":"allow","rule":"allow"}"#
        );
        let e = Event::HookTrouble {
            event: "pre-tool-use",
            decision: "allow",
            rule: "panic",
            reason: "r",
        };
        assert_eq!(
            line(By::Session(None), &e, at()),
            r#"{"at":"2026-01-01T00:00:00.000Z","session":null,"event":"pre-tool-use","decision":"allow","rule":"panic","reason":"r"}"#
        );
    }

    #[test]
    fn a_last_mile_record_is_tagged_type_as_readers_expect() {
        let decision = json!({"verdict": "ship", "reasons": []});
        let e = Event::LastMile {
            kind: Tag("last-mile"),
            decision: decision.as_object().unwrap(),
        };
        assert_eq!(
            line(By::Nobody, &e, at()),
            r#"{"at":"2026-01-01T00:00:00.000Z","type":"last-mile","verdict":"ship","reasons":[]}"#
        );
    }
}
