//! Issue 2 acceptance: the one parser as the binary exposes it (`tasks count|list|next|
//! show|check`), `snapshot` facts and gates, `state init|merge|get`, and `status` at 80
//! columns with the exact resume command.

use predicates::prelude::*;
use serde_json::{json, Value};

use crate::common;
use crate::common::TempProject;

const STATE: &str = "specs/demo/.specrun-state.json";

fn stdout_json(cmd: &mut assert_cmd::Command) -> Value {
    let out = cmd.assert().success();
    serde_json::from_slice(&out.get_output().stdout).expect("stdout is JSON")
}

fn snapshot(p: &TempProject) -> Value {
    stdout_json(p.specrun().arg("snapshot"))
}

/// CRLF, a BOM, fenced blocks holding `- [ ] x` (2 unread lines), nested sub-checkboxes
/// (sub-tasks since issue 26): 6 tasks, the first unchecked sub-task next.
const TRICKY: &str = "\u{feff}# Tasks\r\n\r\n## Phase 1: Core\r\n- [x] 1.1 [P] First   \r\n  - [ ] sub-step, not a task\r\n    - [x] deeper, not a task\r\n  ```md\r\n- [ ] x\r\n  ```\r\n```\r\n- [ ] fenced at column 0\r\n```\r\n- [ ] 1.2 [VERIFY] Second\r\n\t- [ ] tab-indented, not a task\r\n- [X] 1.3 Third\r\n";

#[test]
fn tasks_count_counts_only_real_tasks() {
    let p = TempProject::git();
    p.write("tasks.md", TRICKY);
    p.specrun()
        .args(["tasks", "count", "tasks.md"])
        .assert()
        .success()
        .stdout("{\"total\":6,\"completed\":3,\"pending\":3,\"nextIndex\":1,\"unread\":2}\n")
        .stderr(predicate::str::contains(
            "look like tasks but are not read as tasks (line 8, 11)",
        ));
}

#[test]
fn tasks_count_of_empty_and_taskless_files() {
    let p = TempProject::git();
    p.write("empty.md", "");
    p.write("prose.md", "# Plan\n\nNothing yet.\n-[ ] no space\n");
    p.write("headings.md", "# Plan\n### Task 1.1: A\n### Task 1.2: B\n");
    p.specrun()
        .args(["tasks", "count", "empty.md"])
        .assert()
        .success()
        .stdout("{\"total\":0,\"completed\":0,\"pending\":0,\"nextIndex\":0,\"unread\":0}\n")
        .stderr("");
    // A file of headings or of malformed boxes never reads as "0 tasks, done" silently.
    for (file, unread) in [("prose.md", 1), ("headings.md", 2)] {
        p.specrun()
            .args(["tasks", "count", "--json", file])
            .assert()
            .success()
            .stdout(format!(
                "{{\"total\":0,\"completed\":0,\"pending\":0,\"nextIndex\":0,\"unread\":{unread}}}\n"
            ))
            .stderr(predicate::str::contains("look like tasks but are not read as tasks"))
            .stderr(predicate::str::contains(format!("specrun tasks lint {}", p.path(file).display())));
    }
}

