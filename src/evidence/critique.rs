//! Self-critique records (docs/design.md#critique):
//! `specs/<name>/critique/<ID>-<stage>.json`, written by `specrun critique record`, each
//! with `recordedAt` (RFC 3339, UTC). The file convention,
//! the checklist validation and the post-test ordering rule are pure and live here, so the
//! guard and the task verbs judge exactly what `critique record` writes.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::io::project::Spec;
use crate::model::state::time;

pub const STAGES: &[&str] = &["post-code", "post-test"];

pub fn record_path(spec: &Spec, task_id: &str, stage: &str) -> PathBuf {
    spec.critique_dir().join(format!("{task_id}-{stage}.json"))
}

/// A stored critique record as the completion gates (`task complete`, the SubagentStop
/// guard) see it: only a record `critique record` would write counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    Missing,
    /// Present but not usable: why (invalid, open issues, no `recordedAt`).
    Unusable(String),
    Usable {
        recorded_at: String,
    },
}

impl Stored {
    pub fn recorded_at(&self) -> Option<&str> {
        match self {
            Stored::Usable { recorded_at } => Some(recorded_at),
            _ => None,
        }
    }
}

/// Judge a stored record (pure): it must validate as `critique record` validates its
/// input, have no open issue (a found issue nobody fixed is not done) and carry its
/// `recordedAt`. A hand-written file that skips validation does not count.
pub fn judge(stage: &str, task_id: &str, doc: &Value) -> Stored {
    match validate(stage, task_id, doc) {
        Ok(validated) => judge_validated(&validated, doc),
        Err(problems) => Stored::Unusable(format!("invalid: {}", problems.join("; "))),
    }
}

/// `judge` of a record already validated (`doc` is the record, `validated` its `validate`).
pub fn judge_validated(validated: &Validated, doc: &Value) -> Stored {
    if validated.open_issues > 0 {
        return Stored::Unusable(format!(
            "{} issue(s) found but not fixed: fix them and record it again",
            validated.open_issues
        ));
    }
    match doc.get("recordedAt").and_then(Value::as_str) {
        Some(at) if time::parse(at).is_some() => Stored::Usable {
            recorded_at: at.to_string(),
        },
        Some(at) => Stored::Unusable(format!("recordedAt {at:?} is not an RFC 3339 time")),
        None => Stored::Unusable("no recordedAt: write it with `specrun critique record`".into()),
    }
}

/// The stored record of `task_id` at `stage`, judged.
pub fn load(spec: &Spec, task_id: &str, stage: &str) -> Stored {
    let path = record_path(spec, task_id, stage);
    match crate::io::store::read_json(&path) {
        Ok(None) => Stored::Missing,
        Ok(Some(doc)) => judge(stage, task_id, &doc),
        Err(e) => Stored::Unusable(format!("unreadable: {e}")),
    }
}

/// The record's `recordedAt`, if the record exists and is usable (see `judge`).
pub fn recorded_at(spec: &Spec, task_id: &str, stage: &str) -> Option<String> {
    load(spec, task_id, stage).recorded_at().map(str::to_string)
}

/// The checklist of each stage, in our wording: the question each id answers.
pub const POST_CODE_CHECKLIST: &[(&str, &str)] = &[
    (
        "SC-5.5.1",
        "Likely bugs: name the ways this change is most likely wrong, and how each was ruled out",
    ),
    (
        "SC-5.5.2",
        "Edge cases: empty, huge, malformed, repeated and concurrent inputs the change can meet",
    ),
    (
        "SC-5.5.3",
        "Error paths: every failure is reported with a named error; none is swallowed",
    ),
    (
        "SC-5.5.4",
        "Security: no path, command, query or secret built from untrusted input unchecked",
    ),
    (
        "SC-5.5.5",
        "Degradation: when a dependency fails, the change fails safely and loses no data",
    ),
];

