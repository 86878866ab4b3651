//! `followup add|list|resolve` on the spec's followups.json.

use crate::common;
use crate::task_helpers::*;

#[test]
fn add_list_resolve_round_trip() {
    let p = project(TASKS, &[]);
    let (code, out, _) = run(
        &p,
        &[
            "followup",
            "add",
            "--category",
            "VERIFY",
            "--priority",
            "high",
            "--title",
            "check the edge",
            "--task",
            "1.1",
            "--files",
            "src/a.rs",
            "src/b.rs",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        "added F1 [VERIFY/high] open: check the edge (task 1.1)"
    );
    followup_add(&p, "IDEA", "low", "maybe later", None);
    let doc = common::assert_json_file(&p.path("specs/demo/followups.json"));
    assert_eq!(doc["version"], 1);
    assert_eq!(
        doc["items"][0]["files"],
        serde_json::json!(["src/a.rs", "src/b.rs"])
    );
    let (_, out, _) = run(&p, &["followup", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(listed["blocking"], serde_json::json!(["F1"]));
    let (_, out, _) = run(&p, &["followup", "list"]);
    assert!(
        out.contains("F1 [VERIFY/high] open: check the edge (task 1.1) (blocks completion)"),
        "{out}"
    );
    let (code, out, _) = run(
        &p,
        &["followup", "resolve", "F1", "--note", "checked by hand"],
    );
    assert_eq!((code, out.trim()), (0, "F1 resolved"));
    let (code, out, _) = run(&p, &["followup", "resolve", "F1", "--note", "again"]);
    assert_eq!((code, out.trim()), (0, "F1 was already resolved"));
    let (_, out, _) = run(&p, &["followup", "list", "--open"]);
    assert_eq!(out.trim(), "F2 [IDEA/low] open: maybe later");
    let ev = events(&p);
    assert!(ev
        .iter()
        .any(|e| e["event"] == "followup-resolve" && e["id"] == "F1"));
}

#[test]
fn at_most_ten_open_per_task() {
    let p = project(TASKS, &[]);
    for i in 0..10 {
        assert_eq!(
            followup_add(&p, "REFAC", "low", &format!("r{i}"), Some("1.2")).0,
            0
        );
    }
    let (code, out, _) = followup_add(&p, "REFAC", "low", "one too many", Some("1.2"));
    assert_eq!(code, 1);
    assert!(
        out.contains("task 1.2 already has 10 open follow-ups (at most 10)"),
        "{out}"
    );
    assert_eq!(
        followup_add(&p, "REFAC", "low", "other task", Some("1.3")).0,
        0
    );
}

#[test]
fn bad_input_is_named_and_changes_nothing() {
    let p = project(TASKS, &[]);
    let (code, _, err) = followup_add(&p, "IDEA", "low", "x", Some("9.9"));
    assert_eq!(code, 2);
    assert!(err.contains("no task with id 9.9"), "{err}");
    let (code, _, err) = followup_add(&p, "BUG", "low", "x", None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("invalid value 'BUG'"), "{err}");
    let (code, _, err) = run(&p, &["followup", "resolve", "F7", "--note", "n"]);
    assert_eq!(code, 2);
    assert!(err.contains("no follow-up with id F7"), "{err}");
    assert!(!p.path("specs/demo/followups.json").exists());
    p.write("specs/demo/followups.json", "{not json");
    let (code, _, err) = run(&p, &["followup", "list"]);
    assert_eq!(code, 2);
    assert!(err.contains("followups.json is not valid JSON"), "{err}");
    assert_eq!(p.read("specs/demo/followups.json"), "{not json");
}
