//! `specrun resume`: clear a halt (a cap halt only with that cap raised), reset the stall
//! counter, optionally rebind the session, and print the command that continues.

use crate::cli::ResumeArgs;
use crate::commands::exec::{refuse, report, Exec, Extra};
use crate::error::{ExitStatus, Result};
use crate::io::events::now_rfc3339;
use crate::io::events::{Event, Refusal};
use crate::io::output;
use crate::io::project::Project;
use crate::isolation;
use crate::isolation::worktree::Isolation;
use crate::model::state::State;
use crate::next::facts::shell_step;
use crate::next::Audience;
use crate::protocol::{self, Raises};

pub fn run(project: &Project, args: ResumeArgs) -> Result<ExitStatus> {
    let ex = Exec::new(project, args.spec.spec.as_deref())?;
    let spec = &ex.spec;
    let (_lock, state) = ex.lock_state()?;
    let iso = Isolation::of(&state);
    let raises = Raises {
        global: args.raise_global,
        task: args.raise_task,
        tokens: args.raise_tokens,
        minutes: args.raise_minutes,
        usd: args.raise_usd,
        usd_spent: usd_spent(project, &state),
    };
    let session = args.session_id.as_deref().filter(|s| !s.trim().is_empty());
    match protocol::resume(&state, raises, session, &now_rfc3339()) {
        Err(unmet) => {
            let names: Vec<&str> = unmet.iter().map(|u| u.name).collect();
            ex.record_event(&Event::Refused {
                event: "resume",
                task: None,
                refused: Refusal::Unmet(names),
            });
            let code = refuse("resume", &spec.name, &unmet, args.json);
            if let (Some((text, _)), false) = (isolation::summary(&spec.name, &iso), args.json) {
                output::line(&text);
            }
            Ok(code)
        }
        Ok(out) => {
            let after = match &out.patch {
                Some(patch) => ex.write_state(&state, patch)?,
                None => state.clone(),
            };
            let cleared = state.halt_kind();
            ex.record_event(&Event::Resume {
                cleared,
                session_id: session,
                raises: raises.event(),
            });
            let group = isolation::summary(&spec.name, &iso);
            report(
                "resume",
                &spec.name,
                &out,
                args.json,
                Extra::Isolation {
                    isolation: group.as_ref().map(|(_, d)| d),
                },
            );
            if let (Some((text, _)), false) = (&group, args.json) {
                // After a crash mid-group: what merged and what remains.
                output::line(text);
            }
            if !args.json && Audience::detect() == Audience::Shell {
                let tasks = ex.tasks().ok().map(|t| t.list);
                if let Some(cmd) = shell_step(spec, Some(&after), tasks.as_ref()) {
                    output::line(&format!("next at a shell: `{cmd}`"));
                }
            }
            Ok(ExitStatus::Success)
        }
    }
}

/// The priced spend of the ledger (0 without a usable price table).
fn usd_spent(project: &Project, state: &State) -> f64 {
    let ledger = crate::model::state::ledger::Ledger::of_state(state).unwrap_or_default();
    match crate::cost::settings::prices_in_force(&project.root, state) {
        Ok(Some(p)) => p.usd(&ledger.by_model()).priced,
        _ => 0.0,
    }
}
