//! `specrun ac list|map|confirm|status`: acceptance criteria, their mappings to tests
//! (`specs/<name>/acceptance.json`, under its own lock) and the coverage matrix. The test
//! results of each verify run sit in `specs/<name>/test-results/<slot>.json`.
//!
//! `matrix` is the typed entry point other commands (status, report) call.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::acceptance::{self, Criterion, Manual, Mapping, Row, Run, Store};
use crate::cli::AcCommand;
use crate::error::{Error, Result};
use crate::events::now_rfc3339;
use crate::evidence::{self, Slot};
use crate::exec::Exec;
use crate::output;
use crate::project::{Project, Spec};
use crate::store;
use crate::tasks::TaskList;
use crate::testlog::{self, Outcome, Report};

pub const STORE_FILE: &str = crate::project::ACCEPTANCE_FILE;
pub const RESULTS_DIR: &str = crate::project::TEST_RESULTS_DIR;
/// The state field that turns the criteria gates on (written by `state init`).
pub const GATE_FIELD: &str = "acceptanceGate";

pub fn run(project: &Project, cmd: AcCommand) -> Result<i32> {
    match cmd {
        AcCommand::List { task, spec, json } => {
            list(project, spec.spec.as_deref(), task.as_deref(), json)
        }
        AcCommand::Map {
            id,
            test,
            spec,
            json,
        } => map(project, spec.spec.as_deref(), &id, &test, json),
        AcCommand::Confirm {
            id,
            reason,
            spec,
            json,
        } => confirm(project, spec.spec.as_deref(), &id, &reason, json),
        AcCommand::Status { task, spec, json } => {
            status(project, spec.spec.as_deref(), task.as_deref(), json)
        }
    }
}

// ---- files ----------------------------------------------------------------------------

pub fn store_path(spec: &Spec) -> PathBuf {
    spec.dir.join(STORE_FILE)
}

/// acceptance.json (absent = empty). A file that does not parse is an error naming it; it
/// is never replaced.
pub fn load_store(spec: &Spec) -> Result<Store> {
    let path = store_path(spec);
    match store::read_json(&path)? {
        None => Ok(Store::default()),
        Some(doc) => from_doc(&path, doc),
    }
}

fn from_doc(path: &std::path::Path, doc: Value) -> Result<Store> {
    serde_json::from_value(doc).map_err(|e| Error::Shape {
        path: path.to_path_buf(),
        message: format!("not an acceptance store ({e}); fix or remove it"),
    })
}

/// Change acceptance.json under its lock.
pub fn update_store<T>(spec: &Spec, change: impl FnOnce(&mut Store) -> Result<T>) -> Result<T> {
    let path = store_path(spec);
    store::update_json(&path, store::DEFAULT_LOCK_WAIT, |current| {
        let mut s = match current {
            None => Store::default(),
            Some(doc) => from_doc(&path, doc)?,
        };
        let out = change(&mut s)?;
        let doc = serde_json::to_value(&s).expect("a store serialises");
        Ok((Some(doc), out))
    })
}

