//! `specrun hook stop`: one test per rule of the Stop order
//! (docs/design.md#what-specrun-does), each asserting the exact stdout and exit 0, plus the
//! 40-stops cap test.

use serde_json::{json, Value};

use crate::hook_common::*;

fn head(e: &Exec) -> String {
    e.p.git_cmd(&["rev-parse", "HEAD"]).trim().to_string()
}

#[test]
fn row1_fast_path_prints_nothing_and_writes_nothing() {
    // No spec at all.
    let p = TempProject::git();
    assert_eq!(run_hook(&p, "stop", stop_stdin(&p, "hi", false, None)), "");
    assert!(!p.path(".specrun").exists());
    // A spec without state.
    p.spec("demo", TASKS);
    assert_eq!(run_hook(&p, "stop", stop_stdin(&p, "hi", false, None)), "");
    // A state that is not executing.
    for phase in ["planning", "completed", "cancelled"] {
        let e = Exec::new(TASKS, json!({"phase": phase}));
        let before = e.state_bytes();
        assert_eq!(
            e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None)),
            ""
        );
        assert_eq!(e.state_bytes(), before, "{phase}");
        assert!(
            !e.p.path(".specrun").exists()
                && !e.p.path("specs/demo/.specrun-state.json.lock").exists()
        );
    }
    // Unparseable stdin on an executing spec.
    let e = Exec::new(TASKS, json!({}));
    let before = e.state_bytes();
    assert_eq!(e.hook("stop", "{not json"), "");
    assert_eq!(e.state_bytes(), before);
    assert!(!e.p.path(".specrun").exists());
}

#[test]
fn row2_another_sessions_execution_is_left_alone() {
    let e = Exec::new(
        TASKS,
        json!({"sessionId": "someone-else", "executionDriver": "stop-hook"}),
    );
    let before = e.state_bytes();
    assert_eq!(
        e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None)),
        ""
    );
    assert_eq!(e.state_bytes(), before);
    assert!(e.events().is_empty());
    // An execution bound to no session is not driven either.
    let e = Exec::new(TASKS, json!({"sessionId": null, "globalIteration": 99}));
    let before = e.state_bytes();
    assert_eq!(e.hook("stop", stop_stdin(&e.p, "x", false, None)), "");
    assert_eq!(e.state_bytes(), before);
}

#[test]
fn row3_counts_stops_usage_from_the_offset_and_the_fingerprint() {
    let e = Exec::new(TASKS, json!({}));
    let transcript = e.p.write("t.jsonl", &assistant_line("old", 1000, 1000));
    let tpath = transcript.to_str().unwrap();
    // First stop: no offset yet, so the history before it is not counted.
    assert_eq!(
        e.hook("stop", stop_stdin(&e.p, "working", false, Some(tpath))),
        ""
    );
    let s = e.state();
    assert_eq!(s["globalIteration"], 1);
    assert_eq!(s["usage"]["outputTokens"], 0);
    let len = std::fs::metadata(&transcript).unwrap().len();
    assert_eq!(s["usage"]["transcriptOffset"], len);
    let fp = format!("1/2:1:{}", head(&e));
    assert_eq!(s["guard"]["lastFingerprint"], fp.as_str());
    assert_eq!(s["guard"]["stallStops"], 0);
    // Second stop: two lines of one message and a second message are added.
    let more = [
        assistant_line("m1", 10, 20),
        assistant_line("m1", 10, 20),
        assistant_line("m2", 1, 2),
    ]
    .concat();
    std::fs::write(
        &transcript,
        format!("{}{more}", assistant_line("old", 1000, 1000)),
    )
    .unwrap();
    assert_eq!(
        e.hook("stop", stop_stdin(&e.p, "working", false, Some(tpath))),
        ""
    );
    let s = e.state();
    assert_eq!(s["globalIteration"], 2);
    assert_eq!(
        (
            s["usage"]["inputTokens"].clone(),
            s["usage"]["outputTokens"].clone()
        ),
        (json!(11), json!(22))
    );
    assert_eq!(
        s["guard"]["stallStops"], 1,
        "no progress since the first stop"
    );
    // Progress (a commit moves HEAD) resets the stall count.
    e.p.write("src/b.rs", "// b\n");
    e.p.commit_all("b");
    assert_eq!(
        e.hook("stop", stop_stdin(&e.p, "working", false, Some(tpath))),
        ""
    );
    assert_eq!(e.state()["guard"]["stallStops"], 0);
    let events = e.events();
    assert_eq!(events.len(), 3);
    assert_eq!(events[2]["event"], "stop");
    assert_eq!(events[2]["decision"], "allow");
    assert_eq!(events[2]["globalIteration"], 3);
    assert_eq!(events[2]["session"], SESSION);
}

