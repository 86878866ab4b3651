//! The spec's acceptance files and the coverage matrix: the I/O around `acceptance`.
//! `acceptance.json` (the criteria's mappings to tests and the justifications, under its
//! own lock), the test results of each verify run (`test-results/<slot>.json`) and the
//! matrix the `ac` verbs, `task complete`, the guard and last-mile judge.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::evidence::acceptance::{self, Criterion, Row, Run, Store};
use crate::evidence::testlog::{self, Outcome, Report};
use crate::evidence::verify::{self, Slot};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::model::plan::{verify_of, Frozen};
use crate::model::state::{EvidenceRecord, State};
use crate::model::tasks::TaskList;

pub(crate) const STORE_FILE: &str = crate::io::project::ACCEPTANCE_FILE;
pub(crate) const RESULTS_DIR: &str = crate::io::project::TEST_RESULTS_DIR;

// ---- files ----------------------------------------------------------------------------

pub(crate) fn store_path(spec: &Spec) -> PathBuf {
    spec.dir.join(STORE_FILE)
}

/// acceptance.json (absent = empty). A file that does not parse is an error naming it; it
/// is never replaced.
pub(crate) fn load_store(spec: &Spec) -> Result<Store> {
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
pub(crate) fn update_store<T>(
    spec: &Spec,
    change: impl FnOnce(&mut Store) -> Result<T>,
) -> Result<T> {
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
pub(crate) fn write_results(spec: &Spec, slot: &Slot, started_at: &str, report: &Report) -> Value {
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
    let summary = TestsSummary {
        digest: crate::support::sha256::hex(&bytes),
        runners,
        passed: report.count(Outcome::Passed),
        failed: report.count(Outcome::Failed),
        skipped: report.count(Outcome::Skipped),
        truncated: report.truncated,
    };
    serde_json::to_value(summary).expect("a summary serializes")
}

/// An evidence record's `tests`: what the run's output told.
#[derive(Serialize)]
struct TestsSummary<'a> {
    /// SHA-256 of the results file as written: a file that does not match proves nothing.
    digest: String,
    runners: Vec<&'a str>,
    passed: usize,
    failed: usize,
    skipped: usize,
    truncated: bool,
}

/// Say on stderr what the output told about tests (nothing recognised names the runners).
pub(crate) fn note_results(report: &Report) {
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

/// The results stored for `slot`, when they are the ones the binary wrote for the record
/// now in the state: the file's SHA-256 is the record's `tests.digest` (a file edited,
/// appended to or written by hand proves nothing; so does a record without a digest).
pub(crate) fn read_results(spec: &Spec, slot: &Slot, record: &EvidenceRecord) -> Option<Report> {
    let digest = record.tests_digest()?;
    let started = record.started_at()?;
    let bytes = store::read_optional(&results_path(spec, slot)).ok()??;
    if crate::support::sha256::hex(&bytes) != digest {
        return None;
    }
    let stored: StoredResults = serde_json::from_slice(&bytes).ok()?;
    (stored.started_at == started).then_some(stored.report)
}

// ---- facts ----------------------------------------------------------------------------

/// Every evidence record of the state with its freshness and test results. The tree is
/// fingerprinted once per distinct `excludedPaths`.
pub(crate) fn runs(project: &Project, spec: &Spec, state: &State, list: &TaskList) -> Vec<Run> {
    let frozen = state.frozen_plan();
    let final_check = crate::model::plan::final_check_of(frozen, list).map(|c| c.command);
    // Whether a record's command is the plan's: the final check in any slot, or a task
    // slot's own frozen Verify (or another a person accepted). A plan with no final check
    // at all (a state from before) lets a phase's run count, as it did.
    let plan_command = |slot: &Slot, record: &EvidenceRecord| {
        let ran = record.command().unwrap_or("").trim();
        match (slot, &final_check) {
            (_, Some(check)) if ran == check.trim() => true,
            (Slot::Task(id), _) => {
                let own = list.find(id).ok().and_then(|t| verify_of(frozen, t));
                own.is_some() && verify::command_fit(record, own).counts()
            }
            (Slot::Phase(_), check) => check.is_none(),
        }
    };
    let mut trees: BTreeMap<Vec<String>, Option<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for (map, make) in [
        (
            &state.verification_blocks,
            Slot::Phase as fn(String) -> Slot,
        ),
        (&state.task_evidence, Slot::Task as fn(String) -> Slot),
    ] {
        let Some(map) = map else {
            continue;
        };
        for (name, record) in map {
            let slot = make(name.clone());
            let tree = if verify::passed(record) {
                let excluded = verify::excluded_paths(Some(record));
                trees
                    .entry(excluded.clone())
                    .or_insert_with(|| {
                        verify::fingerprint_excluding(project, spec, &excluded)
                            .ok()
                            .map(|f| f.tree)
                    })
                    .clone()
            } else {
                None
            };
            let report = read_results(spec, &slot, record);
            out.push(Run {
                untrusted: report.is_none() && record.has_tests_digest(),
                spec: spec.name.clone(),
                slot: slot.clone(),
                command: record.command().unwrap_or("").to_string(),
                freshness: verify::assess(Some(record), tree.as_deref()),
                report,
                plan_command: plan_command(&slot, record),
            });
        }
    }
    out
}

/// The spec's criteria: tasks.md's Done when bullets and requirements.md's ACs.
pub(crate) fn criteria(spec: &Spec, list: &TaskList) -> Result<Vec<Criterion>> {
    let req = spec.artifact_path("requirements");
    let text = match store::read_optional(&req)? {
        None => None,
        Some(bytes) => Some(String::from_utf8(bytes).map_err(|_| Error::NotUtf8 { path: req })?),
    };
    Ok(acceptance::spec_criteria(list, text.as_deref()))
}

/// Whether the execution enforces criteria: `state init` of this version sets it; an
/// execution started before keeps the old behaviour.
pub(crate) fn enforced(state: Option<&State>) -> bool {
    state.is_some_and(State::acceptance_gate)
}

/// The acceptance matrix of a spec, for `ac status`, `task complete`, the guard and reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Matrix {
    pub spec: String,
    /// Criteria gate `task complete` and the final completion of this execution.
    pub enforced: bool,
    pub rows: Vec<Row>,
    /// The recorded runs the rows were judged from (red-before reruns their commands).
    #[serde(skip)]
    pub runs: Vec<Run>,
}

impl Matrix {
    pub(crate) fn uncovered(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| !r.status.is_covered())
    }
    pub(crate) fn for_task(&self, label: &str) -> impl Iterator<Item = &Row> {
        let label = label.to_string();
        self.rows
            .iter()
            .filter(move |r| r.task.as_deref() == Some(&label))
    }
}

