//! `specrun hook subagent-stop`: an executor's `TASK_COMPLETE <id>` is accepted only when
//! the task is checked, its evidence is fresh and both self-critique records exist; else
//! the executor is re-prompted once, and a second stop is recorded as an unverified claim.

use serde_json::{json, Value};

use crate::hook_common::*;

fn sub_stdin(e: &Exec, agent_type: &str, message: &str, active: bool) -> String {
    json!({
        "session_id": SESSION, "transcript_path": "/nonexistent/t.jsonl", "cwd": e.p.root(),
        "permission_mode": "bypassPermissions", "agent_id": "agent-7", "agent_type": agent_type,
        "hook_event_name": "SubagentStop", "stop_hook_active": active,
        "agent_transcript_path": "/nonexistent/a.jsonl", "last_assistant_message": message,
        "background_tasks": [], "session_crons": [],
    })
    .to_string()
}

/// The executor ends with `message`: the hook's stdout.
fn executor_stop(e: &Exec, message: &str, active: bool) -> String {
    e.hook(
        "subagent-stop",
        sub_stdin(e, "specrun:spec-executor", message, active),
    )
}

/// The re-prompt reason when the executor's `message` is refused.
fn refusal(e: &Exec, message: &str) -> String {
    json_of(&executor_stop(e, message, false))["reason"]
        .as_str()
        .unwrap()
        .to_string()
}

fn task_evidence(e: &Exec, id: &str) {
    let tree = e.current_tree();
    let mut state = e.state();
    let mut record = evidence("test -f src/b.rs", &tree, 0);
    record["taskId"] = json!(id);
    record["startedAt"] = json!("2026-01-01T00:10:00Z");
    state["taskEvidence"] = json!({ id: record });
    e.write_state(&state);
}

#[test]
fn a_complete_claim_with_everything_in_order_is_accepted() {
    let e = Exec::new(ALL_DONE, json!({}));
    task_evidence(&e, "1.2");
    e.critique("1.2", "post-code", "2026-01-01T00:05:00Z");
    e.critique("1.2", "post-test", "2026-01-01T00:20:00Z");
    let before = e.state_bytes();
    let out = executor_stop(&e, "All done.\nTASK_COMPLETE 1.2", false);
    assert_eq!(out, "");
    assert_eq!(e.state_bytes(), before);
    assert_eq!(e.events().last().unwrap()["rule"], "claim-accepted");
}

#[test]
fn a_claim_missing_proof_is_re_prompted_once_then_recorded() {
    let e = Exec::new(TASKS, json!({}));
    e.critique("1.2", "post-test", "2026-01-01T00:20:00Z");
    let out = executor_stop(&e, "TASK_COMPLETE: 1.2", false);
    let reason = "TASK_COMPLETE 1.2 not accepted. Missing:\n\
- task 1.2 is unchecked: once its evidence and both critique records are in, `specrun task complete 1.2 --check --spec demo`.\n\
- evidence for task 1.2 is missing: `specrun verify run --task 1.2 --spec demo` must pass on the current code.\n\
- self-critique record post-code is missing: `specrun critique record --task 1.2 --stage post-code --spec demo --file <record.json>`.\n\
Do these, then end with TASK_COMPLETE 1.2 again.";
    assert_eq!(
        json_of(&out),
        json!({"decision": "block", "reason": reason})
    );
    assert!(e.state().get("unverifiedClaims").is_none());

    let out = executor_stop(&e, "TASK_COMPLETE 1.2", true);
    assert_eq!(
        json_of(&out),
        json!({"systemMessage": "specrun: executor's TASK_COMPLETE 1.2 is unverified (3 item(s) missing); recorded in unverifiedClaims for the coordinator."})
    );
    let claims = e.state()["unverifiedClaims"].clone();
    assert_eq!(claims.as_array().unwrap().len(), 1);
    assert_eq!(claims[0]["taskId"], "1.2");
    assert_eq!(claims[0]["agentId"], "agent-7");
    assert_eq!(claims[0]["missing"].as_array().unwrap().len(), 3);
}

