//! The snapshot of ignored runner files (`integrity::ignored`): the files every exclude
//! source hides (`.gitignore`, `.git/info/exclude`, the user's excludes file) that can
//! change how tests run, each with the SHA-256 of its contents, and the exclude file
//! itself. `state init` keeps it as `ignoredFiles`; the integrity findings compare the
//! tree against it.
//!
//! Inside an ignored directory (an in-tree virtualenv, a build folder) only what acts from
//! anywhere is looked for, in at most `WALK_LIMIT` entries; `node_modules/` and `target/`
//! are not walked (pytest does not collect there, and Python does not start from there).

use std::path::Path;

use indexmap::IndexMap;

use crate::error::Result;
use crate::evidence::integrity::ignored::{self, INFO_EXCLUDE};
use crate::io::{git, output};

/// Entries of ignored directories looked at, at most.
const WALK_LIMIT: usize = 100_000;
/// Directories never walked.
const NOT_WALKED: &[&str] = &["node_modules", "target", ".git", "__pycache__"];

/// The ignored runner files of the tree at `root` now, by path.
pub(crate) fn snapshot(root: &Path) -> Result<IndexMap<String, String>> {
    let out = git::scan_run(
        root,
        &[
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ],
        None,
    )?;
    let mut found = IndexMap::new();
    let mut budget = WALK_LIMIT;
    for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let path = String::from_utf8_lossy(entry);
        match path.strip_suffix('/') {
            Some(dir) => walk(root, dir, &mut budget, &mut found),
            None if ignored::shapes_runs(&path) => {
                found.insert(path.to_string(), digest(&root.join(&*path)));
            }
            None => {}
        }
    }
    if budget == 0 {
        output::warn(&format!(
            "ignored directories hold more than {WALK_LIMIT} entries: the rest were not looked at for files that change how tests run"
        ));
    }
    if let Some(exclude) = info_exclude(root)? {
        found.insert(INFO_EXCLUDE.to_string(), digest(&exclude));
    }
    Ok(found)
}

/// The runner files below the ignored directory `dir`, depth first, in name order.
fn walk(root: &Path, dir: &str, budget: &mut usize, found: &mut IndexMap<String, String>) {
    let Ok(read) = std::fs::read_dir(root.join(dir)) else {
        return;
    };
    let mut entries: Vec<_> = read.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = format!("{dir}/{name}");
        match e.file_type() {
            Ok(t) if t.is_dir() && !NOT_WALKED.contains(&name.as_str()) => {
                walk(root, &rel, budget, found)
            }
            Ok(t) if !t.is_dir() && ignored::shapes_runs_nested(&rel) => {
                found.insert(rel, digest(&e.path()));
            }
            _ => {}
        }
    }
}

/// The repository's `info/exclude` (the main repository's, from a linked worktree).
fn info_exclude(root: &Path) -> Result<Option<std::path::PathBuf>> {
    let out = git::scan_run(root, &["rev-parse", "--git-path", "info/exclude"], None)?;
    let rel = String::from_utf8_lossy(&out).trim().to_string();
    let path = root.join(rel);
    Ok(path.is_file().then_some(path))
}

/// The SHA-256 of a regular file's contents; a symlink is its target and anything else
/// (a FIFO, a device, unreadable) its kind, so nothing here blocks or reads without end.
fn digest(path: &Path) -> String {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return "unreadable".into();
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        return format!("symlink:{}", target.display());
    }
    if !meta.file_type().is_file() {
        return "not-a-file".into();
    }
    crate::evidence::verify::hash_file(path).unwrap_or_else(|_| "unreadable".into())
}