pub const POST_TEST_CHECKLIST: &[(&str, &str)] = &[
    (
        "SC-6.5.1",
        "Conventions: the change reads like the code around it",
    ),
    (
        "SC-6.5.2",
        "No hard-coded values that belong in a constant or in configuration",
    ),
    (
        "SC-6.5.3",
        "Tests exercise the new behaviour and its failure paths, and would fail if it broke",
    ),
    ("SC-6.5.4", "Docs and comments say what the code now does"),
    (
        "SC-6.5.5",
        "No leftovers: debug output, dead or commented-out code, ownerless TODOs",
    ),
    (
        "SC-6.5.6",
        "Maintainability: names explain themselves; no needless duplication or complexity",
    ),
];

pub const RESULTS: &[&str] = &["pass", "fixed", "n/a"];

/// The checklist of a stage (`post-code` or `post-test`); `None` for anything else.
pub fn checklist(stage: &str) -> Option<&'static [(&'static str, &'static str)]> {
    match stage {
        "post-code" => Some(POST_CODE_CHECKLIST),
        "post-test" => Some(POST_TEST_CHECKLIST),
        _ => None,
    }
}

/// A record that passed validation, normalised: the checklist keyed by id in checklist
/// order, and how many found issues have no matching fix.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    pub checklist: Map<String, Value>,
    pub issues_found: Vec<Value>,
    pub issues_fixed: Vec<Value>,
    pub open_issues: usize,
}

