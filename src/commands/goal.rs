//! `specrun goal`: prepare Claude Code's native `/goal` driver. Probes `claude --version`
//! (bounded, never hangs) and the four settings files, then prints the condition, its
//! length against the limit, readiness and the recommended driver. Readiness is data:
//! the exit code is 0 whatever it says.

use serde::Serialize;

use crate::claude::goal::{self, GoalFacts, LengthStatus};
use crate::claude::probe;
use crate::cli::GoalArgs;
use crate::commands::exec::Exec;
use crate::error::{ExitStatus, Result};
use crate::io::output;
use crate::io::project::Project;
use crate::model::state::{EvidenceRecord, Phase};
use crate::next::facts::{self, StateRead};

pub(crate) fn run(project: &Project, args: GoalArgs) -> Result<ExitStatus> {
    let ex = Exec::existing(project, args.spec.spec.as_deref())?;
    let (spec, loaded) = (&ex.spec, ex.tasks()?);
    let state = facts::read_typed(&spec.state_path());
    let state_doc = match &state {
        StateRead::Valid(doc) => Some(doc),
        _ => None,
    };
    let counts = loaded.list.counts();
    let facts = GoalFacts {
        spec_name: spec.name.clone(),
        tasks_file: loaded
            .path
            .strip_prefix(&project.root)
            .unwrap_or(&loaded.path)
            .to_string_lossy()
            .into_owned(),
        completed: counts.completed,
        total: counts.total,
        remaining: loaded
            .list
            .tasks
            .iter()
            .filter(|t| !t.checked)
            .map(|t| format!("{} {}", t.label(), t.title))
            .collect(),
        last_verifier: state_doc
            .and_then(|s| s.verification_block("execution"))
            .and_then(EvidenceRecord::command)
            .map(str::to_string),
        max_turns: args
            .max_turns
            .or_else(|| state_doc.map(|s| s.max_global_iterations()))
            .unwrap_or(goal::DEFAULT_MAX_TURNS),
    };
    let condition = goal::build_condition(&facts);
    let mut readiness = probe::probe_readiness(project);
    let (driver, why) = goal::recommend_driver(&readiness, &condition.length);
    readiness.reasons.push(why);

    let mut warnings = std::mem::take(&mut readiness.warnings);
    match condition.length.status {
        LengthStatus::WithinLimit => {}
        LengthStatus::Compressed => warnings.push(format!(
            "the condition was shortened to fit Claude Code's {}-character /goal limit",
            goal::CONDITION_LIMIT
        )),
        LengthStatus::OverLimit => warnings.push(format!(
            "the condition is {} characters, over Claude Code's {}-character /goal limit: /goal will refuse it",
            condition.length.chars,
            goal::CONDITION_LIMIT
        )),
    }
    // The goal cannot be met while the execution cannot run; say so before it is set.
    match &state {
        StateRead::Absent => warnings.push(format!(
            "spec {} has no execution state: run `specrun state init {}` before setting the goal",
            spec.name,
            crate::support::shell::spec_flag(&spec.name)
        )),
        StateRead::Invalid(e) => warnings.push(format!(
            "the execution state cannot be read ({e}): the guard and the task verbs will refuse it"
        )),
        StateRead::Valid(s) => {
            if s.halt().is_some() {
                warnings.push(format!(
                    "spec {} is halted ({}): the goal cannot be met until {}",
                    spec.name,
                    s.halt_reason().unwrap_or("no reason recorded"),
                    crate::claude::roles::for_person(&s.resume_command(&spec.name))
                ));
            } else if let Some(phase @ ("completed" | "cancelled")) = s.phase().map(Phase::as_str) {
                warnings.push(format!(
                    "spec {} is {phase}: the guard no longer drives it",
                    spec.name
                ));
            }
        }
    }
    if counts.total == 0 {
        warnings.push(format!(
            "{} has no tasks: the goal can be met only after tasks are planned",
            loaded.path.display()
        ));
    }
    output::json_pretty(&Answer {
        slash_command: format!("/goal {}", condition.text),
        condition: &condition.text,
        condition_length: &condition.length,
        readiness: &readiness,
        recommended_driver: driver,
        evidence_protocol: goal::evidence_protocol(&spec.name),
        warnings,
    });
    Ok(ExitStatus::Success)
}

/// `goal`'s answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    slash_command: String,
    condition: &'a str,
    condition_length: &'a goal::ConditionLength,
    readiness: &'a goal::Readiness,
    recommended_driver: goal::DriverChoice,
    evidence_protocol: Vec<String>,
    warnings: Vec<String>,
}
