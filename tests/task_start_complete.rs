//! `task start` and `task complete`: every precondition message, idempotency, the race.

use serde_json::json;

use crate::common;
use crate::task_helpers::*;

#[test]
fn start_records_a_running_attempt_at_head_and_is_idempotent() {
    let p = project(TASKS, &[]);
    let head = p.git_cmd(&["rev-parse", "HEAD"]).trim().to_string();
    let (code, out, _) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("task 1.1 started: attempt 1 from "),
        "{out}"
    );
    let a = &p.state(SPEC)["attempts"]["1.1"][0];
    assert_eq!(
        (
            a["n"].as_u64(),
            a["status"].as_str(),
            a["startCommit"].as_str()
        ),
        (Some(1), Some("running"), Some(head.as_str()))
    );
    let (code, out, _) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 0);
    assert!(out.contains("already started (attempt 1"), "{out}");
    assert_eq!(
        p.state(SPEC)["attempts"]["1.1"].as_array().unwrap().len(),
        1
    );
    let ev = events(&p);
    assert!(ev
        .iter()
        .any(|e| e["event"] == "task-start" && e["task"] == "1.1"));
}

#[test]
fn start_refuses_a_task_that_is_not_current_or_already_checked() {
    let p = project("- [x] 1 Done\n- [ ] 2 Now\n  - **Verify**: `true`\n- [ ] 3 Later\n  - **Verify**: `true`\n", &[]);
    let (code, out, _) = run(&p, &["task", "start", "3"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("current-task: task 3 is not the current task; startable now: 2"),
        "{out}"
    );
    let (code, out, _) = run(&p, &["task", "start", "1"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("unchecked: task 1 is already checked"),
        "{out}"
    );
    let (code, out, _) = run(&p, &["task", "start", "3", "--json"]);
    assert_eq!(code, 1);
    let doc: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(doc["unmet"][0]["name"], "current-task");
}

#[test]
fn members_of_the_current_parallel_group_can_start() {
    let p = project("- [ ] 1 [P] A\n  - **Verify**: `true`\n- [ ] 2 [P] B\n  - **Verify**: `true`\n- [ ] 3 C\n  - **Verify**: `true`\n", &[]);
    assert_eq!(run(&p, &["task", "start", "1"]).0, 0);
    assert_eq!(run(&p, &["task", "start", "2"]).0, 0);
    assert_eq!(run(&p, &["task", "start", "3"]).0, 1);
}

#[test]
fn unknown_and_duplicate_ids_are_named() {
    let dup = "- [ ] 1 A\n- [ ] 2 B\n- [ ] 2 C\n";
    // state init refuses the plan, naming the line; written after init, every verb names both.
    let q = common::TempProject::git();
    q.spec_as_written(SPEC, dup);
    let (code, _, err) = run(&q, &["state", "init", "--spec", SPEC]);
    assert_eq!(code, 1, "a refusal: {err}");
    assert!(err.contains("line 3: task id 2 is also on line 2"), "{err}");
    assert!(!q
        .path(&format!("specs/{SPEC}/.specrun-state.json"))
        .exists());
    let p = project("- [ ] 1 A\n  - **Verify**: `true`\n- [ ] 2 B\n  - **Verify**: `true`\n- [ ] 3 C\n  - **Verify**: `true`\n", &[]);
    p.spec_as_written(SPEC, dup);
    let (code, _, err) = run(&p, &["task", "start", "9"]);
    assert_eq!(code, 2);
    assert!(err.contains("no task with id 9"), "{err}");
    for verb in [
        &["task", "start", "2"][..],
        &["task", "complete", "2"],
        &["task", "fail", "2", "--reason", "x"],
        &["task", "rollback", "2"],
    ] {
        let (code, _, err) = run(&p, verb);
        assert_eq!(code, 2, "{verb:?}");
        assert!(
            err.contains("task id 2 appears more than once: line 2, line 3"),
            "{verb:?}: {err}"
        );
    }
}

#[test]
fn start_refuses_when_halted_cancelled_or_uninitialised() {
    let p = project(TASKS, &[]);
    set_state(
        &p,
        json!({"halt": {"kind": "stall", "reason": "no progress", "at": "x"}}),
    );
    let (code, out, _) = run(&p, &["task", "start", "1.1"]);
    assert_eq!(code, 1);
    assert!(out.contains("not-halted: the execution is halted (stall): a person runs `specrun resume --spec demo`"), "{out}");
    let q = common::TempProject::git();
    q.spec("demo", TASKS);
    let (code, _, err) = run(&q, &["task", "start", "1.1"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("run `specrun state init --spec demo` first"),
        "{err}"
    );
}

#[test]
fn complete_without_start_lists_every_unmet_precondition() {
    let p = project(TASKS, &[]);
    let (code, out, _) = run(&p, &["task", "complete", "1.1"]);
    assert_eq!(code, 1);
    for want in [
        "task complete 1.1 refused:",
        "attempt-running: task 1.1 was never started: run `specrun task start 1.1` first",
        "evidence: no fresh passing evidence from the task's Verify command: taskEvidence[1.1] is missing and verificationBlocks.execution is missing; run `specrun verify run --task 1.1`",
        "critique-post-code: no post-code critique record",
        "critique-post-test: no post-test critique record",
        "checked: task 1.1 is not checked in tasks.md",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    assert!(p.state(SPEC).get("attempts").is_none());
}

#[test]
fn stale_failed_and_old_critique_are_each_refused() {
    let p = project(TASKS, &[]);
    run(&p, &["task", "start", "1.1"]);
    ready_to_complete(&p, "1.1");
    // Code changed after the verification: stale.
    p.write("src/a.rs", "fn a() { 1; }\n");
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 1);
    assert!(out.contains("taskEvidence[1.1] is stale"), "{out}");
    // A failing run.
    evidence(&p, "1.1", "2026-01-01T00:00:00Z", 1);
    let (_, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert!(out.contains("taskEvidence[1.1] is failed"), "{out}");
    // Post-test critique not newer than the evidence.
    evidence(&p, "1.1", "2026-01-01T00:02:00Z", 0);
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 1);
    assert!(out.contains("critique-post-test-newer: the post-test critique (2026-01-01T00:01:00Z) is not newer than the evidence"), "{out}");
    assert!(
        !p.read("specs/demo/tasks.md").contains("- [x] 1.1"),
        "--check ticked a refused task"
    );
}

/// Regression: `task complete` (and the SubagentStop guard) took any file with a
/// `recordedAt` as a critique, so a hand-written stub or a record with unfixed issues let
/// an unreviewed task complete.
#[test]
fn critique_records_that_critique_record_would_not_write_do_not_count() {
    let p = project(TASKS, &[]);
    run(&p, &["task", "start", "1.1"]);
    ready_to_complete(&p, "1.1");
    p.write(
        "specs/demo/critique/1.1-post-code.json",
        &json!({"task": "1.1", "stage": "post-code", "recordedAt": "2026-01-01T00:00:30Z"})
            .to_string(),
    );
    let mut open = critique_record("1.1", "post-test", "2026-01-01T00:01:00Z");
    open["issuesFound"] =
        json!([{"checklistId": "SC-6.5.3", "description": "no failure-path test"}]);
    p.write("specs/demo/critique/1.1-post-test.json", &open.to_string());
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("critique-post-code: the post-code critique record does not count (invalid: `checklist` is missing"),
        "{out}"
    );
    assert!(
        out.contains("critique-post-test: the post-test critique record does not count (1 issue(s) found but not fixed"),
        "{out}"
    );
    assert!(!p.read("specs/demo/tasks.md").contains("- [x] 1.1"));
    // Recorded properly, the same task completes.
    critique(&p, "1.1", "post-code", "2026-01-01T00:00:30Z");
    critique(&p, "1.1", "post-test", "2026-01-01T00:01:00Z");
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn complete_checks_advances_appends_progress_and_repeats_say_so() {
    let p = project(TASKS, &[]);
    run(&p, &["task", "start", "1.1"]);
    ready_to_complete(&p, "1.1");
    let before = p.read("specs/demo/tasks.md");
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("task 1.1 complete (attempt 1, ") && out.contains("next: 1.2"),
        "{out}"
    );
    assert_eq!(
        p.read("specs/demo/tasks.md"),
        before.replacen("- [ ] 1.1", "- [x] 1.1", 1)
    );
    let s = p.state(SPEC);
    assert_eq!(
        (s["taskIndex"].as_u64(), s["taskIteration"].as_u64()),
        (Some(1), Some(0))
    );
    let head = p.git_cmd(&["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(s["attempts"]["1.1"][0]["status"], "done");
    assert_eq!(s["attempts"]["1.1"][0]["endCommit"], head);
    let progress = p.read("specs/demo/.progress.md");
    assert!(
        progress.contains(&format!(
            "## Completed tasks\n\n- [x] 1.1 First — {}\n",
            &head[..10]
        )),
        "{progress}"
    );
    let (code, out, _) = run(&p, &["task", "complete", "1.1"]);
    assert_eq!(code, 0);
    assert!(out.contains("task 1.1 is already complete"), "{out}");
    assert_eq!(
        p.read("specs/demo/.progress.md"),
        progress,
        "a repeat appended again"
    );
}

#[test]
fn phase_evidence_vouches_and_blocking_followups_warn() {
    let p = project(TASKS, &[]);
    run(&p, &["task", "start", "1.1"]);
    // Phase evidence vouches for a task only when it ran the task's Verify command.
    let mut record = json!({"command": "cargo test", "exitCode": 0, "startedAt": "2026-01-01T00:00:00Z",
        "durationMs": 1, "tree": tree(&p), "outputTail": "", "timedOut": false, "taskId": null});
    set_state(&p, json!({"verificationBlocks": {"execution": record}}));
    critique(&p, "1.1", "post-code", "2026-01-01T00:00:30Z");
    critique(&p, "1.1", "post-test", "2026-01-01T00:01:00Z");
    followup_add(&p, "VERIFY", "high", "check by hand", Some("1.1"));
    p.specrun()
        .args(["tasks", "check", "1.1"])
        .assert()
        .success();
    let (code, out, _) = run(&p, &["task", "complete", "1.1"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("verificationBlocks.execution is not the task's (it ran `cargo test`, not the task's Verify command `true`"),
        "{out}"
    );
    record["command"] = json!("true");
    set_state(&p, json!({"verificationBlocks": {"execution": record}}));
    let (code, out, err) = run(&p, &["task", "complete", "1.1"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        err.contains("warning: open blocking follow-up F1 [VERIFY/high]"),
        "{err}"
    );
}

#[test]
fn two_racing_completes_advance_exactly_once() {
    let p = project(TASKS, &[]);
    run(&p, &["task", "start", "1.1"]);
    ready_to_complete(&p, "1.1");
    let bin = common::bin_path();
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(&bin)
                .current_dir(p.root())
                .args(["task", "complete", "1.1", "--check"])
                .output_async()
        })
        .collect();
    let outs: Vec<String> = children.into_iter().map(|c| c.join().unwrap()).collect();
    let advanced = outs
        .iter()
        .filter(|o| o.contains("task 1.1 complete"))
        .count();
    let repeated = outs
        .iter()
        .filter(|o| o.contains("already complete"))
        .count();
    assert_eq!((advanced, repeated), (1, 1), "{outs:?}");
    assert_eq!(
        p.read("specs/demo/.progress.md")
            .matches("- [x] 1.1")
            .count(),
        1
    );
    let completes = events(&p)
        .into_iter()
        .filter(|e| e["event"] == "task-complete" && e["changed"] == true)
        .count();
    assert_eq!(completes, 1);
}

/// Run a command on its own thread so two can race.
trait OutputAsync {
    fn output_async(self) -> std::thread::JoinHandle<String>;
}

impl OutputAsync for &mut std::process::Command {
    fn output_async(self) -> std::thread::JoinHandle<String> {
        let child = self.stdout(std::process::Stdio::piped()).spawn().unwrap();
        std::thread::spawn(move || {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success());
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
    }
}

/// `task complete` judges the evidence before it takes the state lock (the fingerprint runs
/// git); a record that changes before the lock is taken is judged again under it. Here the
/// lock is held while `complete` starts, and the passing evidence is replaced by a failing
/// run meanwhile: the completion must be refused.
#[test]
fn evidence_that_changes_while_complete_waits_for_the_lock_is_judged_again() {
    let p = project(TASKS, &[]);
    run(&p, &["task", "start", "1.1"]);
    ready_to_complete(&p, "1.1");
    let lock = state_path(&p).with_file_name(".specrun-state.json.lock");
    let mut holder = crate::hook_common::hold_lock(&lock, 3);
    let (bin, root) = (common::bin_path(), p.root());
    let waiting = std::thread::spawn(move || {
        std::process::Command::new(bin)
            .current_dir(root)
            .args(["task", "complete", "1.1", "--check", "--spec", SPEC])
            .output()
    });
    // `complete` has judged the passing record and waits for the lock; now it fails.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    evidence(&p, "1.1", "2026-01-01T00:00:10Z", 1);
    holder.wait().unwrap();
    let out = waiting.join().unwrap().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("refused"), "{said}");
    assert!(
        p.read("specs/demo/tasks.md").contains("- [ ] 1.1"),
        "ticked on stale facts"
    );
}
