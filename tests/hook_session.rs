//! `specrun hook session-start` (1–3 lines of context for the owning session) and
//! `specrun hook pre-tool-use` (AskUserQuestion denied in quick mode).

use serde_json::{json, Value};

use crate::hook_common::*;

fn start_stdin(e: &Exec, session: &str) -> String {
    json!({"session_id": session, "transcript_path": "/nonexistent/t.jsonl", "cwd": e.p.root(),
           "hook_event_name": "SessionStart", "source": "startup"})
    .to_string()
}

fn tool_stdin(e: &Exec, session: &str, tool: &str) -> String {
    json!({"session_id": session, "transcript_path": "/nonexistent/t.jsonl", "cwd": e.p.root(),
           "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
           "tool_input": {"questions": []}, "tool_use_id": "toolu_1"})
    .to_string()
}

#[test]
fn session_start_summarises_the_owned_execution() {
    let e = Exec::new(TASKS, json!({"globalIteration": 4}));
    let out = e.hook("session-start", start_stdin(&e, SESSION));
    let context =
        "specrun: spec 'demo' is executing: 1/2 tasks checked, next 1.2 Second; stop 4 of 30.\n\
Continue with /specrun:implement demo (`specrun status --spec demo` shows the details).";
    assert_eq!(
        json_of(&out),
        json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}})
    );
}

#[test]
fn session_start_names_a_halt_and_its_resume_command() {
    let e = Exec::new(
        TASKS,
        json!({"sessionId": null, "halt": {"kind": "global-cap", "reason": "global iterations 31 > maxGlobalIterations 30"}}),
    );
    let out = e.hook("session-start", start_stdin(&e, "any-session"));
    let v: Value = json_of(&out);
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert_eq!(
        context.lines().nth(1),
        Some("Halted: global iterations 31 > maxGlobalIterations 30; a person decides at a shell (`specrun status` there names the command).")
    );
}

#[test]
fn session_start_says_nothing_to_other_sessions_or_without_an_execution() {
    let e = Exec::new(TASKS, json!({}));
    assert_eq!(
        e.hook("session-start", start_stdin(&e, "another-session")),
        ""
    );
    let done = Exec::new(ALL_DONE, json!({"phase": "completed"}));
    assert_eq!(done.hook("session-start", start_stdin(&done, SESSION)), "");
    assert!(e.events().is_empty());
}

#[test]
fn pre_tool_use_denies_questions_in_quick_mode_only() {
    let e = Exec::new(TASKS, json!({"quickMode": true}));
    let out = e.hook("pre-tool-use", tool_stdin(&e, SESSION, "AskUserQuestion"));
    let reason = "specrun quick mode: do not ask the user. Decide yourself from the spec (requirements, design, tasks.md), pick the most reasonable option, note the assumption in .progress.md, and continue.";
    assert_eq!(
        json_of(&out),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}})
    );
    assert_eq!(e.hook("pre-tool-use", tool_stdin(&e, SESSION, "Bash")), "");
    assert_eq!(
        e.hook(
            "pre-tool-use",
            tool_stdin(&e, "another-session", "AskUserQuestion")
        ),
        ""
    );
    let normal = Exec::new(TASKS, json!({"quickMode": false}));
    assert_eq!(
        normal.hook(
            "pre-tool-use",
            tool_stdin(&normal, SESSION, "AskUserQuestion")
        ),
        ""
    );
}

#[test]
fn pre_tool_use_denies_a_new_delegation_once_a_budget_is_spent() {
    let e = Exec::new(
        TASKS,
        json!({"budget": {"maxOutputTokens": 500}, "usage": {"outputTokens": 499}}),
    );
    assert_eq!(e.hook("pre-tool-use", tool_stdin(&e, SESSION, "Agent")), "");
    let e = Exec::new(
        TASKS,
        json!({"budget": {"maxOutputTokens": 500}, "usage": {"outputTokens": 500}}),
    );
    let out = json_of(&e.hook("pre-tool-use", tool_stdin(&e, SESSION, "Agent")));
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("output tokens 500 >= budget.maxOutputTokens 500"),
        "{reason}"
    );
    // Another session's delegations and other tools are never touched.
    assert_eq!(
        e.hook("pre-tool-use", tool_stdin(&e, "another-session", "Agent")),
        ""
    );
    assert_eq!(e.hook("pre-tool-use", tool_stdin(&e, SESSION, "Bash")), "");
}

#[test]
fn pre_tool_use_denies_delegation_while_halted() {
    let e = Exec::new(
        TASKS,
        json!({"halt": {"kind": "stall", "reason": "5 stops in a row without progress", "at": "x"}}),
    );
    let out = json_of(&e.hook("pre-tool-use", tool_stdin(&e, SESSION, "Agent")));
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
}
