//! `specrun last-mile` on real temp git repositories: every rule triggered by the facts it
//! names, the capability plan, and `--record`.

use serde_json::{json, Value};

use crate::common::{self, TempProject};

const TASKS: &str = "# Tasks\n## Phase 1\n- [x] 1.1 Scaffold\n  - **Files**: src/lib.rs\n  - **Verify**: `true`\n  - **Done when**: it builds\n- [ ] 1.2 Parser\n  - **Files**: src/a.rs, docs/\n  - **Verify**: `sh -c true`\n  - **Done when**: parses\n";

fn project(tasks: &str) -> TempProject {
    let p = TempProject::git();
    p.spec("demo", tasks);
    p.write("src/lib.rs", "// lib\n");
    p.write("src/a.rs", "// a\n");
    p.commit_all("plan");
    p.init_state("demo");
    p
}

fn merge(p: &TempProject, patch: Value) {
    p.specrun()
        .args([
            "state",
            "merge",
            "specs/demo/.specrun-state.json",
            &patch.to_string(),
        ])
        .assert()
        .success();
}

/// Evidence for task 1.1 so the verification-gap rule stays quiet unless a test wants it.
fn evidence_for_first(p: &TempProject) {
    merge(
        p,
        json!({"taskEvidence": {"1.1": {"command": "true", "exitCode": 0, "tree": "recorded"}},
               "attempts": {"1.2": [{"n": 1, "startedAt": "2026-01-01T00:00:00Z", "status": "running"}]}}),
    );
}

fn last_mile(p: &TempProject, extra: &[&str]) -> Value {
    let out = p.specrun().arg("last-mile").args(extra).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn problem<'a>(v: &'a Value, kind: &str) -> Option<&'a Value> {
    v["problemTypes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == kind)
}

fn evidence(v: &Value, kind: &str) -> String {
    problem(v, kind).unwrap_or_else(|| panic!("no {kind} in {v:#}"))["evidence"].to_string()
}

#[test]
fn a_clean_execution_has_every_field_and_no_problem() {
    let p = project(TASKS);
    evidence_for_first(&p);
    let v = last_mile(&p, &[]);
    for key in [
        "phase",
        "problemTypes",
        "capabilityPlan",
        "evidenceRequired",
        "blockingGates",
        "coordinatorInstruction",
    ] {
        assert!(v.get(key).is_some(), "{key} missing");
    }
    assert_eq!(v["phase"], "implementing");
    assert_eq!(v["problemTypes"], json!([]), "{v:#}");
    assert_eq!(v["blockingGates"], json!([]));
    assert_eq!(
        v["coordinatorInstruction"],
        "Delegate task 1.2 (Parser) to specrun:spec-executor."
    );
}

#[test]
fn missing_context_when_the_spec_or_tasks_are_absent() {
    let p = TempProject::git();
    let v = last_mile(&p, &[]);
    assert_eq!(v["phase"], "planning");
    assert!(evidence(&v, "missing-context").contains("no active spec"));
    p.write("specs/.current-spec", "demo\n");
    p.write("specs/demo/requirements.md", "# r\n");
    let v = last_mile(&p, &[]);
    assert!(evidence(&v, "missing-context").contains("tasks.md does not exist"));
    assert!(v["coordinatorInstruction"]
        .as_str()
        .unwrap()
        .contains("/specrun:start demo"));
}

#[test]
fn missing_dependency_names_the_verify_program() {
    let p = project(&TASKS.replace("`sh -c true`", "`specrun-no-such-tool --check`"));
    evidence_for_first(&p);
    let v = last_mile(&p, &[]);
    assert!(evidence(&v, "missing-dependency").contains("`specrun-no-such-tool` is not on PATH"));
    assert!(v["blockingGates"]
        .to_string()
        .contains("missing-dependency:specrun-no-such-tool"));
}

#[test]
fn repeated_failure_after_two_failed_attempts() {
    let p = project(TASKS);
    evidence_for_first(&p);
    merge(
        &p,
        json!({"attempts": {"1.2": [
            {"n": 1, "startedAt": "a", "status": "failed", "reason": "parse error on empty input"},
            {"n": 2, "startedAt": "b", "status": "failed", "reason": "same error"}]}}),
    );
    let v = last_mile(&p, &[]);
    assert_eq!(v["phase"], "recovering");
    let e = evidence(&v, "repeated-failure");
    assert!(e.contains("task 1.2 failed 2 times"), "{e}");
    assert!(e.contains("parse error on empty input"), "{e}");
}