/// The halt as the model reads it: the reason and that a person decides (never the command).
fn halted(what: &str) -> String {
    format!("specrun: spec 'demo' is halted ({what}): a person decides at a shell (`specrun status` there names the command); then /specrun:implement demo continues it.")
}

/// The command `status --json` gives a person at a shell after a halt.
fn shell_resume(e: &Exec) -> String {
    let out =
        e.p.specrun()
            .args(["status", "--json", "--spec", "demo"])
            .env_remove("CLAUDECODE")
            .output()
            .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["resumeCommand"].as_str().unwrap_or_default().to_string()
}

fn halt_json(s: &str) -> Value {
    json!({"continue": false, "stopReason": s, "systemMessage": s})
}

#[test]
fn row4_global_iterations_cap_halts() {
    let e = Exec::new(TASKS, json!({"globalIteration": 30}));
    let out = e.hook("stop", stop_stdin(&e.p, "x", false, None));
    let s = &halted("global iterations 31 > maxGlobalIterations 30");
    assert_eq!(json_of(&out), halt_json(s));
    assert_eq!(
        shell_resume(&e),
        "specrun resume --spec demo --raise-global 60"
    );
    let state = e.state();
    assert_eq!(state["halt"]["kind"], "global-cap");
    assert_eq!(
        state["halt"]["reason"],
        "global iterations 31 > maxGlobalIterations 30"
    );
    let ev = e.events();
    assert_eq!(ev.last().unwrap()["decision"], "halt");
    assert_eq!(ev.last().unwrap()["rule"], "cap:global-cap");
}

#[test]
fn row4_task_iterations_cap_halts() {
    let e = Exec::new(TASKS, json!({"taskIteration": 5}));
    let out = e.hook("stop", stop_stdin(&e.p, "x", false, None));
    let s = &halted("task iterations 5 >= maxTaskIterations 5");
    assert_eq!(json_of(&out), halt_json(s));
    assert_eq!(
        shell_resume(&e),
        "specrun resume --spec demo --raise-task 10"
    );
}

#[test]
fn row4_output_tokens_cap_halts_on_transcript_usage() {
    let e = Exec::new(
        TASKS,
        json!({"budget": {"maxOutputTokens": 100}, "usage": {"outputTokens": 60, "transcriptOffset": 0}}),
    );
    let t = e.p.write("t.jsonl", &assistant_line("m1", 5, 40));
    let out = e.hook(
        "stop",
        stop_stdin(&e.p, "x", false, Some(t.to_str().unwrap())),
    );
    let s = &halted("output tokens 100 >= budget.maxOutputTokens 100");
    assert_eq!(json_of(&out), halt_json(s));
    assert_eq!(
        shell_resume(&e),
        "specrun resume --spec demo --raise-tokens 200"
    );
    assert_eq!(e.state()["usage"]["outputTokens"], 100);
}

#[test]
fn row4_minutes_cap_halts() {
    let started =
        chrono::Utc::now() - chrono::Duration::minutes(120) + chrono::Duration::seconds(30);
    let e = Exec::new(
        TASKS,
        json!({"budget": {"maxMinutes": 60}, "startedAt": started.to_rfc3339()}),
    );
    let out = e.hook("stop", stop_stdin(&e.p, "x", false, None));
    let s = &halted("119 minutes since startedAt >= budget.maxMinutes 60");
    assert_eq!(json_of(&out), halt_json(s));
    assert_eq!(
        shell_resume(&e),
        "specrun resume --spec demo --raise-minutes 179"
    );
}

