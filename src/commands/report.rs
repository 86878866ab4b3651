//! `specrun report [--format md|html|json]`: gather an execution's record and print its story.

use serde_json::Value;

use crate::cli::{ReportArgs, ReportFormat};
use crate::commands::exec::Exec;
use crate::cost;
use crate::error::{ExitStatus, Result};
use crate::evidence::critique;
use crate::evidence::followups;
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::next::report::{self, Inputs};

pub(crate) fn run(project: &Project, args: ReportArgs) -> Result<ExitStatus> {
    let ex = Exec::new(project, args.spec.spec.as_deref())?;
    let spec = &ex.spec;
    let state = ex.execution(&format!(
        "has no execution to report yet: start one with `specrun state init {}`",
        crate::support::shell::spec_flag(&spec.name)
    ))?;
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

/// This spec's lines of .specrun/events.jsonl, read.
fn spec_events(project: &Project, spec: &Spec) -> Result<Vec<Value>> {
    Ok(crate::io::events::spec_lines(project, &spec.name)?
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect())
}