/// Validate a self-critique record for `task_id` at `stage`. Every problem is listed, each
/// naming the id or field it is about.
///
/// Shape: `{"checklist": {"SC-5.5.1": {"result": "pass|fixed|n/a", "note": "…"}, …},
/// "issuesFound": [{"checklistId", "description"}], "issuesFixed": [{"checklistId",
/// "description"}]}`; the checklist may also be an array of `{id, result, note}`. A
/// `fixed` result needs an `issuesFixed` entry with its id, and an `issuesFixed` entry
/// needs its item to say `fixed`. A found issue is open unless an `issuesFixed` entry has
/// the same `checklistId`.
pub fn validate(stage: &str, task_id: &str, doc: &Value) -> Result<Validated, Vec<String>> {
    let Some(items) = checklist(stage) else {
        return Err(vec![format!(
            "unknown stage {stage:?} (expected post-code or post-test)"
        )]);
    };
    let ids: Vec<&str> = items.iter().map(|(id, _)| *id).collect();
    let id_range = format!("{}…{}", ids[0], ids[ids.len() - 1]);
    let Some(obj) = doc.as_object() else {
        return Err(vec!["the record must be a JSON object".into()]);
    };
    let mut problems = Vec::new();
    for (field, expected) in [("task", task_id), ("stage", stage)] {
        if let Some(v) = obj.get(field) {
            if v.as_str() != Some(expected) {
                problems.push(format!(
                    "`{field}` is {v} but the record is for {expected:?}"
                ));
            }
        }
    }
    let given = collect_checklist(obj.get("checklist"), &mut problems);
    let mut checklist = Map::new();
    for (id, _) in &given {
        if !ids.contains(&id.as_str()) {
            problems.push(format!(
                "{id} is not a {stage} checklist id (expected {id_range})"
            ));
        }
    }
    for id in &ids {
        let Some(item) = given.iter().find(|(g, _)| g == id).map(|(_, v)| v) else {
            problems.push(format!("{id} is missing"));
            continue;
        };
        let Some(fields) = item.as_object() else {
            problems.push(format!("{id} must be an object {{result, note}}"));
            continue;
        };
        match fields.get("result").and_then(Value::as_str) {
            Some(r) if RESULTS.contains(&r) => {}
            Some(r) => problems.push(format!("{id}: result {r:?} is not one of pass, fixed, n/a")),
            None => problems.push(format!("{id}: `result` is missing (pass, fixed or n/a)")),
        }
        if !is_non_empty_text(fields.get("note")) {
            problems.push(format!("{id}: `note` must be a non-empty string"));
        }
        checklist.insert((*id).to_string(), item.clone());
    }
    let issues_found = collect_issues(obj, "issuesFound", &ids, &mut problems);
    let issues_fixed = collect_issues(obj, "issuesFixed", &ids, &mut problems);
    let result_of = |id: &str| {
        checklist
            .get(id)
            .and_then(|i| i.get("result"))
            .and_then(Value::as_str)
    };
    for id in &ids {
        if result_of(id) == Some("fixed") && !issues_fixed.iter().any(|i| issue_id(i) == Some(*id))
        {
            problems.push(format!(
                "{id} is `fixed` but no issuesFixed entry has checklistId {id}"
            ));
        }
    }
    for (n, issue) in issues_fixed.iter().enumerate() {
        if let Some(id) = issue_id(issue) {
            match result_of(id) {
                Some("fixed") | None => {}
                Some(other) => problems.push(format!(
                    "issuesFixed[{n}] names {id}, whose result is `{other}` (an item with a fixed issue says `fixed`)"
                )),
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let open_issues = issues_found
        .iter()
        .filter(|found| {
            // Matched by checklist id: a fix is described in its own words.
            !issues_fixed
                .iter()
                .any(|fixed| issue_id(fixed) == issue_id(found))
        })
        .count();
    Ok(Validated {
        checklist,
        issues_found,
        issues_fixed,
        open_issues,
    })
}

/// The checklist as (id, item) pairs, from either accepted shape.
fn collect_checklist(value: Option<&Value>, problems: &mut Vec<String>) -> Vec<(String, Value)> {
    match value {
        None => {
            problems.push("`checklist` is missing".into());
            Vec::new()
        }
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Some(Value::Array(entries)) => {
            let mut out: Vec<(String, Value)> = Vec::new();
            for (n, entry) in entries.iter().enumerate() {
                let Some(id) = entry.get("id").and_then(Value::as_str) else {
                    problems.push(format!("checklist[{n}] has no string `id`"));
                    continue;
                };
                if out.iter().any(|(seen, _)| seen == id) {
                    problems.push(format!("{id} appears more than once"));
                    continue;
                }
                let mut item = entry.clone();
                if let Some(map) = item.as_object_mut() {
                    map.remove("id");
                }
                out.push((id.to_string(), item));
            }
            out
        }
        Some(_) => {
            problems.push(
                "`checklist` must be an object keyed by checklist id (or an array of {id, result, note})"
                    .into(),
            );
            Vec::new()
        }
    }
}

fn collect_issues(
    obj: &Map<String, Value>,
    field: &str,
    ids: &[&str],
    problems: &mut Vec<String>,
) -> Vec<Value> {
    let Some(value) = obj.get(field) else {
        problems.push(format!("`{field}` is missing (use [] when there are none)"));
        return Vec::new();
    };
    let Some(entries) = value.as_array() else {
        problems.push(format!("`{field}` must be an array"));
        return Vec::new();
    };
    for (n, issue) in entries.iter().enumerate() {
        match issue_id(issue) {
            Some(id) if ids.contains(&id) => {}
            Some(id) => problems.push(format!(
                "{field}[{n}]: checklistId {id} is not one of {}…{}",
                ids[0],
                ids[ids.len() - 1]
            )),
            None => problems.push(format!(
                "{field}[{n}] must be an object with a string `checklistId`"
            )),
        }
        if !is_non_empty_text(issue.get("description")) {
            problems.push(format!(
                "{field}[{n}]: `description` must be a non-empty string"
            ));
        }
    }
    entries.clone()
}

fn is_non_empty_text(value: Option<&Value>) -> bool {
    value
        .and_then(Value::as_str)
        .is_some_and(|text| !text.trim().is_empty())
}

fn issue_id(issue: &Value) -> Option<&str> {
    issue.get("checklistId").and_then(Value::as_str)
}

/// The record as written to `critique/<ID>-<stage>.json`.
pub fn to_record(task_id: &str, stage: &str, v: &Validated, recorded_at: &str) -> Value {
    let record = Record {
        version: 1,
        task: task_id,
        stage,
        checklist: &v.checklist,
        issues_found: &v.issues_found,
        issues_fixed: &v.issues_fixed,
        open_issues: v.open_issues,
        passed: v.open_issues == 0,
        recorded_at,
    };
    serde_json::to_value(record).expect("a critique record serializes")
}

/// A critique record's fields, in the file's order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    version: u32,
    task: &'a str,
    stage: &'a str,
    checklist: &'a Map<String, Value>,
    issues_found: &'a [Value],
    issues_fixed: &'a [Value],
    open_issues: usize,
    passed: bool,
    recorded_at: &'a str,
}

/// Whether a post-test critique comes after the task's passing evidence
/// (docs/design.md#critique).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostTestOrder {
    /// Recorded at or after the end of passing evidence.
    InOrder,
    NoEvidence,
    EvidenceFailed,
    NoRecord,
    /// Recorded before the evidence ended (or the record's time does not parse).
    RecordOlder,
    /// The evidence's end is not a time (its `startedAt` unreadable, or `startedAt` plus
    /// `durationMs` past the calendar): the order cannot be shown.
    EvidenceEndUnknown,
}

impl PostTestOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            PostTestOrder::InOrder => "in-order",
            PostTestOrder::NoEvidence => "no-evidence",
            PostTestOrder::EvidenceFailed => "evidence-failed",
            PostTestOrder::NoRecord => "no-record",
            PostTestOrder::RecordOlder => "record-older-than-evidence",
            PostTestOrder::EvidenceEndUnknown => "evidence-end-unknown",
        }
    }
}