#[test]
fn row4_stall_cap_halts_after_stops_without_progress() {
    let e = Exec::new(TASKS, json!({}));
    for _ in 0..5 {
        assert_eq!(e.hook("stop", stop_stdin(&e.p, "x", false, None)), "");
    }
    // Stops 2..6 saw the same fingerprint: the 6th is the 5th in a row without progress.
    let out = e.hook("stop", stop_stdin(&e.p, "x", false, None));
    let s = &halted("5 stops in a row without progress (checked tasks, taskIndex and HEAD unchanged) >= budget.maxStallStops 5");
    assert_eq!(json_of(&out), halt_json(s));
    assert_eq!(shell_resume(&e), "specrun resume --spec demo");
    assert_eq!(e.state()["halt"]["kind"], "stall");
}

#[test]
fn row4_a_halted_execution_halts_again_until_resumed() {
    let e = Exec::new(
        TASKS,
        json!({"halt": {"kind": "stall", "reason": "stuck", "at": "2026-01-01T00:00:00Z"}}),
    );
    let s = &halted("stuck");
    for n in 1..=2 {
        let out = e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None));
        assert_eq!(json_of(&out), halt_json(s));
        assert_eq!(e.state()["globalIteration"], n);
        assert_eq!(e.state()["halt"]["at"], "2026-01-01T00:00:00Z");
    }
}

#[test]
fn row5_completion_accepted_when_every_gate_holds() {
    let e = Exec::new(ALL_DONE, json!({"taskIndex": 2}));
    e.fresh_execution_evidence("true");
    let out = e.hook(
        "stop",
        stop_stdin(
            &e.p,
            "Everything passes.\n\nALL_TASKS_COMPLETE\n",
            false,
            None,
        ),
    );
    assert_eq!(
        json_of(&out),
        json!({"systemMessage": "specrun: spec 'demo' complete: 2/2 tasks checked, execution evidence fresh, no blocking follow-up."})
    );
    let s = e.state();
    assert_eq!(s["phase"], "completed");
    assert_eq!(s["completed"], true);
    assert!(s["completedAt"].is_string());
    assert_eq!(e.events().last().unwrap()["rule"], "completion-accepted");
    // Completed: the next stop is the fast path.
    assert_eq!(
        e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None)),
        ""
    );
}

#[test]
fn row5_completion_refused_lists_each_unmet_gate_and_its_command() {
    let e = Exec::new(TASKS, json!({}));
    e.fresh_execution_evidence("test -f src/b.rs");
    // The code changes after the evidence ran: stale.
    e.p.write("src/new.rs", "fn x() {}\n");
    e.p.write(
        "specs/demo/followups.json",
        &json!({"version": 1, "items": [
            {"id": "F1", "category": "VERIFY", "priority": "high", "title": "re-run the load test", "task": null, "files": [], "status": "open", "createdAt": "x"},
            {"id": "F2", "category": "VERIFY", "priority": "low", "title": "nice to have", "task": null, "files": [], "status": "open", "createdAt": "x"},
            {"id": "F3", "category": "VERIFY", "priority": "high", "title": "done", "task": null, "files": [], "status": "resolved", "createdAt": "x"}
        ]})
        .to_string(),
    );
    let out = e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None));
    let reason = "ALL_TASKS_COMPLETE refused for spec 'demo'. Unmet:\n\
- 1 of 2 tasks unchecked (1.2): delegate each to specrun:spec-executor (specrun:qa-engineer for [VERIFY]), which ticks it with `specrun task complete 1.2 --check --spec demo` (then the next).\n\
- execution evidence is stale (the code changed since it ran): run `specrun verify run --final --spec demo` (the plan's final check `test -f src/b.rs`) and make it pass.\n\
- follow-up F1 (VERIFY, high) is open: re-run the load test. It blocks the completion until a person resolves it: a person runs `specrun followup resolve F1 --note \"<what was done>\" --spec demo`.\n\
When every item is done, end with ALL_TASKS_COMPLETE again.";
    assert_eq!(
        json_of(&out),
        json!({"decision": "block", "reason": reason})
    );
    assert_eq!(e.state()["phase"], "execution");
    // Blocked once; with stop_hook_active and nothing progressed, allow instead of looping.
    let out = e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", true, None));
    assert_eq!(
        json_of(&out),
        json!({"systemMessage": "specrun: ALL_TASKS_COMPLETE not accepted (3 gate(s) unmet); not re-prompting: nothing progressed since the last block (stall 1/5)."})
    );
    assert_eq!(e.state()["phase"], "execution");
}

