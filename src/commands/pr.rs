//! `specrun headless pr`: the delivery (issue 29). The pull request's body is the spec's
//! evidence matrix (`next::pr_body`), written to `.specrun/headless/<spec>/pr-body.md` and
//! printed; with `--create` and `gh` on PATH, `gh pr create --body-file` opens it, else
//! the gh command is shown for a person to run.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::HeadlessPrArgs;
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::acceptance::Status;
use crate::evidence::verify::{self, Freshness};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::model::state::{EvidenceRecord, State};
use crate::model::tasks::TaskList;
use crate::next::pr_body::{self, Body, CriterionRow, Evidence, TaskRow};

pub(crate) fn run(project: &Project, args: HeadlessPrArgs) -> Result<ExitStatus> {
    let ex = Exec::existing(project, args.spec.spec.as_deref())?;
    let spec = &ex.spec;
    let state = ex.execution("has no execution: there is no evidence to deliver yet")?;
    let list = ex.tasks()?.list;
    let body = gather(project, spec, &state, &list)?;
    let text = pr_body::markdown(&body);
    let file = body_path(project, spec);
    if let Some(dir) = file.parent() {
        store::ensure_dir(dir)?;
    }
    store::write_atomic(&file, text.as_bytes())?;
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| format!("specrun: {}", spec.name));
    let gh_args = gh_args(&title, &file, &args);
    let shown = std::iter::once("gh")
        .chain(gh_args.iter().map(String::as_str))
        .map(crate::support::shell::word)
        .collect::<Vec<_>>()
        .join(" ");
    if !args.create {
        output::raw(&text);
        output::note(&format!("to open the pull request: {shown}"));
        return Ok(ExitStatus::Success);
    }
    let Some(gh) = crate::claude::probe::find_on_path("gh") else {
        output::raw(&text);
        output::warn(&format!(
            "gh is not on PATH: no pull request was opened; with gh installed, run: {shown}"
        ));
        return Ok(ExitStatus::No);
    };
    let status = std::process::Command::new(&gh)
        .args(&gh_args)
        .current_dir(&project.root)
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| Error::Refused {
            message: format!("cannot run {}: {e}", gh.display()),
        })?;
    if !status.success() {
        return Err(Error::Refused {
            message: format!(
                "`{shown}` exited {}: no pull request was opened (the body is in {})",
                crate::io::process::exit_code(status),
                file.display()
            ),
        });
    }
    Ok(ExitStatus::Success)
}

fn gh_args(title: &str, file: &Path, args: &HeadlessPrArgs) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "pr".into(),
        "create".into(),
        "--title".into(),
        title.into(),
        "--body-file".into(),
        file.display().to_string(),
    ];
    for (flag, value) in [("--base", &args.base), ("--head", &args.head)] {
        if let Some(b) = value {
            v.push(flag.into());
            v.push(b.clone());
        }
    }
    v
}

/// `.specrun/headless/<spec>/pr-body.md`, beside the headless run's reports.
fn body_path(project: &Project, spec: &Spec) -> PathBuf {
    let specrun_dir = project
        .events_path()
        .parent()
        .map_or_else(|| project.root.join(".specrun"), Path::to_path_buf);
    specrun_dir
        .join("headless")
        .join(&spec.name)
        .join("pr-body.md")
}

fn evidence_of(record: Option<&EvidenceRecord>, verdict: String) -> Option<Evidence> {
    let r = record?;
    Some(Evidence {
        command: r.command().unwrap_or("").to_string(),
        exit_code: r.exit_code(),
        tree: r.tree().map(str::to_string),
        verdict,
    })
}

fn gather(project: &Project, spec: &Spec, state: &State, list: &TaskList) -> Result<Body> {
    let cost = crate::cost::priced_report(project, state, list);
    let mut decide = Vec::new();
    let tasks: Vec<TaskRow> = list
        .tasks
        .iter()
        .map(|t| {
            let id = t.label();
            let record = state.task_evidence(&id);
            let verdict = if record.is_some_and(verify::passed) {
                "passed"
            } else {
                "failed"
            };
            let row = cost.tasks.iter().find(|c| c.id == id);
            if !t.checked {
                decide.push(format!("task {id} ({}) is not done", t.title));
            }
            TaskRow {
                attempts: state.attempts_of(&id).len(),
                evidence: evidence_of(record, verdict.into()),
                tokens: row.map_or(0, |r| r.total_tokens),
                usd: row.and_then(|r| r.usd),
                id,
                title: t.title.clone(),
                checked: t.checked,
            }
        })
        .collect();
    let final_record = state.verification_block("execution");
    let fresh = verify::check_record(project, spec, final_record);
    if fresh != Freshness::Fresh {
        decide.push(format!(
            "the final check is {} on this tree: it must pass here before merging",
            fresh.as_str()
        ));
    }
    let final_check = evidence_of(final_record, fresh.as_str().into());
    let matrix = crate::evidence::criteria::matrix_with(project, spec, list, Some(state))?;
    let criteria = matrix
        .rows
        .iter()
        .map(|r| {
            let tree = match &r.task {
                Some(t) => tasks.iter().find(|row| &row.id == t),
                None => None,
            }
            .and_then(|row| row.evidence.as_ref())
            .or(final_check.as_ref())
            .and_then(|e| e.tree.clone());
            match r.status {
                Status::Proposed => decide.push(format!(
                    "criterion {} ({}) was proposed as checked by hand: confirm it or not",
                    r.id, r.text
                )),
                s if !s.is_covered() => decide.push(format!(
                    "criterion {} ({}) is {}{}",
                    r.id,
                    r.text,
                    s.as_str(),
                    r.why.as_ref().map(|w| format!(": {w}")).unwrap_or_default()
                )),
                _ => {}
            }
            let mut tests: Vec<String> = r
                .tests
                .iter()
                .map(|t| format!("{} ({})", t.name, t.state.as_str()))
                .collect();
            if let Some(by) = &r.checked_by {
                tests.push(format!("checked by `{by}`"));
            }
            CriterionRow {
                id: r.id.clone(),
                text: r.text.clone(),
                status: r.status.as_str().into(),
                tests,
                tree,
            }
        })
        .collect();
    let followups = crate::evidence::followups::load(spec)
        .map(|s| s.items)
        .unwrap_or_default();
    for f in followups.iter().filter(|f| f.is_open()) {
        decide.push(format!("follow-up {}", f.summary()));
    }
    if let Some(reason) = state.halt_reason() {
        decide.push(format!("the execution is halted: {reason}"));
    }
    let events = crate::io::events::spec_lines(project, &spec.name)?;
    let headless: Vec<Value> = events
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e.get("event").and_then(Value::as_str) == Some("headless"))
        .collect();
    for e in &headless {
        for d in e
            .pointer("/result/permissionDenials")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            decide.push(format!("a headless run was denied {d}: was it needed?"));
        }
    }
    Ok(Body {
        spec: spec.name.clone(),
        phase: state.phase().map_or("none", |p| p.as_str()).to_string(),
        final_check,
        tasks,
        criteria,
        decide,
        headless_usd: headless
            .iter()
            .filter_map(|e| e.pointer("/result/totalCostUsd").and_then(Value::as_f64))
            .sum(),
    })
}
