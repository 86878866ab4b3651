//! `specrun cancel`: phase `cancelled` with a halt recorded, so the guard stops driving.
//! Deletes nothing: the spec, its state and every user file stay.

use serde_json::json;

use crate::cli::CancelArgs;
use crate::commands::task::{lock_state, record_event, report, write_state};
use crate::error::Result;
use crate::events::now_rfc3339;
use crate::project::Project;
use crate::protocol;

pub fn run(project: &Project, args: CancelArgs) -> Result<i32> {
    let spec = project.require_spec(args.spec.spec.as_deref())?;
    let path = spec.state_path();
    let (_lock, state) = lock_state(&spec)?;
    let out = protocol::cancel(&state, &now_rfc3339());
    if let Some(patch) = &out.patch {
        write_state(&path, &state, patch)?;
    }
    record_event(
        project,
        &spec,
        json!({"event": "cancel", "changed": out.changed}),
    );
    report("cancel", &spec.name, &out, args.json, json!({}));
    Ok(0)
}
