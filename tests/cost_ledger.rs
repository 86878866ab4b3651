//! The cost ledger through the hooks, on synthetic transcripts: exact attribution of the
//! coordinator's share and each executor's (background ones and late final lines
//! included), per-task caps through the failure path, the forecast halt before the budget
//! is spent, dollars from a price table, and bad input that loses no token.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::hook_common::*;

const EXEC: &str = "specrun:spec-executor";
const GROUP: &str = "## Phase 1\n- [ ] 1.1 First\n  - **Verify**: `true`\n- [ ] 1.2 Second [P]\n  - **Verify**: `true`\n- [ ] 1.3 Third [P]\n  - **Verify**: `true`\n";

/// One assistant line: `tokens` = [input, output, cache read, cache creation].
fn line(id: &str, model: &str, tokens: [i64; 4], content: Value) -> String {
    let [i, o, r, c] = tokens;
    let msg = json!({"type": "assistant", "timestamp": "2026-01-01T00:00:00Z", "message": {
        "id": id, "role": "assistant", "model": model, "content": content,
        "usage": {"input_tokens": i, "output_tokens": o, "cache_read_input_tokens": r,
                  "cache_creation_input_tokens": c}}});
    format!("{msg}\n")
}

fn said(id: &str, tokens: [i64; 4]) -> String {
    line(
        id,
        "claude-x",
        tokens,
        json!([{"type": "text", "text": "ok"}]),
    )
}

fn delegates(id: &str, tokens: [i64; 4], tasks: &[&str]) -> String {
    let calls: Vec<Value> = tasks
        .iter()
        .map(|t| json!({"type": "tool_use", "id": format!("tu-{t}"), "name": "Agent",
            "input": {"subagent_type": EXEC, "description": "run", "prompt": format!("[task {t}] Execute task {t} of spec demo.")}}))
        .collect();
    line(id, "claude-x", tokens, json!(calls))
}

fn starts(id: &str, tokens: [i64; 4], task: &str) -> String {
    line(
        id,
        "claude-y",
        tokens,
        json!([{"type": "tool_use", "id": "b1", "name": "Bash",
                "input": {"command": format!("specrun task start {task} --spec demo")}}]),
    )
}

fn running(n: u64) -> Value {
    json!([{"n": n, "status": "running", "startedAt": chrono::Utc::now().to_rfc3339(), "startCommit": null}])
}

/// An execution whose coordinator transcript is read from its start.
fn exec(tasks: &str, patch: Value) -> (Exec, PathBuf) {
    let e = Exec::new(tasks, patch);
    let t = e.p.path("coordinator.jsonl");
    std::fs::write(&t, "").unwrap();
    let mut s = e.state();
    s["usage"]["transcriptOffset"] = json!(0);
    s["usage"]["transcriptPath"] = json!(t);
    e.write_state(&s);
    (e, t)
}

fn stop(e: &Exec, t: &Path) -> String {
    e.hook("stop", stop_stdin(&e.p, "turn over", false, t.to_str()))
}

fn subagent_stop(
    e: &Exec,
    agent: &str,
    transcript: &Path,
    message: &str,
    background: bool,
) -> String {
    let bg = if background {
        json!([{"id": agent, "type": "subagent", "status": "running", "agent_type": EXEC}])
    } else {
        json!([])
    };
    let stdin = json!({
        "session_id": SESSION, "transcript_path": "/nonexistent/t.jsonl", "cwd": e.p.root(),
        "agent_id": agent, "agent_type": EXEC, "hook_event_name": "SubagentStop",
        "stop_hook_active": false, "agent_transcript_path": transcript,
        "last_assistant_message": message, "background_tasks": bg,
    });
    e.hook("subagent-stop", stdin.to_string())
}

