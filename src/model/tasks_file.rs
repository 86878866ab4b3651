//! tasks.md on disk: read and parsed by `tasks`, a checkbox set and a fix block inserted,
//! each write under the file's own lock and on the file as it is now (an edit made since
//! the caller read it is never lost).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::project::Project;
use crate::io::store;
use crate::model::tasks::text::{fix_anchor, insert_after_block, FixTask};
use crate::model::tasks::{self, Task, TaskList};

/// A tasks.md read and parsed.
pub(crate) struct LoadedTasks {
    pub path: PathBuf,
    pub text: store::Text,
    pub list: TaskList,
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
    let list = tasks::parse(&text);
    Ok(LoadedTasks {
        path: path.to_path_buf(),
        text: text.into(),
        list,
    })
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
        let list = tasks::parse(&text);
        let task = find_in(&list, path, id)?;
        let out = (task.label(), task.title.clone());
        match tasks::set_checked(&text, task, checked) {
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