fn results_path(spec: &Spec, slot: &Slot) -> PathBuf {
    let name = match slot {
        Slot::Phase(p) => format!("phase-{p}"),
        Slot::Task(id) => format!("task-{id}"),
    };
    spec.dir.join(RESULTS_DIR).join(format!("{name}.json"))
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredResults {
    started_at: String,
    report: Report,
}

/// Write a run's test results beside the state; returns the record's `tests` summary.
/// A write failure is warned about and leaves the run without results (never fails it).
pub fn write_results(spec: &Spec, slot: &Slot, started_at: &str, report: &Report) -> Value {
    let path = results_path(spec, slot);
    let doc = StoredResults {
        started_at: started_at.to_string(),
        report: report.clone(),
    };
    let bytes = serde_json::to_vec(&doc).expect("results serialise");
    let written = path
        .parent()
        .map(store::ensure_dir)
        .unwrap_or(Ok(()))
        .and_then(|_| store::write_atomic(&path, &bytes));
    if let Err(e) = written {
        output::warn(&format!("test results not kept: {e}"));
        return Value::Null;
    }
    let runners: Vec<&str> = report.runners.iter().map(|r| r.as_str()).collect();
    json!({
        "runners": runners,
        "passed": report.count(Outcome::Passed),
        "failed": report.count(Outcome::Failed),
        "skipped": report.count(Outcome::Skipped),
        "truncated": report.truncated,
    })
}

/// Say on stderr what the output told about tests (nothing recognised names the runners).
pub fn note_results(report: &Report) {
    if report.runners.is_empty() {
        output::note(&format!(
            "no test results recognised in the output; criteria can be traced only to tests of: {}",
            testlog::SUPPORTED
        ));
        return;
    }
    output::note(&format!(
        "tests: {} passed, {} failed, {} skipped",
        report.count(Outcome::Passed),
        report.count(Outcome::Failed),
        report.count(Outcome::Skipped)
    ));
    for r in &report.unnamed {
        output::warn(&format!(
            "{} reported passing tests without naming them: run jest with --verbose, vitest with --reporter=verbose, so criteria can be traced",
            r.as_str()
        ));
    }
}

/// The results stored for `slot`, when they belong to the record now in the state.
fn read_results(spec: &Spec, slot: &Slot, record: &Value) -> Option<Report> {
    record.get("tests").filter(|t| t.is_object())?;
    let started = record.get("startedAt").and_then(Value::as_str)?;
    let bytes = store::read_optional(&results_path(spec, slot)).ok()??;
    let stored: StoredResults = serde_json::from_slice(&bytes).ok()?;
    (stored.started_at == started).then_some(stored.report)
}

// ---- facts ----------------------------------------------------------------------------

/// Every evidence record of the state with its freshness and test results. The tree is
/// fingerprinted once per distinct `excludedPaths`.
pub fn runs(project: &Project, spec: &Spec, state: &Value) -> Vec<Run> {
    let mut trees: BTreeMap<Vec<String>, Option<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for (key, make) in [
        ("verificationBlocks", Slot::Phase as fn(String) -> Slot),
        ("taskEvidence", Slot::Task as fn(String) -> Slot),
    ] {
        let Some(map) = state.get(key).and_then(Value::as_object) else {
            continue;
        };
        for (name, record) in map {
            if !record.is_object() {
                continue;
            }
            let slot = make(name.clone());
            let tree = if evidence::passed(record) {
                let excluded = evidence::excluded_paths(Some(record));
                trees
                    .entry(excluded.clone())
                    .or_insert_with(|| {
                        evidence::fingerprint_excluding(project, spec, &excluded)
                            .ok()
                            .map(|f| f.tree)
                    })
                    .clone()
            } else {
                None
            };
            out.push(Run {
                slot: slot.describe(),
                command: record
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                freshness: evidence::assess(Some(record), tree.as_deref()),
                report: read_results(spec, &slot, record),
            });
        }
    }
    out
}

/// The spec's criteria: tasks.md's Done when bullets and requirements.md's ACs.
pub fn criteria(spec: &Spec, list: &TaskList) -> Result<Vec<Criterion>> {
    let req = spec.artifact_path("requirements");
    let text = match store::read_optional(&req)? {
        None => None,
        Some(bytes) => Some(String::from_utf8(bytes).map_err(|_| Error::NotUtf8 { path: req })?),
    };
    Ok(acceptance::spec_criteria(list, text.as_deref()))
}

/// Whether the execution enforces criteria: `state init` of this version sets it; an
/// execution started before keeps the old behaviour.
pub fn enforced(state: Option<&Value>) -> bool {
    state
        .and_then(|s| s.get(GATE_FIELD))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The acceptance matrix of a spec, for `ac status`, `task complete`, the guard and reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Matrix {
    pub spec: String,
    /// Criteria gate `task complete` and the final completion of this execution.
    pub enforced: bool,
    pub rows: Vec<Row>,
}

impl Matrix {
    pub fn uncovered(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| !r.status.is_covered())
    }
    pub fn for_task(&self, label: &str) -> impl Iterator<Item = &Row> {
        let label = label.to_string();
        self.rows
            .iter()
            .filter(move |r| r.task.as_deref() == Some(&label))
    }
}

/// The matrix from the files as they are now (state read without its lock: a read-only view).
pub fn matrix(project: &Project, spec: &Spec) -> Result<Matrix> {
    let loaded = crate::tasks_file::load(&spec.tasks_path())?;
    let state = store::read_json(&spec.state_path())?;
    matrix_with(project, spec, &loaded.list, state.as_ref())
}

/// The matrix given tasks and state already read (under a lock the caller holds).
pub fn matrix_with(
    project: &Project,
    spec: &Spec,
    list: &TaskList,
    state: Option<&Value>,
) -> Result<Matrix> {
    let crit = criteria(spec, list)?;
    let store = load_store(spec)?;
    let runs = match state {
        Some(s) if !crit.is_empty() => runs(project, spec, s),
        _ => Vec::new(),
    };
    Ok(Matrix {
        spec: spec.name.clone(),
        enforced: enforced(state),
        rows: acceptance::coverage(&crit, &store, &runs),
    })
}

/// One line per uncovered row, for refusals.
pub fn describe_uncovered<'a>(rows: impl Iterator<Item = &'a Row>) -> Vec<String> {
    rows.map(|r| {
        format!(
            "{} ({}) is {}: {}",
            r.id,
            r.text,
            r.status.as_str(),
            r.why.as_deref().unwrap_or("")
        )
    })
    .collect()
}

