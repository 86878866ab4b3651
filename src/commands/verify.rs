//! `specrun verify run|status` (docs/design.md#evidence): run a verification command and
//! record evidence bound to the working-tree fingerprint it started from; say whether that
//! evidence still holds.
//!
//! The command's own output (stdout and stderr, interleaved as written) streams live to
//! our stderr, so our stdout stays one JSON document a caller can parse.

use serde::Serialize;
use serde_json::Value;

use crate::cli::VerifyCommand;
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::verify::{self, Fingerprint, Freshness, RunRecord, Slot};
use crate::evidence::verify_run::{plan_run, record_run, RunPlan, TIMEOUT_EXIT};
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::isolation::worktree::Isolation;
use crate::model::plan::{verify_of, Frozen};
use crate::model::state::{EvidenceRecord, State};
use crate::model::tasks_file;

pub(crate) const DEFAULT_PHASE: &str = "execution";

pub(crate) fn run(project: &Project, cmd: VerifyCommand) -> Result<ExitStatus> {
    match cmd {
        VerifyCommand::Run {
            command,
            accept_other,
            phase,
            task,
            final_check,
            spec,
            timeout,
        } => {
            let ex = Exec::new(project, spec.spec.as_deref())?;
            let slot = resolve_slot(&ex, phase, task)?;
            let command = match final_check {
                true => Some(frozen_final_check(&ex)?),
                false => command,
            };
            let plan = plan_run(&ex.spec, &slot, command, accept_other)?;
            run_and_record(project, &ex.spec, &slot, &plan, timeout)
        }
        VerifyCommand::Status {
            phase,
            task,
            spec,
            json,
        } => {
            let ex = Exec::new(project, spec.spec.as_deref())?;
            let slot = resolve_slot(&ex, phase, task)?;
            status(project, &ex.spec, &slot, json)
        }
    }
}

/// `--final`: the plan's frozen final check (tasks.md's when none was frozen).
fn frozen_final_check(ex: &Exec) -> Result<String> {
    let state = crate::model::state::read_lenient(&ex.spec.state_path())?;
    let frozen = state.as_ref().map_or(Frozen::None, State::frozen_plan);
    let list = ex.tasks()?.list;
    match crate::model::plan::final_check_of(frozen, &list) {
        Some(check) => Ok(check.command),
        None => Err(Error::Usage(format!(
            "{} declares no final check: add the line {} before the first task",
            ex.spec.tasks_path().display(),
            crate::model::tasks::FINAL_CHECK_LINE
        ))),
    }
}

/// `--phase P` or `--task ID` (checked against tasks.md), not both; default the
/// execution phase.
fn resolve_slot(ex: &Exec, phase: Option<String>, task: Option<String>) -> Result<Slot> {
    match (phase, task) {
        (Some(_), Some(_)) => Err(Error::Usage(
            "--phase and --task name different evidence slots; give one of them".into(),
        )),
        (None, Some(id)) => {
            ex.require_task(&id)?;
            Ok(Slot::Task(id))
        }
        (phase, None) => {
            let phase = phase.unwrap_or_else(|| DEFAULT_PHASE.to_string());
            verify::validate_phase(&phase)?;
            Ok(Slot::Phase(phase))
        }
    }
}

fn run_and_record(
    project: &Project,
    spec: &Spec,
    slot: &Slot,
    plan: &RunPlan,
    timeout: Option<u64>,
) -> Result<ExitStatus> {
    let (record, stored) = record_run(project, spec, slot, plan, timeout)?;
    report_run(spec, slot, &record);
    output::json_line(&Recorded {
        record: &stored,
        spec: &spec.name,
        slot: slot.describe(),
    });
    Ok(ExitStatus::Passed(if record.timed_out {
        TIMEOUT_EXIT
    } else {
        record.exit_code
    }))
}

fn report_run(spec: &Spec, slot: &Slot, record: &RunRecord) {
    let verdict = if record.timed_out {
        "timed out (process group killed)".to_string()
    } else {
        format!("exit {}", record.exit_code)
    };
    output::note(&format!(
        "verify: {verdict} after {} ms; recorded in {} of {} against tree {} ({})",
        record.duration_ms,
        slot.describe(),
        spec.name,
        short(&record.before.tree),
        record.before.method.as_str(),
    ));
    if record.before != record.after {
        output::warn(&format!(
            "the command changed the working tree ({} -> {}); the evidence is bound to the tree it started from and is stale now: re-run it on the result",
            short(&record.before.tree),
            short(&record.after.tree),
        ));
    }
}

fn short(tree: &str) -> &str {
    crate::support::chars::prefix(tree, 12)
}