/// Regression: the guard counted any file with a `recordedAt` as a critique, unlike
/// `critique record`'s validation (and now `task complete`'s gate).
#[test]
fn a_hand_written_critique_stub_is_not_a_record() {
    let e = Exec::new(ALL_DONE, json!({}));
    task_evidence(&e, "1.2");
    e.critique("1.2", "post-code", "2026-01-01T00:05:00Z");
    e.p.write(
        "specs/demo/critique/1.2-post-test.json",
        &json!({"task": "1.2", "stage": "post-test", "recordedAt": "2026-01-01T00:20:00Z"})
            .to_string(),
    );
    let reason = refusal(&e, "TASK_COMPLETE 1.2");
    // Invalid, not missing: the executor must fix the record it wrote, not look for it
    // (the guard used to call it missing); the field at fault is named.
    assert!(
        reason.contains("self-critique record post-test is invalid")
            && reason.contains("`checklist` is missing")
            && !reason.contains("post-test is missing"),
        "{reason}"
    );
    // A record that is not JSON is invalid too, with the line and column of the fault.
    e.p.write(
        "specs/demo/critique/1.2-post-test.json",
        "{\n  \"task\": \"1.2\",\n  oops\n}\n",
    );
    let reason = refusal(&e, "TASK_COMPLETE 1.2");
    assert!(
        reason.contains("self-critique record post-test is invalid") && reason.contains("line 3"),
        "{reason}"
    );
    // A missing one is still called missing, and the valid post-code record is not named.
    std::fs::remove_file(e.p.root().join("specs/demo/critique/1.2-post-test.json")).unwrap();
    let reason = refusal(&e, "TASK_COMPLETE 1.2");
    assert!(
        reason.contains("self-critique record post-test is missing")
            && !reason.contains("post-code"),
        "{reason}"
    );
}

/// `task complete` accepts fresh execution evidence in place of the task's own; the
/// claim gate judges the same way.
#[test]
fn fresh_execution_evidence_vouches_for_the_claim_as_in_task_complete() {
    let e = Exec::new(ALL_DONE, json!({}));
    let tree = e.current_tree();
    let mut state = e.state();
    let mut record = evidence("cargo test", &tree, 0);
    record["startedAt"] = json!("2026-01-01T00:10:00Z");
    state["verificationBlocks"] = json!({"execution": record});
    e.write_state(&state);
    e.critique("1.2", "post-code", "2026-01-01T00:05:00Z");
    e.critique("1.2", "post-test", "2026-01-01T00:20:00Z");
    let out = executor_stop(&e, "TASK_COMPLETE 1.2", false);
    assert_eq!(out, "");
    assert_eq!(e.events().last().unwrap()["rule"], "claim-accepted");
}

#[test]
fn stale_evidence_is_named() {
    let e = Exec::new(ALL_DONE, json!({}));
    task_evidence(&e, "1.2");
    e.critique("1.2", "post-code", "2026-01-01T00:05:00Z");
    e.critique("1.2", "post-test", "2026-01-01T00:20:00Z");
    e.p.write("src/b.rs", "// changed after the run\n");
    let reason = refusal(&e, "TASK_COMPLETE 1.2");
    assert!(
        reason.contains("evidence for task 1.2 is stale"),
        "{reason}"
    );
}