#[test]
fn row5_missing_evidence_is_named() {
    let e = Exec::new(ALL_DONE, json!({"taskIndex": 2}));
    let out = e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None));
    let reason = "ALL_TASKS_COMPLETE refused for spec 'demo'. Unmet:\n\
- execution evidence is missing: run `specrun verify run --final --spec demo` (the plan's final check `true`) and make it pass.\n\
When every item is done, end with ALL_TASKS_COMPLETE again.";
    assert_eq!(
        json_of(&out),
        json!({"decision": "block", "reason": reason})
    );
}

#[test]
fn row6_stop_hook_driver_re_prompts_with_the_next_task() {
    let e = Exec::new(TASKS, json!({"executionDriver": "stop-hook"}));
    let out = e.hook("stop", stop_stdin(&e.p, "Done with 1.1.", false, None));
    let reason = "Spec 'demo': 1/2 tasks done. Next task 1.2: Second\n\
Do: write the second part\n\
Files: src/b.rs\n\
Verify: `test -f src/b.rs`\n\
Delegate it to specrun:spec-executor now. End with ALL_TASKS_COMPLETE only when every task is checked and the plan's final check, `specrun verify run --final --spec demo`, passed.";
    assert_eq!(
        json_of(&out),
        json!({"decision": "block", "reason": reason})
    );
    // No progress, stop_hook_active: allowed with a note.
    let out = e.hook("stop", stop_stdin(&e.p, "Still thinking.", true, None));
    assert_eq!(
        json_of(&out),
        json!({"systemMessage": "specrun: task 1.2 is still open; not re-prompting: nothing progressed since the last block (stall 1/5)."})
    );
    // Progress (a commit) while stop_hook_active: re-prompted again.
    e.p.write("src/b.rs", "// b\n");
    e.p.commit_all("b");
    let out = e.hook("stop", stop_stdin(&e.p, "Progress.", true, None));
    assert_eq!(json_of(&out)["decision"], "block");
    assert_eq!(e.state()["guard"]["blocks"], 2);
}

#[test]
fn row7_otherwise_allow_silently_but_count() {
    let e = Exec::new(TASKS, json!({"executionDriver": "native-goal"}));
    assert_eq!(
        e.hook("stop", stop_stdin(&e.p, "Delegated 1.2.", false, None)),
        ""
    );
    assert_eq!(e.state()["globalIteration"], 1);
    assert_eq!(e.events().last().unwrap()["rule"], "allow");
    // The stop-hook driver does not re-prompt while awaiting the user's approval.
    let e = Exec::new(
        TASKS,
        json!({"executionDriver": "stop-hook", "awaitingApproval": true}),
    );
    assert_eq!(e.hook("stop", stop_stdin(&e.p, "May I?", false, None)), "");
}

#[test]
fn forty_stops_with_max_30_halt_from_the_31st_on() {
    let e = Exec::new(
        TASKS,
        json!({"maxGlobalIterations": 30, "budget": {"maxStallStops": 1000}}),
    );
    for n in 1..=40u64 {
        let out = e.hook("stop", stop_stdin(&e.p, "working", false, None));
        if n <= 30 {
            assert_eq!(out, "", "stop {n} must allow");
        } else {
            let v = json_of(&out);
            assert_eq!(v["continue"], false, "stop {n} must halt: {out}");
            assert!(
                v["stopReason"]
                    .as_str()
                    .unwrap()
                    .contains("global iterations 31 > maxGlobalIterations 30"),
                "{out}"
            );
        }
        assert_eq!(e.state()["globalIteration"], n, "stop {n} counted exactly");
    }
    let halts = e
        .events()
        .iter()
        .filter(|ev| ev["decision"] == "halt")
        .count();
    assert_eq!(halts, 10);
}

