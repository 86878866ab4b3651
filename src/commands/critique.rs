//! `specrun critique record|status`: self-critique records (docs/design.md#critique),
//! validated by the pure rules in `crate::evidence::critique` and written atomically under
//! the spec's critique/.

use serde_json::{json, Value};

use crate::cli::CritiqueCommand;
use crate::commands::exec::Exec;
use crate::error::{Error, Result};
use crate::evidence::critique::{self, PostTestOrder};
use crate::evidence::verify::{self, Freshness, Slot};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::model::state::{self, State};

pub fn run(project: &Project, cmd: CritiqueCommand) -> Result<i32> {
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
        CritiqueCommand::Status { task, spec, json } => {
            let ex = Exec::new(project, spec.spec.as_deref())?;
            ex.require_task(&task)?;
            status(&ex.spec, &task, json)
        }
    }
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
fn task_evidence(spec: &Spec, task: &str) -> Result<(Option<State>, Option<Value>)> {
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
) -> Result<i32> {
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
    output::json_line(&json!({
        "task": task,
        "stage": stage,
        "path": path.display().to_string(),
        "recordedAt": recorded_at,
        "openIssues": validated.open_issues,
        "passed": validated.open_issues == 0,
    }));
    Ok(0)
}

fn status(spec: &Spec, task: &str, json_out: bool) -> Result<i32> {
    let (_, evidence_record) = task_evidence(spec, task)?;
    let mut complete = true;
    let mut stages = serde_json::Map::new();
    let mut lines = Vec::new();
    for stage in critique::STAGES {
        let path = critique::record_path(spec, task, stage);
        let mut entry = json!({"path": path.display().to_string(), "exists": path.is_file()});
        let summary = match store::read_json(&path) {
            Ok(None) => {
                complete = false;
                "missing".to_string()
            }
            Err(e) => {
                complete = false;
                entry["valid"] = Value::Bool(false);
                entry["problems"] = json!([e.to_string()]);
                format!("unreadable: {e}")
            }
            Ok(Some(doc)) => {
                let recorded_at = doc.get("recordedAt").and_then(Value::as_str);
                entry["recordedAt"] = json!(recorded_at);
                let mut summary = match critique::validate(stage, task, &doc) {
                    Ok(v) => {
                        entry["valid"] = Value::Bool(true);
                        entry["openIssues"] = json!(v.open_issues);
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
                        entry["valid"] = Value::Bool(false);
                        let text = problems.join("; ");
                        entry["problems"] = json!(problems);
                        format!("invalid: {text}")
                    }
                };
                if *stage == "post-test" {
                    let order = critique::post_test_order(evidence_record.as_ref(), recorded_at);
                    entry["order"] = json!(order.as_str());
                    if order != PostTestOrder::InOrder {
                        complete = false;
                        summary.push_str(&format!("; order: {}", order.as_str()));
                    }
                }
                summary
            }
        };
        lines.push(format!("{stage}: {summary}"));
        stages.insert((*stage).to_string(), entry);
    }
    if json_out {
        output::json_line(&json!({
            "spec": spec.name,
            "task": task,
            "stages": stages,
            "complete": complete,
        }));
    } else {
        output::line(&format!("critique of task {task} ({})", spec.name));
        for line in lines {
            output::line(&format!("  {line}"));
        }
    }
    Ok(if complete { 0 } else { 1 })
}
