//! Issue 23 class 7 and the PreToolUse guard: during an execution the hook denies a Bash
//! command that overrides CLAUDECODE, writes the bookkeeping with anything but specrun's
//! verbs, runs a hook verb, starts a nested Claude Code or runs a person's verb, and a
//! Write/Edit of the bookkeeping; after a halt or a cancel it denies tools that may change
//! the code too, and read-only commands stay allowed. Each honest call is allowed.

use serde_json::{json, Value};

use crate::hook_common::*;
use crate::roles::{assert_no_persons_command, at_shell, executing};

fn pre(p: &TempProject, tool: &str, input: Value) -> String {
    let stdin = json!({
        "session_id": SESSION, "cwd": p.root(), "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1",
    });
    p.specrun()
        .args(["hook", "pre-tool-use"])
        .env("CLAUDECODE", "1")
        .write_stdin(stdin.to_string())
        .output()
        .map(|o| {
            assert_eq!(o.status.code(), Some(0));
            String::from_utf8_lossy(&o.stdout).into_owned()
        })
        .unwrap()
}

fn bash(p: &TempProject, command: &str) -> String {
    pre(p, "Bash", json!({"command": command, "description": "d"}))
}

fn write(p: &TempProject, tool: &str, path: &str) -> String {
    let path = p.path(path).to_string_lossy().into_owned();
    pre(
        p,
        tool,
        json!({"file_path": path, "content": "x", "old_string": "a", "new_string": "b"}),
    )
}

fn assert_denied(answer: &str, what: &str) {
    let v: Value = serde_json::from_str(answer).unwrap_or_else(|_| panic!("{what}: no answer"));
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecision"], "deny",
        "{what}: {v}"
    );
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("end your turn") || reason.contains("End your turn"),
        "{what}: {reason}"
    );
    assert_no_persons_command(reason, what);
}

const DISHONEST: &[&str] = &[
    "env -u CLAUDECODE specrun resume --spec demo --raise-global 1000",
    "CLAUDECODE= specrun ac confirm 1.2/AC1 --reason 'looks fine to me'",
    "unset CLAUDECODE && specrun task justify 1.2 --finding F1 --reason x",
    "env -i PATH=/usr/bin specrun resume",
    "export CLAUDECODE=0",
    "echo '{\"phase\":\"completed\"}' > specs/demo/.specrun-state.json",
    "sed -i 's/\"halt\": {[^}]*}/\"halt\": null/' specs/demo/.specrun-state.json",
    "rm -f specs/.current-spec",
    "printf other > specs/.current-spec",
    "cp /tmp/forged.json specs/demo/acceptance.json",
    "truncate -s 0 .specrun/events.jsonl",
    "specrun hook stop < /tmp/fake-stop.json",
    "claude -p 'finish the spec'",
    "npx -y @anthropic-ai/claude-code -p 'go'",
    "specrun resume --spec demo",
    "specrun state init --spec demo --restart",
    // The record or the person's settings moved by the environment.
    "SPECRUN_STATE_DIR=/tmp/elsewhere specrun task complete 1.2 --spec demo",
    "export XDG_STATE_HOME=/tmp/elsewhere",
    "HOME=/tmp/elsewhere specrun status --spec demo",
    "SPECRUN_NOTIFY='specrun resume' specrun task fail 1.2 --reason x --spec demo",
    "env XDG_CONFIG_HOME=/tmp/mine specrun state init --spec demo",
    "env -uXDG_CONFIG_HOME specrun state init --spec demo",
    "HOME=/tmp/elsewhere sh -c 'specrun state init --spec demo'",
    // The same from a background process, which outlives the call the guard saw.
    "nohup sh -c 'sleep 2; specrun resume --spec demo' >/dev/null 2>&1 &",
    "setsid sh -c 'rm -f specs/.current-spec' &",
    "(sleep 1; echo '{}' > specs/demo/.specrun-state.json) &",
];

#[test]
fn each_dishonest_call_during_an_execution_is_denied() {
    let p = executing();
    for command in DISHONEST {
        assert_denied(&bash(&p, command), command);
    }
    for tool in ["Write", "Edit", "MultiEdit"] {
        for path in [
            "specs/demo/.specrun-state.json",
            "specs/.current-spec",
            ".specrun/config.json",
        ] {
            assert_denied(&write(&p, tool, path), &format!("{tool} {path}"));
        }
    }
    let notebook = p
        .path("specs/demo/acceptance.json")
        .to_string_lossy()
        .into_owned();
    assert_denied(
        &pre(
            &p,
            "NotebookEdit",
            json!({"notebook_path": notebook, "new_source": "x"}),
        ),
        "NotebookEdit",
    );
    let denials = std::fs::read_to_string(p.path(".specrun/events.jsonl")).unwrap();
    assert!(
        denials.contains("\"rule\":\"claudecode-override\""),
        "{denials}"
    );
    assert!(denials.contains("\"rule\":\"nested-claude\""), "{denials}");
    assert!(
        denials.contains("\"rule\":\"environment-override\""),
        "{denials}"
    );
}

