//! The panics of issue 21, each as the state value that caused it, and what a hook answers
//! when its decision panics: a gated hook blocks or denies, never allows.

use serde_json::{json, Value};

use crate::hook_common::*;

const TICKED: &str = "## Phase 1: Core\n- [x] 1.1 First\n  - **Verify**: `true`\n- [x] 1.2 Second\n  - **Do**: write the second part\n  - **Files**: src/b.rs\n  - **Verify**: `test -f src/b.rs`\n";

/// Task 1.2 checked, with passing fresh evidence that took `duration_ms` and both
/// critique records, its attempt running.
fn claimed(duration_ms: Value) -> Exec {
    let e = Exec::new(TICKED, json!({}));
    e.p.write("src/b.rs", "b\n");
    e.p.commit_all("b");
    let mut state = e.state();
    let mut record = evidence("test -f src/b.rs", &e.current_tree(), 0);
    record["taskId"] = json!("1.2");
    record["startedAt"] = json!("2026-01-01T00:10:00Z");
    record["durationMs"] = duration_ms;
    state["taskEvidence"] = json!({ "1.2": record });
    state["attempts"] =
        json!({"1.2": [{"n": 1, "status": "running", "startedAt": "2026-01-01T00:00:00Z"}]});
    e.write_state(&state);
    e.critique("1.2", "post-code", "2026-01-01T00:05:00Z");
    e.critique("1.2", "post-test", "2026-01-01T00:20:00Z");
    e
}

fn run(e: &Exec, args: &[&str]) -> (Option<i32>, String) {
    let out = e.p.specrun().args(args).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

fn sub_stdin(e: &Exec, message: &str) -> String {
    json!({
        "session_id": SESSION, "cwd": e.p.root(), "agent_id": "agent-7",
        "agent_type": "specrun:spec-executor", "hook_event_name": "SubagentStop",
        "stop_hook_active": false, "last_assistant_message": message,
    })
    .to_string()
}

/// Regression: `durationMs` 9e15 (accepted by `state merge`) panicked in `verify::ended_at`
/// in `task complete`, `critique status` and SubagentStop, where the panic let the claim
/// through. The end of that run is unknown: the verbs say so naming the field, and the
/// claim is refused.
#[test]
fn an_evidence_duration_past_the_calendar_is_named_not_a_panic() {
    let e = claimed(json!(9_000_000_000_000_000u64));
    let (code, text) = run(&e, &["task", "complete", "1.2"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("taskEvidence.1.2.durationMs"), "{text}");
    let (code, text) = run(&e, &["critique", "status", "--task", "1.2"]);
    assert_ne!(code, Some(101), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    let answer = json_of(&e.hook("subagent-stop", sub_stdin(&e, "TASK_COMPLETE 1.2")));
    assert_eq!(answer["decision"], "block", "{answer}");
    let reason = answer["reason"].as_str().unwrap();
    assert!(reason.contains("taskEvidence.1.2.durationMs"), "{reason}");
}

/// The same evidence with a sound duration is accepted: the refusal above is the duration's.
#[test]
fn the_same_claim_with_a_sound_duration_is_accepted() {
    let e = claimed(json!(5));
    assert_eq!(
        e.hook("subagent-stop", sub_stdin(&e, "TASK_COMPLETE 1.2")),
        ""
    );
}

/// Regression: a commit id with a multi-byte character across its 10th byte
/// (`attempts.<id>[].endCommit`) panicked in `protocol::short_commit`.
#[test]
fn a_multi_byte_commit_id_is_shown_not_a_panic() {
    let e = Exec::new(TICKED, json!({}));
    let mut state = e.state();
    state["attempts"] = json!({"1.2": [{"n": 1, "status": "done", "startedAt": "2026-01-01T00:00:00Z",
        "endedAt": "2026-01-01T00:01:00Z", "endCommit": "aaaaaaaaaé"}]});
    e.write_state(&state);
    let (code, text) = run(&e, &["task", "complete", "1.2"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        e.p.read("specs/demo/.progress.md").contains("aaaaaaaaaé"),
        "{text}"
    );
}

fn panicking_hook(e: &Exec, event: &str, stdin: String) -> (Option<i32>, Value) {
    let out =
        e.p.specrun()
            .args(["hook", event])
            .env("SPECRUN_FAULT", "panic:hook:decide")
            .write_stdin(stdin)
            .output()
            .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), json_of(&stdout))
}

/// A panic inside a gated decision answers with a block (Stop, SubagentStop) or a deny
/// (PreToolUse) naming the internal error, exit 0 with the JSON answer (Claude Code's
/// contract: exit 0 and `decision: block` re-prompts; any exit but 0 or 2 would be a
/// non-blocking error, i.e. an allow). SessionStart gates nothing and still allows.
#[test]
fn a_panic_in_a_gated_hook_blocks_naming_the_error() {
    let e = Exec::new(TASKS, json!({}));
    let stop = stop_stdin(&e.p, "done", false, None);
    let (code, answer) = panicking_hook(&e, "stop", stop);
    assert_eq!(code, Some(0));
    assert_eq!(answer["decision"], "block", "{answer}");
    let reason = answer["reason"].as_str().unwrap();
    assert!(reason.contains("internal error (panic)"), "{reason}");
    assert!(
        reason.contains("SPECRUN_FAULT=panic:hook:decide"),
        "{reason}"
    );

    let (code, answer) = panicking_hook(&e, "subagent-stop", sub_stdin(&e, "TASK_COMPLETE 1.2"));
    assert_eq!(
        (code, &answer["decision"]),
        (Some(0), &json!("block")),
        "{answer}"
    );

    let tool = json!({"session_id": SESSION, "cwd": e.p.root(), "hook_event_name": "PreToolUse",
        "tool_name": "Agent", "tool_input": {}})
    .to_string();
    let (code, answer) = panicking_hook(&e, "pre-tool-use", tool);
    assert_eq!(code, Some(0));
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{answer}");

    let start =
        json!({"session_id": SESSION, "cwd": e.p.root(), "hook_event_name": "SessionStart"})
            .to_string();
    let (code, answer) = panicking_hook(&e, "session-start", start);
    assert_eq!(code, Some(0));
    assert!(
        answer["systemMessage"]
            .as_str()
            .unwrap()
            .contains("allowed"),
        "{answer}"
    );
    let rules: Vec<Value> = e.events().iter().map(|l| l["decision"].clone()).collect();
    assert_eq!(
        rules,
        [
            json!("block"),
            json!("block"),
            json!("deny"),
            json!("allow")
        ]
    );
}

/// The hooks' panic answer needs unwinding: `panic = "abort"` in a profile would turn
/// every panic back into a crash (exit 134), which Claude Code takes as an allow.
#[test]
fn no_profile_aborts_on_panic() {
    let manifest = include_str!("../Cargo.toml");
    let aborts = manifest
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").replace(' ', ""))
        .any(|l| l.starts_with("panic=") && l.contains("abort"));
    assert!(!aborts, "Cargo.toml sets panic = \"abort\" in a profile");
}
