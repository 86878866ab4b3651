//! `specrun ac …`, the criteria and integrity gates of `task complete`, `task justify`, and
//! the final completion gate (Stop hook, last-mile), on temp git projects. Test output
//! comes from the real `node --test` (node is always here: Claude Code runs on it).

use serde_json::{json, Value};

use crate::common;
use crate::common::TempProject;
use crate::task_helpers;
use crate::task_helpers::{events, project, run, SPEC};

const TASKS: &str = "# Tasks\n\n## Phase 1\n- [ ] 1.1 Adder\n  - **Files**: lib/add.test.js\n  - **Verify**: `node --test`\n  - **Done when**:\n    - adding two numbers works\n    - the adder rejects strings\n- [ ] 1.2 Docs\n  - **Verify**: `true`\n  - **Files**: README.md\n  - **Done when**: the README explains the adder\n- [ ] 1.3 No criteria\n  - **Verify**: `true`\n  - **Files**: notes.txt\n";

const TEST_FILE: &str = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('adds', () => {\n  assert.strictEqual(1 + 1, 2);\n});\n\ntest('rejects strings', () => {\n  assert.throws(() => { throw new TypeError('x'); });\n  assert.ok(Number.isInteger(1 + 1));\n});\n";

const REQUIREMENTS: &str =
    "# Requirements\n\n## Acceptance criteria\n- **AC-1.1**: the adder is exported\n";

/// Started without red-before: these tests are about the matrix and the integrity gate, and
/// their fixture's tests do not depend on code the task changes (tests/red_green.rs).
fn setup() -> TempProject {
    let p = project(TASKS, &["--no-red-green"]);
    p.write(&format!("specs/{SPEC}/requirements.md"), REQUIREMENTS);
    p
}

fn json_out(p: &TempProject, args: &[&str]) -> (i32, Value) {
    let (code, out, err) = run(p, args);
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, v)
}

