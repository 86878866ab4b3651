//! `specrun cancel`: phase `cancelled` with a halt recorded, so the guard stops driving.
//! Deletes nothing: the spec, its state and every user file stay; isolated members'
//! worktrees are removed after their work is saved to refs.

use serde_json::json;

use crate::cli::CancelArgs;
use crate::commands::isolate;
use crate::commands::task::{lock_state, record_event, report, write_state};
use crate::error::Result;
use crate::events::now_rfc3339;
use crate::project::Project;
use crate::protocol;

pub fn run(project: &Project, args: CancelArgs) -> Result<i32> {
    let spec = project.require_spec(args.spec.spec.as_deref())?;
    let path = spec.state_path();
    let (_lock, state) = lock_state(&spec)?;
    let mut out = protocol::cancel(&state, &now_rfc3339());
    // Isolated members leave no worktree behind; their work is saved to a ref first.
    let (members_patch, saved) = isolate::cancel_members(project, &spec, &state)?;
    let mut patch = out.patch.clone().unwrap_or_else(|| json!({}));
    crate::state::merge_into(&mut patch, &members_patch);
    if out.patch.is_some() || !saved.is_empty() {
        write_state(&path, &state, &patch)?;
    }
    for r in &saved {
        out.notes.push(format!("a member's work is saved at {r}"));
    }
    record_event(
        project,
        &spec,
        json!({"event": "cancel", "changed": out.changed, "savedRefs": saved}),
    );
    report(
        "cancel",
        &spec.name,
        &out,
        args.json,
        json!({"savedRefs": saved}),
    );
    Ok(0)
}
