//! The facts the gates are judged on, gathered from disk: a task's evidence as it counts
//! for it (`task complete`, the SubagentStop hook), the open blocking follow-ups, and the
//! completion gates (the Stop hook's `ALL_TASKS_COMPLETE`, `finish`, last-mile). The
//! judging itself is `protocol`'s, `guard`'s and `completion`'s.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::evidence::criteria;
use crate::evidence::followups;
use crate::evidence::verify::{self, Slot};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::model::state::{EvidenceRecord, State};
use crate::model::tasks_file;
use crate::next::completion::{Blocker, Gates as CompletionGates};
use crate::protocol::EvidenceFact;

/// The evidence in `slot` as it counts for task `id`, whose Verify command is `own_verify`.
pub(crate) fn evidence_fact(
    project: &Project,
    spec: &Spec,
    state: &State,
    slot: Slot,
    (id, own_verify): (&str, Option<&str>),
) -> EvidenceFact {
    let record = slot.record_of(state);
    let freshness = verify::check_record(project, spec, record);
    let ended_at = record.and_then(verify::ended_at);
    let mismatch = record.and_then(|r| verify::command_fit(r, own_verify).problem(&spec.name, id));
    EvidenceFact {
        freshness,
        ended_at,
        mismatch,
    }
}

/// Summaries of open blocking follow-ups; an unreadable store is warned about.
pub(crate) fn blocking_followups(spec: &Spec) -> Vec<String> {
    blocking_followups_items(spec)
        .iter()
        .map(|i| i.summary())
        .collect()
}

/// Open blocking follow-ups; an unreadable store is warned about (stderr) and yields none.
pub(crate) fn blocking_followups_items(spec: &Spec) -> Vec<followups::Item> {
    match followups::load(spec) {
        Ok(store) => store.blocking_open().into_iter().cloned().collect(),
        Err(e) => {
            output::warn(&format!("follow-ups unreadable: {e}"));
            Vec::new()
        }
    }
}

/// What the completion gates read from the state: the evidence records (the execution
/// phase's, and the tasks' for the criteria matrix) and whether criteria are enforced.
/// Gates judged from one state hold for another with the same key, so they are gathered
/// before the state lock is taken (they fingerprint the tree) and kept when it matches.
pub(crate) fn completion_key(state: &State) -> CompletionKey<'_> {
    (
        state.verification_blocks.as_ref(),
        state.task_evidence.as_ref(),
        state.acceptance_gate,
        state.test_baseline.as_ref(),
    )
}

/// What `completion_key` compares: `verificationBlocks`, `taskEvidence`, `acceptanceGate`,
/// `testBaseline`.
pub(crate) type CompletionKey<'a> = (
    Option<&'a IndexMap<String, EvidenceRecord>>,
    Option<&'a IndexMap<String, EvidenceRecord>>,
    Option<bool>,
    Option<&'a Map<String, Value>>,
);

/// The facts the completion gates are judged on (the Stop hook and `specrun finish`).
pub(crate) fn completion_gates(project: &Project, spec: &Spec, state: &State) -> CompletionGates {
    let record = Slot::Phase("execution".into()).record_of(state);
    let (criteria, proposed) = uncovered_criteria(project, spec, state);
    CompletionGates {
        evidence: verify::check_record(project, spec, record),
        blockers: open_blockers(spec),
        criteria,
        proposed,
        baseline: crate::evidence::baseline_store::missing(spec, state),
    }
}

/// The spec's uncovered criteria when the execution enforces them, and apart from them the
/// ones proposed as manual (waiting for a person); an unreadable store or requirements.md
/// is itself one unmet line.
fn uncovered_criteria(project: &Project, spec: &Spec, state: &State) -> (Vec<String>, Vec<String>) {
    if !criteria::enforced(Some(state)) {
        return (Vec::new(), Vec::new());
    }
    match tasks_file::load(&spec.tasks_path())
        .and_then(|loaded| criteria::matrix_with(project, spec, &loaded.list, Some(state)))
    {
        Ok(m) => {
            let proposed = |r: &&crate::evidence::acceptance::Row| {
                r.status == crate::evidence::acceptance::Status::Proposed
            };
            (
                criteria::describe_uncovered(m.uncovered().filter(|r| !proposed(r))),
                criteria::describe_uncovered(m.uncovered().filter(proposed)),
            )
        }
        Err(e) => (vec![format!("criteria cannot be read: {e}")], Vec::new()),
    }
}

/// Open VERIFY/high follow-ups in `followups.json` (absent = none), read by the same
/// parser as the `followup` verbs: a file they refuse is unreadable here too.
fn open_blockers(spec: &Spec) -> std::result::Result<Vec<Blocker>, String> {
    let store = followups::load(spec).map_err(|e| e.to_string())?;
    Ok(store
        .blocking_open()
        .into_iter()
        .map(|i| Blocker {
            id: i.id.clone(),
            title: i.title.clone(),
        })
        .collect())
}
