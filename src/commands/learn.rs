//! `specrun learn TEXT [--task ID]`: one deduplicated bullet under `## Learnings` in
//! .progress.md (section and file created when absent).

use crate::cli::LearnArgs;
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::io::events::Event;
use crate::io::output;
use crate::io::project::Project;
use crate::io::store;
use crate::protocol::LEARNINGS_HEADING;

pub(crate) fn run(project: &Project, args: LearnArgs) -> Result<ExitStatus> {
    let ex = Exec::existing(project, args.spec.spec.as_deref())?;
    let spec = &ex.spec;
    // One line: a learning that spans lines would break the bullet list.
    let text = args.text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err(Error::bad_input("learning", "the text is empty"));
    }
    let task = match &args.task {
        None => None,
        Some(id) => {
            let loaded = ex.tasks()?;
            Some(loaded.find(id)?.label())
        }
    };
    let line = match &task {
        Some(id) => format!("- [{id}] {text}"),
        None => format!("- {text}"),
    };
    // State lock first, then the progress file's, the order every verb uses.
    let _state_lock = store::lock(&spec.state_path(), store::DEFAULT_LOCK_WAIT)?;
    let added = ex.append_progress(LEARNINGS_HEADING, &line, Some(&text))?;
    ex.record_event(&Event::Learn {
        task: task.as_deref(),
        added,
    });
    output::line(if added {
        "learning recorded in .progress.md"
    } else {
        "learning already recorded; nothing added"
    });
    Ok(ExitStatus::Success)
}
