//! `specrun state merge|get|init`.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::cli::{StateCommand, StateInitArgs};
use crate::commands::load_spec_tasks;
use crate::error::{Error, Result};
use crate::events::now_rfc3339;
use crate::output;
use crate::project::Project;
use crate::state::{self, InitParams};
use crate::store;

pub fn run(cwd: Option<&Path>, cmd: StateCommand) -> Result<i32> {
    match cmd {
        StateCommand::Merge { file, patch } => {
            let patch_text = if patch == "-" {
                let mut buf = String::new();
                std::io::stdin()
                    .read_to_string(&mut buf)
                    .map_err(|e| Error::io("<stdin>", "read the patch from", e))?;
                buf
            } else {
                patch
            };
            let patch_text = patch_text.strip_prefix('\u{feff}').unwrap_or(&patch_text);
            let patch: Value = serde_json::from_str(patch_text)
                .map_err(|e| Error::bad_input("patch", format!("not valid JSON: {e}")))?;
            let path = relative_to(cwd, &file)?;
            merge(&path, &patch)?;
            Ok(0)
        }
        StateCommand::Get { file, path } => {
            let file = relative_to(cwd, &file)?;
            let doc =
                store::read_json(&file)?.ok_or_else(|| Error::missing("state file", &file))?;
            match path.as_deref() {
                None => output::json_pretty(&doc),
                Some(p) => match state::get_path(&doc, p) {
                    Some(v) => output::json_pretty(v),
                    None => {
                        output::line("null");
                        return Ok(1);
                    }
                },
            }
            Ok(0)
        }
        StateCommand::Init(args) => init(&Project::discover(cwd)?, args),
    }
}

fn relative_to(cwd: Option<&Path>, file: &Path) -> Result<std::path::PathBuf> {
    Ok(match cwd {
        Some(dir) => dir.join(file),
        None => file.to_path_buf(),
    })
}

/// Merge `patch` into the state file under its lock; nothing is written on any error.
pub fn merge(path: &Path, patch: &Value) -> Result<Value> {
    let name = path.display().to_string();
    store::update_json(path, store::DEFAULT_LOCK_WAIT, |current| {
        let next = state::apply_patch(current, patch, &name)?;
        Ok((Some(next.clone()), next))
    })
}

fn init(project: &Project, args: StateInitArgs) -> Result<i32> {
    let (spec, loaded) = load_spec_tasks(project, args.spec.spec.as_deref())?;
    let counts = loaded.list.counts();
    let params = InitParams {
        name: spec.name.clone(),
        max_task_iterations: args.max_task_iterations,
        max_global_iterations: args.max_global_iterations,
        max_output_tokens: args.max_output_tokens,
        max_minutes: args.max_minutes,
        max_stall_stops: args.max_stall_stops,
        session_id: args.session_id.clone().filter(|s| !s.is_empty()),
        quick: args.quick,
        recovery_mode: args.recovery_mode,
        driver: args.driver.map(|d| d.as_str()),
    };
    let path = spec.state_path();
    let now = now_rfc3339();
    let doc = {
        let _lock = store::lock(&path, store::DEFAULT_LOCK_WAIT)?;
        let existing = match store::read_json(&path) {
            Ok(v) => v,
            Err(err @ (Error::Json { .. } | Error::NotUtf8 { .. })) => {
                if !args.force {
                    return Err(Error::Refused {
                        message: format!(
                            "{err}; rerun with --force to keep a copy and start fresh"
                        ),
                    });
                }
                let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
                let backup =
                    path.with_file_name(format!("{}.corrupt-{stamp}", crate::project::STATE_FILE));
                std::fs::copy(&path, &backup)
                    .map_err(|e| Error::io(&backup, "back up the corrupt state to", e))?;
                output::warn(&format!("kept the corrupt state as {}", backup.display()));
                None
            }
            Err(e) => return Err(e),
        };
        let existing = match existing {
            Some(v) if !v.is_object() && !args.force => {
                return Err(Error::Shape {
                    path: path.clone(),
                    message: "the state is not a JSON object; rerun with --force to replace it"
                        .into(),
                })
            }
            other => other,
        };
        let doc = state::init_execution(existing, &params, counts.next_index, counts.total, &now);
        state::typecheck(&doc, &path.display().to_string())?;
        store::write_atomic(&path, &store::to_pretty_bytes(&doc))?;
        doc
    };
    let v = state::View(&doc);
    output::line(&format!(
        "{}: execution initialised at task {}/{} (max {} per task, {} stops, driver {})",
        spec.name,
        counts.next_index.min(counts.total) + usize::from(counts.next_index < counts.total),
        counts.total,
        v.max_task_iterations(),
        v.max_global_iterations(),
        v.driver()
    ));
    Ok(0)
}
