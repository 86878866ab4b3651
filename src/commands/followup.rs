//! `specrun followup add|list|resolve`: the spec's followups.json, changed under its own
//! lock (follow-ups never touch the state file).

use serde::Serialize;

use crate::cli::{FollowupCategory, FollowupCommand, FollowupPriority};
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::followups::{self, Item, NewItem};
use crate::io::events::now_rfc3339;
use crate::io::events::{Event, Refusal};
use crate::io::output;
use crate::io::project::Project;
use crate::io::store;
use crate::model::unmet::Unmet;

fn category(c: FollowupCategory) -> &'static str {
    match c {
        FollowupCategory::Verify => "VERIFY",
        FollowupCategory::Refac => "REFAC",
        FollowupCategory::Idea => "IDEA",
    }
}

fn priority(p: FollowupPriority) -> &'static str {
    match p {
        FollowupPriority::High => "high",
        FollowupPriority::Medium => "medium",
        FollowupPriority::Low => "low",
    }
}

pub(crate) fn run(project: &Project, cmd: FollowupCommand) -> Result<ExitStatus> {
    match cmd {
        FollowupCommand::Add {
            category: cat,
            priority: pri,
            title,
            task,
            files,
            spec,
            json: json_out,
        } => {
            let ex = Exec::existing(project, spec.spec.as_deref())?;
            let spec = &ex.spec;
            let task = match task {
                None => None,
                Some(id) => Some(ex.tasks()?.find(&id)?.label()),
            };
            let new = NewItem {
                category: category(cat).into(),
                priority: priority(pri).into(),
                title,
                task,
                files,
            };
            let now = now_rfc3339();
            let added =
                store::update_json(&spec.followups_path(), store::DEFAULT_LOCK_WAIT, |doc| {
                    let mut s = followups::parse_store(spec, doc.as_ref())?;
                    match s.add(new, &now) {
                        Ok(item) => {
                            let item = item.clone();
                            Ok((Some(s.to_json()), Ok(item)))
                        }
                        Err(why) => Ok((None, Err(why))),
                    }
                })?;
            match added {
                Err(e) => {
                    let why = e.to_string();
                    ex.record_event(&Event::Refused {
                        event: "followup-add",
                        task: None,
                        refused: Refusal::Why(&why),
                    });
                    if json_out {
                        output::json_line(&Refused {
                            ok: false,
                            verb: "followup add",
                            unmet: [Unmet::new("followup", why.as_str())],
                        });
                    } else {
                        output::line(&format!("followup add refused: {why}"));
                    }
                    Ok(ExitStatus::No)
                }
                Ok(item) => {
                    ex.record_event(&Event::FollowupAdd {
                        id: &item.id,
                        task: item.task.as_deref(),
                    });
                    if json_out {
                        output::json_line(&Added {
                            ok: true,
                            item: &item,
                        });
                    } else {
                        output::line(&format!("added {}", item.summary()));
                    }
                    Ok(ExitStatus::Success)
                }
            }
        }
        FollowupCommand::List {
            open,
            spec,
            json: json_out,
        } => {
            let ex = Exec::existing(project, spec.spec.as_deref())?;
            let store = followups::load(&ex.spec)?;
            let items: Vec<&Item> = store
                .items
                .iter()
                .filter(|i| !open || i.is_open())
                .collect();
            if json_out {
                let blocking: Vec<&str> = store
                    .blocking_open()
                    .iter()
                    .map(|i| i.id.as_str())
                    .collect();
                output::json_line(&Listed { items, blocking });
            } else if items.is_empty() {
                output::line(if open {
                    "no open follow-ups"
                } else {
                    "no follow-ups"
                });
            } else {
                for i in &items {
                    let mark = if i.is_blocking() {
                        " (blocks completion)"
                    } else {
                        ""
                    };
                    output::line(&format!("{}{mark}", i.summary()));
                }
            }
            Ok(ExitStatus::Success)
        }
        FollowupCommand::Resolve {
            fid,
            note,
            spec,
            json: json_out,
        } => {
            let ex = Exec::existing(project, spec.spec.as_deref())?;
            let spec = &ex.spec;
            let now = now_rfc3339();
            let path = spec.followups_path();
            let changed = store::update_json(&path, store::DEFAULT_LOCK_WAIT, |doc| {
                let mut s = followups::parse_store(spec, doc.as_ref())?;
                // An open VERIFY/high item holds the completion back: clearing it is a person's.
                if s.items.iter().any(|i| i.id == fid && i.is_blocking()) {
                    crate::claude::roles::person_only(
                        crate::claude::roles::Decision::ResolveBlocking,
                    )?;
                }
                let changed = s.resolve(&fid, &note, &now).map_err(|e| Error::Refused {
                    message: format!("{}: {e}", path.display()),
                })?;
                Ok((changed.then(|| s.to_json()), changed))
            })?;
            ex.record_event(&Event::FollowupResolve { id: &fid, changed });
            let message = if changed {
                format!("{fid} resolved")
            } else {
                format!("{fid} was already resolved")
            };
            if json_out {
                output::json_line(&Resolved {
                    ok: true,
                    id: &fid,
                    changed,
                    message: &message,
                });
            } else {
                output::line(&message);
            }
            Ok(ExitStatus::Success)
        }
    }
}

/// `followup add --json` refused: the shape of a verb's refusal.
#[derive(Serialize)]
struct Refused {
    ok: bool,
    verb: &'static str,
    unmet: [Unmet; 1],
}

#[derive(Serialize)]
struct Added<'a> {
    ok: bool,
    item: &'a Item,
}

#[derive(Serialize)]
struct Listed<'a> {
    items: Vec<&'a Item>,
    blocking: Vec<&'a str>,
}

#[derive(Serialize)]
struct Resolved<'a> {
    ok: bool,
    id: &'a str,
    changed: bool,
    message: &'a str,
}