/// The matrix given tasks and state already read (under a lock the caller holds).
pub(crate) fn matrix_with(
    project: &Project,
    spec: &Spec,
    list: &TaskList,
    state: Option<&State>,
) -> Result<Matrix> {
    let crit = criteria(spec, list)?;
    let store = load_store(spec)?;
    let runs = match state {
        Some(s) if !crit.is_empty() => runs(project, spec, s, list),
        _ => Vec::new(),
    };
    let checks = checks(list, state, &runs);
    Ok(Matrix {
        spec: spec.name.clone(),
        enforced: enforced(state),
        rows: acceptance::coverage(&crit, &store, &runs, &checks),
        runs,
    })
}

/// The tasks whose own Verify (the frozen plan's) is a shell check, each with how the run
/// of exactly that command in its slot stands. A run whose output held test results was a
/// test runner's after all: its criteria map to those tests.
fn checks(list: &TaskList, state: Option<&State>, runs: &[Run]) -> Vec<acceptance::Check> {
    let frozen = state.map_or(Frozen::None, State::frozen_plan);
    let mut out = Vec::new();
    for task in &list.tasks {
        let Some(command) = verify_of(frozen, task).filter(|c| acceptance::is_shell_check(c))
        else {
            continue;
        };
        let slot = Slot::Task(task.label());
        let run = runs
            .iter()
            .find(|r| r.slot == slot && r.command.trim() == command);
        let tested = run.is_some_and(|r| r.report.as_ref().is_some_and(|t| !t.runners.is_empty()));
        if tested {
            continue;
        }
        // The passing run `task complete` accepted covers the task's criteria from then on:
        // later tasks change the tree (stale), but they are judged by their own checks.
        let done = state.is_some_and(|s| {
            let last = s.attempts_of(&task.label()).last();
            task.checked && last.is_some_and(|a| a.status.as_deref() == Some("done"))
        });
        let freshness = match run.map(|r| r.freshness) {
            Some(verify::Freshness::Stale) if done => verify::Freshness::Fresh,
            other => other.unwrap_or(verify::Freshness::Missing),
        };
        out.push(acceptance::Check {
            task: task.label(),
            command: command.to_string(),
            freshness,
        });
    }
    out
}

/// One line per uncovered row, for refusals.
pub(crate) fn describe_uncovered<'a>(rows: impl Iterator<Item = &'a Row>) -> Vec<String> {
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
