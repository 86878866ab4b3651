//! `specrun plan show|accept`: the plan frozen at `state init` (`model::plan`), what
//! tasks.md changed of it, and a person's acceptance of tasks.md as the new plan.

use serde::Serialize;

use crate::cli::PlanCommand;
use crate::commands::exec::Exec;
use crate::error::{ExitStatus, Result};
use crate::io::events::Event;
use crate::io::output;
use crate::io::project::Project;
use crate::model::plan::{Change, Frozen, Plan, PlanTask};
use crate::model::state::Patch;
use crate::support::shell::spec_flag;

pub(crate) fn run(project: &Project, cmd: PlanCommand) -> Result<ExitStatus> {
    match cmd {
        PlanCommand::Show { spec, json } => show(project, spec.spec.as_deref(), json),
        PlanCommand::Accept {
            spec,
            missing_test,
            reason,
        } if !missing_test.is_empty() => accept_missing(
            project,
            spec.spec.as_deref(),
            &missing_test,
            reason.as_deref().unwrap_or(""),
        ),
        PlanCommand::Accept { spec, .. } => accept(project, spec.spec.as_deref()),
    }
}

/// `plan show --json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown<'a> {
    spec: &'a str,
    /// `frozen`, `none` (a state from before plans were frozen) or `broken`.
    plan: &'static str,
    digest: Option<&'a str>,
    tasks: &'a [PlanTask],
    /// The frozen final check (absent in a plan frozen before final checks were).
    final_check: Option<&'a crate::model::tasks::FinalCheck>,
    changes: &'a [Change],
}

fn show(project: &Project, spec: Option<&str>, json: bool) -> Result<ExitStatus> {
    let ex = Exec::new(project, spec)?;
    let (_lock, state) = ex.lock_state()?;
    let list = ex.tasks()?.list;
    let name = &ex.spec.name;
    let (kind, plan) = match state.frozen_plan() {
        Frozen::Plan(p) => ("frozen", Some(p)),
        Frozen::None => ("none", None),
        Frozen::Broken => ("broken", None),
    };
    let changes = plan.map(|p| p.changes(&list)).unwrap_or_default();
    if json {
        output::json_line(&Shown {
            spec: name,
            plan: kind,
            digest: plan.map(|p| p.digest.as_str()),
            tasks: plan.map_or(&[], |p| p.tasks.as_slice()),
            final_check: plan.and_then(|p| p.final_check.as_ref()),
            changes: &changes,
        });
    } else {
        print_plan(name, kind, plan, &changes);
    }
    Ok(match kind {
        "frozen" if changes.is_empty() => ExitStatus::Success,
        "none" => ExitStatus::Success,
        _ => ExitStatus::No,
    })
}

fn print_plan(name: &str, kind: &str, plan: Option<&Plan>, changes: &[Change]) {
    let person = person_hint(name);
    let Some(plan) = plan else {
        output::line(&match kind {
            "none" => format!("{name}: no plan was frozen (the execution began before plans were frozen): tasks.md is read as it stands{person}"),
            _ => format!("{name}: the frozen plan in the state file was edited by hand and no longer matches its digest{person}"),
        });
        return;
    };
    output::line(&format!(
        "{name}: plan frozen at state init, {} tasks, digest {}",
        plan.tasks.len(),
        crate::support::chars::prefix(&plan.digest, 12)
    ));
    output::line(&match &plan.final_check {
        Some(c) => format!("**Final check**: `{}` ({})", c.command, c.source),
        None => "no final check was frozen (a plan from before final checks): any execution evidence completes it".to_string(),
    });
    for t in &plan.tasks {
        let markers: String = t.markers.iter().map(|m| format!(" [{m}]")).collect();
        output::line(&format!("- {}{markers} {}", t.id, t.title));
        let fields = [
            ("Files", Some(t.files.join(", ")).filter(|f| !f.is_empty())),
            ("Done when", t.done_when.clone()),
            ("Verify", t.verify.clone()),
        ];
        for (field, value) in fields {
            if let Some(v) = value {
                output::line(&format!("  - **{field}**: {v}"));
            }
        }
    }
    if changes.is_empty() {
        output::line("tasks.md matches the frozen plan");
        return;
    }
    output::line(&format!("tasks.md differs from it ({}):", changes.len()));
    for c in changes {
        output::line(&format!("  - {c}"));
    }
    if !person.is_empty() {
        output::line(&person[2..]);
    }
}

/// At a shell, the person's command; inside Claude Code, nothing (the model's way is to put
/// tasks.md back or to fail the task).
fn person_hint(name: &str) -> String {
    if crate::claude::releases::inside() {
        return String::new();
    }
    format!(
        "; to make tasks.md as it stands the plan: `specrun plan accept {}`",
        spec_flag(name)
    )
}

fn accept(project: &Project, spec: Option<&str>) -> Result<ExitStatus> {
    // Refused before dispatch too; kept so this function is safe on its own.
    crate::claude::roles::person_only(crate::claude::roles::Decision::AcceptPlan)?;
    let ex = Exec::new(project, spec)?;
    let (_lock, state) = ex.lock_state()?;
    let list = ex.tasks()?.list;
    let next = Plan::freeze(&list);
    let changes: Vec<String> = match state.frozen_plan() {
        Frozen::Plan(p) => p.changes(&list).iter().map(|c| c.to_string()).collect(),
        Frozen::None => vec!["no plan was frozen before".into()],
        Frozen::Broken => vec!["the stored plan was edited by hand".into()],
    };
    let patch = Patch::new()
        .plan(&next)
        .total_tasks(next.tasks.len() as u64);
    ex.write_state(&state, &patch)?;
    ex.record_event(&Event::PlanAccept {
        digest: &next.digest,
        tasks: next.tasks.len(),
        changes: &changes,
    });
    output::line(&format!(
        "{}: tasks.md accepted as the plan ({} tasks, digest {}){}",
        ex.spec.name,
        next.tasks.len(),
        crate::support::chars::prefix(&next.digest, 12),
        if changes.is_empty() {
            "; it matched the frozen plan already".to_string()
        } else {
            format!("; accepted: {}", changes.join("; "))
        }
    ));
    Ok(ExitStatus::Success)
}

/// `plan accept --missing-test NAME --reason WHY`: a person accepts that baseline tests no
/// longer run; the plan itself is not frozen anew.
fn accept_missing(
    project: &Project,
    spec: Option<&str>,
    names: &[String],
    reason: &str,
) -> Result<ExitStatus> {
    crate::claude::roles::person_only(crate::claude::roles::Decision::AcceptMissingTest)?;
    if reason.trim().is_empty() {
        return Err(crate::error::Error::Usage(
            "--reason needs a reason: say why the test need not run".into(),
        ));
    }
    let ex = Exec::new(project, spec)?;
    let (_lock, state) = ex.lock_state()?;
    let kept = crate::evidence::baseline_store::accept(&ex.spec, &state, names, reason.trim())?;
    if let Some(digest) = kept.get("digest").and_then(serde_json::Value::as_str) {
        crate::model::record::allow_baseline(&project.root, &ex.spec.name, digest)?;
    }
    ex.write_state(&state, &Patch::new().test_baseline(&kept))?;
    output::line(&format!(
        "{}: accepted as no longer running: {} ({})",
        ex.spec.name,
        names.join(", "),
        reason.trim()
    ));
    Ok(ExitStatus::Success)
}