// ---- verbs ----------------------------------------------------------------------------

fn list(project: &Project, spec: Option<&str>, task: Option<&str>, json_out: bool) -> Result<i32> {
    let ex = Exec::existing(project, spec)?;
    let (spec, loaded) = (&ex.spec, ex.tasks()?);
    if let Some(t) = task {
        loaded.find(t)?;
    }
    let crit: Vec<Criterion> = criteria(spec, &loaded.list)?
        .into_iter()
        .filter(|c| task.is_none() || c.task.as_deref() == task)
        .collect();
    if json_out {
        output::json_line(&json!({"spec": spec.name, "criteria": crit}));
    } else if crit.is_empty() {
        output::line("no acceptance criteria (no Done when bullets, no AC-… in requirements.md)");
    } else {
        for c in &crit {
            let owner = c.task.as_deref().unwrap_or("requirements");
            output::line(&format!("{}\t{}\t{}", c.id, owner, c.text));
        }
    }
    Ok(0)
}

/// The criterion with this id, or an error listing the ids there are.
fn find_criterion(spec: &Spec, list: &TaskList, id: &str) -> Result<Criterion> {
    let crit = criteria(spec, list)?;
    if let Some(c) = crit.iter().find(|c| c.id == id) {
        return Ok(c.clone());
    }
    let known: Vec<&str> = crit.iter().map(|c| c.id.as_str()).collect();
    Err(Error::bad_input(
        "criterion id",
        format!(
            "{id:?} is not a criterion of spec {} (its criteria: {}); `specrun ac list --spec {}` shows them",
            spec.name,
            if known.is_empty() { "none".to_string() } else { known.join(", ") },
            spec.name
        ),
    ))
}

fn map(
    project: &Project,
    spec: Option<&str>,
    id: &str,
    tests: &[String],
    json_out: bool,
) -> Result<i32> {
    let ex = Exec::existing(project, spec)?;
    let (spec, loaded) = (&ex.spec, ex.tasks()?);
    let c = find_criterion(spec, &loaded.list, id)?;
    let tests: Vec<String> = tests
        .iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    if tests.is_empty() {
        return Err(Error::Usage("--test needs a test name".into()));
    }
    let now = now_rfc3339();
    update_store(spec, |s| {
        s.criteria.insert(
            c.id.clone(),
            Mapping {
                text: c.text.clone(),
                tests: tests.clone(),
                mapped_at: Some(now.clone()),
                manual: None,
            },
        );
        Ok(())
    })?;
    ex.record_event(json!({"event": "ac-map", "criterion": c.id, "tests": tests}));
    let state = store::read_json(&spec.state_path()).ok().flatten();
    let runs = state
        .as_ref()
        .map(|s| runs(project, spec, s))
        .unwrap_or_default();
    let states: Vec<_> = tests
        .iter()
        .map(|t| acceptance::test_state(t, &runs))
        .collect();
    for t in states
        .iter()
        .filter(|t| t.state == acceptance::TestState::Missing)
    {
        output::warn(&format!(
            "test {:?} {}; {} stays uncovered until a verify run shows it passing",
            t.name, t.detail, c.id
        ));
    }
    if json_out {
        output::json_line(&json!({"ok": true, "criterion": c.id, "tests": states}));
    } else {
        output::line(&format!("{} mapped to {}", c.id, tests.join(", ")));
    }
    Ok(0)
}

