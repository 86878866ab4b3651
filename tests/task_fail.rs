//! `task fail`: iteration counting, the halt at maxTaskIterations, recovery fix tasks.

mod common;
mod task_helpers;

use serde_json::json;
use task_helpers::*;

#[test]
fn fail_without_start_and_fail_after_complete_are_refused() {
    let p = project(TASKS, &[]);
    let (code, out, _) = run(&p, &["task", "fail", "1.1", "--reason", "red"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("attempt-running: task 1.1 was never started"),
        "{out}"
    );
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
    assert_eq!(s["halt"]["kind"], specrun::state::HALT_TASK);
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
    let input = json!({"session_id": "s", "cwd": p.root(), "hook_event_name": "Stop", "stop_hook_active": false});
    let out = p
        .specrun()
        .args(["hook", "stop"])
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("hook prints JSON");
    assert_eq!(doc["continue"], false);
}

const RECOVERY_TASKS: &str = "\u{feff}# Tasks\r\n- [ ] 1.1 First\r\n  - **Files**: src/a.rs\r\n  - **Verify**: `cargo test a`\r\n\r\n- [ ] 1.2 Second\r\n";

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
    let expected = "\u{feff}# Tasks\r\n- [ ] 1.1 First\r\n  - **Files**: src/a.rs\r\n  - **Verify**: `cargo test a`\r\n- [ ] 1.1.1 [FIX 1.1] Fix: panic in parser\r\n";
    assert!(text.starts_with(expected), "{text:?}");
    assert!(text.ends_with("  - **Commit**: `fix(recovery): address the failure of task 1.1`\r\n\r\n- [ ] 1.2 Second\r\n"), "{text:?}");
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