pub(crate) fn status_of(m: &Value, id: &str) -> String {
    m["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}: {m}"))["status"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `verify run --task 1.1` of the real `node --test`.
fn verify_node(p: &TempProject) -> (i32, String, String) {
    run(
        p,
        &["verify", "run", "--task", "1.1", "--command", "node --test"],
    )
}

#[test]
fn ids_come_from_done_when_bullets_and_requirements() {
    let p = setup();
    let (code, out, _) = run(&p, &["ac", "list"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "1.1/AC1\t1.1\tadding two numbers works",
            "1.1/AC2\t1.1\tthe adder rejects strings",
            "1.2/AC1\t1.2\tthe README explains the adder",
            "AC-1.1\trequirements\tthe adder is exported",
        ]
    );
    let (_, v) = json_out(&p, &["ac", "list", "--task", "1.2", "--json"]);
    assert_eq!(
        v["criteria"],
        json!([{"id": "1.2/AC1", "task": "1.2", "text": "the README explains the adder"}])
    );
    let (code, _, err) = run(&p, &["ac", "list", "--task", "9.9"]);
    assert_eq!(code, 2);
    assert!(err.contains("9.9"), "{err}");
}

#[test]
fn an_unknown_criterion_is_an_error_that_writes_nothing() {
    let p = setup();
    let (code, _, err) = run(&p, &["ac", "map", "1.1/AC9", "--test", "adds"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("\"1.1/AC9\" is not a criterion of spec demo"),
        "{err}"
    );
    assert!(err.contains("1.1/AC1, 1.1/AC2, 1.2/AC1, AC-1.1"), "{err}");
    assert!(err.contains("specrun ac list --spec demo"), "{err}");
    assert!(!p.path("specs/demo/acceptance.json").exists());
    let (code, _, err) = run(
        &p,
        &[
            "ac",
            "confirm",
            "nope",
            "--reason",
            "checked by hand in the UI",
        ],
    );
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_mapped_test_that_passed_in_a_fresh_run_covers_and_an_edit_stales_it() {
    let p = setup();
    p.write("lib/add.test.js", TEST_FILE);
    let (code, _, err) = verify_node(&p);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("tests: 2 passed, 0 failed"), "{err}");
    let rec = &p.state(SPEC)["taskEvidence"]["1.1"];
    assert_eq!(rec["tests"]["passed"], 2, "{rec}");
    assert_eq!(rec["tests"]["runners"], json!(["node-test"]));
    let (code, _, err) = run(&p, &["ac", "map", "1.1/AC1", "--test", "adds"]);
    assert_eq!((code, err.as_str()), (0, ""));
    run(&p, &["ac", "map", "1.1/AC2", "--test", "rejects strings"]);
    let (code, m) = json_out(&p, &["ac", "status", "--task", "1.1", "--json"]);
    assert_eq!(code, 0, "{m}");
    assert_eq!(status_of(&m, "1.1/AC1"), "covered");
    assert_eq!(m["rows"][0]["tests"][0]["state"], "passed");
    assert_eq!(m["enforced"], true);
    // The whole spec is not covered: exit 1.
    let (code, out, _) = run(&p, &["ac", "status"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("1.2/AC1    1.2    unmapped"), "{out}");
    // The code changes: the pass is stale.
    p.write("lib/other.js", "module.exports = 1;\n");
    let (code, m) = json_out(&p, &["ac", "status", "--task", "1.1", "--json"]);
    assert_eq!(code, 1);
    assert_eq!(status_of(&m, "1.1/AC1"), "stale");
    assert!(
        m["rows"][0]["why"]
            .as_str()
            .unwrap()
            .contains("code changed"),
        "{m}"
    );
}

#[test]
fn a_failing_mapped_test_is_failed_not_covered() {
    let p = setup();
    p.write(
        "lib/add.test.js",
        &TEST_FILE.replace("1 + 1, 2", "1 + 1, 3"),
    );
    let (code, _, _) = verify_node(&p);
    assert_eq!(code, 1);
    run(&p, &["ac", "map", "1.1/AC1", "--test", "adds"]);
    run(&p, &["ac", "map", "1.1/AC2", "--test", "rejects strings"]);
    let (_, m) = json_out(&p, &["ac", "status", "--task", "1.1", "--json"]);
    assert_eq!(status_of(&m, "1.1/AC1"), "failed");
    // A test that passed in a run that failed overall is not proof either.
    assert_eq!(status_of(&m, "1.1/AC2"), "missing");
}

#[test]
fn a_test_name_that_never_appears_is_kept_warned_and_stays_missing() {
    let p = setup();
    p.write("lib/add.test.js", TEST_FILE);
    verify_node(&p);
    let (code, _, err) = run(
        &p,
        &[
            "ac",
            "map",
            "1.1/AC1",
            "--test",
            "adds",
            "--test",
            "subtracts",
        ],
    );
    assert_eq!(code, 0);
    assert!(
        err.contains("test \"subtracts\" appears in no recorded verify output"),
        "{err}"
    );
    assert!(err.contains("1.1/AC1 stays uncovered"), "{err}");
    let store: Value = serde_json::from_str(&p.read("specs/demo/acceptance.json")).unwrap();
    assert_eq!(
        store["criteria"]["1.1/AC1"]["tests"],
        json!(["adds", "subtracts"])
    );
    let (_, m) = json_out(&p, &["ac", "status", "--json"]);
    assert_eq!(status_of(&m, "1.1/AC1"), "missing");
}

#[test]
fn output_of_an_unknown_runner_leaves_criteria_uncovered_and_names_the_runners() {
    let p = setup();
    let (code, _, err) = run(
        &p,
        &[
            "verify",
            "run",
            "--task",
            "1.1",
            "--command",
            "echo 'checked 3 files: ok'",
        ],
    );
    assert_eq!(code, 0);
    assert!(err.contains("runs no test runner"), "{err}");
    assert!(err.contains("go test -v"), "{err}");
    run(&p, &["ac", "map", "1.1/AC1", "--test", "adds"]);
    let (_, m) = json_out(&p, &["ac", "status", "--json"]);
    assert_eq!(status_of(&m, "1.1/AC1"), "missing");
    let why = m["rows"][0]["why"].as_str().unwrap();
    assert!(why.contains("matched no supported runner"), "{why}");
    assert!(why.contains("cargo test, cargo nextest, pytest"), "{why}");
}

#[test]
fn manual_confirmation_needs_a_reason_and_is_shown_as_manual() {
    let p = setup();
    let (code, _, err) = run(&p, &["ac", "confirm", "1.2/AC1", "--reason", "ok"]);
    assert_eq!(code, 2);
    assert!(err.contains("10 characters"), "{err}");
    let (code, out, _) = run(
        &p,
        &[
            "ac",
            "confirm",
            "1.2/AC1",
            "--reason",
            "read the README section by hand",
        ],
    );
    assert_eq!(code, 0);
    assert!(
        out.contains("confirmed by hand (manual, not a test)"),
        "{out}"
    );
    let (_, m) = json_out(&p, &["ac", "status", "--json"]);
    assert_eq!(status_of(&m, "1.2/AC1"), "manual");
    let (_, out, _) = run(&p, &["ac", "status"]);
    assert!(
        out.contains("MANUAL (no test): read the README section by hand"),
        "{out}"
    );
    assert!(events(&p)
        .iter()
        .any(|e| e["event"] == "ac-confirm" && e["manual"] == true));
}

#[test]
fn rewording_a_criterion_asks_for_a_new_mapping() {
    let p = setup();
    run(
        &p,
        &[
            "ac",
            "confirm",
            "1.2/AC1",
            "--reason",
            "read the README section by hand",
        ],
    );
    p.write(
        &format!("specs/{SPEC}/tasks.md"),
        &TASKS.replace("explains the adder", "explains nothing"),
    );
    let (_, m) = json_out(&p, &["ac", "status", "--json"]);
    assert_eq!(status_of(&m, "1.2/AC1"), "changed");
}

/// Start 1.1, write its test, verify, record both critiques after the run.
fn task_1_1_ready(p: &TempProject) {
    run(p, &["task", "start", "1.1"]);
    p.write("lib/add.test.js", TEST_FILE);
    let (code, _, err) = verify_node(p);
    assert_eq!(code, 0, "{err}");
    task_helpers::critique(p, "1.1", "post-code", "2099-01-01T00:00:00Z");
    task_helpers::critique(p, "1.1", "post-test", "2099-01-01T00:00:01Z");
}

#[test]
fn task_complete_refuses_until_every_criterion_of_the_task_is_covered() {
    let p = setup();
    task_1_1_ready(&p);
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("acceptance-criteria: 1.1/AC1 (adding two numbers works) is unmapped"),
        "{out}"
    );
    assert!(
        out.contains("specrun ac map 1.1/AC1 --test '<test name>'"),
        "{out}"
    );
    assert!(out.contains("1.1/AC2"), "{out}");
    assert!(!p.read("specs/demo/tasks.md").contains("- [x] 1.1"));
    run(&p, &["ac", "map", "1.1/AC1", "--test", "adds"]);
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 1);
    assert!(!out.contains("1.1/AC1"), "{out}");
    run(&p, &["ac", "map", "1.1/AC2", "--test", "rejects strings"]);
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(p.read("specs/demo/tasks.md").contains("- [x] 1.1"));
}

#[test]
fn a_task_without_done_when_and_an_execution_started_before_keep_todays_behaviour() {
    let p = setup();
    run(&p, &["task", "start", "1.1"]);
    let mut st = p.state(SPEC);
    st.as_object_mut().unwrap().remove("acceptanceGate");
    std::fs::write(
        task_helpers::state_path(&p),
        serde_json::to_vec_pretty(&st).unwrap(),
    )
    .unwrap();
    p.write("lib/add.test.js", TEST_FILE);
    verify_node(&p);
    task_helpers::critique(&p, "1.1", "post-code", "2099-01-01T00:00:00Z");
    task_helpers::critique(&p, "1.1", "post-test", "2099-01-01T00:00:01Z");
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(
        code, 0,
        "an execution without acceptanceGate is not gated: {out}"
    );
    let (_, out, _) = run(&p, &["ac", "status"]);
    assert!(out.contains("not enforced for this execution"), "{out}");

    // 1.3 has no Done when: nothing to map, under the gate too.
    let q = project(
        TASKS
            .replace("- [ ] 1.1", "- [x] 1.1")
            .replace("- [ ] 1.2", "- [x] 1.2")
            .as_str(),
        &[],
    );
    run(&q, &["task", "start", "1.3"]);
    q.write("notes.txt", "n\n");
    task_helpers::ready_to_complete(&q, "1.3");
    let (code, out, _) = run(&q, &["task", "complete", "1.3", "--check"]);
    assert_eq!(code, 0, "{out}");
}

// ---- integrity ------------------------------------------------------------------------

const TWO_TESTS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('adds', () => {\n  assert.strictEqual(1 + 1, 2);\n});\n\ntest('subtracts', () => {\n  assert.strictEqual(2 - 1, 1);\n});\n";

fn integrity_project() -> TempProject {
    let p = project(
        &TASKS.replace(
            "    - adding two numbers works\n    - the adder rejects strings\n",
            "    - adding two numbers works\n",
        ),
        &["--no-red-green"],
    );
    p.write("lib/add.test.js", TWO_TESTS);
    p.commit_all("tests");
    p
}

#[test]
fn deleting_a_test_is_refused_naming_file_and_line_until_justified() {
    let p = integrity_project();
    run(&p, &["task", "start", "1.1"]);
    // The failing test is deleted and the change committed; a skip is added uncommitted.
    let only_adds = TWO_TESTS
        .split("\ntest('subtracts'")
        .next()
        .unwrap()
        .to_string()
        + "\n";
    p.write("lib/add.test.js", &only_adds);
    p.commit_all("drop a test");
    p.write(
        "lib/add.test.js",
        &only_adds.replace("test('adds'", "test.skip('adds'"),
    );
    verify_node(&p);
    run(&p, &["ac", "map", "1.1/AC1", "--test", "adds"]);
    task_helpers::critique(&p, "1.1", "post-code", "2099-01-01T00:00:00Z");
    task_helpers::critique(&p, "1.1", "post-test", "2099-01-01T00:00:01Z");
    let (code, v) = json_out(&p, &["task", "complete", "1.1", "--check", "--json"]);
    assert_eq!(code, 1, "{v}");
    let unmet: Vec<String> = v["unmet"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            format!(
                "{}: {}",
                u["name"].as_str().unwrap(),
                u["detail"].as_str().unwrap()
            )
        })
        .collect();
    let removed = unmet
        .iter()
        .find(|u| u.contains("removed-test"))
        .unwrap_or_else(|| panic!("{unmet:#?}"));
    assert!(removed.starts_with("test-integrity: F"), "{removed}");
    assert!(
        removed.contains("at lib/add.test.js:8: test `subtracts` was removed"),
        "{removed}"
    );
    let skip = unmet
        .iter()
        .find(|u| u.contains("skip-marker"))
        .unwrap_or_else(|| panic!("{unmet:#?}"));
    assert!(skip.contains("lib/add.test.js:4"), "{skip}");
    // The skipped test no longer passes: the criterion is not covered either.
    assert!(
        unmet
            .iter()
            .any(|u| u.starts_with("acceptance-criteria: 1.1/AC1")),
        "{unmet:#?}"
    );

    // A finding id that is not one: an error listing the real ones; nothing recorded.
    let (code, _, err) = run(
        &p,
        &[
            "task",
            "justify",
            "1.1",
            "--finding",
            "F00000000",
            "--reason",
            "it was obsolete anyway",
        ],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("not a finding of task 1.1's change") && err.contains("removed-test"),
        "{err}"
    );
    let store: Value = serde_json::from_str(&p.read("specs/demo/acceptance.json")).unwrap();
    assert_eq!(store["justifications"], json!({}));

    let fid = |u: &str| {
        u["test-integrity: ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .to_string()
    };
    let (removed_id, skip_id) = (fid(removed), fid(skip));
    let (code, out, err) =
        task_helpers::justify(&p, "1.1", &removed_id, "subtraction moved to task 2.1");
    assert_eq!(code, 0, "{out}{err}");
    assert!(p.read("specs/demo/.progress.md").contains(&format!(
        "- task 1.1: {removed_id} removed-test lib/add.test.js:8"
    )));
    assert!(events(&p)
        .iter()
        .any(|e| e["event"] == "task-justify" && e["finding"] == removed_id.as_str()));
    // Undo the skip instead of justifying it, re-verify: completes.
    p.write("lib/add.test.js", &only_adds);
    verify_node(&p);
    task_helpers::critique(&p, "1.1", "post-test", "2099-01-01T00:00:02Z");
    let (code, out, _) = run(&p, &["task", "complete", "1.1", "--check"]);
    assert_eq!(code, 0, "{out}");
    let _ = skip_id;
}

#[test]
fn binary_and_huge_files_in_the_change_are_reported_not_lost() {
    let p = integrity_project();
    p.write("lib/add.test.js", "");
    std::fs::write(p.path("lib/add.test.js"), TWO_TESTS).unwrap();
    run(&p, &["task", "start", "1.1"]);
    std::fs::write(p.path("img.bin"), [0u8, 1, 2, 0, 255, 0]).unwrap();
    let huge: String = (0..25_000).map(|i| format!("// line {i}\n")).collect();
    p.write("src/huge.rs", &huge);
    p.commit_all("big");
    let (code, v) = json_out(&p, &["task", "complete", "1.1", "--json"]);
    assert_eq!(code, 1);
    let text = v.to_string();
    assert!(
        text.contains("unscanned at src/huge.rs:1: too large to scan"),
        "{text}"
    );
    assert!(
        !text.contains("img.bin"),
        "binary files are not judged: {text}"
    );
    assert!(p.path("img.bin").exists() && p.read("src/huge.rs").len() == huge.len());
}

// ---- the final completion gate --------------------------------------------------------

#[test]
fn last_mile_and_the_stop_hook_refuse_completion_while_a_criterion_is_uncovered() {
    let tasks = "# Tasks\n**Final check**: `node --test`\n- [x] 1.1 Adder\n  - **Done when**: adding works\n";
    let p = project(tasks, &["--session-id", "sess-9"]);
    p.write("lib/add.test.js", TEST_FILE);
    p.commit_all("tests");
    run(
        &p,
        &[
            "verify",
            "run",
            "--phase",
            "execution",
            "--command",
            "node --test",
        ],
    );
    let (_, lm, _) = run(&p, &["last-mile"]);
    let lm: Value = serde_json::from_str(&lm).unwrap();
    assert_eq!(
        lm["blockingGates"],
        json!(["verification-gap:criterion-1.1/AC1"]),
        "{lm}"
    );
    let stdin = json!({"session_id": "sess-9", "cwd": p.root(), "hook_event_name": "Stop",
        "stop_hook_active": false, "last_assistant_message": "ALL_TASKS_COMPLETE"});
    let out = p
        .specrun()
        .args(["hook", "stop"])
        .write_stdin(stdin.to_string())
        .output()
        .unwrap();
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reply["decision"], "block", "{reply}");
    assert!(
        reply["reason"]
            .as_str()
            .unwrap()
            .contains("acceptance criterion 1.1/AC1 (adding works) is unmapped"),
        "{reply}"
    );
    run(&p, &["ac", "map", "1.1/AC1", "--test", "adds"]);
    let (_, lm, _) = run(&p, &["last-mile"]);
    assert!(!lm.contains("criterion-"), "{lm}");
    let out = p
        .specrun()
        .args(["hook", "stop"])
        .write_stdin(stdin.to_string())
        .output()
        .unwrap();
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(reply.get("decision").is_none(), "{reply}");
    assert_eq!(p.state(SPEC)["phase"], "completed");
}

