//! `specrun ac list|map|propose|confirm|status`: acceptance criteria, their mappings to tests
//! (`specs/<name>/acceptance.json`, under its own lock) and the coverage matrix. The test
//! results of each verify run sit in `specs/<name>/test-results/<slot>.json`.
//!
//! The files and the matrix are `crate::evidence::criteria`'s; this module parses and prints.

use serde::Serialize;

use crate::cli::{AcCommand, ManualArgs};
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::acceptance::{self, Criterion, Manual, Mapping};
use crate::evidence::criteria::{criteria, matrix_with, runs, update_store, Matrix};
use crate::io::events::now_rfc3339;
use crate::io::events::Event;
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::model::tasks::TaskList;

pub(crate) fn run(project: &Project, cmd: AcCommand) -> Result<ExitStatus> {
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
        AcCommand::Confirm(args) => confirm(project, &args, Hand::Person),
        AcCommand::Propose(args) => confirm(project, &args, Hand::Model),
        AcCommand::Status { task, spec, json } => {
            status(project, spec.spec.as_deref(), task.as_deref(), json)
        }
    }
}

// ---- verbs ----------------------------------------------------------------------------

fn list(
    project: &Project,
    spec: Option<&str>,
    task: Option<&str>,
    json_out: bool,
) -> Result<ExitStatus> {
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
        output::json_line(&Listed {
            spec: &spec.name,
            criteria: &crit,
        });
    } else if crit.is_empty() {
        output::line("no acceptance criteria (no Done when bullets, no AC-… in requirements.md)");
    } else {
        for c in &crit {
            let owner = c.task.as_deref().unwrap_or("requirements");
            output::line(&format!("{}\t{}\t{}", c.id, owner, c.text));
        }
    }
    Ok(ExitStatus::Success)
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
            "{id:?} is not a criterion of spec {} (its criteria: {}); `specrun ac list {}` shows them",
            spec.name,
            if known.is_empty() { "none".to_string() } else { known.join(", ") },
            crate::support::shell::spec_flag(&spec.name)
        ),
    ))
}

fn map(
    project: &Project,
    spec: Option<&str>,
    id: &str,
    tests: &[String],
    json_out: bool,
) -> Result<ExitStatus> {
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
                proposed: None,
            },
        );
        Ok(())
    })?;
    ex.record_event(&Event::AcMap {
        criterion: &c.id,
        tests: &tests,
    });
    let state = crate::next::facts::read_lenient(&spec.state_path())
        .ok()
        .flatten();
    let runs = state
        .as_ref()
        .map(|s| runs(project, spec, s, &loaded.list))
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
        output::json_line(&Mapped {
            ok: true,
            criterion: &c.id,
            tests: &states,
        });
    } else {
        output::line(&format!("{} mapped to {}", c.id, tests.join(", ")));
    }
    Ok(ExitStatus::Success)
}

/// Who covers a criterion by hand: a person confirms (`ac confirm`, at a shell), the model
/// proposes (`ac propose`), which counts only once a person confirms.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hand {
    Person,
    Model,
}

fn confirm(project: &Project, args: &ManualArgs, hand: Hand) -> Result<ExitStatus> {
    let (spec, id, json_out) = (args.spec.spec.as_deref(), args.id.as_str(), args.json);
    let reason = args.reason.trim();
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
    let record = Manual {
        reason: reason.to_string(),
        at: now.clone(),
    };
    let already = update_store(spec, |s| {
        let entry = s.criteria.entry(c.id.clone()).or_default();
        let same_text = entry.text.trim() == c.text.trim();
        entry.text = c.text.clone();
        match hand {
            Hand::Person => {
                entry.manual = Some(record.clone());
                entry.proposed = None;
                Ok(false)
            }
            // A person's confirmation of this very text stands; a proposal does not undo it.
            Hand::Model if same_text && entry.manual.is_some() => Ok(true),
            Hand::Model => {
                entry.manual = None;
                entry.proposed = Some(record.clone());
                Ok(false)
            }
        }
    })?;
    match hand {
        Hand::Person => ex.record_event(&Event::AcConfirm {
            criterion: &c.id,
            manual: true,
            reason,
        }),
        Hand::Model => ex.record_event(&Event::AcPropose {
            criterion: &c.id,
            reason,
        }),
    }
    let manual = hand == Hand::Person || already;
    if json_out {
        output::json_line(&Confirmed {
            ok: true,
            criterion: &c.id,
            manual,
            proposed: !manual,
            reason,
        });
    } else if hand == Hand::Person {
        output::line(&format!(
            "{} confirmed by hand (manual, not a test): {reason}",
            c.id
        ));
    } else if already {
        output::line(&format!("{} is already confirmed by a person", c.id));
    } else {
        output::line(&format!(
            "{} proposed as manual: it does not hold back `task complete`, and counts for the completion once a person confirms it ({})",
            c.id,
            crate::claude::roles::PERSON_DECIDES
        ));
    }
    Ok(ExitStatus::Success)
}

fn status(
    project: &Project,
    spec: Option<&str>,
    task: Option<&str>,
    json_out: bool,
) -> Result<ExitStatus> {
    let ex = Exec::existing(project, spec)?;
    let (spec, loaded) = (&ex.spec, ex.tasks()?);
    if let Some(t) = task {
        loaded.find(t)?;
    }
    let state = crate::next::facts::read_lenient(&spec.state_path())?;
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
    Ok(ExitStatus::yes_no(all_covered))
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
                t.state.as_str(),
                t.detail
            ));
        }
        if let Some(man) = &r.manual {
            let what = if r.status == acceptance::Status::Proposed {
                "PROPOSED (waiting for a person)"
            } else {
                "MANUAL (no test)"
            };
            output::line(&format!("    {what}: {} ({})", man.reason, man.at));
        }
        if let (Some(check), acceptance::Status::Checked) = (&r.checked_by, r.status) {
            output::line(&format!("    checked by the task's Verify `{check}`"));
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
    let count = |s| m.rows.iter().filter(|r| r.status == s).count();
    let (manual, proposed, checked) = (
        count(acceptance::Status::Manual),
        count(acceptance::Status::Proposed),
        count(acceptance::Status::Checked),
    );
    let open = m.rows.len() - covered - manual - proposed - checked;
    output::line(&format!(
        "{covered} covered by tests, {checked} checked by their task's Verify, {manual} manual, {proposed} proposed (waiting for a person), {open} uncovered; {}",
        if m.enforced {
            "enforced by task complete and the completion gate"
        } else {
            "not enforced for this execution (started before criteria tracking, or acceptanceGate is false)"
        }
    ));
}

/// `ac list --json`.
#[derive(Serialize)]
struct Listed<'a> {
    spec: &'a str,
    criteria: &'a [Criterion],
}

/// `ac map --json`.
#[derive(Serialize)]
struct Mapped<'a> {
    ok: bool,
    criterion: &'a str,
    tests: &'a [acceptance::TestCoverage],
}

/// `ac confirm --json`.
#[derive(Serialize)]
struct Confirmed<'a> {
    ok: bool,
    criterion: &'a str,
    manual: bool,
    proposed: bool,
    reason: &'a str,
}