fn tokens(state: &Value, account: &str) -> Value {
    let a = if account == "run" {
        &state["ledger"]["run"]
    } else {
        &state["ledger"]["tasks"][account]
    };
    let mut sum = [0u64; 4];
    for t in a["byModel"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
    {
        for (k, key) in ["input", "output", "cacheRead", "cacheCreation"]
            .iter()
            .enumerate()
        {
            sum[k] += t[key].as_u64().unwrap_or(0);
        }
    }
    json!(sum)
}

fn specrun(e: &Exec, args: &[&str]) -> std::process::Output {
    e.p.specrun().args(args).output().unwrap()
}

/// The command `status --json` names for a person at a shell after a halt.
fn shell_resume(e: &Exec) -> String {
    status_json(e)["resumeCommand"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn status_json(e: &Exec) -> Value {
    let out = specrun(e, &["status", "--json", "--spec", "demo"]);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The Stop must end the session: its stopReason.
fn halted_stop(e: &Exec, t: &Path) -> String {
    let out = json_of(&stop(e, t));
    assert_eq!(out["continue"], false, "{out}");
    out["stopReason"].as_str().unwrap().to_string()
}

/// A counted stop's events.jsonl keys up to the cost part's first field.
const STOP_KEYS: &[&str] = &[
    "at",
    "session",
    "event",
    "spec",
    "decision",
    "rule",
    "reason",
    "globalIteration",
    "maxGlobalIterations",
    "stallStops",
    "outputTokens",
    "fingerprint",
    "stopHookActive",
    "runningAgents",
    "ledgerTokens",
];

/// The keys of the last events.jsonl line, in the order they are written.
fn last_event_keys(e: &Exec) -> Vec<String> {
    let events = e.events();
    let last = events.last().and_then(Value::as_object).unwrap();
    last.keys().cloned().collect()
}

#[test]
fn coordinator_and_executors_are_charged_exactly_background_and_late_lines_included() {
    let (e, t) = exec(GROUP, json!({"attempts": {"1.1": running(1)}}));
    // Coordinator: reading before any delegation is overhead; the delegation and what
    // follows until the next delegation is task 1.1's.
    append(&t, &said("c1", [100, 10, 1000, 50]));
    append(&t, &delegates("c2", [20, 30, 2000, 0], &["1.1"]));
    stop(&e, &t);
    let s = e.state();
    assert_eq!(tokens(&s, "run"), json!([100, 10, 1000, 50]));
    assert_eq!(tokens(&s, "1.1"), json!([20, 30, 2000, 0]));

    // The executor of 1.1 (foreground): its whole transcript is 1.1's.
    let a1 = e.p.path("agent-a1.jsonl");
    append(&a1, &starts("x1", [5, 6, 7, 8], "1.1"));
    append(&a1, &said("x2", [1, 2, 3, 4]));
    subagent_stop(&e, "a1", &a1, "TASK_COMPLETE 1.1", false);
    let s = e.state();
    assert_eq!(tokens(&s, "1.1"), json!([26, 38, 2010, 12]));
    assert_eq!(s["ledger"]["agents"]["a1"]["task"], "1.1");
    assert_eq!(s["ledger"]["agents"]["a1"]["pending"], true);
    // Its final message lands after its stop: the next Stop counts it, once.
    append(&a1, &said("x3", [0, 9, 0, 0]));
    append(&t, &said("c3", [1, 1, 1, 1]));
    stop(&e, &t);
    let s = e.state();
    assert_eq!(tokens(&s, "1.1"), json!([27, 48, 2011, 13]));
    assert_eq!(s["ledger"]["agents"]["a1"]["pending"], false);
    stop(&e, &t);
    assert_eq!(tokens(&e.state(), "1.1"), json!([27, 48, 2011, 13]));

    // A [P] group delegated in one message: split evenly, remainder to the first.
    let mut s = e.state();
    s["attempts"]["1.2"] = running(1);
    s["attempts"]["1.3"] = running(1);
    e.write_state(&s);
    append(&t, &delegates("c4", [11, 5, 0, 3], &["1.2", "1.3"]));
    stop(&e, &t);
    let s = e.state();
    assert_eq!(tokens(&s, "1.2"), json!([6, 3, 0, 2]));
    assert_eq!(tokens(&s, "1.3"), json!([5, 2, 0, 1]));

    // Background executors: one names its task by `task start` (though it claims
    // another), the other only by its result line.
    let a2 = e.p.path("agent-a2.jsonl");
    append(&a2, &said("y0", [1, 1, 0, 0]));
    append(&a2, &starts("y1", [40, 4, 0, 0], "1.3"));
    subagent_stop(&e, "a2", &a2, "TASK_COMPLETE 1.2", true);
    let a3 = e.p.path("agent-a3.jsonl");
    append(&a3, &said("z1", [7, 7, 7, 7]));
    subagent_stop(&e, "a3", &a3, "TASK_FAILED 1.2: broke", true);
    let s = e.state();
    assert_eq!(tokens(&s, "1.3"), json!([46, 7, 0, 1]));
    assert_eq!(tokens(&s, "1.2"), json!([13, 10, 7, 9]));

    // Totals: every token once, in status --json as in the state.
    let cost = &status_json(&e)["cost"];
    assert_eq!(
        cost["total"],
        json!({"input": 186, "output": 75, "cacheRead": 3018, "cacheCreation": 73})
    );
    assert_eq!(cost["overhead"]["input"], 100);
    let ids: Vec<&str> = cost["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1.1", "1.2", "1.3"]);
    assert_eq!(cost["tasks"][0]["totalTokens"], 27 + 48 + 2011 + 13);
    assert_eq!(cost["totalTokens"], 3352);
    let text = specrun(&e, &["status", "--spec", "demo"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("cost      3352 tok (in 186 out 75 cache read 3018 write 73)"),
        "{text}"
    );
    assert!(text.contains("  1.1      2099 tok  out 48"), "{text}");
}

#[test]
fn an_executor_past_the_task_token_cap_has_its_task_failed_with_a_fix_task() {
    let (e, _t) = exec(
        GROUP,
        json!({"attempts": {"1.1": running(1)}, "recoveryMode": true,
               "budget": {"maxTaskTokens": 100}}),
    );
    let a = e.p.path("agent-a.jsonl");
    append(&a, &starts("x1", [50, 10, 0, 0], "1.1"));
    append(&a, &said("x2", [30, 20, 0, 0]));
    let out = json_of(&subagent_stop(&e, "a", &a, "still working", true));
    assert_eq!(out["decision"], "block", "{out}");
    let reason = out["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "task-token-cap: attempt 1 of task 1.1 spent 110 tokens >= budget.maxTaskTokens 100"
        ),
        "{reason}"
    );
    assert!(
        reason.contains("TASK_FAILED 1.1: task-token-cap"),
        "{reason}"
    );
    let s = e.state();
    let attempt = &s["attempts"]["1.1"][0];
    assert_eq!(attempt["status"], "failed");
    assert!(attempt["reason"]
        .as_str()
        .unwrap()
        .starts_with("task-token-cap"));
    assert_eq!(attempt["fixTaskId"], "1.1.1");
    assert_eq!(s["taskIteration"], 1);
    assert!(e
        .p
        .read("specs/demo/tasks.md")
        .contains("- [ ] 1.1.1 [FIX 1.1]"));
    let ev = e.events();
    let last = ev.last().unwrap();
    assert_eq!(last["rule"], "task-token-cap");
    assert_eq!(last["taskCapFailures"][0]["fixTask"], "1.1.1");
    assert_eq!(
        last_event_keys(&e),
        [
            "at",
            "session",
            "event",
            "decision",
            "rule",
            "agentId",
            "agentType",
            "outputTokens",
            "ledgerTokens",
            "task",
            "taskCapFailures"
        ]
    );
    // Re-prompted once: the executor's next stop is allowed, nothing fails twice.
    append(&a, &said("x3", [0, 5, 0, 0]));
    let out = subagent_stop(&e, "a", &a, "TASK_FAILED 1.1: task-token-cap", true);
    assert!(!out.contains("\"block\""), "{out}");
    assert_eq!(e.state()["taskIteration"], 1);
}

#[test]
fn the_last_allowed_iteration_halts_and_the_next_stop_ends_the_session() {
    let (e, t) = exec(
        GROUP,
        json!({"attempts": {"1.1": running(1)}, "maxTaskIterations": 1,
               "budget": {"maxTaskTokens": 10}}),
    );
    let a = e.p.path("agent-a.jsonl");
    append(&a, &starts("x1", [50, 10, 0, 0], "1.1"));
    let out = json_of(&subagent_stop(&e, "a", &a, "TASK_COMPLETE 1.1", false));
    assert!(
        out["systemMessage"]
            .as_str()
            .unwrap()
            .contains("specrun failed task 1.1"),
        "{out}"
    );
    let s = e.state();
    assert_eq!(s["halt"]["kind"], "task-cap");
    assert_eq!(
        last_event_keys(&e),
        [
            "at",
            "session",
            "event",
            "spec",
            "decision",
            "rule",
            "reason",
            "taskId",
            "agentId",
            "missing",
            "stopHookActive",
            "outputTokens",
            "ledgerTokens",
            "task",
            "taskCapFailures"
        ]
    );
    let out = json_of(&stop(&e, &t));
    assert_eq!(out["continue"], false);
    // The model reads the halt: no person's command in it; the person's status names it.
    assert!(!out.to_string().contains("--raise-"), "{out}");
    assert!(
        shell_resume(&e).contains("--raise-task 2"),
        "{}",
        shell_resume(&e)
    );
}

#[test]
fn a_task_past_its_minutes_is_failed_at_the_stop() {
    let old = (chrono::Utc::now() - chrono::Duration::minutes(45)).to_rfc3339();
    let (e, t) = exec(
        GROUP,
        json!({"attempts": {"1.1": [{"n": 1, "status": "running", "startedAt": old}]},
               "budget": {"maxTaskMinutes": 30}}),
    );
    let out = json_of(&stop(&e, &t));
    let m = out["systemMessage"].as_str().unwrap();
    assert!(
        m.contains(
            "task-time-cap: attempt 1 of task 1.1 ran 45 minutes >= budget.maxTaskMinutes 30"
        ),
        "{m}"
    );
    assert_eq!(e.state()["attempts"]["1.1"][0]["status"], "failed");
}

const FIVE: &str = "## Phase 1\n- [x] 1 a\n- [x] 2 b\n- [x] 3 c\n- [ ] 4 d\n  - **Verify**: `true`\n- [ ] 5 e\n  - **Verify**: `true`\n";

fn done(start: &str, end: &str) -> Value {
    json!([{"n": 1, "status": "done", "startedAt": start, "endedAt": end}])
}

/// Three tasks done at 1000, 500 and 1500 output tokens; 3000 spent in all.
fn forecast_state(max_output: u64) -> Value {
    let acct = |o: u64| json!({"byModel": {"claude-x": {"input": 10, "output": o}}});
    json!({
        "budget": {"maxOutputTokens": max_output},
        "usage": {"outputTokens": 3000},
        "attempts": {"1": done("2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"),
                     "2": done("2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"),
                     "3": done("2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z")},
        "ledger": {"tasks": {"1": acct(1000), "2": acct(500), "3": acct(1500)}}
    })
}

#[test]
fn a_forecast_past_the_budget_halts_before_it_is_spent_and_resume_takes_the_raise() {
    let (e, t) = exec(FIVE, forecast_state(3300));
    append(&t, &said("c1", [0, 100, 0, 0]));
    let reason = halted_stop(&e, &t);
    // 3100 spent of 3300: the budget is not spent, but 5100 is projected.
    assert!(
        reason.contains("forecast passes the budget by more than 50 %"),
        "{reason}"
    );
    assert!(reason.contains("output tokens: projected 5100 (4100–6100) = 3100 spent + median 1000 × 2 task(s) left (from 3 completed), budget 3300"), "{reason}");
    assert!(!reason.contains("--raise-"), "{reason}");
    assert_eq!(
        shell_resume(&e),
        "specrun resume --spec demo --raise-tokens 6100"
    );
    let s = e.state();
    assert_eq!(s["halt"]["kind"], "forecast-cap");
    // The cap replaced decision, rule and reason in place; the cost fields follow.
    assert_eq!(last_event_keys(&e), STOP_KEYS);
    assert_eq!(s["usage"]["outputTokens"], 3100);

    let refused = specrun(&e, &["resume", "--spec", "demo"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stdout).contains("--raise-tokens"));
    let ok = specrun(&e, &["resume", "--spec", "demo", "--raise-tokens", "6100"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    let s = e.state();
    assert!(s["halt"].is_null());
    assert_eq!(s["budget"]["maxOutputTokens"], 6100);
    // With the raise the run goes on, warned: 5100 is past 80 % of 6100.
    let out = json_of(&stop(&e, &t));
    assert!(out.get("continue").is_none(), "{out}");
    let m = out["systemMessage"].as_str().unwrap();
    assert!(
        m.contains("forecast at or past 80 % of the budget: output tokens: projected 5100"),
        "{m}"
    );
    let text = specrun(&e, &["status", "--spec", "demo"]);
    assert!(String::from_utf8_lossy(&text.stdout)
        .contains("forecast  WARN output tokens: projected 5100"));
}

#[test]
fn one_completed_task_makes_no_forecast() {
    let mut s = forecast_state(1000);
    s["attempts"]["2"] = Value::Null;
    s["attempts"]["3"] = Value::Null;
    let (e, t) = exec(
        "## P\n- [x] 1 a\n- [ ] 4 d\n  - **Verify**: `true`\n- [ ] 5 e\n  - **Verify**: `true`\n",
        s,
    );
    let out = stop(&e, &t);
    assert!(!out.contains("forecast"), "{out}");
}

#[test]
fn prices_give_dollars_and_the_dollar_cap_halts_then_resumes() {
    let (e, t) = exec(FIVE, json!({"budget": {"maxUsd": 1.0}}));
    e.p.write(
        ".specrun/config.json",
        r#"{"prices": {"claude-x": {"input": 3, "output": 15}}}"#,
    );
    // 100k input + 50k output of claude-x = $0.30 + $0.75 = $1.05.
    append(&t, &said("c1", [100_000, 50_000, 0, 0]));
    let reason = halted_stop(&e, &t);
    // The cap replaced decision, rule and reason in place; the cost fields follow.
    assert_eq!(last_event_keys(&e), STOP_KEYS);
    assert!(
        reason.contains("priced spend $1.05 >= budget.maxUsd $1.00"),
        "{reason}"
    );
    assert!(!reason.contains("--raise-"), "{reason}");
    assert!(
        shell_resume(&e).contains("--raise-usd 2.05"),
        "{}",
        shell_resume(&e)
    );
    assert_eq!(status_json(&e)["cost"]["usd"], 1.05);
    let low = specrun(&e, &["resume", "--spec", "demo", "--raise-usd", "1.01"]);
    assert_eq!(low.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&low.stdout).contains("$1.05 spent"));
    let ok = specrun(&e, &["resume", "--spec", "demo", "--raise-usd", "2.05"]);
    assert!(ok.status.success());
    assert_eq!(e.state()["budget"]["maxUsd"], 2.05);
}

#[test]
fn bad_usage_unknown_models_and_a_broken_price_table_still_count_tokens() {
    let (e, t) = exec(FIVE, json!({"budget": {"maxUsd": 5}}));
    e.p.write(
        ".specrun/config.json",
        r#"{"prices": {"claude-x": {"input": 3}}}"#,
    );
    append(&t, &line("c1", "claude-x", [-5, 40, 0, 0], json!([])));
    append(
        &t,
        &line("c2", "mystery-model", [3, 4, 0, 0], json!("text content")),
    );
    append(&t, "{\"type\":\"assistant\",\"message\":{\"id\":\"c3\",\"content\":[],\"usage\":{\"output_tokens\":\"many\",\"input_tokens\":2}}}\n");
    let out = json_of(&stop(&e, &t));
    let m = out["systemMessage"].as_str().unwrap();
    assert!(m.contains("budget.maxUsd 5 is not enforced"), "{m}");
    assert!(
        m.contains(".specrun/config.json: `prices.claude-x.output` is missing"),
        "{m}"
    );
    let s = e.state();
    assert_eq!(tokens(&s, "run"), json!([5, 44, 0, 0]));
    assert_eq!(s["usage"]["outputTokens"], 44);
    assert_eq!(e.events().last().unwrap()["invalidUsageFields"], 2);
    // The cap replaced decision, rule and reason in place; the cost fields follow.
    assert_eq!(
        last_event_keys(&e),
        [STOP_KEYS, &["invalidUsageFields", "costWarning"]].concat()
    );
    let text = specrun(&e, &["status", "--spec", "demo"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("prices    .specrun/config.json: `prices.claude-x.output` is missing"),
        "{text}"
    );
    assert!(
        text.contains("tokens\n          still counted") || text.contains("(tokens still counted)"),
        "{text}"
    );
    // With the table fixed, the unknown model is named and the rest is priced.
    e.p.write(
        ".specrun/config.json",
        r#"{"prices": {"claude-x": {"input": 3, "output": 15}}}"#,
    );
    let cost = &status_json(&e)["cost"];
    assert_eq!(
        cost["unpricedModels"],
        json!(["(no model)", "mystery-model"])
    );
    assert_eq!(cost["usd"], 0.0006);
}

#[test]
fn state_merge_refuses_a_malformed_ledger() {
    let (e, _t) = exec(FIVE, json!({}));
    let out = specrun(
        &e,
        &[
            "state",
            "merge",
            e.state_path().to_str().unwrap(),
            r#"{"ledger": {"tasks": {"1": {"byModel": {"m": {"output": -3}}}}}}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ledger"), "{err}");
}

#[test]
fn state_init_sets_the_task_caps_and_forecast_levels() {
    let (e, _t) = exec(
        FIVE,
        json!({"ledger": {"run": {"byModel": {"m": {"output": 7}}}}}),
    );
    let out = specrun(
        &e,
        &[
            "state",
            "init",
            "--spec",
            "demo",
            "--max-task-tokens",
            "500",
            "--max-task-minutes",
            "20",
            "--max-usd",
            "2.5",
            "--forecast-warn",
            "70",
            "--forecast-halt",
            "25",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b = &e.state()["budget"];
    assert_eq!(
        (b["maxTaskTokens"].as_u64(), b["maxTaskMinutes"].as_u64()),
        (Some(500), Some(20))
    );
    assert_eq!(
        (
            b["maxUsd"].as_f64(),
            b["forecastWarn"].as_u64(),
            b["forecastHalt"].as_u64()
        ),
        (Some(2.5), Some(70), Some(25))
    );
    // Continuing the execution keeps what it spent; starting over empties the ledger.
    assert_eq!(e.state()["ledger"]["run"]["byModel"]["m"]["output"], 7);
    let out = specrun(&e, &["state", "init", "--spec", "demo", "--restart"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(e.state()["ledger"], json!({}));
    let bad = specrun(&e, &["state", "init", "--spec", "demo", "--max-usd", "-1"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_price_config_that_is_a_fifo_or_a_link_is_refused_quickly_and_tokens_still_count() {
    let (e, t) = exec(FIVE, json!({"budget": {"maxUsd": 5}}));
    std::fs::create_dir_all(e.p.path(".specrun")).unwrap();
    let config = e.p.path(".specrun/config.json");
    let fifo = std::process::Command::new("mkfifo")
        .arg(&config)
        .status()
        .unwrap();
    assert!(fifo.success());
    append(&t, &said("c1", [1, 2, 0, 0]));
    let out = json_of(&stop(&e, &t));
    let m = out["systemMessage"].as_str().unwrap();
    assert!(m.contains("budget.maxUsd 5 is not enforced"), "{m}");
    assert_eq!(tokens(&e.state(), "run"), json!([1, 2, 0, 0]));
    std::fs::remove_file(&config).unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        outside.path(),
        r#"{"prices": {"claude-x": {"input": 1, "output": 1}}}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), &config).unwrap();
    let cost = &status_json(&e)["cost"];
    assert!(cost["usd"].is_null(), "{cost}");
    assert!(
        cost["pricesError"]
            .as_str()
            .unwrap()
            .contains("config.json"),
        "{cost}"
    );
}
