//! `task fail`: iteration counting, the halt at maxTaskIterations, recovery fix tasks.

use serde_json::json;

use crate::common;
use crate::task_helpers::*;

/// The executor's own `task start` was refused (here: 1.2 is not the current task); the
/// coordinator records the failure it reported, and it counts.
#[test]
fn a_task_whose_start_was_refused_can_still_be_failed() {
    let p = project(TASKS, &[]);
    let (code, out, _) = run(&p, &["task", "start", "1.2"]);
    assert_eq!(code, 1, "{out}");
    let (code, out, _) = run(&p, &["task", "fail", "1.2", "--reason", "start refused"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.trim(),
        "task 1.2 attempt 1 failed before it started (1/5 iterations)"
    );
    let s = p.state(SPEC);
    assert_eq!(s["taskIteration"], 1);
    assert_eq!(s["attempts"]["1.2"][0]["status"], "failed");
    // Nothing ran, so there is nothing to roll back; the next start is attempt 2.
    let (code, out, _) = run(&p, &["task", "rollback", "1.2"]);
    assert_eq!(code, 1);
    assert!(out.contains("failed before it started"), "{out}");
}

#[test]
fn fail_after_complete_and_an_empty_reason_are_refused() {
    let p = project(TASKS, &[]);
    run(&p, &["task", "start", "1.1"]);
    ready_to_complete(&p, "1.1");
    assert_eq!(run(&p, &["task", "complete", "1.1", "--check"]).0, 0);
    let (code, out, _) = run(&p, &["task", "fail", "1.1", "--reason", "red"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("not-complete: task 1.1 is already complete"),
        "{out}"
    );
    let (code, out, _) = run(&p, &["task", "fail", "1.2", "--reason", "  "]);
    assert_eq!(code, 1);
    assert!(out.contains("reason: the reason is empty"), "{out}");
}

#[test]
fn failing_max_task_iterations_times_halts_the_execution() {
    let p = project(TASKS, &["--max-task-iterations", "2"]);
    run(&p, &["task", "start", "1.1"]);
    let (code, out, _) = run(&p, &["task", "fail", "1.1", "--reason", "tests red"]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "task 1.1 attempt 1 failed (1/2 iterations)");
    // Failing the same attempt again does not count twice.
    let (_, out, _) = run(&p, &["task", "fail", "1.1", "--reason", "tests red"]);
    assert!(out.contains("already failed"), "{out}");
    assert_eq!(p.state(SPEC)["taskIteration"], 1);
    run(&p, &["task", "start", "1.1"]);
    let (code, out, _) = run(&p, &["task", "fail", "1.1", "--reason", "still red"]);
    assert_eq!(code, 0);
    assert!(out.contains("(2/2 iterations); execution halted"), "{out}");
    assert!(
        out.contains("specrun resume --spec demo --raise-task 4"),
        "{out}"
    );
    let s = p.state(SPEC);
    assert_eq!(s["halt"]["kind"], specrun::api::model::state::HALT_TASK);
    assert_eq!(s["attempts"]["1.1"][1]["reason"], "still red");
    // Halted: no new attempt until resumed with a raised cap.
    let (code, out, _) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 1);
    assert!(out.contains("not-halted"), "{out}");
    let ev = events(&p);
    assert!(ev
        .iter()
        .any(|e| e["event"] == "task-fail" && e["halted"] == true));
}

#[test]
fn the_stop_hook_then_halts_the_session() {
    let p = project(
        TASKS,
        &[
            "--max-task-iterations",
            "1",
            "--driver",
            "stop-hook",
            "--session-id",
            "s",
        ],
    );
    run(&p, &["task", "start", "1.1"]);
    run(&p, &["task", "fail", "1.1", "--reason", "red"]);
    let doc: serde_json::Value =
        serde_json::from_str(&stop_hook(&p, "s")).expect("hook prints JSON");
    assert_eq!(doc["continue"], false);
}

/// The Stop hook's stdout for session `session` in `p`.
fn stop_hook(p: &common::TempProject, session: &str) -> String {
    let input = json!({"session_id": session, "cwd": p.root(), "hook_event_name": "Stop",
                       "stop_hook_active": false, "last_assistant_message": "working"});
    let out = p
        .specrun()
        .args(["hook", "stop"])
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const RECOVERY_TASKS: &str = "\u{feff}# Tasks\r\n**Final check**: `true`\r\n- [ ] 1.1 First\r\n  - **Files**: src/a.rs\r\n  - **Verify**: `cargo test a`\r\n\r\n- [ ] 1.2 Second\r\n  - **Verify**: `true`\r\n";

#[test]
fn recovery_mode_prints_then_inserts_a_fix_task_keeping_crlf_and_bom() {
    let p = project(RECOVERY_TASKS, &["--recovery-mode"]);
    run(&p, &["task", "start", "1.1"]);
    let (code, out, _) = run(&p, &["task", "fail", "1.1", "--reason", "panic in parser"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("- [ ] 1.1.1 [FIX 1.1] Fix: panic in parser"),
        "{out}"
    );
    assert_eq!(
        p.read("specs/demo/tasks.md"),
        RECOVERY_TASKS,
        "printing must not write"
    );
    let (code, out, _) = run(
        &p,
        &[
            "task",
            "fail",
            "1.1",
            "--reason",
            "panic in parser",
            "--insert",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("fix task 1.1.1 inserted after 1.1"), "{out}");
    let text = p.read("specs/demo/tasks.md");
    let expected = "\u{feff}# Tasks\r\n**Final check**: `true`\r\n- [ ] 1.1 First\r\n  - **Files**: src/a.rs\r\n  - **Verify**: `cargo test a`\r\n- [ ] 1.1.1 [FIX 1.1] Fix: panic in parser\r\n";
    assert!(text.starts_with(expected), "{text:?}");
    assert!(text.ends_with("  - **Commit**: `fix(recovery): address the failure of task 1.1`\r\n\r\n- [ ] 1.2 Second\r\n  - **Verify**: `true`\r\n"), "{text:?}");
    assert!(
        !text.replace("\r\n", "").contains('\n'),
        "a bare LF slipped in"
    );
    let s = p.state(SPEC);
    assert_eq!(
        s["fixTaskMap"]["1.1"],
        json!({"attempts": 1, "fixTaskIds": ["1.1.1"], "lastError": "panic in parser"})
    );
    assert_eq!(s["totalTasks"], 3);
    // A second insert for the same failed attempt is refused; the fix task is startable.
    let (code, out, _) = run(&p, &["task", "fail", "1.1", "--reason", "x", "--insert"]);
    assert_eq!(code, 1);
    assert!(out.contains("fix-pending"), "{out}");
    assert_eq!(run(&p, &["task", "start", "1.1.1"]).0, 0);
}

#[test]
fn insert_is_refused_without_recovery_mode_and_past_the_fix_limit() {
    let p = project(TASKS, &[]);
    run(&p, &["task", "start", "1.1"]);
    let (code, out, _) = run(&p, &["task", "fail", "1.1", "--reason", "x", "--insert"]);
    assert_eq!(code, 1);
    assert!(out.contains("recovery-mode: recovery mode is off"), "{out}");
    assert_eq!(
        p.state(SPEC)["taskIteration"],
        0,
        "a refused fail changed the state"
    );
    let q = project(TASKS, &["--recovery-mode", "--max-task-iterations", "9"]);
    set_state(
        &q,
        json!({"fixTaskMap": {"1.1": {"attempts": 3, "fixTaskIds": [], "lastError": "e"}}}),
    );
    run(&q, &["task", "start", "1.1"]);
    let (code, out, _) = run(&q, &["task", "fail", "1.1", "--reason", "x", "--insert"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("fix-limit: task 1.1 already has 3 fix tasks (at most 3)"),
        "{out}"
    );
    let (code, out, _) = run(&q, &["task", "fail", "1.1", "--reason", "x"]);
    assert_eq!(code, 0);
    assert!(out.contains("recovery: no fix task (fix-limit"), "{out}");
}

/// failure-recovery.md: "delegate the fix task first, then the original". Every reader of
/// "what is next" (tasks next, snapshot, the stop hook's brief, task start) must agree,
/// and repeated inserts must read in the order they run.
#[test]
fn a_pending_fix_task_is_next_everywhere_and_fixes_read_in_order() {
    let p = project(
        TASKS,
        &[
            "--recovery-mode",
            "--driver",
            "stop-hook",
            "--session-id",
            "s",
        ],
    );
    run(&p, &["task", "start", "1.1"]);
    run(&p, &["task", "fail", "1.1", "--reason", "red", "--insert"]);
    let next = |p: &common::TempProject| {
        let (_, out, _) = run(p, &["tasks", "next", "--json"]);
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        (doc["next"]["id"].clone(), doc["parallelGroup"].clone())
    };
    assert_eq!(next(&p), (json!("1.1.1"), json!(["1.1.1"])));
    let (_, snap, _) = run(&p, &["snapshot"]);
    let snap: serde_json::Value = serde_json::from_str(&snap).unwrap();
    assert_eq!(snap["tasks"]["current"]["id"], "1.1.1");
    let brief = stop_hook(&p, "s");
    assert!(brief.contains("Next task 1.1.1"), "{brief}");
    // The original waits for its fix.
    let (code, out, _) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 1);
    assert!(out.contains("startable now: 1.1.1"), "{out}");
    // Fix done, the original is retried; it fails again and gets a second fix, below the first.
    run(&p, &["task", "start", "1.1.1"]);
    ready_to_complete(&p, "1.1.1");
    // A fix task's Done when is a criterion too (covered in tests/acceptance_cli.rs).
    run(
        &p,
        &[
            "ac",
            "confirm",
            "1.1.1/AC1",
            "--reason",
            "the failure no longer occurs",
        ],
    );
    let (code, out, _) = run(&p, &["task", "complete", "1.1.1", "--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("next: 1.1"), "{out}");
    assert_eq!(next(&p).0, json!("1.1"));
    run(&p, &["task", "start", "1.1"]);
    run(
        &p,
        &["task", "fail", "1.1", "--reason", "red again", "--insert"],
    );
    let ids: Vec<String> = specrun::api::model::tasks::parse(&p.read("specs/demo/tasks.md"))
        .tasks
        .iter()
        .map(|t| t.label())
        .collect();
    assert_eq!(ids, ["1.1", "1.1.1", "1.1.2", "1.2", "1.3"]);
    assert_eq!(next(&p).0, json!("1.1.2"));
    let (_, count, _) = run(&p, &["tasks", "count"]);
    assert!(count.contains("\"nextIndex\":2"), "{count}");
}