fn confirm(
    project: &Project,
    spec: Option<&str>,
    id: &str,
    reason: &str,
    json_out: bool,
) -> Result<i32> {
    let reason = reason.trim();
    if reason.len() < 10 {
        return Err(Error::bad_input(
            "--reason",
            "say why no automated test can cover this criterion and how it was checked (10 characters at least)",
        ));
    }
    let ex = Exec::existing(project, spec)?;
    let (spec, loaded) = (&ex.spec, ex.tasks()?);
    let c = find_criterion(spec, &loaded.list, id)?;
    let now = now_rfc3339();
    update_store(spec, |s| {
        let entry = s.criteria.entry(c.id.clone()).or_default();
        entry.text = c.text.clone();
        entry.manual = Some(Manual {
            reason: reason.to_string(),
            at: now.clone(),
        });
        Ok(())
    })?;
    ex.record_event(
        json!({"event": "ac-confirm", "criterion": c.id, "manual": true, "reason": reason}),
    );
    if json_out {
        output::json_line(
            &json!({"ok": true, "criterion": c.id, "manual": true, "reason": reason}),
        );
    } else {
        output::line(&format!(
            "{} confirmed by hand (manual, not a test): {reason}",
            c.id
        ));
    }
    Ok(0)
}

fn status(
    project: &Project,
    spec: Option<&str>,
    task: Option<&str>,
    json_out: bool,
) -> Result<i32> {
    let ex = Exec::existing(project, spec)?;
    let (spec, loaded) = (&ex.spec, ex.tasks()?);
    if let Some(t) = task {
        loaded.find(t)?;
    }
    let state = store::read_json(&spec.state_path())?;
    let mut m = matrix_with(project, spec, &loaded.list, state.as_ref())?;
    if let Some(t) = task {
        m.rows.retain(|r| r.task.as_deref() == Some(t));
    }
    let all_covered = m.uncovered().next().is_none();
    if json_out {
        output::json_line(&serde_json::to_value(&m).expect("matrix serialises"));
    } else {
        print_matrix(&m);
    }
    Ok(if all_covered { 0 } else { 1 })
}

fn print_matrix(m: &Matrix) {
    if m.rows.is_empty() {
        output::line("no acceptance criteria");
        return;
    }
    for r in &m.rows {
        let owner = r.task.as_deref().unwrap_or("req");
        output::line(&format!(
            "{:<10} {:<6} {:<8} {}",
            r.id,
            owner,
            r.status.as_str(),
            r.text
        ));
        for t in &r.tests {
            output::line(&format!(
                "    {} [{}] {}",
                t.name,
                state_word(t.state),
                t.detail
            ));
        }
        if let Some(man) = &r.manual {
            output::line(&format!(
                "    MANUAL (no test): {} ({})",
                man.reason, man.at
            ));
        }
        if let Some(why) = r.why.as_deref().filter(|_| r.tests.is_empty()) {
            output::line(&format!("    {why}"));
        }
    }
    let covered = m
        .rows
        .iter()
        .filter(|r| r.status == acceptance::Status::Covered)
        .count();
    let manual = m
        .rows
        .iter()
        .filter(|r| r.status == acceptance::Status::Manual)
        .count();
    let open = m.rows.len() - covered - manual;
    output::line(&format!(
        "{covered} covered by tests, {manual} manual, {open} uncovered; {}",
        if m.enforced {
            "enforced by task complete and the completion gate"
        } else {
            "not enforced for this execution (started before criteria tracking, or acceptanceGate is false)"
        }
    ));
}

fn state_word(s: acceptance::TestState) -> &'static str {
    match s {
        acceptance::TestState::Passed => "passed",
        acceptance::TestState::Failed => "failed",
        acceptance::TestState::Stale => "stale",
        acceptance::TestState::Missing => "missing",
    }
}