#[test]
fn scope_drift_from_uncommitted_and_committed_changes() {
    let p = project(TASKS);
    evidence_for_first(&p);
    let head = p.git_cmd(&["rev-parse", "HEAD"]).trim().to_string();
    merge(
        &p,
        json!({"attempts": {"1.2": [{"n": 1, "startedAt": "a", "status": "running", "startCommit": head}]}}),
    );
    p.write("src/a.rs", "// a changed: in scope\n");
    p.write("docs/parser.md", "in scope (docs/)\n");
    p.write("src/unrelated.rs", "// out of scope\n");
    let v = last_mile(&p, &[]);
    let e = evidence(&v, "scope-drift");
    assert!(e.contains("src/unrelated.rs changed"), "{e}");
    assert!(!e.contains("src/a.rs"), "{e}");
    assert!(!e.contains("docs/parser.md"), "{e}");
    assert!(!e.contains("specs/"), "bookkeeping is not drift: {e}");
    // A commit made during the attempt still counts.
    std::fs::remove_file(p.path("src/unrelated.rs")).unwrap();
    p.write("src/committed.rs", "// committed out of scope\n");
    p.commit_all("sneak");
    let v = last_mile(&p, &[]);
    assert!(evidence(&v, "scope-drift").contains("src/committed.rs"));
}

#[test]
fn verification_gap_for_checked_tasks_without_evidence() {
    let p = project(TASKS);
    let v = last_mile(&p, &[]);
    assert!(evidence(&v, "verification-gap").contains("task 1.1 is checked but has no evidence"));
    merge(
        &p,
        json!({"taskEvidence": {"1.1": {"command": "true", "exitCode": 2, "tree": "x"}}}),
    );
    let v = last_mile(&p, &[]);
    assert!(evidence(&v, "verification-gap").contains("exit 2"));
    assert!(v["blockingGates"]
        .to_string()
        .contains("verification-gap:1.1"));
}

#[test]
fn every_task_checked_without_execution_evidence_is_verifying() {
    let p = project(&TASKS.replace("- [ ] 1.2", "- [x] 1.2"));
    merge(
        &p,
        json!({"taskEvidence": {"1.1": {"exitCode": 0, "tree": "a"}, "1.2": {"exitCode": 0, "tree": "b"}}}),
    );
    let v = last_mile(&p, &[]);
    assert_eq!(v["phase"], "verifying");
    assert!(evidence(&v, "verification-gap").contains("verificationBlocks.execution is missing"));
    assert!(v["coordinatorInstruction"]
        .as_str()
        .unwrap()
        .contains("--phase execution"));
}

/// Regression: with every task checked and fresh execution evidence, last-mile told the
/// coordinator to claim ALL_TASKS_COMPLETE although the guard refuses it while a
/// VERIFY/high follow-up is open.
#[test]
fn an_open_blocking_followup_keeps_the_spec_verifying() {
    let p = project(&TASKS.replace("- [ ] 1.2", "- [x] 1.2"));
    p.specrun()
        .args(["verify", "run", "--spec", "demo", "--command", "true"])
        .assert()
        .success();
    // The tasks' criteria are covered by hand, so only the follow-up can hold completion.
    for id in ["1.1/AC1", "1.2/AC1"] {
        p.specrun()
            .args([
                "ac",
                "confirm",
                id,
                "--reason",
                "checked by reading the code",
                "--spec",
                "demo",
            ])
            .assert()
            .success();
    }
    p.commit_all("criteria");
    assert_eq!(last_mile(&p, &[])["phase"], "releasing");
    p.specrun()
        .args([
            "followup",
            "add",
            "--category",
            "VERIFY",
            "--priority",
            "high",
            "--title",
            "re-run the load test",
        ])
        .assert()
        .success();
    let v = last_mile(&p, &[]);
    assert_eq!(v["phase"], "verifying", "{v}");
    assert_eq!(v["blockingGates"][0], "verification-gap:followup-F1", "{v}");
    assert!(evidence(&v, "verification-gap")
        .contains("follow-up F1 (VERIFY, high) is open: re-run the load test"));
    assert!(v["coordinatorInstruction"]
        .as_str()
        .unwrap()
        .contains("specrun followup resolve F1"));
    p.specrun()
        .args(["followup", "resolve", "F1", "--note", "done"])
        .assert()
        .success();
    assert_eq!(last_mile(&p, &[])["phase"], "releasing");
}