#[test]
fn tasks_check_flips_one_byte_and_undo_restores_the_file() {
    let p = TempProject::git();
    let path = p.spec_as_written("demo", TRICKY);
    let original = std::fs::read(&path).unwrap();
    p.specrun()
        .args(["tasks", "check", "1.2"])
        .assert()
        .success()
        .stdout("1.2 Second: now [x]\n");
    let after = std::fs::read(&path).unwrap();
    assert_eq!(after.len(), original.len());
    let diffs: Vec<usize> = (0..after.len())
        .filter(|&i| after[i] != original[i])
        .collect();
    assert_eq!(diffs.len(), 1, "exactly one byte changes");
    assert_eq!((original[diffs[0]], after[diffs[0]]), (b' ', b'x'));
    // Ticking again changes nothing.
    p.specrun()
        .args(["tasks", "check", "1.2"])
        .assert()
        .success()
        .stdout("1.2 Second: already [x]\n");
    assert_eq!(std::fs::read(&path).unwrap(), after);
    p.specrun()
        .args(["tasks", "check", "1.2", "--undo"])
        .assert()
        .success();
    assert_eq!(std::fs::read(&path).unwrap(), original);
    // Unticking an uppercase [X] writes a space; everything else is kept.
    p.specrun()
        .args(["tasks", "check", "1.3", "--undo"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        TRICKY.replace("- [X] 1.3", "- [ ] 1.3")
    );
}

#[test]
fn tasks_check_refuses_unknown_and_duplicate_ids() {
    let p = TempProject::git();
    let text = "- [ ] 1 A\n- [ ] 2 B\n- [ ] 2 C\n";
    let path = p.spec_as_written("demo", text);
    p.specrun()
        .args(["tasks", "check", "9"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no task with id 9"));
    p.specrun()
        .args(["tasks", "check", "2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "appears more than once: line 2, line 3",
        ));
    assert_eq!(std::fs::read_to_string(path).unwrap(), text);
}

#[test]
fn tasks_list_next_show_read_the_same_parser() {
    let p = TempProject::git();
    p.spec(
        "demo",
        "**Final check**: `true`\n## Phase 1\n- [x] 1.1 Done\n- [ ] 1.2 [P] Left\n  - **Verify**: `cargo test left`\n  - **Files**: a.rs, b.rs\n- [ ] 1.3 [P] Right\n  - **Verify**: `true`\n- [ ] 1.4 [VERIFY] Check\n  - **Verify**: `true`\n",
    );
    p.specrun()
        .args(["tasks", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("[ ] 1.2 [P] Left\n"))
        .stdout(predicate::str::ends_with("1/4 done\n"));
    let next = stdout_json(p.specrun().args(["tasks", "next", "--json"]));
    assert_eq!(next["next"]["id"], "1.2");
    assert_eq!(next["parallelGroup"], json!(["1.2", "1.3"]));
    let shown = stdout_json(p.specrun().args(["tasks", "show", "1.2", "--json"]));
    assert_eq!(shown["verify"], "cargo test left");
    assert_eq!(shown["files"], json!(["a.rs", "b.rs"]));
    p.specrun()
        .args(["tasks", "show", "1.2"])
        .assert()
        .success()
        .stdout(predicate::str::contains("  Verify: cargo test left\n"));
    // Every task checked: `next` is a well-formed "no".
    p.spec("demo", "- [x] 1 A\n");
    p.specrun()
        .args(["tasks", "next"])
        .assert()
        .code(1)
        .stdout("all tasks are checked\n");
}

#[test]
fn snapshot_without_specs_is_inactive_and_exits_zero() {
    let p = TempProject::bare();
    let doc = snapshot(&p);
    assert_eq!(doc["active"], false);
    assert_eq!(doc["gates"], json!(["no-active-spec"]));
    assert_eq!(doc["spec"], Value::Null);
    assert_eq!(doc["git"]["available"], false);
    assert!(doc["nextAction"]
        .as_str()
        .unwrap()
        .contains("/specrun:start"));
    // A git repository with no specs/ is the same answer.
    let p = TempProject::git();
    let doc = snapshot(&p);
    assert_eq!(doc["active"], false);
    assert_eq!(doc["git"]["available"], true);
}

#[test]
fn snapshot_reports_every_listed_field() {
    let p = TempProject::git();
    p.spec(
        "demo",
        "## Phase 1\n- [x] 1.1 Done\n- [ ] 1.2 [P] Left\n  - **Verify**: `cargo test left`\n  - **Files**: a.rs\n  - **Depends**: 1.1\n- [ ] 1.3 [P] Right\n  - **Verify**: `true`\n",
    );
    p.write("specs/demo/research.md", "notes\n");
    p.specrun()
        .args(["state", "init", "--spec", "demo", "--session-id", "s1"])
        .assert()
        .success();
    let doc = snapshot(&p);
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let sorted = |names: &[&str]| {
        let mut k: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&doc),
        sorted(&[
            "version",
            "cwd",
            "projectRoot",
            "active",
            "spec",
            "state",
            "artifacts",
            "tasks",
            "git",
            "nextAction",
            "gates"
        ])
    );
    assert_eq!(keys(&doc["spec"]), sorted(&["name", "path", "statePath"]));
    assert_eq!(
        keys(&doc["state"]),
        sorted(&[
            "exists",
            "valid",
            "error",
            "phase",
            "completed",
            "halt",
            "taskIndex",
            "totalTasks",
            "taskIteration",
            "maxTaskIterations",
            "globalIteration",
            "maxGlobalIterations"
        ])
    );
    assert_eq!(
        keys(&doc["artifacts"]),
        sorted(&["research", "requirements", "design", "tasks", "progress"])
    );
    assert_eq!(
        doc["artifacts"]["research"],
        json!({"exists": true, "path": p.path("specs/demo/research.md").display().to_string(), "bytes": 6})
    );
    assert_eq!(doc["artifacts"]["design"]["exists"], false);
    assert_eq!(
        keys(&doc["tasks"]),
        sorted(&[
            "total",
            "completed",
            "pending",
            "nextIndex",
            "current",
            "parallelGroup"
        ])
    );
    assert_eq!(
        doc["tasks"]["current"],
        json!({"id": "1.2", "title": "Left", "markers": ["P"], "lineStart": 4, "lineEnd": 7,
               "verify": "cargo test left", "files": ["a.rs"], "depends": ["1.1"]})
    );
    assert_eq!(doc["tasks"]["parallelGroup"], json!(["1.2", "1.3"]));
    assert_eq!(
        keys(&doc["git"]),
        sorted(&["available", "branch", "head", "dirty", "changedFiles"])
    );
    assert_eq!(doc["git"]["branch"], "main");
    assert_eq!(doc["git"]["dirty"], true);
    assert_eq!(
        doc["git"]["head"].as_str().unwrap(),
        p.git_cmd(&["rev-parse", "HEAD"]).trim()
    );
    assert_eq!(doc["state"]["taskIndex"], 1);
    assert_eq!(doc["state"]["totalTasks"], 3);
    assert_eq!(doc["gates"], json!([]));
    assert_eq!(
        doc["nextAction"],
        "Delegate tasks 1.2, 1.3 in parallel (one Agent call each), then continue with the next task."
    );
}

/// (tasks.md, state file, `.current-spec` override, expected gates)
type GateCase = (
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    &'static [&'static str],
);

/// One spec per gate, each with the state that raises it.
#[test]
fn snapshot_gates_for_each_case() {
    let cases: &[GateCase] = &[
        (
            "- [ ] 1 A\n  - **Verify**: `true`\n",
            None,
            Some("gone"),
            &["missing-spec"],
        ),
        ("", None, None, &["empty-tasks"]),
        ("# Only prose\n", None, None, &["empty-tasks"]),
        (
            "- [ ] 1 A\n  - **Verify**: `true`\n",
            None,
            None,
            &["no-state"],
        ),
        (
            "- [ ] 1 A\n  - **Verify**: `true`\n",
            Some("{\"phase\":"),
            None,
            &["invalid-state"],
        ),
        (
            "- [ ] 1 A\n  - **Verify**: `true`\n",
            Some("{\"taskIndex\":\"x\"}"),
            None,
            &["invalid-state"],
        ),
        (
            "- [ ] 1 A\n  - **Verify**: `true`\n",
            Some(
                r#"{"phase":"execution","halt":{"kind":"stall","reason":"no progress","at":"t"}}"#,
            ),
            None,
            &["halted"],
        ),
        (
            "- [ ] 1 A\n  - **Verify**: `true`\n",
            Some(r#"{"phase":"cancelled"}"#),
            None,
            &["cancelled"],
        ),
        (
            "- [x] 1 A\n",
            Some(r#"{"phase":"completed","completed":true}"#),
            None,
            &["completed"],
        ),
        (
            "- [x] 1 A\n",
            Some(r#"{"phase":"execution","completed":false,"checkedAtInit":["1"]}"#),
            None,
            &["completion-unmarked"],
        ),
        // Ticked during the execution without `task complete`: not ready to complete.
        (
            "- [x] 1 A\n",
            Some(r#"{"phase":"execution","completed":false,"checkedAtInit":[]}"#),
            None,
            &["completion-unearned"],
        ),
        (
            "- [ ] 1 A\n  - **Verify**: `true`\n",
            Some(r#"{"phase":"planning"}"#),
            None,
            &["not-executing"],
        ),
        (
            "- [ ] 1 A\n  - **Verify**: `true`\n",
            Some(r#"{"phase":"execution","awaitingApproval":true}"#),
            None,
            &["awaiting-approval"],
        ),
        (
            "- [ ] 1 A\n- [ ] 1 B\n",
            Some(r#"{"phase":"execution"}"#),
            None,
            &["duplicate-task-ids"],
        ),
        (
            "- [ ] 1 A\n  - **Verify**: `true`\n",
            Some(r#"{"phase":"execution"}"#),
            None,
            &[],
        ),
    ];
    for (tasks, state, current, gates) in cases {
        let p = TempProject::git();
        p.spec("demo", tasks);
        if let Some(state) = state {
            p.write(STATE, state);
        }
        if let Some(name) = current {
            p.write("specs/.current-spec", &format!("{name}\n"));
        }
        let doc = snapshot(&p);
        // A .current-spec naming no directory is not an active spec.
        let active = gates != &["missing-spec"];
        assert_eq!(doc["active"], active, "{tasks:?} {state:?}");
        assert_eq!(
            doc["gates"],
            json!(gates),
            "tasks {tasks:?}, state {state:?}"
        );
        assert!(!doc["nextAction"].as_str().unwrap().is_empty());
    }
    // missing-tasks: a spec directory without tasks.md.
    let p = TempProject::git();
    p.write("specs/.current-spec", "demo\n");
    p.write("specs/demo/requirements.md", "r\n");
    assert_eq!(snapshot(&p)["gates"], json!(["missing-tasks"]));
    // halted names the exact resume command.
    let p = TempProject::git();
    p.spec("demo", "- [ ] 1 A\n  - **Verify**: `true`\n");
    p.write(
        STATE,
        r#"{"phase":"execution","maxTaskIterations":5,"halt":{"kind":"task-cap","reason":"5 of 5","at":"t"}}"#,
    );
    let action = snapshot(&p)["nextAction"].as_str().unwrap().to_string();
    assert!(
        action.contains("`specrun resume --spec demo --raise-task 10`"),
        "{action}"
    );
}

#[test]
fn snapshot_writes_nothing() {
    let p = TempProject::git();
    p.spec("demo", "- [ ] 1 A\n  - **Verify**: `true`\n");
    p.commit_all("spec");
    snapshot(&p);
    assert_eq!(p.git_cmd(&["status", "--porcelain", "--ignored"]), "");
}

#[test]
fn state_init_writes_execution_fields_and_keeps_the_rest() {
    let p = TempProject::git();
    p.spec(
        "demo",
        "- [x] 1 A\n- [ ] 2 B\n  - **Verify**: `true`\n- [ ] 3 C\n  - **Verify**: `true`\n",
    );
    p.write(
        STATE,
        r#"{"name":"demo","phase":"planning","custom":{"x":1},"globalIteration":9,"usage":{"outputTokens":5,"transcriptOffset":77}}"#,
    );
    p.specrun()
        .args([
            "state",
            "init",
            "--spec",
            "demo",
            "--max-task-iterations",
            "7",
            "--max-global-iterations",
            "40",
            "--max-output-tokens",
            "100000",
            "--max-minutes",
            "90",
            "--session-id",
            "sess-1",
            "--quick",
            "--recovery-mode",
            "--driver",
            "stop-hook",
        ])
        .assert()
        .success();
    let s = p.state("demo");
    assert_eq!(s["custom"], json!({"x": 1}));
    assert_eq!(s["version"], 1);
    assert_eq!(s["phase"], "execution");
    assert_eq!(
        (s["taskIndex"].clone(), s["totalTasks"].clone()),
        (json!(1), json!(3))
    );
    assert_eq!(s["taskIteration"], 0);
    assert_eq!(s["globalIteration"], 0);
    assert_eq!(s["maxTaskIterations"], 7);
    assert_eq!(s["maxGlobalIterations"], 40);
    assert_eq!(s["budget"]["maxOutputTokens"], 100000);
    assert_eq!(s["budget"]["maxMinutes"], 90);
    assert_eq!(s["sessionId"], "sess-1");
    assert_eq!(s["quickMode"], true);
    assert_eq!(s["recoveryMode"], true);
    assert_eq!(s["executionDriver"], "stop-hook");
    // No hook gave the session's transcript: the first Stop reads it from its start.
    assert_eq!(
        s["usage"],
        json!({"outputTokens": 0, "inputTokens": 0, "transcriptOffset": 0})
    );
    assert!(s["startedAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(s["halt"], Value::Null);
}

#[test]
fn state_merge_recurses_replaces_and_unsets() {
    let p = TempProject::git();
    p.spec("demo", "- [ ] 1 A\n  - **Verify**: `true`\n");
    p.write(
        STATE,
        r#"{"a":{"b":1,"c":[1,2]},"taskEvidence":{"1.2":{"exitCode":0}},"keep":true}"#,
    );
    p.specrun()
        .args(["state", "merge", STATE, "-"])
        .write_stdin(r#"{"a":{"c":[3],"d":{"e":true}},"$unset":["taskEvidence.1.2","a.b"]}"#)
        .assert()
        .success()
        .stdout("");
    assert_eq!(
        p.state("demo"),
        json!({"a": {"c": [3], "d": {"e": true}}, "taskEvidence": {}, "keep": true})
    );
    p.specrun()
        .args(["state", "get", STATE, "a.d.e"])
        .assert()
        .success()
        .stdout("true\n");
    // A file that does not exist yet (in an existing directory) is created.
    p.specrun()
        .args(["state", "merge", "specs/demo/new.json", r#"{"x":1}"#])
        .assert()
        .success();
    assert_eq!(
        common::assert_json_file(&p.path("specs/demo/new.json")),
        json!({"x": 1})
    );
}

fn status_lines(p: &TempProject) -> Vec<String> {
    let out = p.specrun().arg("status").assert().success();
    String::from_utf8(out.get_output().stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn status_fits_80_columns_and_shows_the_exact_resume_command() {
    let p = TempProject::git();
    let long_title = "Implement the extremely thorough and long-winded migration of every legacy configuration loader to the new layered format";
    p.spec(
        "checkout-flow",
        &format!("## Phase 1\n- [x] 1.1 Setup\n- [ ] 1.2 {long_title}\n  - **Verify**: `true`\n- [ ] 1.3 More\n  - **Verify**: `true`\n"),
    );
    p.specrun()
        .args([
            "state",
            "init",
            "--spec",
            "checkout-flow",
            "--max-global-iterations",
            "30",
            "--max-output-tokens",
            "500000",
        ])
        .assert()
        .success();
    let state = "specs/checkout-flow/.specrun-state.json";
    let patch = json!({
        "globalIteration": 30,
        "halt": {"kind": "global-cap", "reason": "30 of 30 stops used without finishing; raise the cap to continue", "at": "2026-01-01T00:00:00Z"},
        "verificationBlocks": {"execution": {"command": "cargo test --workspace --all-features -- --include-ignored --test-threads 1", "exitCode": 1, "startedAt": "2026-01-01T00:00:00Z"}}
    });
    p.specrun()
        .args(["state", "merge", state, &patch.to_string()])
        .assert()
        .success();
    let lines = status_lines(&p);
    for line in &lines {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line:?}",
            line.chars().count()
        );
    }
    let text = lines.join("\n");
    assert!(text.contains("checkout-flow"), "{text}");
    assert!(text.contains("1/3"), "{text}");
    assert!(text.contains("global 30/30"), "{text}");
    assert!(text.contains("HALTED"), "{text}");
    assert!(text.contains("evidence  exit 1"), "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l.trim() == "specrun resume --spec checkout-flow --raise-global 60"),
        "the resume command on a line of its own:\n{text}"
    );
    // --json carries the same command.
    let doc = stdout_json(p.specrun().args(["status", "--json"]));
    assert_eq!(
        doc["resumeCommand"],
        "specrun resume --spec checkout-flow --raise-global 60"
    );
    assert_eq!(doc["lastEvidence"]["exitCode"], 1);
}

#[test]
fn status_without_a_spec_says_so() {
    let p = TempProject::bare();
    let lines = status_lines(&p);
    assert_eq!(lines[0], "specrun: no active spec");
    assert!(lines.iter().all(|l| l.chars().count() <= 80));
}

/// Issue 26: `tasks lint` names each line with its fix; exit 0 clean (warnings allowed),
/// 1 with an error, 2 for a file it cannot read.
#[test]
fn tasks_lint_names_lines_and_exits_by_severity() {
    let p = TempProject::git();
    p.write(
        "clean.md",
        "- [ ] 1 A\n  - **Verify**: `true`\n  - **Notes**: a note\n- [ ] 2 Docs\n  - **No verify**: prose, read by a person\n",
    );
    let out = p
        .specrun()
        .args(["tasks", "lint", "clean.md"])
        .assert()
        .code(0);
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.contains("clean.md:3: warning: `**Notes**` is not a field"),
        "{text}"
    );
    assert!(
        text.ends_with("clean.md: 0 error(s), 1 warning(s)\n"),
        "{text}"
    );

    p.write(
        "bad.md",
        "- [ ] 1 A\n  - **Verfiy**: `true`\n- [] 2 B\n```\n- [ ] 3 C\n",
    );
    let out = p
        .specrun()
        .args(["tasks", "lint", "--json", "bad.md"])
        .assert()
        .code(1);
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let found: Vec<(u64, &str, &str)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["line"].as_u64().unwrap(),
                f["code"].as_str().unwrap(),
                f["severity"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (1, "missing-verify", "error"),
            (2, "misspelled-field", "error"),
            (3, "malformed-box", "error"),
            (4, "unclosed-fence", "error"),
            (5, "unread-checkbox", "warning"),
        ]
    );
    assert_eq!(
        (v["errors"].as_u64(), v["warnings"].as_u64()),
        (Some(4), Some(1))
    );
    assert_eq!(v["findings"][1]["fix"], "write `**Verify**`");
    p.specrun()
        .args(["tasks", "lint", "missing.md"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.md"));
}

/// Issue 26: `state init` refuses (exit 1) a plan the format misreads, naming the line and
/// the fix, and writes no state; so it does a task without Verify, unless the task says
/// why (`**No verify**: reason`).
#[test]
fn state_init_refuses_a_misread_plan_and_a_task_without_verify() {
    for (plan, said) in [
        (
            "- [ ] 1 A\n  - **Verify**: `t`\n```\n- [ ] 2 B\n",
            "line 3: this code fence is never closed",
        ),
        (
            "- [ ] 1 A\n  - **Verfiy**: `t`\n",
            "line 2: `**Verfiy**` is not a field",
        ),
        ("# Plan\n\nnothing yet\n", "line 1: no task"),
        ("### Task 1.1: A\n", "line 1: a task written as a heading"),
        (
            "- [ ] 1 A\n- [ ] 2 B\n  - **Verify**: `true`\n- [ ] 3 C\n  - **Do**: it\n- [x] 4 D\n",
            "2 task(s) have no **Verify**, so nothing can show them done: 1 (line 1), 3 (line 4); add a line `  - **Verify**: <the command that shows it done, in backticks>` under each, or `  - **No verify**: <why no command can check it>`",
        ),
    ] {
        let p = TempProject::git();
        p.spec_as_written("demo", plan);
        p.specrun()
            .args(["state", "init", "--spec", "demo"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("state init refused"))
            .stderr(predicate::str::contains(said))
            .stderr(predicate::str::contains("`specrun tasks lint --spec demo`"));
        assert!(!p.path(STATE).exists(), "{plan:?}");
    }
    let p = TempProject::git();
    p.spec(
        "demo",
        "- [ ] 1 A\n  - **No verify**: prose, read by a person\n- [ ] 2 B\n  - **Verify**: `true`\n",
    );
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .success()
        .stderr(predicate::str::contains("Verify").not());
    assert!(p.path(STATE).exists());
}
