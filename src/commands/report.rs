//! `specrun report [--format md|html|json]`: gather an execution's record and print its story.

use serde_json::Value;

use crate::cli::{ReportArgs, ReportFormat};
use crate::commands::exec::Exec;
use crate::cost;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::critique;
use crate::evidence::followups;
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::io::store;
use crate::next::facts::{read_typed, StateRead};
use crate::next::report::{self, Inputs};

pub(crate) fn run(project: &Project, args: ReportArgs) -> Result<ExitStatus> {
    let ex = Exec::new(project, args.spec.spec.as_deref())?;
    let spec = &ex.spec;
    let state = match read_typed(&spec.state_path()) {
        StateRead::Valid(s) => s,
        StateRead::Absent => {
            return Err(Error::Refused {
                message: format!(
                "spec {} has no execution to report yet: start one with `specrun state init {}`",
                spec.name,
                crate::support::shell::spec_flag(&spec.name)
            ),
            })
        }
        StateRead::Invalid(e) => return Err(Error::Refused { message: e }),
    };
    let tasks = ex.tasks()?.list;
    let followups = followups::load(spec).map(|s| s.items).unwrap_or_default();
    let critiques: Vec<(String, Option<String>, Option<String>)> = tasks
        .tasks
        .iter()
        .map(|t| {
            let id = t.label();
            let code = critique::recorded_at(spec, &id, "post-code");
            let test = critique::recorded_at(spec, &id, "post-test");
            (id, code, test)
        })
        .collect();
    let events = spec_events(project, spec)?;
    let now = chrono::Utc::now();
    // The same cost table as `status`, so the two agree.
    let cost = cost::priced_report(project, &state, &tasks);
    let story = report::build(&Inputs {
        spec: &spec.name,
        state: &state,
        tasks: &tasks,
        followups: &followups,
        critiques: &critiques,
        events: &events,
        cost: &cost,
        now,
    });
    match args.format {
        ReportFormat::Md => output::raw(&report::markdown(&story)),
        ReportFormat::Html => output::raw(&report::html(&story, now)),
        ReportFormat::Json => {
            output::json_pretty(&serde_json::to_value(&story).unwrap_or(Value::Null))
        }
    }
    Ok(ExitStatus::Success)
}

/// This spec's lines of .specrun/events.jsonl (a torn or foreign line is skipped).
fn spec_events(project: &Project, spec: &Spec) -> Result<Vec<Value>> {
    let Some(bytes) = store::read_optional(&project.events_path())? else {
        return Ok(Vec::new());
    };
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e.get("spec").and_then(Value::as_str) == Some(spec.name.as_str()))
        .collect())
}