/// Run the resume command `status` prints for a person after the halt, exactly as printed
/// (the halt message the model reads names none).
fn run_printed_resume(e: &Exec, halt: &str) -> std::process::Output {
    assert!(!halt.contains("specrun resume"), "{halt}");
    let command = shell_resume(e);
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[..2], ["specrun", "resume"], "{command}");
    e.p.specrun().args(&words[1..]).output().unwrap()
}

/// Regression: the printed command raised the cap to twice its limit, which `resume`
/// refuses when usage had already overshot that (a long turn's tokens, a session idle for
/// hours), so "the exact command that resumes" did not resume.
#[test]
fn the_printed_resume_command_lifts_an_overshot_cap() {
    // Tokens: 60 stored + 250 in this turn against a cap of 100.
    let e = Exec::new(
        TASKS,
        json!({"budget": {"maxOutputTokens": 100}, "usage": {"outputTokens": 60, "transcriptOffset": 0}}),
    );
    let t = e.p.write("t.jsonl", &assistant_line("m1", 5, 250));
    let tpath = t.to_str().unwrap();
    let out = e.hook("stop", stop_stdin(&e.p, "x", false, Some(tpath)));
    let halt = json_of(&out)["stopReason"].as_str().unwrap().to_string();
    assert!(
        halt.contains("output tokens 310 >= budget.maxOutputTokens 100"),
        "{halt}"
    );
    let resumed = run_printed_resume(&e, &halt);
    assert!(resumed.status.success(), "{halt}\n{resumed:?}");
    assert_eq!(
        e.hook("stop", stop_stdin(&e.p, "x", false, Some(tpath))),
        ""
    );

    // Minutes: five hours in against a cap of 60.
    let started = chrono::Utc::now() - chrono::Duration::minutes(300);
    let e = Exec::new(
        TASKS,
        json!({"budget": {"maxMinutes": 60}, "startedAt": started.to_rfc3339()}),
    );
    let out = e.hook("stop", stop_stdin(&e.p, "x", false, None));
    let halt = json_of(&out)["stopReason"].as_str().unwrap().to_string();
    let resumed = run_printed_resume(&e, &halt);
    assert!(resumed.status.success(), "{halt}\n{resumed:?}");
    assert_eq!(e.hook("stop", stop_stdin(&e.p, "x", false, None)), "");
}

/// Regression: the guard read followups.json with its own lenient reader, so an item the
/// `followup` verbs reject (here priority "HIGH") was silently not blocking and a
/// completion claim was accepted. It is read by the same parser as the verbs now.
#[test]
fn followups_the_verbs_cannot_read_block_completion() {
    let e = Exec::new(ALL_DONE, json!({"taskIndex": 2}));
    e.fresh_execution_evidence("true");
    e.p.write(
        "specs/demo/followups.json",
        &json!({"version": 1, "items": [
            {"id": "F1", "category": "VERIFY", "priority": "HIGH", "title": "load test", "task": null, "files": [], "status": "open", "createdAt": "x"}
        ]})
        .to_string(),
    );
    e.p.specrun()
        .args(["followup", "list", "--spec", "demo"])
        .assert()
        .code(2);
    let out = e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None));
    let v = json_of(&out);
    assert_eq!(v["decision"], "block", "{out}");
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.contains("follow-ups cannot be read") && reason.contains("\"HIGH\""),
        "{reason}"
    );
    assert_eq!(e.state()["phase"], "execution");
}

/// Regression: `state init` merged `"guard": {}` into the old guard record, which kept
/// every key, so the stall count of the previous execution survived a re-init and the
/// first stop of the new execution halted again on "no progress".
#[test]
fn state_init_starts_the_stall_count_afresh() {
    let e = Exec::new(TASKS, json!({}));
    for _ in 0..5 {
        assert_eq!(e.hook("stop", stop_stdin(&e.p, "x", false, None)), "");
    }
    assert_eq!(e.state()["guard"]["stallStops"], 4);
    e.p.specrun()
        .args(["state", "init", "--spec", "demo", "--session-id", SESSION])
        .assert()
        .success();
    // Continuing the execution restarts the stall count; --restart drops the whole record.
    assert_eq!(e.state()["guard"]["stallStops"], 0);
    e.p.specrun()
        .args([
            "state",
            "init",
            "--spec",
            "demo",
            "--session-id",
            SESSION,
            "--restart",
        ])
        .assert()
        .success();
    assert_eq!(e.state()["guard"], json!({}));
    assert_eq!(e.hook("stop", stop_stdin(&e.p, "x", false, None)), "");
    assert_eq!(e.state()["guard"]["stallStops"], 0);
}

