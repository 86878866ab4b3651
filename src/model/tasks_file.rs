//! tasks.md on disk: read and parsed by `tasks`, a checkbox set and a fix block inserted,
//! each write under the file's own lock and on the file as it is now (an edit made since
//! the caller read it is never lost).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::project::Project;
use crate::io::store;
use crate::model::tasks::format::{self, Beside, Format, Note};
use crate::model::tasks::text::{fix_anchor, insert_after_block, FixTask};
use crate::model::tasks::{self, Counts, Task, TaskList};

/// A tasks.md read and parsed.
pub(crate) struct LoadedTasks {
    pub path: PathBuf,
    pub text: store::Text,
    pub list: TaskList,
    /// The format the file is in (specrun's own, or spec-kit's, Kiro's, OpenSpec's).
    pub format: Format,
    /// What reading a foreign format took from the file and what it assumed.
    pub notes: Vec<Note>,
}

impl LoadedTasks {
    /// The task `id` names, or an error naming the file.
    pub(crate) fn find(&self, id: &str) -> Result<&Task> {
        find_in(&self.list, &self.path, id)
    }
}

/// Task `id` of `list`, parsed from `path`; an unknown or duplicate id names the file.
fn find_in<'a>(list: &'a TaskList, path: &Path, id: &str) -> Result<&'a Task> {
    list.find(id).map_err(|e| Error::Task {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

pub(crate) fn load(path: &Path) -> Result<LoadedTasks> {
    let text = store::read_text(path, "tasks file")?;
    read(path, text, true)
}

/// Parse `text` (read from `path`) in its format: a foreign format's tasks filled in from
/// the files beside it when `beside` (requirements.md, the spec's default Verify).
pub(crate) fn read(path: &Path, text: impl Into<store::Text>, beside: bool) -> Result<LoadedTasks> {
    let text: store::Text = text.into();
    let mut list = tasks::parse(&text);
    let fmt = format::detect(&path.to_string_lossy(), &list);
    let mut notes = Vec::new();
    if fmt.is_foreign() {
        let dir = path.parent().unwrap_or(Path::new("."));
        let (requirements, default_verify) = if beside {
            (
                optional_text(&dir.join("requirements.md"))?,
                default_verify(dir)?,
            )
        } else {
            (None, None)
        };
        let deltas = match beside && fmt == Format::OpenSpec {
            true => delta_specs(dir)?,
            false => None,
        };
        let files = Beside {
            requirements: requirements.as_deref().filter(|_| fmt == Format::Kiro),
            default_verify: default_verify.as_deref(),
            deltas: deltas.as_deref(),
        };
        notes = format::adapt(fmt, &text, &mut list, files);
    }
    Ok(LoadedTasks {
        path: path.to_path_buf(),
        text,
        list,
        format: fmt,
        notes,
    })
}

/// The counts of `text` (read from `path`) as its format reads them: the fast scan, but
/// for a format that reshapes the tasks (`format::reshapes`: Kiro's nesting by id).
pub(crate) fn counts(path: &Path, text: &str) -> Counts {
    match reshaped(path, text) {
        Some(list) => list.counts(),
        None => tasks::count(text),
    }
}

/// The counts and the next task's label and title, as `counts` reads them (the status
/// line's, on every refresh).
pub(crate) fn headline(path: &Path, text: &str) -> (Counts, Option<(String, String)>) {
    match reshaped(path, text) {
        Some(list) => (
            list.counts(),
            list.next().map(|t| (t.label(), t.title.clone())),
        ),
        None => tasks::headline(text),
    }
}

/// The tasks in their format when it reshapes them; `None` when the fast scan reads them
/// as they are. The files beside it (criteria, default Verify) give no box or depth.
fn reshaped(path: &Path, text: &str) -> Option<TaskList> {
    let at = path.to_string_lossy();
    if !format::reshapes(&at) {
        return None;
    }
    let mut list = tasks::parse(text);
    let fmt = format::detect(&at, &list);
    format::adapt(fmt, text, &mut list, Beside::default());
    Some(list)
}

/// An OpenSpec change's delta specs, `specs/<capability>/spec.md` in name order, one
/// after the other; `None` without a `specs/` folder.
fn delta_specs(change: &Path) -> Result<Option<String>> {
    let Ok(entries) = std::fs::read_dir(change.join("specs")) else {
        return Ok(None);
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|d| d.is_dir())
        .collect();
    dirs.sort();
    let mut out = String::new();
    for dir in dirs {
        if let Some(text) = optional_text(&dir.join("spec.md"))? {
            out.push_str(&text);
            out.push('\n');
        }
    }
    Ok(Some(out))
}

fn optional_text(path: &Path) -> Result<Option<String>> {
    match store::read_optional(path)? {
        None => Ok(None),
        Some(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| Error::NotUtf8 {
                path: path.to_path_buf(),
            }),
    }
}

/// The spec's default Verify for tasks without one (`state init --default-verify`), kept
/// in the spec's bookkeeping beside the user's files.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Defaults {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
}

pub(crate) fn default_verify(dir: &Path) -> Result<Option<String>> {
    let path = dir.join(crate::io::project::DEFAULTS_FILE);
    let Some(text) = optional_text(&path)? else {
        return Ok(None);
    };
    let d: Defaults = serde_json::from_str(&text).map_err(|e| Error::Task {
        path: path.clone(),
        message: format!("not a defaults file ({e})"),
    })?;
    Ok(d.verify)
}

pub(crate) fn save_default_verify(dir: &Path, verify: &str) -> Result<()> {
    let path = dir.join(crate::io::project::DEFAULTS_FILE);
    let d = Defaults {
        verify: Some(verify.to_string()),
    };
    let text = serde_json::to_string_pretty(&d).expect("defaults serialise") + "\n";
    store::write_atomic(&path, text.as_bytes())
}

/// The tasks.md named by `--file`, else the spec's.
pub(crate) fn resolve_path(
    project: &Project,
    spec: Option<&str>,
    file: Option<&Path>,
) -> Result<PathBuf> {
    match file {
        Some(f) => Ok(project.cwd.join(f)),
        None => Ok(project.require_spec(spec)?.tasks_path()),
    }
}

/// The text of the tasks.md `--file` names (a user file: read wherever it is, see
/// `store::read_user_file`), else of the spec's (bookkeeping). A large file is read into
/// huge pages (`store::Text`): `tasks count` of 100,000 tasks spent as long on page faults
/// as on the scan.
pub(crate) fn read_text(
    project: &Project,
    spec: Option<&str>,
    file: Option<&Path>,
) -> Result<(PathBuf, store::Text)> {
    let path = resolve_path(project, spec, file)?;
    let text = match file {
        Some(_) => store::read_user_text_large(&path, "tasks file")?,
        None => store::read_text_large(&path, "tasks file")?,
    };
    Ok((path, text))
}

/// Set task `id`'s checkbox under the tasks file's lock. Returns whether the file changed.
pub(crate) fn check(path: &Path, id: &str, checked: bool) -> Result<(bool, String, String)> {
    store::update_text(path, "tasks file", store::DEFAULT_LOCK_WAIT, |text| {
        let loaded = read(path, text, false)?;
        let (list, text) = (&loaded.list, &loaded.text);
        let task = find_in(list, path, id)?;
        let out = (task.label(), task.title.clone());
        match format::set_checked(loaded.format, text, list, task, checked) {
            Some(new_text) => Ok((Some(new_text), (true, out.0, out.1))),
            None => Ok((None, (false, out.0, out.1))),
        }
    })
}

/// Write the fix block below its task and the fixes already there, under tasks.md's lock,
/// re-reading the file so an edit made since is not lost.
pub(crate) fn insert_fix(path: &Path, id: &str, fix: &FixTask) -> Result<()> {
    store::update_text(path, "tasks file", store::DEFAULT_LOCK_WAIT, |text| {
        let list = tasks::parse(&text);
        let task = find_in(&list, path, id)?;
        if list.find(&fix.id).is_ok() {
            return Err(Error::Task {
                path: path.to_path_buf(),
                message: format!("task id {} already exists", fix.id),
            });
        }
        let anchor = fix_anchor(&list, task);
        let next = insert_after_block(&text, anchor, &fix.lines, list.crlf);
        Ok((Some(next), ()))
    })
}
