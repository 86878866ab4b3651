//! `specrun critique record|skeleton|status`: self-critique records (docs/design.md#critique),
//! validated by the pure rules in `crate::evidence::critique` and written atomically under
//! the spec's critique/.

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

use crate::cli::CritiqueCommand;
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::critique::{self, PostTestOrder};
use crate::evidence::verify::{self, Freshness, Slot};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::model::state::{self, EvidenceRecord, State};

pub(crate) fn run(project: &Project, cmd: CritiqueCommand) -> Result<ExitStatus> {
    match cmd {
        CritiqueCommand::Record {
            task,
            stage,
            file,
            spec,
        } => {
            let ex = Exec::new(project, spec.spec.as_deref())?;
            ex.require_task(&task)?;
            record(project, &ex.spec, &task, stage.as_str(), file.as_deref())
        }
        CritiqueCommand::Skeleton { stage } => {
            output::line(&skeleton(stage.as_str()));
            Ok(ExitStatus::Success)
        }
        CritiqueCommand::Status { task, spec, json } => {
            let ex = Exec::new(project, spec.spec.as_deref())?;
            ex.require_task(&task)?;
            status(&ex.spec, &task, json)
        }
    }
}

/// A record for `stage` that `critique record` refuses until each note is written: every
/// id with its question (kept in the record, which allows extra fields), `pass` as the
/// result to change, and no issues.
fn skeleton(stage: &str) -> String {
    let items: serde_json::Map<String, Value> = critique::checklist(stage)
        .unwrap_or_default()
        .iter()
        .map(|(id, question)| {
            let item = serde_json::json!({"question": question, "result": "pass", "note": ""});
            ((*id).to_string(), item)
        })
        .collect();
    let doc = serde_json::json!({
        "stage": stage,
        "checklist": items,
        "issuesFound": [],
        "issuesFixed": [],
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

fn read_input(project: &Project, file: Option<&str>) -> Result<Value> {
    let (name, text) = match file {
        None | Some("-") => {
            let buf = store::read_stdin("critique record", store::MAX_READ)?;
            ("<stdin>".to_string(), buf)
        }
        Some(f) => {
            let path = project.cwd.join(f);
            (
                path.display().to_string(),
                store::read_user_text(&path, "critique record file")?,
            )
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    serde_json::from_str(text)
        .map_err(|e| Error::bad_input("critique record", format!("{name} is not valid JSON: {e}")))
}

/// The task's evidence record, if the state file exists and holds one.
fn task_evidence(spec: &Spec, task: &str) -> Result<(Option<State>, Option<EvidenceRecord>)> {
    let state = state::read_lenient(&spec.state_path())?;
    let record = state
        .as_ref()
        .and_then(|s| Slot::Task(task.to_string()).record_of(s))
        .cloned();
    Ok((state, record))
}

fn record(
    project: &Project,
    spec: &Spec,
    task: &str,
    stage: &str,
    file: Option<&str>,
) -> Result<ExitStatus> {
    let doc = read_input(project, file)?;
    let validated = critique::validate(stage, task, &doc)
        .map_err(|problems| Error::bad_input("critique record", problems.join("; ")))?;
    let recorded_at = crate::io::events::now_rfc3339();
    if stage == "post-test" {
        // The post-test critique reviews code whose tests passed: it must come after
        // passing evidence for this task.
        let (state, evidence_record) = task_evidence(spec, task)?;
        let rerun = format!(
            "specrun verify run {} --task {} --command '…'",
            crate::support::shell::spec_flag(&spec.name),
            crate::support::shell::word(task)
        );
        match critique::post_test_order(evidence_record.as_ref(), Some(&recorded_at)) {
            PostTestOrder::InOrder => {}
            PostTestOrder::NoEvidence => {
                return Err(Error::Refused {
                    message: format!(
                        "a post-test critique of task {task} needs its passing evidence first (taskEvidence[{task}] is missing): run `{rerun}`"
                    ),
                })
            }
            PostTestOrder::EvidenceFailed => {
                return Err(Error::Refused {
                    message: format!(
                        "a post-test critique of task {task} needs passing evidence, but taskEvidence[{task}] failed: fix it and run `{rerun}`"
                    ),
                })
            }
            PostTestOrder::EvidenceEndUnknown => {
                return Err(Error::Refused {
                    message: format!(
                        "taskEvidence[{task}] has no readable end (taskEvidence.{task}.startedAt plus taskEvidence.{task}.durationMs is not a time): run `{rerun}` again"
                    ),
                })
            }
            other => {
                return Err(Error::Refused {
                    message: format!(
                        "taskEvidence[{task}] ends after now ({}): check the system clock",
                        other.as_str()
                    ),
                })
            }
        }
        // Stale evidence is allowed (parallel tasks edit the tree too); the completion
        // gate judges freshness, but the executor hears about it now.
        if let Some(state) = &state {
            let slot = Slot::Task(task.to_string());
            if verify::check_record(project, spec, slot.record_of(state)) == Freshness::Stale {
                output::warn(&format!(
                    "taskEvidence[{task}] is stale: the tree changed since the tests ran; re-run them before completing the task"
                ));
            }
        }
    }
    let record = critique::to_record(task, stage, &validated, &recorded_at);
    let path = critique::record_path(spec, task, stage);
    let dir = spec.critique_dir();
    store::ensure_dir(&dir)?;
    store::write_atomic(&path, &store::to_pretty_bytes(&record))?;
    output::json_line(&Recorded {
        task,
        stage,
        path: path.display().to_string(),
        recorded_at: &recorded_at,
        open_issues: validated.open_issues,
        passed: validated.open_issues == 0,
    });
    Ok(ExitStatus::Success)
}

/// `critique record`'s answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Recorded<'a> {
    task: &'a str,
    stage: &'a str,
    path: String,
    recorded_at: &'a str,
    open_issues: usize,
    passed: bool,
}

/// `critique status --json`: each stage's record, and whether all count.
#[derive(Serialize)]
struct Status<'a> {
    spec: &'a str,
    task: &'a str,
    stages: IndexMap<&'static str, Stage>,
    complete: bool,
}

/// One stage's record: absent, unreadable, or read (valid with its open issues, or its
/// problems; the post-test stage's order against the evidence).
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Stage {
    path: String,
    exists: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    recorded_at: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    open_issues: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    problems: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    order: Option<&'static str>,
}

fn status(spec: &Spec, task: &str, json_out: bool) -> Result<ExitStatus> {
    let (_, evidence_record) = task_evidence(spec, task)?;
    let mut complete = true;
    let mut stages = IndexMap::new();
    let mut lines = Vec::new();
    for stage in critique::STAGES {
        let path = critique::record_path(spec, task, stage);
        let mut entry = Stage {
            path: path.display().to_string(),
            exists: path.is_file(),
            ..Stage::default()
        };
        let summary = match store::read_json(&path) {
            Ok(None) => {
                complete = false;
                "missing".to_string()
            }
            Err(e) => {
                complete = false;
                entry.valid = Some(false);
                entry.problems = Some(vec![e.to_string()]);
                format!("unreadable: {e}")
            }
            Ok(Some(doc)) => {
                let recorded_at = doc.get("recordedAt").and_then(Value::as_str);
                entry.recorded_at = Some(recorded_at.map(str::to_string));
                let mut summary = match critique::validate(stage, task, &doc) {
                    Ok(v) => {
                        entry.valid = Some(true);
                        entry.open_issues = Some(v.open_issues);
                        // Complete means what the completion gates accept.
                        if critique::judge_validated(&v, &doc).recorded_at().is_none() {
                            complete = false;
                        }
                        format!(
                            "recorded {}, {} open issue(s)",
                            recorded_at.unwrap_or("(no recordedAt)"),
                            v.open_issues
                        )
                    }
                    Err(problems) => {
                        complete = false;
                        entry.valid = Some(false);
                        let text = problems.join("; ");
                        entry.problems = Some(problems);
                        format!("invalid: {text}")
                    }
                };
                if *stage == "post-test" {
                    let order = critique::post_test_order(evidence_record.as_ref(), recorded_at);
                    entry.order = Some(order.as_str());
                    if order != PostTestOrder::InOrder {
                        complete = false;
                        summary.push_str(&format!("; order: {}", order.as_str()));
                    }
                }
                summary
            }
        };
        lines.push(format!("{stage}: {summary}"));
        stages.insert(*stage, entry);
    }
    if json_out {
        output::json_line(&Status {
            spec: &spec.name,
            task,
            stages,
            complete,
        });
    } else {
        output::line(&format!("critique of task {task} ({})", spec.name));
        for line in lines {
            output::line(&format!("  {line}"));
        }
    }
    Ok(ExitStatus::yes_no(complete))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skeleton_is_refused_until_every_note_is_written() {
        for stage in critique::STAGES {
            let mut doc: Value = serde_json::from_str(&skeleton(stage)).unwrap();
            let ids = critique::checklist(stage).unwrap();
            let problems = critique::validate(stage, "1.1", &doc).unwrap_err();
            let expected: Vec<String> = ids
                .iter()
                .map(|(id, _)| format!("{id}: `note` must be a non-empty string"))
                .collect();
            assert_eq!(problems, expected);
            for (id, question) in ids {
                assert_eq!(doc["checklist"][id]["question"], *question);
                doc["checklist"][id]["note"] = Value::from("checked");
            }
            critique::validate(stage, "1.1", &doc).unwrap();
        }
    }
}