/// The Stop input as Claude Code 2.1.332 sends it while executors work in the background.
fn stop_stdin_running(e: &Exec, message: &str, active: bool) -> String {
    let mut v = json_of(&stop_stdin(&e.p, message, active, None));
    v["background_tasks"] = json!([
        {"id": "a1", "type": "subagent", "status": "running", "description": "Execute task 1.2", "agent_type": "specrun:spec-executor"},
        {"id": "b1", "type": "shell", "status": "running", "description": "npm run dev"}
    ]);
    v.to_string()
}

#[test]
fn row6a_agents_running_in_the_background_mean_wait_not_redelegate_nor_stall() {
    let e = Exec::new(
        TASKS,
        json!({"executionDriver": "stop-hook", "budget": {"maxStallStops": 1},
               "attempts": {"1.2": [{"n": 1, "status": "running"}]}}),
    );
    // A first, ordinary stop sets the baseline; with a stall cap of 1 the next counted
    // stop without progress would halt.
    e.hook("stop", stop_stdin(&e.p, "Working.", true, None));
    let out = json_of(&e.hook("stop", stop_stdin_running(&e, "Waiting.", false)));
    assert_eq!(out["decision"], "block", "{out}");
    let reason = out["reason"].as_str().unwrap();
    assert!(reason.contains("1 agent(s) of spec 'demo' still working in the background (Execute task 1.2 (specrun:spec-executor); running attempt(s): 1.2)"), "{reason}");
    assert!(
        !reason.contains("npm run dev"),
        "a shell counted as an agent: {reason}"
    );
    assert!(!reason.contains("Delegate it"), "{reason}");
    // The stop after that block is allowed; neither stop counted as a stall.
    let out = json_of(&e.hook("stop", stop_stdin_running(&e, "Waiting.", true)));
    assert!(
        out["systemMessage"]
            .as_str()
            .unwrap()
            .contains("still working"),
        "{out}"
    );
    let state = e.state();
    assert!(state["halt"].is_null(), "{state:#}");
    assert_eq!(state["guard"]["stallStops"], 0);
    let rules: Vec<Value> = e.events().iter().map(|v| v["rule"].clone()).collect();
    assert_eq!(
        rules[1..],
        [json!("agents-running-wait"), json!("agents-running")]
    );
    // A completion claim while it runs is refused with that reason.
    let out = json_of(&e.hook("stop", stop_stdin_running(&e, "ALL_TASKS_COMPLETE", false)));
    assert_eq!(out["decision"], "block", "{out}");
    assert!(out["reason"]
        .as_str()
        .unwrap()
        .contains("still working in the background"));
}

/// Issue 13: an isolated group whose members are ticked but whose branches were never merged
/// (or whose merged tree was not verified) is not complete, however fresh the main
/// checkout's evidence: the work is not in it.
#[test]
fn completion_refused_while_an_isolated_group_is_not_merged_and_verified() {
    let member = |status: &str| json!({"branch": "specrun/demo/x", "worktree": "x", "base": "abc", "status": status});
    let e = Exec::new(
        ALL_DONE,
        json!({"taskIndex": 2, "isolation": {
            "group": {"members": ["1.1", "1.2"], "baseBranch": "main", "base": "abc", "status": "running"},
            "members": {"1.1": member("ready"), "1.2": member("ready")}}}),
    );
    e.fresh_execution_evidence("true");
    let out = json_of(&e.hook("stop", stop_stdin(&e.p, "ALL_TASKS_COMPLETE", false, None)));
    assert_eq!(out["decision"], "block", "{out}");
    let reason = out["reason"].as_str().unwrap();
    assert!(
        reason.contains("the isolated group is running (not merged: 1.1 ready, 1.2 ready): `specrun group merge --spec demo`"),
        "{reason}"
    );
    assert_eq!(e.state()["phase"], "execution");
}
