//! `specrun critique record|status`: validated self-critique records, and the rule that a
//! post-test critique follows the task's passing evidence.

use serde_json::{json, Value};

use crate::common;
use crate::common::TempProject;

const TASKS: &str = "# Tasks\n\n- [ ] 1.1 First\n  - **Verify**: `true`\n- [ ] 1.2 Second\n  - **Verify**: `true`\n";

fn project() -> TempProject {
    let p = TempProject::git();
    p.spec("demo", TASKS);
    p.commit_all("spec");
    p.specrun()
        .args(["state", "init", "--spec", "demo"])
        .assert()
        .success();
    p
}

fn record(prefix: &str, count: usize) -> Value {
    let checklist: serde_json::Map<String, Value> = (1..=count)
        .map(|i| {
            (
                format!("{prefix}.{i}"),
                json!({"result": "pass", "note": "checked"}),
            )
        })
        .collect();
    json!({"checklist": checklist, "issuesFound": [], "issuesFixed": []})
}

fn post_code() -> Value {
    record("SC-5.5", 5)
}

fn post_test() -> Value {
    record("SC-6.5", 6)
}

fn submit(p: &TempProject, task: &str, stage: &str, doc: &Value) -> assert_cmd::assert::Assert {
    p.specrun()
        .args(["critique", "record", "--task", task, "--stage", stage])
        .write_stdin(doc.to_string())
        .assert()
}

const POST_CODE_FILE: &str = "specs/demo/critique/1.1-post-code.json";

#[test]
fn a_valid_post_code_record_is_written_with_a_timestamp() {
    let p = project();
    let mut doc = post_code();
    doc["checklist"]["SC-5.5.2"]["result"] = json!("fixed");
    doc["issuesFound"] = json!([{"checklistId": "SC-5.5.2", "description": "empty list panicked"}]);
    doc["issuesFixed"] = json!([{"checklistId": "SC-5.5.2", "description": "empty list panicked"}]);
    let out = submit(&p, "1.1", "post-code", &doc).success();
    let printed: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(printed["passed"], true);
    let written = common::assert_json_file(&p.path(POST_CODE_FILE));
    assert_eq!(written["task"], "1.1");
    assert_eq!(written["stage"], "post-code");
    assert_eq!(written["checklist"]["SC-5.5.2"]["result"], "fixed");
    assert_eq!(written["openIssues"], 0);
    let at = written["recordedAt"].as_str().unwrap();
    chrono::DateTime::parse_from_rfc3339(at).expect("recordedAt is RFC 3339");
}

#[test]
fn a_record_from_a_file_in_the_array_shape_is_accepted() {
    let p = project();
    let items: Vec<Value> = (1..=5)
        .map(|i| json!({"id": format!("SC-5.5.{i}"), "result": "n/a", "note": "docs-only change"}))
        .collect();
    p.write(
        "critique-input.json",
        &json!({"checklist": items, "issuesFound": [], "issuesFixed": []}).to_string(),
    );
    p.specrun()
        .args([
            "critique",
            "record",
            "--task",
            "1.1",
            "--stage",
            "post-code",
            "--file",
            "critique-input.json",
        ])
        .assert()
        .success();
    let written = common::assert_json_file(&p.path(POST_CODE_FILE));
    assert_eq!(written["checklist"]["SC-5.5.5"]["result"], "n/a");
}