fn status(project: &Project, spec: &Spec, slot: &Slot, json_out: bool) -> Result<ExitStatus> {
    let state = crate::model::state::read_lenient(&spec.state_path())?;
    let record = state.as_ref().and_then(|s| slot.record_of(s));
    // Only a passing record needs the current tree.
    let passed = record.is_some_and(verify::passed);
    let current: Option<Fingerprint> = if passed {
        Some(verify::fingerprint_for(project, spec, record)?)
    } else {
        None
    };
    let freshness = verify::assess(record, current.as_ref().map(|f| f.tree.as_str()));
    // A task's record counts only from its own Verify command (or one a person accepted).
    let fit = match (slot, record) {
        (Slot::Task(id), Some(r)) => {
            let list = tasks_file::load(&spec.tasks_path())?.list;
            let frozen = state.as_ref().map_or(Frozen::None, State::frozen_plan);
            let own = list.find(id).ok().and_then(|t| verify_of(frozen, t));
            Some(verify::command_fit(r, own))
        }
        _ => None,
    };
    let mismatch = match (slot, &fit) {
        (Slot::Task(id), Some(fit)) => fit.problem(&spec.name, id),
        _ => None,
    };
    // The record's own fields, as recorded (null when absent).
    let kept = |field: fn(&EvidenceRecord) -> Option<Value>| record.and_then(field);
    let reason = match freshness {
        _ if mismatch.is_some() => format!(
            "{} but does not count for the task: {}",
            freshness.as_str(),
            mismatch.as_deref().unwrap_or_default()
        ),
        Freshness::Fresh => "recorded against the current tree and passing".to_string(),
        Freshness::Stale => {
            let changed = record.and_then(|r| r.tree_changed.get()) == Some(&true);
            let after = record.and_then(|r| r.tree_after.get()).map(String::as_str);
            if changed && current.as_ref().map(|c| c.tree.as_str()) == after {
                "the command itself changed the working tree; re-run it on the result".to_string()
            } else {
                "the working tree changed since the evidence was recorded".to_string()
            }
        }
        Freshness::Failed => {
            if record.is_some_and(EvidenceRecord::timed_out) {
                "the command timed out".to_string()
            } else {
                let code = kept(|r| r.exit_code.to_json());
                format!("the command exited {}", code.unwrap_or(Value::Null))
            }
        }
        Freshness::Missing if state.is_none() => format!(
            "no state file at {} (run `specrun state init {}`)",
            spec.state_path().display(),
            crate::support::shell::spec_flag(&spec.name)
        ),
        Freshness::Missing => format!("no evidence in {}", slot.describe()),
    };
    // Evidence a member recorded in its worktree says where it is judged now.
    let note = verify::merged_note(record).or_else(|| {
        let name = verify::worktree_gone(project, spec, record)?;
        let iso = state.as_ref().map(Isolation::of);
        Some(crate::isolation::gone_note(&iso.unwrap_or_default(), &name))
    });
    let reason = match note {
        Some(note) => format!("{reason}; {note}"),
        None => reason,
    };
    let has_own_verify = !matches!(fit, None | Some(verify::CommandFit::NoVerify));
    let rerun = record
        .and_then(EvidenceRecord::command)
        .filter(|_| freshness != Freshness::Fresh || mismatch.is_some())
        .map(|c| match slot {
            // Without --command, `verify run --task` runs the task's Verify command.
            Slot::Task(id) if has_own_verify => format!(
                "specrun verify run {} --task {}",
                crate::support::shell::spec_flag(&spec.name),
                crate::support::shell::word(id)
            ),
            _ => rerun_command(spec, slot, c),
        });
    if json_out {
        let method = current.as_ref().map(|c| Value::from(c.method.as_str()));
        output::json_line(&Status {
            spec: &spec.name,
            slot: slot.describe(),
            status: freshness.as_str(),
            reason: &reason,
            command: kept(|r| r.command.to_json()),
            exit_code: kept(|r| r.exit_code.to_json()),
            timed_out: kept(|r| r.timed_out.to_json()),
            started_at: kept(|r| r.started_at.to_json()),
            recorded_tree: kept(|r| r.tree.to_json()),
            current_tree: current.as_ref().map(|c| c.tree.as_str()),
            tree_method: method.or_else(|| kept(|r| r.tree_method.to_json())),
            rerun: rerun.as_deref(),
            counts: freshness.is_ok() && mismatch.is_none(),
            accepted_other: kept(|r| r.accepted_other.to_json()),
        });
    } else {
        let mut line = format!(
            "{}: {} of {} — {reason}",
            freshness.as_str(),
            slot.describe(),
            spec.name
        );
        if let Some(c) = record.and_then(EvidenceRecord::command) {
            line.push_str(&format!("; command: {c}"));
        }
        output::line(&line);
        if let Some(r) = rerun {
            output::line(&format!("re-run: {r}"));
        }
    }
    Ok(ExitStatus::yes_no(freshness.is_ok() && mismatch.is_none()))
}

/// `verify status --json`: the verdict, then the record's own fields as recorded (null
/// when absent).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Status<'a> {
    spec: &'a str,
    slot: String,
    status: &'static str,
    reason: &'a str,
    command: Option<Value>,
    exit_code: Option<Value>,
    timed_out: Option<Value>,
    started_at: Option<Value>,
    recorded_tree: Option<Value>,
    current_tree: Option<&'a str>,
    tree_method: Option<Value>,
    rerun: Option<&'a str>,
    counts: bool,
    accepted_other: Option<Value>,
}

/// `verify run --json`: the record as stored, then where.
#[derive(Serialize)]
struct Recorded<'a> {
    #[serde(flatten)]
    record: &'a EvidenceRecord,
    spec: &'a str,
    slot: String,
}

/// The command line that records fresh evidence for `slot` again.
fn rerun_command(spec: &Spec, slot: &Slot, command: &str) -> String {
    let slot_flag = match slot {
        Slot::Task(id) => format!(" --task {}", crate::support::shell::word(id)),
        Slot::Phase(p) if p == DEFAULT_PHASE => String::new(),
        Slot::Phase(p) => format!(" --phase {}", crate::support::shell::word(p)),
    };
    format!(
        "specrun verify run {}{slot_flag} --command {}",
        crate::support::shell::spec_flag(&spec.name),
        crate::support::shell::word(command)
    )
}
