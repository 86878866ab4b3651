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

pub(crate) fn run(project: &Project, args: ResumeArgs) -> Result<ExitStatus> {
    if args.accept_record {
        return accept_record(project, args.spec.spec.as_deref());
    }
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
    };
    let spent = usd_spent(project, &state);
    let session = args.session_id.as_deref().filter(|s| !s.trim().is_empty());
    match protocol::resume(&state, raises, spent, session, &now_rfc3339()) {
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
            // The guard's record follows a person's resume (caps raised, session rebound).
            crate::model::record::follow(&project.root, &spec.name, &after)?;
            let cleared = state.halt_kind();
            ex.record_event(&Event::Resume {
                cleared,
                session_id: session,
                raises,
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
                if let Some(cmd) = shell_step(project, spec, Some(&after), tasks.as_ref()) {
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

/// `resume --accept-record`: a person accepts the spec's files as they are now over the
/// guard's record that halted the execution. The record takes the state's counters, caps,
/// session and directory; with no usable state the record is closed (a fresh `state init`
/// starts the next one). Inside Claude Code it is refused.
fn accept_record(project: &Project, spec: Option<&str>) -> Result<ExitStatus> {
    use crate::io::record::Read;
    use crate::model::record;
    // Refused before dispatch too (every form of resume is a person's); kept here so this
    // function is safe on its own.
    crate::claude::roles::person_only(crate::claude::roles::Decision::ClearHalt)?;
    let name = match spec {
        Some(s) => s.to_string(),
        None => project.current_spec_name()?.ok_or_else(|| {
            crate::error::Error::Usage("name the spec whose record to accept: --spec <name>".into())
        })?,
    };
    let Some(found) = project.spec(Some(&name))? else {
        return Err(crate::error::Error::Usage(format!("no spec {name:?}")));
    };
    let mut rec = match record::execution(&project.root, &found.name) {
        Read::Valid(r) => r,
        Read::Absent => {
            output::line(&format!(
                "{}: the guard keeps no record of it; nothing to accept",
                found.name
            ));
            return Ok(ExitStatus::No);
        }
        Read::Invalid(e) => {
            output::warn(&format!("the record was unreadable ({e}); it is replaced"));
            record::Record {
                spec: found.name.clone(),
                version: record::VERSION,
                ..Default::default()
            }
        }
    };
    let state =
        crate::model::state::read(&found.state_path(), crate::model::state::Reading::Checked)
            .ok()
            .flatten();
    rec.halt = None;
    rec.spec_dir = found.dir.display().to_string();
    let what = match &state {
        Some(s) => {
            rec.stops = s.global_iteration();
            rec.output_tokens = s.output_tokens();
            rec.session_id = s.session_id().map(str::to_string);
            rec.mirror(s);
            rec.ignored_files = s.ignored_files.clone();
            // The plan and the baseline of tests as they are now are what the person accepts.
            rec.baseline_digests = record::baseline_digest(s)
                .map(String::from)
                .into_iter()
                .collect();
            rec.plan_digest = match s.frozen_plan() {
                crate::model::plan::Frozen::Plan(p) => Some(p.digest.clone()),
                _ => None,
            };
            if let Some(sid) = s.session_id() {
                record::bind_spec(&project.root, sid, &found.name, &now_rfc3339())?;
            }
            "the record now follows the state as it is"
        }
        None => {
            rec.phase = "closed".into();
            "no usable state: the record is closed; `specrun state init` starts a new execution"
        }
    };
    record::save(&project.root, &rec)?;
    output::line(&format!("{}: record accepted; {what}", found.name));
    Ok(ExitStatus::Success)
}