// ---- claims against evidence at SubagentStop ------------------------------------------

fn executor_stop(p: &TempProject, message: &str, active: bool) -> Value {
    let stdin = json!({"session_id": "sess-9", "cwd": p.root(), "hook_event_name": "SubagentStop",
        "agent_type": "specrun:spec-executor", "agent_id": "a1", "stop_hook_active": active,
        "last_assistant_message": message});
    let out = p
        .specrun()
        .args(["hook", "subagent-stop"])
        .write_stdin(stdin.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    if out.stdout.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn an_executor_claim_without_evidence_is_quoted_back_once_then_kept_for_the_coordinator() {
    let p = project(TASKS, &["--session-id", "sess-9"]);
    p.write("lib/add.test.js", TEST_FILE);
    let (code, _, err) = run(
        &p,
        &[
            "verify",
            "run",
            "--phase",
            "tests",
            "--command",
            "node --test",
        ],
    );
    assert_eq!(code, 0, "{err}");
    // Supported claims pass silently; no claim at all is not judged.
    assert_eq!(
        executor_stop(&p, "Wrote the adder. 2 tests passed.", false),
        Value::Null
    );
    assert_eq!(executor_stop(&p, "Wrote the adder.", false), Value::Null);
    // A count the run did not report, and a lint run that never happened.
    let r = executor_stop(&p, "Done: 40 tests passed\nclippy is clean", false);
    assert_eq!(r["decision"], "block", "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(
        reason.contains("claim \"Done: 40 tests passed\""),
        "{reason}"
    );
    assert!(
        reason.contains("verificationBlocks.tests: 2 passed, 0 failed"),
        "{reason}"
    );
    assert!(
        reason.contains("claim \"clippy is clean\" has no evidence"),
        "{reason}"
    );
    assert!(reason.contains("no passing clippy run"), "{reason}");
    assert!(p.state(SPEC).get("unverifiedClaims").is_none());
    // Re-prompted once already: allowed, and kept in state and shown in status.
    let r = executor_stop(&p, "Done: 40 tests passed\nclippy is clean", true);
    assert!(
        r["systemMessage"].as_str().unwrap().contains("2 claim(s)"),
        "{r}"
    );
    let kept = &p.state(SPEC)["unverifiedClaims"][0];
    assert_eq!(kept["claims"][1]["quote"], "clippy is clean", "{kept}");
    let (_, out, _) = run(&p, &["status"]);
    assert!(
        out.contains("UNVERIFIED 1 executor claim(s) without evidence"),
        "{out}"
    );
    // Claims made with TASK_COMPLETE are part of the claim's missing items.
    let r = executor_stop(
        &p,
        "All tests pass and it type-checks.\nTASK_COMPLETE 1.1",
        false,
    );
    let reason = r["reason"].as_str().unwrap();
    assert!(
        reason.contains("TASK_COMPLETE 1.1 not accepted"),
        "{reason}"
    );
    assert!(
        reason.contains("no passing type check is recorded"),
        "{reason}"
    );
    assert!(
        !reason.contains("no passing test run"),
        "the tests claim is supported: {reason}"
    );
    // The code changes: the same claim is no longer supported.
    p.write("lib/more.js", "1;\n");
    let r = executor_stop(&p, "2 tests passed.", false);
    assert_eq!(r["decision"], "block", "{r}");
}

// ---- the store under bad conditions ---------------------------------------------------

#[test]
fn a_corrupt_or_linked_store_is_an_error_and_is_never_overwritten() {
    let p = setup();
    p.write(
        "specs/demo/acceptance.json",
        "{\"version\": 1, \"criteria\": [",
    );
    let (code, _, err) = run(&p, &["ac", "map", "1.1/AC1", "--test", "adds"]);
    assert_eq!(code, 2);
    assert!(err.contains("acceptance.json"), "{err}");
    let (code, _, err) = run(&p, &["ac", "status"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        p.read("specs/demo/acceptance.json"),
        "{\"version\": 1, \"criteria\": ["
    );
    // A symbolic link in its place could carry the write elsewhere: refused.
    std::fs::remove_file(p.path("specs/demo/acceptance.json")).unwrap();
    p.write("elsewhere.json", "{\"version\": 1}");
    std::os::unix::fs::symlink(
        p.path("elsewhere.json"),
        p.path("specs/demo/acceptance.json"),
    )
    .unwrap();
    let (code, _, err) = run(
        &p,
        &[
            "ac",
            "confirm",
            "1.2/AC1",
            "--reason",
            "read the README by hand",
        ],
    );
    assert_eq!(code, 2);
    assert!(err.contains("link"), "{err}");
    assert_eq!(p.read("elsewhere.json"), "{\"version\": 1}");
}

#[test]
fn concurrent_maps_all_land() {
    let p = setup();
    let ids = ["1.1/AC1", "1.1/AC2", "1.2/AC1", "AC-1.1"];
    let children: Vec<_> = ids
        .iter()
        .map(|id| {
            std::process::Command::new(common::bin_path())
                .current_dir(p.root())
                .args(["ac", "map", id, "--test", "adds"])
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let store: Value = serde_json::from_str(&p.read("specs/demo/acceptance.json")).unwrap();
    for id in ids {
        assert_eq!(store["criteria"][id]["tests"], json!(["adds"]), "{store}");
    }
}