#[test]
fn release_risk_dirty_tree_and_unpushed_commits_at_completion() {
    let p = project(&TASKS.replace("- [ ] 1.2", "- [x] 1.2"));
    merge(&p, json!({"phase": "completed", "completed": true}));
    let remote = tempfile::tempdir().unwrap();
    p.git_cmd(&["init", "-q", "--bare", remote.path().to_str().unwrap()]);
    p.git_cmd(&["remote", "add", "origin", remote.path().to_str().unwrap()]);
    p.git_cmd(&["push", "-q", "origin", "main"]);
    let v = last_mile(&p, &[]);
    assert!(
        problem(&v, "release-risk").is_none(),
        "pushed and clean: {v:#}"
    );
    assert_eq!(v["phase"], "completed");
    p.write("src/late.rs", "// not committed\n");
    let v = last_mile(&p, &[]);
    assert_eq!(v["phase"], "releasing");
    assert!(evidence(&v, "release-risk").contains("uncommitted changes: src/late.rs"));
    p.commit_all("late");
    let v = last_mile(&p, &[]);
    assert!(evidence(&v, "release-risk").contains("1 commit(s) on HEAD are on no remote branch"));
    assert!(v["blockingGates"]
        .to_string()
        .contains("release-risk:unpushed"));
}

#[test]
fn a_halt_is_the_phase_and_the_instruction() {
    let p = project(TASKS);
    merge(
        &p,
        json!({"halt": {"kind": "stall", "reason": "5 stops without progress", "at": "2026-01-01T00:00:00Z"}}),
    );
    let v = last_mile(&p, &[]);
    assert_eq!(v["phase"], "halted");
    assert_eq!(v["blockingGates"][0], "halted");
    assert!(v["coordinatorInstruction"]
        .as_str()
        .unwrap()
        .contains("specrun resume --spec demo"));
}

#[test]
fn capability_plan_detects_a_browser_and_mcp_servers() {
    let p = project(TASKS);
    let tools = tempfile::tempdir().unwrap();
    let chromium = tools.path().join("chromium");
    common::write_executable(&chromium, "#!/bin/sh\n");
    p.write(
        ".mcp.json",
        r#"{"mcpServers": {"context7": {"command": "npx"}}}"#,
    );
    let home = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = p
        .specrun()
        .arg("last-mile")
        .env("PATH", path)
        .env("HOME", home.path())
        .env_remove("CHROME_PATH")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let plan = v["capabilityPlan"].as_array().unwrap();
    let get = |id: &str| plan.iter().find(|c| c["id"] == id).cloned();
    let browser = get("browser").unwrap();
    assert_eq!(browser["availabilityState"], "available");
    assert!(browser["detail"].as_str().unwrap().ends_with("/chromium"));
    let mcp = get("mcp:context7").unwrap();
    assert_eq!(mcp["availabilityState"], "configured");
    for c in plan {
        assert!(c["fallbackWhenMissing"]
            .as_str()
            .is_some_and(|f| !f.is_empty()));
    }
}

#[test]
fn a_malformed_mcp_json_is_reported_not_fatal() {
    let p = project(TASKS);
    p.write(".mcp.json", "{ nope");
    let v = last_mile(&p, &[]);
    assert!(v["capabilityPlan"].to_string().contains("not valid JSON"));
}

#[test]
fn record_appends_the_decision_to_events() {
    let p = project(TASKS);
    evidence_for_first(&p);
    let v = last_mile(&p, &["--record"]);
    let log = p.read(".specrun/events.jsonl");
    let line: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(line["type"], "last-mile");
    assert_eq!(line["phase"], v["phase"]);
    assert_eq!(line["coordinatorInstruction"], v["coordinatorInstruction"]);
    assert!(line["at"].is_string());
    last_mile(&p, &[]);
    assert_eq!(
        p.read(".specrun/events.jsonl").lines().count(),
        1,
        "only --record writes"
    );
}