#[test]
fn honest_calls_during_an_execution_are_allowed() {
    let p = executing();
    for command in [
        "cargo test",
        "git status",
        "git add -A && git commit -q -m 'feat: b'",
        "specrun task complete 1.2 --check --spec demo",
        "specrun verify run --task 1.2 --spec demo",
        "cat specs/demo/.specrun-state.json",
        "grep -q b b.txt 2>&1",
        "mkdir -p src && echo 'fn main() {}' > src/main.rs",
        "HOME=/tmp/home npm test",
        "nohup cargo build > build.log 2>&1 &",
    ] {
        assert_eq!(bash(&p, command), "", "{command}");
    }
    for tool in ["Write", "Edit", "MultiEdit"] {
        assert_eq!(write(&p, tool, "src/lib.rs"), "", "{tool}");
    }
    // Another session's call is not this execution's business.
    let stdin = json!({"session_id": "other", "cwd": p.root(), "hook_event_name": "PreToolUse",
                       "tool_name": "Bash", "tool_input": {"command": "claude -p x"}});
    let out = p
        .specrun()
        .args(["hook", "pre-tool-use"])
        .write_stdin(stdin.to_string())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
}

#[test]
fn after_a_halt_or_a_cancel_only_read_only_calls_are_allowed() {
    let p = executing();
    let mut state = p.state("demo");
    state["halt"] = json!({"kind": "stall", "reason": "stuck", "at": "2026-01-01T00:00:00Z"});
    let path = p.path("specs/demo/.specrun-state.json");
    for stopped in [
        "halted (as specrun writes it)",
        "halted (compact)",
        "cancelled",
    ] {
        if stopped.ends_with("writes it)") {
            std::fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
        }
        if stopped.ends_with("(compact)") {
            std::fs::write(&path, state.to_string()).unwrap();
        }
        if stopped == "cancelled" {
            assert!(at_shell(&p, &["resume", "--spec", "demo"]).status.success());
            assert!(at_shell(&p, &["cancel", "--spec", "demo"]).status.success());
        }
        for command in [
            "cargo test",
            "echo x > src/a.rs",
            "git commit -qam wip",
            "python3 fix.py",
        ] {
            assert_denied(&bash(&p, command), &format!("{stopped}: {command}"));
        }
        assert_denied(
            &write(&p, "Write", "src/a.rs"),
            &format!("{stopped}: Write"),
        );
        assert_denied(&write(&p, "Edit", "src/a.rs"), &format!("{stopped}: Edit"));
        for command in [
            "git status",
            "git diff",
            "cat src/a.rs",
            "specrun status --spec demo",
            "ls",
        ] {
            assert_eq!(bash(&p, command), "", "{stopped}: {command}");
        }
    }
}

/// Issue 23 class 7: an executor's claim dressed in emphasis, code ticks, quotes or
/// trailing text is still checked at SubagentStop (on main it skipped the check); a final
/// message with no claim is left alone.
#[test]
fn a_dressed_up_task_claim_is_still_checked() {
    let e = Exec::new(TASKS, json!({}));
    let stop = |message: &str| {
        let stdin = json!({
            "session_id": SESSION, "cwd": e.p.root(), "agent_id": "agent-7",
            "agent_type": "specrun:spec-executor", "hook_event_name": "SubagentStop",
            "stop_hook_active": false, "last_assistant_message": message,
        });
        e.hook("subagent-stop", stdin.to_string())
    };
    for message in [
        "Done.\n**TASK_COMPLETE 1.2**",
        "Done.\n`TASK_COMPLETE 1.2`",
        "Done.\n\"TASK_COMPLETE 1.2\"",
        "Done.\nTASK_COMPLETE 1.2 — all tests pass",
        "TASK_COMPLETE 1.2\n\nLet me know if you need more.",
    ] {
        let out = stop(message);
        assert!(
            out.contains("\"block\""),
            "{message:?} was not checked: {out}"
        );
        assert!(out.contains("1.2"), "{out}");
    }
    assert_eq!(stop("I could not finish: the build fails."), "");
}

/// The honest e2e executor's own Bash steps pass the guard: a critique record on a heredoc,
/// a verify run, a commit, a task completion.
#[test]
fn the_scripted_executors_steps_pass_the_guard() {
    let p = executing();
    for command in [
        crate::e2e::critique_command("1.2", "post-code"),
        crate::e2e::critique_command("1.2", "post-test"),
        "specrun verify run --task 1.2 --command 'grep -q b b.txt' --spec demo".to_string(),
        "git add b.txt && git commit -q -m 'feat(notes): beta' -- b.txt".to_string(),
        "sleep 0.2; mkdir -p notes && echo beta > notes/beta.txt".to_string(),
        "specrun task complete 1.2 --check --spec demo".to_string(),
    ] {
        assert_eq!(bash(&p, &command), "", "{command}");
    }
}