#[test]
fn bad_records_are_refused_with_the_exact_problem_and_nothing_is_written() {
    let p = project();
    let mut missing = post_code();
    missing["checklist"]
        .as_object_mut()
        .unwrap()
        .remove("SC-5.5.4");
    let mut unknown_result = post_code();
    unknown_result["checklist"]["SC-5.5.1"]["result"] = json!("done");
    let mut fixed_alone = post_code();
    fixed_alone["checklist"]["SC-5.5.3"]["result"] = json!("fixed");
    let mut wrong_stage_id = post_code();
    wrong_stage_id["checklist"]["SC-6.5.1"] = json!({"result": "pass", "note": "x"});
    let cases = [
        (missing, "SC-5.5.4 is missing"),
        (
            unknown_result,
            "SC-5.5.1: result \"done\" is not one of pass, fixed, n/a",
        ),
        (
            fixed_alone,
            "SC-5.5.3 is `fixed` but no issuesFixed entry has checklistId SC-5.5.3",
        ),
        (wrong_stage_id, "SC-6.5.1 is not a post-code checklist id"),
    ];
    for (doc, problem) in cases {
        submit(&p, "1.1", "post-code", &doc)
            .code(2)
            .stderr(predicates::str::contains(problem));
    }
    p.specrun()
        .args([
            "critique",
            "record",
            "--task",
            "1.1",
            "--stage",
            "post-code",
        ])
        .write_stdin("{not json")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not valid JSON"));
    submit(&p, "4.2", "post-code", &post_code())
        .code(2)
        .stderr(predicates::str::contains("no task with id 4.2"));
    assert!(!p.path("specs/demo/critique").exists());
}

#[test]
fn post_test_needs_passing_evidence_first() {
    let p = project();
    submit(&p, "1.1", "post-test", &post_test())
        .code(2)
        .stderr(predicates::str::contains(
            "needs its passing evidence first",
        ));
    p.specrun()
        .args(["verify", "run", "--task", "1.1", "--command", "exit 1"])
        .assert()
        .code(1);
    submit(&p, "1.1", "post-test", &post_test())
        .code(2)
        .stderr(predicates::str::contains("failed"));
    assert!(!p.path("specs/demo/critique/1.1-post-test.json").exists());
    p.specrun()
        .args(["verify", "run", "--task", "1.1", "--command", "true"])
        .assert()
        .success();
    submit(&p, "1.1", "post-test", &post_test()).success();
    let evidence = &p.state("demo")["taskEvidence"]["1.1"];
    let critique = common::assert_json_file(&p.path("specs/demo/critique/1.1-post-test.json"));
    let ended = chrono::DateTime::parse_from_rfc3339(evidence["startedAt"].as_str().unwrap())
        .unwrap()
        + chrono::Duration::milliseconds(evidence["durationMs"].as_i64().unwrap());
    let recorded =
        chrono::DateTime::parse_from_rfc3339(critique["recordedAt"].as_str().unwrap()).unwrap();
    assert!(recorded >= ended);
}

#[test]
fn status_says_which_records_exist_and_whether_post_test_is_in_order() {
    let p = project();
    let status = |p: &TempProject| {
        let out = p
            .specrun()
            .args(["critique", "status", "--task", "1.1", "--json"])
            .output()
            .unwrap();
        (
            serde_json::from_slice::<Value>(&out.stdout).unwrap(),
            out.status.code().unwrap(),
        )
    };
    let (doc, code) = status(&p);
    assert_eq!(code, 1);
    assert_eq!(doc["stages"]["post-code"]["exists"], false);
    assert_eq!(doc["stages"]["post-test"]["exists"], false);

    submit(&p, "1.1", "post-code", &post_code()).success();
    p.specrun()
        .args(["verify", "run", "--task", "1.1", "--command", "true"])
        .assert()
        .success();
    submit(&p, "1.1", "post-test", &post_test()).success();
    let (doc, code) = status(&p);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["complete"], true);
    assert_eq!(doc["stages"]["post-test"]["order"], "in-order");

    // New evidence after the critique: the critique no longer reviews the latest run.
    p.specrun()
        .args(["verify", "run", "--task", "1.1", "--command", "true"])
        .assert()
        .success();
    let (doc, code) = status(&p);
    assert_eq!(code, 1);
    assert_eq!(
        doc["stages"]["post-test"]["order"],
        "record-older-than-evidence"
    );

    // A record edited by hand into an invalid one is reported, not trusted.
    p.write(POST_CODE_FILE, "{\"checklist\": {}}");
    let (doc, _) = status(&p);
    assert_eq!(doc["stages"]["post-code"]["valid"], false);
    p.specrun()
        .args(["critique", "status", "--task", "1.1"])
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "post-code: invalid: SC-5.5.1 is missing",
        ));
}