/// Judge a post-test critique's `recordedAt` against the task's evidence record
/// (`taskEvidence.<ID>`): the evidence must pass, and the critique must be recorded no
/// earlier than the evidence's end (`startedAt + durationMs`). Pure; the guard and the
/// task verbs call it with `Slot::record_in` and `recorded_at`.
pub fn post_test_order(
    evidence: Option<&crate::model::state::EvidenceRecord>,
    recorded_at: Option<&str>,
) -> PostTestOrder {
    let Some(evidence) = evidence else {
        return PostTestOrder::NoEvidence;
    };
    if !crate::evidence::verify::passed(evidence) {
        return PostTestOrder::EvidenceFailed;
    }
    let Some(recorded_at) = recorded_at else {
        return PostTestOrder::NoRecord;
    };
    match crate::evidence::verify::ended_at(evidence) {
        None => PostTestOrder::EvidenceEndUnknown,
        Some(ended) if reviews_run(recorded_at, &ended) => PostTestOrder::InOrder,
        Some(_) => PostTestOrder::RecordOlder,
    }
}

/// The one ordering rule of a post-test critique: recorded no earlier than the end of the
/// run it reviews. `task complete`, SubagentStop and `critique status` all ask this.
pub fn reviews_run(recorded_at: &str, run_ended_at: &str) -> bool {
    matches!((time::parse(recorded_at), time::parse(run_ended_at)), (Some(r), Some(e)) if r >= e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::state::record_for_test as rec;
    use serde_json::json;

    /// Regression: task complete (strictly after the start), SubagentStop (not before the
    /// start) and critique status (not before the end) each had their own rule.
    #[test]
    fn one_ordering_rule_for_post_test_reviews() {
        assert!(reviews_run(
            "2026-01-01T00:05:00Z",
            "2026-01-01T00:05:00.000Z"
        ));
        assert!(!reviews_run("2026-01-01T00:04:59Z", "2026-01-01T00:05:00Z"));
        assert!(!reviews_run("not a time", "2026-01-01T00:05:00Z"));
        let run =
            rec(json!({"exitCode": 0, "startedAt": "2026-01-01T00:00:00Z", "durationMs": 90000}));
        assert_eq!(
            crate::evidence::verify::ended_at(&run).as_deref(),
            Some("2026-01-01T00:01:30.000Z")
        );
        // Recorded while the run was still going: not a review of it.
        assert_eq!(
            post_test_order(Some(&run), Some("2026-01-01T00:01:00Z")),
            PostTestOrder::RecordOlder
        );
        assert_eq!(
            post_test_order(Some(&run), Some("2026-01-01T00:01:30Z")),
            PostTestOrder::InOrder
        );
    }

    fn all(stage: &str, result: &str) -> Value {
        let items: Map<String, Value> = checklist(stage)
            .unwrap()
            .iter()
            .map(|(id, _)| {
                (
                    (*id).to_string(),
                    json!({"result": result, "note": "looked"}),
                )
            })
            .collect();
        json!({"checklist": items, "issuesFound": [], "issuesFixed": []})
    }

    fn problems(stage: &str, doc: &Value) -> Vec<String> {
        validate(stage, "1.2", doc).unwrap_err()
    }

    #[test]
    fn a_complete_record_passes_in_either_checklist_shape() {
        let v = validate("post-code", "1.2", &all("post-code", "pass")).unwrap();
        assert_eq!(v.checklist.len(), 5);
        assert_eq!(v.open_issues, 0);
        let array: Vec<Value> = POST_TEST_CHECKLIST
            .iter()
            .map(|(id, _)| json!({"id": id, "result": "n/a", "note": "no tests touched"}))
            .collect();
        let doc = json!({"checklist": array, "issuesFound": [], "issuesFixed": []});
        let v = validate("post-test", "1.2", &doc).unwrap();
        assert_eq!(
            v.checklist.keys().next().map(String::as_str),
            Some("SC-6.5.1")
        );
        assert!(v.checklist["SC-6.5.1"].get("id").is_none());
    }

    #[test]
    fn each_bad_record_is_refused_naming_the_problem() {
        let mut doc = all("post-code", "pass");
        doc["checklist"].as_object_mut().unwrap().remove("SC-5.5.3");
        assert_eq!(problems("post-code", &doc), ["SC-5.5.3 is missing"]);

        let mut doc = all("post-code", "pass");
        doc["checklist"]["SC-5.5.2"]["result"] = json!("ok");
        assert_eq!(
            problems("post-code", &doc),
            ["SC-5.5.2: result \"ok\" is not one of pass, fixed, n/a"]
        );

        let mut doc = all("post-code", "pass");
        doc["checklist"]["SC-5.5.4"]["result"] = json!("fixed");
        assert_eq!(
            problems("post-code", &doc),
            ["SC-5.5.4 is `fixed` but no issuesFixed entry has checklistId SC-5.5.4"]
        );

        let mut doc = all("post-code", "pass");
        doc["issuesFixed"] = json!([{"checklistId": "SC-5.5.1", "description": "off by one"}]);
        assert!(problems("post-code", &doc)[0].contains("whose result is `pass`"));

        let mut doc = all("post-code", "pass");
        doc["checklist"]["SC-6.5.1"] = json!({"result": "pass", "note": "x"});
        assert_eq!(
            problems("post-code", &doc),
            ["SC-6.5.1 is not a post-code checklist id (expected SC-5.5.1…SC-5.5.5)"]
        );

        let mut doc = all("post-test", "pass");
        doc["checklist"]["SC-6.5.6"]["note"] = json!("  ");
        doc.as_object_mut().unwrap().remove("issuesFound");
        assert_eq!(
            problems("post-test", &doc),
            [
                "SC-6.5.6: `note` must be a non-empty string",
                "`issuesFound` is missing (use [] when there are none)"
            ]
        );

        let mut doc = all("post-code", "pass");
        doc["issuesFound"] = json!([{"checklistId": "SC-9", "description": ""}, "text"]);
        assert_eq!(problems("post-code", &doc).len(), 4);

        assert_eq!(
            problems("post-code", &json!([1])),
            ["the record must be a JSON object"]
        );
        let mut doc = all("post-code", "pass");
        doc["task"] = json!("2.1");
        assert!(problems("post-code", &doc)[0].contains("`task` is \"2.1\""));
    }

    #[test]
    fn found_issues_without_a_matching_fix_are_open() {
        let mut doc = all("post-code", "pass");
        doc["checklist"]["SC-5.5.2"]["result"] = json!("fixed");
        doc["issuesFound"] = json!([
            {"checklistId": "SC-5.5.2", "description": "empty input panics"},
            {"checklistId": "SC-5.5.5", "description": "retry storm"}
        ]);
        doc["issuesFixed"] =
            json!([{"checklistId": "SC-5.5.2", "description": "empty input panics"}]);
        let v = validate("post-code", "1.2", &doc).unwrap();
        assert_eq!(v.open_issues, 1);
        let record = to_record("1.2", "post-code", &v, "2026-01-01T00:00:00.000Z");
        assert_eq!(record["passed"], false);
        assert_eq!(record["recordedAt"], "2026-01-01T00:00:00.000Z");
    }

    #[test]
    fn only_a_valid_record_without_open_issues_counts_for_completion() {
        let v = validate("post-code", "1.2", &all("post-code", "pass")).unwrap();
        let written = to_record("1.2", "post-code", &v, "2026-01-01T00:00:00.000Z");
        assert_eq!(
            judge("post-code", "1.2", &written),
            Stored::Usable {
                recorded_at: "2026-01-01T00:00:00.000Z".into()
            }
        );
        // A hand-written stub with a timestamp is not a critique.
        let stub =
            json!({"task": "1.2", "stage": "post-code", "recordedAt": "2026-01-01T00:00:00Z"});
        assert!(
            matches!(judge("post-code", "1.2", &stub), Stored::Unusable(p) if p.contains("`checklist` is missing"))
        );
        // Another task's record does not count either.
        assert!(matches!(
            judge("post-code", "2.1", &written),
            Stored::Unusable(_)
        ));
        let mut open = all("post-code", "pass");
        open["issuesFound"] = json!([{"checklistId": "SC-5.5.5", "description": "retry storm"}]);
        let v = validate("post-code", "1.2", &open).unwrap();
        let written = to_record("1.2", "post-code", &v, "2026-01-01T00:00:00.000Z");
        assert!(
            matches!(judge("post-code", "1.2", &written), Stored::Unusable(p) if p.contains("1 issue(s) found but not fixed"))
        );
        let mut undated = all("post-code", "pass");
        undated["task"] = json!("1.2");
        assert!(
            matches!(judge("post-code", "1.2", &undated), Stored::Unusable(p) if p.contains("no recordedAt"))
        );
    }

    #[test]
    fn post_test_must_follow_passing_evidence() {
        let ev = rec(
            json!({"exitCode": 0, "timedOut": false, "startedAt": "2026-01-01T00:00:00.000Z", "durationMs": 1500}),
        );
        assert_eq!(
            post_test_order(None, Some("2026-01-01T00:00:05Z")),
            PostTestOrder::NoEvidence
        );
        assert_eq!(
            post_test_order(
                Some(&rec(json!({"exitCode": 1}))),
                Some("2026-01-01T00:00:05Z")
            ),
            PostTestOrder::EvidenceFailed
        );
        assert_eq!(post_test_order(Some(&ev), None), PostTestOrder::NoRecord);
        assert_eq!(
            post_test_order(Some(&ev), Some("2026-01-01T00:00:01.499Z")),
            PostTestOrder::RecordOlder,
            "recorded while the tests still ran"
        );
        assert_eq!(
            post_test_order(Some(&ev), Some("2026-01-01T00:00:01.500Z")),
            PostTestOrder::InOrder
        );
        assert_eq!(
            post_test_order(Some(&ev), Some("yesterday")),
            PostTestOrder::RecordOlder
        );
    }
}
