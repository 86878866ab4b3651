//! `specrun learn TEXT [--task ID]`: one deduplicated bullet under `## Learnings` in
//! .progress.md (section and file created when absent).

use serde_json::json;

use crate::cli::LearnArgs;
use crate::commands::load_tasks_file;
use crate::commands::task::{append_progress, record_event};
use crate::error::{Error, Result};
use crate::output;
use crate::project::Project;
use crate::protocol::LEARNINGS_HEADING;
use crate::store;

pub fn run(project: &Project, args: LearnArgs) -> Result<i32> {
    let spec = project.require_spec(args.spec.spec.as_deref())?;
    if !spec.dir.is_dir() {
        return Err(Error::missing("spec directory", &spec.dir));
    }
    // One line: a learning that spans lines would break the bullet list.
    let text = args.text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err(Error::bad_input("learning", "the text is empty"));
    }
    let task = match &args.task {
        None => None,
        Some(id) => {
            let loaded = load_tasks_file(&spec.tasks_path())?;
            let task = loaded.list.find(id).map_err(|e| Error::Task {
                path: loaded.path.clone(),
                message: e.to_string(),
            })?;
            Some(task.label())
        }
    };
    let line = match &task {
        Some(id) => format!("- [{id}] {text}"),
        None => format!("- {text}"),
    };
    // State lock first, then the progress file's, the order every verb uses.
    let _state_lock = store::lock(&spec.state_path(), store::DEFAULT_LOCK_WAIT)?;
    let added = append_progress(&spec.progress_path(), LEARNINGS_HEADING, &line, Some(&text))?;
    record_event(
        project,
        &spec,
        json!({"event": "learn", "task": task, "added": added}),
    );
    output::line(if added {
        "learning recorded in .progress.md"
    } else {
        "learning already recorded; nothing added"
    });
    Ok(0)
}
