//! `specrun finish`: the shell's way to complete an execution. It judges the same gates as
//! the Stop hook's ALL_TASKS_COMPLETE — `completion::unmet` on the facts
//! `gates::completion_gates` gathers — so a gate added there binds both.

use serde::Serialize;

use crate::cli::FinishArgs;
use crate::commands::exec::Exec;
use crate::error::{ExitStatus, Result};
use crate::hooks as hook;
use crate::io::events::{Event, Refusal};
use crate::io::notify::{self, About};
use crate::io::output;
use crate::io::project::Project;
use crate::model::state::Phase;
use crate::next::completion;
use crate::next::gates::{completion_gates, completion_key};

pub(crate) fn run(project: &Project, args: FinishArgs) -> Result<ExitStatus> {
    let ex = Exec::new(project, args.spec.spec.as_deref())?;
    let spec = &ex.spec;
    // An empty plan has nothing to start or complete: `tasks lint`'s finding and command,
    // as `status` names it (not `state init`, which refuses the plan).
    if ex.tasks()?.list.tasks.is_empty() {
        use crate::model::tasks::lint;
        let unmet = format!(
            "{}: {} in {}: {}; then check them with `specrun tasks lint {}`",
            lint::EMPTY_PLAN,
            lint::EMPTY_PLAN_MESSAGE,
            spec.place().tasks_file(),
            lint::EMPTY_PLAN_FIX,
            crate::support::shell::spec_flag(&spec.name)
        );
        return answer(args.json, &spec.name, false, &[unmet], "");
    }
    // The gates fingerprint the tree (git): gathered before the lock, kept if unchanged.
    let early = match crate::next::facts::read_typed(&spec.state_path()) {
        crate::next::facts::StateRead::Valid(seen) => {
            let gates = completion_gates(project, spec, &seen);
            Some((seen, gates))
        }
        _ => None,
    };
    let (_lock, state) = ex.lock_state()?;
    let tasks = ex.tasks()?.list;
    let name = spec.name.as_str();
    if state.phase() == Some(Phase::Completed) {
        return answer(
            args.json,
            name,
            true,
            &[],
            &format!("spec '{name}' is already complete"),
        );
    }
    let gates = match early {
        Some((seen, gates)) if completion_key(&seen) == completion_key(&state) => gates,
        _ => completion_gates(project, spec, &state),
    };
    let unmet: Vec<String> = completion::unmet(spec.place(), &state, &tasks, Some(&gates))
        .iter()
        .map(|u| u.to_string())
        .collect();
    if !unmet.is_empty() {
        ex.record_event(&Event::Refused {
            event: "finish",
            task: None,
            refused: Refusal::Unmet(unmet.iter().map(String::as_str).collect()),
        });
        return answer(args.json, name, false, &unmet, "");
    }
    let patch = hook::completion_patch(chrono::Utc::now());
    ex.write_state(&state, &patch)?;
    let message = hook::completion_message(name, &tasks);
    ex.record_event(&Event::Finish { completed: true });
    crate::cost::settings::notify(
        project,
        &ex.spec,
        &notify::event("completed", name, &message, About::Rule { rule: "finish" }),
    );
    answer(args.json, name, true, &[], &message)
}

/// Print the verdict; exit 0 when complete, 1 with each unmet gate named.
fn answer(
    json_out: bool,
    name: &str,
    ok: bool,
    unmet: &[String],
    message: &str,
) -> Result<ExitStatus> {
    if json_out {
        output::json_line(&Answer {
            ok,
            spec: name,
            message,
            unmet,
        });
    } else if ok {
        output::line(message);
    } else {
        output::line(&format!("finish {name} refused. Unmet:"));
        for item in unmet {
            output::line(&format!("  - {item}"));
        }
    }
    Ok(ExitStatus::yes_no(ok))
}

/// `finish --json`.
#[derive(Serialize)]
struct Answer<'a> {
    ok: bool,
    spec: &'a str,
    message: &'a str,
    unmet: &'a [String],
}
