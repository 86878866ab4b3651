//! `specrun followup add|list|resolve`: the spec's followups.json, changed under its own
//! lock (follow-ups never touch the state file).

use serde_json::json;

use crate::cli::{FollowupCategory, FollowupCommand, FollowupPriority};
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::followups::{self, Item, NewItem};
use crate::io::events::now_rfc3339;
use crate::io::output;
use crate::io::project::Project;
use crate::io::store;

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

pub fn run(project: &Project, cmd: FollowupCommand) -> Result<ExitStatus> {
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
                Err(why) => {
                    ex.record_event(json!({"event": "followup-add", "refused": why}));
                    if json_out {
                        output::json_line(
                            &json!({"ok": false, "verb": "followup add", "unmet": [{"name": "followup", "detail": why}]}),
                        );
                    } else {
                        output::line(&format!("followup add refused: {why}"));
                    }
                    Ok(ExitStatus::No)
                }
                Ok(item) => {
                    ex.record_event(
                        json!({"event": "followup-add", "id": item.id, "task": item.task}),
                    );
                    if json_out {
                        output::json_line(&json!({"ok": true, "item": item}));
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
                output::json_line(&json!({"items": items, "blocking": blocking}));
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
                let changed = s
                    .resolve(&fid, &note, &now)
                    .map_err(|message| Error::Refused {
                        message: format!("{}: {message}", path.display()),
                    })?;
                Ok((changed.then(|| s.to_json()), changed))
            })?;
            ex.record_event(json!({"event": "followup-resolve", "id": fid, "changed": changed}));
            let message = if changed {
                format!("{fid} resolved")
            } else {
                format!("{fid} was already resolved")
            };
            if json_out {
                output::json_line(
                    &json!({"ok": true, "id": fid, "changed": changed, "message": message}),
                );
            } else {
                output::line(&message);
            }
            Ok(ExitStatus::Success)
        }
    }
}
