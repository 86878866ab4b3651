//! `specrun cancel`: phase `cancelled` with a halt recorded, so the guard stops driving.
//! Deletes nothing: the spec, its state and every user file stay; isolated members'
//! worktrees are removed after their work is saved to refs.

use crate::cli::CancelArgs;
use crate::commands::exec::{report, Exec, Extra};
use crate::error::{ExitStatus, Result};
use crate::io::events::now_rfc3339;
use crate::io::events::Event;
use crate::io::project::Project;
use crate::isolation;
use crate::isolation::worktree::Isolation;
use crate::protocol;

pub(crate) fn run(project: &Project, args: CancelArgs) -> Result<ExitStatus> {
    let ex = Exec::new(project, args.spec.spec.as_deref())?;
    let spec = &ex.spec;
    let (_lock, state) = ex.lock_state()?;
    let mut out = protocol::cancel(&state, &now_rfc3339());
    // Isolated members leave no worktree behind; their work is saved to a ref first.
    let iso = Isolation::of(&state);
    let (members_patch, saved) = isolation::cancel_members(project, spec, &iso)?;
    let patch = out.patch.clone().unwrap_or_default();
    if out.patch.is_some() || !saved.is_empty() {
        ex.write_state(&state, &patch.merge(members_patch))?;
    }
    for r in &saved {
        out.notes.push(format!("a member's work is saved at {r}"));
    }
    ex.record_event(&Event::Cancel {
        changed: out.changed,
        saved_refs: &saved,
    });
    report(
        "cancel",
        &spec.name,
        &out,
        args.json,
        Extra::SavedRefs { saved_refs: &saved },
    );
    Ok(ExitStatus::Success)
}