#[test]
fn other_agents_and_non_claims_are_ignored() {
    let e = Exec::new(TASKS, json!({}));
    let before = e.state_bytes();
    for (agent, message) in [
        ("specrun:qa-engineer", "TASK_COMPLETE 1.2"),
        ("general-purpose", "TASK_COMPLETE 1.2"),
        ("specrun:spec-executor", "I will end with TASK_COMPLETE 1.2"),
        // A claim in a fence is checked since issue 23 (a dressed-up claim still asks).
    ] {
        assert_eq!(
            e.hook("subagent-stop", sub_stdin(&e, agent, message, false)),
            "",
            "{agent} {message:?}"
        );
    }
    // Another session's executor.
    let mut other: Value = serde_json::from_str(&sub_stdin(
        &e,
        "specrun:spec-executor",
        "TASK_COMPLETE 1.2",
        false,
    ))
    .unwrap();
    other["session_id"] = json!("another-session");
    assert_eq!(e.hook("subagent-stop", other.to_string()), "");
    assert_eq!(e.state_bytes(), before);
    assert!(e.events().is_empty());
}

/// Regression: the claimed id went into file paths before it was known to be a task, so
/// `TASK_COMPLETE ../../x` read critique records from outside the spec's critique/ (here
/// planted to make the claim look reviewed). An id that is not a task of tasks.md reads
/// nothing: every proof is missing.
#[test]
fn a_claimed_id_that_is_not_a_task_reads_no_files() {
    let e = Exec::new(ALL_DONE, json!({}));
    e.critique("1.1", "post-code", "2026-01-01T00:05:00Z");
    e.p.write(
        "specs/elsewhere/7-post-code.json",
        &json!({"recordedAt": "2026-01-01T00:05:00Z"}).to_string(),
    );
    e.p.write(
        "specs/elsewhere/7-post-test.json",
        &json!({"recordedAt": "2026-01-01T00:20:00Z"}).to_string(),
    );
    let reason = refusal(&e, "TASK_COMPLETE ../../elsewhere/7");
    assert!(
        reason.contains("task ../../elsewhere/7 does not exist"),
        "{reason}"
    );
    assert!(
        reason.contains("self-critique record post-code is missing"),
        "{reason}"
    );
    assert!(
        reason.contains("self-critique record post-test is missing"),
        "{reason}"
    );
}

/// Regression: executors' tokens were never counted, so `--max-output-tokens` saw only the
/// coordinator's share of the bill.
#[test]
fn every_subagent_stop_adds_its_transcript_usage_once() {
    let e = Exec::new(
        TASKS,
        json!({"usage": {"inputTokens": 1, "outputTokens": 10}}),
    );
    let transcript = e.p.path("agent-a7.jsonl");
    let mut lines = assistant_line("m1", 100, 40);
    lines.push_str(&assistant_line("m1", 100, 40)); // one message, two content lines
    lines.push_str(&assistant_line("m2", 5, 60));
    std::fs::write(&transcript, &lines).unwrap();
    let stdin = |message: &str| {
        json!({"session_id": SESSION, "transcript_path": "/nonexistent/main.jsonl", "cwd": e.p.root(),
               "hook_event_name": "SubagentStop", "stop_hook_active": false,
               "agent_id": "a7", "agent_type": "specrun:task-planner",
               "agent_transcript_path": transcript, "last_assistant_message": message})
        .to_string()
    };
    assert_eq!(e.hook("subagent-stop", stdin("done")), "");
    let state = e.state();
    assert_eq!(state["usage"]["outputTokens"], 110);
    assert_eq!(state["usage"]["inputTokens"], 106);
    assert_eq!(state["usage"]["agents"]["a7"]["outputTokens"], 100);
    // A second stop of the same agent reads only what was added since.
    std::fs::write(
        &transcript,
        format!("{lines}{}", assistant_line("m3", 0, 7)),
    )
    .unwrap();
    e.hook("subagent-stop", stdin("done again"));
    assert_eq!(e.state()["usage"]["outputTokens"], 117);
    let last = e.events().pop().unwrap();
    assert_eq!(
        (&last["rule"], &last["outputTokens"]),
        (&json!("usage"), &json!(7))
    );
    // Another session's subagents are not counted.
    let other = stdin("x").replace(SESSION, "another-session");
    e.hook("subagent-stop", other);
    assert_eq!(e.state()["usage"]["outputTokens"], 117);
}
